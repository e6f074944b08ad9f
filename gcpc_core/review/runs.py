"""The runs page's data: background jobs (import, judge, score, synthesize) and the `runs` table.

A job runs in a daemon thread of the app's server with its own `Store` (one connection per
thread, WAL mode: the pages keep reading while it writes). It calls the same entry point as the
command line, which runs through `runs.run_stage`, so both write the same `runs` row; the jobs it
can start come from the same list of stages (`runs.STAGES`). Progress is read from the DB — the `runs`
row, the judge units / checklists / LLM calls stored under the run id — so a run started from the
command line shows live progress in the same table as one started here; a job started here also
counts its finished units through the harness's progress callback.
"""

from __future__ import annotations

import threading
import traceback
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ..analysis.run_names import run_name
from ..checklist.synthesis import synthesize_project
from ..ingest import find_trial_dirs
from ..ingest.archive import unpack_for_import
from ..judge import find_judge, get_judge, judge_project
from ..llm import InvalidSetting, LLMConfig, check_endpoint, llm_status
from ..runs import PER_JUDGE, STAGES, ProgressFn, RunKind, Stage, reap_dead_runs
from ..stages import recorded_import, recorded_score
from ..store import RunRow, Store, utcnow

__all__ = [
    "judge_runs_frame",
    "ARCHIVE_HOLDS",
    "JOBS",
    "JOB_KINDS",
    "Job",
    "JobRunner",
    "job_progress",
    "job_run",
    "needs_llm",
    "run_progress",
    "runs_frame",
    "start_archive_import",
]

ARCHIVE_HOLDS = {"trials": ("trials_dir",), "tasks": ("tasks_dir",), "tasks and trials": ("tasks_dir", "trials_dir")}
"""What an uploaded archive holds → the import folders its unpacked root stands for."""


def needs_llm(kind: Stage, params: dict[str, Any]) -> bool:
    """Whether a job calls the LLM endpoint (and so needs it configured)."""
    spec = find_judge(params.get("judge")) if kind == "judge" else None
    return kind == "synthesize" or (spec is not None and spec.calls_llm)


@dataclass
class Job:
    """One background job started from the app."""

    id: str
    db_path: str
    kind: Stage
    """The stage the job runs (one of `JOB_KINDS`)."""
    params: dict[str, Any]
    started_at: str
    status: str = "running"
    """`running`, `done` or `failed`."""
    error: str | None = None
    lines: list[str] = field(default_factory=list)
    """The job's report, as the command line would print it."""
    run_id: str | None = None
    """The `runs` row the job writes, once known."""
    done: int | None = None
    total: int | None = None
    """Units finished and planned, as the stage reports them through its progress callback."""
    finished_at: str | None = None
    thread: threading.Thread | None = field(default=None, repr=False, compare=False)


def _import(store: Store, job: Job) -> list[str]:
    params = job.params
    tasks_dir = Path(params["tasks_dir"]) if params.get("tasks_dir") else None
    trials_dir = Path(params["trials_dir"]) if params.get("trials_dir") else None
    for folder in (tasks_dir, trials_dir):
        if folder is not None and not folder.is_dir():
            raise FileNotFoundError(f"not a folder: {folder}")
    total = len(find_trial_dirs(trials_dir)) if trials_dir else 0
    report = recorded_import(store, tasks_dir=tasks_dir, trials_dir=trials_dir, progress=False,
                             params={**params, "trials": total})
    return report.summary_lines() + [f"{path}: {reason}" for path, reason in report.skipped]


def _progress(job: Job) -> ProgressFn:
    """The harness's progress callback for a job: its finished and planned units."""
    def report(done: int, total: int) -> None:
        job.done, job.total = done, total
    return report


def _concurrency(params: dict[str, Any]) -> int | None:
    """The Runs page's concurrency when one was given; None (GCPC_LLM_CONCURRENCY, else the default) otherwise."""
    value = params.get("concurrency")
    return None if value in (None, "") else int(value)


def _judge(store: Store, job: Job) -> list[str]:
    p = job.params
    get_judge(p.get("judge"))
    report = judge_project(store, judge=p["judge"], model=p.get("model") or None, limit=p.get("limit"),
                           concurrency=_concurrency(p), force=bool(p.get("force")),
                           progress=_progress(job), label=p.get("label") or None)
    job.run_id = report.run_id
    return report.lines()


def _score(store: Store, job: Job) -> list[str]:
    return recorded_score(store, judge=job.params.get("judge") or None).lines()


def _synthesize(store: Store, job: Job) -> list[str]:
    p = job.params
    report = synthesize_project(store, task=p.get("task") or None, model=p.get("model") or None,
                                force=bool(p.get("force")), progress=_progress(job))
    job.run_id = report.run_id
    return report.lines()


_WORK: dict[Stage, Callable[[Store, Job], list[str]]] = {
    "import": _import, "synthesize": _synthesize, "judge": _judge, "score": _score,
}
JOB_KINDS: tuple[Stage, ...] = tuple(stage for stage in STAGES if stage in _WORK)
"""The stages the Runs page starts as jobs, in pipeline order (`runs.STAGES`)."""


class JobRunner:
    """Starts jobs in daemon threads and remembers them for the life of the server process."""

    def __init__(self) -> None:
        self._jobs: dict[str, Job] = {}
        self._lock = threading.Lock()

    def start(self, db_path: str | Path, kind: Stage, params: dict[str, Any] | None = None) -> Job:
        """Start a job; raises ValueError for an unknown kind or an LLM job without an endpoint."""
        params = dict(params or {})
        if kind not in _WORK:
            raise ValueError(f"unknown job kind {kind!r}; one of {JOB_KINDS}")
        if needs_llm(kind, params):
            usable, reason = llm_status(params.get("model") or None)
            if not usable:
                raise ValueError(reason)
        job = Job(id=uuid.uuid4().hex[:8], db_path=str(db_path), kind=kind, params=params, started_at=utcnow())
        job.thread = threading.Thread(target=self._run, args=(job,), name=f"gcpc-job-{kind}-{job.id}", daemon=True)
        with self._lock:
            self._jobs[job.id] = job
        job.thread.start()
        return job

    @staticmethod
    def _run(job: Job) -> None:
        store = Store(job.db_path)
        try:
            job.lines = _WORK[job.kind](store, job)
            job.status = "done"
        except Exception as exc:  # a job's failure is reported on the page, never raised into the server
            job.status, job.error = "failed", f"{type(exc).__name__}: {exc}"
            job.lines.append(traceback.format_exc(limit=3))
        finally:
            if job.run_id is None:
                run = job_run(store, job)
                job.run_id = run.id if run is not None else None
            job.finished_at = utcnow()
            store.close()

    def jobs(self, db_path: str | Path | None = None) -> list[Job]:
        """Jobs started in this process (for one project DB), newest first."""
        with self._lock:
            jobs = list(self._jobs.values())
        return [j for j in reversed(jobs) if db_path is None or j.db_path == str(db_path)]

    def running(self, db_path: str | Path | None = None) -> list[Job]:
        return [j for j in self.jobs(db_path) if j.status == "running"]

    def wait(self, job_id: str, timeout: float | None = None) -> Job:
        """Block until a job ends (tests and scripts)."""
        job = self._jobs[job_id]
        if job.thread is not None:
            job.thread.join(timeout)
        return job


JOBS = JobRunner()
"""The server's one job runner (module state lives as long as the Streamlit process)."""


def start_archive_import(db_path: str | Path, name: str, data: bytes, *, holds: str = "trials") -> Job:
    """Unpack an uploaded archive beside the project DB and start importing it. Raises ArchiveError
    (a ValueError naming the refused member; nothing is unpacked) before any job starts."""
    if holds not in ARCHIVE_HOLDS:
        raise ValueError(f"unknown archive content {holds!r}; one of {', '.join(ARCHIVE_HOLDS)}")
    folder = str(unpack_for_import(data, db_path, name=name))
    return JOBS.start(db_path, "import", {**{key: folder for key in ARCHIVE_HOLDS[holds]}, "archive": name})


def endpoint_check(store: Store) -> list[str]:
    """`llm check` for the page: the configured endpoint probed, one finding a line, verdict last;
    the negotiated structured mode is stored in the project DB. A variable holding an invalid value
    is the one line returned."""
    try:
        config = LLMConfig.from_env()
    except InvalidSetting as exc:
        return [f"LLM not configured: {exc}"]
    return check_endpoint(config, store=store).lines


def run_progress(store: Store, run: RunRow) -> tuple[int | None, int | None]:
    """(done, total) of a run from what it has stored; None where the run kind does not say."""
    params = run.params or {}
    try:
        stage = RunKind.parse(run.kind).stage
    except ValueError:  # a row of no stage (written by hand or by a test): nothing says its progress
        return None, None
    if stage == "import":
        total = params.get("trials")
        done = store.trials.count_trajectories_imported_since(run.started_at) if run.status == "running" else total
        return done, total
    live = store.runs.progress(run.id)
    if stage == "judge":
        return live.judged, params.get("trajectories")
    if stage == "synthesize":
        return live.checklists, params.get("tasks")
    return None, None


def job_progress(store: Store, job: Job, run: RunRow) -> tuple[int | None, int | None]:
    """(done, total) of a job's run: what the DB says, else what the stage reported to the job."""
    done, total = run_progress(store, run)
    if total is None and job.total is not None:
        return job.done, job.total
    return done, total


def job_run(store: Store, job: Job) -> RunRow | None:
    """The `runs` row a job writes: by id once the job knows it, else the first run of the job's
    kind started since the job (the stages open their row themselves)."""
    if job.run_id:
        return store.runs.get(job.run_id)
    kind = RunKind(job.kind, job.params.get("judge") or None) if job.kind in PER_JUDGE else RunKind(job.kind)
    return next((r for r in store.runs.list(kind=kind) if r.started_at >= job.started_at), None)


RUN_COLUMNS = ["id", "kind", "status", "progress", "model", "structured_mode", "started_at", "finished_at", "wall_s", "calls",
               "http_calls", "cache_hits", "errors", "prompt_tokens", "cached_tokens", "completion_tokens", "cost_usd"]


def judge_runs_frame(store: Store) -> pd.DataFrame:
    """Every labelled judge run, newest first: its readable name (`run_name`), its full label, whether it is its
    judge's default (what every page reads unless its Run box chooses another) and how much it judged."""
    defaults = store.judging.default_labels()
    rows = [{"run": run_name(r), "label": r.label, "default": defaults.get(r.judge) == r.label,
             "trajectories": r.n_trajectories, "first_at": r.first_at, "last_at": r.last_at}
            for r in reversed(store.judging.labels())]
    return pd.DataFrame(rows, columns=["run", "label", "default", "trajectories", "first_at", "last_at"])


def runs_frame(store: Store) -> pd.DataFrame:
    """Every run, newest first; a running run's calls, tokens and cost are summed live from its calls.

    Runs whose process died without closing its row (kill -9) are first marked `interrupted`.
    """
    reap_dead_runs(store)
    rows = []
    for run in reversed(store.runs.list()):
        row = {c: getattr(run, c) for c in RUN_COLUMNS if c != "progress"}
        if run.status == "running":
            row.update(store.runs.progress(run.id).model_dump(exclude={"judged", "checklists"}))
        done, total = run_progress(store, run)
        row["progress"] = "" if done is None and total is None else f"{done if done is not None else '?'}/{total or '?'}"
        rows.append(row)
    return pd.DataFrame(rows, columns=RUN_COLUMNS)
