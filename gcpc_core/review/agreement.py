"""The agreement dashboard's data: the analysis report's tables and plain "not computed" statements,
its figures, and how item auditors agree with each judge.

Everything statistical is `analysis.build_report` (written to a scratch folder and read back as
tables), so the dashboard and `report.html` can never disagree; this module only groups the tables
for display, builds the interactive figures and serialises tables for download.
"""

from __future__ import annotations

import html
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import plotly.graph_objects as go

from ..analysis import bootstrap_auc, build_report, is_available, ordered_judges, roc_data
from ..analysis.figures import (
    agreement_figure,
    delta_histogram_figure,
    item_change_heatmap,
    roc_figure,
    sensitivity_figure,
)
from ..csv_safe import frame_csv
from ..store import Store

__all__ = ["SECTIONS", "Dashboard", "audit_agreement", "auc_ci_figure", "dashboard", "table_bytes"]

SECTIONS: dict[str, tuple[str, ...]] = {
    "Outcome discrimination: AUC vs official PASS": ("judges", "discrimination_auc", "discrimination_delta_auc",
                                                     "discrimination_ctrf_reference"),
    "Agreement with human raters": ("agreement_pairwise", "agreement_spearman", "agreement_alpha"),
    "Skill effects on matched pairs": ("skills_transitions", "skills_item_changes"),
    "Evidence sensitivity": ("sensitivity", "sensitivity_by_kind", "sensitivity_by_task"),
    "Ablations": ("ablation_checklist", "ablation_perfect", "ablation_variant_auc", "ablation_variant_delta"),
    "Item accuracy vs the verifier's CTRF results": ("item_accuracy", "item_confusion", "item_accuracy_by_task"),
}
"""Dashboard sections and the report tables they show, in order."""


@dataclass(frozen=True)
class Dashboard:
    """Tables by report name, statements of what could not be computed, figures by section."""

    tables: dict[str, pd.DataFrame]
    missing: tuple[str, ...]
    figures: dict[str, list[tuple[str, go.Figure]]] = field(default_factory=dict)

    def section_tables(self, section: str) -> list[tuple[str, pd.DataFrame]]:
        return [(name, self.tables[name]) for name in SECTIONS[section] if name in self.tables]


def auc_ci_figure(aucs: pd.DataFrame) -> go.Figure:
    """Point AUC per judge with its bootstrap confidence interval."""
    fig = go.Figure(go.Scatter(
        x=[html.escape(str(j)) for j in aucs["judge"]], y=aucs["auc"], mode="markers",
        marker={"size": 12},
        error_y={"type": "data", "symmetric": False, "array": aucs["ci_high"] - aucs["auc"],
                 "arrayminus": aucs["auc"] - aucs["ci_low"]}))
    fig.add_hline(y=0.5, line_dash="dot", line_color="grey")
    fig.update_layout(title="AUC vs official PASS with bootstrap CI", yaxis={"range": [0, 1], "title": "AUC"},
                      height=380)
    return fig


def dashboard(frames: Mapping[str, pd.DataFrame | None], *, n_boot: int = 1000, seed: int = 0, ci: float = 0.95,
              threshold: float = 0.10) -> Dashboard:
    """Run the analysis report on `frames` and gather its tables, statements and figures."""
    with tempfile.TemporaryDirectory(prefix="gcpc-dashboard-") as out:
        result = build_report(frames, Path(out), n_boot=n_boot, seed=seed, ci=ci, threshold=threshold, figures=False)
    tables = dict(result.tables)
    figures: dict[str, list[tuple[str, go.Figure]]] = {s: [] for s in SECTIONS}
    aucs = tables.get("discrimination_auc")
    if aucs is not None and aucs["auc"].notna().any():
        figures["Outcome discrimination: AUC vs official PASS"].append(("AUC with CI", auc_ci_figure(aucs)))
        curves, bands = roc_data(bootstrap_auc(frames["scores"], n_boot=n_boot, seed=seed), ci=ci)  # type: ignore[arg-type]
        if len(curves):
            figures["Outcome discrimination: AUC vs official PASS"].append(("ROC", roc_figure(curves, bands, aucs)))
    if is_available(tables.get("agreement_pairwise")):
        figures["Agreement with human raters"].append(
            ("Pairwise agreement", agreement_figure(tables["agreement_pairwise"])))
    if is_available(tables.get("skills_pairs")):
        figures["Skill effects on matched pairs"].append(("Δ by transition", delta_histogram_figure(tables["skills_pairs"])))
    changes = tables.get("skills_item_changes")
    if is_available(changes):
        for judge in ordered_judges(changes["judge"].unique()):  # type: ignore[index]
            figures["Skill effects on matched pairs"].append(
                (f"Item changes ({judge})", item_change_heatmap(changes, judge)))  # type: ignore[arg-type]
    sensitivity = tables.get("sensitivity")
    if is_available(sensitivity) and sensitivity["n"].gt(0).any():  # type: ignore[index]
        figures["Evidence sensitivity"].append(("Perturbed Yes items judged No", sensitivity_figure(sensitivity)))
    return Dashboard(tables=tables, missing=result.missing, figures=figures)


AUDIT_COLUMNS = ["judge", "route", "audited_items", "reviewers", "agree", "disagree", "agreement",
                 "corrected_to_yes", "corrected_to_no", "corrected_to_abstain"]


def audit_agreement(store: Store) -> pd.DataFrame:
    """How item auditors agree with each judge's raw verdicts, per judge and route (current audits)."""
    routes = {(r["trajectory_id"], r["judge"], r["item_id"]): r["route"] for r in store.judgments()}
    rows = [{"judge": a["judge"], "route": routes.get((a["trajectory_id"], a["judge"], a["item_id"]), "?"),
             "target": a["target"], "rater": a["rater"], "agree": bool(a["value"]["agree"]),
             "verdict": a["value"]["verdict"]} for a in store.annotations(kind="item_audit")]
    if not rows:
        return pd.DataFrame(columns=AUDIT_COLUMNS)
    frame = pd.DataFrame(rows)
    out = []
    for (judge, route), g in frame.groupby(["judge", "route"], sort=True):
        out.append({"judge": judge, "route": route, "audited_items": g["target"].nunique(),
                    "reviewers": g["rater"].nunique(), "agree": int(g["agree"].sum()),
                    "disagree": int((~g["agree"]).sum()), "agreement": float(g["agree"].mean()),
                    **{f"corrected_to_{v.lower()}": int((g["verdict"] == v).sum()) for v in ("Yes", "No", "Abstain")}})
    return pd.DataFrame(out, columns=AUDIT_COLUMNS)


def table_bytes(frame: pd.DataFrame, fmt: str) -> bytes:
    """A table as CSV or JSONL bytes for a download button."""
    if fmt == "csv":
        return frame_csv(frame).encode("utf-8")
    if fmt == "jsonl":
        return frame.to_json(orient="records", lines=True, force_ascii=False, default_handler=str).encode("utf-8")
    raise ValueError(f"unknown format {fmt!r}; csv or jsonl")
