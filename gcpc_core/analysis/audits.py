"""Item audits as an analysis frame, and what the auditors say each audited item verdict should be.

**audits** frame (what `audits_frame` loads): one row per *current* audit (the latest per reviewer
and item verdict; the annotations store keeps the history) of one labelled run per judge:
``trajectory_id, judge, label`` (the run audited; None for an audit made before its judge had a run), ``item_id,
rater, agree`` (bool), ``verdict`` (the corrected verdict of a disagreeing audit, else None),
``created_at``, ``is_simulated``, ``selection`` (`models.AuditSelection`: ``random`` or ``chosen``; ``unrecorded``
when the audit does not say). An audit is of the judge's **raw** verdict (the audit page
compares a correction with it), so an agreeing audit says the raw verdict is right.

`auditor_verdicts` turns every audit into the verdict its reviewer holds; `auditor_consensus`
reduces them to one per item verdict: the verdict most auditors hold, or none when the most
common verdicts tie (the auditors are split, which triage lists as an auditor vs auditor
disagreement).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from ..models import UNRECORDED_SELECTION
from ..store import Store
from .frames import require_columns

__all__ = ["AUDIT_COLUMNS", "KEY", "auditor_consensus", "auditor_verdicts", "audits_frame", "selection_note", "verdict_votes"]

AUDIT_COLUMNS = ("trajectory_id", "judge", "label", "item_id", "rater", "agree", "verdict", "created_at", "is_simulated",
                 "selection")

KEY = ["trajectory_id", "judge", "item_id"]
"""One item verdict: an item of a trajectory as one judge decided it."""


def audits_frame(store: Store, *, labels: Mapping[str, str] | None = None, all_labels: bool = False) -> pd.DataFrame:
    """Current item audits of a project (see the module docstring) of each judge's chosen run (its
    default label unless `labels` says otherwise; every run with `all_labels`); empty with its
    columns when none."""
    audits = store.annotations.list(kind="item_audit", labels=labels, all_labels=all_labels)
    rows = [{"trajectory_id": a.trajectory_id, "judge": a.judge, "label": a.label, "item_id": a.item_id,
             "rater": a.rater, "agree": bool(a.value["agree"]), "verdict": a.value.get("verdict"),
             "created_at": a.created_at, "is_simulated": a.is_simulated,
             "selection": a.value.get("selection") or UNRECORDED_SELECTION} for a in audits]
    return pd.DataFrame(rows, columns=list(AUDIT_COLUMNS)).astype({"agree": bool, "is_simulated": bool})


def auditor_verdicts(items: pd.DataFrame, audits: pd.DataFrame) -> pd.DataFrame:
    """Every audit of a known item verdict with the verdict its reviewer holds (``auditor_verdict``).

    Agreeing audits hold the judge's raw verdict; disagreeing ones their correction. Audits of
    item verdicts absent from `items` (e.g. judged again since) are dropped: what they agreed with
    is gone.
    """
    require_columns(items, (*KEY, "verdict_raw"), "items")
    require_columns(audits, (*KEY, "rater", "agree", "verdict"), "audits")
    a = audits.merge(items[[*KEY, "verdict_raw"]].drop_duplicates(KEY), on=KEY, how="inner")
    agree = a["agree"].astype(bool)
    a["auditor_verdict"] = a["verdict_raw"].where(agree, a["verdict"])
    return a.reset_index(drop=True)


def auditor_consensus(verdicts: pd.DataFrame) -> pd.DataFrame:
    """One row per audited item verdict: ``n_auditors``, ``auditors`` ("rater: verdict; …"),
    ``consensus`` (the majority verdict, None when split) and ``split`` (auditors hold different verdicts)."""
    columns = [*KEY, "n_auditors", "auditors", "consensus", "split"]
    if verdicts.empty:
        return pd.DataFrame(columns=columns)
    v = verdicts.sort_values("rater", kind="stable")
    v = v.assign(_said=v["rater"].astype(str) + ": " + v["auditor_verdict"].astype(str))
    g = v.groupby(KEY, sort=True)
    out = g.size().rename("n_auditors").reset_index()
    out["auditors"] = g["_said"].agg("; ".join).to_numpy()
    votes = verdict_votes(v)  # sorted by KEY, as the groups above
    out["consensus"], out["split"] = votes["consensus"].to_numpy(), votes["split"].to_numpy()
    return out[columns]


def verdict_votes(verdicts: pd.DataFrame) -> pd.DataFrame:
    """The auditors' vote on each audited item verdict (`auditor_verdicts` rows), sorted by KEY: ``consensus``
    (the verdict most auditors hold; None when the most common tie), ``tied`` (the tied verdicts, sorted, when
    they tie; else None) and ``split`` (the auditors hold different verdicts)."""
    votes = verdicts.groupby([*KEY, "auditor_verdict"], sort=True).size().unstack(fill_value=0)
    counts = votes.to_numpy()
    top = counts == counts.max(axis=1, keepdims=True)
    names = votes.columns.to_numpy(dtype=object)
    out = votes.index.to_frame(index=False)
    out["consensus"] = np.where(top.sum(axis=1) == 1, names[top.argmax(axis=1)], None)
    out["tied"] = [tuple(names[row]) if row.sum() > 1 else None for row in top]
    out["split"] = (counts > 0).sum(axis=1) > 1
    return out

def selection_note(audits: pd.DataFrame | None) -> str:
    """How the audits were selected, and what that means for the estimates (`active.in_sample`): one sentence for
    the report and the triage page; "" without audits."""
    if audits is None or audits.empty:
        return ""
    counts = (audits["selection"] if "selection" in audits else pd.Series(UNRECORDED_SELECTION, index=audits.index)
              ).fillna(UNRECORDED_SELECTION).value_counts()
    random, chosen, unrecorded = (int(counts.get(k, 0)) for k in ("random", "chosen", UNRECORDED_SELECTION))
    parts = [f"Of {len(audits)} item audits, {random} were drawn at random (opened from the triage page's "
             "proposals) and estimate the error rate of the verdicts nobody audited"]
    if chosen:
        parts.append(f"{chosen} were chosen (the disagreement list, browsing): they settle their own verdicts and "
                     "estimate nothing, since the app steers auditors to likely errors")
    if unrecorded:
        parts.append(f"{unrecorded} record no selection (made before it was recorded, or outside the app) and are "
                     "taken as drawn at random")
    return "; ".join(parts) + "."
