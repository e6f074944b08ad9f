"""Import stage: Harbor task folders and trial folders into the project DB.

`import_project` is the one public entry point: it discovers tasks and trials
recursively, validates each trial whole before storing it, reports every
skipped folder with its path and reason, and is idempotent. It reads only under
the folders it is given: a symbolic link leading elsewhere is reported, never
followed (`confine`), and only regular files within size limits are opened
(`bounded`). No task or trial, however broken, stops the import of the others.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import sys
from collections import defaultdict, deque
from collections.abc import Iterator, Mapping
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from tqdm import tqdm

from ..models import Condition, Task, Trajectory
from ..store import EventPack, Store, TrajectoryClash, pack_event_values
from .confine import outside_links
from .logs._io import lone_surrogate
from .tasks import TaskError, find_task_dirs, load_task
from .trials import (
    DEFAULT_MAX_LOG_BYTES,
    DEFAULT_PASS_THRESHOLD,
    TrialError,
    check_confined,
    find_trial_dirs,
    load_condition_map,
    load_trial,
    trial_fingerprint,
)

__all__ = [
    "ImportReport",
    "TaskError",
    "TrialError",
    "default_workers",
    "find_task_dirs",
    "find_trial_dirs",
    "import_project",
    "load_condition_map",
    "load_task",
    "load_trial",
]


@dataclass
class ImportReport:
    """What one import run did; `skipped` holds (path, reason) for every folder left out."""

    tasks_imported: int = 0
    tasks_unchanged: int = 0
    trials_imported: int = 0
    trials_updated: int = 0
    trials_unchanged: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)
    bytes_read: int = 0

    def summary_lines(self) -> list[str]:
        lines = [
            f"tasks: {self.tasks_imported} imported, {self.tasks_unchanged} unchanged",
            f"trials: {self.trials_imported} imported, {self.trials_updated} updated, "
            f"{self.trials_unchanged} unchanged, {len(self.skipped)} skipped",
        ]
        lines += [f"skipped {path}: {reason}" for path, reason in self.skipped]
        return lines


def _assign_trial_indexes(store: Store) -> None:
    """Rank trials within (task, agent, model, condition) by start time: the matched-pair index."""
    groups: dict[tuple, list] = defaultdict(list)
    for t in store.trials.trajectories():
        groups[(t.task, t.agent, t.model, t.condition)].append(t)
    indexes: dict[str, int] = {}
    for trials in groups.values():
        trials.sort(key=lambda t: (str(t.timings.get("started_at") or ""), t.id))
        for i, t in enumerate(trials):
            if t.trial_index != i:
                indexes[t.id] = i
    if indexes:
        store.trials.set_trial_indexes(indexes)


UNEXPECTED = "unexpected error while reading this trial"
"""Reason prefix of a skip caused by an importer bug rather than by the trial (the fuzz drill counts these)."""
UNEXPECTED_TASK = "unexpected error while reading this task"


def _settings(pass_threshold: float, is_demo: bool, condition_map: Mapping[str, Condition],
              max_log_bytes: int, derive_outcome: bool) -> str:
    """The import options that shape a stored trial; a change re-imports every trial."""
    return json.dumps([pass_threshold, is_demo, sorted(condition_map.items()), max_log_bytes, derive_outcome])


def _fingerprint_or_none(trial_dir: Path, settings: str, root: Path, max_log_bytes: int) -> str | None:
    try:
        check_confined(trial_dir, root)
        return trial_fingerprint(trial_dir, settings, max_log_bytes)
    except Exception:  # noqa: BLE001
        return None  # load_trial reports the problem


def _task_or_reason(task_dir: Path, root: Path) -> Task | str:
    """A loaded task, or the reason it cannot be imported (a bug in a reader costs one task, not the import)."""
    try:
        return load_task(task_dir, root=root)
    except (TaskError, OSError) as exc:
        return str(exc)
    except Exception as exc:  # noqa: BLE001
        return f"{task_dir}: {UNEXPECTED_TASK} ({type(exc).__name__}: {exc})"


def _import_tasks(store: Store, tasks_dir: Path, report: ImportReport) -> None:
    root = Path(tasks_dir).resolve()
    report.skipped += outside_links(root)
    used: dict[str, str] = {}
    for task_dir in find_task_dirs(Path(tasks_dir)):
        task = _task_or_reason(task_dir, root)
        if isinstance(task, str):
            report.skipped.append((str(task_dir), task))
            continue
        if task.id in used:  # two folders, one name: the first (in path order) is the task
            report.skipped.append((task.source_path, f"task name {task.id!r} is also the name of {used[task.id]}, "
                                                     f"which was imported; this folder was not"))
            continue
        used[task.id] = task.source_path
        if store.trials.upsert_task(task):
            report.tasks_imported += 1
        else:
            report.tasks_unchanged += 1


Loaded = tuple[Trajectory, EventPack] | str
"""A loaded trial (its events packed for the writer, `pack_event_values`), or the reason it cannot be imported."""
_CHUNK = 4
"""Trials per task sent to a parse worker."""
_POOL_CONTEXT = multiprocessing.get_context("fork" if sys.platform.startswith("linux") else None)
"""How parse workers start. Forked on Linux whatever the calling process was started with: a
process started by `spawn` (a benchmark's child, a worker of some other pool) would otherwise spawn
its workers too, and each would re-import the app (sqlite-utils pulls in pandas), ~0.7 CPU s and
~2 s apiece before parsing anything (bench/import_bench.py). Elsewhere the platform's default."""
_WRITE_BATCH_TRIALS = 64
_WRITE_BATCH_BYTES = 32 * 2**20
"""A write transaction takes at most this many trials, and closes once its trials' logs reach this
many bytes: few commits, while a concurrent import waits for one batch, never for a whole import."""


def default_workers() -> int:
    """Parse workers an import starts unless told: one per core, up to 4 (beyond that the one
    writing process, copying each trial's events from its pack, is no longer the bound only on
    machines with the cores to spare; bench/import_bench.py --workers measures it)."""
    return min(4, os.cpu_count() or 1)


def _in_flight(workers: int) -> int:
    """Chunks parsed ahead of the importing process: two per worker. The writes run in their own
    thread (`_Writer`), so results are taken while a batch is being stored and this suffices to keep
    the workers busy; memory stays bounded by these chunks plus two write batches."""
    return 2 * workers


class _Writer:
    """Stores write batches in a thread of its own, one at a time, while the calling thread goes on
    taking parsed trials (and so feeding the workers): with a synchronous write the workers idled,
    their few chunks done, for as long as each batch took to store. At most one batch is being
    stored while the next is gathered; results are recorded in batch order, as a synchronous write
    would record them."""

    def __init__(self, store: Store, report: ImportReport) -> None:
        self._store, self._report = store, report
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gcpc-import-writer")
        self._pending: tuple[list[tuple[str, str]], list[tuple[Trajectory, EventPack]], Future | None] | None = None

    def submit(self, skips: list[tuple[str, str]], writes: list[tuple[Trajectory, EventPack]]) -> None:
        """Record the batch before this one (waiting for its write), then start writing this one."""
        self._record()
        future = self._thread.submit(self._store.trials.replace_trajectories, writes) if writes else None
        self._pending = (skips, writes, future)

    def close(self) -> None:
        """Wait for the last batch and record it; the writing thread's DB connection is closed."""
        try:
            self._record()
        finally:
            self._thread.submit(self._store.close).result()
            self._thread.shutdown()

    def _record(self) -> None:
        if self._pending is None:
            return
        skips, writes, future = self._pending
        self._pending = None
        report = self._report
        report.skipped += skips
        for (traj, _), done in zip(writes, future.result() if future is not None else []):
            if isinstance(done, TrajectoryClash):
                report.skipped.append((traj.source_path, str(done)))
            elif done == "updated":
                report.trials_updated += 1
            else:
                report.trials_imported += 1


def _load_or_reason(trial_dir: Path, **options) -> Loaded:
    """Worker body: a loaded trial, or the reason it cannot be imported (errors cross processes as text)."""
    try:
        traj, log = load_trial(trial_dir, **options)
    except (TrialError, OSError) as exc:
        return str(exc)
    except Exception as exc:  # noqa: BLE001 — a parser bug must cost one trial, not the whole import
        return f"{trial_dir}: {UNEXPECTED} ({type(exc).__name__}: {exc})"
    return traj, pack_event_values(log.event_values)


def _load_chunk(trial_dirs: list[Path], options: dict) -> list[Loaded]:
    """One pool task: several trials, so the per-task overhead of the pool is paid once for them."""
    return [_load_or_reason(d, **options) for d in trial_dirs]


def _load_all(trial_dirs: list[Path], workers: int, **options) -> Iterator[Loaded]:
    """Parse trials in worker processes (parsing is CPU-bound) while the caller writes, in order.

    At most `_in_flight(workers)` chunks are in flight: a writer slower than the parsers holds back
    the parsing, rather than parsed trials piling up in memory (memory stays bounded by these chunks
    and two write batches, whatever the corpus holds).
    """
    if workers <= 1 or len(trial_dirs) < 2 * _CHUNK:
        yield from (_load_or_reason(d, **options) for d in trial_dirs)
        return
    with ProcessPoolExecutor(max_workers=workers, mp_context=_POOL_CONTEXT) as pool:
        pending: deque[Future[list[Loaded]]] = deque()
        for i in range(0, len(trial_dirs), _CHUNK):
            pending.append(pool.submit(_load_chunk, trial_dirs[i : i + _CHUNK], options))
            if len(pending) > _in_flight(workers):
                yield from pending.popleft().result()
        while pending:
            yield from pending.popleft().result()


def _batches(pairs: Iterator[tuple[Path, Loaded]]) -> Iterator[list[tuple[Path, Loaded]]]:
    """Consecutive loaded trials grouped for one write transaction each (see `_WRITE_BATCH_BYTES`)."""
    batch: list[tuple[Path, Loaded]] = []
    size = 0
    for trial_dir, outcome in pairs:
        batch.append((trial_dir, outcome))
        size += 0 if isinstance(outcome, str) else outcome[0].log_bytes
        if len(batch) >= _WRITE_BATCH_TRIALS or size >= _WRITE_BATCH_BYTES:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch


def import_project(
    store: Store,
    *,
    tasks_dir: Path | None = None,
    trials_dir: Path | None = None,
    condition_map: Mapping[str, Condition] | None = None,
    pass_threshold: float = DEFAULT_PASS_THRESHOLD,
    max_log_bytes: int = DEFAULT_MAX_LOG_BYTES,
    is_demo: bool = False,
    derive_outcome: bool = False,
    progress: bool = True,
    workers: int | None = None,
) -> ImportReport:
    """Import tasks, then trials, into `store`; never raises for a bad folder, reports it.

    `derive_outcome`: a trial with no recorded reward gets PASS/FAIL from its CTRF report (the
    basis says so) instead of `unscored`.
    """
    report = ImportReport()
    if tasks_dir is not None:
        _import_tasks(store, Path(tasks_dir), report)
    if trials_dir is not None:
        known_tasks = store.trials.task_ids()
        stored = store.trials.trajectory_hashes()
        mapping = dict(condition_map or {})
        settings = _settings(pass_threshold, is_demo, mapping, max_log_bytes, derive_outcome)
        root = Path(trials_dir).resolve()
        report.skipped += outside_links(root)
        trial_dirs = []
        for trial_dir in find_trial_dirs(Path(trials_dir)):
            previous = stored.get(str(trial_dir.resolve()))
            if previous is not None and previous[1] == _fingerprint_or_none(trial_dir, settings, root, max_log_bytes):
                report.trials_unchanged += 1
                continue
            trial_dirs.append(trial_dir)
        loaded = _load_all(
            trial_dirs,
            workers if workers is not None else default_workers(),
            known_tasks=known_tasks,
            condition_map=mapping,
            pass_threshold=pass_threshold,
            max_log_bytes=max_log_bytes,
            is_demo=is_demo,
            derive_outcome=derive_outcome,
            settings=settings,
            root=root,
        )
        bar = tqdm(zip(trial_dirs, loaded), total=len(trial_dirs), desc="import", unit="trial", disable=not progress)
        writer = _Writer(store, report)
        try:
            for batch in _batches(iter(bar)):
                skips: list[tuple[str, str]] = []
                writes: list[tuple[Trajectory, EventPack]] = []
                for trial_dir, outcome in batch:
                    if isinstance(outcome, str):
                        skips.append((str(trial_dir.resolve()), outcome))
                        continue
                    traj = outcome[0]
                    report.bytes_read += traj.log_bytes
                    if stored.get(traj.source_path) == (traj.id, traj.content_hash):
                        report.trials_unchanged += 1
                    else:
                        writes.append(outcome)
                writer.submit(skips, writes)
        finally:
            writer.close()
        _assign_trial_indexes(store)
    # a folder name that is not UTF-8 reaches Python as lone surrogates: print and store it readably
    report.skipped = [(_printable(p), _printable(r)) for p, r in report.skipped]
    if report.skipped:
        store.trials.record_import_issues((p, "skipped", r) for p, r in report.skipped)
    return report


def _printable(text: str) -> str:
    """`text` with undecodable file-name bytes (surrogate escapes) shown as U+FFFD."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace") if lone_surrogate(text) else text
