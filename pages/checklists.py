"""Checklists: stored versions per task with gate results; the editor beside its sources (the instruction to
quote — any span selected with the mouse or the keyboard, or a whole sentence — and the verifier tests to mirror), gated live
and saved as a new frozen version; LLM synthesis when an endpoint is configured. `?task=T&start=draft` opens the editor on T's offline draft.

Layout and widgets only: `gcpc_core.review.checklists` parses, gates and stores; synthesis runs as a
background job (`gcpc_core.review.runs`). Checklist and task text is shown with st.text / st.code /
st.dataframe only, and in the quote-selection component, which sets it as textContent (`ui.select_quote`).
"""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd
import streamlit as st

from gcpc_core.llm import llm_status
from gcpc_core.checklist import GATES
from gcpc_core.review.checklists import (
    EditError,
    add_quoted_item,
    add_ref,
    add_test_item,
    check_text,
    checklist_text,
    draft_text,
    failures_by_item,
    failures_frame,
    gate_table,
    human_source,
    instruction_spans,
    is_verbatim,
    item_ids,
    save_text,
    set_quote,
    skeleton,
    stored_gate_results,
    verifier_source,
    versions_frame,
)
from gcpc_core.review.quote_select import SelectionError, selection_quote
from gcpc_core.review.runs import JOBS
from gcpc_core.text import md_escape
from gcpc_core.review.ui import cached_rules, cached_task_table, require_store, reviewer, select_quote, visible_frame
from gcpc_core.store import ChecklistRow

store = require_store()
rules = cached_rules()
st.title("Checklists")
st.caption(f"Gates G1–G6 run under rules version {md_escape(rules.version)}. A frozen checklist never changes: an edit is "
           "stored as the task's next version.")
tasks = cached_task_table(store)
if tasks.empty:
    st.info("No tasks imported yet.")
    st.stop()
st.dataframe(tasks, hide_index=True, width="stretch")
query = (st.query_params.get("task"), st.query_params.get("start"))
fresh_query = query[0] in set(tasks["task"]) and st.session_state.get("checklists:query") != query
if fresh_query:  # a link from the Overview's guided path: open its task (once; later choices are the user's)
    st.session_state["checklists:query"] = query
    st.session_state["checklists:task"] = query[0]
task_id = st.selectbox("Task", list(tasks["task"]), key="checklists:task")
task = store.trials.get_task(task_id)
assert task is not None
rows = store.checklists.list(task=task_id, status=None)


def show_gates(failures: list, *, heading: str) -> None:
    st.caption(heading)
    st.dataframe(gate_table(failures), hide_index=True, width="stretch")
    if failures:
        st.dataframe(failures_frame(failures), hide_index=True, width="stretch")


has_frozen = any(r.status == "frozen" for r in rows)
stored_tab, edit_tab, synth_tab = st.tabs(["Stored versions", "Edit by hand", "Synthesize"],
                                          default="Edit by hand" if not has_frozen or query[1] == "draft" else None)

with stored_tab:
    if not rows:
        st.info("This task has no checklist yet: start from the offline draft under 'Edit by hand', or synthesize one.")
    else:
        st.dataframe(versions_frame(rows), hide_index=True, width="stretch")
        by_version = {r.version: r for r in rows}
        version = st.selectbox("Version", sorted(by_version, reverse=True), key=f"checklists:version:{task_id}",
                               format_func=lambda v: f"v{v} · {by_version[v].status} · {by_version[v].source}")
        row = by_version[version]
        st.text(f"sha {row.sha} · rules {row.rules_version} · created {row.created_at} by {row.created_by}")
        if row.status == "failed":
            st.text("Failed: " + (row.reason or "gates failed"))
            show_gates(row.gate_failures or [], heading="Gate failures when it was produced")
        failures = stored_gate_results(row, task, rules)
        show_gates(failures, heading="Gates under the current rules")
        if row.checklist:
            items = pd.DataFrame([{**i, "verifier_refs": "\n".join(i.get("verifier_refs", [])),
                                   "probes": len(i.get("probes", []))} for i in row.checklist["items"]])
            st.dataframe(visible_frame(items), hide_index=True, width="stretch")
            waivers = row.checklist.get("waivers") or []
            if waivers:
                st.caption("Waivers")
                st.dataframe(pd.DataFrame(waivers), hide_index=True, width="stretch")
            st.download_button("Download YAML", checklist_text(row.checklist), file_name=f"{task_id}-v{version}.yaml",
                               mime="application/yaml", key=f"checklists:download:{task_id}:{version}")

with edit_tab:
    who = reviewer()
    source = human_source(who)
    frozen = [r for r in rows if r.status == "frozen" and r.checklist]
    DRAFT, SKELETON = "the offline draft (from the instruction and the verifier, no LLM)", "an empty skeleton"
    starts: dict[str, ChecklistRow | str] = {f"v{r.version} ({r.source})": r for r in reversed(frozen)}
    starts = {**starts, DRAFT: "draft", SKELETON: "skeleton"} if frozen else {DRAFT: "draft", **starts, SKELETON: "skeleton"}
    start_key, text_key = f"checklists:start:{task_id}", f"checklists:text:{task_id}"
    notice_key, span_key = "checklists:notice", f"checklists:span:{task_id}"
    if fresh_query and query[1] == "draft":
        st.session_state[start_key] = DRAFT
        st.session_state.pop(text_key, None)
    start = st.selectbox("Start from", list(starts), key=start_key)

    def load_start() -> None:
        picked = starts.get(st.session_state[start_key])
        if picked == "draft":
            st.session_state[text_key] = draft_text(task, rules)
        elif picked == "skeleton" or picked is None:
            st.session_state[text_key] = skeleton(task, source=source)
        else:
            st.session_state[text_key] = checklist_text(picked.checklist, source=source)

    def edit(change: Callable[[str], tuple[str, str]]) -> None:
        """Apply one editor tool to the text; say what it did (or why not) above the editor."""
        try:
            st.session_state[text_key], st.session_state[notice_key] = change(st.session_state[text_key])
        except (EditError, ValueError) as exc:
            st.session_state[notice_key] = f"Not changed: {exc}"

    NEW = {"a new generated item": "generated", "a new judge item": "judge"}

    def quote(span: str | None) -> None:
        text = st.session_state.get(span_key, "") if span is None else span
        target = st.session_state.get(f"checklists:quote_target:{task_id}")
        if target in NEW:
            edit(lambda t: (lambda r: (r[0], f"Added {r[1]} ({NEW[target]}) quoting the instruction."))(
                add_quoted_item(t, NEW[target], text)))
        elif target:
            edit(lambda t: (set_quote(t, target, text), f"Task quote of {target} set."))

    select_key = f"checklists:select:{task_id}"

    def quote_selection() -> None:
        """A selection in the instruction (mouse or keyboard): the exact span of instruction.md it covers becomes the quote."""
        try:
            span, start, end = selection_quote(task.instruction, st.session_state.get(select_key),
                                               min_chars=rules.contract.quote.min_chars)
        except SelectionError as exc:
            st.session_state[notice_key] = f"Not changed: {exc}"
            return
        quote(span)
        notice = st.session_state.get(notice_key)
        if notice and not notice.startswith("Not changed"):
            st.session_state[notice_key] = f"{notice} (characters {start:,}–{end:,} of instruction.md)"

    def use_test(node_id: str) -> None:
        target = st.session_state.get(f"checklists:ref_target:{task_id}")
        if target and target != NEW_ASSERTION:
            edit(lambda t: (add_ref(t, target, node_id), f"{node_id} added to the refs of {target}."))
        else:
            edit(lambda t: (lambda r: (r[0], f"Added {r[1]} (assertion) for {node_id}."))(
                add_test_item(t, task, node_id, rules)))

    if text_key not in st.session_state:
        load_start()
    st.button("Load into the editor (replaces the text below)", key=f"checklists:load:{task_id}", on_click=load_start)
    notice = st.session_state.pop(notice_key, None)
    if notice:
        (st.warning if notice.startswith("Not changed") else st.success)(md_escape(notice, limit=1000))

    ids = item_ids(st.session_state[text_key])
    NEW_ASSERTION = "a new assertion item"
    src = st.columns(2, gap="medium")
    with src[0]:
        st.subheader("Instruction")
        st.selectbox("Quote into", [*ids, *NEW], key=f"checklists:quote_target:{task_id}",
                     help="Select any part of the instruction (mouse, or Shift+arrows), or press Quote beside a sentence, to "
                          "make it this item's task quote (G1 needs a verbatim span)")
        st.caption("Select text with the mouse, or click into it and extend with Shift+arrows (Ctrl+A: all of it): "
                   "it becomes the task quote of the item chosen above. "
                   "Invisible characters are shown as ⟨U+XXXX⟩ and quoted as they are in instruction.md.")
        with st.container(key=f"checklists-select-{task_id}"):
            select_quote(task.instruction, select_key, quote_selection)
        st.caption("Or quote a whole sentence:")
        with st.container(height=300, key=f"checklists-instruction-{task_id}"):
            for k, span in enumerate(instruction_spans(task, rules)):
                row = st.columns([9, 2], vertical_alignment="center")
                row[0].text(span.text)
                row[1].button("Quote", key=f"checklists:quote:{task_id}:{k}", on_click=quote, args=(span.text,))
        st.text_input("Or quote part of a sentence: paste or trim a span of the instruction", key=span_key)
        part = st.session_state.get(span_key, "")
        if part.strip():
            ok = is_verbatim(part, task, rules)
            st.text("✓ verbatim in instruction.md" if ok else "✗ not a verbatim span of instruction.md (G1 would fail)")
        st.button("Use as task quote", key=f"checklists:quote_part:{task_id}", on_click=quote, args=(None,),
                  disabled=not part.strip())
    with src[1]:
        st.subheader("Verifier tests")
        st.selectbox("Add the test to", [NEW_ASSERTION, *ids], key=f"checklists:ref_target:{task_id}",
                     help="A new assertion item mirrors the test (ref set, text from its docstring); an existing "
                          "item gets the test as one more verifier ref")
        with st.container(height=460, key=f"checklists-tests-{task_id}"):
            if not task.tests:
                st.text("This task's verifier has no pytest test nodes and no script: no assertion items are needed (G5).")
            for k, test in enumerate(task.tests):
                with st.container(border=True, key=f"checklists-test-{k}"):
                    head = st.columns([9, 2], vertical_alignment="center")
                    head[0].text(test.node_id + (" (parametrized)" if test.parametrized else "")
                                 + (" (the verifier script as a whole)" if test.kind == "script" else ""))
                    head[1].button("Add", key=f"checklists:test:{task_id}:{test.node_id}", on_click=use_test,
                                   args=(test.node_id,))
                    if test.docstring:
                        st.text(test.docstring)
                    with st.expander("Source"):
                        st.code(verifier_source(task, test), language="bash" if test.file.endswith(".sh") else "python")

    editor, gates_col = st.columns(2, gap="medium")
    with editor:
        st.subheader("Checklist")
        st.text_area("Checklist (YAML or JSON, the checklist-file schema)", key=text_key, height=620,
                     help="Gates re-run on every change (click outside the box or press Ctrl+Enter)")
    check = check_text(st.session_state[text_key], task, rules)
    with gates_col:
        st.subheader("Gates")
        if check.ok:
            st.success("Every gate passes: this can be saved as a new frozen version.")
        else:
            st.error(f"{len(check.failures)} gate failure(s): fix them to save.")
        with st.container(key="checklists-edit-gate-table"):
            st.dataframe(gate_table(list(check.failures)), hide_index=True, width="stretch")
        by_item = failures_by_item(list(check.failures))
        with st.container(height=420, key=f"checklists-gates-{task_id}"):
            for item_id, failures in by_item.items():
                if check.checklist is not None and item_id in {i.id for i in check.checklist.items}:
                    continue
                with st.container(border=True):
                    st.text("Checklist as a whole" if item_id == "-" else item_id)
                    for f in failures:
                        st.error(md_escape(f"{f.gate} {GATES.get(f.gate, '')}: {f.message}", limit=2000))
            for k, item in enumerate(check.checklist.items if check.checklist is not None else []):
                with st.container(border=True, key=f"checklists-item-{k}"):
                    st.text(f"{item.id} · {item.route}: {item.text}")
                    for f in by_item.get(item.id, []):
                        st.error(md_escape(f"{f.gate} {GATES.get(f.gate, '')}: {f.message}", limit=2000))
                    if item.id not in by_item:
                        st.caption("passes every item gate")
    if not who:
        st.warning("Set your reviewer name in the sidebar: a hand edit is stored under it.")
    if st.button("Save as a new version", key=f"checklists:save:{task_id}", type="primary",
                 disabled=not (check.ok and who),
                 help="Freezes the text as the task's next version under your name (a draft becomes human:<you>)"):
        row, _ = save_text(store, st.session_state[text_key], task, rules, reviewer=who)
        if row is None:
            st.error("Not saved: a gate failed.")
        else:
            st.success(f"Stored as version {row.version} (sha {row.sha[:12]}).")

with synth_tab:
    usable, reason = llm_status()
    st.text(reason)
    force = st.toggle("Even if the task already has a frozen checklist", key=f"checklists:force:{task_id}")
    if st.button("Synthesize a checklist for this task", key=f"checklists:synth:{task_id}", disabled=not usable,
                 help=None if usable else "Configure OPENAI_BASE_URL / OPENAI_API_KEY and GCPC_MODEL first"):
        job = JOBS.start(store.path, "synthesize", {"task": task_id, "force": force})
        st.success(f"Synthesis job {job.id} started: follow it on the Runs page.")
