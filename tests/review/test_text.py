"""gcpc_core.review.text: locating quotes, excerpts with exactly the span marked, collapsing, escaping."""

from __future__ import annotations

import re

import pytest

from gcpc_core.evidence import quote_occurs
from gcpc_core.review.text import MARK, Span, collapse, excerpt, line_range, locate, marked_excerpt, md_escape

TEXT = "line one\nthe quick brown fox jumps\nover the lazy dog\nend"


@pytest.mark.parametrize("quote", ["brown fox", "brown  fox jumps\n over the", "  end ", "line one\nthe"])
def test_locate_tolerates_whitespace_like_grounding(quote: str) -> None:
    span = locate(quote, TEXT)
    assert span is not None and quote_occurs(quote, TEXT)
    assert " ".join(TEXT[span.start:span.end].split()) == " ".join(quote.split())


@pytest.mark.parametrize("quote", ["brownfox", "", "   ", "cat"])
def test_locate_misses_what_grounding_misses(quote: str) -> None:
    assert locate(quote, TEXT) is None
    assert not quote_occurs(quote, TEXT)


def test_locate_treats_regex_characters_literally() -> None:
    text = "cost: $4.50 (approx.) [x] a+b*c?"
    span = locate("$4.50 (approx.) [x] a+b*c?", text)
    assert span is not None and text[span.start:span.end] == "$4.50 (approx.) [x] a+b*c?"
    assert locate("4x50", "4.50") is None


def test_line_range() -> None:
    span = locate("brown fox jumps over", TEXT)
    assert line_range(TEXT, span) == (2, 3)
    assert line_range(TEXT, Span(0, 9)) == (1, 1)  # ends on the newline: line 2 is not touched


def test_excerpt_marks_exactly_the_span() -> None:
    ex = excerpt(TEXT, locate("brown fox jumps\nover the", TEXT), context=1)
    assert (ex.first_line, ex.last_line, ex.total_lines) == (1, 4, 4)
    rows = marked_excerpt(ex).split("\n")
    marked = [r for r in rows if r.startswith(MARK)]
    assert [r.split("│ ", 1)[1] for r in marked] == ["brown fox jumps", "over the"]
    assert "  2 │ the quick " in rows and "  3 │  lazy dog" in rows  # the rest of those lines, unmarked


def test_excerpt_clips_long_lines_around_the_span() -> None:
    text = "head\n" + "x" * 5000 + "NEEDLE" + "y" * 5000 + "\ntail"
    ex = excerpt(text, locate("NEEDLE", text), margin=100, max_line=400)
    rendered = marked_excerpt(ex)
    assert len(rendered) < 1000
    assert f"{MARK} 2 │ NEEDLE" in rendered and "…x" in rendered and "y…" in rendered


def test_excerpt_without_span_is_the_head() -> None:
    ex = excerpt("\n".join(f"l{i}" for i in range(100)), None, context=2)
    assert [line.text for line in ex.lines] == ["l0", "l1", "l2", "l3", "l4"]
    assert not any(line.marked for line in ex.lines)


def test_collapse() -> None:
    assert collapse("short") == ("short", 0)
    head, hidden = collapse("a\n" * 100, max_lines=3)
    assert head == "a\na\na" and hidden == 200 - len(head)
    head, hidden = collapse("z" * 10_000, max_chars=100)
    assert head == "z" * 100 and hidden == 9_900


def test_md_escape_neutralises_markdown_and_html() -> None:
    hostile = "[link](javascript:alert(1)) ![img](x) <img src=x onerror=alert(1)> **b** :red[x]\nline"
    escaped = md_escape(hostile)
    assert "\n" not in escaped
    unescaped = re.findall(r"(?<!\\)[\[\]()!<>*:]", escaped)
    assert unescaped == []
    assert escaped.replace("\\", "") == " ".join(hostile.split())  # nothing lost, only escaped
    assert md_escape("x" * 500, limit=10) == "x" * 9 + "…"
