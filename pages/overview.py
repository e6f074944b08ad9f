"""Overview: what the project holds; per task, what exists and the next step of the guided path, with the
button or link that takes it; how far judging, audits and studies got; open a trajectory.

Layout only: `gcpc_core.review.overview.task_status` (cached: `ui.cached_task_status`) decides the next step;
jobs run in the background (`gcpc_core.review.runs.JOBS`), as on the Runs page.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from gcpc_core.llm import llm_status
from gcpc_core.review.audit import AuditFilters
from gcpc_core.review.auditloop import prefetch_pages
from gcpc_core.review.overview import (
    TASKS_PER_PAGE,
    TaskStatus,
    judge_warnings,
    judges_frame,
    overview_trajectories,
    status_frame,
    studies_frame,
)
from gcpc_core.review.runs import JOBS
from gcpc_core.text import md_escape
from gcpc_core.review.ui import (
    app_base_url,
    cached_judge_stats,
    cached_task_status,
    cached_trajectory_frame,
    paged,
    require_store,
    visible_frame,
)

store = require_store()
st.title("Overview")
if store.project.get_meta("is_demo") == "1":
    st.info("This is the embedded DEMO project: every task and trial in it is simulated data written by GCPC.")

counts = store.project.counts()
cols = st.columns(7)
for col, key in zip(cols, ("tasks", "trials", "pass", "fail", "unscored", "events", "judgments")):
    col.metric(key.capitalize(), counts[key])

trajectories = cached_trajectory_frame(store)
if trajectories.empty:
    st.write("No trials imported yet. Use the Runs page, or "
             "`python -m gcpc_core import --tasks DIR --trials DIR --db FILE`.")
    st.stop()
llm_ready, llm_reason = llm_status()


def start_job(kind: str, params: dict, what: str) -> None:
    try:
        job = JOBS.start(store.path, kind, params)
    except ValueError as exc:
        st.session_state["overview:notice"] = f"Not started: {exc}"
    else:
        st.session_state["overview:notice"] = f"Started {what} (job {job.id}); this table updates when it ends."


def next_action(s: TaskStatus) -> None:
    """The button or link that takes `s.next_step` in the app."""
    key = f"overview:next:{s.task}"
    if s.next_step in ("draft a checklist", "synthesize a checklist"):
        st.page_link("pages/checklists.py", label="Draft a checklist", icon=":material/edit_note:",
                     query_params={"task": s.task, "start": "draft"})
        st.button("Synthesize with the LLM", key=f"{key}:synth", disabled=not llm_ready,
                  help=None if llm_ready else md_escape(llm_reason, limit=600), on_click=start_job,
                  args=("synthesize", {"task": s.task}, f"synthesis of {s.task}"))
    elif s.next_step == "judge":
        st.button("Judge with probe (offline)", key=f"{key}:probe", on_click=start_job,
                  args=("judge", {"judge": "probe"}, "the probe judge"),
                  help="Decides items from their regex probes; items without probes stay Abstain")
        if llm_ready:
            st.button("Judge with gcpc (LLM)", key=f"{key}:gcpc", on_click=start_job,
                      args=("judge", {"judge": "gcpc"}, "the gcpc judge"))
    elif s.next_step == "score":
        st.button("Score", key=f"{key}:score", on_click=start_job, args=("score", {}, "scoring"))
    elif s.next_step == "audit":
        st.page_link("pages/triage.py", label="Audit the proposed verdicts", icon=":material/fact_check:",
                     help=md_escape(s.then, limit=600))
    else:
        st.text(s.next_step)


@st.fragment(run_every=1.0 if JOBS.running(store.path) else None)
def guided_path() -> None:
    st.subheader("Per task: what exists and the next step")
    st.caption("Import → checklist (draft or synthesize, then edit and save) → judge → score → audit. "
               + ("" if llm_ready else "No LLM is configured: draft checklists offline and judge with probe."))
    notice = st.session_state.pop("overview:notice", None)
    if notice:
        (st.warning if notice.startswith("Not started") else st.success)(md_escape(notice, limit=500))
    running = JOBS.running(store.path)
    if running:
        st.text("Running: " + ", ".join(f"{j.kind} job {j.id}" for j in running))
    statuses = cached_task_status(store, llm_ready)
    active = [s for s in statuses if s.trajectories]
    active = paged(active, "overview:tasks", TASKS_PER_PAGE, "tasks")
    header = st.columns([3, 2, 3, 2, 1.5, 3.5])
    for col, name in zip(header, ("task", "checklist", "judged", "scored", "audited", "next step")):
        col.caption(name)
    for s in active:
        with st.container(border=True, key=f"overview-task-{s.task}"):
            cols = st.columns([3, 2, 3, 2, 1.5, 3.5], vertical_alignment="center")
            cols[0].text(f"{s.task}\n{s.trajectories} trajectories · {s.verifier_tests} verifier tests")
            cols[1].text(f"v{s.checklist_version} · {s.checklist_items} items" if s.checklist_version
                         else ("failed synthesis only" if s.failed_versions else "no checklist"))
            cols[2].text(s.counts(s.judged) + (f"\nstale: {s.counts(s.stale)}" if s.stale else ""))
            cols[3].text(s.counts(s.scored))
            cols[4].text(f"{s.audited_items} item" + ("" if s.audited_items == 1 else "s"))
            with cols[5]:
                next_action(s)
            if s.command:
                st.code(s.command + (f"\n# then: {s.then}" if s.then else ""), language="bash", wrap_lines=True)
    idle = [s for s in statuses if not s.trajectories]
    if idle:
        with st.expander(f"{len(idle)} task(s) without trajectories"):
            st.dataframe(visible_frame(status_frame(idle)), hide_index=True, width="stretch")
    was_running = st.session_state.get("overview:was_running", False)
    st.session_state["overview:was_running"] = bool(running)
    if bool(running) != was_running:
        # a job started (poll this section every second) or ended (redraw the whole page with its results)
        st.rerun()


guided_path()
stats = cached_judge_stats(store)

st.subheader("Per task and condition")
per_task = trajectories.groupby(["task", "condition", "outcome"]).size().unstack("outcome", fill_value=0).reset_index()
st.dataframe(visible_frame(per_task), hide_index=True, width="stretch")

st.subheader("Judges")
judges = judges_frame(trajectories, stats)
if judges.empty:
    st.text("No judge has run yet: take the next step above, or use the Runs page.")
else:
    for warning in judge_warnings(stats):
        st.warning(md_escape(warning[0].upper() + warning[1:], limit=800))
    st.dataframe(visible_frame(judges), hide_index=True, width="stretch")
studies = studies_frame(store)
if not studies.empty:
    st.subheader("Human studies")
    st.dataframe(visible_frame(studies), hide_index=True, width="stretch")

st.subheader("Trajectories")
f = st.columns(3)
filters = AuditFilters(
    tasks=tuple(f[0].multiselect("Task", sorted(trajectories["task"].unique()), key="overview_task")),
    outcomes=tuple(f[1].multiselect("Outcome", ["PASS", "FAIL", "unscored"], key="overview_outcome")),
    conditions=tuple(f[2].multiselect("Condition", sorted(trajectories["condition"].unique()), key="overview_condition")),
)
view = overview_trajectories(trajectories, stats, filters)
picked = st.dataframe(visible_frame(view), hide_index=True, width="stretch", key="overview_table", on_select="rerun",
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

issues = store.trials.import_issues()
if issues:
    st.subheader("Skipped at import")
    st.dataframe(visible_frame(pd.DataFrame([i.model_dump() for i in issues])[["run_at", "path", "reason"]]), hide_index=True, width="stretch")

# the Agreement and Triage pages' first views, computed while the auditor reads this page
prefetch_pages(store, app_base_url())
