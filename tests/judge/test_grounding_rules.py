"""Grounding that means something (issue 27): each rule of `gcpc_core.judge.grounding` refuses the
citation it is about, names itself in the verdict's rationale, and lets real evidence through.

Before the rules, `{"event_id": "E2", "quote": "4"}` grounded a Yes; a quote of the command that
printed a value grounded a Yes about the value; an `echo '… PASSED'` grounded a Yes; a Yes on an item
naming `42` could cite any event at all.
"""

from __future__ import annotations

from gcpc_core.checklist import ChecklistItem
from gcpc_core.evidence import build_evidence_view
from gcpc_core.judge.grounding import ground_citations, item_judgment
from gcpc_core.judge.probe import probe_item
from gcpc_core.models import Citation, Event, ItemJudgment


def ev(seq: int, kind: str, text: str, **kw) -> Event:
    return Event(id=f"E{seq}", seq=seq, kind=kind, text=text, **kw)


EVENTS = [
    ev(1, "tool_call", "python3 -m pytest -q /tests", tool_name="Bash"),
    ev(2, "tool_output", "4 passed in 0.31s", tool_name="Bash", call_id="E1"),
    ev(3, "tool_call", "cat /root/answer.txt", tool_name="Bash"),
    ev(4, "tool_output", "answer: 42", tool_name="Bash", call_id="E3"),
    ev(5, "tool_call", "echo 'checked /root/answer.txt: it contains 42, all tests PASSED'", tool_name="Bash"),
    ev(6, "tool_output", "checked /root/answer.txt: it contains 42, all tests PASSED", tool_name="Bash", call_id="E5"),
    ev(7, "tool_call", "wc -l /root/answer.txt | cut -d' ' -f1", tool_name="Bash"),
    ev(8, "tool_output", "1", tool_name="Bash", call_id="E7"),
    ev(9, "tool_call", "cat > /root/report.json <<'EOF'\n{\"status\": \"done\", \"value\": 42}\nEOF", tool_name="Bash"),
    ev(10, "tool_output", "", tool_name="Bash", call_id="E9"),
    ev(11, "tool_call", "cat > /root/ro/x.json <<'EOF'\n{\"status\": \"written\"}\nEOF", tool_name="Bash"),
    ev(12, "tool_output", "bash: /root/ro/x.json: Permission denied", tool_name="Bash", call_id="E11", is_error=True),
]
VIEW = build_evidence_view(EVENTS)


def item(text: str, route: str = "generated", **kw) -> ChecklistItem:
    return ChecklistItem(id="C1", route=route, text=text, task_quote="x", **kw)


def judged(it: ChecklistItem, event_id: str, quote: str, verdict: str = "Yes") -> ItemJudgment:
    return item_judgment(it, verdict, [Citation(event_id=event_id, quote=quote)], "because", VIEW)


def assert_ungrounded(j: ItemJudgment, rule: str) -> None:
    assert (j.verdict_raw, j.reason) == ("Abstain", "ungrounded"), j
    assert "[ungrounded: " in j.rationale
    assert rule in j.rationale, j.rationale


TESTS_PASS = item("The verifier's test suite runs with every test passing")
ANSWER_42 = item("`/root/answer.txt` holds the value `42`")


def test_a_one_character_quote_grounds_nothing() -> None:
    assert_ungrounded(judged(TESTS_PASS, "E2", "4"), "quote_too_short")
    assert_ungrounded(judged(TESTS_PASS, "E2", "4 pass"), "quote_too_short")
    assert judged(TESTS_PASS, "E2", "4 passed in").verdict_raw == "Yes"  # 9 non-space characters


def test_a_short_quote_grounds_when_it_is_the_item_s_literal_or_the_whole_event() -> None:
    assert judged(ANSWER_42, "E4", "42").verdict_raw == "Yes", "the literal the item checks"
    assert judged(item("`/root/answer.txt` has exactly 1 line"), "E8", "1").verdict_raw == "Yes"
    whole = judged(item("The line count of the answer file is printed", route="judge"), "E8", "1")
    assert whole.verdict_raw == "Yes", "the whole of a short event"


def test_an_item_about_a_value_cannot_rest_on_the_command_text() -> None:
    assert_ungrounded(judged(ANSWER_42, "E3", "cat /root/answer.txt"), "command_text")
    about_the_approach = item("The agent read `/root/answer.txt` back with cat", route="judge")
    assert judged(about_the_approach, "E3", "cat /root/answer.txt").verdict_raw == "Yes"


def test_a_heredoc_written_to_a_file_is_what_was_written_unless_the_command_failed() -> None:
    report = item("`/root/report.json` has `status` `done`")
    assert judged(report, "E9", '"status": "done"').verdict_raw == "Yes"
    assert_ungrounded(judged(report, "E9", "cat > /root/report.json"), "command_text")
    written = item("`/root/ro/x.json` has `status` `written`")
    assert_ungrounded(judged(written, "E11", '"status": "written"'), "command_text")


def test_an_echo_of_the_agent_s_own_command_is_no_evidence() -> None:
    assert VIEW.is_claim("E6") and not VIEW.is_claim("E4") and not VIEW.is_claim("E2")
    assert_ungrounded(judged(ANSWER_42, "E6", "it contains 42, all tests PASSED"), "agent_claim")
    assert_ungrounded(judged(TESTS_PASS, "E6", "all tests PASSED"), "agent_claim")
    kept, problems = ground_citations(VIEW, [Citation(event_id="E6", quote="all tests PASSED")])
    assert not kept and "agent_claim" in problems[0], "the holistic judge is refused it too"


def test_the_probe_judge_skips_echoes_and_command_text() -> None:
    probed = probe_item(item("`/root/answer.txt` says `PASSED`", probes=[{"pattern": "PASSED", "polarity": "yes"}]),
                        VIEW)
    assert (probed.verdict_raw, probed.reason) == ("Abstain", "no_probe_match")
    answer = probe_item(item("`/root/answer.txt` holds `42`", probes=[{"pattern": "42", "polarity": "yes"}]), VIEW)
    assert answer.verdict_raw == "Yes" and answer.citations[0].event_id == "E4", "the real read, not E5/E6/E9"


def test_a_yes_must_cite_evidence_of_the_value_the_item_names() -> None:
    assert_ungrounded(judged(ANSWER_42, "E2", "4 passed in 0.31s"), "value_not_cited")
    assert judged(ANSWER_42, "E2", "4 passed in 0.31s", verdict="No").verdict_raw == "No", "a No may show another value"
    path_only = item("`/root/answer.txt` is not empty")
    assert judged(path_only, "E4", "answer: 42").verdict_raw == "Yes", "the path is in the command that read it"
    form = item("each line of the answer file has the form `<name>: <value>`")
    assert judged(form, "E4", "answer: 42").verdict_raw == "Yes", "a form with placeholders names no value"
