"""RQ3 — what Skills change when pass@1 does not: matched with/without-skills pairs.

Reads **scores** (``trajectory_id, task, judge, outcome, condition, agent, model, trial_index``
and a score column) and, for item changes, **items** (``trajectory_id, judge, item_id, verdict``);
see `frames`.

A matched pair is a with-skills and a without-skills trajectory sharing (task, agent, model,
trial_index), scored by the same judge. Δ = score(with) − score(without). Its transition is
``<outcome without>→<outcome with>``; FAIL→FAIL and PASS→PASS pairs are where pass@1 is blind, so
the shares of pairs improving (Δ > threshold) and regressing (Δ < −threshold) are reported there
(and for every transition). "More than the threshold" is strict, with a 1e-9 guard so that
binary-fraction noise (0.6 − 0.5 = 0.0999…) never decides a borderline case. Pairs with a NaN
score on either side keep their transition but have no Δ; they count in ``n_pairs``, not in
``n_scored``, medians or shares.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..models import ENDPOINT_ITEM_ID
from .frames import FrameContractError, require_columns, trajectory_outcomes

__all__ = ["PAIR_KEY", "TRANSITIONS", "item_changes", "matched_pairs", "pair_moves", "transition_table"]

PAIR_KEY = ("task", "agent", "model", "trial_index")
TRANSITIONS = ("FAIL→PASS", "PASS→FAIL", "FAIL→FAIL", "PASS→PASS")
"""``<without skills>→<with skills>`` official outcomes."""
EPS = 1e-9


def pair_moves(delta: np.ndarray | pd.Series, threshold: float) -> tuple[np.ndarray, np.ndarray]:
    """(improving, regressing) of each matched pair's Δ (with − without): a move larger than `threshold`
    either way. The one definition `transition_table`'s shares and triage's per-candidate shares count."""
    d = np.asarray(delta, dtype=float)
    return d > threshold + EPS, d < -threshold - EPS


def matched_pairs(scores: pd.DataFrame, *, score_col: str = "partial_credit") -> pd.DataFrame:
    """One row per (judge, pair key): both trajectory ids, outcomes, scores, Δ and the transition.

    Trajectories with condition "unknown" or without a partner are left out. Two trajectories
    under one condition with the same key violate the trial_index contract and raise.
    """
    require_columns(scores, ("trajectory_id", "judge", "condition", *PAIR_KEY, score_col), "scores")
    trajectory_outcomes(scores, "scores")
    cols = ["judge", *PAIR_KEY, "trajectory_id", "outcome", score_col]
    known = scores[scores["condition"].isin(["with-skills", "without-skills"])]
    dup = known.duplicated(["judge", *PAIR_KEY, "condition"])
    if dup.any():
        row = known.loc[dup].iloc[0]
        raise FrameContractError(
            f"scores frame has two {row['condition']} trajectories for judge {row['judge']!r} and pair key "
            f"{tuple(row[k] for k in PAIR_KEY)!r}; trial_index must rank trials within a condition")
    with_ = known.loc[known["condition"] == "with-skills", cols]
    without = known.loc[known["condition"] == "without-skills", cols]
    pairs = with_.merge(without, on=["judge", *PAIR_KEY], suffixes=("_with", "_without"))
    pairs = pairs.rename(columns={f"{score_col}_with": "score_with", f"{score_col}_without": "score_without"})
    pairs["delta"] = pairs["score_with"].astype(float) - pairs["score_without"].astype(float)
    pairs["transition"] = pairs["outcome_without"] + "→" + pairs["outcome_with"]
    order = ["judge", *PAIR_KEY, "trajectory_id_without", "trajectory_id_with", "outcome_without", "outcome_with",
             "score_without", "score_with", "delta", "transition"]
    return pairs[order].sort_values(["judge", *PAIR_KEY], kind="stable").reset_index(drop=True)


def transition_table(pairs: pd.DataFrame, *, threshold: float = 0.10) -> pd.DataFrame:
    """Per judge and transition (and "all"): pair counts, median/mean Δ, shares improving and regressing.

    Every judge gets all four transitions, with zero counts where none occurred.
    """
    require_columns(pairs, ("judge", "transition", "delta"), "pairs")
    columns = ["judge", "transition", "n_pairs", "n_scored", "median_delta", "mean_delta", "share_improving",
               "share_regressing", "threshold", "note"]
    d = pairs["delta"].astype(float)
    scored = d.notna()
    improving, regressing = pair_moves(d, threshold)
    long = pd.DataFrame({"judge": pairs["judge"], "transition": pairs["transition"], "delta": d,
                         "improving": pd.Series(improving, index=d.index).where(scored),
                         "regressing": pd.Series(regressing, index=d.index).where(scored)})
    g = pd.concat([long, long.assign(transition="all")]).groupby(["judge", "transition"], sort=False)
    stats = pd.DataFrame({"n_pairs": g.size(), "n_scored": g["delta"].count(), "median_delta": g["delta"].median(),
                          "mean_delta": g["delta"].mean(), "share_improving": g["improving"].mean().astype(float),
                          "share_regressing": g["regressing"].mean().astype(float)})
    grid = pd.MultiIndex.from_product([pairs["judge"].unique(), [*TRANSITIONS, "all"]], names=["judge", "transition"])
    out = stats.reindex(grid).reset_index()
    out[["n_pairs", "n_scored"]] = out[["n_pairs", "n_scored"]].fillna(0).astype(int)
    out["threshold"] = threshold
    out["note"] = np.where(out["n_pairs"] == 0, "no pairs", np.where(out["n_scored"] == 0, "no pair has both scores", ""))
    return out[columns]


def item_changes(
    items: pd.DataFrame,
    pairs: pd.DataFrame,
    *,
    verdict_col: str = "verdict",
    transitions: tuple[str, ...] | None = None,
) -> pd.DataFrame:
    """Which checklist items changed between the two sides of matched pairs, per (judge, task, item).

    ``gained`` counts No→Yes, ``lost`` Yes→No, ``abstain_change`` any change to or from Abstain,
    ``unchanged`` equal verdicts; ``net_share`` = (gained − lost) / n_pairs. Verdicts are the
    postprocessed ones by default (what scores are computed from); the endpoint item is left
    out, since the transition already records it. `transitions` restricts the pairs, e.g.
    ``("FAIL→FAIL",)`` for the changes pass@1 cannot see.
    """
    require_columns(items, ("trajectory_id", "judge", "item_id", verdict_col), "items")
    require_columns(pairs, ("judge", "task", "trajectory_id_with", "trajectory_id_without", "transition"), "pairs")
    p = pairs if transitions is None else pairs[pairs["transition"].isin(transitions)]
    it = items.loc[items["item_id"] != ENDPOINT_ITEM_ID, ["trajectory_id", "judge", "item_id", verdict_col]]
    side = {s: it.rename(columns={"trajectory_id": f"trajectory_id_{s}", verdict_col: f"v_{s}"})
            for s in ("with", "without")}
    m = (p[["judge", "task", "trajectory_id_with", "trajectory_id_without"]]
         .merge(side["without"], on=["judge", "trajectory_id_without"])
         .merge(side["with"], on=["judge", "trajectory_id_with", "item_id"]))
    a, b = m["v_without"], m["v_with"]
    m = m.assign(
        gained=(a == "No") & (b == "Yes"), lost=(a == "Yes") & (b == "No"), unchanged=a == b,
        abstain_change=(a != b) & ((a == "Abstain") | (b == "Abstain")),
    )
    out = (m.groupby(["judge", "task", "item_id"], sort=True)
           .agg(n_pairs=("gained", "size"), gained=("gained", "sum"), lost=("lost", "sum"),
                unchanged=("unchanged", "sum"), abstain_change=("abstain_change", "sum"))
           .reset_index())
    out["net_share"] = (out["gained"] - out["lost"]) / out["n_pairs"]
    return out
