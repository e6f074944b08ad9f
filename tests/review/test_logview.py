"""gcpc_core.review.logview: kinds, search, tool calls with their outputs, paging."""

from __future__ import annotations

from gcpc_core.models import Event
from gcpc_core.review.logview import LogQuery, event_title, first_hit, kind_counts, log_blocks, page_of, search_hits
from gcpc_core.review.excerpts import Span


def ev(seq: int, kind: str, text: str, **kw: object) -> Event:
    return Event(id=f"E{seq}", seq=seq, kind=kind, text=text, **kw)


EVENTS = [
    ev(1, "user", "Fix the config"),
    ev(2, "agent_thinking", "I should read app.ini"),
    ev(3, "tool_call", "cat app.ini", tool_name="Bash"),
    ev(4, "agent_message", "Reading it now"),  # interleaved between the call and its output
    ev(5, "tool_output", "[server]\nport = 80", tool_name="Bash", call_id="E3"),
    ev(6, "tool_call", "python check.py", tool_name="Bash"),
    ev(7, "tool_output", "Traceback: boom", tool_name="Bash", call_id="E6", is_error=True),
    ev(8, "file_content", "port = 8080", tool_name="Write", path="app.ini"),
]


def test_titles_and_counts() -> None:
    assert event_title(EVENTS[4]) == "E5 · tool_output · Bash · output of E3 · 18 chars"
    assert event_title(EVENTS[6]).endswith("ERROR · 15 chars")
    assert event_title(EVENTS[7]) == "E8 · file_content · Write · app.ini · 11 chars"
    assert kind_counts(EVENTS) == {"user": 1, "agent_message": 1, "agent_thinking": 1, "tool_call": 2,
                                   "tool_output": 2, "file_content": 1}


def test_calls_carry_their_outputs_in_log_order() -> None:
    blocks = log_blocks(EVENTS)
    assert [b.event.id for b in blocks] == ["E1", "E2", "E3", "E4", "E6", "E8"]
    assert [o.id for o in blocks[2].outputs] == ["E5"] and [o.id for o in blocks[4].outputs] == ["E7"]


def test_search_finds_outputs_under_their_call() -> None:
    blocks = log_blocks(EVENTS, LogQuery(query="PORT"))
    assert [b.event.id for b in blocks] == ["E3", "E8"]
    assert blocks[0].hits == 1 and search_hits(EVENTS[7], "app.INI") == 1
    assert search_hits(EVENTS[0], "  ") == 0


def test_filters() -> None:
    evidence = log_blocks(EVENTS, LogQuery(evidence_only=True))
    assert [b.event.id for b in evidence] == ["E3", "E6", "E8"]
    errors = log_blocks(EVENTS, LogQuery(errors_only=True))
    assert [(b.event.id, [o.id for o in b.outputs]) for b in errors] == [("E6", ["E7"])]
    narration = log_blocks(EVENTS, LogQuery(kinds=frozenset({"agent_message", "agent_thinking"})))
    assert [b.event.id for b in narration] == ["E2", "E4"]


def test_an_output_without_its_call_stands_alone() -> None:
    orphan = [ev(1, "tool_output", "lonely", call_id="E99")]
    assert [b.event.id for b in log_blocks(orphan)] == ["E1"]


def test_paging_clamps() -> None:
    items = list(range(53))
    assert page_of(items, 0, 25) == (items[:25], 0, 3)
    assert page_of(items, 7, 25) == (items[50:], 2, 3)
    assert page_of([], 3, 25) == ([], 0, 1)


def test_first_hit_is_case_insensitive() -> None:
    assert first_hit("Port = 80\nPORT = 8080", "port = 8") == Span(0, 8)
    assert first_hit("abc", "  ") is None and first_hit("abc", "x") is None
