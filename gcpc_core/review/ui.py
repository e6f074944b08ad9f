"""Streamlit glue shared by every page: the page guard, caches keyed on the project DB's data,
the reviewer's identity, and safe renderers for untrusted text (events, excerpts, the log viewer).

Untrusted text (logs, task instructions, verifier sources, judge rationales) is only ever passed to
`st.text`, `st.code` or `st.dataframe`, which show it literally, through `show_text`, `show_code` and
`visible_frame`, which first make bidi controls and zero-width characters visible (`text.show_invisible`).
The one exception is a highlighted excerpt: `st.html` of `text.highlighted_html`, which makes invisible
characters visible and escapes every character of the text itself (and Streamlit's DOMPurify sanitizes
what it renders again). Where a data value must sit in a Markdown-rendered string (a header, a caption),
`md_escape` it.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

import pandas as pd
import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx
from streamlit.components.v1 import declare_component
from pandas.io.formats.style import Styler

from annotations.blinding import BlindStep, preview
from annotations.tokens import (ADMIN_TOKEN_ENV, PUBLIC_URL_ENV, SignInLimiter, access_mode, client_address, is_admin,
                                served_url)

from ..analysis.run_names import run_name
from ..checklist import Rules, load_rules
from ..models import Event
from ..project_frames import JUDGED_TABLES, frames_from_store, judged_frames
from ..store import JudgeRun, Store
from . import agreement, audit, checklists, compare, overview, pairs, scores
from .logview import LogQuery, event_title, first_hit, kind_counts, log_blocks, page_of
from .quote_select import component_segments
from ..text import md_escape, show_invisible
from .excerpts import Excerpt, collapse, excerpt, highlighted_html, line_range, marked_excerpt

__all__ = [
    "RESUME_PAGE_KEY",
    "SIGN_IN_PROBLEM_KEY",
    "access",
    "app_base_url",
    "badge",
    "cached",
    "cached_dashboard",
    "cached_events",
    "cached_frames",
    "cached_task_status",
    "paged",
    "cached_compare",
    "cached_headline",
    "cached_item_views",
    "cached_judge_stats",
    "cached_pair_items",
    "cached_rules",
    "cached_section",
    "cached_task_table",
    "cached_trajectory_frame",
    "cached_trajectory_score",
    "highlight_rows",
    "memo",
    "pin_choice",
    "render_citations",
    "render_event",
    "render_excerpt",
    "render_log",
    "render_plain",
    "render_steps",
    "select_quote",
    "require_store",
    "run_labels_help",
    "run_select",
    "reviewer",
    "sign_in",
    "signed_in",
    "show_code",
    "show_text",
    "visible_frame",
    "wrap_labels",
]

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")

RESUME_PAGE_KEY = "gcpc:resume_page"
"""Session key: the page a visitor asked for before app.py had run (see `require_store`)."""


# ---------------------------------------------------------------- access

SIGN_IN_LIMITS = SignInLimiter()
"""Failed admin sign-ins (form or `?admin=`), per browser session and per client address, for the whole server
process."""
ADMIN_SESSION_KEY = "admin_token"
SIGN_IN_PROBLEM_KEY = "gcpc:sign_in_problem"
"""Session key: why a `?admin=` sign-in failed, for the sign-in page to say."""


def access() -> str:
    """This request's access mode (`annotations.tokens.access_mode`): `protected`, `local` or `open`."""
    return access_mode(os.environ.get(ADMIN_TOKEN_ENV), st.get_option("server.address"), dict(st.context.headers))


def signed_in() -> bool:
    """Whether this session has admin rights under the current access mode."""
    return is_admin(st.session_state.get(ADMIN_SESSION_KEY), os.environ.get(ADMIN_TOKEN_ENV), mode=access())


def sign_in(presented: str) -> str | None:
    """Check a presented admin token (limited per session, throttled per client address); None on success,
    else why not."""
    try:
        client = client_address(st.context.ip_address, st.context.headers.get_all("x-forwarded-for"))
    except ValueError as exc:  # a malformed $GCPC_TRUSTED_PROXIES: check nothing, say what is wrong
        return f"Sign-in is not available: {exc}"
    ctx = get_script_run_ctx()
    session = ctx.session_id if ctx is not None else client
    result = SIGN_IN_LIMITS.attempt(session, client, presented, os.environ.get(ADMIN_TOKEN_ENV), mode=access())
    if result.admin:
        st.session_state[ADMIN_SESSION_KEY] = presented
        return None
    if result.admin is None:
        return f"Too many failed sign-ins: try again in {SIGN_IN_LIMITS.wait_s(session):.0f} s."
    if result.throttled:
        return (f"Wrong admin token. Many sign-ins from {client} failed lately, so each check now waits its turn "
                f"(one every {SIGN_IN_LIMITS.spacing_s:.0f} s).")
    return "Wrong admin token."


def app_base_url() -> str:
    """Where rater links point: `$GCPC_PUBLIC_URL`, else the address this app is served at (scheme,
    host and port as the browser reached it, and the configured base path)."""
    public = os.environ.get(PUBLIC_URL_ENV)
    if public:
        return public.rstrip("/")
    url = urlsplit(st.context.url or "")
    if url.scheme and url.netloc:
        base = str(st.get_option("server.baseUrlPath") or "").strip("/")
        return f"{url.scheme}://{url.netloc}" + (f"/{base}" if base else "")
    return served_url(st.get_option("server.address"), int(st.get_option("server.port")),
                      str(st.get_option("server.baseUrlPath") or ""))


def require_store(*, admin: bool = True) -> Store:
    """The project store, for a page. Call first thing on every page.

    Streamlit's legacy `pages/` mode can run a page file alone on a fresh server, before app.py has
    opened the project and set up navigation: hand over to app.py then, keeping the query (a rater's
    token survives) and, for admin pages, the page itself (`RESUME_PAGE_KEY`, which app.py reads
    once its navigation is built, so the access rules still decide). `admin` pages are refused to
    raters and to visitors without the admin token, whatever way they were reached.
    """
    if "store" not in st.session_state:
        page = Path(sys._getframe(1).f_globals.get("__file__", ""))  # the page script that called us
        if admin and page.parent.name == "pages":
            st.session_state[RESUME_PAGE_KEY] = f"pages/{page.name}"  # app.py switches back to it
        st.switch_page("app.py", query_params=dict(st.query_params))
    if admin and (st.query_params.get("token") or not signed_in()):
        st.error("This page needs admin rights.")
        st.stop()
    return st.session_state["store"]


def pin_choice(key: str, options: Sequence[str]) -> str | None:
    """The option chosen in `st.selectbox(..., key=key)` over `options` whose labels change between runs
    (an audit count, a flag in them); call it before the selectbox, and in callbacks that read the key.

    The browser's selectbox sends back the *label* it shows. Once that label has changed on the server
    (an audit was recorded, say), the old label matches no option and Streamlit hands the page the label
    itself, so the selection silently jumped to the first option. A label is mapped back to the option it
    starts with (`<option> · …`), and the value is set again on every run, which sends the current label
    to the browser.
    """
    value = st.session_state.get(key)
    if isinstance(value, str) and value not in options:
        head = value.split(" · ", 1)[0]
        value = head if head in options else value
    if value in options:
        st.session_state[key] = value
        return value
    return None


def reviewer() -> str:
    """The reviewer name set in the sidebar (empty when not set)."""
    return str(st.session_state.get("reviewer") or "").strip()


# ---------------------------------------------------------------- caches


def memo(key: str, ident: Any, compute: Callable[[], T]) -> T:
    """`compute()` for `ident`, kept in this session until `ident` changes (one value per `key`): what the
    page is showing is not rebuilt on every rerun (a click on a rating re-runs the whole page)."""
    held = st.session_state.get(key)
    if held is None or held[0] != ident:
        held = (ident, compute())
        st.session_state[key] = held
    return held[1]


_CACHED: dict[str, Callable[..., Any]] = {}


@st.cache_data(show_spinner=False, max_entries=256)
def _cached_call(name: str, db_path: str, version: str, arguments: tuple, _store: Store) -> Any:
    return _CACHED[name](_store, **dict(arguments))


def cached(*tables: str) -> Callable[[F], F]:
    """Cache `fn(store, *args)` per project DB, until rows of `tables` change (`store.project.data_version`).

    Keyed on the DB path, the tables' version and the other (hashable) arguments, bound to the
    function's parameters with their defaults filled in: `f(store)`, `f(store, labels=None)` and
    `f(store, None)` are one entry (pages call the shared loaders differently; at paper scale a second
    copy of the analysis frames costs seconds). Results are copied out of the cache, so callers may
    modify them.
    """

    def wrap(fn: F) -> F:
        name = f"{fn.__module__}.{fn.__qualname__}"
        _CACHED[name] = fn
        signature = inspect.signature(fn)

        @functools.wraps(fn)
        def call(store: Store, *args: Any, **kwargs: Any) -> Any:
            bound = signature.bind(store, *args, **kwargs)
            bound.apply_defaults()
            arguments = tuple(bound.arguments.items())[1:]  # the store is keyed by its path and data version
            return _cached_call(name, str(store.path), store.project.data_version(*tables), arguments, _store=store)

        return call  # type: ignore[return-value]

    return wrap


def _events(store: Store, trajectory_id: str) -> list[Event]:
    return store.trials.events(trajectory_id)


def _dashboard(store: Store, n_boot: int, seed: int, include_simulated: bool,
               sections: tuple[str, ...] = agreement.HEADLINE_SECTIONS,
               labels: Mapping[str, str] | None = None) -> agreement.Dashboard:
    """The report `sections` of the Agreement page (by default those of its headline), without figures, over
    each judge's default run unless `labels` (from `run_select`) chooses another."""
    return agreement.dashboard(cached_frames(store, include_simulated=include_simulated, labels=labels),
                               sections=sections,
                               n_boot=n_boot, seed=seed, figures=False)


def _section(store: Store, section: str, n_boot: int, seed: int, include_simulated: bool,
             labels: Mapping[str, str] | None = None) -> agreement.Dashboard:
    """One section of the Agreement page — its tables, "not computed" statements and figures — computed when
    the page opens it (and then cached like the headline)."""
    report = agreement.REPORT_SECTION[section]
    sections = ("inputs", report) if report == "discrimination" else (report,)  # the judges table is an input's
    dash = cached_dashboard(store, n_boot, seed, include_simulated, sections=sections, labels=labels)
    figures = agreement.section_figures(section, dash.tables,
                                        cached_frames(store, include_simulated=include_simulated, labels=labels),
                                        n_boot=n_boot, seed=seed, ci=dash.ci)
    return dataclasses.replace(dash, figures={section: figures})


cached_events = cached("trajectories")(_events)
cached_trajectory_frame = cached("trajectories")(audit.trajectory_frame)
cached_judge_stats = cached("judgments", "scores", "annotations")(audit.judge_stats)
cached_item_views = cached("judgments", "checklists", "trajectories", "tasks")(audit.item_views)
_ANALYSIS_TABLES = agreement.ANALYSIS_TABLES
cached_judged_frames = cached(*JUDGED_TABLES)(judged_frames)


def _analysis_frames(store: Store, *, include_simulated: bool = True, labels: Mapping[str, str] | None = None,
                     all_labels: bool = False) -> dict[str, pd.DataFrame]:
    """`frames_from_store` over the judged frames' own cache entry: an audit reloads the human answers only."""
    judged = cached_judged_frames(store, labels=labels, all_labels=all_labels)
    return frames_from_store(store, include_simulated=include_simulated, labels=labels, all_labels=all_labels,
                             judged=judged)


cached_frames = cached(*_ANALYSIS_TABLES)(_analysis_frames)


def _task_status(store: Store, llm_ready: bool) -> list[overview.TaskStatus]:
    """`overview.task_status` over the cached frames: the Overview redraws it on every rerun (every second while a job
    runs), and at paper scale it reads thousands of rows."""
    return overview.task_status(store, llm_ready=llm_ready, load_frames=cached_frames)


cached_task_status = cached(*_ANALYSIS_TABLES, "tasks")(_task_status)
cached_dashboard = cached(*_ANALYSIS_TABLES)(_dashboard)
cached_section = cached(*_ANALYSIS_TABLES)(_section)


def _headline(store: Store, n_boot: int, seed: int, include_simulated: bool,
              labels: Mapping[str, str] | None = None) -> agreement.HeadlineView:
    """`agreement.stored_headline` over the cached frames (the Overview has most often read them already)."""
    return agreement.stored_headline(store, n_boot, seed, include_simulated, labels, load_frames=cached_frames)


cached_headline = cached(*_ANALYSIS_TABLES)(_headline)
cached_task_table = cached("tasks", "trajectories", "checklists")(checklists.task_table)
cached_pair_items = cached("judgments", "checklists")(pairs.pair_items)
cached_trajectory_score = cached("scores")(scores.trajectory_score)
cached_compare = cached("judgments", "scores", "trajectories", "checklists", "perturbations")(compare.compare_view)


def run_labels_help(runs: Sequence[JudgeRun]) -> str:
    """A tooltip (Markdown) giving the full label behind each run's readable name (`run_name`)."""
    return "Full run labels:\n" + "\n".join(f"- {md_escape(run_name(r))}: {md_escape(r.label)}" for r in runs)


def run_select(store: Store, key: str) -> dict[str, str] | None:
    """A "Run of JUDGE" box for each judge with several labelled runs (default: its default run); returns
    judge → label for the runs chosen instead of a default, None when every judge reads its default."""
    defaults = store.judging.default_labels()
    by_judge: dict[str, list[JudgeRun]] = {}
    for run in store.judging.labels():
        by_judge.setdefault(run.judge, []).append(run)
    chosen: dict[str, str] = {}
    for judge, runs in sorted(by_judge.items()):
        if len(runs) < 2:
            continue
        names = [defaults[judge], *(r.label for r in reversed(runs) if r.label != defaults[judge])]
        readable = {r.label: run_name(r) for r in runs}
        label = st.selectbox(md_escape(f"Run of {judge}"), names, key=f"{key}:run:{judge}",
                              format_func=lambda n: readable[n] + (" · default" if n == defaults[judge] else ""),
                              help="This judge has several labelled runs: whose verdicts every figure here uses. "
                              + run_labels_help(runs))
        if label != defaults[judge]:
            chosen[judge] = label
    return chosen or None


@st.cache_resource(show_spinner=False)
def cached_rules() -> Rules:
    """The rules of `rules/` (read once per server; restart the app after editing them)."""
    return load_rules()


# ---------------------------------------------------------------- renderers of untrusted text

QUOTE_SELECT_DIR = Path(__file__).resolve().parent / "components" / "quote_select"
"""The quote-selection component's frontend: one plain HTML file speaking Streamlit's component protocol."""


def select_quote(text: str, key: str, on_select: Callable[[], None]) -> None:
    """`text` (untrusted: the component sets it as textContent, invisible characters shown as markers) in a
    frame where a mouse or keyboard selection is sent back as `quote_select` boundaries: `on_select` runs with the
    selection in `st.session_state[key]` (map it with `quote_select.selection_quote`)."""
    component = declare_component("quote_select", path=str(QUOTE_SELECT_DIR))  # registers it for this run
    component(segments=component_segments(text), key=key, default=None, on_change=on_select)



_WRAPPED = ('[data-testid="stMetric"] [data-testid="stMarkdownContainer"]',
            '[data-testid="stWidgetLabel"] [data-testid="stMarkdownContainer"]')
"""What Streamlit cuts at one line with an ellipsis: metric labels and values, widget labels."""


def wrap_labels(*keys: str) -> None:
    """Let metric labels and values, and widget labels, inside the containers keyed `keys` wrap onto
    further lines instead of being cut with an ellipsis, which hides a statistic's interval or a label's
    end in a narrow column; metric values there are a size smaller, so that a value with its interval
    takes two lines at most in a third of the page. A style-only `st.html` takes no space on the page."""
    for key in keys:
        if not key.replace("-", "").replace("_", "").isalnum():
            raise ValueError(f"container key {key!r}: letters, digits, '-' and '_' only (it becomes a CSS class)")
    targets = ", ".join(f".st-key-{key} {target}{inner}" for key in keys for target in _WRAPPED for inner in ("", " p"))
    values = ", ".join(f'.st-key-{key} [data-testid="stMetricValue"]' for key in keys)
    st.html(f"<style>{targets} {{ white-space: normal; overflow: visible; text-overflow: clip; "
            f"overflow-wrap: break-word; }} {values} {{ font-size: 1.75rem; }}</style>")


def show_text(text: str) -> None:
    """Untrusted text as plain text, invisible characters shown."""
    st.text(show_invisible(text))


def show_code(text: str, language: str | None = None) -> None:
    """Untrusted text as a wrapped code block, invisible characters shown."""
    st.code(show_invisible(text), language=language, wrap_lines=True)


def visible_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """`frame` for st.dataframe with invisible characters of its text cells shown."""
    shown = frame.copy()
    for name in frame.columns:
        if pd.api.types.is_object_dtype(frame[name]) or pd.api.types.is_string_dtype(frame[name]):
            shown[name] = frame[name].map(lambda v: show_invisible(v) if isinstance(v, str) else v)
    return shown


_BADGE_COLORS = {"Yes": "green", "No": "red", "Abstain": "gray", "passed": "green", "failed": "red",
                 "assertion": "blue", "generated": "violet", "judge": "orange", "endpoint": "gray"}


def badge(label: str, kind: str) -> None:
    """A small coloured label (verdict, route, CTRF status); the label is escaped (badges are Markdown).

    A label holding a bracket is shown as plain text instead: `st.badge` backslash-escapes brackets itself,
    inside `md_escape`'s code spans too, where the backslash would show, and a bracket there that it missed
    would end the badge's `[…]` early and let the rest of the label be read as Markdown."""
    if "[" in label or "]" in label:
        show_text(label)
    else:
        st.badge(md_escape(label), color=_BADGE_COLORS.get(kind, "gray"))  # type: ignore[arg-type]


def highlight_rows(frame: pd.DataFrame, column: str, color: str = "rgba(255, 196, 0, 0.25)") -> Styler:
    """`frame` styled for st.dataframe: rows where boolean `column` is true get a background colour
    (cells still show their values as plain text)."""
    return frame.style.apply(lambda row: [f"background-color: {color}" if row[column] else ""] * len(row), axis=1)


PLAIN_TEXT_MAX_LINE = 2_000
"""Longest line `render_plain` shows as proportional text: the browser lays out one long unbroken line of
`st.text` in time that grows with its length (about 10 s per 100,000 characters in Chromium)."""


def render_plain(text: str) -> None:
    """Untrusted prose (a task instruction): `st.text`, or, when a line is too long to lay out quickly,
    a wrapped plain code block (which shows a megabyte-long line at once)."""
    if max(map(len, text.split("\n")), default=0) > PLAIN_TEXT_MAX_LINE:
        show_code(text)
    else:
        show_text(text)


def render_excerpt(ex: Excerpt) -> None:
    """Lines around a located span, each line once, the span highlighted inside its line.

    An excerpt holding a line too long to lay out quickly (a whole instruction with a megabyte-long
    line, see `PLAIN_TEXT_MAX_LINE`) is shown as a `diff` code block instead, the span's rows marked `+`."""
    if max((len(line.text) for line in ex.lines), default=0) > PLAIN_TEXT_MAX_LINE:
        show_code(marked_excerpt(ex), language="diff")
    else:
        st.html(highlighted_html(ex))


def render_citations(citations: Sequence[audit.CitationView], key: str) -> None:
    """An item's citations, each located in its event: where the quote sits, the lines around it with the
    quote highlighted (or a warning when it is not verbatim there), the full event one toggle away."""
    st.caption(f"Citations ({len(citations)})")
    if not citations:
        st.text("(none)")
    for k, c in enumerate(citations):
        event = c.event
        where = f"{c.event_id} · {event.kind}" if event else f"{c.event_id} · not in this log"
        if event is not None and not c.in_evidence:
            where += " · NOT EVIDENCE (agent narration or thinking)"
        if c.span is not None and c.excerpt is not None:
            first, last = line_range(event.text, c.span)
            where += (f" · quote at lines {first}–{last} of {c.excerpt.total_lines}, "
                      f"characters {c.span.start:,}–{c.span.end:,} of {len(event.text):,}")
        st.text(where)
        if c.excerpt is None:
            st.warning("The quote was not found verbatim in the cited event.")
            show_code(c.quote)
        else:
            render_excerpt(c.excerpt)
        if event is not None and st.toggle(md_escape(f"Full event {c.event_id}"), key=f"{key}:cite:{k}"):
            render_event(event, f"{key}:cite:{k}:event")


def render_event(event: Event, key: str, *, max_lines: int = 30, query: str = "") -> None:
    """One event: its title line, its text (long texts collapsed; the rest one toggle away, rendered
    only when asked for); with a search `query` whose first hit the collapsed head hides, that hit
    in context too."""
    show_text(event_title(event))
    shown, hidden = collapse(event.text, max_lines=max_lines)
    show_code(shown or "(empty)")
    hit = first_hit(event.text, query) if hidden else None
    if hit is not None and hit.end > len(shown):
        st.text(f"First match of the search, line {line_range(event.text, hit)[0]:,}:")
        render_excerpt(excerpt(event.text, hit, context=2))
    if hidden and st.toggle(f"Show all {len(event.text):,} characters ({hidden:,} more)", key=f"{key}:full"):
        show_code(event.text)


def paged(rows: Sequence[T] | pd.DataFrame, key: str, per_page: int, noun: str) -> Sequence[T] | pd.DataFrame:
    """The page of `rows` the reader is on (session state ``<key>:page``, clamped once the rows have shrunk), with
    Earlier / Later buttons and which `noun` they are when there is more than one page: a page of thousands of
    rows (the Triage page's disagreements, the Overview's tasks at paper scale) takes the browser seconds to draw."""
    page_key = f"{key}:page"
    shown, page, pages = page_of(rows, int(st.session_state.get(page_key, 0)), per_page)
    st.session_state[page_key] = page
    if pages > 1:
        nav = st.columns([1.3, 1.3, 4])
        nav[0].button(f"Earlier {noun}", key=f"{key}:prev", disabled=page == 0, width="stretch",
                      on_click=st.session_state.__setitem__, args=(page_key, page - 1))
        nav[1].button(f"Later {noun}", key=f"{key}:next", disabled=page >= pages - 1, width="stretch",
                      on_click=st.session_state.__setitem__, args=(page_key, page + 1))
        start = page * per_page
        nav[2].text(f"{noun[0].upper()}{noun[1:]} {start + 1:,}–{start + len(shown):,} of {len(rows):,} · "
                    f"page {page + 1} of {pages}")
    return shown


STEPS_PER_PAGE = 25
"""Steps of a blinded record shown at once on the rate page (the rest one click away)."""


def render_steps(steps: Sequence[BlindStep], key: str, *, page_size: int = STEPS_PER_PAGE) -> None:
    """A blinded record (rate page), a page of steps at a time; long texts shortened, the full text one
    toggle away (rendered only when asked for). Agent narration as text, everything else as code."""
    if not steps:
        st.text("(the record has no steps to show)")
        return
    page_key = f"{key}:page"
    shown, page, pages = page_of(steps, int(st.session_state.get(page_key, 0)), page_size)
    st.session_state[page_key] = page
    nav = st.columns([1.3, 1.3, 4])
    nav[0].button("Earlier steps", key=f"{key}:prev", disabled=page == 0, width="stretch",
                  on_click=st.session_state.__setitem__, args=(page_key, page - 1))
    nav[1].button("Later steps", key=f"{key}:next", disabled=page >= pages - 1, width="stretch",
                  on_click=st.session_state.__setitem__, args=(page_key, page + 1))
    nav[2].text(f"Steps {shown[0].number:,}–{shown[-1].number:,} of {len(steps):,} · page {page + 1} of {pages}")
    for step in shown:
        with st.container(border=True):
            show_text(f"Step {step.number} · {step.title}" + (" · reported an error" if step.is_error else ""))
            head, hidden = preview(step.text)
            if step.kind in ("agent_message", "agent_thinking"):
                show_text(head)
            else:
                show_code(head)
            if hidden and st.toggle(f"Show all {len(step.text):,} characters", key=f"{key}:full:{step.number}"):
                show_code(step.text)


def render_log(events: Sequence[Event], key: str, *, page_size: int = 25) -> None:
    """The full log viewer: kinds, search, evidence/errors only, paged; tool calls with their outputs."""
    counts = kind_counts(events)
    cols = st.columns([3, 3, 1.2, 1.2])
    kinds = cols[0].multiselect("Event kinds", list(counts), format_func=lambda k: f"{k} ({counts[k]})",
                                key=f"{key}:kinds", placeholder="all kinds")
    query = cols[1].text_input("Search the log", key=f"{key}:search", placeholder="text, tool name or path")
    evidence_only = cols[2].toggle("Evidence only", key=f"{key}:evidence",
                                   help="Tool calls, tool outputs and file contents: what judges may cite")
    errors_only = cols[3].toggle("Errors only", key=f"{key}:errors")
    blocks = log_blocks(events, LogQuery(frozenset(kinds), query, evidence_only, errors_only))
    hits = sum(b.hits for b in blocks)
    page_key = f"{key}:page"
    shown, page, pages = page_of(blocks, int(st.session_state.get(page_key, 0)), page_size)
    st.session_state[page_key] = page
    n_shown = sum(1 + len(b.outputs) for b in blocks)
    st.text(f"{n_shown} of {len(events)} events shown" + (f", {hits} search hits" if query.strip() else "")
            + f" · page {page + 1} of {pages}")
    nav = st.columns([1, 1, 6])
    nav[0].button("Earlier events", key=f"{key}:prev", disabled=page == 0,
                  on_click=st.session_state.__setitem__, args=(page_key, page - 1))
    nav[1].button("Later events", key=f"{key}:next", disabled=page >= pages - 1,
                  on_click=st.session_state.__setitem__, args=(page_key, page + 1))
    for block in shown:
        with st.container(border=True):
            render_event(block.event, f"{key}:{block.event.id}", query=query)
            for output in block.outputs:
                render_event(output, f"{key}:{output.id}", query=query)

