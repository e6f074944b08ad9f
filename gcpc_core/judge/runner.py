"""`judge_project`: judge every trajectory of a project DB with one judge; resumable.

Each trajectory is stored the moment it is judged, in one transaction, so Ctrl-C or kill -9
loses at most the trajectories in flight — and their finished LLM calls are in the response
cache, so the rerun repeats none of them. Finished trajectories are skipped (see `units`).
Concurrency: the LLM layer bounds HTTP requests in flight; a second semaphore here bounds the
trajectories being prepared (events loaded, prompts built), so memory stays flat for any size.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

from tqdm import tqdm

from ..checklist import Rules, load_rules
from ..llm import LLM, LLMConfig, RunTotals, recorded_run
from ..store import Store
from .results import TrajectoryJudgment
from .units import LLM_JUDGES, Plan, judge_unit, plan_units, prompt_version_of, store_judgment

__all__ = ["JudgeReport", "account_result", "batched_trajectories", "judge_project", "offline_run"]

PREPARE_FACTOR = 2
"""Trajectories prepared at once = this × the LLM concurrency: enough to keep every HTTP slot busy."""


@dataclass
class JudgeReport:
    """What one `judge_project` call did."""

    judge: str
    judged: list[str] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)
    """trajectory id → endpoint failure (not stored; a rerun tries again)."""
    skipped: dict[str, str] = field(default_factory=dict)
    run_id: str | None = None
    model: str | None = None
    prompt_version: str = ""
    totals: RunTotals = field(default_factory=RunTotals)
    wall_s: float = 0.0
    verdicts: Counter = field(default_factory=Counter)
    """Raw verdicts and abstain reasons over the judged items, e.g. `Yes`, `Abstain:ungrounded`."""
    batch_id: str | None = None
    """Set when the run submitted a Batch-API job instead of judging live."""

    @property
    def ok(self) -> bool:
        return not self.errors

    def lines(self) -> list[str]:
        """Human-readable summary for the CLI."""
        skipped = Counter(self.skipped.values())
        out = [f"{tid} error {why}" for tid, why in sorted(self.errors.items())]
        out += [f"skipped {n}: {why}" for why, n in sorted(skipped.items())]
        if self.verdicts:
            out.append("verdicts: " + ", ".join(f"{k} {v}" for k, v in sorted(self.verdicts.items())))
        out.append(
            f"judge {self.judge}: judged {len(self.judged)}, errors {len(self.errors)}, skipped {len(self.skipped)}; "
            f"{self.totals.summary()}, wall {self.wall_s:.1f}s" + (f", run {self.run_id}" if self.run_id else "")
        )
        return out


def offline_run(
    store: Store, kind: str, *, prompt_version: str, rules_version: str, params: dict
) -> AbstractContextManager[RunTotals]:
    """A `runs` row for work without an LLM (the probe judge), recorded like `LLM.run` records one."""
    return recorded_run(store, RunTotals(), kind, model=None, prompt_version=prompt_version,
                        rules_version=rules_version, params=params)


def account_result(report: JudgeReport, result: TrajectoryJudgment) -> None:
    if result.status == "error":
        report.errors[result.trajectory_id] = result.reason or "error"
        return
    report.judged.append(result.trajectory_id)
    for item in result.items:
        report.verdicts[item.verdict_raw if item.verdict_raw != "Abstain" else f"Abstain:{item.reason}"] += 1
    if result.judge == "holistic":
        report.verdicts["rated" if result.progress is not None else f"unrated:{result.reason}"] += 1


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
    progress: bool = True,
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
        from .batch import submit_batch  # batch builds on this module

        return submit_batch(store, judge=judge, model=model, limit=limit, per_item=per_item, force=force,
                            llm=llm, rules=rules)
    if judge in LLM_JUDGES and llm is None:
        llm = LLM(LLMConfig.from_env(model, concurrency=concurrency), store=store)
    model_name = llm.model if judge in LLM_JUDGES and llm is not None else None
    plan: Plan = plan_units(store, judge, rules=rules, model=model_name, per_item=per_item, limit=limit, force=force,
                            exclude=batched_trajectories(store, judge), label=label)
    prompt_version = prompt_version_of(judge, per_item=per_item)
    report = JudgeReport(judge=judge, skipped=plan.skipped, model=model_name, prompt_version=prompt_version)
    if not plan.todo:
        return report
    params: dict[str, Any] = {"judge": judge, "label": label, "per_item": per_item, "limit": limit, "force": force,
                              "trajectories": len(plan.todo), "checklists": plan.checklists}
    started = time.monotonic()
    bar = tqdm(total=len(plan.todo), desc=f"judge {judge}", unit="traj", disable=not progress, dynamic_ncols=True)

    def finish(result: TrajectoryJudgment, totals: RunTotals) -> None:
        if result.status == "judged":
            store_judgment(store, result, run_id=totals.run_id, label=label)
        account_result(report, result)
        if on_result is not None:
            on_result(result)
        bar.update(1)
        if llm is not None and judge in LLM_JUDGES:
            bar.set_postfix_str(f"${totals.cost_usd:.4f} · {totals.http_calls} http · {totals.cache_hits} cached"
                                + (f" · {len(report.errors)} errors" if report.errors else ""), refresh=False)

    try:
        if judge not in LLM_JUDGES:
            with offline_run(store, f"judge-{judge}", prompt_version=prompt_version, rules_version=rules.version,
                             params=params) as totals:
                report.run_id, report.totals = totals.run_id, totals

                async def in_order() -> None:
                    for unit in plan.todo:
                        finish(await judge_unit(unit, judge, store=store, rules=rules, llm=None), totals)

                asyncio.run(in_order())
        else:
            assert llm is not None
            params["concurrency"] = llm.config.concurrency
            with llm.run(f"judge-{judge}", prompt_version=prompt_version, rules_version=rules.version,
                         params=params) as totals:
                report.run_id, report.totals = totals.run_id, totals
                gate = asyncio.Semaphore(PREPARE_FACTOR * llm.config.concurrency)

                async def one(unit: Any) -> None:
                    async with gate:
                        result = await judge_unit(unit, judge, store=store, rules=rules, llm=llm, per_item=per_item)
                    finish(result, totals)

                async def everything() -> None:
                    await asyncio.gather(*(one(u) for u in plan.todo))

                llm.run_sync(everything)
    finally:
        bar.close()
        report.wall_s = time.monotonic() - started
    return report


def batched_trajectories(store: Store, judge: str) -> set[str]:
    """Trajectories sitting in a submitted, not yet collected batch of this judge."""
    return {
        request["trajectory_id"]
        for row in store.judge_batches()
        if row["judge"] == judge and row["status"] not in ("collected", "failed", "expired", "cancelled")
        for request in (row["requests"] or {}).values()
    }
