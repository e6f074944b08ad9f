"""Load the machine-made analysis frames (see `frames`) from a project DB: what the report CLI and the app read.

Scores and item verdicts come through the exporters (`export --what scores|judgments`), so the
analysis sees exactly the rows a user can export; CTRF results come from the trajectories;
evidence-sensitivity results from `sensitivity.perturbation_frame`. Human progress ratings and
preferences are not loaded here: the study package builds on this one and adds them
(`annotations.frames.frames_from_store`). A frame with no rows is returned empty with its columns: data
not yet available. Unscored trajectories (no recorded reward) have no official outcome, so their rows are
left out of `scores` and `items`; `scores.attrs["unscored_trials"]` says how many trials of the project
that leaves out, and `scores.attrs["run_names"]` maps (judge, label) to the run's readable name
(`run_names.run_name`).
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from ..judge.export import export_judgments, export_scores
from ..models import SCORED_OUTCOMES
from ..store import Store
from .audits import audits_frame
from .run_names import run_names
from .sensitivity import perturbation_frame

__all__ = ["CTRF_COLUMNS", "ITEM_COLUMNS", "SCORE_COLUMNS", "run_frames"]

SCORE_COLUMNS = ("trajectory_id", "task", "judge", "label", "outcome", "condition", "agent", "model", "trial_index",
                 "partial_credit", "evidence_coverage", "perfect", "perfect_with_endpoint", "n_items", "n_yes",
                 "n_no", "n_abstain", "reward")
ITEM_COLUMNS = ("trajectory_id", "task", "judge", "label", "item_id", "route", "verdict_raw", "verdict", "reason",
                "verifier_refs", "outcome", "condition", "checklist_sha")
CTRF_COLUMNS = ("trajectory_id", "test", "status")


def _frame(rows: list[dict], columns: tuple[str, ...]) -> pd.DataFrame:
    return pd.DataFrame([{c: r.get(c) for c in columns} for r in rows], columns=list(columns))


def run_frames(
    store: Store, *, include_simulated: bool = True, labels: Mapping[str, str] | None = None, all_labels: bool = False,
) -> dict[str, pd.DataFrame]:
    """`scores`, `items`, `ctrf`, `perturbations`, `audits` frames of a project.

    Scores, items, audits and perturbations are of one labelled run per judge: its default label
    (`JudgingRepository.default_labels`) unless `labels` chooses another; `all_labels` loads every run (for
    `compare`; the other analyses expect one run per judge). `include_simulated=False` drops simulated audits.
    """
    scores = _frame(list(export_scores(store, labels=labels, all_labels=all_labels)), SCORE_COLUMNS)
    for column in ("partial_credit", "evidence_coverage", "reward"):
        scores[column] = pd.to_numeric(scores[column], errors="coerce").astype(float)
    items = _frame(list(export_judgments(store, labels=labels, all_labels=all_labels)), ITEM_COLUMNS)
    scores = scores[scores["outcome"].isin(SCORED_OUTCOMES)].reset_index(drop=True)
    items = items[items["outcome"].isin(SCORED_OUTCOMES)].reset_index(drop=True)
    scores.attrs["unscored_trials"] = store.project.counts()["unscored"]
    scores.attrs["run_names"] = run_names(store)
    ctrf = pd.DataFrame([(t.id, c.name, c.status) for t in store.trials.trajectories() for c in t.ctrf],
                        columns=list(CTRF_COLUMNS))
    audits = audits_frame(store, labels=labels, all_labels=all_labels)
    if not include_simulated:
        audits = audits[~audits["is_simulated"]].reset_index(drop=True)
    return {"scores": scores, "items": items, "ctrf": ctrf,
            "perturbations": perturbation_frame(store, labels=labels, all_labels=all_labels), "audits": audits}
