"""The triage page's data: ranked disagreements, the next audits with the judge's error-rate estimate as
audits arrive, judge calibration and the audited figures — all from `analysis` over the project's frames.
Calibration and audited figures (`audited_data`, the bootstrap and judge-error draws: most of the page's
time) are a separate cache entry, computed when the page's section for them is opened.

Cached per project DB until judgments, scores or annotations change, so recording an audit on the item
audit page and coming back shows the estimate, the interval and the figures moved.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass

import pandas as pd
import plotly.graph_objects as go

from ..analysis.active import (
    ErrorEstimate,
    estimate_error,
    estimate_history,
    population,
    propose,
    should_stop,
    verifier_truth,
)
from ..analysis.audits import selection_note
from ..analysis.bootstrap import few_clusters_note
from ..analysis.calibration import CALIBRATION_BOOT, audited_figures, calibration_table, reference_labels
from ..analysis.triage import audit_link, triage
from ..defaults import AUDIT_TARGET_WIDTH
from ..judge.registry import item_judges_among
from ..store import Store
from .agreement import ANALYSIS_TABLES, DEFAULT_N_BOOT
from .ui import cached, cached_frames, cached_headline

__all__ = ["DEFAULT_PROPOSALS", "MIN_HISTORY_AUDITS", "ROWS_PER_PAGE", "AuditedData", "JudgeLoop", "LoopData",
           "audited_data", "cached_audited_data", "cached_judge_loop", "cached_loop_data", "history_figure",
           "judge_loop", "loop_data", "prefetch_pages", "row_label"]

TABLES = ("judgments", "scores", "trajectories", "annotations", "checklists")


@dataclass(frozen=True)
class LoopData:
    """The ranked disagreements: what the page shows of every judge at once."""

    judges: list[str]
    disagreements: pd.DataFrame
    n_settled: int = 0
    """Contested item verdicts the auditors' consensus settled, left off the list."""
    interval_note: str = ""
    """Why the interval widths the impacts are scaled by are unreliable (too few tasks), or ""."""


@dataclass(frozen=True)
class AuditedData:
    """Judge calibration and the raw vs audited figures: the page's slowest part (bootstrap intervals and the
    judge-error draws), computed only once its section is opened."""

    calibration: pd.DataFrame
    calibration_by_route: pd.DataFrame
    figures: pd.DataFrame
    n_overrides: int
    interval_note: str = ""
    """Why the task-clustered intervals are unreliable (fewer than `analysis.RELIABLE_CLUSTERS` tasks), or ""."""


@dataclass(frozen=True)
class JudgeLoop:
    """One judge's error-rate estimate, its history as audits arrived, and the next audits."""

    estimate: ErrorEstimate
    stop: bool
    history: pd.DataFrame
    proposals: pd.DataFrame
    selection_note: str = ""
    """How this judge's audits were selected, and which of them estimate the error rate (`audits.selection_note`)."""


def loop_data(store: Store, base_url: str, labels: Mapping[str, str] | None = None) -> LoopData:
    """Disagreements ranked by impact, of each judge's default run unless `labels` chooses another (links, into
    the app at `base_url`, then name the chosen run)."""
    frames = cached_frames(store, labels=labels)
    judges = item_judges_among(frames["items"]["judge"].unique())
    ranked = triage(frames, base_url=base_url)
    n_tasks = frames["items"]["task"].nunique() if len(frames["items"]) else 0
    return LoopData(judges, _with_run_links(ranked, labels, base_url), int(ranked.attrs.get("n_settled", 0)),
                    few_clusters_note(n_tasks))


def audited_data(store: Store, n_boot: int = CALIBRATION_BOOT, labels: Mapping[str, str] | None = None) -> AuditedData:
    """Calibration against auditors and verifier, and raw vs audited figures, of each judge's default run unless
    `labels` chooses another."""
    frames = cached_frames(store, labels=labels)
    items = frames["items"]
    reference = reference_labels(items, frames["ctrf"], frames["audits"]) if len(items) else pd.DataFrame()
    empty = pd.DataFrame()
    calibration = calibration_table(reference, n_boot=n_boot) if len(reference) else empty
    by_route = calibration_table(reference, ("judge", "reference", "route"), n_boot=n_boot) if len(reference) else empty
    figures, overrides = (audited_figures(items, frames["scores"], frames["audits"], n_boot=n_boot, ctrf=frames["ctrf"])
                          if len(items) and len(frames["scores"]) else (empty, empty))
    n_tasks = items["task"].nunique() if len(items) else 0
    return AuditedData(calibration, by_route, figures, len(overrides), few_clusters_note(n_tasks))


def _with_run_links(found: pd.DataFrame, labels: Mapping[str, str] | None, base_url: str) -> pd.DataFrame:
    """`found` with its audit links naming the chosen run of each judge `labels` chooses."""
    if labels and len(found):
        found = found.copy()
        found["link"] = [audit_link(base_url, r.trajectory_id, r.judge, r.item_id, labels.get(r.judge))
                         for r in found.itertuples(index=False)]
    return found


def judge_loop(
    store: Store, base_url: str, judge: str, k: int, target_width: float, seed: int = 0,
    labels: Mapping[str, str] | None = None,
) -> JudgeLoop:
    """`judge`'s error rate (the auditors' consensus, else the verifier's per-test truth, ≠ raw verdict: what the
    audited figures count as known), its history and the next `k` audits (of verdicts nothing decides yet) with links
    into the app at `base_url`, in its default run unless `labels` chooses another."""
    frames = cached_frames(store, labels=labels)
    pop = population(frames["items"], frames["audits"], judge, verifier=verifier_truth(frames["items"], frames["ctrf"]))
    est = estimate_error(pop)
    history = estimate_history(pop, frames["audits"])
    nxt = propose(pop, k, seed=seed)
    nxt["link"] = [audit_link(base_url, r.trajectory_id, r.judge, r.item_id, (labels or {}).get(judge), drawn=True)
                   for r in nxt.itertuples(index=False)]
    audits = frames["audits"]
    mine = audits[audits["judge"] == judge] if audits is not None and len(audits) else audits
    return JudgeLoop(est, should_stop(est, target_width), history, nxt, selection_note(mine))


cached_loop_data = cached(*TABLES)(loop_data)
cached_audited_data = cached(*TABLES)(audited_data)
cached_judge_loop = cached(*TABLES)(judge_loop)

DEFAULT_PROPOSALS = 10
"""Proposed audits the Triage page lists until the auditor asks for another number."""

_PREFETCHED: dict[tuple[str, str], str] = {}
"""(project DB, app URL) → the data version last prefetched for it."""
_PREFETCH_LOCK = threading.Lock()


def prefetch_pages(store: Store, base_url: str) -> threading.Thread | None:
    """Compute what the Agreement and Triage pages first show (their default controls, each judge's default run)
    into the caches those pages read, on a background thread, once per project DB, data version and `base_url`
    (the Triage page's links name it); the thread, or None when it ran already.

    At paper scale each costs 1–2 s to compute, and the Overview, where an auditor starts and which calls this,
    has read the frames they are built from already. A page visited while the thread still computes its entry
    waits for that computation (Streamlit's per-entry compute lock) instead of repeating it. A failure is left
    for the page, which computes the entry itself and shows what went wrong."""
    key, version = (str(store.path), base_url), store.project.data_version(*ANALYSIS_TABLES)
    with _PREFETCH_LOCK:
        if _PREFETCHED.get(key) == version:
            return None
        _PREFETCHED[key] = version

    def work() -> None:
        try:
            cached_headline(store, DEFAULT_N_BOOT, 0, True)
            data = cached_loop_data(store, base_url)
            if data.judges:
                cached_judge_loop(store, base_url, data.judges[0], DEFAULT_PROPOSALS, AUDIT_TARGET_WIDTH)
        except Exception:  # noqa: BLE001 - the page computes the entry again and shows what went wrong
            pass

    thread = threading.Thread(target=work, name="gcpc-prefetch", daemon=True)
    thread.start()
    return thread


MIN_HISTORY_AUDITS = 2
"""Audits before the error-rate history is worth a chart (one point is no history)."""
ROWS_PER_PAGE = 100
"""Disagreements shown at once: a paper-scale project has thousands, and a table and chooser of all of them take
the browser seconds to draw (the whole list is a download). `ui.paged` shows them a page at a time."""


def history_figure(history: pd.DataFrame, target_width: float) -> go.Figure | None:
    """The running error-rate estimate and its interval after each audit (`estimate_history`), on a 0–1 rate
    axis against audits 1…n; None with fewer than `MIN_HISTORY_AUDITS` audits (the page then says so instead
    of plotting a lone dot on an axis that autoscales to −1…1)."""
    after = history[history["n_audits"] >= 1]
    if after.empty or int(after["n_audits"].max()) < MIN_HISTORY_AUDITS:
        return None
    n = int(after["n_audits"].max())
    fig = go.Figure([
        go.Scatter(x=after["n_audits"], y=after["high"], mode="lines", line={"width": 0}, showlegend=False,
                   hoverinfo="skip"),
        go.Scatter(x=after["n_audits"], y=after["low"], mode="lines", line={"width": 0}, fill="tonexty",
                   name="95% interval"),
        go.Scatter(x=after["n_audits"], y=after["estimate"], mode="lines+markers", name="error rate"),
    ])
    fig.update_layout(title=f"Error rate as audits arrived (stop at width ≤ {target_width:g})",
                      xaxis={"title": "audits recorded", "range": [1, n], "tickformat": "d", "rangemode": "nonnegative"},
                      yaxis={"title": "error rate", "range": [0, 1], "tickformat": ".0%"}, height=320)
    return fig


def row_label(row: dict) -> str:
    """One line for choosing a disagreement or a proposal: what it is and where."""
    head = f"#{row['rank']} · {row['kind']}" if "rank" in row else f"next {row['order']}"
    return " · ".join([head, str(row["trajectory_id"]), str(row["judge"]), str(row["item_id"])])
