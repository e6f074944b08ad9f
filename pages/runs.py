"""Runs (admin): start import / judge / score / synthesis jobs on the current project and watch them;
every run with its tokens, cost and time.

Layout and widgets only: jobs run in background threads (`gcpc_core.review.runs.JOBS`); progress and
cost are read from the project DB, so runs started from the command line show up live as well.
"""

from __future__ import annotations

import os

import streamlit as st

from gcpc_core.judge import JUDGES
from gcpc_core.llm import DEFAULT_CONCURRENCY, ENV_CONCURRENCY, llm_status
from gcpc_core.ingest.archive import ARCHIVE_SUFFIXES
from gcpc_core.review.runs import (ARCHIVE_HOLDS, JOBS, endpoint_check, job_progress, job_run, judge_runs_frame,
                                   needs_llm, runs_frame, start_archive_import)
from gcpc_core.text import md_escape
from gcpc_core.review.ui import require_store

store = require_store()
st.title("Runs")
usable, reason = llm_status(store=store)
st.text(("LLM endpoint ready: " if usable else "") + reason)
if st.button("Check the LLM endpoint", key="runs:llm_check", help="Same probe as `python -m gcpc_core llm check`"):
    with st.spinner("Probing the endpoint (one tiny round trip)…"):
        st.code("\n".join(endpoint_check(store)), language=None, wrap_lines=True)


def start(kind: str, params: dict) -> None:
    try:
        job = JOBS.start(store.path, kind, params)
    except ValueError as exc:
        st.session_state["runs:error"] = str(exc)
    else:
        st.session_state["runs:started"] = f"Started {kind} job {job.id}."


def start_upload() -> None:
    upload = st.session_state.get("runs:archive")
    if upload is None:
        return
    try:
        job = start_archive_import(store.path, upload.name, upload.getvalue(),
                                   holds=st.session_state.get("runs:archive_holds", "trials"))
    except (ValueError, OSError) as exc:  # ArchiveError is a ValueError: it names the refused member
        st.session_state["runs:error"] = f"{upload.name}: archive refused: {exc}"
    else:
        st.session_state["runs:started"] = f"Unpacked {upload.name}; started import job {job.id}."


import_tab, judge_tab, score_tab, synth_tab = st.tabs(["Import", "Judge", "Score", "Synthesize checklists"])
with import_tab:
    tasks_dir = st.text_input("Tasks folder (Harbor task layout)", key="runs:tasks_dir")
    trials_dir = st.text_input("Trials folder (Harbor trial folders)", key="runs:trials_dir")
    st.button("Start import", key="runs:import", disabled=not (tasks_dir or trials_dir), on_click=start,
              args=("import", {"tasks_dir": tasks_dir.strip(), "trials_dir": trials_dir.strip()}))
    st.divider()
    upload = st.file_uploader("Or upload a zip or tar archive of them (unpacked beside the project DB; one unsafe "
                              "member — an absolute path, '..', a link — refuses it whole)",
                              type=sorted({suffix.rsplit(".", 1)[1] for suffix in ARCHIVE_SUFFIXES}), key="runs:archive")
    st.radio("The archive holds", list(ARCHIVE_HOLDS), horizontal=True, key="runs:archive_holds")
    st.button("Unpack and import", key="runs:import_archive", disabled=upload is None, on_click=start_upload)
with judge_tab:
    cols = st.columns(4)
    judge = cols[0].selectbox("Judge", list(JUDGES), index=JUDGES.index("probe"), key="runs:judge")
    model = cols[1].text_input("Model", value=os.environ.get("GCPC_MODEL", ""), key="runs:model")
    limit = cols[2].number_input("Limit (empty: all)", min_value=1, value=None, key="runs:limit",
                                 help="Judge at most this many trajectories now; leave empty to judge every one")
    concurrency = cols[3].number_input("Concurrency (empty: default)", min_value=1, value=None, key="runs:concurrency",
                                       help=f"HTTP requests in flight at once; leave empty for {ENV_CONCURRENCY} when "
                                            f"it is set, else {DEFAULT_CONCURRENCY}")
    label = st.text_input("Run label (optional)", key="runs:label",
                          help="Name this run; empty: derived from judge, model, prompt and rules version. Runs under "
                               "other labels are kept side by side (the Compare runs page compares two); the same "
                               "label resumes or replaces that run.")
    force = st.toggle("Judge already judged trajectories again", key="runs:force")
    params = {"judge": judge, "model": model.strip(), "limit": None if limit is None else int(limit), "concurrency": None if concurrency is None else int(concurrency),
              "force": force, "label": label.strip()}
    blocked = needs_llm("judge", params) and not usable
    if blocked:
        st.text(f"The {judge} judge calls an LLM: {reason}")
    st.button("Start judging", key="runs:start_judge", disabled=blocked, on_click=start, args=("judge", params))
with score_tab:
    st.text("Postprocess every judged trajectory (official outcome) and write its scores; evidence coverage "
            "counts the judge's raw verdicts, before the official outcome fills any in.")
    st.button("Start scoring", key="runs:score", on_click=start, args=("score", {}))
with synth_tab:
    tasks = ["all tasks without a frozen checklist", *sorted(store.trials.task_ids())]
    task = st.selectbox("Task", tasks, key="runs:synth_task")
    synth = {"task": None if task == tasks[0] else task, "model": os.environ.get("GCPC_MODEL", "")}
    st.button("Start synthesis", key="runs:synthesize", disabled=not usable, on_click=start, args=("synthesize", synth),
              help=None if usable else md_escape(reason, limit=600))

message = st.session_state.pop("runs:started", None)
if message:
    st.success(md_escape(message, limit=600))
error = st.session_state.pop("runs:error", None)
if error:
    st.error("Not started: " + md_escape(error))


@st.fragment(run_every=1.0 if JOBS.running(store.path) else None)
def live() -> None:
    """Jobs of this server and the runs table, refreshed every second while a job runs."""
    jobs = JOBS.jobs(store.path)
    if jobs:
        st.subheader("Jobs started here")
    for job in jobs:
        with st.container(border=True):
            st.text(f"{job.kind} job {job.id} · {job.status} · started {job.started_at}"
                    + (f" · finished {job.finished_at}" if job.finished_at else ""))
            run = job_run(store, job)
            if run is not None:
                done, total = job_progress(store, job, run)
                if total:
                    st.progress(min(1.0, (done or 0) / total), text=f"{done} of {total}")
                live_totals = store.runs.progress(run.id)
                st.text(f"run {run.id} · {live_totals.calls} LLM calls · "
                        f"{live_totals.prompt_tokens + live_totals.completion_tokens:,} tokens · "
                        f"${live_totals.cost_usd:.4f}")
            if job.error:
                st.error("Failed: " + md_escape(job.error.splitlines()[0]))
            if job.lines:
                st.code("\n".join(job.lines), language=None, wrap_lines=True)
    st.subheader("Labelled judge runs")
    st.dataframe(judge_runs_frame(store), hide_index=True, width="stretch", column_config={
        "run": st.column_config.TextColumn("run", help="judge · model · prompt version · date of its latest write"),
        "label": st.column_config.TextColumn("label", help="The full label (`judge --label`, `export --run`)")})
    st.subheader("All runs")
    st.dataframe(runs_frame(store), hide_index=True, width="stretch")
    if not JOBS.running(store.path) and st.session_state.get("runs:was_running"):
        st.session_state["runs:was_running"] = False
        st.rerun()  # the last job ended: refresh the whole page once and stop polling
    st.session_state["runs:was_running"] = bool(JOBS.running(store.path))


live()
