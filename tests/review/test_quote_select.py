"""The quote-selection component's offset mapping (gcpc_core.review.quote_select): a selection in the shown
instruction — invisible characters shown as ⟨U+XXXX⟩ markers — maps back to the exact span of instruction.md,
and that span passes G1 once it is long enough."""

from __future__ import annotations

import itertools

import pytest

from gcpc_core.checklist import load_rules
from gcpc_core.models import Task
from gcpc_core.review.checklists import add_quoted_item, check_text, set_quote, skeleton
from gcpc_core.review.quote_select import SelectionError, Segment, component_segments, segments, selection_quote
from gcpc_core.text import INVISIBLE, show_invisible

TEXT = "Write /app/out.csv\u200b with\u202e one row per node.\nKeep the header 😀 line."


def _shown_boundary(text: str, shown_offset: int) -> list[int]:
    """The [segment, offset] boundary a browser reports at `shown_offset` of the shown text (code points)."""
    at = 0
    segs = segments(text)
    for k, seg in enumerate(segs):
        if shown_offset <= at + len(seg.shown) and (shown_offset < at + len(seg.shown) or k == len(segs) - 1):
            return [k, shown_offset - at]
        at += len(seg.shown)
    raise AssertionError("offset beyond the text")


def _select(text: str, shown_part: str, **kw: int) -> tuple[str, int, int]:
    """Select `shown_part` of the shown text with the mouse, as the component reports it."""
    shown = "".join(s.shown for s in segments(text))
    begin = shown.index(shown_part)
    value = {"start": _shown_boundary(text, begin), "end": _shown_boundary(text, begin + len(shown_part)),
             "text": shown_part, "seq": "1"}
    return selection_quote(text, value, min_chars=kw.get("min_chars", 1))


def test_segments_cover_the_text_and_show_it_as_the_app_does() -> None:
    segs = segments(TEXT)
    assert "".join(TEXT[s.start:s.end] for s in segs) == TEXT
    assert all(a.end == b.start for a, b in itertools.pairwise(segs))
    assert "".join(s.shown for s in segs) == show_invisible(TEXT)
    assert [s for s in segs if s.marker] == [Segment("⟨U+200B⟩", 18, 19, True), Segment("⟨U+202E⟩", 24, 25, True)]
    assert component_segments("a\u200bb") == [["a", False], ["⟨U+200B⟩", True], ["b", False]]
    assert segments("") == []


def test_a_plain_selection_is_the_same_span_of_the_instruction() -> None:
    assert _select(TEXT, "one row per node") == ("one row per node", 26, 42)


def test_a_selection_across_markers_quotes_the_invisible_characters_themselves() -> None:
    quote, start, end = _select(TEXT, "out.csv⟨U+200B⟩ with⟨U+202E⟩ one")
    assert quote == "out.csv\u200b with\u202e one" and TEXT[start:end] == quote


def test_a_marker_touched_at_all_is_in_the_quote() -> None:
    # starting inside "⟨U+200B⟩" (at its "U") and ending inside "⟨U+202E⟩" takes both characters whole
    quote, _, _ = _select(TEXT, "U+200B⟩ with⟨U")
    assert quote == "\u200b with\u202e"


def test_characters_beyond_the_basic_plane_count_once() -> None:
    quote, start, end = _select(TEXT, "header 😀 line.")
    assert quote == "header 😀 line." and TEXT[start:end] == quote


def test_whitespace_at_the_ends_is_left_out() -> None:
    quote, start, end = _select(TEXT, " node.\nKeep ")
    assert quote == "node.\nKeep" and TEXT[start:end] == quote


@pytest.mark.parametrize(("value", "reason"), [
    (None, "malformed selection"),
    ({"start": [0, 0]}, "malformed selection"),
    ({"start": [0, "1"], "end": [0, 3]}, "malformed selection start"),
    ({"start": [0, 0], "end": [99, 0]}, "names segment 99"),
    ({"start": [0, 0], "end": [0, 999]}, "outside segment 0"),
    ({"start": [0, 5], "end": [0, 2]}, "end lies before its start"),
    ({"start": [0, 5], "end": [0, 5]}, "nothing selected"),
    ({"start": [0, 0], "end": [0, 5]}, "has 5 character"),
])
def test_a_selection_that_gives_no_quote_says_why(value: object, reason: str) -> None:
    with pytest.raises(SelectionError, match=reason):
        selection_quote(TEXT, value, min_chars=10)


def test_every_selection_passes_g1_by_construction() -> None:
    rules = load_rules()
    task = Task(id="t", instruction=TEXT * 2, source_path="tasks/t")
    min_chars = rules.contract.quote.min_chars
    text = skeleton(task, source="human:alice")
    shown = "".join(s.shown for s in segments(task.instruction))
    checked = invisible = 0
    for begin in range(0, len(shown) - min_chars, 7):
        for length in (min_chars + 3, 31, 60):
            part = shown[begin:begin + length]
            try:
                quote, _, _ = _select(task.instruction, part, min_chars=min_chars)
            except SelectionError:
                continue  # too short once whitespace is left out
            edited, item_id = add_quoted_item(text, "judge", quote)
            edited = set_quote(edited, item_id, quote)  # the editor's two ways of taking a quote
            failures = [f for f in check_text(edited, task, rules).failures if f.gate == "G1"]
            assert failures == [], (part, quote, failures)
            checked += 1
            invisible += bool(INVISIBLE.search(quote))
    assert checked > 30 and invisible > 5, (checked, invisible)
