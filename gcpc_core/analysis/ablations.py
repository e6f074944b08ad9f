"""RQ4 (design parts) — ablations recomputed from raw verdicts.

Reads **items** (``trajectory_id, task, judge, item_id, route, verdict_raw, outcome``) and
**scores** (``judge, outcome, perfect, perfect_with_endpoint``); see `frames`.

* Score variants: each checklist judge's partial credit recomputed with
  `gcpc_core.outcome.postprocess` / `score_items` from the stored raw verdicts, with PASS
  propagation and the endpoint item switched on and off, so their AUC increments over the raw
  score can be compared on the same trajectories and draws (`discrimination.bootstrap_auc`).
* Fixed vs task checklist: the paired ΔAUC of the two judges, from `discrimination`.
* Perfect vs the official outcome: agreement and Cohen's κ (`sklearn`), with and without the
  endpoint item.
* Outcome-free scores (`outcome_free_scores`): what RQ1's headline AUC is computed from. The
  postprocessed partial credit contains the official outcome it is scored against (PASS
  propagation writes Yes into assertion items, the endpoint item writes the FAIL in), so a judge
  that abstains on every item still gets AUC 1.0 from it. The ``raw`` variant reads the judge's
  own verdicts only; a rating judge's score never read the outcome and is kept. `decided_counts`
  and `outcome_only_warnings` say when a judge's raw verdicts decide too little for either to mean
  anything.

Speed: a trajectory's score depends only on its official outcome and the multiset of
(route, raw verdict) of its real items — not on item ids or order. Trajectories sharing that
signature are scored once, through the real `postprocess`/`score_items`; a test checks the
result against scoring every trajectory separately.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
from sklearn.metrics import cohen_kappa_score

from ..models import ENDPOINT_ITEM_ID, ItemJudgment
from ..outcome import postprocess, score_items
from .frames import JudgeOrder, judge_order_of, require_columns, trajectory_outcomes

__all__ = ["DECIDED_COLUMNS", "OUTCOME_FREE_VARIANT", "POSTPROCESSED_VARIANTS", "VARIANTS", "decided_counts",
           "item_decided_counts", "item_judges_of",
           "outcome_free_scores", "outcome_only_warnings", "perfect_agreement", "score_variants"]

VARIANTS: dict[str, tuple[bool, bool]] = {
    "raw": (False, False),
    "pass_propagation": (True, False),
    "endpoint": (False, True),
    "full": (True, True),
}
"""Variant name → (propagate_pass, add_endpoint) passed to `postprocess`."""
OUTCOME_FREE_VARIANT = "raw"
"""The variant that reads no official outcome: partial credit of the judge's raw verdicts."""
POSTPROCESSED_VARIANTS = ("pass_propagation", "endpoint", "full")
"""The variants that write the official outcome into the score (``full`` is the stored partial credit)."""


def _nan(value: float | None) -> float:
    return np.nan if value is None else value


def score_variants(items: pd.DataFrame, variants: Mapping[str, tuple[bool, bool]] = VARIANTS) -> pd.DataFrame:
    """Long frame: ``trajectory_id, task, judge, outcome, variant`` and the `Score` fields
    ``partial_credit, evidence_coverage, perfect, perfect_with_endpoint``.

    Stored endpoint rows are ignored: `postprocess` rebuilds the endpoint from the outcome.
    """
    require_columns(items, ("trajectory_id", "task", "judge", "item_id", "route", "verdict_raw", "outcome"), "items")
    trajectory_outcomes(items, "items")
    columns = ["trajectory_id", "task", "judge", "outcome", "variant", "partial_credit", "evidence_coverage",
               "perfect", "perfect_with_endpoint"]
    real = items[items["item_id"] != ENDPOINT_ITEM_ID]
    if real.empty:
        return pd.DataFrame(columns=columns)
    counts = real.groupby(["judge", "trajectory_id", "task", "outcome", "route", "verdict_raw"], sort=False).size()
    wide = counts.unstack(["route", "verdict_raw"], fill_value=0)
    cells = list(wide.columns)
    wide.columns = [f"{route}|{verdict}" for route, verdict in cells]
    keyed = wide.reset_index()
    sig_cols = ["outcome", *wide.columns]
    scored = []
    for sig in keyed[sig_cols].drop_duplicates().itertuples(index=False):
        outcome, n_per_cell = sig[0], sig[1:]
        judged = [ItemJudgment(item_id=f"S{k}", route=route, verdict_raw=verdict, verdict=verdict)
                  for (route, verdict), n in zip(cells, n_per_cell) for k in range(int(n))]
        for name, (propagate, endpoint) in variants.items():
            s = score_items(postprocess(judged, outcome, propagate_pass=propagate, add_endpoint=endpoint))
            scored.append((*sig, name, _nan(s.partial_credit), _nan(s.evidence_coverage), s.perfect,
                           s.perfect_with_endpoint))
    table = pd.DataFrame(scored, columns=[*sig_cols, *columns[4:]])
    out = keyed.merge(table, on=sig_cols, how="left")[columns]
    return out.sort_values(["judge", "variant", "task", "trajectory_id"], kind="stable").reset_index(drop=True)


def perfect_agreement(scores: pd.DataFrame) -> pd.DataFrame:
    """Per judge: how often Perfect (without / with the endpoint) equals official PASS, and Cohen's κ.

    Rows with a missing Perfect (e.g. the holistic judge) are skipped; κ is NaN with a note
    when either side is constant.
    """
    require_columns(scores, ("trajectory_id", "judge", "outcome", "perfect", "perfect_with_endpoint"), "scores")
    trajectory_outcomes(scores, "scores")
    rows = []
    for judge, s in scores.groupby("judge", sort=True):
        passed = (s["outcome"] == "PASS").astype(int)
        for column, label in (("perfect", "without endpoint"), ("perfect_with_endpoint", "with endpoint")):
            ok = s[column].notna()
            y, p = passed[ok].to_numpy(), s.loc[ok, column].astype(int).to_numpy()
            n = int(ok.sum())
            constant = n > 0 and (np.unique(y).size < 2 or np.unique(p).size < 2)
            note = "no Perfect values" if n == 0 else ("κ undefined: one side is constant" if constant else "")
            rows.append({
                "judge": judge, "perfect": label, "n": n,
                "agreement": float((y == p).mean()) if n else np.nan,
                "kappa": np.nan if n == 0 or constant else float(cohen_kappa_score(y, p)),
                "perfect_and_pass": int(((p == 1) & (y == 1)).sum()),
                "perfect_and_fail": int(((p == 1) & (y == 0)).sum()),
                "imperfect_and_pass": int(((p == 0) & (y == 1)).sum()),
                "imperfect_and_fail": int(((p == 0) & (y == 0)).sum()),
                "note": note,
            })
    return pd.DataFrame(rows, columns=["judge", "perfect", "n", "agreement", "kappa", "perfect_and_pass",
                                       "perfect_and_fail", "imperfect_and_pass", "imperfect_and_fail", "note"])


def item_judges_of(scores: pd.DataFrame, items: pd.DataFrame | None, order: JudgeOrder | None = None) -> list[str]:
    """The judges of `scores` whose score is a partial credit of item verdicts (hence postprocessed): registered
    item judges (`order`, else the frames' own), judges with rows in `items`, and any with an evidence coverage (a
    rating judge has none). The others are rating judges, whose score never read the official outcome."""
    order = order or judge_order_of(scores, items)
    present = order.ordered(scores["judge"].unique())
    judged = set(items.loc[items["item_id"] != ENDPOINT_ITEM_ID, "judge"]) if items is not None and len(items) else set()
    covered = (set(scores.loc[scores["evidence_coverage"].notna(), "judge"]) if "evidence_coverage" in scores
               else set())
    return [j for j in present if j in order.item_judges or j in judged or j in covered]


def outcome_free_scores(scores: pd.DataFrame, items: pd.DataFrame | None, order: JudgeOrder | None = None
                        ) -> tuple[pd.DataFrame, list[str]]:
    """``(scores, lacking)``: `scores` with every item judge's ``partial_credit`` recomputed from its raw verdicts
    (`OUTCOME_FREE_VARIANT`: no PASS propagation, no endpoint item; NaN where no raw verdict is Yes or No), rating
    judges' rows as they are, and the item judges whose item verdicts `items` lacks (left out of the frame)."""
    require_columns(scores, ("trajectory_id", "judge", "partial_credit"), "scores")
    item_judges = item_judges_of(scores, items, order)
    real = items[items["item_id"] != ENDPOINT_ITEM_ID] if items is not None and len(items) else None
    have = set(real["judge"]) if real is not None else set()
    lacking = [j for j in item_judges if j not in have]
    keep = scores[~scores["judge"].isin(item_judges)]
    parts = [keep]
    if real is not None:
        rescored = [j for j in item_judges if j in have]
        raw = score_variants(real[real["judge"].isin(rescored)], {OUTCOME_FREE_VARIANT: VARIANTS[OUTCOME_FREE_VARIANT]})
        own = scores[scores["judge"].isin(rescored)].drop(columns="partial_credit")
        parts.append(own.merge(raw[["trajectory_id", "judge", "partial_credit"]], on=["trajectory_id", "judge"],
                               how="left")[scores.columns])
    out = pd.concat(parts, ignore_index=True) if len(parts) > 1 else keep.reset_index(drop=True)
    out.attrs = dict(scores.attrs)
    return out, lacking


DECIDED_COLUMNS = ["judge", "n_trajectories", "n_undecided", "n_items", "n_decided", "decided_share"]


def decided_counts(per_trajectory: pd.DataFrame) -> pd.DataFrame:
    """Per judge, from one row per (trajectory, judge) with ``n_items`` (real items) and ``n_decided`` (raw Yes or
    No among them): trajectories, those with no decided item (``n_undecided``), items, decided items and their
    share (`DECIDED_COLUMNS`)."""
    require_columns(per_trajectory, ("trajectory_id", "judge", "n_items", "n_decided"), "per-trajectory counts")
    g = per_trajectory.assign(undecided=per_trajectory["n_decided"] == 0).groupby("judge", sort=True)
    out = pd.DataFrame({"n_trajectories": g["trajectory_id"].nunique(), "n_undecided": g["undecided"].sum(),
                        "n_items": g["n_items"].sum(), "n_decided": g["n_decided"].sum()}).reset_index()
    with np.errstate(invalid="ignore", divide="ignore"):
        out["decided_share"] = out["n_decided"] / out["n_items"].where(out["n_items"] > 0)
    return out.astype({"n_trajectories": int, "n_undecided": int, "n_items": int, "n_decided": int})[DECIDED_COLUMNS]


def item_decided_counts(items: pd.DataFrame) -> pd.DataFrame:
    """`decided_counts` of an items frame's raw verdicts (the endpoint item left out)."""
    real = items[items["item_id"] != ENDPOINT_ITEM_ID]
    per = (real.assign(decided=real["verdict_raw"].isin(["Yes", "No"]))
           .groupby(["trajectory_id", "judge"], sort=False)["decided"].agg(n_items="size", n_decided="sum")
           .reset_index())
    return decided_counts(per)


def outcome_only_warnings(counts: pd.DataFrame) -> list[str]:
    """The plain statements about judges whose raw verdicts decide nothing, from `decided_counts`: a judge that
    abstained on every item (evidence coverage 0) has a partial credit that only restates the official outcome, so
    its AUC is no evidence; trajectories with no decided item are counted."""
    out = []
    for r in counts.itertuples(index=False):
        if r.n_items and r.n_decided == 0:
            out.append(f"judge {r.judge} abstained on every item of its {r.n_trajectories} trajectories (evidence "
                       "coverage 0): its partial credit only restates the official outcome (an official PASS sets its "
                       "assertion items to Yes, a FAIL adds the endpoint item's No), so an AUC of it is no evidence "
                       "of anything the judge found, however high it reads.")
        elif r.n_undecided:
            out.append(f"judge {r.judge} decided no item of {r.n_undecided} of its {r.n_trajectories} trajectories "
                       "(evidence coverage 0 there): their partial credit only restates the official outcome, and "
                       "they have no outcome-free score.")
    return out
