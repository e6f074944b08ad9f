"""Overview: what the project holds, how far judging, checklists, audits and studies got; open a trajectory."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from gcpc_core.review.audit import AuditFilters
from gcpc_core.review.overview import judges_frame, overview_trajectories, studies_frame
from gcpc_core.review.ui import cached_judge_stats, cached_task_table, cached_trajectory_frame, require_store

store = require_store()
st.title("Overview")
if store.get_meta("is_demo") == "1":
    st.info("This is the embedded DEMO project: every task and trial in it is simulated data written by GCPC.")

counts = store.counts()
cols = st.columns(7)
for col, key in zip(cols, ("tasks", "trials", "pass", "fail", "unscored", "events", "judgments")):
    col.metric(key.capitalize(), counts[key])

trajectories = cached_trajectory_frame(store)
if trajectories.empty:
    st.write("No trials imported yet. Use the Runs page, or "
             "`python -m gcpc_core import --tasks DIR --trials DIR --db FILE`.")
    st.stop()
stats = cached_judge_stats(store)

st.subheader("Per task")
per_task = trajectories.groupby(["task", "condition", "outcome"]).size().unstack("outcome", fill_value=0).reset_index()
st.dataframe(per_task, hide_index=True, width="stretch")

status = st.columns(2)
with status[0]:
    st.subheader("Judges")
    judges = judges_frame(trajectories, stats)
    if judges.empty:
        st.text("No judge has run yet (Runs page, or `python -m gcpc_core judge`).")
    else:
        st.dataframe(judges, hide_index=True, width="stretch")
with status[1]:
    st.subheader("Checklists")
    st.dataframe(cached_task_table(store)[["task", "status", "frozen_version", "items", "versions"]],
                 hide_index=True, width="stretch")
studies = studies_frame(store)
if not studies.empty:
    st.subheader("Human studies")
    st.dataframe(studies, hide_index=True, width="stretch")

st.subheader("Trajectories")
f = st.columns(3)
filters = AuditFilters(
    tasks=tuple(f[0].multiselect("Task", sorted(trajectories["task"].unique()), key="overview_task")),
    outcomes=tuple(f[1].multiselect("Outcome", ["PASS", "FAIL", "unscored"], key="overview_outcome")),
    conditions=tuple(f[2].multiselect("Condition", sorted(trajectories["condition"].unique()), key="overview_condition")),
)
view = overview_trajectories(trajectories, stats, filters)
picked = st.dataframe(view, hide_index=True, width="stretch", key="overview_table", on_select="rerun",
                      selection_mode="single-row")
rows = picked.selection.rows if picked is not None and hasattr(picked, "selection") else []
ids = list(view["trajectory_id"])
if ids:
    if rows and st.session_state.get("overview_picked") != ids[rows[0]]:  # a click in the table picks it
        st.session_state["overview_open"] = st.session_state["overview_picked"] = ids[rows[0]]
    if st.session_state.get("overview_open") not in ids:
        st.session_state.pop("overview_open", None)
    open_cols = st.columns([3, 1])
    chosen = open_cols[0].selectbox("Open a trajectory", ids, key="overview_open")
    open_cols[1].page_link("pages/audit.py", label="Open in item audit", icon=":material/fact_check:",
                           query_params={"trajectory": chosen})

issues = store.import_issues()
if issues:
    st.subheader("Skipped at import")
    st.dataframe(pd.DataFrame(issues)[["run_at", "path", "reason"]], hide_index=True, width="stretch")
