"""Overview: what the project holds, per task and per trajectory."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from gcpc_core.export import export_trials
from gcpc_core.store import Store

store: Store = st.session_state["store"]
st.title("Overview")
if store.get_meta("is_demo") == "1":
    st.info("This is the embedded DEMO project: every task and trial in it is simulated data written by GCPC.")

counts = store.counts()
cols = st.columns(5)
for col, key in zip(cols, ("tasks", "trials", "pass", "fail", "events")):
    col.metric(key.capitalize(), counts[key])

trials = pd.DataFrame(list(export_trials(store)))
if trials.empty:
    st.write("No trials imported yet. Use `python -m gcpc_core import --tasks DIR --trials DIR --db FILE`.")
    st.stop()

st.subheader("Per task")
per_task = (
    trials.groupby(["task", "condition", "outcome"]).size().unstack("outcome", fill_value=0).reset_index()
)
st.dataframe(per_task, hide_index=True, width="stretch")

st.subheader("Trajectories")
task_filter = st.multiselect("Task", sorted(trials["task"].unique()), key="overview_task")
outcome_filter = st.multiselect("Outcome", ["PASS", "FAIL"], key="overview_outcome")
view = trials
if task_filter:
    view = view[view["task"].isin(task_filter)]
if outcome_filter:
    view = view[view["outcome"].isin(outcome_filter)]
st.dataframe(
    view[["trajectory_id", "task", "agent", "model", "condition", "trial_index", "outcome", "reward", "log_format"]],
    hide_index=True,
    width="stretch",
)

issues = store.import_issues()
if issues:
    st.subheader("Skipped at import")
    st.dataframe(pd.DataFrame(issues)[["run_at", "path", "reason"]], hide_index=True, width="stretch")
