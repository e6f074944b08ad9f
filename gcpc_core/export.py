"""Export rows of a project DB in the shapes docs/design.md#export-rows fixes, one generator per `--what`.

Judgments, scores and item audits belong to labelled judge runs: by default each judge's default run is
exported, as every analysis reads it; `labels` chooses other runs and `all_labels` exports every run, the
`label` column telling them apart (`export_rows`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

from .checklist.registry import export_checklists
from .judge.export import export_judgments, export_scores
from .models import UNRECORDED_SELECTION
from .store import Store

__all__ = ["EXPORTERS", "PER_RUN", "export_annotations", "export_audits", "export_rows", "export_trials"]


def export_trials(store: Store) -> Iterator[dict]:
    """One row per trajectory: identity, pair key, official outcome and per-test verifier results."""
    for t in store.trials.trajectories():
        yield {
            "trajectory_id": t.id,
            "task": t.task,
            "agent": t.agent,
            "model": t.model,
            "condition": t.condition,
            "condition_basis": t.condition_basis,
            "trial_index": t.trial_index,
            "outcome": t.outcome,
            "reward": t.reward,
            "reward_source": t.reward_source,
            "ctrf": {c.name: c.status for c in t.ctrf},
            "exception": (t.exception or {}).get("exception_type"),
            "log_format": t.log_format,
            "log_bytes": t.log_bytes,
            "source_path": t.source_path,
            "is_demo": t.is_demo,
        }


def export_annotations(
    store: Store, *, labels: Mapping[str, str] | None = None, all_labels: bool = False
) -> Iterator[dict]:
    """Every human annotation version (item audits, ratings, preferences), oldest first; `is_current`
    marks the live version of each (kind, study, target, rater). Item audits are those of each judge's
    chosen run (`labels`; every run with `all_labels`), like the verdicts they audit; `label` names it.
    `study export` adds the design."""
    current = {r.id for r in store.annotations.list(labels=labels, all_labels=all_labels)}
    for row in store.annotations.list(current=False, labels=labels, all_labels=all_labels):
        yield {**row.model_dump(), "is_current": row.id in current}


def export_audits(
    store: Store, *, labels: Mapping[str, str] | None = None, all_labels: bool = False
) -> Iterator[dict]:
    """The current item audits (the latest answer of each auditor on each item verdict; `annotations` has
    every version), one flat row each: which verdict of which run was audited, whether the auditor agreed,
    the verdict they hold instead, and their note. Of each judge's chosen run, like `export_annotations`."""
    for row in store.annotations.list(kind="item_audit", labels=labels, all_labels=all_labels):
        yield {
            "trajectory_id": row.trajectory_id,
            "task": row.task,
            "judge": row.judge,
            "label": row.label,
            "item_id": row.item_id,
            "rater": row.rater,
            "agree": bool(row.value.get("agree")),
            "corrected_verdict": row.value.get("verdict"),
            "selection": row.value.get("selection") or UNRECORDED_SELECTION,
            "note": row.note,
            "created_at": row.created_at,
            "source": row.source,
            "is_simulated": row.is_simulated,
        }


EXPORTERS: dict[str, Callable[[Store], Iterator[dict]]] = {
    "trials": export_trials,
    "checklists": export_checklists,
    "judgments": export_judgments,
    "scores": export_scores,
    "annotations": export_annotations,
    "audits": export_audits,
}
"""`--what` name → row generator; `export --what` offers exactly these."""

PER_RUN: frozenset[str] = frozenset({"judgments", "scores", "annotations", "audits"})
"""The exports whose rows belong to labelled judge runs (they take `labels` and `all_labels`)."""


def export_rows(
    store: Store, what: str, *, labels: Mapping[str, str] | None = None, all_labels: bool = False
) -> Iterator[dict]:
    """The rows of `export --what`: each judge's default run, the runs `labels` chooses, or with
    `all_labels` every run. Raises ValueError for an unknown `what`, or for a choice of runs on an
    export that has none (trials, checklists)."""
    if what not in EXPORTERS:
        raise ValueError(f"unknown export {what!r} (one of {', '.join(EXPORTERS)})")
    if what not in PER_RUN:
        if labels or all_labels:
            raise ValueError(f"{what} rows belong to no judge run: a label or every run can be chosen only for "
                             f"{', '.join(sorted(PER_RUN))}")
        return EXPORTERS[what](store)
    return EXPORTERS[what](store, labels=labels, all_labels=all_labels)  # type: ignore[call-arg]
