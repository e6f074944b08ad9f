"""Checklists: stored versions per task with gate results; hand edits gated live and saved as a new
frozen version; LLM synthesis when an endpoint is configured.

Layout and widgets only: `gcpc_core.review.checklists` parses, gates and stores; synthesis runs as a
background job (`gcpc_core.review.runs`). Checklist and task text is shown with st.text / st.code /
st.dataframe only.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from gcpc_core.llm import llm_status
from gcpc_core.review.checklists import (
    check_text,
    checklist_text,
    failures_frame,
    gate_table,
    human_source,
    save_text,
    skeleton,
    stored_gate_results,
    versions_frame,
)
from gcpc_core.review.runs import JOBS
from gcpc_core.review.ui import cached_rules, cached_task_table, require_store, reviewer, visible_frame

store = require_store()
rules = cached_rules()
st.title("Checklists")
st.caption(f"Gates G1–G6 run under rules version {rules.version}. A frozen checklist never changes: an edit is "
           "stored as the task's next version.")
tasks = cached_task_table(store)
if tasks.empty:
    st.info("No tasks imported yet.")
    st.stop()
st.dataframe(tasks, hide_index=True, width="stretch")
task_id = st.selectbox("Task", list(tasks["task"]), key="checklists:task")
task = store.get_task(task_id)
assert task is not None
rows = store.checklists(task=task_id, status=None)


def show_gates(failures: list, *, heading: str) -> None:
    st.caption(heading)
    st.dataframe(gate_table(failures), hide_index=True, width="stretch")
    if failures:
        st.dataframe(failures_frame(failures), hide_index=True, width="stretch")


stored_tab, edit_tab, synth_tab = st.tabs(["Stored versions", "Edit by hand", "Synthesize"])

with stored_tab:
    if not rows:
        st.info("This task has no checklist yet: write one under 'Edit by hand', or synthesize one.")
    else:
        st.dataframe(versions_frame(rows), hide_index=True, width="stretch")
        by_version = {r["version"]: r for r in rows}
        version = st.selectbox("Version", sorted(by_version, reverse=True), key=f"checklists:version:{task_id}",
                               format_func=lambda v: f"v{v} · {by_version[v]['status']} · {by_version[v]['source']}")
        row = by_version[version]
        st.text(f"sha {row['sha']} · rules {row['rules_version']} · created {row['created_at']} by {row['created_by']}")
        if row["status"] == "failed":
            st.text("Failed: " + (row["reason"] or "gates failed"))
            show_gates(row["gate_failures"] or [], heading="Gate failures when it was produced")
        failures = stored_gate_results(row, task, rules)
        show_gates(failures, heading="Gates under the current rules")
        if row["checklist"]:
            items = pd.DataFrame([{**i, "verifier_refs": "\n".join(i.get("verifier_refs", [])),
                                   "probes": len(i.get("probes", []))} for i in row["checklist"]["items"]])
            st.dataframe(visible_frame(items), hide_index=True, width="stretch")
            waivers = row["checklist"].get("waivers") or []
            if waivers:
                st.caption("Waivers")
                st.dataframe(pd.DataFrame(waivers), hide_index=True, width="stretch")
            st.download_button("Download YAML", checklist_text(row["checklist"]), file_name=f"{task_id}-v{version}.yaml",
                               mime="application/yaml", key=f"checklists:download:{task_id}:{version}")

with edit_tab:
    who = reviewer()
    source = human_source(who)
    frozen = [r for r in rows if r["status"] == "frozen" and r["checklist"]]
    starts = {f"v{r['version']} ({r['source']})": r for r in reversed(frozen)}
    start = st.selectbox("Start from", [*starts, "an empty skeleton (one item per verifier test)"],
                         key=f"checklists:start:{task_id}")
    text_key = f"checklists:text:{task_id}"

    def load_start() -> None:
        picked = starts.get(st.session_state[f"checklists:start:{task_id}"])
        st.session_state[text_key] = (checklist_text(picked["checklist"], source=source) if picked
                                      else skeleton(task, source=source))

    if text_key not in st.session_state:
        load_start()
    st.button("Load into the editor (replaces the text below)", key=f"checklists:load:{task_id}", on_click=load_start)
    st.text_area("Checklist (YAML or JSON, the checklist-file schema)", key=text_key, height=480,
                 help="Gates re-run on every change (click outside the box or press Ctrl+Enter)")
    check = check_text(st.session_state[text_key], task, rules)
    if check.ok:
        st.success("Every gate passes: this can be saved as a new frozen version.")
    else:
        st.error(f"{len(check.failures)} gate failure(s): fix them to save.")
    show_gates(list(check.failures), heading="Gates on the text above")
    if not who:
        st.warning("Set your reviewer name in the sidebar: a hand edit is stored under it.")
    if st.button("Save as a new version", key=f"checklists:save:{task_id}", type="primary",
                 disabled=not (check.ok and who)):
        row, _ = save_text(store, st.session_state[text_key], task, rules, reviewer=who)
        if row is None:
            st.error("Not saved: a gate failed.")
        else:
            st.success(f"Stored as version {row['version']} (sha {row['sha'][:12]}).")

with synth_tab:
    usable, reason = llm_status()
    st.text(reason)
    force = st.toggle("Even if the task already has a frozen checklist", key=f"checklists:force:{task_id}")
    if st.button("Synthesize a checklist for this task", key=f"checklists:synth:{task_id}", disabled=not usable,
                 help=None if usable else "Configure OPENAI_BASE_URL / OPENAI_API_KEY and GCPC_MODEL first"):
        job = JOBS.start(store.path, "synthesize", {"task": task_id, "force": force})
        st.success(f"Synthesis job {job.id} started: follow it on the Runs page.")
