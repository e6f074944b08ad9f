"""The import pipeline's plumbing: parse workers, how far they run ahead, batched writes.

Import parses in worker processes and writes in the calling one, several trials per transaction;
these tests pin what that must keep: the writer never falls behind unboundedly (memory), a clash
in a batch costs that trial only, and workers start cheaply whatever started the caller.
"""

from __future__ import annotations

import multiprocessing
import sys
import time
from pathlib import Path

import pytest

import gcpc_core.ingest as ingest
from gcpc_core.ingest import import_project
from gcpc_core.models import Event, Task, Trajectory
from gcpc_core.store import Store, TrajectoryClash, pack_events

from .test_event_values import SMALL_LOGS
from .test_import import make_task, make_trial

pytestmark = pytest.mark.timeout(120)


def _traj(tid: str, source: str) -> Trajectory:
    return Trajectory(id=tid, task="t1", agent="a", model="m", outcome="PASS", reward=1.0, source_path=source,
                      log_path="agent/claude-code.txt", log_format="claude-code")


def _rows(tid: str, n: int) -> bytes:
    return pack_events([Event(id=f"E{i}", seq=i, kind="tool_output", text=f"{tid} {i}") for i in range(1, n + 1)])


def test_a_clash_in_a_write_batch_costs_that_trial_only(store: Store) -> None:
    store.trials.upsert_task(Task(id="t1", instruction="Do it.", source_path="/tasks/t1"))
    store.trials.replace_trajectories([(_traj("x", "/trials/x"), _rows("x", 2))])
    done = store.trials.replace_trajectories([(_traj("a", "/trials/a"), _rows("a", 3)),
                                       (_traj("x", "/elsewhere/x"), _rows("x", 5)),
                                       (_traj("b", "/trials/b"), _rows("b", 1))])
    assert done[0] == "imported" and done[2] == "imported"
    assert isinstance(done[1], TrajectoryClash) and "/trials/x" in str(done[1])
    assert store.trials.get_trajectory("x").source_path == "/trials/x"
    assert [e.text for e in store.trials.events("x")] == ["x 1", "x 2"]
    assert [len(store.trials.events(t)) for t in ("a", "b")] == [3, 1]


def test_a_pack_is_stored_as_the_events_of_the_trajectory_it_is_given_with(store: Store) -> None:
    """A pack holds no trajectory id: one stored twice in a batch gives each trajectory its own copy."""
    store.trials.upsert_task(Task(id="t1", instruction="Do it.", source_path="/tasks/t1"))
    pack = _rows("a", 2)
    store.trials.replace_trajectories([(_traj("a", "/trials/a"), pack), (_traj("b", "/trials/b"), pack)])
    assert [(e.id, e.text) for e in store.trials.events("b")] == [("E1", "a 1"), ("E2", "a 2")]
    assert store.trials.event_counts() == {"a": 2, "b": 2}


def _slow_consumer_parsed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, n: int, workers: int) -> int:
    """How many of `n` trials the workers parsed while the caller took one result and then waited."""
    marks = tmp_path / "marks"
    marks.mkdir()

    def counted(trial_dir: Path, **_: object) -> str:
        (marks / trial_dir.name).touch()
        raise ingest.TrialError(f"{trial_dir}: counted")

    monkeypatch.setattr(ingest, "load_trial", counted)  # forked workers inherit it
    dirs = [tmp_path / f"t{i:03d}" for i in range(n)]
    loaded = ingest._load_all(dirs, workers)
    assert "counted" in next(loaded)
    time.sleep(3)  # parsing a marker takes microseconds: unbounded workers would finish all n meanwhile
    parsed = len(list(marks.iterdir()))
    assert len(list(loaded)) == n - 1  # nothing lost, in order or not, every trial comes back
    return parsed


@pytest.mark.skipif(ingest._POOL_CONTEXT.get_start_method() != "fork", reason="the patch reaches forked workers only")
def test_parse_workers_do_not_run_ahead_of_the_writer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    workers, n = 2, 200
    parsed = _slow_consumer_parsed(tmp_path, monkeypatch, n, workers)
    in_flight = (ingest._in_flight(workers) + 2) * ingest._CHUNK  # the window, the chunk taken, the one after it
    assert parsed <= in_flight < n, parsed


@pytest.mark.skipif(ingest._POOL_CONTEXT.get_start_method() != "fork", reason="the patch reaches forked workers only")
def test_trials_are_parsed_and_gathered_while_a_batch_is_being_stored(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Writing a batch in the importing thread left the workers idle once their few chunks were parsed."""
    batch, workers, n = 24, 2, 96
    monkeypatch.setattr(ingest, "_WRITE_BATCH_TRIALS", batch)
    marks = tmp_path / "marks"
    marks.mkdir()
    real_load = ingest.load_trial

    def counted(trial_dir: Path, **options: object):
        (marks / trial_dir.name).touch()
        return real_load(trial_dir, **options)

    monkeypatch.setattr(ingest, "load_trial", counted)
    make_task(tmp_path)
    store = Store(tmp_path / "p.db")
    import_project(store, tasks_dir=tmp_path / "tasks", progress=False)
    for i in range(n):
        make_trial(tmp_path, f"demo-task__{i:03d}")
    real_write, during_first = store.trials.replace_trajectories, []

    def slow_write(rows: list) -> list:
        if not during_first:
            time.sleep(3)  # parsing a small trial takes milliseconds
            during_first.append(len(list(marks.iterdir())))
        return real_write(rows)

    monkeypatch.setattr(store.trials, "replace_trajectories", slow_write)
    report = import_project(store, trials_dir=tmp_path / "trials", progress=False, workers=workers)
    assert report.trials_imported == n and report.skipped == []
    synchronous_bound = batch + (ingest._in_flight(workers) + 2) * ingest._CHUNK  # what a blocked reader allows
    assert during_first[0] > synchronous_bound, during_first


def _import_in_spawned_process(db: str, root: str, queue: multiprocessing.Queue) -> None:
    def from_the_parent(trial_dir: Path, **_: object) -> str:
        raise ingest.TrialError(f"{trial_dir}: parsed by a forked worker")

    ingest.load_trial = from_the_parent  # a spawned worker re-imports the module and never sees this
    report = import_project(Store(db), trials_dir=Path(root) / "trials", progress=False, workers=2)
    queue.put([reason for _, reason in report.skipped])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="workers are forked on Linux only")
def test_parse_workers_are_forked_even_from_a_spawned_process(tmp_path: Path) -> None:
    """A spawned caller's pool would spawn too: each worker re-importing the app before parsing."""
    make_task(tmp_path)
    import_project(Store(tmp_path / "p.db"), tasks_dir=tmp_path / "tasks", progress=False)
    for i in range(10):
        make_trial(tmp_path, f"demo-task__{i:02d}")
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=_import_in_spawned_process, args=(str(tmp_path / "p.db"), str(tmp_path), queue))
    proc.start()
    reasons = queue.get(timeout=90)
    proc.join(30)
    assert len(reasons) == 10 and all("parsed by a forked worker" in r for r in reasons), reasons


def _imported_rows(store: Store) -> tuple[list[tuple], list[tuple]]:
    """Every trajectories row but its write time, and every events row, in key order."""
    trajectories = store.db.execute("SELECT * FROM trajectories ORDER BY id").fetchall()
    at = [c[1] for c in store.db.execute("PRAGMA table_info(trajectories)")].index("imported_at")
    events = store.db.execute("SELECT * FROM events ORDER BY trajectory_id, seq").fetchall()
    return [r[:at] + r[at + 1:] for r in trajectories], events


def test_rows_are_the_same_whatever_the_number_of_parse_workers(tmp_path: Path) -> None:
    """One worker parses in the importing process, two in a pool of processes whose results arrive
    packed: the stored rows, and what is skipped, must not depend on which."""
    make_task(tmp_path)
    for i in range(3):  # every format, more trials than one worker's chunks
        for fmt, (rel, text) in SMALL_LOGS.items():
            d = make_trial(tmp_path, f"demo-task__{fmt}-{i}")
            (d / "agent" / "claude-code.txt").unlink()
            (d / rel).parent.mkdir(parents=True, exist_ok=True)
            (d / rel).write_text(text.replace("done", f"done {i}"))
    make_trial(tmp_path, "demo-task__broken", log='{"type": "assistant", "message": \n')
    reports, rows = [], []
    for workers in (1, 2):
        store = Store(tmp_path / f"w{workers}.db")
        import_project(store, tasks_dir=tmp_path / "tasks", progress=False)
        reports.append(import_project(store, trials_dir=tmp_path / "trials", progress=False, workers=workers))
        rows.append(_imported_rows(store))
    assert len(list((tmp_path / "trials").iterdir())) > 2 * ingest._CHUNK  # so two workers do use the pool
    assert reports[0].trials_imported == 3 * len(SMALL_LOGS) and len(rows[0][1]) > 10 * len(SMALL_LOGS)
    assert [(p, r) for p, r in reports[0].skipped] == [(p, r) for p, r in reports[1].skipped] != []
    assert rows[0] == rows[1]
