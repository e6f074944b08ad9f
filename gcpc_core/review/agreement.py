"""The agreement dashboard's data: a headline of the main statistics with a plain reading of each,
the analysis report's tables with their captions and "not computed" statements, its figures, and how
item auditors agree with each judge.

Everything statistical is the analysis report's own sections (`analysis.report.report_tables`, the
code `build_report` runs), so the dashboard and `report.html` can never disagree; this module only
reads the headline numbers out of those tables and words them, groups the tables for display, builds
the interactive figures and serialises tables for download. The headline needs two report sections
(`HEADLINE_SECTIONS`); the others — the judge-calibration bootstrap takes seconds — are computed when
the page opens them.

The worded headline is also kept in the project DB (`stored_headline`), keyed by the analysis
parameters, the data version of every table the analysis reads and a fingerprint of the code that
computes it: a fresh app process shows the headline at once instead of recomputing its bootstrap
intervals, and any new judgment, score, audit or human answer makes the stored one stale.
"""

from __future__ import annotations

import functools
import hashlib
import html
import json
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import plotly.graph_objects as go
from pydantic import BaseModel, ValidationError

from ..analysis import bootstrap_auc, few_clusters_note, is_available, roc_data
from ..analysis.ablations import outcome_free_scores
from ..analysis.agreement import HUMAN
from ..analysis.figures import (
    agreement_figure,
    delta_histogram_figure,
    item_change_heatmap,
    roc_figure,
    sensitivity_figure,
)
from ..analysis.report import SECTION_NAMES, report_tables
from ..csv_safe import frame_csv
from ..judge.registry import ordered_judges
from ..project_frames import frames_from_store
from ..store import Store

__all__ = ["ALL_SECTIONS", "ANALYSIS_TABLES", "AUDIT_CAPTION", "DEFAULT_N_BOOT", "HEADLINE_META_PREFIX",
           "HEADLINE_SECTIONS", "REPORT_SECTION", "SECTIONS", "Dashboard", "Headline", "HeadlineView", "audit_agreement",
           "auc_ci_figure", "dashboard", "headline", "headline_view", "section_figures", "stored_headline", "table_bytes"]

SECTIONS: dict[str, tuple[str, ...]] = {
    "Outcome discrimination: AUC vs official PASS": ("judges", "discrimination_auc", "discrimination_delta_auc",
                                                     "discrimination_auc_with_outcome", "discrimination_ctrf_reference"),
    "Agreement with human raters": ("agreement_pairwise", "agreement_spearman", "agreement_alpha"),
    "Skill effects on matched pairs": ("skills_transitions", "skills_item_changes"),
    "Evidence sensitivity": ("sensitivity", "sensitivity_by_kind", "sensitivity_by_task"),
    "Ablations": ("ablation_checklist", "ablation_perfect", "ablation_variant_auc", "ablation_variant_delta"),
    "Item accuracy vs the verifier's CTRF results": ("item_accuracy", "item_confusion", "item_accuracy_by_task"),
    "Judge calibration vs auditors and the verifier": ("calibration", "calibration_by_route", "calibration_by_task",
                                                       "audited_figures"),
}
"""Dashboard sections and the report tables they show, in order."""
REPORT_SECTION: dict[str, str] = {
    "Outcome discrimination: AUC vs official PASS": "discrimination", "Agreement with human raters": "agreement",
    "Skill effects on matched pairs": "skills", "Evidence sensitivity": "sensitivity", "Ablations": "ablations",
    "Item accuracy vs the verifier's CTRF results": "item_accuracy",
    "Judge calibration vs auditors and the verifier": "calibration"}
"""Dashboard section → the report section (`analysis.report.SECTION_NAMES`) that computes its tables."""
HEADLINE_SECTIONS = ("inputs", "discrimination", "agreement")
"""The report sections behind the headline (and the page's "Inputs" table)."""
ALL_SECTIONS = ("inputs", *SECTION_NAMES)
DEFAULT_N_BOOT = 1000
"""Bootstrap draws of the Agreement page's intervals until the reader picks another number."""
ANALYSIS_TABLES = ("judgments", "judge_units", "judge_labels", "scores", "trajectories", "annotations", "checklists",
                   "perturbations", "studies", "study_units", "study_pairs")
"""The store tables the analysis frames are read from (`store.project.data_version` of these dates a result): the
judges' rows and which run of each is the default, the trials, the human answers and the study designs that
give their scales and pair sides."""


@dataclass(frozen=True)
class Dashboard:
    """Tables by report name, statements of what could not be computed, figures by section."""

    tables: dict[str, pd.DataFrame]
    missing: tuple[str, ...]
    figures: dict[str, list[tuple[str, go.Figure]]] = field(default_factory=dict)
    captions: dict[str, str] = field(default_factory=dict)
    """Table name → the report's plain-language caption of it."""
    ci: float = 0.95
    warnings: tuple[str, ...] = ()
    """The report's warnings: what a computed figure cannot be trusted for."""

    def section_tables(self, section: str) -> list[tuple[str, pd.DataFrame]]:
        return [(name, self.tables[name]) for name in SECTIONS[section] if name in self.tables]

    def caption(self, name: str) -> str:
        """The report's caption of table `name` (the name in words when the report gave none)."""
        return self.captions.get(name) or name.replace("_", " ").capitalize()


def auc_ci_figure(aucs: pd.DataFrame) -> go.Figure:
    """Point AUC per judge with its bootstrap confidence interval."""
    fig = go.Figure(go.Scatter(
        x=[html.escape(str(j)) for j in aucs["judge"]], y=aucs["auc"], mode="markers",
        marker={"size": 12},
        error_y={"type": "data", "symmetric": False, "array": aucs["ci_high"] - aucs["auc"],
                 "arrayminus": aucs["auc"] - aucs["ci_low"]}))
    fig.add_hline(y=0.5, line_dash="dot", line_color="grey")
    fig.update_layout(title="AUC vs official PASS of the outcome-free scores, with bootstrap CI", yaxis={"range": [0, 1], "title": "AUC"},
                      height=380)
    return fig


def dashboard(frames: Mapping[str, pd.DataFrame | None], *, sections: Sequence[str] = ALL_SECTIONS, n_boot: int = 1000,
              seed: int = 0, ci: float = 0.95, threshold: float = 0.10, figures: bool = True) -> Dashboard:
    """The analysis report's tables and statements for the report `sections` (every one by default; the page
    asks for `HEADLINE_SECTIONS` first and for one section at a time when it is opened), and, unless
    `figures` is False (the page draws a section's figures only when it is opened, see `section_figures`),
    the figures of the dashboard sections computed."""
    result = report_tables(frames, sections, n_boot=n_boot, seed=seed, ci=ci, threshold=threshold)
    tables = dict(result.tables)
    drawn = {s: section_figures(s, tables, frames, n_boot=n_boot, seed=seed, ci=ci) if figures else []
             for s in SECTIONS if REPORT_SECTION[s] in sections}
    return Dashboard(tables=tables, missing=result.missing, figures=drawn, captions=dict(result.captions), ci=ci,
                     warnings=result.warnings)


def section_figures(section: str, tables: Mapping[str, pd.DataFrame], frames: Mapping[str, pd.DataFrame | None], *,
                    n_boot: int = 1000, seed: int = 0, ci: float = 0.95) -> list[tuple[str, go.Figure]]:
    """The interactive figures of one dashboard section, from the report's tables (and, for the ROC
    curves, the outcome-free scores the report's AUC reads, bootstrapped again with the same seed)."""
    out: list[tuple[str, go.Figure]] = []
    if section == "Outcome discrimination: AUC vs official PASS":
        aucs = tables.get("discrimination_auc")
        if aucs is not None and aucs["auc"].notna().any():
            out.append(("AUC with CI", auc_ci_figure(aucs)))
            free, _ = outcome_free_scores(frames["scores"], frames.get("items"))  # type: ignore[arg-type]
            judges = list(aucs["judge"])  # the report's: judges with an outcome-free score
            curves, bands = roc_data(bootstrap_auc(free, judges, n_boot=n_boot, seed=seed), ci=ci)
            if len(curves):
                out.append(("ROC", roc_figure(curves, bands, aucs)))
    elif section == "Agreement with human raters":
        if is_available(tables.get("agreement_pairwise")):
            out.append(("Pairwise agreement", agreement_figure(tables["agreement_pairwise"])))
    elif section == "Skill effects on matched pairs":
        if is_available(tables.get("skills_pairs")):
            out.append(("Δ by transition", delta_histogram_figure(tables["skills_pairs"])))
        changes = tables.get("skills_item_changes")
        if is_available(changes):
            for judge in ordered_judges(changes["judge"].unique()):  # type: ignore[index]
                out.append((f"Item changes ({judge})", item_change_heatmap(changes, judge)))  # type: ignore[arg-type]
    elif section == "Evidence sensitivity":
        sensitivity = tables.get("sensitivity")
        if is_available(sensitivity) and sensitivity["n"].gt(0).any():  # type: ignore[index]
            out.append(("Perturbed Yes items judged No", sensitivity_figure(sensitivity)))
    return out


# ---------------------------------------------------------------- the headline


@dataclass(frozen=True)
class Headline:
    """One headline statistic: what it is, its value (with CI where there is one) and a plain reading."""

    statistic: str
    value: str
    reading: str


def _num(value: object) -> float | None:
    try:
        out = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return None if out != out else out


def _interval(low: object, high: object, digits: int = 2) -> str:
    lo, hi = _num(low), _num(high)
    return "" if lo is None or hi is None else f" [{lo:.{digits}f}, {hi:.{digits}f}]"


def _why_not(dash: Dashboard, *words: str) -> str:
    """The report's statement of why a statistic is missing (the first mentioning one of `words`)."""
    hit = next((m for m in dash.missing if any(w.lower() in m.lower() for w in words)), None)
    hit = hit or "not computed: the project's data do not allow it yet"
    return hit[0].upper() + hit[1:]


def _rows(table: pd.DataFrame | None) -> list[dict]:
    return [] if not is_available(table) else table.to_dict("records")  # type: ignore[union-attr]


def _flagged(reading: str, n_tasks: object) -> str:
    """`reading`, led by the flag of an interval over too few tasks (`analysis.few_clusters_note`)."""
    flag = few_clusters_note(int(n_tasks)) if _num(n_tasks) is not None else ""
    return f"{flag[0].upper()}{flag[1:]}. {reading}" if flag else reading


RESTATES_OUTCOME = "only restates the official outcome"
"""Words of the report's warning on a judge whose raw verdicts decide nothing (`analysis.outcome_only_warnings`)."""


def _with_outcome(dash: Dashboard) -> dict[str, float]:
    """Judge → AUC of its stored (postprocessed) partial credit on the trajectories of its headline AUC."""
    rows = _rows(dash.tables.get("discrimination_auc_with_outcome"))
    return {r["judge"]: v for r in rows if r["variant"] == "full" and (v := _num(r["auc"])) is not None}


def _auc_lines(dash: Dashboard) -> list[Headline]:
    rows = _rows(dash.tables.get("discrimination_auc"))
    if not rows:
        restated = next((w for w in dash.warnings if RESTATES_OUTCOME in w), None)
        if restated:
            return [Headline("AUC vs official PASS", "no evidence", restated[0].upper() + restated[1:])]
        return [Headline("AUC vs official PASS", "not computed", _why_not(dash, "so no AUC", "no judge scores"))]
    postprocessed = _with_outcome(dash)
    out = []
    for r in rows:
        auc = _num(r["auc"])
        if auc is None:
            out.append(Headline(f"AUC · {r['judge']}", "n/a", r.get("note") or "not computable on these trajectories"))
            continue
        lo, hi = _num(r["ci_low"]), _num(r["ci_high"])
        versus = ("" if lo is None or hi is None else
                  "; the interval lies above chance" if lo > 0.5 else
                  "; the interval lies below chance" if hi < 0.5 else "; the interval includes chance (0.5)")
        basis = ("From the judge's raw verdicts, which never read the official outcome. "
                 if str(r.get("score", "")).startswith("partial credit of raw verdicts") else
                 "From the judge's own score. " if r.get("score") else "")
        full = postprocessed.get(r["judge"])
        beside = ("" if full is None else
                  f" Its postprocessed partial credit reads {full:.3f} on the same trajectories, but it contains the "
                  "official outcome: no evidence.")
        out.append(Headline(
            f"AUC · {r['judge']}", f"{auc:.3f}{_interval(r['ci_low'], r['ci_high'], 3)}",
            _flagged(f"{basis}A PASS run outscores a FAIL run {auc:.0%} of the time (0.5 = chance, 1 = always){versus}; "
                     f"{r['n']} trajectories of {r['n_tasks']} tasks.{beside}", r.get("n_tasks"))))
    return out


def _delta_lines(dash: Dashboard) -> list[Headline]:
    rows = _rows(dash.tables.get("discrimination_delta_auc"))
    if not rows:
        return [Headline("Paired ΔAUC", "not computed", _why_not(dash, "ΔAUC"))]
    out = []
    for r in rows:
        a, b, delta = r["judge_a"], r["judge_b"], _num(r["delta_auc"])
        if delta is None:
            out.append(Headline(f"ΔAUC · {a} − {b}", "n/a", r.get("note") or "not computable"))
            continue
        lo, hi = _num(r["ci_low"]), _num(r["ci_high"])
        clear = lo is not None and hi is not None and (lo > 0 or hi < 0)
        better = a if delta > 0 else b
        reading = (f"{better} separates PASS from FAIL better, by {abs(delta):.3f} AUC on the same trajectories; "
                   + ("the interval excludes 0: a clear difference." if clear else
                      "the interval includes 0: no clear difference."))
        out.append(Headline(f"ΔAUC · {a} − {b}", f"{delta:+.3f}{_interval(lo, hi, 3)}", _flagged(reading, r.get("n_tasks"))))
    return out


def _pairwise_lines(dash: Dashboard) -> list[Headline]:
    rows = _rows(dash.tables.get("agreement_pairwise"))
    if not rows:
        return [Headline("Pairwise agreement", "not computed", _why_not(dash, "pairwise", "human study"))]
    out = []
    for r in rows:
        share, n = _num(r["agreement_with_ties"]), r["n_votes_with_ties"]
        without = _num(r["agreement_without_ties"])
        if share is None:
            out.append(Headline(f"Pairwise agreement · {r['judge']}", "n/a", r.get("note") or "no votes to compare"))
            continue
        rest = f"; {without:.0%} when ties are left out" if without is not None else ""
        if r["judge"] == HUMAN:
            reading = (f"Two human raters pick the same side of a pair in {share:.0%} of {n} comparisons{rest}: "
                       "about the most a judge can be expected to reach.")
            label = "Pairwise agreement · humans with each other"
        else:
            reading = f"Picks the same side of a pair as a human rater in {share:.0%} of {n} votes{rest}."
            label = f"Pairwise agreement · {r['judge']}"
        out.append(Headline(label, f"{share:.0%}", reading))
    return out


def _strength(rho: float) -> str:
    size = abs(rho)
    return ("no" if size < 0.1 else "a weak" if size < 0.3 else "a moderate" if size < 0.5 else "a strong")


def _spearman_lines(dash: Dashboard) -> list[Headline]:
    rows = _rows(dash.tables.get("agreement_spearman"))
    if not rows:
        return [Headline("Spearman ρ", "not computed", _why_not(dash, "Spearman", "human study"))]
    out = []
    for r in rows:
        rho = _num(r["rho"])
        if rho is None:
            out.append(Headline(f"Spearman ρ · {r['judge']}", "n/a", r.get("note") or "not computable"))
            continue
        direction = "higher" if rho >= 0 else "lower"
        out.append(Headline(
            f"Spearman ρ · {r['judge']}", f"{rho:.2f}{_interval(r['ci_low'], r['ci_high'])}",
            _flagged(f"{_strength(rho).capitalize()} rank correlation: runs the judge scores higher get {direction} "
                     f"human progress ratings ({r['n']} trajectories).", r.get("n_tasks"))))
    return out


def _reliability(alpha: float) -> str:
    """Krippendorff's conventional thresholds."""
    if alpha >= 0.8:
        return "reliable (≥ 0.8)"
    if alpha >= 0.667:
        return "good enough for tentative conclusions only (0.667–0.8)"
    return "too low to rely on (< 0.667)"


def _alpha_lines(dash: Dashboard) -> list[Headline]:
    rows = _rows(dash.tables.get("agreement_alpha"))
    if not rows:
        return [Headline("Krippendorff's α", "not computed", _why_not(dash, "α", "human study"))]
    humans = {r["data"]: _num(r["alpha"]) for r in rows if r["coders"] == "humans"}
    what = {"ratings": "progress ratings", "preferences": "pairwise preferences"}
    out = []
    for r in rows:
        alpha, data = _num(r["alpha"]), what.get(r["data"], r["data"])
        label = f"α · {data} · {r['coders']}"
        if alpha is None:
            out.append(Headline(label, "n/a", r.get("note") or "not computable"))
        elif r["coders"] == "humans":
            out.append(Headline(label, f"{alpha:.2f}", f"Humans' {data} agree beyond chance at α = {alpha:.2f}: "
                                                        f"{_reliability(alpha)}; 0 = chance, 1 = perfect."))
        else:
            base = humans.get(r["data"])
            effect = ("" if base is None else
                      f"; α {'falls' if alpha < base else 'rises'} from {base:.2f} with the humans alone, so the judge "
                      f"{'disagrees with them more' if alpha < base else 'agrees with them at least as well'} "
                      "than they do with each other")
            out.append(Headline(label, f"{alpha:.2f}", f"With the judge counted as one more rater{effect}."))
    return out


def headline(dash: Dashboard) -> list[Headline]:
    """The statistics the page leads with, in order: AUC per judge with its CI, paired ΔAUC, pairwise
    agreement, Spearman ρ and Krippendorff's α, each with a one-line reading; a statistic the data do not
    allow yet says why instead."""
    return [*_auc_lines(dash), *_delta_lines(dash), *_pairwise_lines(dash), *_spearman_lines(dash),
            *_alpha_lines(dash)]


# ---------------------------------------------------------------- the headline, kept in the project DB


@dataclass(frozen=True)
class HeadlineView:
    """What the Agreement page leads with: the headline lines, the statements of what was not computed,
    the interval level, how many human answers came from simulated raters, and the report's warnings."""

    lines: tuple[Headline, ...]
    missing: tuple[str, ...]
    ci: float
    simulated_answers: int
    warnings: tuple[str, ...] = ()


class _StoredHeadline(BaseModel):
    """A `HeadlineView` as kept in the project's `meta` table, with the key it was computed for."""

    key: str
    lines: list[tuple[str, str, str]]
    missing: list[str]
    ci: float
    simulated_answers: int
    warnings: list[str] = []


HEADLINE_META_PREFIX = "analysis_headline:"
"""`meta` keys of stored headlines: this prefix and a hash of the analysis parameters (one entry per
parameter set, overwritten when it is stale)."""
_CODE_ROOTS = (Path(__file__).resolve().parents[1], Path(__file__).resolve().parents[2] / "annotations")
"""The packages whose code computes the headline (analysis, loaders, judge exports, study frames, this module)."""


@functools.cache
def _code_fingerprint() -> str:
    """A hash of every source file of `_CODE_ROOTS`: a headline stored by other code is never shown."""
    digest = hashlib.sha256()
    for root in _CODE_ROOTS:
        for path in sorted(root.rglob("*.py")):
            digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def headline_view(frames: Mapping[str, pd.DataFrame], *, n_boot: int = 1000, seed: int = 0) -> HeadlineView:
    """The headline of `frames` (`gcpc_core.project_frames.frames_from_store`'s), computed: the report's
    `HEADLINE_SECTIONS`."""
    dash = dashboard(frames, sections=HEADLINE_SECTIONS, n_boot=n_boot, seed=seed, figures=False)
    simulated = sum(int(frames[n]["simulated"].sum()) for n in ("ratings", "preferences"))
    return HeadlineView(lines=tuple(headline(dash)), missing=dash.missing, ci=dash.ci, simulated_answers=simulated,
                        warnings=dash.warnings)


def stored_headline(store: Store, n_boot: int = DEFAULT_N_BOOT, seed: int = 0, include_simulated: bool = True,
                    labels: Mapping[str, str] | None = None, *,
                    load_frames: Callable[..., Mapping[str, pd.DataFrame]] = frames_from_store) -> HeadlineView:
    """The headline of the project's analysis (over each judge's default run unless `labels` chooses
    another), read from the project DB when it was stored for these parameters, this data version and
    this code; else computed, from the frames `load_frames` reads (the app's cached ones), and stored. A DB
    that cannot be written (read-only) still gets its headline, computed each time; an entry that does not
    parse is recomputed and replaced."""
    params = json.dumps({"n_boot": n_boot, "seed": seed, "include_simulated": include_simulated,
                         "labels": sorted((labels or {}).items())}, sort_keys=True)
    slot = HEADLINE_META_PREFIX + hashlib.sha256(params.encode()).hexdigest()[:16]
    # the version is read before computing: data written meanwhile leave a stale key, recomputed next time
    key = hashlib.sha256("\n".join((params, store.project.data_version(*ANALYSIS_TABLES), _code_fingerprint())).encode()).hexdigest()
    raw = store.project.get_meta(slot)
    if raw is not None:
        try:
            kept = _StoredHeadline.model_validate_json(raw)
        except ValidationError:
            kept = None
        if kept is not None and kept.key == key:
            return HeadlineView(lines=tuple(Headline(*line) for line in kept.lines), missing=tuple(kept.missing),
                                ci=kept.ci, simulated_answers=kept.simulated_answers, warnings=tuple(kept.warnings))
    view = headline_view(load_frames(store, include_simulated=include_simulated, labels=labels),
                         n_boot=n_boot, seed=seed)
    entry = _StoredHeadline(key=key, lines=[(h.statistic, h.value, h.reading) for h in view.lines],
                            missing=list(view.missing), ci=view.ci, simulated_answers=view.simulated_answers,
                            warnings=list(view.warnings))
    try:
        store.project.set_meta(slot, entry.model_dump_json())
    except sqlite3.OperationalError:  # a read-only project: shown, not kept
        pass
    return view


AUDIT_CAPTION = "Item auditors vs judges: current audits of each judge's raw item verdicts, per route"

AUDIT_COLUMNS = ["judge", "route", "audited_items", "reviewers", "agree", "disagree", "agreement",
                 "corrected_to_yes", "corrected_to_no", "corrected_to_abstain"]


def audit_agreement(store: Store) -> pd.DataFrame:
    """How item auditors agree with each judge's raw verdicts, per judge and route (current audits)."""
    routes = {(r.trajectory_id, r.judge, r.item_id): r.route for r in store.judging.judgments()}
    rows = [{"judge": a.judge, "route": routes.get((a.trajectory_id, a.judge, a.item_id), "?"),
             "target": a.target, "rater": a.rater, "agree": bool(a.value["agree"]),
             "verdict": a.value["verdict"]} for a in store.annotations.list(kind="item_audit")]
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
