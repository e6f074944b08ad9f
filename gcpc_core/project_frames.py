"""A project's analysis frames (see `analysis.frames`), read from its DB: what the report CLI and the app read.

Scores and item verdicts come through the exporters (`export --what scores|judgments`), so the
analysis sees exactly the rows a user can export; CTRF results come from the trajectories; human
progress ratings and preferences from `annotations.frames` (current answers only, simulated ones
flagged); evidence-sensitivity results from `analysis.sensitivity.perturbation_frame`. A frame with no
rows is returned empty with its columns: data not yet available. Unscored trajectories (no
recorded reward) have no official outcome, so their rows are left out of `scores` and `items`;
`scores.attrs["unscored_trials"]` says how many trials of the project that leaves out, and
`scores.attrs["run_names"]` maps judge → label → the run's readable name (`run_names.run_name`).
Every judge frame carries the registered judges' `JudgeOrder` (`analysis.frames.with_judge_order`).

It stands above the judges, the analysis and the studies, which it joins: the analysis imports none
of them back.
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from annotations.frames import preferences_frame, ratings_frame

from .analysis.audits import audits_frame
from .analysis.compare import RunComparison, compare_runs
from .analysis.frames import with_judge_order
from .analysis.run_names import run_names
from .analysis.sensitivity import perturbation_frame
from .judge.export import export_judgments, export_scores
from .judge.registry import judge_order
from .models import SCORED_OUTCOMES
from .store import Store

__all__ = ["CTRF_COLUMNS", "ITEM_COLUMNS", "JUDGED_TABLES", "SCORE_COLUMNS", "compare_project", "frames_from_store",
           "judged_frames", "run_frames"]

SCORE_COLUMNS = ("trajectory_id", "task", "judge", "label", "outcome", "condition", "agent", "model", "trial_index",
                 "partial_credit", "evidence_coverage", "perfect", "perfect_with_endpoint", "n_items", "n_yes",
                 "n_no", "n_abstain", "reward")
ITEM_COLUMNS = ("trajectory_id", "task", "judge", "label", "item_id", "route", "verdict_raw", "verdict", "reason",
                "verifier_refs", "outcome", "condition", "checklist_sha")
CTRF_COLUMNS = ("trajectory_id", "test", "status")


def _frame(rows: list[dict], columns: tuple[str, ...]) -> pd.DataFrame:
    return pd.DataFrame([{c: r.get(c) for c in columns} for r in rows], columns=list(columns))


JUDGED_TABLES = ("judgments", "judge_units", "judge_labels", "scores", "trajectories", "checklists")
"""The store tables `judged_frames` reads (`store.project.data_version` of these dates them): an audit or a rating
changes none of them, so a cache of them outlives the human answers arriving."""


def judged_frames(
    store: Store, *, labels: Mapping[str, str] | None = None, all_labels: bool = False,
) -> dict[str, pd.DataFrame]:
    """`scores`, `items`, `ctrf` frames of a project: what the judges and the verifier gave, the large part of the
    frames (seconds at paper scale), of the runs `run_frames` describes."""
    order = judge_order()
    trajectories = store.trials.trajectories()  # read once for the three frames that need them
    scores = _frame(list(export_scores(store, labels=labels, all_labels=all_labels, trajectories=trajectories)),
                    SCORE_COLUMNS)
    for column in ("partial_credit", "evidence_coverage", "reward"):
        scores[column] = pd.to_numeric(scores[column], errors="coerce").astype(float)
    items = _frame(list(export_judgments(store, labels=labels, all_labels=all_labels, trajectories=trajectories)),
                   ITEM_COLUMNS)
    scores = with_judge_order(scores[scores["outcome"].isin(SCORED_OUTCOMES)].reset_index(drop=True), order)
    items = with_judge_order(items[items["outcome"].isin(SCORED_OUTCOMES)].reset_index(drop=True), order)
    scores.attrs["unscored_trials"] = store.project.counts()["unscored"]
    scores.attrs["run_names"] = run_names(store)
    ctrf = pd.DataFrame([(t.id, c.name, c.status) for t in trajectories for c in t.ctrf], columns=list(CTRF_COLUMNS))
    return {"scores": scores, "items": items, "ctrf": ctrf}


def run_frames(
    store: Store, *, include_simulated: bool = True, labels: Mapping[str, str] | None = None, all_labels: bool = False,
    judged: Mapping[str, pd.DataFrame] | None = None,
) -> dict[str, pd.DataFrame]:
    """`scores`, `items`, `ctrf`, `perturbations`, `audits` frames of a project: the machine-made ones.

    Scores, items, audits and perturbations are of one labelled run per judge: its default label
    (`JudgingRepository.default_labels`) unless `labels` chooses another; `all_labels` loads every run (for
    `compare`; the other analyses expect one run per judge). `include_simulated=False` drops simulated audits.
    `judged`: `judged_frames` of the same `labels` and `all_labels`, when the caller holds them (the app caches them
    apart from the human answers).
    """
    judged = judged if judged is not None else judged_frames(store, labels=labels, all_labels=all_labels)
    audits = audits_frame(store, labels=labels, all_labels=all_labels)
    if not include_simulated:
        audits = audits[~audits["is_simulated"]].reset_index(drop=True)
    perturbations = perturbation_frame(store, labels=labels, all_labels=all_labels)
    order = judge_order()
    return {"scores": judged["scores"], "items": judged["items"], "ctrf": judged["ctrf"],
            "perturbations": with_judge_order(perturbations, order), "audits": with_judge_order(audits, order)}


def frames_from_store(
    store: Store, *, include_simulated: bool = True, labels: Mapping[str, str] | None = None, all_labels: bool = False,
    judged: Mapping[str, pd.DataFrame] | None = None,
) -> dict[str, pd.DataFrame]:
    """`scores`, `items`, `ctrf`, `ratings`, `preferences`, `perturbations`, `audits` frames of a project:
    `run_frames` (same `labels`, `all_labels` and `judged`) with the current human answers. `include_simulated=False`
    drops human answers from simulated raters (the demo study) and simulated audits.
    """
    frames = run_frames(store, include_simulated=include_simulated, labels=labels, all_labels=all_labels, judged=judged)
    ratings, preferences = ratings_frame(store), preferences_frame(store)
    if not include_simulated:
        ratings = ratings[~ratings["simulated"]].reset_index(drop=True)
        preferences = preferences[~preferences["simulated"]].reset_index(drop=True)
    return {"scores": frames["scores"], "items": frames["items"], "ctrf": frames["ctrf"], "ratings": ratings,
            "preferences": preferences, "perturbations": frames["perturbations"], "audits": frames["audits"]}


def compare_project(
    store: Store, a: str, b: str, *, n_boot: int = 10_000, seed: int = 0, ci: float = 0.95
) -> RunComparison:
    """Compare two labelled runs of a project, named as a user types them (`LABEL` or `KIND=LABEL`).

    Loads every run's scores and item verdicts through the exporters (`run_frames`), so the comparison
    sees what `export` writes. Raises ValueError for an unknown or ambiguous label.
    """
    run_a, run_b = (next(iter(store.judging.resolve_labels([name]).items())) for name in (a, b))
    frames = run_frames(store, all_labels=True)
    return compare_runs(frames["scores"], frames["items"], run_a, run_b, n_boot=n_boot, seed=seed, ci=ci,
                        perturbations=frames["perturbations"])
