"""`export --what judgments|scores`: rows in the shapes of docs/design.md#export-rows, plus provenance columns.

Judgment rows also carry the item's text and verifier refs and the trajectory's outcome, so an
export is self-contained for auditors and for the analysis `items` frame.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

from ..checklist import Checklist, fixed_checklist, load_rules
from ..models import Trajectory
from ..store import Store
from .registry import checklist_kind

__all__ = ["export_judgments", "export_scores"]


def _item_index(store: Store) -> dict[str, dict[str, dict]]:
    """checklist sha → item id → {text, verifier_refs}, for stored checklists and the fixed one."""
    index: dict[str, dict[str, dict]] = {}
    for row in store.checklists.list(status=None):
        if row.checklist:
            items = Checklist.model_validate(row.checklist).items
            index[row.sha] = {i.id: {"text": i.text, "verifier_refs": list(i.verifier_refs)} for i in items}
    return index


def export_judgments(
    store: Store, *, labels: Mapping[str, str] | None = None, all_labels: bool = False,
    trajectories: Sequence[Trajectory] | None = None,
) -> Iterator[dict]:
    """One row per (trajectory, judge, item) of each judge's chosen run (`store.judging.judgments`; every run
    with `all_labels`): raw and postprocessed verdicts, citations, reasons, the run's label. `trajectories`: the
    project's, when the caller has read them already (reading them is a large share of the time)."""
    index = _item_index(store)
    fixed = {q.id: {"text": q.text, "verifier_refs": []} for q in fixed_checklist(load_rules(), "-").items}
    outcomes = {t.id: (t.outcome, t.condition) for t in trajectories or store.trials.trajectories()}
    for row in store.judging.judgments(labels=labels, all_labels=all_labels):
        items = index.get(row.checklist_sha or "") or (fixed if checklist_kind(row.judge) == "fixed" else {})
        item = items.get(row.item_id, {})
        outcome, condition = outcomes.get(row.trajectory_id, (None, None))
        yield {
            "trajectory_id": row.trajectory_id,
            "task": row.task,
            "judge": row.judge,
            "item_id": row.item_id,
            "route": row.route,
            "verdict_raw": row.verdict_raw,
            "verdict": row.verdict,
            "citations": row.citations or [],
            "reason": row.reason,
            "reason_raw": row.reason_raw,
            "rationale": row.rationale,
            "text": item.get("text"),
            "verifier_refs": item.get("verifier_refs", []),
            "outcome": outcome,
            "condition": condition,
            "checklist_sha": row.checklist_sha,
            "model": row.model,
            "prompt_version": row.prompt_version,
            "rules_version": row.rules_version,
            "run_id": row.run_id,
            "created_at": row.created_at,
            "scored_at": row.scored_at,
            "label": row.label,
        }


def export_scores(
    store: Store, *, labels: Mapping[str, str] | None = None, all_labels: bool = False,
    trajectories: Sequence[Trajectory] | None = None,
) -> Iterator[dict]:
    """One row per (trajectory, judge) of each judge's chosen run (per label with `all_labels`). `model`
    is the agent's model (the matched-pair key); the judge's own model is `judge_model`. `trajectories` as for
    `export_judgments`."""
    by_id = {t.id: t for t in trajectories or store.trials.trajectories()}
    for row in store.judging.scores(labels=labels, all_labels=all_labels):
        traj = by_id.get(row.trajectory_id)
        yield {
            "trajectory_id": row.trajectory_id,
            "task": row.task,
            "judge": row.judge,
            "outcome": row.outcome,
            "condition": row.condition,
            "partial_credit": row.partial_credit,
            "evidence_coverage": row.evidence_coverage,
            "perfect": row.perfect,
            "perfect_with_endpoint": row.perfect_with_endpoint,
            "n_items": row.n_items,
            "n_yes": row.n_yes,
            "n_no": row.n_no,
            "n_abstain": row.n_abstain,
            "agent": traj.agent if traj else None,
            "model": traj.model if traj else None,
            "trial_index": traj.trial_index if traj else None,
            "reward": traj.reward if traj else None,
            "judge_model": row.model,
            "checklist_sha": row.checklist_sha,
            "prompt_version": row.prompt_version,
            "rules_version": row.rules_version,
            "run_id": row.run_id,
            "scored_at": row.scored_at,
            "label": row.label,
        }
