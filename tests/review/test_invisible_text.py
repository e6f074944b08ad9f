"""Invisible and direction-changing characters: shown visibly wherever untrusted text is displayed, and
ignored by log search."""

from __future__ import annotations

import pandas as pd

from gcpc_core.models import Event
from gcpc_core.review.logview import LogQuery, first_hit, log_blocks, search_hits
from gcpc_core.review.excerpts import Span
from gcpc_core.text import md_escape, search_fold, show_invisible
from gcpc_core.review.ui import visible_frame


def test_bidi_override_and_zero_width_characters_are_shown() -> None:
    assert show_invisible("\u202eTXT.EXE\u202c") == "⟨U+202E⟩TXT.EXE⟨U+202C⟩"
    assert show_invisible("pass\u200bword\ufeff\u2066x\u2069\u00ad") == "pass⟨U+200B⟩word⟨U+FEFF⟩⟨U+2066⟩x⟨U+2069⟩⟨U+00AD⟩"
    assert show_invisible("tag\U000e0041") == "tag⟨U+E0041⟩"
    assert show_invisible("plain text, ünïcödé, 中文, emoji 🙂") == "plain text, ünïcödé, 中文, emoji 🙂"
    assert md_escape("a\u202eb") == "a⟨U\\+202E⟩b"  # labels too (escaped for Markdown)


def test_frames_shown_in_the_app_make_invisibles_visible() -> None:
    frame = pd.DataFrame({"text": ["ok", "\u202eTXT.EXE"], "n": [1, 2]})
    shown = visible_frame(frame)
    assert shown["text"].tolist() == ["ok", "⟨U+202E⟩TXT.EXE"] and shown["n"].tolist() == [1, 2]


def test_log_search_ignores_invisible_characters() -> None:
    event = Event(id="E1", seq=1, kind="tool_output", text="the pass\u200bword is hunter2; PASS\u2060WORD again")
    assert search_fold("Pass\u200bWord") == "password"
    assert search_hits(event, "password") == 2
    assert search_hits(event, "pass\u200bword") == 2
    hit = first_hit(event.text, "password")
    assert hit == Span(4, 13) and event.text[hit.start : hit.end] == "pass\u200bword"
    assert [b.event.id for b in log_blocks([event], LogQuery(query="PASSWORD"))] == ["E1"]
    assert first_hit(event.text, "\u200b") is None
