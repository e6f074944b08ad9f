"""Rate: one rater's blinded queue (progress ratings, then pairwise preferences).

Layout and widgets only: the token-scoped `RaterSession` (annotations.study) decides what this rater
may see and answer, and builds the blinded views. The answer controls come first, within the first
screen; the records follow, a page of steps at a time. Log and task text is untrusted: it is shown
with st.text / st.code only (invisible characters made visible). Guideline text may come from an imported
study, so it is shown as `safe_markdown` (headings, lists, bold and code; no link, image or HTML). The answer
history is shown a page of versions at a time.
"""

from __future__ import annotations

import uuid

import streamlit as st

from annotations.blinding import preview
from annotations.guidelines import safe_markdown
from annotations.limits import ANSWER_VERSIONS_MAX, COMMENT_MAX_CHARS
from annotations.study import HISTORY_PAGE_SIZE, RaterSession, open_rater_session
from gcpc_core.text import md_escape
from gcpc_core.review.ui import memo, render_plain, render_steps, require_store, show_text

store = require_store(admin=False)  # raters are not admins; their token scopes the session below
session: RaterSession | None = open_rater_session(store, st.query_params.get("token"))
if session is None:
    st.error("This link is not valid. Please ask the study organisers for a new one.")
    st.stop()

guide = session.guidelines
queue = session.queue()
prefix = f"rate:{session.rater}"
KIND_NAME = {"progress_rating": "Progress rating", "preference": "Which made more progress?"}

st.title("Rating study")
if store.project.get_meta("is_demo") == "1":
    st.info("DEMO: the records in this study are simulated data written by GCPC, not real agent runs.")
if not queue:
    st.info("Your queue is empty. Thank you — there is nothing for you to rate right now.")
    st.stop()

index_key = f"{prefix}:index"
if index_key not in st.session_state:  # resume where this rater left off
    st.session_state[index_key] = session.resume_index(queue)
index = min(st.session_state[index_key], len(queue) - 1)
item = queue[index]
done = sum(i.answered for i in queue)
st.progress(done / len(queue), text=f"{done} of {len(queue)} answered")
if done == len(queue):
    st.success("You have answered everything in your queue. Thank you! You can still review and change answers.")


@st.dialog("Rater guidelines", width="large")
def show_guidelines() -> None:
    st.markdown(safe_markdown(guide.text))


def go(to: int) -> None:
    st.session_state[index_key] = max(0, min(to, len(queue) - 1))


def go_next_open() -> None:
    fresh = session.queue()
    after = [i.index for i in fresh if not i.answered and i.index > index]
    before = [i.index for i in fresh if not i.answered]
    go((after or before or [min(index + 1, len(queue) - 1)])[0])


nav = st.columns([1, 1, 5, 1.4, 1.4])
nav[0].button("Previous", shortcut="P", on_click=go, args=(index - 1,), disabled=index == 0, width="stretch")
nav[1].button("Next", shortcut="N", on_click=go, args=(index + 1,), disabled=index == len(queue) - 1, width="stretch")
jump_key = f"{prefix}:jump"
st.session_state[jump_key] = index
nav[2].selectbox(
    "Item", range(len(queue)), key=jump_key, label_visibility="collapsed",
    format_func=lambda i: f"{i + 1} · {KIND_NAME[queue[i].kind]} · {queue[i].target}" + (" ✓" if queue[i].answered else ""),
    on_change=lambda: go(st.session_state[jump_key]),
)
nav[3].button("Next open item", on_click=go_next_open, width="stretch")
if nav[4].button("Guidelines", shortcut="G", width="stretch"):
    show_guidelines()

# ---- the answer being edited: a draft in session state, seeded from the current answer -------------

draft_key = f"{prefix}:{item.kind}:{item.target}"
current = session.answer(item.kind, item.target)
if draft_key not in st.session_state:
    value = current.value if current else {}
    st.session_state[draft_key] = {"rating": value.get("rating"), "choice": value.get("choice"),
                                   "confidence": current.confidence if current else None}
    st.session_state[f"{draft_key}:note"] = (current.note if current else None) or ""
draft: dict = st.session_state[draft_key]
token_key = f"{draft_key}:client_token"  # one per answer attempt: a double submit stores one row
st.session_state.setdefault(token_key, uuid.uuid4().hex)


def set_draft(field: str, value: object) -> None:
    draft[field] = value


def save() -> None:
    note = st.session_state.get(f"{draft_key}:note")
    try:
        if item.kind == "progress_rating":
            result = session.submit_rating(item.target, draft["rating"], note=note,
                                           client_token=st.session_state[token_key])
        else:
            result = session.submit_preference(item.target, draft["choice"], draft["confidence"], note=note,
                                               client_token=st.session_state[token_key])
    except (PermissionError, ValueError) as exc:
        st.session_state[f"{prefix}:error"] = str(exc)
        return
    st.session_state.pop(token_key, None)
    st.session_state[f"{prefix}:saved"] = "Saved." if result.created else "Already saved — nothing changed."
    go_next_open()


message = st.session_state.pop(f"{prefix}:saved", None)
if message:
    st.toast(message)
error = st.session_state.pop(f"{prefix}:error", None)
if error:
    st.error(md_escape(error, limit=600))

st.subheader(md_escape(f"{index + 1} of {len(queue)} · {KIND_NAME[item.kind]} · {item.target}"))

# ---- the answer first, so that it is in reach without scrolling; the records below it ------------------

if item.kind == "progress_rating":
    st.write("How far did the agent get towards doing what the instruction asks? (keys 1–5)")
    cols = st.columns(len(guide.scale))
    for col, anchor in zip(cols, guide.scale):
        col.button(md_escape(f"{anchor.value} · {anchor.label}"), key=f"{draft_key}:rating:{anchor.value}",
                   shortcut=str(anchor.value), help=md_escape(anchor.description, limit=1000), width="stretch",
                   type="primary" if draft["rating"] == anchor.value else "secondary",
                   on_click=set_draft, args=("rating", anchor.value))
        col.caption(md_escape(anchor.description, limit=1000))
    ready = draft["rating"] is not None
else:
    c = st.columns([3, 2])
    c[0].write("Which record made more progress? (keys A, B, T)")
    c[1].write("How confident are you? (keys 1–3)")
    choice_cols = st.columns([1, 1, 1, 0.2, *(2 / len(guide.confidence),) * len(guide.confidence)])
    for col, (choice, label, key) in zip(choice_cols, (("A", "A made more progress", "A"),
                                                       ("B", "B made more progress", "B"), ("tie", "Tie", "T"))):
        col.button(label, key=f"{draft_key}:choice:{choice}", shortcut=key, width="stretch",
                   type="primary" if draft["choice"] == choice else "secondary",
                   on_click=set_draft, args=("choice", choice))
    for col, anchor in zip(choice_cols[4:], guide.confidence):
        col.button(md_escape(f"{anchor.value} · {anchor.label}"), key=f"{draft_key}:confidence:{anchor.value}",
                   shortcut=str(anchor.value), help=md_escape(anchor.description, limit=1000), width="stretch",
                   type="primary" if draft["confidence"] == anchor.value else "secondary",
                   on_click=set_draft, args=("confidence", anchor.value))
    ready = draft["choice"] is not None and draft["confidence"] is not None

note_col, save_col = st.columns([5, 1.2], vertical_alignment="bottom")
note_col.text_area("Comment (optional)", key=f"{draft_key}:note", height=68,
                   placeholder="Anything the organisers should know",
                   max_chars=COMMENT_MAX_CHARS)
page_key = f"{draft_key}:history_page"
history = session.history_page(item.kind, item.target, st.session_state.get(page_key, 0))
full = history.total >= ANSWER_VERSIONS_MAX
save_col.button("Save and next", type="primary", shortcut="Ctrl+Enter", on_click=save, width="stretch",
                disabled=not ready or not session.is_open or full)
if not session.is_open:
    st.info("This study is closed: answers can no longer be changed.")
elif full:
    st.info(f"This answer has {history.total} saved versions, the most kept for one answer: it can no longer be "
            "changed. The last saved version stands.")
if history.total:
    st.caption(f"Your saved answer: version {history.total} of {history.total}")
    with st.expander(f"Your answer history ({history.total} version{'s' if history.total > 1 else ''})"):
        if history.pages > 1:
            st.selectbox("History page", range(history.pages), key=page_key,
                         format_func=lambda p: f"versions {history.total - p * HISTORY_PAGE_SIZE} to "
                                               f"{max(history.total - (p + 1) * HISTORY_PAGE_SIZE + 1, 1)} "
                                               "(newest first)")
        for n, h in history.versions:
            value = h.value.get("rating", h.value.get("choice"))
            conf = f", confidence {h.confidence}" if h.confidence is not None else ""
            note = f" — {preview(h.note, 2000)[0]}" if h.note else ""  # notes saved before the comment limit
            show_text(f"{n}. {h.created_at}: {value}{conf}{note}")
st.divider()

# ---- the records (blinded once per item; paged) --------------------------------------------------------

if item.kind == "progress_rating":
    view = memo(f"{prefix}:view", (item.kind, item.target), lambda: session.unit_view(item.target))
    with st.expander("Task instruction", expanded=True):
        render_plain(view.instruction)
    st.caption("What the agent did")
    render_steps(view.steps, draft_key)
else:
    left, right = memo(f"{prefix}:view", (item.kind, item.target), lambda: session.pair_view(item.target))
    with st.expander("Task instruction (the same for A and B)", expanded=True):
        render_plain(left.instruction)
    cols = st.columns(2)
    for col, side, view in ((cols[0], "A", left), (cols[1], "B", right)):
        with col:
            st.caption(f"Record {side}")
            with st.container(height=720):
                render_steps(view.steps, f"{draft_key}:{side}")
