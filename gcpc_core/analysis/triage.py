"""Disagreement triage: which item verdicts to check first, ranked by how much correcting them would
move the reported figures.

Reads **items**, **ctrf**, **scores** (see `frames`) and **audits** (see `audits`).

`item_verdicts` puts every real item verdict (the endpoint is the outcome itself) beside what else
is known about it: the judge's raw and postprocessed verdicts, the verifier's truth for an
assertion item whose cited tests are in the CTRF report, every auditor's verdict and their
consensus. `disagreements` lists, one row per item verdict and kind:

* ``judge vs verifier`` — the CTRF truth differs from the raw verdict; proposed: the truth;
* ``judge vs auditor`` — some auditor holds another verdict; proposed: the most common of the
  verdicts auditors hold instead of the judge's;
* ``auditor vs auditor`` — auditors hold different verdicts; proposed as for judge vs auditor.

`rank_disagreements` adds what the proposed correction would change, each from the raw verdicts
through the real postprocessing and scoring (`outcome`): the judge's AUC vs official PASS
(`roc_auc_score`), the mean partial credit of the trajectory's condition, and the matched-pair
shares improving / regressing (`skills.transition_table`), and ranks by ``impact`` = the largest
of those absolute changes (all are on a 0–1 scale). A correction that postprocessing would undo
(an assertion item of an official PASS) has impact 0, which is true: no figure depends on it.
"""

from __future__ import annotations

from urllib.parse import urlencode

import numpy as np
import pandas as pd
from sklearn import config_context
from sklearn.metrics import roc_auc_score

from ..models import ENDPOINT_ITEM_ID, ItemJudgment
from ..outcome import postprocess, score_items
from .audits import KEY, auditor_consensus, auditor_verdicts
from .calibration import rescore
from .frames import require_columns
from .item_accuracy import assertion_truth, decided_by_verifier
from .skills import TRANSITIONS, matched_pairs, pair_moves

__all__ = ["KINDS", "TRIAGE_COLUMNS", "audit_link", "disagreements", "item_verdicts", "rank_disagreements", "triage"]

KINDS = ("judge vs verifier", "judge vs auditor", "auditor vs auditor")
TRIAGE_COLUMNS = ["rank", *KEY, "task", "route", "kind", "verdict_raw", "verdict", "verifier", "auditors", "proposed",
                  "impact", "delta_auc", "delta_mean_pc", "delta_share", "condition", "link"]


def item_verdicts(items: pd.DataFrame, ctrf: pd.DataFrame | None, audits: pd.DataFrame | None) -> pd.DataFrame:
    """One row per real item verdict: ``trajectory_id, judge, item_id, task, route, verdict_raw, verdict,
    verifier`` (CTRF truth or None), ``n_auditors, auditors, consensus, split, dissent`` (the most common
    verdict auditors hold instead of the judge's, or None)."""
    require_columns(items, (*KEY, "task", "route", "verdict_raw", "verdict"), "items")
    real = items.loc[items["item_id"] != ENDPOINT_ITEM_ID].drop_duplicates(KEY)
    out = real[[*KEY, "task", "route", "verdict_raw", "verdict"]].reset_index(drop=True)
    if ctrf is not None and "verifier_refs" in real.columns:
        truth = assertion_truth(real, ctrf)
        out = out.merge(truth.loc[decided_by_verifier(truth), [*KEY, "truth"]].rename(columns={"truth": "verifier"}),
                        on=KEY, how="left")
    else:
        out["verifier"] = None
    verdicts = auditor_verdicts(real, audits) if audits is not None and len(audits) else pd.DataFrame()
    consensus = auditor_consensus(verdicts)
    out = out.merge(consensus, on=KEY, how="left")
    out["n_auditors"] = out["n_auditors"].fillna(0).astype(int)
    out["split"] = out["split"].astype("boolean").fillna(False).astype(bool)
    if len(verdicts):
        other = verdicts[verdicts["auditor_verdict"] != verdicts["verdict_raw"]]
        dissent = (other.groupby(KEY)["auditor_verdict"]
                   .agg(lambda v: v.value_counts().sort_index(kind="stable").idxmax()).rename("dissent"))
        out = out.merge(dissent, left_on=KEY, right_index=True, how="left")
    else:
        out["dissent"] = None
    return out.astype({"verifier": object, "consensus": object, "dissent": object, "auditors": object})


def disagreements(verdicts: pd.DataFrame) -> pd.DataFrame:
    """One row per (item verdict, kind of disagreement), with the ``proposed`` correction (see module docstring)."""
    v = verdicts
    parts = [
        v[v["verifier"].notna() & (v["verifier"] != v["verdict_raw"])].assign(kind=KINDS[0], proposed=lambda d: d["verifier"]),
        v[v["dissent"].notna()].assign(kind=KINDS[1], proposed=lambda d: d["dissent"]),
        v[v["split"] & v["dissent"].notna()].assign(kind=KINDS[2], proposed=lambda d: d["dissent"]),
    ]
    return pd.concat(parts, ignore_index=True)


def _score(rows: pd.DataFrame, outcome: str) -> float:
    judged = [ItemJudgment(item_id=r.item_id, route=r.route, verdict_raw=r.verdict_raw, verdict=r.verdict_raw)
              for r in rows.itertuples(index=False)]
    pc = score_items(postprocess(judged, outcome)).partial_credit
    return np.nan if pc is None else pc


def _auc(outcome: np.ndarray, score: np.ndarray) -> float:
    """AUC of `score` vs official PASS over the finite scores. Called once per candidate correction, on arrays
    built here (finite, one label each), so sklearn's argument validation, most of a call's time, is skipped."""
    ok = np.isfinite(score)
    y = outcome[ok] == "PASS"
    if not 0 < y.sum() < len(y):
        return np.nan
    with config_context(skip_parameter_validation=True, assume_finite=True):
        return float(roc_auc_score(y, score[ok]))


def _shares(pairs: pd.DataFrame, threshold: float) -> pd.Series:
    """One judge's matched-pair shares improving / regressing per transition with a scored pair (and "all"): the
    moves of `skills.pair_moves`, which `skills.transition_table` counts too, counted here in numpy: this runs once per candidate correction, where a
    table per candidate cost most of the page's time."""
    delta = pairs["delta"].to_numpy(dtype=float)
    transition = pairs["transition"].to_numpy(dtype=object)
    scored = np.isfinite(delta)
    up, down = pair_moves(delta, threshold)
    improving, regressing = {}, {}
    for name in (*TRANSITIONS, "all"):
        chosen = scored & ((transition == name) if name != "all" else True)
        if chosen.any():
            improving[f"improving {name}"] = float(up[chosen].mean())
            regressing[f"regressing {name}"] = float(down[chosen].mean())
    return pd.Series({**improving, **regressing}, dtype=float)


def rank_disagreements(
    found: pd.DataFrame, items: pd.DataFrame, scores: pd.DataFrame, *, base_url: str, threshold: float = 0.10
) -> pd.DataFrame:
    """`found` (from `disagreements`) with ``delta_auc, delta_mean_pc, delta_share, impact, condition, rank, link``,
    most impactful first (``link``: `audit_link` into the app at `base_url`). ``delta_share`` is the signed change
    of the matched-pair share that moves most."""
    if found.empty:
        return pd.DataFrame(columns=TRIAGE_COLUMNS)
    require_columns(scores, ("trajectory_id", "judge", "outcome", "condition", "agent", "model", "trial_index"),
                    "scores")
    base = rescore(items, scores)
    real = items[items["item_id"] != ENDPOINT_ITEM_ID]
    effects: dict[tuple[str, str, str, str], tuple[float, float, float, str]] = {}
    for judge, cand in found.groupby("judge", sort=True):
        s = base[base["judge"] == judge].reset_index(drop=True)
        where = {t: k for k, t in enumerate(s["trajectory_id"])}
        outcome, pc = s["outcome"].to_numpy(), s["partial_credit"].to_numpy(dtype=float)
        auc0 = _auc(outcome, pc)
        pairs = matched_pairs(s)
        shares0 = _shares(pairs, threshold) if len(pairs) else pd.Series(dtype=float)
        mine = real[real["judge"] == judge]
        by_traj = {t: g for t, g in mine.groupby("trajectory_id", sort=False)}
        for key in cand[["trajectory_id", "item_id", "proposed"]].drop_duplicates().itertuples(index=False):
            k = where.get(key.trajectory_id)
            if k is None:
                continue
            rows = by_traj[key.trajectory_id]
            fixed = rows.assign(verdict_raw=np.where(rows["item_id"] == key.item_id, key.proposed, rows["verdict_raw"]))
            new = pc.copy()
            new[k] = _score(fixed, outcome[k])
            condition = s.at[k, "condition"]
            same = (s["condition"] == condition).to_numpy()
            d_pc = float(np.nanmean(new[same]) - np.nanmean(pc[same])) if np.isfinite(new[same]).any() else np.nan
            d_share = 0.0
            touched = (pairs["trajectory_id_with"] == key.trajectory_id) | (pairs["trajectory_id_without"] == key.trajectory_id)
            if touched.any():
                p = pairs.copy()
                side = np.where(p.loc[touched, "trajectory_id_with"] == key.trajectory_id, "score_with", "score_without")
                for idx, column in zip(p.index[touched], side):
                    p.at[idx, column] = new[k]
                p["delta"] = p["score_with"] - p["score_without"]
                moved = _shares(p, threshold).sub(shares0, fill_value=0.0)
                d_share = float(moved.loc[moved.abs().idxmax()]) if len(moved) else 0.0
            effects[(judge, key.trajectory_id, key.item_id, key.proposed)] = (
                _auc(outcome, new) - auc0, d_pc, d_share, condition)
    out = found.copy()
    cols = [effects.get((r.judge, r.trajectory_id, r.item_id, r.proposed), (np.nan, np.nan, np.nan, None))
            for r in out.itertuples(index=False)]
    out[["delta_auc", "delta_mean_pc", "delta_share", "condition"]] = pd.DataFrame(cols, index=out.index)
    for c in ("delta_auc", "delta_mean_pc", "delta_share"):
        out[c] = out[c].astype(float).round(12) + 0.0  # 1e-16 of float noise (or -0.0) is no change
    out["impact"] = out[["delta_auc", "delta_mean_pc", "delta_share"]].abs().max(axis=1).fillna(0.0)
    out["_kind"] = out["kind"].map({k: i for i, k in enumerate(KINDS)})
    out = out.sort_values(["impact", "_kind", "judge", "trajectory_id", "item_id"],
                          ascending=[False, True, True, True, True], kind="stable").reset_index(drop=True)
    out["rank"] = np.arange(1, len(out) + 1)
    out["link"] = [audit_link(base_url, r.trajectory_id, r.judge, r.item_id) for r in out.itertuples(index=False)]
    return out[TRIAGE_COLUMNS]


def audit_link(base_url: str, trajectory_id: str, judge: str, item_id: str, label: str | None = None) -> str:
    """Absolute URL of the item audit page of the app at `base_url` opened on one item verdict (what the audit
    page reads from its query); `label` names the judge run when it is not the judge's default. Absolute, so
    the link works where it is pasted (a terminal, a ticket, a spreadsheet), not only inside the app."""
    query = {"trajectory": trajectory_id, "judge": judge, "item": item_id} | ({"label": label} if label else {})
    return f"{base_url.rstrip('/')}/audit?{urlencode(query)}"


def triage(frames: dict[str, pd.DataFrame | None], *, base_url: str, threshold: float = 0.10) -> pd.DataFrame:
    """Every disagreement of a project's frames, ranked (`TRIAGE_COLUMNS`), linking into the app at `base_url`;
    empty when there are no item verdicts."""
    items, scores = frames.get("items"), frames.get("scores")
    if items is None or items.empty or scores is None or scores.empty:
        return pd.DataFrame(columns=TRIAGE_COLUMNS)
    found = disagreements(item_verdicts(items, frames.get("ctrf"), frames.get("audits")))
    return rank_disagreements(found, items, scores, base_url=base_url, threshold=threshold)
