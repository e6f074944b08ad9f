"""Triage: the auditor's loop — which item verdicts to audit next, the judge's error rate and its
interval as audits arrive, every disagreement ranked by how much correcting it would move the
figures, judge calibration, and the raw figures beside the audited ones (these two sections are computed only
when opened: their bootstrap intervals are most of the page's time).

Layout and widgets only: `gcpc_core.review.auditloop` computes everything. Links open the item audit
on one item verdict (`<app URL>/audit?trajectory=…&judge=…&item=…`, absolute: `$GCPC_PUBLIC_URL` or the address
the browser reached) and carry nothing else. Data values are
shown through st.dataframe / st.text only.
"""

from __future__ import annotations

import streamlit as st

from gcpc_core.analysis import FrameContractError
from gcpc_core.analysis.triage import DRAWN_QUERY, IMPACT_SCALE
from gcpc_core.csv_safe import frame_csv
from gcpc_core.defaults import AUDIT_TARGET_WIDTH
from gcpc_core.review.auditloop import (
    DEFAULT_PROPOSALS,
    MIN_HISTORY_AUDITS,
    ROWS_PER_PAGE,
    cached_audited_data,
    cached_judge_loop,
    cached_loop_data,
    history_figure,
    row_label,
)
from gcpc_core.text import md_escape
from gcpc_core.review.ui import app_base_url, paged, require_store, run_select

store = require_store()
st.title("Triage")
base_url = app_base_url()
runs = run_select(store, "triage")  # a judge with several labelled runs: which one
try:
    with st.spinner("Ranking disagreements…"):
        data = cached_loop_data(store, base_url, labels=runs)
except FrameContractError as exc:
    st.error("The analysis cannot run on this project's data: " + md_escape(exc, limit=400))
    st.stop()
if not data.judges:
    st.info("No item verdicts yet: run `judge` and `score` first.")
    st.stop()

LINK = st.column_config.LinkColumn("audit", display_text="open", help="Open this item verdict in the item audit")


def open_link(label: str, rows: list[dict], key: str, *, drawn: bool = False) -> None:
    """A chooser over `rows` and a link that opens the chosen one in the item audit, in this session; `drawn`:
    the rows were drawn at random (proposals), and the audit records so."""
    if not rows:
        return
    labels = [row_label(r) for r in rows]
    cols = st.columns([4, 1])
    chosen = cols[0].selectbox(label, range(len(rows)), format_func=labels.__getitem__, key=key)
    row = rows[chosen]
    cols[1].page_link("pages/audit.py", label="Open in item audit", icon=":material/fact_check:",
                      query_params={"trajectory": row["trajectory_id"], "judge": row["judge"], "item": row["item_id"]}
                      | ({"label": runs[row["judge"]]} if runs and row["judge"] in runs else {})
                      | (DRAWN_QUERY if drawn else {}))


# ---- audit next: the estimate, its interval, and the proposals ---------------------------------------
st.subheader("Audit next")
cols = st.columns([1.2, 1, 1])
judge = cols[0].selectbox("Judge", data.judges, key="triage:judge")
k = cols[1].number_input("Proposals", min_value=1, max_value=200, value=DEFAULT_PROPOSALS, key="triage:k")
target = cols[2].number_input("Target interval width", min_value=0.01, max_value=1.0, value=AUDIT_TARGET_WIDTH,
                              step=0.01,
                              key="triage:target")
loop = cached_judge_loop(store, base_url, judge, int(k), float(target), labels=runs)
est = loop.estimate
m = st.columns(4)
m[0].metric("Error rate (truth ≠ judge)", f"{est.estimate:.3f}",
            help="The truth: the auditors' consensus, else the verifier's per-test status (assertion items)")
m[1].metric("95% interval", f"{est.low:.3f} – {est.high:.3f}")
m[2].metric("Width", f"{est.width:.3f}")
m[3].metric("Known", f"{est.n_audited} / {est.n_population}",
            help="Verdicts audited or decided by the verifier, of all this judge's item verdicts")
if loop.selection_note:
    st.caption(md_escape(loop.selection_note))
if loop.stop:
    st.success(f"The interval is at most {target:g} wide (or everything is audited): auditing can stop.")
else:
    st.text(f"Keep auditing: the interval is {est.width:.3f} wide; the target is {target:g}.")
st.caption("Error rate per route")
st.dataframe(est.by_route, hide_index=True, width="stretch")
# drawn only when opened: the chart's first drawing in a browser costs more than the rest of the page
with st.expander("Error rate as audits arrived (chart)", key="triage:open:history", on_change="rerun") as section:
    if section.open:
        history = history_figure(loop.history, float(target))
        if history is None:
            st.info(f"The error-rate chart appears once {MIN_HISTORY_AUDITS} or more of this judge's verdicts are "
                    f"audited ({int(loop.history['n_audits'].max())} so far): record audits on the item audit page.")
        else:
            st.plotly_chart(history, key="triage:history")
st.caption("Next audits, in order (strata where the variance is; tasks in proportion). In simulation they reach an "
           "interval width of 0.04 with 0.67× the audits uniform random auditing needs (100 seeds, per seed "
           "0.49–1.09×: `python -m gcpc_core triage --simulate --target-width 0.04`).")
st.dataframe(loop.proposals, hide_index=True, width="stretch", column_config={"link": LINK})
open_link("Open a proposed audit", loop.proposals.to_dict("records"), "triage:open_next", drawn=True)

# ---- disagreements ------------------------------------------------------------------------------------
st.subheader("Disagreements")
found = data.disagreements
settled = (f" {data.n_settled} more that the auditors' consensus already settled are left out." if data.n_settled
           else "")
if found.empty:
    st.text("No open disagreement: no verifier truth, audit or pair of auditors contradicts a judge's raw verdict "
            "without the auditors having settled it." + settled)
else:
    st.text(f"{len(found)} open disagreements, ranked by impact.{settled} {IMPACT_SCALE[0].upper()}{IMPACT_SCALE[1:]}.")
    if data.interval_note:
        st.warning(md_escape(f"The interval widths are unreliable: {data.interval_note}.", limit=400))
    shown = paged(found, "triage:disagreements", ROWS_PER_PAGE, "disagreements")
    st.dataframe(shown, hide_index=True, width="stretch", column_config={"link": LINK})
    open_link("Open a disagreement", shown.to_dict("records"), "triage:open")
    st.download_button("Download every disagreement (CSV)", data=lambda: frame_csv(found), file_name="disagreements.csv",
                       mime="text/csv", key="triage:download", on_click="ignore",
                       help="Formulas neutralised for spreadsheets; `python -m gcpc_core triage --json` gives the same list")

# ---- calibration and audited figures (computed only when opened: the bootstrap is most of the page's time) --
with st.expander("Judge calibration", key="triage:open:calibration", on_change="rerun") as section:
    if section.open:
        with st.spinner("Computing the calibration…"):
            audited = cached_audited_data(store, labels=runs)
        if audited.calibration.empty:
            st.text("No item verdict is labelled yet by an auditor or by the verifier's CTRF report.")
        else:
            if audited.interval_note:
                st.warning(md_escape(audited.interval_note[0].upper() + audited.interval_note[1:], limit=400))
            st.dataframe(audited.calibration, hide_index=True, width="stretch")
            st.caption("Per route")
            st.dataframe(audited.calibration_by_route, hide_index=True, width="stretch")
with st.expander("Raw and audited figures", key="triage:open:figures", on_change="rerun") as section:
    if section.open:
        with st.spinner("Computing the audited figures…"):
            audited = cached_audited_data(store, labels=runs)
        st.text(f"{audited.n_overrides} item verdicts overridden by their known truth (the auditors' consensus, else the "
                "verifier's per-test status).")
        if audited.interval_note:
            st.warning(md_escape(audited.interval_note[0].upper() + audited.interval_note[1:], limit=400))
        if not audited.figures.empty:
            st.dataframe(audited.figures, hide_index=True, width="stretch")
            st.caption("audited: the figure a full audit would most likely give — known truths (auditors' consensus, "
                       "else the verifier's per-test status) as they are, split audits as one of their tied verdicts, "
                       "unaudited verdicts wrong as often as the audits say the judge errs in their stratum — with "
                       "error_low – error_high, where it could lie; it narrows as the proposed audits arrive. known: "
                       "the known corrections alone. raw_low … known_high: sampling intervals (tasks resampled; AUC "
                       "only).")
