"""The run harness: `run_stage`, the one way a stage runs — recorded, with progress, stopped on Ctrl-C.

Every stage — import, synthesize, judge, score, perturb, report, triage, and the Batch-API submit
and collect — runs through `run_stage`, whether the command line or the app's Runs page started it,
so the `runs` ledger tells the same story for both: kind, parameters, versions, what the run counted,
its LLM calls, tokens and cost, wall time, and how it ended (`done`, `interrupted` on Ctrl-C or
cancellation, `failed` on any other error). A stage hands over its units of work and an async
`work_one`; without an LLM the units run one after the other, with one they run concurrently,
gated at `PREPARE_FACTOR` × the LLM's concurrency so that every HTTP slot stays busy while memory
stays flat. Stages store each unit in its own transaction as it is finished, so an interrupted run
leaves nothing half-written and a rerun resumes.

A run killed without a chance to close its row (SIGKILL, a crash) stays `running` in the ledger;
`reap_dead_runs` tells those from live runs by the process id and host the row records. The store
only runs the queries; what counts as alive is decided here.

Progress: a stage takes `progress` — True for a tqdm bar on the terminal, False for none, or a
callback `(done, total)` that the app's job runner passes to show progress on its page.

A run's kind is a `RunKind`: the stage, and for the stages run per judge the judge's name
(`judge-gcpc`, `perturb-probe`). It is a `str`, so the ledger stores and reads it as before.

This module sits above the LLM layer and the store and below the stages, so any stage can use it
without an import cycle.
"""

from __future__ import annotations

import asyncio
import inspect
import os
import socket
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar, get_args

from tqdm import tqdm

from .llm import LLM, HeldWrites, RunTotals
from .store import RunRow, Store

__all__ = [
    "PER_JUDGE",
    "PREPARE_FACTOR",
    "STAGES",
    "Progress",
    "ProgressBar",
    "ProgressFn",
    "RunKind",
    "Stage",
    "StageRun",
    "pid_alive",
    "reap_dead_runs",
    "counts_of_one",
    "run_owner",
    "run_stage",
]

ProgressFn = Callable[[int, int], None]
"""Called with (done, total) after each finished unit of work."""
Progress = bool | ProgressFn
"""What a stage's `progress` argument takes: a terminal bar (True), nothing (False) or a callback."""

Stage = Literal["import", "synthesize", "judge", "score", "perturb", "report", "triage", "batch-submit",
                "batch-collect"]
"""A stage of the pipeline, as the ledger names its runs."""
STAGES: tuple[Stage, ...] = get_args(Stage)
"""Every stage, in pipeline order: the one list the ledger's kinds and the Runs page's jobs come from."""
PER_JUDGE: frozenset[Stage] = frozenset({"judge", "perturb", "batch-submit", "batch-collect"})
"""The stages run for one judge: their runs' kind names it (`judge-gcpc`)."""

PREPARE_FACTOR = 2
"""Units worked on at once in an LLM run = this × the LLM concurrency: enough to keep every HTTP slot busy."""

Unit = TypeVar("Unit")
Result = TypeVar("Result")


class RunKind(str):
    """What a `runs` row is a run of: a stage, and for a stage run per judge the judge's name.

    It is the `str` the ledger stores (`"score"`, `"judge-gcpc"`), so rows written before it existed
    read, compare and filter as they always did; `parse` reads one back into its parts.
    """

    stage: Stage
    """The stage the run is of."""
    judge_name: str | None
    """The judge of a per-judge stage's run (None: the stage is not run per judge, or the row names none)."""

    def __new__(cls, stage: Stage, judge_name: str | None = None) -> RunKind:
        if stage not in STAGES:
            raise ValueError(f"unknown stage {stage!r}; one of {', '.join(STAGES)}")
        if judge_name is not None and (stage not in PER_JUDGE or not judge_name):
            raise ValueError(f"stage {stage!r} is not run per judge, or the judge name is empty: {judge_name!r}")
        kind = super().__new__(cls, stage if judge_name is None else f"{stage}-{judge_name}")
        kind.stage, kind.judge_name = stage, judge_name
        return kind

    def __getnewargs__(self) -> tuple[Stage, str | None]:  # type: ignore[override]
        """Copies and pickles rebuild a kind from its parts (the text alone is no stage)."""
        return self.stage, self.judge_name

    @classmethod
    def judge(cls, name: str) -> RunKind:
        """A run of judge `name` (`judge-gcpc`)."""
        return cls("judge", name)

    @classmethod
    def perturb(cls, name: str) -> RunKind:
        """An evidence-sensitivity run over judge `name`'s verdicts (`perturb-probe`)."""
        return cls("perturb", name)

    @classmethod
    def parse(cls, text: str) -> RunKind:
        """The kind a ledger row's `kind` names; ValueError for text that names no stage."""
        for stage in STAGES:
            if text == stage:
                return cls(stage)
            if stage in PER_JUDGE and text.startswith(f"{stage}-"):
                return cls(stage, text[len(stage) + 1:])
        raise ValueError(f"{text!r} names no stage run; stages: {', '.join(STAGES)}")


@dataclass
class StageRun(Generic[Result]):
    """One recorded run of a stage: what each unit's work sees of it, and what `run_stage` returns."""

    totals: RunTotals
    """Its calls, tokens and cost so far; `totals.run_id` is its `runs` row."""
    held: HeldWrites | None = None
    """With `hold_writes`: the LLM layer's cache rows and call records, held for the stage to write
    in its own transactions (see `LLM.holding_writes`); None otherwise."""
    results: list[Result] = field(default_factory=list)
    """What `work_one` returned: in the order the units finished while the run works, in the units'
    order once it is done."""
    wall_s: float = 0.0
    """Seconds the run took (set when it ends)."""

    @property
    def run_id(self) -> str | None:
        return self.totals.run_id


def run_owner() -> dict[str, Any]:
    """The process and host a new `running` row belongs to, so a dead owner can be told later."""
    return {"pid": os.getpid(), "host": socket.gethostname()}


def pid_alive(pid: int) -> bool:
    """Whether process `pid` exists on this host (signal 0 checks without signalling)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by someone else
    return True


def reap_dead_runs(store: Store) -> int:
    """Mark `running` rows whose process on this host is gone (SIGKILL, crash) as `interrupted`.

    Returns how many were marked. Rows of other hosts are left alone: their liveness is unknown here,
    and so are rows that name no process.
    """
    dead = [row.id for row in store.runs.running(host=socket.gethostname())
            if row.pid is not None and not pid_alive(row.pid)]
    store.runs.interrupt(dead)
    return len(dead)


def run_stage(
    store: Store,
    kind: RunKind,
    units: Sequence[Unit],
    work_one: Callable[[Unit, StageRun[Result]], Result | Awaitable[Result]],
    *,
    llm: LLM | None = None,
    prompt_version: str,
    rules_version: str | None = None,
    params: Mapping[str, Any] | None = None,
    counts: Callable[[Sequence[Result]], Mapping[str, int]] | None = None,
    progress: Progress = False,
    desc: str | None = None,
    unit: str = "unit",
    note: Callable[[Result], str | None] | None = None,
    hold_writes: bool = False,
    finish: Callable[[], None] | None = None,
) -> StageRun[Result]:
    """Run `work_one` over `units` as one recorded run of `kind`, and return the run with its results.

    `work_one(unit, run)` is a coroutine function, or a plain one for work that awaits nothing (a
    stage over the whole project is one unit). Dead runs are reaped first, then a `running` row is
    opened (owned by this process). Without `llm`
    the units run one after the other; with it, concurrently — at most `PREPARE_FACTOR` × its
    concurrency at once — and its calls are tagged with the run's id and summed into the run's
    totals (`hold_writes` holds its cache rows and call records in `StageRun.held` for the stage to
    write with its own rows). A unit finished moves the progress on, with `note(result)` beside the
    bar. `finish` is called once the units end, however they end, while the run is still open: the
    stage stores what it still holds. The row ends `done`, `interrupted` (Ctrl-C, cancellation) or
    `failed` (any other error, which is raised), with the totals, the wall time and what `counts`
    makes of the results finished by then (so an interrupted run still says how far it got).
    """
    reap_dead_runs(store)
    run: StageRun[Result] = StageRun(totals=llm.new_run_totals() if llm is not None else RunTotals())
    opened = store.runs.start(RunRow(
        kind=str(kind), model=llm.model if llm is not None else None, prompt_version=prompt_version,
        rules_version=rules_version, params=dict(params or {}), **run_owner(),
    ))
    run.totals.run_id = opened.id
    bar = ProgressBar(len(units), desc=desc or " ".join(filter(None, (kind.stage, kind.judge_name))), unit=unit,
                      progress=progress)

    async def one(item: Unit) -> Result:
        done = work_one(item, run)
        result: Result = await done if inspect.isawaitable(done) else done
        run.results.append(result)
        bar.update(1, note=note(result) if note is not None else None)
        return result

    async def every_unit() -> list[Result]:
        try:
            if llm is None:
                return [await one(item) for item in units]
            gate = asyncio.Semaphore(PREPARE_FACTOR * llm.config.concurrency)

            async def gated(item: Unit) -> Result:
                async with gate:
                    return await one(item)

            return list(await asyncio.gather(*(gated(item) for item in units)))
        finally:
            if finish is not None:
                finish()

    started, status = time.monotonic(), "failed"
    try:
        with bar, (llm.holding_writes() if hold_writes and llm is not None else nullcontext()) as held:
            run.held = held
            run.results = llm.run_sync(every_unit) if llm is not None else asyncio.run(every_unit())
        status = "done"
    except (KeyboardInterrupt, asyncio.CancelledError):
        status = "interrupted"
        raise
    finally:
        run.wall_s = round(time.monotonic() - started, 3)
        store.runs.finish(opened.replaced(status=status, wall_s=run.wall_s, **run.totals.as_row(),
                                          counts=dict(counts(run.results)) if counts is not None else None))
    return run


def counts_of_one(counts: Callable[[Result], Mapping[str, int]]) -> Callable[[Sequence[Result]], Mapping[str, int]]:
    """`run_stage`'s `counts` for a run of one unit (a stage over the whole project): what `counts`
    makes of its result once it is done, and nothing before (an interrupted or failed run)."""
    return lambda done: counts(done[0]) if done else {}


class ProgressBar:
    """Progress of one stage run: a tqdm bar on the terminal, or the caller's callback, or nothing."""

    def __init__(self, total: int, *, desc: str, unit: str, progress: Progress = True):
        self.total = total
        self.done = 0
        self._callback: ProgressFn | None = progress if callable(progress) else None
        self._bar = tqdm(total=total, desc=desc, unit=unit, dynamic_ncols=True,
                         disable=callable(progress) or not progress or not total)

    def update(self, n: int = 1, *, note: str | None = None) -> None:
        """`n` more units done; `note` (cost so far, the last task) shows beside the bar."""
        self.done += n
        if note is not None:
            self._bar.set_postfix_str(note, refresh=False)
        self._bar.update(n)
        if self._callback is not None:
            self._callback(self.done, self.total)

    def close(self) -> None:
        self._bar.close()

    def __enter__(self) -> ProgressBar:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
