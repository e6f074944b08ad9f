"""Agreement: the analysis results as interactive charts and tables — AUC with CIs, agreement with
human raters (pairwise, Spearman, Krippendorff's α), skill effects, ablations, item accuracy vs the
verifier's CTRF results — plus how item auditors agree with each judge; CSV / JSONL downloads.

Layout and widgets only: every number comes from `gcpc_core.analysis.build_report` (through
`gcpc_core.review.agreement`), so this page and `report.html` always agree. What cannot be
computed yet is said plainly, with the reason.
"""

from __future__ import annotations

import streamlit as st

from gcpc_core.analysis import FrameContractError
from gcpc_core.review.agreement import SECTIONS, audit_agreement, table_bytes
from gcpc_core.review.text import md_escape
from gcpc_core.review.ui import cached_dashboard, cached_frames, require_store

store = require_store()
st.title("Agreement")
cols = st.columns([2, 2, 3])
include_simulated = cols[0].toggle("Include simulated raters", value=True, key="agreement:simulated",
                                   help="The demo study's raters are simulated by GCPC, not people")
n_boot = cols[1].select_slider("Bootstrap draws", [200, 1000, 2000, 5000], value=1000, key="agreement:n_boot")
frames = cached_frames(store, include_simulated=include_simulated)
simulated = sum(int(frames[n]["simulated"].sum()) for n in ("ratings", "preferences"))
if simulated:
    st.warning(f"{simulated} of the human answers below come from SIMULATED raters (the demo study), not people.")
try:
    with st.spinner("Computing the analysis…"):
        dash = cached_dashboard(store, n_boot, 0, include_simulated)
except FrameContractError as exc:  # the project's data break a frame contract: say which, do not crash
    st.error("The analysis cannot run on this project's data: " + md_escape(exc, limit=400))
    st.stop()

st.subheader("Inputs")
st.dataframe(dash.tables["inputs"], hide_index=True, width="stretch")
if dash.missing:
    st.subheader("Not computed yet")
    for statement in dash.missing:
        st.text("• " + statement)

for section in SECTIONS:
    tables, figures = dash.section_tables(section), dash.figures.get(section, [])
    if not tables and not figures:
        continue
    st.subheader(section)
    for k, (title, figure) in enumerate(figures):
        st.plotly_chart(figure, key=f"agreement:fig:{section}:{k}")
    for name, table in tables:
        st.caption(name)
        st.dataframe(table, hide_index=True, width="stretch")

st.subheader("Item auditors vs judges")
audits = audit_agreement(store)
if audits.empty:
    st.text("No item audits yet: record some on the Item audit page.")
else:
    st.caption("Current audits of each judge's raw item verdicts")
    st.dataframe(audits, hide_index=True, width="stretch")

st.subheader("Downloads")
downloads = {**{f"table: {n}": t for n, t in dash.tables.items()}, **{f"input frame: {n}": f for n, f in frames.items()},
             "item auditors vs judges": audits}
cols = st.columns([4, 1, 1])
name = cols[0].selectbox("Table", list(downloads), key="agreement:download_table")
stem = name.split(": ")[-1].replace(" ", "_")
for col, fmt, mime in ((cols[1], "csv", "text/csv"), (cols[2], "jsonl", "application/jsonl")):
    col.download_button(fmt.upper(), table_bytes(downloads[name], fmt), file_name=f"{stem}.{fmt}", mime=mime,
                        key=f"agreement:download:{fmt}", width="stretch")
