"""Every data value a page puts into a string Streamlit renders as Markdown is escaped (issue 24, defect 5).

A hostile project — the demo with a rater, a judge run's label and model, a raw item verdict and a stored
Agreement headline value holding a remote image, links, an autolink, a colour directive and LaTeX — is
opened on every page; every string of the rendered element tree that Streamlit reads as Markdown (bodies of
Markdown, captions, alerts, toasts, badges; labels, values and help of metrics; labels and help of widgets;
expander and tab labels; radio and segmented-control options) is read with `markdown_reader`, and none may
hold live markup. The payloads are also checked to be on the page (escaped), so a page that stopped showing
them does not pass by accident.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from google.protobuf.message import Message
from streamlit.testing.v1 import AppTest

from annotations import DEMO_STUDY_ID
from gcpc_core.review.agreement import HEADLINE_META_PREFIX, stored_headline
from gcpc_core.store import Store
from markdown_reader import live_markup, read

from .helpers import open_page

IMAGE = "![x](http://127.0.0.1:9/p.png)"
LINK = "[click](http://evil)"
PAYLOAD = f"{IMAGE} {LINK} <http://evil.test> :red[r] $x$"
RATER = f"rater {IMAGE} {LINK}"
LABEL = f"run {IMAGE} {LINK}"
MODEL = f"model {IMAGE}"
VERDICT = f"Yes {IMAGE} {LINK}"
HEADLINE_VALUE = f"0.5 {IMAGE} {LINK} :red[r] $x$"

PLAIN_KINDS = {"text", "code", "html", "json", "arrow_data_frame", "arrow_vega_lite_chart", "plotly_chart",
               "exception", "empty", "divider", "progress"}
"""Elements whose strings are shown as text (or checked elsewhere: `st.html` excerpts)."""
MARKDOWN_FIELDS = {"body", "label", "help", "delta", "content"}
"""Proto fields Streamlit renders as Markdown, in the elements not in `PLAIN_KINDS`."""
MARKDOWN_OPTIONS = {"radio"}
"""Widgets whose options are Markdown (a selectbox's and a multiselect's are plain text)."""


def _strings(message: Message, kind: str) -> Iterator[tuple[str, str]]:
    for field, value in message.ListFields():
        if field.message_type is not None:
            for sub in ([value] if isinstance(value, Message) else value):
                yield from _strings(sub, kind)
        elif field.name in MARKDOWN_FIELDS and isinstance(value, str):
            yield f"{kind}.{field.name}", value
        elif field.name == "options" and kind in MARKDOWN_OPTIONS:
            yield from ((f"{kind}.options", option) for option in value)


def markdown_strings(at: AppTest) -> list[tuple[str, str]]:
    """(element.field, string) for every string of the rendered tree that Streamlit reads as Markdown."""
    found: list[tuple[str, str]] = []

    def walk(node: object) -> None:
        kind = getattr(node, "type", "")
        proto = getattr(node, "proto", None)
        if isinstance(proto, Message) and kind not in PLAIN_KINDS:
            found.extend(_strings(proto, kind))
        for child in getattr(node, "children", {}).values():
            walk(child)

    walk(at._tree)
    return found


def assert_escaped(at: AppTest, where: str, *, shows: tuple[str, ...] = ()) -> None:
    assert not at.exception, "\n".join(at.exception[0].stack_trace) if at.exception else ""
    strings = markdown_strings(at)
    assert strings, f"{where}: no Markdown string found (the walker is broken)"
    live = [(field, problem) for field, value in strings for problem in live_markup(value)]
    assert live == [], f"{where}: {live}"
    shown = [read(value).shown for _, value in strings]
    for payload in shows:  # on the page, as text
        assert any(payload in s for s in shown), f"{where}: {payload!r} not shown in {shown}"


@pytest.fixture
def hostile(demo_db: Path) -> Path:
    """The demo project with hostile data written as another tool would (plain sqlite3), and a hostile rater."""
    store = Store(demo_db)
    [simulated] = [r.label for r in store.judging.labels() if r.simulated]
    traj, item = next((j.trajectory_id, j.item_id) for j in store.judging.judgments(judge="probe")
                      if j.route != "endpoint")
    # stored as a DB from before rater names were checked (or another tool) holds it: add_rater refuses it now
    store.studies.add_rater(DEMO_STUDY_ID, RATER, token_hash=None)
    with sqlite3.connect(demo_db) as conn:
        conn.execute("PRAGMA foreign_keys = OFF")
        for table in ("judge_units", "judgments", "scores", "judge_labels", "judge_replies", "perturbations"):
            conn.execute(f"UPDATE {table} SET label = ? WHERE label = ?", [LABEL, simulated])
        conn.execute("UPDATE judgments SET model = ? WHERE label = ?", [MODEL, LABEL])
        conn.execute("UPDATE judge_units SET model = ? WHERE label = ?", [MODEL, LABEL])
    stored_headline(store)  # the page's defaults, kept in meta for the data as they now are
    store.close()
    with sqlite3.connect(demo_db) as conn:  # and its value made hostile (meta has no write counter: still current)
        for key, raw in conn.execute("SELECT key, value FROM meta WHERE key LIKE ?", [HEADLINE_META_PREFIX + "%"]).fetchall():
            entry = json.loads(raw)
            entry["lines"] = [[statistic, HEADLINE_VALUE, reading] for statistic, _, reading in entry["lines"]]
            conn.execute("UPDATE meta SET value = ? WHERE key = ?", [json.dumps(entry), key])
    (demo_db.parent / "hostile.json").write_text(json.dumps({"trajectory": traj, "item": item}))
    return demo_db


@pytest.fixture
def hostile_verdict(hostile: Path) -> Path:
    """`hostile`, and one raw verdict of the default run replaced by hostile Markdown (a value no GCPC writer
    stores: every page refuses such a row, naming it)."""
    target = _target(hostile)
    default = Store(hostile).judging.default_labels()["probe"]
    with sqlite3.connect(hostile) as conn:
        conn.execute("UPDATE judgments SET verdict_raw = ? WHERE trajectory_id = ? AND item_id = ? AND label = ?",
                     [VERDICT, target["trajectory"], target["item"], default])
    return hostile


def _target(db: Path) -> dict[str, str]:
    return json.loads((db.parent / "hostile.json").read_text())


def test_the_item_audit_escapes_run_labels_and_models(hostile: Path) -> None:
    target = _target(hostile)
    at = open_page("audit", trajectory=target["trajectory"], judge="probe", item=target["item"])
    assert_escaped(at, "audit")
    # the other run's badge names the run by its readable name, which holds the label a person chose: with
    # brackets in it, the badge is shown as plain text
    assert any(LABEL in t.value for t in at.text)
    at.button(key=f"audit:{target['trajectory']}:probe:{target['item']}:disagree").click().run()
    assert_escaped(at, "audit, disagreeing", shows=("You disagree with the judge's",))


def test_a_raw_verdict_edited_outside_gcpc_is_named_as_text_not_rendered(hostile_verdict: Path) -> None:
    target = _target(hostile_verdict)
    at = open_page("audit", trajectory=target["trajectory"], judge="probe", item=target["item"])
    assert_escaped(at, "audit of an edited row")
    assert [e.value for e in at.error] and "did not write" in at.error[0].value
    named = [t.value for t in at.text if "judgments.verdict_raw" in t.value]
    assert named and repr(VERDICT) in named[0] and str(hostile_verdict) in named[0], [t.value for t in at.text]


def test_the_agreement_headline_escapes_a_stored_value(hostile: Path) -> None:
    at = open_page("agreement")
    assert_escaped(at, "agreement", shows=(HEADLINE_VALUE,))


def test_the_moved_message_escapes_rater_names(hostile: Path) -> None:
    at = open_page("study_admin")
    at.selectbox(key="study_admin_from").set_value("sim-rater-1").run()
    at.selectbox(key="study_admin_to").set_value(RATER).run()
    next(b for b in at.button if b.label == "Reassign").click().run()
    assert_escaped(at, "study admin, reassigned", shows=(f"to {RATER}.",))


@pytest.mark.parametrize("page", ["overview", "triage", "compare", "checklists", "pairs", "runs", "study_admin"])
def test_every_other_page_shows_the_hostile_project_escaped(hostile: Path, page: str) -> None:
    assert_escaped(open_page(page), page)
