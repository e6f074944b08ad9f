"""RQ2 — agreement with human judgments of progress.

Reads **scores** (judge scores, ``partial_credit`` by default), **ratings** (``trajectory_id`` or
``unit_id``, ``task, rater, rating``) and **preferences** (``pair_id, task, left_id, right_id,
rater, choice``); see `frames` for the contracts. Judges are compared on their common subset
(trajectories every listed judge scored), like the AUC.

* Pairwise agreement, MT-Bench convention: each human vote on a pair is compared with the judge's
  ordering of the two trajectories (higher score preferred; scores within `tie_tol` are a tie).
  *With ties* a tie is a third class; *without ties* votes where either side is a tie are
  dropped. A human–human row (every two raters on the same pair) gives the ceiling.
* Spearman ρ between a trajectory's mean human rating and each judge's score (`scipy.stats`),
  task-clustered bootstrap CI computed for all draws at once: draws of equal sample size are
  stacked and passed to `scipy.stats.spearmanrho(axis=-1)`.
* Krippendorff's α (`krippendorff.alpha`): ordinal over progress ratings, nominal over A/B/tie
  preferences; first among humans, then with each judge added as one more coder. A judge's
  0–1 score joins the rating scale as ``lo + floor(score·(hi − lo) + ½)``; its preference is its
  ordering of the pair.

Preferences are put in one canonical orientation per pair (sorted trajectory ids, choice flipped
when a rater saw them swapped), so raters who saw different left/right orders stay comparable.

Degenerate cases give NaN with a note: no unit with two or more coders, a single observed value
(α and ρ undefined), fewer than three units for ρ, a judge lacking a score for a pair's side
(vote dropped and counted), constant draws in the bootstrap (dropped from the percentiles).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import krippendorff
import numpy as np
import pandas as pd
from scipy import stats

from .bootstrap import cluster_counts, draw_clusters, draw_members, percentile_ci
from .frames import FrameContractError, common_subset, require_columns

__all__ = [
    "PREFERENCE_CODES",
    "alpha_table",
    "canonical_preferences",
    "human_rating_matrix",
    "judge_choice",
    "krippendorff_alpha",
    "mean_ratings",
    "pairwise_agreement",
    "preference_votes",
    "spearman_table",
]

PREFERENCE_CODES = {"A": 0, "B": 1, "tie": 2}
"""Nominal codes of preference choices for Krippendorff's α."""
HUMAN = "human-human"


def _ratings_frame(ratings: pd.DataFrame) -> pd.DataFrame:
    """Ratings with a ``trajectory_id`` column, integer ratings and the last row per (unit, rater)."""
    if "trajectory_id" not in ratings.columns and "unit_id" in ratings.columns:
        ratings = ratings.rename(columns={"unit_id": "trajectory_id"})
    require_columns(ratings, ("trajectory_id", "task", "rater", "rating"), "ratings")
    rating = pd.to_numeric(ratings["rating"], errors="coerce")
    if rating.isna().any() or (rating != np.floor(rating)).any():
        raise FrameContractError("ratings frame has non-integer or missing values in column 'rating'")
    out = ratings.assign(rating=rating.astype(int))[["trajectory_id", "task", "rater", "rating"]]
    return out.drop_duplicates(["trajectory_id", "rater"], keep="last").reset_index(drop=True)


def canonical_preferences(preferences: pd.DataFrame) -> pd.DataFrame:
    """One vote per (pair, rater) in canonical orientation: ``first_id < second_id``, choice relative to them."""
    require_columns(preferences, ("pair_id", "task", "left_id", "right_id", "rater", "choice"), "preferences")
    bad = set(preferences["choice"].unique()) - set(PREFERENCE_CODES)
    if bad:
        raise FrameContractError(f"preferences frame has choice values other than A/B/tie: {sorted(map(str, bad))}")
    p = preferences.drop_duplicates(["pair_id", "rater"], keep="last")
    swap = (p["left_id"] > p["right_id"]).to_numpy()
    choice = p["choice"].to_numpy()
    return pd.DataFrame({
        "pair_id": p["pair_id"].to_numpy(), "task": p["task"].to_numpy(),
        "first_id": np.where(swap, p["right_id"], p["left_id"]),
        "second_id": np.where(swap, p["left_id"], p["right_id"]),
        "rater": p["rater"].to_numpy(),
        "choice": np.where(swap & (choice == "A"), "B", np.where(swap & (choice == "B"), "A", choice)),
    })


def judge_choice(first: np.ndarray, second: np.ndarray, tie_tol: float = 0.0) -> np.ndarray:
    """A judge's preference from its two scores: "A" (first higher), "B", "tie" (within `tie_tol`), None if unscored."""
    first, second = np.asarray(first, dtype=float), np.asarray(second, dtype=float)
    out = np.where(first - second > tie_tol, "A", np.where(second - first > tie_tol, "B", "tie")).astype(object)
    out[np.isnan(first) | np.isnan(second)] = None
    return out


def preference_votes(
    preferences: pd.DataFrame,
    scores: pd.DataFrame,
    judges: Sequence[str] | None = None,
    *,
    score_col: str = "partial_credit",
    tie_tol: float = 0.0,
) -> pd.DataFrame:
    """Every human vote beside each judge's choice on the same pair (judge choice None when unscored)."""
    votes = canonical_preferences(preferences)
    wide, judges, _ = common_subset(scores, judges, score_col=score_col)
    lookup = wide.set_index("trajectory_id")
    out = []
    for judge in judges:
        s = lookup[judge]
        out.append(votes.assign(judge=judge, judge_choice=judge_choice(
            votes["first_id"].map(s).to_numpy(dtype=float), votes["second_id"].map(s).to_numpy(dtype=float), tie_tol)))
    cols = [*votes.columns, "judge", "judge_choice"]
    return pd.concat(out, ignore_index=True)[cols] if out else pd.DataFrame(columns=cols)


def _agreement_row(who: str, a: pd.Series, b: pd.Series, n_dropped: int) -> dict:
    no_tie = (a != "tie") & (b != "tie")
    n, n_nt = len(a), int(no_tie.sum())
    note = [f"{n_dropped} votes dropped: judge lacks a score for a side"] if n_dropped else []
    if n == 0:
        note.append("no comparable votes")
    elif n_nt == 0:
        note.append("every comparable vote involves a tie")
    return {
        "judge": who, "n_votes_with_ties": n, "agreement_with_ties": float((a == b).mean()) if n else float("nan"),
        "n_votes_without_ties": n_nt,
        "agreement_without_ties": float((a[no_tie] == b[no_tie]).mean()) if n_nt else float("nan"),
        "note": "; ".join(note),
    }


def pairwise_agreement(votes: pd.DataFrame) -> pd.DataFrame:
    """Agreement with and without ties per judge from `preference_votes`, plus the human–human row."""
    rows = []
    human = votes.drop_duplicates(["pair_id", "rater"])[["pair_id", "rater", "choice"]]
    both = human.merge(human, on="pair_id")
    both = both[both["rater_x"].astype(str) < both["rater_y"].astype(str)]
    row = _agreement_row(HUMAN, both["choice_x"], both["choice_y"], 0)
    if human["pair_id"].duplicated().sum() == 0:
        row["note"] = "no pair has two or more raters"
    rows.append(row)
    for judge, v in votes.groupby("judge", sort=False):
        scored = v["judge_choice"].notna()
        rows.append(_agreement_row(judge, v.loc[scored, "choice"], v.loc[scored, "judge_choice"], int((~scored).sum())))
    return pd.DataFrame(rows, columns=["judge", "n_votes_with_ties", "agreement_with_ties", "n_votes_without_ties",
                                       "agreement_without_ties", "note"])


def mean_ratings(ratings: pd.DataFrame) -> pd.DataFrame:
    """Per trajectory: task, mean human rating and number of raters."""
    r = _ratings_frame(ratings)
    return (r.groupby(["trajectory_id", "task"], sort=True)["rating"].agg(mean_rating="mean", n_raters="size")
            .reset_index())


def _spearman_draws(codes: np.ndarray, x: np.ndarray, ys: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """``(judges, n_boot)`` Spearman ρ per draw; draws of one size are stacked into one `spearmanrho` call."""
    out = np.full((ys.shape[0], counts.shape[0]), np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", stats.DegenerateDataWarning)  # constant draw → NaN, as documented
        warnings.simplefilter("ignore", RuntimeWarning)
        for rows, idx in draw_members(codes, counts):
            if idx.shape[1] >= 3:
                out[:, rows] = stats.spearmanrho(x[idx][None], ys[:, idx], axis=-1).statistic
    return out


def spearman_table(
    ratings: pd.DataFrame,
    scores: pd.DataFrame,
    judges: Sequence[str] | None = None,
    *,
    score_col: str = "partial_credit",
    n_boot: int = 10_000,
    seed: int = 0,
    ci: float = 0.95,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Spearman ρ of mean human rating vs each judge's score, with task-clustered percentile CIs.

    Returns ``(table, data)``: one row per judge, and the per-trajectory inputs (mean rating,
    number of raters, each judge's score) so every ρ can be recomputed.
    """
    means = mean_ratings(ratings)
    wide, judges, _ = common_subset(scores, judges, score_col=score_col)
    data = means.merge(wide.drop(columns=["task"]), on="trajectory_id").sort_values(["task", "trajectory_id"],
                                                                                      kind="stable")
    data = data.reset_index(drop=True)
    x = data["mean_rating"].to_numpy(dtype=float)
    ys = data[judges].to_numpy(dtype=float).T.reshape(len(judges), len(data))
    codes, tasks = pd.factorize(data["task"])
    counts = cluster_counts(draw_clusters(len(tasks), n_boot, seed), len(tasks))
    draws = _spearman_draws(codes, x, ys, counts)
    low, high, n_valid = percentile_ci(draws, ci)
    single = int((data["n_raters"] < 2).sum())
    rows = []
    for k, judge in enumerate(judges):
        note = []
        if len(data) < 3:
            note.append(f"{len(data)} rated trajectories scored by every judge: ρ needs at least 3")
        elif np.unique(x).size < 2:
            note.append("mean human rating is constant: ρ undefined")
        elif np.unique(ys[k]).size < 2:
            note.append("judge score is constant: ρ undefined")
        rho = float("nan") if note else float(stats.spearmanr(x, ys[k]).statistic)
        if not note and n_valid[k] < n_boot:
            note.append(f"{n_boot - int(n_valid[k])} of {n_boot} draws were constant and dropped")
        if single:
            note.append(f"{single} trajectories rated by a single rater")
        rows.append({"judge": judge, "n": len(data), "n_tasks": len(tasks), "rho": rho,
                     "ci_low": low[k] if not np.isnan(rho) else np.nan,
                     "ci_high": high[k] if not np.isnan(rho) else np.nan,
                     "n_draws": n_boot, "n_valid_draws": int(n_valid[k]), "note": "; ".join(note)})
    table = pd.DataFrame(rows, columns=["judge", "n", "n_tasks", "rho", "ci_low", "ci_high", "n_draws",
                                        "n_valid_draws", "note"])
    return table, data


def krippendorff_alpha(data: np.ndarray, level: str, domain: Sequence[float]) -> tuple[float, str]:
    """α of a ``coders × units`` matrix (NaN = missing), or NaN with the reason it is undefined."""
    data = np.asarray(data, dtype=float)
    pairable = np.isfinite(data).sum(axis=0) >= 2 if data.size else np.zeros(0, dtype=bool)
    if not pairable.any():
        return float("nan"), "no unit has two or more coders"
    values = np.unique(data[:, pairable][np.isfinite(data[:, pairable])])
    if values.size < 2:
        return float("nan"), f"every coder gave the same value ({values[0]:g}) on every shared unit: α undefined"
    return float(krippendorff.alpha(reliability_data=data, value_domain=list(domain), level_of_measurement=level)), ""


def human_rating_matrix(ratings: pd.DataFrame) -> pd.DataFrame:
    """Ratings as a ``rater × trajectory`` matrix (NaN where a rater did not rate a trajectory)."""
    r = _ratings_frame(ratings)
    return r.pivot(index="rater", columns="trajectory_id", values="rating").astype(float)


def _alpha_row(data: str, coders: str, level: str, matrix: np.ndarray, domain: Sequence[float]) -> dict:
    value, note = krippendorff_alpha(matrix, level, domain)
    pairable = int((np.isfinite(matrix).sum(axis=0) >= 2).sum()) if matrix.size else 0
    return {"data": data, "coders": coders, "level": level, "alpha": value, "n_units": pairable,
            "n_coders": matrix.shape[0], "note": note}


def alpha_table(
    ratings: pd.DataFrame | None,
    preferences: pd.DataFrame | None,
    scores: pd.DataFrame,
    judges: Sequence[str] | None = None,
    *,
    score_col: str = "partial_credit",
    scale: tuple[int, int] | None = None,
    tie_tol: float = 0.0,
) -> pd.DataFrame:
    """Krippendorff's α among humans and with each judge added as a coder, for ratings and preferences.

    `scale` is the rating scale ``(lo, hi)``; by default the observed range of human ratings.
    Either human frame may be None or empty; its rows are then omitted.
    """
    wide, judges, _ = common_subset(scores, judges, score_col=score_col)
    lookup = wide.set_index("trajectory_id")
    rows = []
    if ratings is not None and len(ratings):
        matrix = human_rating_matrix(ratings)
        lo, hi = scale or (int(np.nanmin(matrix.to_numpy())), int(np.nanmax(matrix.to_numpy())))
        domain = np.arange(lo, hi + 1)
        rows.append(_alpha_row("ratings", "humans", "ordinal", matrix.to_numpy(), domain))
        for judge in judges:
            s = matrix.columns.to_series().map(lookup[judge]).to_numpy(dtype=float)
            as_rating = lo + np.floor(np.clip(s, 0.0, 1.0) * (hi - lo) + 0.5)
            rows.append(_alpha_row("ratings", f"humans + {judge}", "ordinal",
                                   np.vstack([matrix.to_numpy(), as_rating]), domain))
    if preferences is not None and len(preferences):
        votes = canonical_preferences(preferences)
        codes = votes.assign(code=votes["choice"].map(PREFERENCE_CODES))
        matrix = codes.pivot(index="rater", columns="pair_id", values="code").astype(float)
        pairs = votes.drop_duplicates("pair_id").set_index("pair_id").reindex(matrix.columns)
        domain = sorted(PREFERENCE_CODES.values())
        rows.append(_alpha_row("preferences", "humans", "nominal", matrix.to_numpy(), domain))
        for judge in judges:
            choice = judge_choice(pairs["first_id"].map(lookup[judge]).to_numpy(dtype=float),
                                  pairs["second_id"].map(lookup[judge]).to_numpy(dtype=float), tie_tol)
            coded = np.array([PREFERENCE_CODES.get(c, np.nan) if c is not None else np.nan for c in choice], dtype=float)
            rows.append(_alpha_row("preferences", f"humans + {judge}", "nominal",
                                   np.vstack([matrix.to_numpy(), coded]), domain))
    return pd.DataFrame(rows, columns=["data", "coders", "level", "alpha", "n_units", "n_coders", "note"])
