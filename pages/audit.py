"""Item audit: every item verdict of a trajectory next to its task quote, verifier refs and cited
evidence; auditors agree, or disagree with a corrected verdict (append-only, history kept).

Layout and widgets only: `gcpc_core.review.audit` builds the item views, `annotations.audits`
stores audits. Keys: A agree · D disagree · J / K next / previous item · N / P next / previous
trajectory. When a judge has several labelled runs (e.g. two models), a Run box chooses whose verdicts
are audited (default: the judge's default run) and every item shows the other runs' verdicts with their
citations. Log and task text is untrusted and only shown with st.text / st.code.
"""

from __future__ import annotations

import uuid

import streamlit as st

from annotations.audits import item_audit_history, item_audits
from gcpc_core.analysis.run_names import run_name
from gcpc_core.analysis.triage import DRAWN_QUERY
from gcpc_core.judge.registry import ordered_judges
from gcpc_core.llm import llm_status
from gcpc_core.review.audit import (
    ITEM_SHOW,
    TRAJECTORY_SHOW,
    AuditFilters,
    ItemView,
    audit_list,
    correction_options,
    filter_items,
    history_lines,
    item_label,
    neighbour,
    record_audit,
    trajectory_label,
    trajectory_summary,
)
from gcpc_core.review.audit_panel import (
    AuditContext,
    audit_flash,
    correction_prompt,
    item_text,
    no_quote_text,
    other_judges_line,
    other_run_line,
    quote_location,
    reason_lines,
    ref_line,
)
from gcpc_core.review.overview import next_step_note
from gcpc_core.review.scores import score_explanation
from gcpc_core.review.excerpts import excerpt
from gcpc_core.text import md_escape, show_invisible
from gcpc_core.review.ui import (
    badge,
    cached_events,
    cached_frames,
    cached_item_views,
    cached_judge_stats,
    cached_trajectory_frame,
    cached_trajectory_score,
    pin_choice,
    render_citations,
    render_excerpt,
    render_log,
    require_store,
    reviewer,
    run_labels_help,
    show_code,
    show_text,
)

FLASH_KEY = "audit:flash"  # a message for the next run: an audit saved in an item's fragment reruns the page

store = require_store()
st.title("Item audit")
if flash := st.session_state.pop(FLASH_KEY, None):
    st.toast(flash)
trajectories = cached_trajectory_frame(store)
if trajectories.empty:
    st.info("No trajectories yet: import some on the Runs page.")
    st.stop()
stats = cached_judge_stats(store)
judges = ordered_judges(stats["judge"].unique())

# ---- a link (?trajectory=…&judge=…&item=…) selects what it names, once --------------------------------
query = {k: st.query_params.get(k) for k in ("trajectory", "judge", "item", "label")}
if any(query.values()) and st.session_state.get("audit:applied") != query:
    st.session_state["audit:applied"] = query
    # a proposal's link: that one verdict was drawn at random, and its audit records so
    drawn = all(st.query_params.get(k) == v for k, v in DRAWN_QUERY.items())
    st.session_state["audit:drawn"] = (query["trajectory"], query["judge"], query["item"]) if drawn else None
    if query["judge"] in judges:
        st.session_state["audit:judge"] = query["judge"]
        st.session_state["audit:label"] = query["label"]
    if query["trajectory"] in set(trajectories["trajectory_id"]):
        st.session_state["audit:trajectory"] = query["trajectory"]
        for key in ("audit:tasks", "audit:outcomes", "audit:conditions"):
            st.session_state[key] = []
        st.session_state["audit:show"] = "all"
    if query["item"]:
        st.session_state["audit:item"] = query["item"]
        st.session_state["audit:item_show"] = "all"

# ---- which trajectory --------------------------------------------------------------------------------
with st.expander("Filters", expanded=True):
    f = st.columns([1.2, 2, 1.2, 1.6, 1.6])
    judge = f[0].selectbox("Judge", judges, key="audit:judge", placeholder="none yet",
                           help="Whose item verdicts you audit")
    filters = AuditFilters(
        tasks=tuple(f[1].multiselect("Task", sorted(trajectories["task"].unique()), key="audit:tasks",
                                     placeholder="any")),
        outcomes=tuple(f[2].multiselect("Outcome", ["PASS", "FAIL", "unscored"], key="audit:outcomes", placeholder="any")),
        conditions=tuple(f[3].multiselect("Condition", sorted(trajectories["condition"].unique()),
                                          key="audit:conditions", placeholder="any")),
        show=f[4].selectbox("Show", TRAJECTORY_SHOW, key="audit:show",
                            help="Disagreement between judges (same item, different raw verdicts) or with "
                                 "auditors (a current audit disagrees with this judge)"),
    )
runs = [r for r in store.judging.labels() if r.judge == judge]
default_label = store.judging.default_labels().get(judge) if judge else None
readable = {r.label: run_name(r) for r in runs}  # judge · model · prompt · date; the full label in the tooltip
label = default_label
if len(runs) > 1:
    run_names = [r.label for r in runs]
    if st.session_state.get("audit:label") not in run_names:
        st.session_state["audit:label"] = label
    label = st.selectbox(
        "Run", run_names, key="audit:label",
        format_func=lambda name: readable[name] + (" · default" if name == default_label else ""),
        help="This judge has several labelled runs (another model, prompt or rules): whose verdicts you audit. "
             "Each item also shows the other runs' verdicts. " + run_labels_help(runs))
    if label != default_label:
        stats = cached_judge_stats(store, {judge: label})
listing = audit_list(trajectories, stats, judge, filters)
st.text(f"{len(listing)} of {len(trajectories)} trajectories match")
if listing.empty:
    st.info("No trajectory matches these filters.")
    st.stop()
ids = list(listing["trajectory_id"])
if pin_choice("audit:trajectory", ids) is None:  # labels carry audit counts: see pin_choice
    st.session_state["audit:trajectory"] = ids[0]


def step_trajectory(step: int) -> None:
    st.session_state["audit:trajectory"] = neighbour(ids, pin_choice("audit:trajectory", ids), step)
    st.session_state.pop("audit:item", None)



nav = st.columns([1, 6, 1])
nav[0].button("Previous", key="audit:prev_traj", shortcut="p", on_click=step_trajectory, args=(-1,),
              help="Previous trajectory (P)", width="stretch")
labels = dict(zip(ids, (trajectory_label(r) for r in listing.to_dict("records"))))
traj_id = nav[1].selectbox("Trajectory", ids, key="audit:trajectory", format_func=labels.get,
                           label_visibility="collapsed")
nav[2].button("Next", key="audit:next_traj", shortcut="n", on_click=step_trajectory, args=(1,),
              help="Next trajectory (N)", width="stretch")

row = listing[listing["trajectory_id"] == traj_id].iloc[0]
st.subheader(md_escape(traj_id))
score = cached_trajectory_score(store, traj_id, judge, label) if judge else None
for line in trajectory_summary(row, judge, score):
    st.text(line)
if score is not None:
    with st.expander("What these scores mean"):
        for line in score_explanation(score):
            st.text(line)
task = store.trials.get_task(row["task"])


# ---- one item -----------------------------------------------------------------------------------------
def focus(item_id: str) -> None:
    st.session_state["audit:item"] = item_id


@st.fragment
def item_panel(ctx: AuditContext, view: ItemView, focused: bool) -> None:
    """One item; the focused one in full with the audit controls, the others as one line."""
    key = ctx.key(view.item_id)
    history = item_audit_history(ctx.store, trajectory_id=ctx.trajectory_id, item_id=view.item_id, judge=ctx.judge,
                                 label=ctx.label)
    with st.container(border=True):
        item_heading(view, focused)
        if not focused:
            if st.button("Open", key=f"{key}:open", on_click=focus, args=(view.item_id,)):
                st.rerun()  # the whole page: another panel opens, this one closes
            if history:
                st.text(history_lines(history)[-1])
            return
        item_verdicts(ctx, view, key)
        left, right = st.columns(2)
        with left:
            task_quote(ctx, view, key)
        with right:
            verifier_refs(view)
        render_citations(view.citations, key)
        if not view.auditable:
            st.text("The endpoint item is the official outcome itself: nothing to audit.")
            return
        st.divider()
        audit_controls(ctx, view, key)
        st.caption(f"Audit history ({len(history)})")
        for line in history_lines(history) or ["(no audit yet)"]:
            st.text(line)


def item_heading(view: ItemView, focused: bool) -> None:
    """The item's id and badges on one row sized to its content (an id or badge moves to the next line
    whole, never broken mid-word, as "ENDPOINT" was in a fixed narrow column), its text below."""
    with st.container(horizontal=True, vertical_alignment="center", gap="small"):
        st.text(view.item_id)
        badge(view.route, view.route)
        badge(f"judge {view.verdict_raw}", view.verdict_raw)
        if view.overwritten:
            badge(f"scored {view.verdict}", view.verdict)
    st.text(show_invisible(item_text(view, focused)))


def item_verdicts(ctx: AuditContext, view: ItemView, key: str) -> None:
    """Why the verdict is what it is, the judge's rationale and reply problems, and the other judges' and
    the judge's other runs' verdicts of the item."""
    for line in reason_lines(view):
        st.text(line)
    if view.rationale:
        st.caption("Judge's rationale")
        show_text(view.rationale)
    for problem in view.problems:
        st.text("Reply problem: " + problem)
    if others := other_judges_line(view):
        st.text(others)
    if view.other_runs:
        with st.container(border=True):
            st.caption(md_escape(f"This item in {ctx.judge}'s other labelled runs (raw verdicts; this run: "
                                  f"{view.verdict_raw})", limit=600))
            for k, run in enumerate(view.other_runs):
                badge(f"{ctx.run_name(run.label)}: {run.verdict_raw}", run.verdict_raw)
                st.text(other_run_line(run, view))
                if run.rationale:
                    show_text(run.rationale)
                render_citations(run.citations, f"{key}:run{k}")


def task_quote(ctx: AuditContext, view: ItemView, key: str) -> None:
    """The item's task quote in the instruction (the whole instruction behind a toggle)."""
    st.caption("Task quote in the instruction")
    if view.quote is None:
        st.text(no_quote_text(view))
    elif view.quote.span is None:
        st.warning("This quote is not a verbatim span of the instruction.")
        show_code(view.quote.quote)
    else:
        st.text(quote_location(view.quote.span, ctx.task))
        render_excerpt(view.quote.excerpt)
        if ctx.task is not None and st.toggle("Whole instruction", key=f"{key}:instruction"):
            render_excerpt(excerpt(ctx.task.instruction, view.quote.span, context=10**6, max_line=10**6))


def verifier_refs(view: ItemView) -> None:
    """Each verifier ref with its test's source and this trajectory's CTRF results."""
    st.caption("Verifier refs and this trajectory's CTRF results")
    if not view.refs:
        st.text("(no verifier refs)")
    for ref in view.refs:
        badge(f"CTRF {ref.status}", ref.status)
        st.text(ref_line(ref))
        if ref.docstring:
            show_text(ref.docstring)
        if ref.source:
            show_code(ref.source, language="python")
        for result in ref.results:
            if result.message:
                show_code(f"{result.name}: {result.status}\n{result.message}")


def audit_controls(ctx: AuditContext, view: ItemView, key: str) -> None:
    """Agree, or disagree with a corrected verdict (D alone asks which one), with an optional note."""
    who = ctx.reviewer
    token_key, asking_key = f"{key}:token", f"{key}:asking"
    st.session_state.setdefault(token_key, uuid.uuid4().hex)
    others = correction_options(view)

    def save(agree: bool, corrected: str | None) -> None:
        """Store the audit, then rerun the whole page: the trajectory's "audited k/n" and the item
        labels outside this fragment show it at once."""
        try:
            _, written = record_audit(ctx.store, view, trajectory_id=ctx.trajectory_id, judge=ctx.judge, reviewer=who,
                                      agree=agree, corrected_verdict=corrected,
                                      note=st.session_state.get(f"{key}:note"),
                                      client_token=st.session_state[token_key], label=ctx.label,
                                      selection=ctx.selection(view.item_id))
        except ValueError as exc:
            st.error(md_escape(exc))
            return
        st.session_state[token_key] = uuid.uuid4().hex
        st.session_state.pop(asking_key, None)
        st.session_state[FLASH_KEY] = audit_flash(agree, corrected, written)
        st.rerun()

    controls = st.columns([2, 3, 1, 1])
    corrected = controls[0].segmented_control("Corrected verdict (if you disagree)", others, key=f"{key}:corrected")
    controls[1].text_input("Note (optional)", key=f"{key}:note")
    agree = controls[2].button("Agree", key=f"{key}:agree", shortcut="a", type="primary", disabled=not who,
                               help="Agree with the judge's raw verdict (A)", width="stretch")
    disagree = controls[3].button("Disagree", key=f"{key}:disagree", shortcut="d", disabled=not who,
                                  help="Disagree and give the corrected verdict (D)", width="stretch")
    if not who:
        st.warning("Set your reviewer name in the sidebar to record audits.")
    if agree:
        save(True, None)
    elif disagree and corrected:
        save(False, corrected)
    elif disagree:
        st.session_state[asking_key] = True  # D alone: ask which verdict is right, never assume one
    if st.session_state.get(asking_key) and who:
        with st.container(border=True):
            st.warning(md_escape(correction_prompt(view, others), limit=600))
            ask = st.columns([1] * len(others) + [1, 3])
            for k, verdict in enumerate(others):
                if ask[k].button(f"{verdict}", key=f"{key}:correct:{verdict}", shortcut=str(k + 1),
                                 type="primary", help=f"Record: disagree, the right verdict is {verdict} ({k + 1})",
                                 width="stretch"):
                    save(False, verdict)
            ask[len(others)].button("Cancel", key=f"{key}:cancel", width="stretch",
                                    on_click=st.session_state.pop, args=(asking_key, None))


# ---- tabs: items, the full log, the instruction -------------------------------------------------------
items_tab, log_tab, instruction_tab = st.tabs(["Items", "Log", "Instruction"])
current: str | None = None
with items_tab:
    views = cached_item_views(store, traj_id, judge, label) if judge else []
    if not views:
        st.info("This trajectory has no item verdicts" + (" from this judge." if judge else ": no judge has run."))
        note = None if judge else next_step_note(store, row["task"], llm_ready=llm_status()[0],
                                                 load_frames=cached_frames)
        if note:
            st.text(note)
            st.page_link("pages/overview.py", label="Overview: the next step of each task", icon=":material/route:")
    else:
        audits = item_audits(store, trajectory_id=traj_id, judge=judge, label=label)
        st.session_state.setdefault("audit:item_show", "all")
        show = st.segmented_control("Items", ITEM_SHOW, key="audit:item_show", required=True)
        shown = filter_items(views, audits, show or "all")
        item_ids = [v.item_id for v in shown]
        st.text(f"{len(shown)} of {len(views)} items")
        if shown:
            if pin_choice("audit:item", item_ids) is None:  # labels carry audit flags: see pin_choice
                st.session_state["audit:item"] = item_ids[0]

            def step_item(step: int) -> None:
                st.session_state["audit:item"] = neighbour(item_ids, pin_choice("audit:item", item_ids), step)

            inav = st.columns([1, 6, 1])
            inav[0].button("Previous item", key="audit:prev_item", shortcut="k", on_click=step_item, args=(-1,),
                           help="K", width="stretch")
            item_labels = {v.item_id: item_label(v, audits) for v in shown}
            current = inav[1].selectbox("Item", item_ids, key="audit:item", format_func=item_labels.get,
                                        label_visibility="collapsed")
            inav[2].button("Next item", key="audit:next_item", shortcut="j", on_click=step_item, args=(1,),
                           help="J", width="stretch")
            context = AuditContext(store=store, trajectory_id=traj_id, judge=judge, label=label,
                                   default_label=default_label, task=task, reviewer=reviewer(), run_names=readable,
                                   drawn=st.session_state.get("audit:drawn"))
            for view in shown:
                item_panel(context, view, view.item_id == current)
with log_tab:
    render_log(cached_events(store, traj_id), f"audit:log:{traj_id}")
with instruction_tab:
    if task is None:
        st.text("(the task of this trajectory is not imported)")
    else:
        # plain: highlighting a megabyte-long line as Markdown hangs the browser tab
        show_code(task.instruction)

# ---- the URL names what is shown, so it can be shared (and is not applied again as a link) -----------
shown_query = {"trajectory": traj_id, "judge": judge, "item": current,
               "label": label if len(runs) > 1 else None}
for name, value in shown_query.items():
    if value:
        st.query_params[name] = value
    else:
        st.query_params.pop(name, None)
for name in DRAWN_QUERY:  # applied once: a shared or reloaded URL opens a verdict chosen, not drawn
    st.query_params.pop(name, None)
st.session_state["audit:applied"] = shown_query
