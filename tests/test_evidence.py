from __future__ import annotations

from gcpc_core.evidence import build_evidence_view, normalize_ws, quote_occurs
from gcpc_core.models import Event


def ev(seq: int, kind: str, text: str, **kw) -> Event:
    return Event(id=f"E{seq}", seq=seq, kind=kind, text=text, **kw)


EVENTS = [
    ev(1, "system", "init: model x"),
    ev(2, "user", "Please write answer.json"),
    ev(3, "agent_thinking", "I think the answer is 42"),
    ev(4, "tool_call", "cat data.csv", tool_name="Bash"),
    ev(5, "tool_output", "a,b\n1,2\n" * 20, tool_name="Bash", call_id="E4"),
    ev(6, "agent_message", "Done! The file contains 42."),
    ev(7, "tool_call", "file_path: /root/data.csv", tool_name="Read"),
    ev(8, "file_content", "a,b\n1,2\n" * 20, tool_name="Read", call_id="E7", path="/root/data.csv"),
    ev(9, "tool_call", "file_path: /root/data.csv", tool_name="Read"),
    ev(10, "file_content", "a,b\n1,2\n" * 20, tool_name="Read", call_id="E9", path="/root/data.csv"),
]


def test_view_keeps_only_tool_io_and_file_contents() -> None:
    view = build_evidence_view(EVENTS)
    assert view.event_ids == ["E4", "E5", "E7", "E8", "E9", "E10"]
    assert view.get("E6") is None and view.get("E3") is None


def test_repeated_identical_read_is_collapsed_but_citable() -> None:
    view = build_evidence_view(EVENTS)
    entry = view.entries[-1]
    assert entry.duplicate_of == "E8" and "identical to E8" in entry.shown
    assert view.quote_in_event("E10", "1,2 a,b")  # the full text is still checked


def test_long_output_is_windowed_with_marker_and_recoverable() -> None:
    lines = [f"line {i:05d} value={i * 7}" for i in range(3000)]
    big = ev(2, "tool_output", "\n".join(lines), tool_name="Bash", call_id="E1")
    view = build_evidence_view([ev(1, "tool_call", "python gen.py", tool_name="Bash"), big], window_chars=2000)
    entry = view.entries[1]
    assert entry.elided_chars > 0
    assert len(entry.shown) < 2400
    assert "chars elided here" in entry.shown and "E2" in entry.shown
    assert entry.shown.startswith("line 00000") and entry.shown.rstrip().endswith(lines[-1])
    # what is elided is still the stored text, and still groundable
    assert view.get("E2").text == big.text
    assert view.quote_in_event("E2", "line 01500 value=10500")


def test_grounding_is_whitespace_normalized_and_per_event() -> None:
    view = build_evidence_view(EVENTS)
    assert view.quote_in_event("E5", "a,b   1,2")
    assert not view.quote_in_event("E4", "a,b")  # right text, wrong event
    assert not view.quote_in_event("E6", "contains 42")  # narration is never evidence
    assert not view.quote_in_event("E5", "")
    assert not view.quote_in_event("E99", "a,b")
    assert view.find_quote("cat data.csv") == ["E4"]


def test_quote_occurs_and_normalize() -> None:
    assert normalize_ws("  a \n\t b ") == "a b"
    assert quote_occurs("x  y", "w x\ny z")
    assert not quote_occurs("x z", "w x y z")
    assert not quote_occurs("   ", "anything")


def test_render_labels_every_event_with_its_id() -> None:
    text = build_evidence_view(EVENTS).render()
    assert "### E5 · tool_output · Bash (output of E4)" in text
    assert "Done!" not in text and "I think" not in text
