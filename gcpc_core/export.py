"""Export rows of a project DB in the shapes DESIGN.md fixes, one generator per `--what`."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from .checklist.registry import export_checklists
from .judge.export import export_judgments, export_scores
from .store import Store

__all__ = ["EXPORTERS", "export_trials"]


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


def export_annotations(store: Store) -> Iterator[dict]:
    """Every human annotation version (item audits, ratings, preferences), oldest first; `is_current`
    marks the live version of each (kind, study, target, rater). `study export` adds the design."""
    current = {r["id"] for r in store.annotations.list()}
    for row in store.annotations.list(current=False):
        yield {**row, "is_current": row["id"] in current}


EXPORTERS: dict[str, Callable[[Store], Iterator[dict]]] = {
    "trials": export_trials,
    "checklists": export_checklists,
    "judgments": export_judgments,
    "scores": export_scores,
    "annotations": export_annotations,
}
"""`--what` name → row generator; `export --what` offers exactly these."""
