"""Agreement: a headline of the main statistics — AUC of each judge vs official PASS with its CI, paired
ΔAUC, pairwise agreement with human preferences, Spearman ρ with human progress ratings, Krippendorff's
α — each with a one-line reading; below, every analysis table and chart by section, how item auditors
agree with each judge, and CSV / JSONL downloads, each computed only when its section is opened (the
headline needs two of the report's sections; the judge-calibration bootstrap alone takes seconds).

Layout and widgets only: every number comes from `gcpc_core.analysis.build_report` (through
`gcpc_core.review.agreement`), so this page and `report.html` always agree. What cannot be
computed yet is said plainly, with the reason. The headline is kept in the project DB for the data it
was computed on (`gcpc_core.review.agreement.stored_headline`): a new server shows it without recomputing.
"""

from __future__ import annotations

import streamlit as st

from gcpc_core.analysis import FrameContractError
from gcpc_core.review.agreement import (ALL_SECTIONS, AUDIT_CAPTION, DEFAULT_N_BOOT, SECTIONS, audit_agreement,
                                        table_bytes)
from gcpc_core.text import md_escape
from gcpc_core.review.ui import (
    cached_dashboard,
    cached_frames,
    cached_headline,
    cached_section,
    require_store,
    run_select,
    visible_frame,
    wrap_labels,
)

store = require_store()
st.title("Agreement")
wrap_labels("agreement-controls", "agreement-headline")  # whole labels and values: no interval cut off
cols = st.container(key="agreement-controls").columns([2, 2, 3])
include_simulated = cols[0].toggle("Include simulated raters", value=True, key="agreement:simulated",
                                   help="The demo study's raters are simulated by GCPC, not people")
n_boot = cols[1].select_slider("Bootstrap draws", [200, 1000, 2000, 5000], value=DEFAULT_N_BOOT, key="agreement:n_boot")
labels = run_select(store, "agreement")  # a judge with several labelled runs: which one
try:
    with st.spinner("Computing the analysis…"):
        view = cached_headline(store, n_boot, 0, include_simulated, labels=labels)
except FrameContractError as exc:  # the project's data break a frame contract: say which, do not crash
    st.error("The analysis cannot run on this project's data: " + md_escape(exc, limit=400))
    st.stop()
if view.simulated_answers:
    st.warning(f"{view.simulated_answers} of the human answers below come from SIMULATED raters (the demo study), "
               "not people.")

# ---- the headline: each statistic, its value and what it means ------------------------------------------
st.subheader("Headline")
for warning in view.warnings:
    st.warning(md_escape(warning[0].upper() + warning[1:], limit=800))
st.caption(f"Intervals: {view.ci:.0%} percentile intervals from {n_boot:,} task-clustered bootstrap draws (seed 0). "
           "Every table behind these numbers is in the sections below.")
grid = st.container(key="agreement-headline")
for start in range(0, len(view.lines), 3):
    for col, line in zip(grid.columns(3), view.lines[start : start + 3]):
        with col.container(border=True):
            st.metric(md_escape(line.statistic), md_escape(line.value))
            st.caption(md_escape(line.reading, limit=600))
if view.missing:
    with st.expander(f"Not computed yet ({len(view.missing)})"):
        for statement in view.missing:
            st.text("• " + statement)

# ---- every table and chart, one section at a time (computed only when opened) ---------------------------
st.subheader("Details")
with st.expander("Inputs of the analysis", key="agreement:open:inputs", on_change="rerun") as section:
    if section.open:
        with st.spinner("Computing the inputs…"):
            dash = cached_dashboard(store, n_boot, 0, include_simulated, labels=labels)
        st.caption(dash.caption("inputs"))
        st.dataframe(visible_frame(dash.tables["inputs"]), hide_index=True, width="stretch")
for k, name in enumerate(SECTIONS):
    with st.expander(name, key=f"agreement:open:{k}", on_change="rerun") as section:
        if not section.open:
            continue
        with st.spinner("Computing this section…"):
            part = cached_section(store, name, n_boot, 0, include_simulated, labels=labels)
        for statement in part.missing:
            st.text("Not computed: " + statement)
        for warning in part.warnings:
            st.text("Warning: " + warning)
        for j, (_, figure) in enumerate(part.figures[name]):
            st.plotly_chart(figure, key=f"agreement:fig:{k}:{j}")
        for table, frame in part.section_tables(name):
            st.caption(part.caption(table))
            st.dataframe(visible_frame(frame), hide_index=True, width="stretch")

with st.expander("Item auditors vs judges", key="agreement:open:audits", on_change="rerun") as section:
    if section.open:
        audits = audit_agreement(store)
        if audits.empty:
            st.text("No item audits yet: record some on the Item audit page.")
        else:
            st.caption(AUDIT_CAPTION)
            st.dataframe(visible_frame(audits), hide_index=True, width="stretch")

with st.expander("Downloads: every table as CSV or JSONL", key="agreement:open:downloads", on_change="rerun") as section:
    if section.open:
        with st.spinner("Computing every table of the analysis…"):
            full = cached_dashboard(store, n_boot, 0, include_simulated, sections=ALL_SECTIONS, labels=labels)
        frames = cached_frames(store, include_simulated=include_simulated, labels=labels)
        downloads = {**{f"{full.caption(n)} ({n})": (n, t) for n, t in full.tables.items()},
                     **{f"Input frame: {n}": (n, f) for n, f in frames.items()},
                     f"{AUDIT_CAPTION} (item_audits)": ("item_audits", audit_agreement(store))}
        cols = st.columns([4, 1, 1])
        choice = cols[0].selectbox("Table", list(downloads), key="agreement:download_table")
        stem, table = downloads[choice]
        for col, fmt, mime in ((cols[1], "csv", "text/csv"), (cols[2], "jsonl", "application/jsonl")):
            col.download_button(fmt.upper(), table_bytes(table, fmt), file_name=f"{stem}.{fmt}", mime=mime,
                                key=f"agreement:download:{fmt}", width="stretch")
