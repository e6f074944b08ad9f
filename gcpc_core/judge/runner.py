"""`judge_project`: judge every trajectory of a project DB with one judge; resumable.

Finished trajectories are stored a group at a time: at most `GROUP_SECONDS` after one finished, all
that finished meanwhile are written in one transaction, each whole with its rows, together with
the response-cache rows and call records of every LLM call made so far (one commit per call and
per trajectory cost more CPU than judging it). So a kill -9 never leaves half a trajectory, and
loses at most the trajectories in flight or finished in the last `GROUP_SECONDS` — with their
LLM calls, which the rerun makes again; Ctrl-C and errors store every finished one first. A stored
trajectory's replies are in the response cache, and finished trajectories are skipped (see `units`).
Concurrency: the LLM layer bounds HTTP requests in flight; the run harness (`runs.run_stage`) bounds
the trajectories being prepared (events loaded, prompts built), so memory stays flat for any size.
A large live run builds its evidence views in a worker process (`prepare.ViewPool`), off the loop.
"""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import Future, ThreadPoolExecutor
from collections.abc import Callable
from typing import Any

from ..checklist import Rules, load_rules
from ..llm import LLM, HeldWrites
from ..runs import Progress, RunKind, StageRun, run_stage
from ..store import Store
from ..store.judging import TrajectorySave
from .batch import batched_trajectories, submit_batch
from .prepare import ViewPool
from .reports import JudgeReport, account_result
from .results import TrajectoryJudgment
from .registry import get_judge
from .units import Plan, judge_unit, judgment_rows, plan_units

__all__ = ["GROUP_SECONDS", "judge_project"]
GROUP_SECONDS = 0.2
"""A finished trajectory is stored at most this long after it finished (with all that finished meanwhile)."""


class _GroupWriter:
    """Stores finished trajectories a group at a time (see the module docstring): one transaction
    holds the group's rows and the LLM layer's held cache rows and call records. The transaction
    runs on a writing thread, so the event loop goes on sending and taking replies meanwhile (SQLite
    does its work without the GIL); one group is written at a time, in the order they were handed
    over."""

    def __init__(self, store: Store, *, label: str | None):
        self.store, self.label = store, label
        self.run: StageRun[TrajectoryJudgment] | None = None
        """The run the results belong to (known from the first one)."""
        self.saves: list[TrajectorySave] = []
        self.since: float | None = None
        """When the oldest unwritten result arrived (None: nothing waits)."""
        self.timer: asyncio.TimerHandle | None = None
        self.failed: BaseException | None = None
        """A group's write failed: raised to the next `add` and by `finish`, so the run fails with it."""
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gcpc-judge-writer")
        self._writing: Future[None] | None = None
        self._unwritten: list[tuple[list[TrajectorySave], HeldWrites | None]] = []
        """Groups whose write failed, kept for `finish` to write again."""

    def add(self, result: TrajectoryJudgment, run: StageRun[TrajectoryJudgment]) -> None:
        """Take a finished trajectory of `run` (an error result stores nothing, but its calls are written)."""
        self.run = run
        if result.status == "judged":
            self.saves.append(judgment_rows(result, run_id=run.run_id, label=self.label))
        if self.failed is not None:
            raise self.failed
        now = time.monotonic()
        if self.since is None:
            self.since = now
        if now - self.since >= GROUP_SECONDS:
            self.flush()
        elif self.timer is None:
            try:  # a quiet spell must not keep a finished trajectory waiting
                self.timer = asyncio.get_running_loop().call_later(GROUP_SECONDS, self.flush)
            except RuntimeError:  # no event loop: the next add or `finish` writes it
                pass

    def flush(self) -> None:
        """Hand everything waiting to the writing thread, as one group. The held LLM writes stay
        held (an identical request is still answered from them) until their group has committed;
        a group waits for the one before it, so no held row is taken twice."""
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        self.since = None
        held = self.run.held if self.run is not None else None
        if not self.saves and not held:
            return
        if self._writing is not None:
            self._writing.result()  # the group before: its held rows are forgotten once it committed
        group, self.saves = self.saves, []
        self._writing = self._thread.submit(self._write, group, held, held.snapshot() if held else None)

    def _write(self, saves: list[TrajectorySave], held: HeldWrites | None, taken: HeldWrites | None) -> None:
        """On the writing thread: one group in one transaction; a failure keeps it for `finish`."""
        try:
            with self.store.atomic():
                if taken is not None:
                    taken.write(self.store)
                self.store.judging.save_trajectory_judgments(saves)
        except BaseException as exc:  # noqa: BLE001 - kept: the run raises it (`add`, `finish`)
            self._unwritten.append((saves, taken))
            self.failed = self.failed or exc
            return
        if held is not None and taken is not None:
            held.forget(taken)

    def finish(self) -> None:
        """The run's units are over: write what waits, wait for the writing thread, write any group
        that failed once more (here), then raise the first failure, if any."""
        try:
            self.flush()
        finally:
            if self._writing is not None:
                self._writing.result()
            self._thread.shutdown(wait=True)
        held = self.run.held if self.run is not None else None
        for saves, taken in self._unwritten:
            with self.store.atomic():
                if taken is not None:
                    taken.write(self.store)
                self.store.judging.save_trajectory_judgments(saves)
            if held is not None and taken is not None:
                held.forget(taken)
        self._unwritten.clear()
        if self.failed is not None:
            raise self.failed


def judge_project(
    store: Store,
    *,
    judge: str,
    model: str | None = None,
    concurrency: int | None = None,
    limit: int | None = None,
    per_item: bool = False,
    batch: bool = False,
    force: bool = False,
    progress: Progress = True,
    llm: LLM | None = None,
    rules: Rules | None = None,
    on_result: Callable[[TrajectoryJudgment], None] | None = None,
    label: str | None = None,
) -> JudgeReport:
    """Judge every trajectory not judged yet by `judge` (or only `limit` of them); store each at once.

    `gcpc` judges the task's latest frozen checklist, `fixed` the fixed checklist of `rules/`,
    `holistic` rates progress, `probe` runs item probes offline (no LLM, no endpoint needed).
    `batch` submits a Batch-API job instead (see `batch.submit_batch`); `force` judges finished
    trajectories again (identical requests come from the response cache). `label` names the run
    (default: derived from judge, model, prompt and rules version); runs under other labels are kept,
    and a rerun under the same label resumes it. Raises LLMNotConfigured before any work when an LLM
    judge has no model or endpoint.
    """
    rules = rules or load_rules()
    if batch and label:
        raise ValueError("--label is not available with --batch: a batch run is stored under its derived label")
    if batch:
        return submit_batch(store, judge=judge, model=model, limit=limit, per_item=per_item, force=force,
                            llm=llm, rules=rules)
    spec = get_judge(judge)
    llm = (llm or LLM.from_env(model, store=store, concurrency=concurrency)) if spec.calls_llm else None
    model_name = llm.model if llm is not None else None
    plan: Plan = plan_units(store, judge, rules=rules, model=model_name, per_item=per_item, limit=limit, force=force,
                            exclude=batched_trajectories(store, judge), label=label)
    prompt_version = spec.version(per_item=per_item)
    report = JudgeReport(judge=judge, skipped=plan.skipped, model=model_name, prompt_version=prompt_version)
    if not plan.todo:
        return report
    params: dict[str, Any] = {"judge": judge, "label": label, "per_item": per_item, "limit": limit, "force": force,
                              "trajectories": len(plan.todo), "checklists": plan.checklists}
    if llm is not None:
        params["concurrency"] = llm.config.concurrency
    writer = _GroupWriter(store, label=label)
    views = ViewPool.for_run(store, plan.todo) if llm is not None else None

    async def one(unit: Any, run: StageRun[TrajectoryJudgment]) -> TrajectoryJudgment:
        view = await views.view(store, unit, rules) if views is not None else None
        result = await judge_unit(unit, judge, store=store, rules=rules, llm=llm, per_item=per_item, view=view)
        writer.add(result, run)
        account_result(report, result)
        if on_result is not None:
            on_result(result)
        return result

    def note(_: TrajectoryJudgment) -> str | None:
        if llm is None:
            return None
        totals = llm.totals
        return (f"${totals.cost_usd:.4f} · {totals.http_calls} http · {totals.cache_hits} cached"
                + (f" · {len(report.errors)} errors" if report.errors else ""))

    try:
        run = run_stage(store, RunKind.judge(judge), plan.todo, one, llm=llm, prompt_version=prompt_version,
                        rules_version=rules.version, params=params, counts=lambda _: report.counts(),
                        progress=progress, unit="traj", note=note, hold_writes=True, finish=writer.finish)
    finally:
        if views is not None:
            views.close()
    report.run_id, report.totals, report.wall_s = run.run_id, run.totals, run.wall_s
    return report
