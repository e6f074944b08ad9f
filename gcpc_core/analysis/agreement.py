"""RQ2 — agreement with human judgments of progress.

Reads **scores** (judge scores, ``partial_credit`` by default), **ratings** (``trajectory_id`` or
``unit_id``, ``task, rater, rating``, optionally the declared scale ``scale_min, scale_max``) and
**preferences** (``pair_id, task, left_id, right_id, rater, choice``); see `frames` for the
contracts. Judges are compared on their common subset (trajectories every listed judge scored),
like the AUC.

A preference vote is read as *which trajectory* the rater chose (``chosen``: the left or right
trajectory id, or ``tie``), never as a side. Left and right are only how a pair was shown, and
raters may have seen it either way round, so nothing below depends on that orientation: swapping
the sides of any vote leaves every statistic unchanged.

* Pairwise agreement, MT-Bench convention: each human vote on a pair is compared with the judge's
  choice on the same two trajectories (the one with the higher score; scores within `tie_tol` are
  a tie). *With ties* a tie is a third class; *without ties* votes where either side is a tie are
  dropped. A human–human row (every two raters on the same pair) gives the ceiling.
* Spearman ρ between a trajectory's mean human rating and each judge's score (`scipy.stats`),
  task-clustered bootstrap CI computed for all draws at once: draws of equal sample size are
  stacked and passed to `scipy.stats.spearmanrho(axis=-1)`.
* Krippendorff's α (`krippendorff.alpha`), first among humans, then with each judge added as one
  more coder: ordinal over progress ratings on the study's declared scale ``lo…hi`` (a judge's
  0–1 score joins it as ``lo + floor(score·(hi − lo) + ½)``); nominal over preferences, each pair
  one unit and each vote coded in three classes, *first*, *second* or *tie*, where first and
  second are the pair's two trajectories in the order their ids sort (`preference_codes`) — an
  order fixed by the pair, not by how it was shown. Coding a vote as the chosen trajectory's id
  instead would give each pair values of its own that never compete with another pair's, so the
  disagreement expected by chance would be near 1 and raters voting at random would reach α ≈ 0.5;
  with three classes they get α ≈ 0. `alpha_table` is the only α implementation: the report, the
  Agreement page, `study status` and the Study admin page call it.

Degenerate cases give NaN with a note: no unit with two or more coders, a single observed value
(α and ρ undefined), fewer than three units for ρ, fewer than two tasks for a clustered interval
(fewer than `bootstrap.RELIABLE_CLUSTERS`: the interval is given, its note flags it unreliable),
a judge lacking a score for a pair's side (vote dropped and counted), constant draws in the
bootstrap (dropped from the percentiles). Rows that break the contract make the strict functions
raise `FrameContractError`; `usable_ratings` / `usable_preferences` instead set them aside with
the reason, so a report can go on without them.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import krippendorff
import numpy as np
import pandas as pd
from scipy import stats

from .bootstrap import (
    FEW_CLUSTERS_NOTE,
    MIN_CLUSTERS,
    cluster_counts,
    clustered_ci,
    draw_clusters,
    draw_members,
    few_clusters_note,
)
from .frames import FrameContractError, common_subset, require_columns

__all__ = [
    "CHOICES",
    "REJECTED_COLUMNS",
    "TIE",
    "alpha_table",
    "human_rating_matrix",
    "judge_chosen",
    "krippendorff_alpha",
    "mean_ratings",
    "pairwise_agreement",
    "preference_choices",
    "preference_codes",
    "preference_votes",
    "rating_scale",
    "spearman_table",
    "usable_preferences",
    "usable_ratings",
]

TIE = "tie"
CHOICES = ("A", "B", TIE)
"""Preference answers as recorded: A = the pair's left trajectory, B = its right one, or a tie."""
HUMAN = "human-human"
RATING_COLUMNS = ("trajectory_id", "task", "rater", "rating")
PREFERENCE_COLUMNS = ("pair_id", "task", "left_id", "right_id", "rater", "choice")
SCALE_COLUMNS = ("scale_min", "scale_max")
REJECTED_COLUMNS = ["frame", "row", "target", "rater", "value", "reason"]
"""Rows `usable_ratings` / `usable_preferences` set aside: frame name, row position, what was rated, why."""


def _with_trajectory_id(ratings: pd.DataFrame) -> pd.DataFrame:
    if "trajectory_id" not in ratings.columns and "unit_id" in ratings.columns:
        return ratings.rename(columns={"unit_id": "trajectory_id"})
    return ratings


def _declared_scales(ratings: pd.DataFrame) -> pd.DataFrame | None:
    """Per row ``(scale_min, scale_max)`` as numbers, or None when the frame declares no scale."""
    if not set(SCALE_COLUMNS) <= set(ratings.columns):
        return None
    scales = ratings[list(SCALE_COLUMNS)].apply(pd.to_numeric, errors="coerce")
    return None if scales.isna().all().all() else scales


def rating_scale(ratings: pd.DataFrame, scale: tuple[int, int] | None = None) -> tuple[tuple[int, int], str]:
    """The rating scale ``(lo, hi)`` and a note: `scale` if given, else the one the frame declares.

    A frame without a declared scale falls back to the observed range, and the note says so: a
    judge's score would then map onto whatever range the raters happened to use.
    """
    if scale is not None:
        return (int(scale[0]), int(scale[1])), ""
    declared = _declared_scales(ratings)
    if declared is not None:
        found = declared.dropna().drop_duplicates()
        if len(found) != 1:
            shown = ", ".join(f"{lo:g}–{hi:g}" for lo, hi in found.itertuples(index=False)) or "none"
            raise FrameContractError(f"ratings frame mixes rating scales ({shown}); analyse one scale at a time")
        lo, hi = found.iloc[0]
        return (int(lo), int(hi)), ""
    values = pd.to_numeric(ratings["rating"], errors="coerce").dropna()
    if values.empty:
        raise FrameContractError("ratings frame has no numeric rating and declares no scale")
    lo, hi = int(values.min()), int(values.max())
    return (lo, hi), f"no declared rating scale: the observed range {lo}–{hi} is used"


def _rating_problems(ratings: pd.DataFrame, scale: tuple[int, int] | None) -> pd.Series:
    """Per row: why its rating is unusable ("" when it is fine)."""
    value = pd.to_numeric(ratings["rating"], errors="coerce")
    declared = _declared_scales(ratings)
    if scale is not None:
        lo = pd.Series(float(scale[0]), index=ratings.index)
        hi = pd.Series(float(scale[1]), index=ratings.index)
    elif declared is not None:
        lo, hi = declared["scale_min"], declared["scale_max"]
    else:
        lo = hi = pd.Series(np.nan, index=ratings.index)
    reasons = []
    for raw, v, a, b in zip(ratings["rating"], value, lo, hi):
        if raw is None or raw is pd.NA or (isinstance(raw, float) and np.isnan(raw)):
            reasons.append("rating is missing")
        elif isinstance(raw, bool) or np.isnan(v) or v != np.floor(v):
            reasons.append(f"rating {_shown(raw)} is not a whole number")
        elif not (np.isnan(a) or a <= v <= b):
            reasons.append(f"rating {_shown(raw)} is outside the declared scale {a:g}–{b:g}")
        else:
            reasons.append("")
    return pd.Series(reasons, index=ratings.index, dtype=object)


def _shown(value: object) -> str:
    return repr(value.item() if isinstance(value, np.generic) else value)


def _rejected(frame: str, rows: pd.DataFrame, target: str, value: str, reasons: pd.Series) -> pd.DataFrame:
    bad = reasons != ""
    positions = np.flatnonzero(bad.to_numpy())
    return pd.DataFrame({"frame": frame, "row": positions, "target": rows.loc[bad, target].astype(str).to_numpy(),
                         "rater": rows.loc[bad, "rater"].astype(str).to_numpy(),
                         "value": rows.loc[bad, value].map(_shown).to_numpy(), "reason": reasons[bad].to_numpy()},
                        columns=REJECTED_COLUMNS)


def usable_ratings(
    ratings: pd.DataFrame, scale: tuple[int, int] | None = None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(usable, rejected)``: ratings split into rows the statistics can use and `REJECTED_COLUMNS` rows.

    A rating is unusable when it is missing, not a whole number, or off the scale (`scale`, else
    the row's declared ``scale_min…scale_max``). ``row`` is the 0-based position in `ratings`.
    """
    ratings = _with_trajectory_id(ratings)
    require_columns(ratings, RATING_COLUMNS, "ratings")
    reasons = _rating_problems(ratings, scale)
    usable = ratings[reasons == ""]
    usable = usable.assign(rating=pd.to_numeric(usable["rating"]).astype(int))
    return usable.reset_index(drop=True), _rejected("ratings", ratings, "trajectory_id", "rating", reasons)


def usable_preferences(preferences: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(usable, rejected)`` like `usable_ratings`: a choice other than A/B/tie, or a missing side, is unusable."""
    require_columns(preferences, PREFERENCE_COLUMNS, "preferences")
    choice_ok = preferences["choice"].isin(CHOICES)
    sides_ok = preferences["left_id"].notna() & preferences["right_id"].notna()
    reasons = pd.Series(np.where(~choice_ok, "choice must be A, B or tie",
                                 np.where(~sides_ok, "the pair lacks a left or right trajectory", "")),
                        index=preferences.index, dtype=object)
    usable = preferences[reasons == ""].reset_index(drop=True)
    return usable, _rejected("preferences", preferences, "pair_id", "choice", reasons)


def _ratings_frame(ratings: pd.DataFrame) -> pd.DataFrame:
    """Ratings with a ``trajectory_id`` column, integer ratings and the last row per (unit, rater)."""
    ratings = _with_trajectory_id(ratings)
    require_columns(ratings, RATING_COLUMNS, "ratings")
    rating = pd.to_numeric(ratings["rating"], errors="coerce")
    if rating.isna().any() or (rating != np.floor(rating)).any():
        raise FrameContractError("ratings frame has non-integer or missing values in column 'rating'")
    out = ratings.assign(rating=rating.astype(int))[list(RATING_COLUMNS)]
    return out.drop_duplicates(["trajectory_id", "rater"], keep="last").reset_index(drop=True)


def preference_choices(preferences: pd.DataFrame) -> pd.DataFrame:
    """One vote per (pair, rater), last row wins, with ``chosen``: the chosen trajectory id or ``tie``.

    Every row of a pair must name the same two trajectories (in either order); a pair id that
    names two different pairs would make every statistic over it meaningless.
    """
    require_columns(preferences, PREFERENCE_COLUMNS, "preferences")
    bad = set(preferences["choice"].unique()) - set(CHOICES)
    if bad:
        raise FrameContractError(f"preferences frame has choice values other than A/B/tie: {sorted(map(str, bad))}")
    p = preferences.drop_duplicates(["pair_id", "rater"], keep="last")
    sides = pd.Series([frozenset(s) for s in zip(p["left_id"], p["right_id"])], index=p.index)
    clash = sides.groupby(p["pair_id"]).nunique() > 1
    if clash.any():
        raise FrameContractError(f"preferences frame: pair {clash[clash].index[0]!r} names different trajectories "
                                 "in different rows")
    chosen = np.where(p["choice"] == "A", p["left_id"], np.where(p["choice"] == "B", p["right_id"], TIE))
    return pd.DataFrame({c: p[c].to_numpy() for c in PREFERENCE_COLUMNS}).assign(chosen=chosen)


def judge_chosen(
    left_id: np.ndarray, right_id: np.ndarray, left_score: np.ndarray, right_score: np.ndarray, tie_tol: float = 0.0
) -> np.ndarray:
    """A judge's choice on each pair: the id of the higher-scored trajectory, ``tie`` within `tie_tol`,
    None when a side is unscored."""
    a, b = np.asarray(left_score, dtype=float), np.asarray(right_score, dtype=float)
    out = np.where(a - b > tie_tol, left_id, np.where(b - a > tie_tol, right_id, TIE)).astype(object)
    out[np.isnan(a) | np.isnan(b)] = None
    return out


def _judge_choices(pairs: pd.DataFrame, lookup: pd.DataFrame, judge: str, tie_tol: float) -> np.ndarray:
    s = lookup[judge]
    return judge_chosen(pairs["left_id"].to_numpy(), pairs["right_id"].to_numpy(),
                        pairs["left_id"].map(s).to_numpy(dtype=float), pairs["right_id"].map(s).to_numpy(dtype=float),
                        tie_tol)


def preference_votes(
    preferences: pd.DataFrame,
    scores: pd.DataFrame,
    judges: Sequence[str] | None = None,
    *,
    score_col: str = "partial_credit",
    tie_tol: float = 0.0,
) -> pd.DataFrame:
    """Every human vote beside each judge's choice on the same pair (``judge_chosen`` None when unscored)."""
    votes = preference_choices(preferences)
    wide, judges, _ = common_subset(scores, judges, score_col=score_col)
    lookup = wide.set_index("trajectory_id")
    out = [votes.assign(judge=judge, judge_chosen=_judge_choices(votes, lookup, judge, tie_tol)) for judge in judges]
    cols = [*votes.columns, "judge", "judge_chosen"]
    return pd.concat(out, ignore_index=True)[cols] if out else pd.DataFrame(columns=cols)


def _agreement_row(who: str, a: pd.Series, b: pd.Series, n_dropped: int) -> dict:
    no_tie = (a != TIE) & (b != TIE)
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
    human = votes.drop_duplicates(["pair_id", "rater"])[["pair_id", "rater", "chosen"]]
    both = human.merge(human, on="pair_id")
    both = both[both["rater_x"].astype(str) < both["rater_y"].astype(str)]
    row = _agreement_row(HUMAN, both["chosen_x"], both["chosen_y"], 0)
    if human["pair_id"].duplicated().sum() == 0:
        row["note"] = "no pair has two or more raters"
    rows.append(row)
    for judge, v in votes.groupby("judge", sort=False):
        scored = v["judge_chosen"].notna()
        rows.append(_agreement_row(judge, v.loc[scored, "chosen"], v.loc[scored, "judge_chosen"], int((~scored).sum())))
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
    low, high, n_valid = clustered_ci(draws, len(tasks), ci)
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
        if not note and len(tasks) < MIN_CLUSTERS:
            note.append(FEW_CLUSTERS_NOTE)
        elif not note:
            note += [n for n in (few_clusters_note(len(tasks)),) if n]
            if n_valid[k] < n_boot:
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
        return float("nan"), "every coder gave the same value on every shared unit: α undefined"
    return float(krippendorff.alpha(reliability_data=data, value_domain=list(domain), level_of_measurement=level)), ""


def human_rating_matrix(ratings: pd.DataFrame) -> pd.DataFrame:
    """Ratings as a ``rater × trajectory`` matrix (NaN where a rater did not rate a trajectory)."""
    r = _ratings_frame(ratings)
    return r.pivot(index="rater", columns="trajectory_id", values="rating").astype(float)


ALPHA_COLUMNS = ["data", "coders", "level", "alpha", "n_units", "n_coders", "n_answers", "scale", "note"]


def _alpha_row(data: str, coders: str, level: str, matrix: np.ndarray, domain: Sequence[float], scale: str,
               extra_note: str = "") -> dict:
    value, note = krippendorff_alpha(matrix, level, domain)
    pairable = int((np.isfinite(matrix).sum(axis=0) >= 2).sum()) if matrix.size else 0
    return {"data": data, "coders": coders, "level": level, "alpha": value, "n_units": pairable,
            "n_coders": matrix.shape[0], "n_answers": int(np.isfinite(matrix).sum()), "scale": scale,
            "note": "; ".join(n for n in (note, extra_note) if n)}


def alpha_table(
    ratings: pd.DataFrame | None,
    preferences: pd.DataFrame | None,
    scores: pd.DataFrame | None = None,
    judges: Sequence[str] | None = None,
    *,
    score_col: str = "partial_credit",
    scale: tuple[int, int] | None = None,
    tie_tol: float = 0.0,
) -> pd.DataFrame:
    """Krippendorff's α among humans, and with each judge added as a coder, for ratings and preferences.

    `scale` is the rating scale ``(lo, hi)``; by default the one the ratings frame declares (see
    `rating_scale`). Either human frame may be None or empty, and `scores` None (humans only); their
    rows are then omitted.
    """
    if scores is not None:
        wide, judges, _ = common_subset(scores, judges, score_col=score_col)
        lookup = wide.set_index("trajectory_id")
    else:
        judges, lookup = [], pd.DataFrame()
    rows = []
    if ratings is not None and len(ratings):
        (lo, hi), scale_note = rating_scale(_with_trajectory_id(ratings), scale)
        matrix = human_rating_matrix(ratings)
        domain, shown = np.arange(lo, hi + 1), f"{lo}–{hi}"
        rows.append(_alpha_row("ratings", "humans", "ordinal", matrix.to_numpy(), domain, shown, scale_note))
        for judge in judges:
            s = matrix.columns.to_series().map(lookup[judge]).to_numpy(dtype=float)
            as_rating = lo + np.floor(np.clip(s, 0.0, 1.0) * (hi - lo) + 0.5)
            rows.append(_alpha_row("ratings", f"humans + {judge}", "ordinal",
                                   np.vstack([matrix.to_numpy(), as_rating]), domain, shown, scale_note))
    if preferences is not None and len(preferences):
        votes = preference_choices(preferences)
        chosen = votes.pivot(index="rater", columns="pair_id", values="chosen")
        pairs = votes.drop_duplicates("pair_id").set_index("pair_id").reindex(chosen.columns)
        humans = preference_codes(pairs, chosen.to_numpy(dtype=object))
        domain = list(PREFERENCE_CLASSES.values())
        rows.append(_alpha_row("preferences", "humans", "nominal", humans, domain, PREFERENCE_SCALE))
        for judge in judges:
            judged = preference_codes(pairs, _judge_choices(pairs, lookup, judge, tie_tol)[None, :])
            rows.append(_alpha_row("preferences", f"humans + {judge}", "nominal", np.vstack([humans, judged]), domain,
                                   PREFERENCE_SCALE))
    return pd.DataFrame(rows, columns=ALPHA_COLUMNS)


PREFERENCE_CLASSES = {"first": 0.0, "second": 1.0, TIE: 2.0}
"""The three classes a preference vote is coded in for α (`preference_codes`)."""
PREFERENCE_SCALE = "first / second of the pair (trajectory ids in sorted order) or tie"


def preference_codes(pairs: pd.DataFrame, chosen: np.ndarray) -> np.ndarray:
    """Votes as α's three classes: ``coders × pairs`` chosen trajectory ids (or ``tie``; None = no vote) of the
    pairs `pairs` lists (``left_id, right_id``, one row per column of `chosen`) → 0 = the pair's first trajectory,
    1 = its second, 2 = tie, NaN = no vote. First and second are the two ids in sorted order: the same for every
    vote on the pair, whichever side it was shown on."""
    left, right = pairs["left_id"].astype(str).to_numpy(), pairs["right_id"].astype(str).to_numpy()
    first = np.where(left <= right, left, right)
    voted = pd.notna(chosen)
    codes = np.where(chosen == TIE, PREFERENCE_CLASSES[TIE],
                     np.where(chosen == first[None, :], PREFERENCE_CLASSES["first"], PREFERENCE_CLASSES["second"]))
    return np.where(voted, codes, np.nan).astype(float)
