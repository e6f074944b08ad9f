"""The analysis report: every statistic the available frames allow, as report.md, report.html and CSVs.

`build_report` takes the frames described in `frames` (any may be absent or empty) and writes:

* ``report.md`` — sections per research question, tables (long ones truncated, pointing at
  their CSV), and a plain statement of everything that could not be computed and why. Every data-derived
  string is Markdown-escaped (`text.md_escape`): a run label or judge name holding image or link
  syntax shows as text;
* ``report.html`` — the same content, standalone (plotly.js inlined once), with figures: ROC
  curves with bootstrap bands, Δ histograms per transition, agreement bars, item-change heatmaps.
  Every data-derived string is HTML-escaped;
* one CSV per table, including the per-trajectory / per-vote / per-item inputs of each
  statistic, so any number can be recomputed from its inputs; text cells are neutralised against
  spreadsheet formula injection (`gcpc_core.csv_safe`).

Both documents are rendered from one list of blocks, so they cannot drift apart.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ..csv_safe import frame_csv
from ..text import md_escape
from .ablations import (
    DECIDED_COLUMNS,
    POSTPROCESSED_VARIANTS,
    VARIANTS,
    item_decided_counts,
    item_judges_of,
    outcome_free_scores,
    outcome_only_warnings,
    perfect_agreement,
    score_variants,
)
from .agreement import (
    REJECTED_COLUMNS,
    alpha_table,
    pairwise_agreement,
    preference_votes,
    spearman_table,
    usable_preferences,
    usable_ratings,
)
from .audits import selection_note
from .bootstrap import RELIABLE_CLUSTERS, distinct_resamples, few_clusters_note
from .calibration import CALIBRATION_BOOT, audited_figures, calibration_table, reference_labels
from .discrimination import auc_table, bootstrap_auc, delta_auc_table, roc_data
from .figures import agreement_figure, delta_histogram_figure, item_change_heatmap, roc_figure, sensitivity_figure
from .frames import JudgeOrder, is_available, judge_order_of, require_columns, trajectory_outcomes
from .item_accuracy import (assertion_truth, confusion_table, ctrf_pass_fraction, decided_by_verifier,
                            item_accuracy_table)
from .sensitivity import sensitivity_table
from .skills import item_changes, matched_pairs, transition_table

__all__ = ["FRAME_NAMES", "SECTION_NAMES", "ReportResult", "ReportTables", "build_report", "report_tables"]

FRAME_NAMES = ("scores", "items", "ctrf", "ratings", "preferences", "perturbations", "audits")
CTRF_REFERENCE = "ctrf_pass_fraction (reference)"


@dataclass(frozen=True)
class ReportResult:
    """What `build_report` wrote and computed."""

    out_dir: Path
    markdown: Path
    html: Path
    csv: dict[str, Path]
    """Table name → CSV path."""
    tables: dict[str, pd.DataFrame]
    """Every computed table, by the name of its CSV (without `.csv`)."""
    missing: tuple[str, ...]
    """Plain statements of what could not be computed, and why."""
    figures: tuple[str, ...]
    """Titles of the figures embedded in the HTML (empty when figures were off)."""
    captions: dict[str, str] = field(default_factory=dict)
    """Table name → the plain-language caption the report prints above it."""
    warnings: tuple[str, ...] = ()
    """Plain statements of what a computed figure cannot be trusted for (intervals over too few tasks, scores
    that only restate the official outcome)."""


# ---------------------------------------------------------------- blocks, rendered to both formats


@dataclass(frozen=True)
class _Heading:
    text: str
    level: int = 2


@dataclass(frozen=True)
class _Text:
    text: str


@dataclass(frozen=True)
class _Missing:
    text: str


@dataclass(frozen=True)
class _Warning:
    text: str


@dataclass(frozen=True)
class _Table:
    name: str
    frame: pd.DataFrame
    caption: str
    max_rows: int = 25
    show: bool = True
    """False: written as CSV and mentioned, not rendered (raw inputs of a statistic)."""
    display: pd.DataFrame | None = field(default=None)
    """Rows to show when truncating, if not the first ones (e.g. largest effects)."""


@dataclass(frozen=True)
class _Figure:
    figure: go.Figure
    caption: str


Block = _Heading | _Text | _Missing | _Warning | _Table | _Figure


@dataclass(frozen=True)
class _Settings:
    n_boot: int
    seed: int
    ci: float
    threshold: float
    judges: tuple[str, ...] | None
    figures: bool
    rating_scale: tuple[int, int] | None
    order: JudgeOrder
    """The judges' display order, item judges and ablation pair, from the frames (`judge_order_of`)."""
    memo: dict[str, object] = field(default_factory=dict, compare=False, repr=False)
    """What one report run computes once for several sections (the outcome-free scores, the score variants)."""


def _fmt(value: object) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA:
        return "—"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def _shown(t: _Table) -> pd.DataFrame:
    source = t.display if t.display is not None else t.frame
    return source.head(t.max_rows)


def _truncation(t: _Table) -> str:
    n = len(t.frame)
    if not t.show:
        return f"{n} rows in `{t.name}.csv`."
    if n > t.max_rows:
        return f"Showing {t.max_rows} of {n} rows; full table in `{t.name}.csv`."
    return f"`{t.name}.csv`"


_CODE_SPAN = re.compile(r"(`+)(?!`).*?(?<!`)\1(?!`)")


def _md(text: str) -> str:
    """A data value (a table cell) for Markdown, shown literally by any viewer and still readable raw: what acts
    inside a line escaped (links, images, emphasis, HTML, entities; `md_escape`, on one line, uncut), and a pipe
    inside a code span escaped too, as GFM tables need."""
    return re.sub(r"(?<!\\)\|", r"\\|", md_escape(text, limit=None, mid_line=True))


def _md_prose(text: str) -> str:
    """The report's own sentences, which quote commands in code spans and hold data values (judge names, run
    labels): the code spans kept, everything else escaped as a data value is (`_md`), spaces around kept."""
    out, done = [], 0
    for span in [*_CODE_SPAN.finditer(text), None]:
        piece = text[done : span.start() if span else len(text)]
        if piece.strip():
            out.append((" " if piece[0].isspace() else "") + _md(piece) + (" " if piece[-1].isspace() else ""))
        else:
            out.append(" " if piece else "")
        if span:
            out.append(span.group())
            done = span.end()
    return "".join(out)


def _md_table(frame: pd.DataFrame) -> str:
    def cell(v: object) -> str:
        shown = _fmt(v)
        return shown if isinstance(v, (int, float, np.number)) or shown == "—" else _md(shown)  # numbers: no markup

    head = "| " + " | ".join(map(cell, frame.columns)) + " |"
    rule = "| " + " | ".join("---" for _ in frame.columns) + " |"
    body = ["| " + " | ".join(cell(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join([head, rule, *body])


def _render_markdown(title: str, blocks: Sequence[Block]) -> str:
    out = [f"# {_md_prose(title)}"]
    for b in blocks:
        if isinstance(b, _Heading):
            out.append(f"{'#' * b.level} {_md_prose(b.text)}")
        elif isinstance(b, _Text):
            out.append(_md_prose(b.text))
        elif isinstance(b, _Missing):
            out.append(f"> **Not computed:** {_md_prose(b.text)}")
        elif isinstance(b, _Warning):
            out.append(f"> **Warning:** {_md_prose(b.text)}")
        elif isinstance(b, _Table):
            out.append(f"**{_md_prose(b.caption)}** — {_truncation(b)}")
            if b.show and len(b.frame):
                out.append(_md_table(_shown(b)))
        elif isinstance(b, _Figure):
            out.append(f"*Figure: {_md_prose(b.caption)} (interactive in report.html).*")
    return "\n\n".join(out) + "\n"


_CSS = """body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;font-size:13px;margin:.5em 0 1.5em}
th,td{border:1px solid #ccc;padding:3px 7px;text-align:right}th{background:#f3f3f3}
td:first-child,th:first-child{text-align:left}
.missing{background:#fff6e0;border-left:4px solid #e0a000;padding:.5em 1em}
.warning{background:#fdecea;border-left:4px solid #c0392b;padding:.5em 1em}
.caption{font-weight:600;margin-top:1.2em}.note{color:#666;font-size:12px}"""


def _render_html(title: str, blocks: Sequence[Block]) -> str:
    esc = html.escape
    out = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{esc(title)}</title>",
           f"<style>{_CSS}</style></head><body>",
           f"<h1>{esc(title)}</h1>"]
    plotly_js = True
    for b in blocks:
        if isinstance(b, _Heading):
            out.append(f"<h{b.level}>{esc(b.text)}</h{b.level}>")
        elif isinstance(b, _Text):
            out.append(f"<p>{esc(b.text)}</p>")
        elif isinstance(b, _Missing):
            out.append(f"<p class='missing'><b>Not computed:</b> {esc(b.text)}</p>")
        elif isinstance(b, _Warning):
            out.append(f"<p class='warning'><b>Warning:</b> {esc(b.text)}</p>")
        elif isinstance(b, _Table):
            out.append(f"<p class='caption'>{esc(b.caption)}</p><p class='note'>{esc(_truncation(b))}</p>")
            if b.show and len(b.frame):
                shown = _shown(b).map(_fmt)
                out.append(shown.to_html(index=False, escape=True, border=0))
        elif isinstance(b, _Figure):
            out.append(b.figure.to_html(full_html=False, include_plotlyjs=plotly_js, default_width="100%"))
            out.append(f"<p class='note'>{esc(b.caption)}</p>")
            plotly_js = False
    out.append("</body></html>")
    return "\n".join(out)


# ---------------------------------------------------------------- sections


def _outcomes(frames: Mapping[str, pd.DataFrame]) -> pd.DataFrame | None:
    for name in ("scores", "items"):
        if name in frames:
            return trajectory_outcomes(frames[name], name)
    return None


def _inputs(frames: Mapping[str, pd.DataFrame], given: Mapping[str, pd.DataFrame | None], st: _Settings
            ) -> list[Block]:
    rows = [{"frame": n, "rows": len(given[n]) if given.get(n) is not None else 0,
             "status": "used" if n in frames else "absent or empty",
             "columns": ", ".join(map(str, given[n].columns)) if given.get(n) is not None else ""} for n in FRAME_NAMES]
    blocks: list[Block] = [_Heading("Inputs"), _Table("inputs", pd.DataFrame(rows), "Input frames")]
    outcomes = _outcomes(frames)
    n_tasks = outcomes["task"].nunique() if outcomes is not None else 0
    if few_clusters_note(n_tasks):
        blocks.append(_Warning(f"only {n_tasks} tasks: every task-clustered interval in this report (AUC, ΔAUC, "
                               f"Spearman ρ, evidence sensitivity, calibration, audited figures) is unreliable. "
                               f"{n_tasks} tasks give {distinct_resamples(n_tasks)} distinct task resamples however "
                               f"many draws are made, and a cluster bootstrap over fewer than {RELIABLE_CLUSTERS} "
                               "tasks understates the spread; read the intervals as a rough range at best."))
    unscored = given["scores"].attrs.get("unscored_trials", 0) if given.get("scores") is not None else 0
    if unscored:
        blocks.append(_Text(f"{unscored} unscored trial(s) (no recorded reward) are left out of every outcome statistic."))
    if "scores" in frames:
        s = frames["scores"]
        require_columns(s, ("trajectory_id", "task", "judge", "partial_credit"), "scores")
        per = (s.groupby("judge").agg(trajectories=("trajectory_id", "nunique"), tasks=("task", "nunique"),
                                      scored=("partial_credit", lambda x: int(x.notna().sum())))
               .reindex(st.order.ordered(s["judge"].unique())).reset_index())
        caption = "Judges: trajectories with a row, tasks, trajectories with a score"
        if "label" in s.columns:  # which labelled run of each judge the report reads (`report --run` chooses)
            names = given["scores"].attrs.get("run_names", {})  # judge → label → readable name, from the loader
            runs = s.dropna(subset=["label"]).drop_duplicates(["judge", "label"]).sort_values("label")
            runs = runs.assign(run=[names.get(j, {}).get(lab, lab) for j, lab in zip(runs["judge"], runs["label"])])
            joined = runs.groupby("judge").agg(run=("run", ", ".join), label=("label", ", ".join))
            per.insert(1, "run", per["judge"].map(joined["run"]))
            per.insert(2, "label", per["judge"].map(joined["label"]))
            caption += ", and the labelled judge run read (judge · model · prompt version · date; its full label)"
        blocks.append(_Table("judges", per, caption))
        blocks.append(_Text("Scores per trajectory and judge: partial credit = Yes / (Yes + No) over the postprocessed "
                            "verdicts (official PASS sets assertion items to Yes; FAIL adds an endpoint item judged No); "
                            "evidence coverage = (Yes + No) / items over the raw verdicts, before postprocessing, since "
                            "a verdict the official outcome filled in has no log evidence of its own."))
    return blocks


MIN_SCORED_PER_CLASS = 5
"""Fewer PASS or FAIL trajectories with an outcome-free score than this make a judge's AUC meaningless: it
compares a handful of runs."""
MIN_DECIDED_SHARE = 0.2
"""A judge deciding fewer of its items than this from log evidence has an outcome-free score resting on few
verdicts: the report warns."""
SCORE_BASIS = {True: "partial credit of raw verdicts (outcome-free)", False: "own score (no item verdicts)"}


def _outcome_free(frames: Mapping[str, pd.DataFrame], st: _Settings) -> tuple[pd.DataFrame, list[str], list[str]]:
    """The outcome-free scores RQ1 is computed from (`ablations.outcome_free_scores`), the compared judges that
    have one, and the item judges lacking item verdicts; computed once per report run."""
    if "outcome_free" not in st.memo:
        st.memo["outcome_free"] = outcome_free_scores(frames["scores"], frames.get("items"), st.order)
    free, lacking = st.memo["outcome_free"]  # type: ignore[misc]
    present = st.order.ordered(free["judge"].unique())
    wanted = [j for j in (st.judges if st.judges is not None else present) if j not in lacking]
    scored = set(free.loc[free["partial_credit"].notna(), "judge"])
    return free, [j for j in wanted if j in scored], lacking


def _evidence_warnings(free: pd.DataFrame, frames: Mapping[str, pd.DataFrame], judges: Sequence[str],
                       item_judges: Sequence[str]) -> tuple[list[Block], pd.DataFrame]:
    """Warnings on judges whose raw verdicts decide too little for an AUC, and their decided counts per judge."""
    items = frames.get("items")
    counts = (item_decided_counts(items[items["judge"].isin(item_judges)]) if items is not None and len(item_judges)
              else pd.DataFrame(columns=DECIDED_COLUMNS))
    blocks: list[Block] = [_Warning(w) for w in outcome_only_warnings(counts)]
    for judge in judges:
        own = free[(free["judge"] == judge) & free["partial_credit"].notna()]
        n_pass, n_fail = int((own["outcome"] == "PASS").sum()), int((own["outcome"] == "FAIL").sum())
        if min(n_pass, n_fail) < MIN_SCORED_PER_CLASS:
            blocks.append(_Warning(f"judge {judge} has an outcome-free score on only {n_pass} PASS and {n_fail} FAIL "
                                   f"trajectories (fewer than {MIN_SCORED_PER_CLASS} of a class): too few for its AUC "
                                   "to mean anything."))
    for r in counts.itertuples(index=False):
        if r.judge in judges and 0 < r.decided_share < MIN_DECIDED_SHARE:
            blocks.append(_Warning(f"judge {r.judge} decided only {r.decided_share:.0%} of its items ({r.n_decided} of "
                                   f"{r.n_items}) from log evidence: its outcome-free AUC rests on few verdicts."))
    return blocks, counts


def _variant_aucs(items: pd.DataFrame, st: _Settings) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Per item judge, the AUC of every score variant on the trajectories its raw variant scores (one bootstrap,
    the same draws), their paired increments, and the recomputed scores: ``(aucs, deltas, variants)``; computed
    once per report run."""
    if "variant_aucs" not in st.memo:
        st.memo["variant_aucs"] = _compute_variant_aucs(items, st)
    return st.memo["variant_aucs"]  # type: ignore[return-value]


def _compute_variant_aucs(items: pd.DataFrame, st: _Settings) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    variants = score_variants(items)
    if st.judges is not None:
        variants = variants[variants["judge"].isin(st.judges)]
    aucs, deltas = [], []
    pairs = [("pass_propagation", "raw"), ("endpoint", "raw"), ("full", "raw"), ("endpoint", "pass_propagation")]
    for judge in st.order.ordered(variants["judge"].unique()):
        v = variants[variants["judge"] == judge].drop(columns="judge").rename(columns={"variant": "judge"})
        boot = bootstrap_auc(v, list(VARIANTS), n_boot=st.n_boot, seed=st.seed)
        aucs.append(auc_table(boot, ci=st.ci).rename(columns={"judge": "variant"}).assign(judge=judge))
        deltas.append(delta_auc_table(boot, pairs, ci=st.ci).assign(judge=judge))
    first = ["judge"]
    if not aucs:
        return pd.DataFrame(), pd.DataFrame(), variants
    return (_front(pd.concat(aucs, ignore_index=True), first), _front(pd.concat(deltas, ignore_index=True), first),
            variants)


def _discrimination(frames: Mapping[str, pd.DataFrame], st: _Settings) -> list[Block]:
    blocks: list[Block] = [_Heading("RQ1 — Outcome discrimination (AUC vs official PASS)")]
    if "scores" not in frames:
        return blocks + [_Missing("no judge scores yet (run `judge` and `score`), so no AUC.")]
    free, judges, lacking = _outcome_free(frames, st)
    item_judges = [j for j in item_judges_of(frames["scores"], frames.get("items"), st.order) if j not in lacking
                   and (st.judges is None or j in st.judges)]
    warnings, counts = _evidence_warnings(free, frames, judges, item_judges)
    blocks.append(_Text("The headline AUC is computed from outcome-free scores: an item judge's partial credit "
                        "recomputed from its raw verdicts (no PASS propagation, no endpoint item), a rating judge's "
                        "own score. The postprocessed partial credit contains the official outcome it would be "
                        "scored against (an official PASS sets assertion items to Yes, a FAIL adds an endpoint item "
                        "judged No), so its AUC, shown beside, measures the outcome against itself, not the judge."))
    blocks += warnings
    if lacking:
        blocks.append(_Missing(f"no item verdicts for judge(s) {', '.join(lacking)}: their outcome-free score (partial "
                               "credit of raw verdicts) cannot be computed, and their stored partial credit contains "
                               "the official outcome, so they have no headline AUC."))
    unscored = [j for j in (st.judges if st.judges is not None else st.order.ordered(free["judge"].unique()))
                if j not in judges and j not in lacking]
    if unscored:
        blocks.append(_Missing(f"judge(s) {', '.join(unscored)} decided no item from log evidence (every raw verdict "
                               "Abstain): no outcome-free score, so no AUC."))
    if not judges:
        return blocks + [_Missing("no judge has an outcome-free score, so no AUC.")]
    boot = bootstrap_auc(free, judges, n_boot=st.n_boot, seed=st.seed)
    aucs = auc_table(boot, ci=st.ci)
    aucs.insert(1, "score", [SCORE_BASIS[j in item_judges] for j in aucs["judge"]])
    decided = counts.set_index("judge")
    aucs.insert(2, "decided_share", aucs["judge"].map(decided["decided_share"]).astype(float))
    aucs.insert(3, "n_undecided", aucs["judge"].map(decided["n_undecided"]).astype("Int64"))
    blocks += [
        _Text(f"Pooled ROC AUC on the {len(boot.data)} trajectories with an outcome-free score from every judge "
              f"({boot.n_excluded} excluded for lacking one from some judge, e.g. no decided raw verdict); "
              f"{int(st.ci * 100)}% percentile CIs from {st.n_boot} task-clustered bootstrap draws (seed {st.seed}). "
              "`decided_share`: the judge's raw verdicts that are Yes or No; `n_undecided`: its trajectories with "
              "none, which have no outcome-free score."),
        _Table("discrimination_auc", aucs, "AUC per judge, from outcome-free scores (raw verdicts)"),
        _Table("discrimination_data", boot.data, "Inputs: common subset with each judge's outcome-free score",
               show=False),
    ]
    if len(boot.judges) >= 2:
        blocks.append(_Table("discrimination_delta_auc", delta_auc_table(boot, ci=st.ci),
                             "Paired ΔAUC (judge_a − judge_b) of the outcome-free scores on the same draws"))
    else:
        blocks.append(_Missing("paired ΔAUC needs at least two judges."))
    if "items" in frames and item_judges:
        variant_aucs, _, _ = _variant_aucs(frames["items"], st)
        if len(variant_aucs):
            beside = variant_aucs.assign(contains_outcome=variant_aucs["variant"].isin(POSTPROCESSED_VARIANTS))
            blocks.append(_Table("discrimination_auc_with_outcome", _front(beside, ["judge", "variant", "contains_outcome"]),
                                 "Beside it: AUC of each item judge's partial credit with the official outcome written in "
                                 "(PASS propagation, endpoint item, both = the stored score), on the trajectories its raw "
                                 "verdicts score; a score that contains the outcome it is scored against has an AUC that "
                                 "is no evidence of discrimination"))
    if "ctrf" in frames and (outcomes := _outcomes(frames)) is not None:
        frac = ctrf_pass_fraction(frames["ctrf"]).merge(outcomes, on="trajectory_id")
        ref = bootstrap_auc(frac.assign(judge=CTRF_REFERENCE), [CTRF_REFERENCE], score_col="ctrf_pass_fraction",
                            n_boot=st.n_boot, seed=st.seed)
        blocks += [_Table("discrimination_ctrf_reference", auc_table(ref, ci=st.ci),
                          "Reference: AUC of the verifier's own per-test pass fraction (trajectories with CTRF)"),
                   _Table("ctrf_pass_fraction", frac, "Inputs: CTRF pass fraction per trajectory", show=False)]
    if st.figures:
        curves, bands = roc_data(boot, ci=st.ci)
        if len(curves):
            blocks.append(_Figure(roc_figure(curves, bands, aucs), "ROC curves of the outcome-free scores; shaded: "
                                  "bootstrap TPR band"))
    return blocks


def _agreement(frames: Mapping[str, pd.DataFrame], st: _Settings) -> list[Block]:
    blocks: list[Block] = [_Heading("RQ2 — Agreement with human judgments")]
    has_r, has_p = "ratings" in frames, "preferences" in frames
    if not (has_r or has_p):
        return blocks + [_Missing("no human study data yet (progress ratings and pairwise preferences are empty): "
                                  "pairwise agreement, Spearman ρ and Krippendorff's α need them.")]
    if "scores" not in frames:
        return blocks + [_Missing("human data is present but there are no judge scores to compare it with.")]
    scores = frames["scores"]
    ratings, preferences, rejected = _usable_human_frames(frames, st)
    has_r, has_p = is_available(ratings), is_available(preferences)
    if len(rejected):
        shown = "; ".join(f"{r.frame} row {r.row} ({r.target}, rater {r.rater}): {r.reason}"
                          for r in rejected.head(5).itertuples(index=False))
        more = f"; and {len(rejected) - 5} more" if len(rejected) > 5 else ""
        blocks += [_Missing(f"{len(rejected)} malformed human answers left out of every agreement statistic: "
                            f"{shown}{more}."),
                   _Table("agreement_rejected_rows", rejected, "Human answers left out, with the reason")]
    if has_p:
        votes = preference_votes(preferences, scores, st.judges)
        agree = pairwise_agreement(votes)
        blocks += [_Table("agreement_pairwise", agree, "Pairwise agreement with human preferences (with ties: tie is a "
                          "class; without ties: votes where either side is a tie dropped)"),
                   _Table("agreement_votes", votes, "Inputs: every human vote (the chosen trajectory or a tie) beside "
                          "each judge's choice", show=False)]
        if st.figures:
            blocks.append(_Figure(agreement_figure(agree), "Agreement with and without ties"))
    else:
        blocks.append(_Missing("no pairwise preferences yet: pairwise agreement and preference α need them."))
    if has_r:
        rho, data = spearman_table(ratings, scores, st.judges, n_boot=st.n_boot, seed=st.seed, ci=st.ci)
        blocks += [_Table("agreement_spearman", rho, "Spearman ρ: mean human progress rating vs judge score"),
                   _Table("agreement_spearman_data", data, "Inputs: mean rating and judge scores per trajectory",
                          show=False)]
    else:
        blocks.append(_Missing("no human progress ratings yet: Spearman ρ and rating α need them."))
    if has_r or has_p:
        alpha = alpha_table(ratings, preferences, scores, st.judges, scale=st.rating_scale)
        blocks += [_Text("Krippendorff's α: ordinal over progress ratings on the declared rating scale (a judge's 0–1 "
                         "score mapped onto it); nominal over preferences, each pair one unit and each vote coded in "
                         "three classes: the pair's first or second trajectory (ids in sorted order) or a tie, so the "
                         "order a pair was shown in does not matter and raters voting at random get α ≈ 0."),
                   _Table("agreement_alpha", alpha, "Krippendorff's α among humans, and with each judge as a coder")]
    return blocks


def _usable_human_frames(frames: Mapping[str, pd.DataFrame], st: _Settings
                         ) -> tuple[pd.DataFrame | None, pd.DataFrame | None, pd.DataFrame]:
    """Ratings and preferences without their malformed rows, and those rows with the reason."""
    ratings = preferences = None
    rejected = [pd.DataFrame(columns=REJECTED_COLUMNS)]
    if "ratings" in frames:
        ratings, bad = usable_ratings(frames["ratings"], st.rating_scale)
        rejected.append(bad)
    if "preferences" in frames:
        preferences, bad = usable_preferences(frames["preferences"])
        rejected.append(bad)
    return ratings, preferences, pd.concat([r for r in rejected if len(r)] or rejected[:1], ignore_index=True)


def _skills(frames: Mapping[str, pd.DataFrame], st: _Settings) -> list[Block]:
    blocks: list[Block] = [_Heading("RQ3 — Skill effects on matched pairs")]
    if "scores" not in frames:
        return blocks + [_Missing("no judge scores yet, so no matched-pair analysis.")]
    pairs = matched_pairs(frames["scores"])
    if st.judges is not None:
        pairs = pairs[pairs["judge"].isin(st.judges)]
    if pairs.empty:
        return blocks + [_Missing("no matched with/without-skills pairs (every condition unknown, or no trajectory has "
                                  "a partner with the same task, agent, model and trial index).")]
    blocks += [
        _Text(f"Δ = score(with Skills) − score(without); transitions are without→with. Improving / regressing: "
              f"Δ > {st.threshold:g} / Δ < −{st.threshold:g}."),
        _Table("skills_transitions", transition_table(pairs, threshold=st.threshold), "Transitions per judge"),
        _Table("skills_pairs", pairs, "Inputs: matched pairs with Δ", show=False),
    ]
    if st.figures:
        blocks.append(_Figure(delta_histogram_figure(pairs), "Δ histograms per transition"))
    if "items" not in frames:
        return blocks + [_Missing("no item verdicts, so no per-item changes.")]
    changes = item_changes(frames["items"], pairs)
    display = changes.reindex(changes["net_share"].abs().sort_values(ascending=False, kind="stable").index)
    blocks.append(_Table("skills_item_changes", changes, "Item changes per task (all pairs; largest |net share| first)",
                         display=display))
    if st.figures:
        for judge in st.order.ordered(changes["judge"].unique()):
            blocks.append(_Figure(item_change_heatmap(changes, judge), f"Per-task item changes, {judge}"))
    return blocks


def _unperturbed_runs(scores: pd.DataFrame | None, p: pd.DataFrame | None, st: _Settings) -> list[str]:
    """The reported runs of item judges with no perturbation results (`judge (run LABEL)`), in display order."""
    if scores is None:
        return []
    labelled = "label" in scores  # frames built without labelled runs are matched by judge alone
    done = set() if p is None else set(zip(p["judge"], p["label"] if labelled else [None] * len(p)))
    runs = (scores[["judge", "label"]] if labelled else scores[["judge"]].assign(label=None)).drop_duplicates()
    return [f"{judge} (run {label})" if isinstance(label, str) else judge
            for judge in st.order.item_judges_among(runs["judge"].unique()) if st.judges is None or judge in st.judges
            for label in runs.loc[runs["judge"] == judge, "label"] if (judge, label) not in done]


def _sensitivity(frames: Mapping[str, pd.DataFrame], st: _Settings) -> list[Block]:
    blocks: list[Block] = [_Heading("RQ4 — Evidence sensitivity")]
    how = ("`python -m gcpc_core perturb --db FILE --judge gcpc [--run LABEL]` re-judges perturbed logs of the "
           "judge's default run (or run LABEL) through the LLM layer (`--judge probe` runs offline); the report "
           "itself calls no LLM.")
    p = frames.get("perturbations")
    if p is not None and st.judges is not None:
        p = p[p["judge"].isin(st.judges)]
    absent = _unperturbed_runs(frames.get("scores"), p, st)
    if p is None or p.empty:
        runs = f" for judge run(s) {', '.join(absent)}" if absent else ""
        return blocks + [_Missing(f"no evidence-perturbation results yet{runs}: {how}")]
    table = sensitivity_table(p, n_boot=st.n_boot, seed=st.seed, ci=st.ci)
    blocks += [
        _Text("Each Yes item with grounded citations had its cited span replaced by a plausible wrong value (numbers "
              "shifted, paths altered, strings swapped; recipe per row) and was judged again by the same judge, model "
              "and prompt. Shares of those items now judged No, and No or Abstain, with task-clustered bootstrap "
              f"{st.ci:.0%} CIs, per labelled judge run. `span_remaining`: items whose cited span could still be "
              "found elsewhere in the perturbed evidence (scope `cited` replaces it in the cited event only)."),
        _Table("sensitivity", table, "Evidence sensitivity per judge run and setting"),
        _Table("sensitivity_by_kind", sensitivity_table(p, by=("kind",), n_boot=st.n_boot, seed=st.seed, ci=st.ci),
               "By perturbation kind"),
        _Table("sensitivity_by_task", sensitivity_table(p, by=("task",), n_boot=st.n_boot, seed=st.seed, ci=st.ci),
               "By task"),
        _Table("sensitivity_units", p, "Inputs: every perturbed item with its recipe and new verdict", show=False),
    ]
    if absent:
        blocks.append(_Missing(f"no evidence-perturbation results for judge run(s) {', '.join(absent)}: {how}"))
    if st.figures and table["n"].gt(0).any():
        blocks.append(_Figure(sensitivity_figure(table), "Share of perturbed Yes items judged No / No or Abstain"))
    return blocks


def _ablations(frames: Mapping[str, pd.DataFrame], st: _Settings) -> list[Block]:
    blocks: list[Block] = [_Heading("RQ4 — Ablations")]
    if "scores" in frames:
        judges = set(frames["scores"]["judge"]) & set(st.judges if st.judges is not None else frames["scores"]["judge"])
        task_judge, fixed_judge = st.order.checklist_ablation or (None, None)
        if task_judge is None:
            blocks.append(_Missing("no judge of the frames repeats a task-checklist judge over the fixed checklist: "
                                   "task vs fixed checklist not compared."))
        elif {task_judge, fixed_judge} <= judges:
            free, scored, _ = _outcome_free(frames, st)
            if {task_judge, fixed_judge} <= set(scored):
                boot = bootstrap_auc(free, [task_judge, fixed_judge], n_boot=st.n_boot, seed=st.seed)
                blocks.append(_Table("ablation_checklist", delta_auc_table(boot, ci=st.ci),
                                     "Task checklist vs fixed checklist: paired ΔAUC of the outcome-free scores (raw "
                                     "verdicts)"))
            else:
                blocks.append(_Missing(f"task vs fixed checklist needs outcome-free scores (decided raw verdicts) from "
                                       f"both the `{task_judge}` and `{fixed_judge}` judges."))
        else:
            among = " among the compared judges" if st.judges is not None else ""
            blocks.append(_Missing(f"task vs fixed checklist needs scores from both the `{task_judge}` and "
                                   f"`{fixed_judge}` judges{among}."))
        perfect = perfect_agreement(frames["scores"])
        if st.judges is not None:
            perfect = perfect[perfect["judge"].isin(st.judges)]
        blocks.append(_Table("ablation_perfect", perfect[perfect["n"] > 0],
                             "Perfect vs official outcome, without and with the endpoint item"))
    else:
        blocks.append(_Missing("no judge scores: checklist and Perfect ablations not computed."))
    if "items" not in frames:
        return blocks + [_Missing("no item verdicts: score variants (endpoint vs PASS propagation) not computed.")]
    aucs, deltas, variants = _variant_aucs(frames["items"], st)
    if variants.empty:
        return blocks + [_Missing("no checklist item verdicts for the compared judges: score variants not computed.")]
    blocks += [
        _Text("Partial credit recomputed from raw verdicts: raw (no postprocessing), PASS propagation only, endpoint "
              "item only, full (both)."),
        _Table("ablation_variant_auc", aucs, "AUC per score variant"),
        _Table("ablation_variant_delta", deltas, "AUC increments between variants (paired, same draws)"),
        _Table("ablation_variant_scores", variants, "Inputs: recomputed scores per variant", show=False),
    ]
    return blocks


def _front(frame: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    return frame[[*columns, *(c for c in frame.columns if c not in columns)]]


def _item_accuracy(frames: Mapping[str, pd.DataFrame], st: _Settings) -> list[Block]:
    blocks: list[Block] = [_Heading("Verifier-grounded item accuracy")]
    if not {"items", "ctrf"} <= set(frames):
        absent = " and ".join(n for n in ("items", "ctrf") if n not in frames)
        return blocks + [_Missing(f"needs item verdicts and per-test CTRF results; {absent} absent.")]
    truth = assertion_truth(frames["items"], frames["ctrf"])
    if st.judges is not None:
        truth = truth[truth["judge"].isin(st.judges)]
    if not decided_by_verifier(truth).any():
        basis = truth["basis"].value_counts().to_dict()
        return blocks + [_Missing(f"no assertion item has verifier refs decided by a CTRF report or, for a verifier "
                                  f"script, by the official outcome (assertion items by "
                                  f"reason: {basis or 'none'}).")]
    blocks += [
        _Text("Raw (pre-postprocessing) verdicts of assertion items vs the status of the tests they cite: true No as soon "
              "as one cited test failed, true Yes when all passed (a cited verifier script that the CTRF report does "
              "not list: the official outcome)."),
        _Table("item_accuracy", item_accuracy_table(truth), "Item accuracy per judge"),
        _Table("item_confusion", confusion_table(truth), "Confusion matrix: truth (rows) × raw verdict"),
        _Table("item_accuracy_by_task", item_accuracy_table(truth, by=("judge", "task")), "Item accuracy per task"),
        _Table("item_truth", truth, "Inputs: every assertion item with its CTRF truth", show=False),
    ]
    return blocks


def _calibration(frames: Mapping[str, pd.DataFrame], st: _Settings) -> list[Block]:
    blocks: list[Block] = [_Heading("Judge calibration and audited figures")]
    if "items" not in frames:
        return blocks + [_Missing("no item verdicts: judge calibration and audited figures need them.")]
    items = frames["items"] if st.judges is None else frames["items"][frames["items"]["judge"].isin(st.judges)]
    labels = reference_labels(items, frames.get("ctrf"), frames.get("audits"))
    n_boot = min(st.n_boot, CALIBRATION_BOOT)
    if labels.empty:
        blocks.append(_Missing("no item verdict is labelled yet, by an auditor (item audits) or by the verifier "
                               "(assertion items whose cited tests are in a CTRF report): no calibration."))
    else:
        blocks += [
            _Text("Each judge's raw Yes/No against the auditors' consensus verdict and against the verifier's per-test "
                  "status (assertion items): precision and recall of each class and Cohen's κ over the verdicts both "
                  "give as Yes or No; `recall_yes_all` / `recall_no_all` count the judge's Abstain on an item of the "
                  "class as a miss, beside the share of the class it abstained on (`abstain_yes`, `abstain_no`); "
                  f"{st.ci:.0%} percentile intervals from {n_boot} clustered bootstrap draws (tasks; trajectories in "
                  "per-task rows)."),
            _Table("calibration", calibration_table(labels, ("judge", "reference"), n_boot=n_boot, seed=st.seed,
                                                    ci=st.ci), "Calibration per judge and reference"),
            _Table("calibration_by_route", calibration_table(labels, ("judge", "reference", "route"), n_boot=n_boot,
                                                             seed=st.seed, ci=st.ci), "Calibration per route"),
            _Table("calibration_by_task", calibration_table(labels, ("judge", "reference", "task"), n_boot=n_boot,
                                                            seed=st.seed, ci=st.ci), "Calibration per task"),
            _Table("calibration_labels", labels, "Inputs: every labelled item verdict", show=False),
        ]
    if "scores" not in frames:
        return blocks + [_Missing("no judge scores: audited figures not computed.")]
    if "audits" not in frames:
        return blocks + [_Text("No item audits yet: the audited figures (the auditors' corrections and the verifier's "
                               "per-test truth, with the unaudited verdicts' estimated error) are computed once "
                               "verdicts are audited.")]
    figures, overrides = audited_figures(items, frames["scores"], frames["audits"], n_boot=st.n_boot, seed=st.seed,
                                         ci=st.ci, threshold=st.threshold, judges=st.judges, ctrf=frames.get("ctrf"))
    return blocks + [
        _Text("`audited`: each figure as a full audit would most likely find it, the median over draws of the "
              "verdicts — those whose truth is known (the auditors' consensus, else the verifier's per-test status) "
              "as they are, those the auditors split on as one of their tied verdicts, the `n_unaudited` others "
              "wrong as often as the judge's error rate in their route × verdict stratum may be (a Jeffreys "
              "posterior from the audits among them; an unaudited stratum's rate is anywhere in [0, 1], ½ on "
              f"average) — with `error_low`–`error_high`, its {st.ci:.0%} range over the draws, each a value the "
              "figure took. It narrows as audits arrive and closes when every verdict is known (`python -m gcpc_core "
              "triage --next K` proposes the audits that narrow it most). The verifier's verdicts are strata of "
              "their own, so the audits the triage list aims at them bias nothing. "
              f"{selection_note(frames['audits'])} `known`: the figure with the {len(overrides)} "
              "known corrections alone, the unaudited verdicts as judged, recomputed as `raw` is, through the same "
              "postprocessing and scoring and the same bootstrap draws (`raw_low`…`known_high`: task-clustered "
              "sampling intervals, AUC only)."),
        _Table("audited_figures", figures, "Raw and audited figures side by side", max_rows=40),
        _Table("audit_overrides", overrides, "Inputs: the overrides used", show=False),
    ]


SECTIONS = (_discrimination, _agreement, _skills, _sensitivity, _ablations, _item_accuracy, _calibration)
SECTION_NAMES: dict[str, Callable[[Mapping[str, pd.DataFrame], _Settings], list[Block]]] = {
    "discrimination": _discrimination, "agreement": _agreement, "skills": _skills, "sensitivity": _sensitivity,
    "ablations": _ablations, "item_accuracy": _item_accuracy, "calibration": _calibration}
"""Report sections by name, in report order: what `report_tables` can compute one at a time."""


@dataclass(frozen=True)
class ReportTables:
    """The tables, captions, "not computed" statements and warnings of some report sections (nothing written)."""

    tables: dict[str, pd.DataFrame]
    missing: tuple[str, ...]
    captions: dict[str, str]
    warnings: tuple[str, ...] = ()


def _settings(frames: Mapping[str, pd.DataFrame | None], n_boot: int, seed: int, ci: float, threshold: float,
              judges: Sequence[str] | None, figures: bool, rating_scale: tuple[int, int] | None) -> _Settings:
    return _Settings(n_boot, seed, ci, threshold, tuple(judges) if judges is not None else None, figures,
                     None if rating_scale is None else (int(rating_scale[0]), int(rating_scale[1])),
                     judge_order_of(*(frames.get(n) for n in FRAME_NAMES)))


def _available(frames: Mapping[str, pd.DataFrame | None]) -> dict[str, pd.DataFrame]:
    return {n: frames[n] for n in FRAME_NAMES if is_available(frames.get(n))}  # type: ignore[misc]


def report_tables(
    frames: Mapping[str, pd.DataFrame | None],
    sections: Sequence[str],
    *,
    n_boot: int = 10_000,
    seed: int = 0,
    ci: float = 0.95,
    threshold: float = 0.10,
    judges: Sequence[str] | None = None,
    rating_scale: tuple[int, int] | None = None,
) -> ReportTables:
    """The tables of the named report `sections` (keys of `SECTION_NAMES`, plus ``inputs``), as `build_report`
    computes them with the same arguments, without the others or any file: a dashboard shows the
    sections it needs at once (the judge-calibration bootstrap alone takes seconds)."""
    unknown = [s for s in sections if s != "inputs" and s not in SECTION_NAMES]
    if unknown:
        raise ValueError(f"unknown report section(s) {', '.join(map(repr, unknown))}; "
                         f"known: inputs, {', '.join(SECTION_NAMES)}")
    available = _available(frames)
    st = _settings(frames, n_boot, seed, ci, threshold, judges, False, rating_scale)
    blocks: list[Block] = _inputs(available, frames, st) if "inputs" in sections else []
    for name, section in SECTION_NAMES.items():
        if name in sections:
            blocks += section(available, st)
    return ReportTables(tables={b.name: b.frame for b in blocks if isinstance(b, _Table)},
                        missing=tuple(b.text for b in blocks if isinstance(b, _Missing)),
                        captions={b.name: b.caption for b in blocks if isinstance(b, _Table)},
                        warnings=_warnings(blocks))


def build_report(
    frames: Mapping[str, pd.DataFrame | None],
    out_dir: Path,
    *,
    n_boot: int = 10_000,
    seed: int = 0,
    ci: float = 0.95,
    threshold: float = 0.10,
    judges: Sequence[str] | None = None,
    figures: bool = True,
    title: str = "GCPC analysis report",
    rating_scale: tuple[int, int] | None = None,
) -> ReportResult:
    """Compute everything the frames allow and write report.md, report.html and CSV tables to `out_dir`.

    `frames` maps names in `FRAME_NAMES` to frames (absent, None or empty = not available).
    `judges` restricts the compared judges (default: all in `scores`), in every section.
    `rating_scale` is the human rating scale ``(lo, hi)``; by default the one the ratings frame
    declares (`annotations.ratings_frame` carries each study's). `figures=False` skips the plotly
    figures (the HTML still holds every table). Malformed human answers are left out, listed
    with the reason, and the rest of the report is still produced.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    available = _available(frames)
    st = _settings(frames, n_boot, seed, ci, threshold, judges, figures, rating_scale)
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    blocks: list[Block] = [_Text(f"Generated {stamp}; bootstrap: {n_boot} task-clustered draws, seed {seed}, "
                                 f"{ci:.0%} percentile intervals; skill threshold {threshold:g}.")]
    blocks += _inputs(available, frames, st)
    for section in SECTIONS:
        blocks += section(available, st)
    blocks += [_Heading("RQ5 — Transfer"),
               _Text("Run this report on each imported benchmark's project and compare the tables side by side.")]
    tables = {b.name: b.frame for b in blocks if isinstance(b, _Table)}
    csv = {}
    for name, frame in tables.items():
        csv[name] = out_dir / f"{name}.csv"
        csv[name].write_text(frame_csv(frame), encoding="utf-8")
    md, page = out_dir / "report.md", out_dir / "report.html"
    md.write_text(_render_markdown(title, blocks), encoding="utf-8")
    page.write_text(_render_html(title, blocks), encoding="utf-8")
    return ReportResult(
        out_dir=out_dir, markdown=md, html=page, csv=csv, tables=tables,
        missing=tuple(b.text for b in blocks if isinstance(b, _Missing)),
        figures=tuple(b.caption for b in blocks if isinstance(b, _Figure)),
        captions={b.name: b.caption for b in blocks if isinstance(b, _Table)},
        warnings=_warnings(blocks),
    )


def _warnings(blocks: Sequence[Block]) -> tuple[str, ...]:
    """The warnings of `blocks`, each once (a section may repeat a report-wide one)."""
    return tuple(dict.fromkeys(b.text for b in blocks if isinstance(b, _Warning)))
