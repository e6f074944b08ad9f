"""The evidence-sensitivity stage: perturb the cited evidence of stored Yes items and judge them again.

What a perturbation is and how the shares are computed are pure functions over frames in
`gcpc_core.analysis.sensitivity`; this module plans the work from the project DB, re-judges through
the judge's own path (`judge.units.judge_unit`: same prompts, LLM layer, response cache, repair
policy and grounding check) and stores one row per perturbed item (`store.perturbations.save`),
so a rerun resumes where an interrupted one stopped.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from .analysis.sensitivity import (
    SCOPES,
    PerturbationError,
    Scope,
    perturb_events,
    perturbation_frame,
    recipe_kind,
    sensitivity_table,
)
from .checklist import Rules, load_rules
from .evidence import build_evidence_view
from .analysis.frames import with_judge_order
from .judge.registry import ITEM_JUDGES, get_judge, judge_order
from .judge.units import judge_unit, unit_for
from .llm import LLM, RunTotals
from .models import Citation
from .runs import Progress, RunKind, StageRun, run_stage
from .store import JudgmentRow, PerturbationRow, Store, utcnow

__all__ = ["SensitivityReport", "run_perturbations"]


@dataclass(frozen=True)
class _Candidate:
    """One Yes item of one trajectory whose cited evidence will be perturbed."""

    row: JudgmentRow
    """Its stored judgment row (raw verdict, citations, checklist sha, model, prompt version)."""
    key: str
    """Stable id of this perturbation under the run's setting."""


@dataclass
class SensitivityReport:
    """What one `run_perturbations` call did, and the resulting shares over every stored row."""

    judge: str
    seed: int
    scope: str
    label: str | None = None
    """The labelled judge run whose Yes items were perturbed (None: the judge has no run yet)."""
    model: str | None = None
    prompt_version: str = ""
    run_id: str | None = None
    candidates: int = 0
    done: Counter = field(default_factory=Counter)
    """status (`judged`, `not_perturbed`) → rows stored by this call."""
    verdicts: Counter = field(default_factory=Counter)
    """Perturbed verdicts stored by this call (`No`, `Abstain:<reason>`, `Yes`)."""
    skipped: Counter = field(default_factory=Counter)
    """why → Yes items not perturbed now (already done, judged with another model, stale, …)."""
    errors: dict[str, str] = field(default_factory=dict)
    """perturbation key → endpoint failure (nothing stored; a rerun tries again)."""
    totals: RunTotals = field(default_factory=RunTotals)
    wall_s: float = 0.0
    table: pd.DataFrame = field(default_factory=pd.DataFrame)
    """`sensitivity_table` over every stored row of the project, per labelled run and setting."""

    @property
    def ok(self) -> bool:
        return not self.errors

    def counts(self) -> dict[str, int]:
        """What the run ledger records this run counted."""
        return {**self.done, "errors": len(self.errors), "skipped": sum(self.skipped.values())}

    def lines(self) -> list[str]:
        """Human-readable summary for the CLI."""
        out = [f"error {key}: {why}" for key, why in sorted(self.errors.items())]
        out += [f"skipped {n}: {why}" for why, n in sorted(self.skipped.items())]
        if self.verdicts:
            out.append("perturbed verdicts: " + ", ".join(f"{k} {v}" for k, v in sorted(self.verdicts.items())))
        t = self.totals
        cost = "" if t.calls == 0 else (f", {t.calls} calls ({t.http_calls} HTTP, {t.cache_hits} cached), cost "
                                        + ("unknown" if t.cost_or_none is None else f"${t.cost_or_none:.4f}"))
        stored = ", ".join(f"{k} {v}" for k, v in sorted(self.done.items())) or "none"
        run = f"run {self.label}, " if self.label else ""
        out.append(f"perturb {self.judge} ({run}seed {self.seed}, scope {self.scope}): {self.candidates} Yes items with "
                   f"citations; stored {sum(self.done.values())} ({stored}), errors {len(self.errors)}{cost}, "
                   f"wall {self.wall_s:.1f}s" + (f", run {self.run_id}" if self.run_id else ""))
        for r in self.table.itertuples(index=False):
            model = f" model {r.model}" if isinstance(r.model, str) else ""
            out.append(f"{r.judge} run {r.label}{model} (seed {r.seed}, scope {r.scope}): {r.n} perturbed Yes items over {r.tasks} "
                       f"tasks → No {r.to_no} ({_pct(r.share_no)} [{_pct(r.share_no_low)}, {_pct(r.share_no_high)}]), "
                       f"No or Abstain {r.to_no_or_abstain} ({_pct(r.share_no_or_abstain)} "
                       f"[{_pct(r.share_no_or_abstain_low)}, {_pct(r.share_no_or_abstain_high)}]), still Yes "
                       f"{r.still_yes}; cited span still in the log {r.span_remaining}"
                       + (f"; not perturbable {r.not_perturbed}" if r.not_perturbed else ""))
        return out


def _pct(value: float) -> str:
    return "—" if value is None or not np.isfinite(value) else f"{value:.1%}"


def _key(row: JudgmentRow, *, seed: int, scope: str, model: str | None, prompt_version: str) -> str:
    parts = [row.trajectory_id, row.judge, row.item_id, seed, scope, model, prompt_version]
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:24]


def _plan(
    store: Store, judge: str, *, label: str, seed: int, scope: str, model: str | None, prompt_version: str,
    limit: int | None, force: bool, report: SensitivityReport,
) -> list[_Candidate]:
    """Yes items of run `label` with citations not yet perturbed under this setting, in a seeded order
    (so `limit` samples across tasks, and a rerun with a larger limit extends the same sample)."""
    chosen = {judge: label}
    stored = {r.id: r for r in store.perturbations.list(judge=judge, labels=chosen)}
    units = store.judging.units(judge, labels=chosen)
    hashes = {t.id: t.content_hash for t in store.trials.trajectories()}
    todo: list[_Candidate] = []
    for row in store.judging.judgments(judge=judge, labels=chosen):
        if row.route == "endpoint" or row.verdict_raw != "Yes" or not row.citations:
            continue
        report.candidates += 1
        if row.model != model or row.prompt_version != prompt_version:
            report.skipped[f"judged with model {row.model} / prompt {row.prompt_version}, not "
                           f"{model} / {prompt_version}"] += 1
            continue
        unit = units.get((row.trajectory_id, judge))
        if unit is None or hashes.get(row.trajectory_id) != unit.content_hash:
            report.skipped["log changed since it was judged (judge it again first)"] += 1
            continue
        key = _key(row, seed=seed, scope=scope, model=model, prompt_version=prompt_version)
        done = stored.get(key)
        if not force and done is not None and done.original_citations == row.citations:
            report.skipped["already perturbed with this setting"] += 1
            continue
        todo.append(_Candidate(row, key))
    todo.sort(key=lambda c: hashlib.sha256(f"{seed}|{c.key}".encode()).hexdigest())
    if limit is not None and len(todo) > limit:
        report.skipped["beyond --limit"] += len(todo) - limit
        todo = todo[:limit]
    return todo


def _row(c: _Candidate, *, run_id: str | None, seed: int, scope: str, rules: Rules, **fields: Any) -> PerturbationRow:
    r = c.row
    return PerturbationRow(**{
        "id": c.key, "label": r.label, "run_id": run_id, "trajectory_id": r.trajectory_id, "task": r.task,
        "judge": r.judge, "item_id": r.item_id, "route": r.route, "checklist_sha": r.checklist_sha, "model": r.model,
        "prompt_version": r.prompt_version, "rules_version": rules.version, "seed": seed, "scope": scope,
        "original_verdict": r.verdict_raw, "original_citations": r.citations, "created_at": utcnow(),
        "kind": None, "recipe": [], "verdict": None, "reason": None, "citations": [], "rationale": None,
        "replies": [], **fields,
    })


def run_perturbations(
    store: Store,
    *,
    judge: str,
    label: str | None = None,
    model: str | None = None,
    seed: int = 0,
    scope: Scope = "cited",
    limit: int | None = None,
    per_item: bool = False,
    concurrency: int | None = None,
    force: bool = False,
    progress: Progress = True,
    llm: LLM | None = None,
    rules: Rules | None = None,
    n_boot: int = 2_000,
) -> SensitivityReport:
    """Perturb and re-judge every Yes item of `judge`'s run `label` (default: the judge's default run,
    as every analysis reads) not yet done under (seed, scope, model, prompt).

    Results are stored under the run's label, so two runs of one judge with the same model and prompt
    keep their own. Each result is stored the moment it is known (`store.perturbations.save`), so an interrupted
    run resumes where it stopped; endpoint failures are reported, not stored. Raises ValueError
    for a judge without item verdicts, and LLMNotConfigured before any work when an LLM judge has
    no model or endpoint, and ValueError for a label that is not a run of `judge`. The report's `table`
    covers every stored row, per labelled run and setting.
    """
    spec = get_judge(judge)
    if not spec.has_items:
        raise ValueError(f"evidence sensitivity needs item verdicts: judge must be one of {', '.join(ITEM_JUDGES)}")
    if scope not in SCOPES:
        raise ValueError(f"scope must be one of {', '.join(SCOPES)}, got {scope!r}")
    rules = rules or load_rules()
    llm = (llm or LLM.from_env(model, store=store, concurrency=concurrency)) if spec.calls_llm else None
    model_name = llm.model if llm is not None else None
    prompt_version = spec.version(per_item=per_item)
    runs = {r.label for r in store.judging.labels() if r.judge == judge}
    if label is not None and label not in runs:
        raise ValueError(f"no {judge} run labelled {label!r} (its runs: {', '.join(sorted(runs)) or 'none'})")
    label = label or store.judging.default_labels().get(judge)
    report = SensitivityReport(judge=judge, seed=seed, scope=scope, label=label, model=model_name,
                               prompt_version=prompt_version)
    todo = [] if label is None else _plan(store, judge, label=label, seed=seed, scope=scope, model=model_name,
                                          prompt_version=prompt_version, limit=limit, force=force, report=report)
    # Per-item prompts (and probes) judge one item alone: re-judge only the perturbed item, which is
    # exactly the original request for it. An all-items prompt is re-sent whole, as it was judged.
    narrow = per_item or not spec.calls_llm

    async def one(c: _Candidate, run: StageRun[None]) -> None:
        r, run_id = c.row, run.run_id
        unit = unit_for(store, judge, r.trajectory_id, r.checklist_sha, rules)
        events = store.trials.events(r.trajectory_id)
        try:
            if isinstance(unit, str):
                raise PerturbationError(unit)
            citations = [Citation(**x) for x in r.citations]
            changed, recipes, still = perturb_events(events, citations, seed=seed, scope=scope)
        except PerturbationError as exc:
            store.perturbations.save(_row(c, run_id=run_id, seed=seed, scope=scope, rules=rules,
                                         status="not_perturbed", reason=str(exc)))
            report.done["not_perturbed"] += 1
            return
        if narrow:
            assert unit.checklist is not None
            items = [i for i in unit.checklist.items if i.id == r.item_id]
            unit = replace(unit, checklist=unit.checklist.model_copy(update={"items": items}))
        result = await judge_unit(unit, judge, store=store, rules=rules, llm=llm,
                                  per_item=per_item, view=build_evidence_view(changed))
        if result.status == "error":
            report.errors[c.key] = f"{r.trajectory_id} {r.item_id}: {result.reason}"
            return
        item = next(i for i in result.items if i.item_id == r.item_id)
        store.perturbations.save(_row(
            c, run_id=run_id, seed=seed, scope=scope, rules=rules, status="judged", kind=recipe_kind(recipes),
            recipe={"events": recipes, "still_in": still}, verdict=item.verdict_raw, reason=item.reason,
            citations=[x.model_dump() for x in item.citations], rationale=item.rationale,
            replies=[x.model_dump() for x in result.replies]))
        report.done["judged"] += 1
        report.verdicts[item.verdict_raw if item.verdict_raw != "Abstain" else f"Abstain:{item.reason}"] += 1

    if todo:
        params = {"judge": judge, "label": label, "seed": seed, "scope": scope, "limit": limit, "per_item": per_item,
                  "force": force, "items": len(todo)}
        if llm is not None:
            params["concurrency"] = llm.config.concurrency
        run = run_stage(store, RunKind.perturb(judge), todo, one, llm=llm, prompt_version=prompt_version,
                        rules_version=rules.version, params=params, counts=lambda _: report.counts(),
                        progress=progress, unit="item")
        report.run_id, report.totals, report.wall_s = run.run_id, run.totals, run.wall_s
    frame = with_judge_order(perturbation_frame(store, all_labels=True), judge_order())
    report.table = sensitivity_table(frame, n_boot=n_boot, seed=seed) if len(frame) else pd.DataFrame()
    return report
