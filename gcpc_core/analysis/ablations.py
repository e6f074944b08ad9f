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
from .frames import require_columns, trajectory_outcomes

__all__ = ["VARIANTS", "perfect_agreement", "score_variants"]

VARIANTS: dict[str, tuple[bool, bool]] = {
    "raw": (False, False),
    "pass_propagation": (True, False),
    "endpoint": (False, True),
    "full": (True, True),
}
"""Variant name → (propagate_pass, add_endpoint) passed to `postprocess`."""


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
