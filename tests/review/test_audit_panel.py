"""gcpc_core.review.audit_panel: the audit page's item-panel context, widget keys and plain lines."""

from __future__ import annotations

from dataclasses import replace

from gcpc_core.models import Task
from gcpc_core.review.audit import REASON_TEXT, ItemView, RefView, RunVerdict
from gcpc_core.review.audit_panel import (
    COLLAPSED_CHARS,
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
from gcpc_core.review.excerpts import Span
from gcpc_core.store import Store


def view(**given: object) -> ItemView:
    fields = {"item_id": "C1", "route": "generated", "text": "out.txt says done", "quote": None, "refs": (),
              "verdict_raw": "Yes", "reason_raw": None, "verdict": "Yes", "reason": None, "rationale": "",
              "citations": (), **given}
    return ItemView(**fields)  # type: ignore[arg-type]


def context(store: Store, **given: object) -> AuditContext:
    fields = {"store": store, "trajectory_id": "t1", "judge": "probe", "label": "probe:a", "default_label": "probe:a",
              "task": None, "reviewer": "ann", "run_names": {"probe:b": "probe · model b"}, **given}
    return AuditContext(**fields)  # type: ignore[arg-type]


def test_widget_keys_name_the_trajectory_judge_and_item_and_a_run_other_than_the_default(store: Store) -> None:
    assert context(store).key("C1") == "audit:t1:probe:C1"
    assert context(store, label="probe:b").key("C1") == "audit:t1:probe:C1:probe:b"
    assert context(store).run_name("probe:b") == "probe · model b" and context(store).run_name("x") == "x"


def test_a_closed_panel_shows_the_start_of_a_long_text() -> None:
    long = view(text="x" * (COLLAPSED_CHARS + 5))
    assert item_text(long, focused=True) == long.text
    assert item_text(long, focused=False) == "x" * COLLAPSED_CHARS + "…"
    assert item_text(view(text="x" * COLLAPSED_CHARS), focused=False) == "x" * COLLAPSED_CHARS  # no ellipsis


def test_reasons_are_explained_once_and_other_judges_on_one_line() -> None:
    assert reason_lines(view()) == []
    both = view(reason_raw="ungrounded", reason="ungrounded")
    assert reason_lines(both) == ["Why: " + REASON_TEXT["ungrounded"]]
    assert reason_lines(view(reason_raw="judge_abstain", reason="official_pass")) == [
        "Why: " + REASON_TEXT["judge_abstain"], "Why: " + REASON_TEXT["official_pass"]]
    assert other_judges_line(view()) is None
    assert other_judges_line(view(other_judges={"gcpc": "No", "llm": "Yes"})) == "Other judges (raw): gcpc No, llm Yes"


def test_other_runs_say_whether_they_agree_and_whether_they_are_simulated() -> None:
    run = RunVerdict(label="probe:b", model=None, simulated=False, verdict_raw="Yes", reason_raw=None, rationale="",
                     citations=())
    assert other_run_line(run, view()) == "run probe:b · model offline · same verdict"
    flipped = replace(run, model="m", simulated=True, verdict_raw="No")
    assert other_run_line(flipped, view()) == (
        "run probe:b · model m · SIMULATED verdicts (demo), not a judge run · DIFFERENT verdict")


def test_quotes_and_refs_say_where_they_are() -> None:
    assert no_quote_text(view(route="endpoint")) == "(no task quote: the endpoint item is the official outcome)"
    assert no_quote_text(view()) == "(no task quote: a task-agnostic item)"
    task = Task(id="t", instruction="line one\nline two\nline three", source_path="/tasks/t")
    assert quote_location(Span(9, 17), task) == "instruction.md lines 2–2, characters 9–17"
    assert quote_location(Span(1000, 1200), None) == "instruction.md lines 0–0, characters 1,000–1,200"
    ref = RefView(ref="tests/test_outputs.py::test_a", node_id="test_a", param=None, file="tests/test_outputs.py",
                  lineno=12, source=None, docstring=None, status="passed")
    assert ref_line(ref) == "tests/test_outputs.py::test_a (line 12)"
    assert ref_line(replace(ref, lineno=None)) == "tests/test_outputs.py::test_a — not a parsed test of this task"


def test_the_correction_prompt_numbers_the_verdicts_and_the_flash_says_what_was_stored() -> None:
    assert correction_prompt(view(), ["No", "Abstain"]) == (
        "You disagree with the judge's Yes. Which verdict is right? 1 = No · 2 = Abstain")
    assert audit_flash(True, None, written=True) == "Audit saved: agree"
    assert audit_flash(False, "No", written=True) == "Audit saved: disagree → No"
    assert audit_flash(False, "No", written=False) == "Same as your current audit: nothing new stored."
