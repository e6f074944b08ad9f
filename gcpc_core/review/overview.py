"""The overview page's data: what the project holds and how far judging, auditing and studies got."""

from __future__ import annotations

import pandas as pd

from ..store import Store
from .audit import AuditFilters, audit_list

__all__ = ["judges_frame", "overview_trajectories", "studies_frame"]


def judges_frame(trajectories: pd.DataFrame, stats: pd.DataFrame) -> pd.DataFrame:
    """Per judge: trajectories judged (of all), items, Abstain share, mean partial credit, items audited."""
    rows = []
    total = len(trajectories)
    for judge, g in stats.groupby("judge", sort=True):
        items = int(g["n_items"].sum())
        rows.append({"judge": judge, "trajectories": f"{len(g)}/{total}", "items": items,
                     "abstain_share": float(g["n_abstain"].sum() / items) if items else None,
                     "mean_partial_credit": float(g["partial_credit"].mean()) if g["partial_credit"].notna().any() else None,
                     "items_audited": f"{int(g['audited'].sum())}/{items}",
                     "auditor_disagreements": int(g["auditor_disagreements"].sum()),
                     "judge_disagreements": int(g["judge_disagreements"].sum())})
    return pd.DataFrame(rows, columns=["judge", "trajectories", "items", "abstain_share", "mean_partial_credit",
                                       "items_audited", "auditor_disagreements", "judge_disagreements"])


def overview_trajectories(trajectories: pd.DataFrame, stats: pd.DataFrame, filters: AuditFilters) -> pd.DataFrame:
    """Trajectories passing `filters`, with one partial-credit column per judge (`pc_<judge>`)."""
    view = audit_list(trajectories, stats, None, filters)
    wide = stats.pivot(index="trajectory_id", columns="judge", values="partial_credit") if len(stats) else None
    if wide is not None:
        wide.columns = [f"pc_{j}" for j in wide.columns]
        view = view.merge(wide, left_on="trajectory_id", right_index=True, how="left")
    drop = ["n_items", "n_yes", "n_no", "n_abstain", "partial_credit", "judge_disagreements", "audited",
            "auditor_disagreements"]
    return view.drop(columns=[c for c in drop if c in view.columns])


def studies_frame(store: Store) -> pd.DataFrame:
    """Per human study: status, raters (simulated or not) and answers in over answers assigned."""
    from annotations.admin import rater_progress  # annotations builds on gcpc_core

    rows = []
    for s in store.studies():
        progress = rater_progress(store, s["id"])
        done, total = sum(r["done"] for r in progress), sum(r["total"] for r in progress)
        rows.append({"study": s["id"], "name": s["name"], "status": s["status"], "raters": len(progress),
                     "simulated": s["is_simulated"], "answers": f"{done}/{total}",
                     "share_done": round(done / total, 3) if total else 1.0})
    return pd.DataFrame(rows, columns=["study", "name", "status", "raters", "simulated", "answers", "share_done"])
