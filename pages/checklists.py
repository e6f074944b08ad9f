"""Checklists: stored versions per task with gate results; the editor — one form row per item (text, route,
task quote, refs; move, duplicate, split, delete), gated live per row, with the YAML as an advanced view of the
same text — beside its sources (the instruction to quote — any span selected with the mouse or the keyboard, or
a whole sentence, marked when an item quotes it already — and the verifier tests to mirror, marked when still
uncovered), saved as a new frozen version; LLM synthesis when an endpoint is configured. `?task=T&start=draft`
opens the editor on T's offline draft.

Layout and widgets only: `gcpc_core.review.checklists` parses, gates and stores, `gcpc_core.review.checklist_form`
reads the form's rows from the text and turns each row operation into new text; synthesis runs as a
background job (`gcpc_core.review.runs`). Checklist and task text is shown with st.text / st.code /
st.dataframe, in widget values and option labels with invisible characters made visible, and in the
quote-selection component, which sets it as textContent (`ui.select_quote`).
"""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd
import streamlit as st

from gcpc_core.llm import llm_status
from gcpc_core.review.checklist_form import (
    add_item,
    delete_item,
    duplicate_item,
    failure_message,
    from_visible,
    move_item,
    read_form,
    ref_label,
    ref_note,
    ref_options,
    route_options,
    save_notice,
    sentence_label,
    sentence_marks,
    sentence_of,
    set_item_field,
    set_item_refs,
    split_item,
    split_texts,
    target_label,
)
from gcpc_core.review.checklists import (
    EditError,
    add_quoted_item,
    add_ref,
    add_test_item,
    check_text,
    checklist_text,
    draft_text,
    failures_frame,
    gate_table,
    human_source,
    instruction_spans,
    is_verbatim,
    save_text,
    set_quote,
    skeleton,
    stored_gate_results,
    verifier_source,
    versions_frame,
)
from gcpc_core.review.quote_select import SelectionError, selection_quote
from gcpc_core.review.runs import JOBS
from gcpc_core.text import md_escape, show_invisible
from gcpc_core.review.ui import (cached_rules, cached_task_table, require_store, reviewer, select_quote, show_code,
                                 show_text, visible_frame)
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
    history_key, seen_key = f"checklists:history:{task_id}", f"checklists:seen:{task_id}"
    if fresh_query and query[1] == "draft":
        st.session_state[start_key] = DRAFT
        st.session_state.pop(text_key, None)
    start = st.selectbox("Start from", list(starts), key=start_key)

    def remember(text: str) -> None:
        """Keep `text` for Undo (the last 30 texts the editor held)."""
        st.session_state[history_key] = [*st.session_state.get(history_key, []), text][-30:]

    def load_start() -> None:
        if text_key in st.session_state:
            remember(st.session_state[text_key])
        picked = starts.get(st.session_state[start_key])
        if picked == "draft":
            st.session_state[text_key] = draft_text(task, rules)
        elif picked == "skeleton" or picked is None:
            st.session_state[text_key] = skeleton(task, source=source)
        else:
            st.session_state[text_key] = checklist_text(picked.checklist, source=source)

    def edit(change: Callable[[str], tuple[str, str | None]]) -> None:
        """Apply one editor tool to the text; say what it did (or why not) above the editor."""
        before = st.session_state[text_key]
        try:
            after, notice = change(before)
        except (EditError, ValueError) as exc:
            st.session_state[notice_key] = f"Not changed: {exc}"
            return
        if after != before:
            remember(before)
            st.session_state[text_key] = after
        if notice:
            st.session_state[notice_key] = notice

    def undo() -> None:
        history = st.session_state.get(history_key, [])
        if history:
            st.session_state[text_key] = history.pop()
            st.session_state[notice_key] = "Undone: the editor holds the text before the last change."

    def yaml_edited() -> None:
        """The YAML view was edited by hand: the text it replaced is kept for Undo."""
        if seen_key in st.session_state:
            remember(st.session_state[seen_key])

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

    def field_key(k: int, name: str) -> str:
        return f"checklists:form:{task_id}:{k}:{name}"

    def set_field(k: int, item_id: str, field: str) -> None:
        value = st.session_state[field_key(k, field)]
        edit(lambda t: set_item_field(t, k, item_id, field, value if field == "route" else from_visible(value)))

    def pick_sentence(k: int, item_id: str) -> None:
        picked = st.session_state[field_key(k, "pick")]
        if picked is not None:
            edit(lambda t: set_item_field(t, k, item_id, "task_quote", spans[picked].text))

    def set_refs(k: int, item_id: str) -> None:
        refs = st.session_state[field_key(k, "verifier_refs")]
        edit(lambda t: set_item_refs(t, k, item_id, refs))

    if text_key not in st.session_state:
        load_start()
    tools = st.columns([3, 1], vertical_alignment="center")
    tools[0].button("Load into the editor (replaces the text below)", key=f"checklists:load:{task_id}", on_click=load_start)
    tools[1].button("Undo", key=f"checklists:undo:{task_id}", on_click=undo, disabled=not st.session_state.get(history_key),
                    help="Back to the text before the last change (a tool, a form field, a load or a YAML edit)")
    notice = st.session_state.pop(notice_key, None)
    if notice:
        (st.warning if notice.startswith("Not changed") else st.success)(md_escape(notice, limit=1000))

    text = st.session_state[text_key]
    check = check_text(text, task, rules)
    spans = instruction_spans(task, rules)
    try:
        form, unreadable = read_form(text, check, task, rules), None
    except EditError as exc:
        form, unreadable = None, str(exc)
    rows_shown = [i for i in form.items if i.readable] if form else []
    targets = {i.id: target_label(i) for i in reversed(rows_shown)}  # the first item of an id names it
    targets = {i.id: targets[i.id] for i in rows_shown}
    marks = sentence_marks(rows_shown, spans, rules)
    labels = [sentence_label(s, m) for s, m in zip(spans, marks)]
    covered, waived = (form.covered, form.waived) if form else ({}, frozenset())

    NEW_ASSERTION = "a new assertion item"
    src = st.columns(2, gap="medium")
    with src[0]:
        st.subheader("Instruction")
        st.selectbox("Quote into", [*targets, *NEW], key=f"checklists:quote_target:{task_id}",
                     format_func=lambda v: targets.get(v, v),
                     help="Select any part of the instruction (mouse, or Shift+arrows), or press Quote beside a sentence, to "
                          "make it this item's task quote (G1 needs a verbatim span)")
        st.caption("Select text with the mouse, or click into it and extend with Shift+arrows (Ctrl+A: all of it): "
                   "it becomes the task quote of the item chosen above. "
                   "Invisible characters are shown as ⟨U+XXXX⟩ and quoted as they are in instruction.md.")
        with st.container(key=f"checklists-select-{task_id}"):
            select_quote(task.instruction, select_key, quote_selection)
        st.caption("Or quote a whole sentence (✓: an item quotes it already):")
        with st.container(height=300, key=f"checklists-instruction-{task_id}"):
            for k, span in enumerate(spans):
                row = st.columns([6, 2, 2], vertical_alignment="center")
                with row[0]:
                    show_text(span.text)
                row[1].caption(md_escape("✓ " + ", ".join(marks[k]), limit=300) if marks[k] else "not quoted")
                row[2].button("Quote", key=f"checklists:quote:{task_id}:{k}", on_click=quote, args=(span.text,))
        st.text_input("Or quote part of a sentence: paste or trim a span of the instruction", key=span_key)
        part = st.session_state.get(span_key, "")
        if part.strip():
            ok = is_verbatim(part, task, rules)
            st.text("✓ verbatim in instruction.md" if ok else "✗ not a verbatim span of instruction.md (G1 would fail)")
        st.button("Use as task quote", key=f"checklists:quote_part:{task_id}", on_click=quote, args=(None,),
                  disabled=not part.strip())
    with src[1]:
        st.subheader("Verifier tests")
        st.selectbox("Add the test to", [NEW_ASSERTION, *targets], key=f"checklists:ref_target:{task_id}",
                     format_func=lambda v: targets.get(v, v),
                     help="A new assertion item mirrors the test (ref set, text from its docstring); an existing "
                          "item gets the test as one more verifier ref")
        with st.container(height=460, key=f"checklists-tests-{task_id}"):
            if not task.tests:
                st.text("This task's verifier has no pytest test nodes and no script: no assertion items are needed (G5).")
            for k, test in enumerate(task.tests):
                with st.container(border=True, key=f"checklists-test-{k}"):
                    head = st.columns([9, 2], vertical_alignment="center")
                    with head[0]:
                        show_text(test.node_id + (" (parametrized)" if test.parametrized else "")
                                  + (" (the verifier script as a whole)" if test.kind == "script" else ""))
                    head[1].button("Add", key=f"checklists:test:{task_id}:{test.node_id}", on_click=use_test,
                                   args=(test.node_id,))
                    st.caption(md_escape(ref_note(test.node_id, task, covered, waived), limit=300))
                    if test.docstring:
                        show_text(test.docstring)
                    with st.expander("Source"):
                        show_code(verifier_source(task, test), language="bash" if test.file.endswith(".sh") else "python")

    st.subheader("Items")
    if check.ok:
        st.success("Every gate passes: this can be saved as a new frozen version.")
    else:
        st.error(f"{len(check.failures)} gate failure(s): fix them to save.")
    with st.container(key="checklists-edit-gate-table"):
        st.dataframe(gate_table(list(check.failures)), hide_index=True, width="stretch")
    if form is None:
        st.error(md_escape(f"The form cannot read the checklist text: {unreadable}. Fix it in the YAML view below.",
                           limit=2000))
    else:
        with st.container(key="checklists-general"):
            for f in form.general:
                st.error(md_escape(f"{'Checklist as a whole' if f.item_id == '-' else f.item_id} · "
                                   f"{failure_message(f)}", limit=2000))
        with st.container(key="checklists-uncovered"):
            if form.uncovered:
                st.text(f"{len(form.uncovered)} verifier test(s) still uncovered (in no assertion item's refs, not "
                        f"waived): pick them in an item's refs below, or press Add beside the test.")
                for node in form.uncovered:
                    show_text(f"  {node}")
            elif task.tests:
                st.text("Every verifier test is covered by an assertion item or waived.")
        last = len(form.items) - 1
        for item in form.items:
            k, item_id = item.index, item.id
            with st.container(border=True, key=f"checklists-item-{k}"):
                head = st.columns([3, 1.3, 1.5, 1.4, 1, 1.1], vertical_alignment="center")
                with head[0]:
                    show_text(f"{item_id} · {item.route}" if item.readable else f"{item_id} (not an item mapping)")
                halves = split_texts(item.text, rules) if item.readable else None
                head[1].button("Move up", key=field_key(k, "up"), disabled=k == 0,
                               on_click=lambda k=k, i=item_id: edit(lambda t: move_item(t, k, i, -1)))
                head[2].button("Move down", key=field_key(k, "down"), disabled=k == last,
                               on_click=lambda k=k, i=item_id: edit(lambda t: move_item(t, k, i, 1)))
                head[3].button("Duplicate", key=field_key(k, "duplicate"), disabled=not item.readable,
                               on_click=lambda k=k, i=item_id: edit(lambda t: duplicate_item(t, k, i)))
                head[4].button("Split", key=field_key(k, "split"), disabled=halves is None,
                               help=md_escape(f"Into: {halves[0]} / {halves[1]}", limit=600) if halves else
                               "The text has no ';', 'and' or ', then' to split at",
                               on_click=lambda k=k, i=item_id: edit(lambda t: split_item(t, k, i, rules)))
                head[5].button("Delete", key=field_key(k, "delete"),
                               on_click=lambda k=k, i=item_id: edit(lambda t: delete_item(t, k, i)))
                if item.readable:
                    label = md_escape(item_id, limit=40)
                    st.session_state[field_key(k, "text")] = show_invisible(item.text)
                    st.session_state[field_key(k, "route")] = item.route
                    st.session_state[field_key(k, "task_quote")] = show_invisible(item.task_quote)
                    st.session_state[field_key(k, "pick")] = sentence_of(item.task_quote, spans)
                    st.session_state[field_key(k, "verifier_refs")] = list(item.verifier_refs)
                    line = st.columns([5, 1])
                    line[0].text_input(f"Text of {label}", key=field_key(k, "text"), on_change=set_field,
                                       args=(k, item_id, "text"))
                    line[1].selectbox(f"Route of {label}", route_options(item.route), key=field_key(k, "route"),
                                      format_func=lambda r: r or "(none)", on_change=set_field,
                                      args=(k, item_id, "route"))
                    line = st.columns(2)
                    line[0].text_area(f"Task quote of {label}", key=field_key(k, "task_quote"), height=80,
                                      on_change=set_field, args=(k, item_id, "task_quote"),
                                      help="A verbatim span of instruction.md (G1); pick a sentence beside, or select "
                                           "a span in the instruction above with this item chosen under Quote into")
                    line[1].selectbox(f"Quote a sentence into {label}", range(len(spans)), index=None,
                                      key=field_key(k, "pick"), format_func=lambda s: labels[s],
                                      placeholder="a span of its own: pick a sentence to replace it" if item.task_quote
                                      else "pick a sentence of the instruction",
                                      on_change=pick_sentence, args=(k, item_id),
                                      help="✓ marks the sentences an item quotes already")
                    st.multiselect(f"Verifier refs of {label}", ref_options(task, item.verifier_refs),
                                   key=field_key(k, "verifier_refs"), on_change=set_refs, args=(k, item_id),
                                   format_func=lambda r: ref_label(r, task, covered, waived),
                                   placeholder="the verifier tests this item mirrors (an assertion item needs one)")
                for f in item.failures:
                    st.error(md_escape(failure_message(f), limit=2000))
                if item.readable and not item.failures:
                    st.caption("passes every item gate")
        st.button("Add an empty item", key=f"checklists:add_item:{task_id}",
                  on_click=lambda: edit(lambda t: add_item(t)))

    with st.expander("Advanced: the checklist as YAML (stays in sync with the form)", expanded=form is None):
        st.text_area("Checklist (YAML or JSON, the checklist-file schema)", key=text_key, height=620,
                     on_change=yaml_edited,
                     help="Gates re-run on every change (click outside the box or press Ctrl+Enter); the form above "
                          "shows the change")
    st.session_state[seen_key] = st.session_state[text_key]
    if not who:
        st.warning("Set your reviewer name in the sidebar: a hand edit is stored under it.")
    if st.button("Save as a new version", key=f"checklists:save:{task_id}", type="primary",
                 disabled=not (check.ok and who),
                 help="Freezes the text as the task's next version under your name (a draft becomes human:<you>); "
                      "a stored version never changes"):
        row, saved = save_text(store, st.session_state[text_key], task, rules, reviewer=who)
        if row is None:
            st.error("Not saved: a gate failed.")
            for f in saved.failures:
                st.error(md_escape(f"{'Checklist as a whole' if f.item_id == '-' else f.item_id} · "
                                   f"{failure_message(f)}", limit=2000))
        else:
            st.success(save_notice(row.version, row.sha, [r.sha for r in rows]))

with synth_tab:
    usable, reason = llm_status()
    st.text(reason)
    force = st.toggle("Even if the task already has a frozen checklist", key=f"checklists:force:{task_id}")
    if st.button("Synthesize a checklist for this task", key=f"checklists:synth:{task_id}", disabled=not usable,
                 help=None if usable else "Configure OPENAI_BASE_URL / OPENAI_API_KEY and GCPC_MODEL first"):
        job = JOBS.start(store.path, "synthesize", {"task": task_id, "force": force})
        st.success(f"Synthesis job {job.id} started: follow it on the Runs page.")
