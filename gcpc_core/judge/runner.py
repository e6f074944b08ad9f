"""`judge_project`: judge every trajectory of a project DB with one judge; resumable.

Finished trajectories are stored a group at a time: at most `GROUP_SECONDS` after one finished, all
that finished meanwhile are written in one transaction, each whole with its rows, together with
the response-cache rows and call records of every LLM call made so far (one commit per call and
per trajectory cost more CPU than judging it). So a kill -9 never leaves half a trajectory, and
loses at most the trajectories in flight or finished in the last `GROUP_SECONDS` — with their
LLM calls, which the rerun makes again; Ctrl-C and errors store every finished one first. A stored
trajectory's replies are in the response cache, and finished trajectories are skipped (see `units`).
Concurrency: the LLM layer bounds HTTP requests in flight; a second semaphore here bounds the
trajectories being prepared (events loaded, prompts built), so memory stays flat for any size.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from ..checklist import Rules, load_rules
from ..llm import LLM, HeldWrites, RunTotals
from ..runs import Progress, ProgressBar, recorded_run
from ..store import Store
from ..store.judging import TrajectorySave
from .batch import batched_trajectories, submit_batch
from .reports import JudgeReport, account_result
from .results import TrajectoryJudgment
from .registry import get_judge
from .units import Plan, judge_unit, judgment_rows, plan_units

__all__ = ["GROUP_SECONDS", "PREPARE_FACTOR", "judge_project", "offline_run"]

PREPARE_FACTOR = 2
"""Trajectories prepared at once = this × the LLM concurrency: enough to keep every HTTP slot busy."""
GROUP_SECONDS = 0.2
"""A finished trajectory is stored at most this long after it finished (with all that finished meanwhile)."""


class _GroupWriter:
    """Stores finished trajectories a group at a time (see the module docstring): one transaction
    holds the group's rows and the LLM layer's held cache rows and call records."""

    def __init__(self, store: Store, held: HeldWrites | None, *, run_id: str | None, label: str | None):
        self.store, self.held, self.run_id, self.label = store, held, run_id, label
        self.saves: list[TrajectorySave] = []
        self.since: float | None = None
        """When the oldest unwritten result arrived (None: nothing waits)."""
        self.timer: asyncio.TimerHandle | None = None
        self.failed: Exception | None = None
        """A write due on the timer failed: raised to the next caller, so the run stops with it."""

    def add(self, result: TrajectoryJudgment) -> None:
        """Take a finished trajectory (an error result stores nothing, but its calls are written)."""
        if result.status == "judged":
            self.saves.append(judgment_rows(result, run_id=self.run_id, label=self.label))
        if self.failed is not None:
            raise self.failed
        now = time.monotonic()
        if self.since is None:
            self.since = now
        if now - self.since >= GROUP_SECONDS:
            self.flush()
        elif self.timer is None:
            try:  # a quiet spell must not keep a finished trajectory waiting
                self.timer = asyncio.get_running_loop().call_later(GROUP_SECONDS, self._due)
            except RuntimeError:  # no event loop: the next add or the final flush writes it
                pass

    def _due(self) -> None:
        self.timer = None
        try:
            self.flush()
        except Exception as exc:  # noqa: BLE001 - a timer callback cannot raise to the run: kept for `add`
            self.failed = exc

    def flush(self) -> None:
        """Write everything waiting, in one transaction; kept for a retry if it fails."""
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        self.since = None
        if not self.saves and not self.held:
            return
        with self.store.atomic():
            if self.held is not None:
                self.held.write(self.store)
            self.store.judging.save_trajectory_judgments(self.saves)
        if self.held is not None:
            self.held.clear()
        self.saves.clear()
        self.failed = None


def offline_run(
    store: Store, kind: str, *, prompt_version: str, rules_version: str | None, params: dict,
    counts: Callable[[], dict[str, int]] | None = None,
) -> AbstractContextManager[RunTotals]:
    """A `runs` row for work without an LLM (the probe judge, import, scoring), recorded like `LLM.run`
    records one."""
    return recorded_run(store, RunTotals(), kind, model=None, prompt_version=prompt_version,
                        rules_version=rules_version, params=params, counts=counts)


def judge_project(
    store: Store,
    *,
    judge: str,
    model: str | None = None,
    concurrency: int = 8,
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
    if spec.calls_llm and llm is None:
        llm = LLM.from_env(model, store=store, concurrency=concurrency)
    model_name = llm.model if spec.calls_llm and llm is not None else None
    plan: Plan = plan_units(store, judge, rules=rules, model=model_name, per_item=per_item, limit=limit, force=force,
                            exclude=batched_trajectories(store, judge), label=label)
    prompt_version = spec.version(per_item=per_item)
    report = JudgeReport(judge=judge, skipped=plan.skipped, model=model_name, prompt_version=prompt_version)
    if not plan.todo:
        return report
    params: dict[str, Any] = {"judge": judge, "label": label, "per_item": per_item, "limit": limit, "force": force,
                              "trajectories": len(plan.todo), "checklists": plan.checklists}
    started = time.monotonic()
    bar = ProgressBar(len(plan.todo), desc=f"judge {judge}", unit="traj", progress=progress)

    def finish(result: TrajectoryJudgment, totals: RunTotals, writer: _GroupWriter) -> None:
        writer.add(result)
        account_result(report, result)
        if on_result is not None:
            on_result(result)
        bar.update(1, note=f"${totals.cost_usd:.4f} · {totals.http_calls} http · {totals.cache_hits} cached"
                   + (f" · {len(report.errors)} errors" if report.errors else "")
                   if llm is not None and spec.calls_llm else None)

    try:
        if not spec.calls_llm:
            with offline_run(store, f"judge-{judge}", prompt_version=prompt_version, rules_version=rules.version,
                             params=params, counts=report.counts) as totals:
                report.run_id, report.totals = totals.run_id, totals
                writer = _GroupWriter(store, None, run_id=totals.run_id, label=label)

                async def in_order() -> None:
                    try:
                        for unit in plan.todo:
                            finish(await judge_unit(unit, judge, store=store, rules=rules, llm=None), totals, writer)
                    finally:
                        writer.flush()

                asyncio.run(in_order())
        else:
            assert llm is not None
            params["concurrency"] = llm.config.concurrency
            with llm.run(f"judge-{judge}", prompt_version=prompt_version, rules_version=rules.version,
                         params=params, counts=report.counts) as totals, llm.holding_writes() as held:
                report.run_id, report.totals = totals.run_id, totals
                writer = _GroupWriter(store, held, run_id=totals.run_id, label=label)
                gate = asyncio.Semaphore(PREPARE_FACTOR * llm.config.concurrency)

                async def one(unit: Any) -> None:
                    async with gate:
                        result = await judge_unit(unit, judge, store=store, rules=rules, llm=llm, per_item=per_item)
                    finish(result, totals, writer)

                async def everything() -> None:
                    try:
                        await asyncio.gather(*(one(u) for u in plan.todo))
                    finally:
                        writer.flush()

                llm.run_sync(everything)
    finally:
        bar.close()
        report.wall_s = time.monotonic() - started
    return report
