"""gcpc_core.review.excerpts: locating quotes, excerpts with exactly the span marked, collapsing."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest

from gcpc_core.evidence import quote_occurs
from gcpc_core.review.excerpts import (
    MARK,
    Span,
    collapse,
    excerpt,
    highlighted_html,
    line_range,
    locate,
    marked_excerpt,
)

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


class _Parsed(HTMLParser):
    """The elements, attributes and text of an HTML string, as a browser's parser sees them."""

    def __init__(self, source: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, tuple[str, ...]]] = []
        self.text, self.marked, self._in_mark, self._in_number = "", [], False, False
        self.feed(source)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, tuple(sorted(name for name, _ in attrs))))
        self._in_mark = self._in_mark or tag == "mark"
        self._in_number = self._in_number or tag == "span"

    def handle_endtag(self, tag: str) -> None:
        if tag == "mark":
            self._in_mark = False
        if tag == "span":
            self._in_number = False

    def handle_data(self, data: str) -> None:
        self.text += data
        if self._in_mark:
            self.marked.append(data)


def test_highlight_keeps_each_line_whole_with_the_span_inside_it() -> None:
    ex = excerpt(TEXT, locate("brown fox jumps\nover the", TEXT), context=1)
    parsed = _Parsed(highlighted_html(ex))
    assert parsed.text.split("\n") == ["1 │ line one", "2 │ the quick brown fox jumps", "3 │ over the lazy dog",
                                        "4 │ end"]  # one row per source line: nothing split off
    assert parsed.marked == ["brown fox jumps", "over the"]
    one = _Parsed(highlighted_html(excerpt(TEXT, locate("quick", TEXT), context=0)))
    assert one.text == "2 │ the quick brown fox jumps" and one.marked == ["quick"]


HOSTILE = ('<script>alert(1)</script> <img src=x onerror=alert(1)> </pre><b onclick="x">&amp; "q" \'s\' '
           '<mark>fake</mark> <!-- c --> <![CDATA[x]]>')


def test_highlight_escapes_every_character_of_the_text() -> None:
    text = f"before\n{HOSTILE} tail\nafter"
    out = highlighted_html(excerpt(text, locate(HOSTILE, text), context=1))
    parsed = _Parsed(out)
    assert {tag for tag, _ in parsed.tags} == {"pre", "span", "mark"}  # only the markup the highlighter writes
    assert len([t for t, _ in parsed.tags if t == "mark"]) == 1
    assert all(attrs in ((), ("style",), ("class", "style")) for _, attrs in parsed.tags)
    assert parsed.text.split("\n")[1] == f"2 │ {HOSTILE} tail"  # shown literally, character for character
    assert parsed.marked == [HOSTILE]


def test_highlight_marks_clipped_lines() -> None:
    text = "head\n" + "x" * 5000 + "NEEDLE" + "y" * 5000 + "\ntail"
    parsed = _Parsed(highlighted_html(excerpt(text, locate("NEEDLE", text), margin=100, max_line=400)))
    row = parsed.text.split("\n")[1]
    assert row.startswith("2 │ …x") and row.endswith("y…") and parsed.marked == ["NEEDLE"]
