"""Showing a quoted span of untrusted text precisely: located, excerpted and highlighted.

A quoted span is located as a character span in the original text (whitespace-tolerant, like the
grounding check) and shown inside its own source line: `highlighted_html` draws the excerpt's lines
once each, in a `<pre>`, with exactly the span wrapped in `<mark>`. It is the only HTML built from
untrusted text, and every character of that text passes through `show_invisible` and `html.escape`
first, so markup in a log shows as text. `marked_excerpt` is the plain-text form (the span's rows
marked `+`, for a `diff` code block) used where a line is too long for the browser to lay out as HTML.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass

from ..text import show_invisible

__all__ = [
    "MARK",
    "Excerpt",
    "ExcerptLine",
    "Span",
    "collapse",
    "excerpt",
    "highlighted_html",
    "line_range",
    "locate",
    "marked_excerpt",
]

MARK = "+"
"""First character of a highlighted line in a marked excerpt (the `diff` convention)."""

_WS = re.compile(r"\s+")


@dataclass(frozen=True)
class Span:
    """Half-open character range `[start, end)` of a text."""

    start: int
    end: int


def locate(quote: str, text: str) -> Span | None:
    """Where `quote` occurs in `text`, tolerating differences in whitespace (as grounding does);
    the first occurrence, or None."""
    words = _WS.split(quote.strip())
    if not words or words == [""]:
        return None
    match = re.search(r"\s+".join(map(re.escape, words)), text)
    return Span(match.start(), match.end()) if match else None


def line_range(text: str, span: Span) -> tuple[int, int]:
    """1-based first and last line of `text` that `span` touches."""
    first = text.count("\n", 0, span.start) + 1
    last = first + text.count("\n", span.start, max(span.start, span.end - 1))
    return first, last


@dataclass(frozen=True)
class ExcerptLine:
    """One line of an excerpt: its 1-based number in the text, its (possibly clipped) content, and
    for a line the span touches, the part of `text` inside the span (`mark_from`, `mark_to`)."""

    number: int
    text: str
    mark_from: int | None = None
    mark_to: int | None = None
    clipped_before: bool = False
    clipped_after: bool = False

    @property
    def marked(self) -> bool:
        return self.mark_from is not None


@dataclass(frozen=True)
class Excerpt:
    """Lines around a span; `total_lines` is the line count of the whole text."""

    lines: tuple[ExcerptLine, ...]
    total_lines: int

    @property
    def first_line(self) -> int:
        return self.lines[0].number if self.lines else 0

    @property
    def last_line(self) -> int:
        return self.lines[-1].number if self.lines else 0


def _clip(line: str, keep_from: int, keep_to: int, margin: int, max_chars: int) -> int:
    """Where a line longer than `max_chars` is cut to keep `margin` characters before
    [keep_from, keep_to): the start offset (the shown part is `max_chars` long from there)."""
    if len(line) <= max_chars:
        return 0
    return max(0, min(keep_from - margin, len(line) - max_chars))


def excerpt(text: str, span: Span | None, *, context: int = 3, margin: int = 160, max_line: int = 600) -> Excerpt:
    """The lines touched by `span` plus `context` lines either side, long lines clipped.

    Lines inside the span are marked (`mark_from`/`mark_to`). A line longer than `max_line`
    characters keeps `margin` characters around the part of the span it holds (context lines keep
    their head). With no span,
    the first `2 * context + 1` lines.
    """
    lines = text.split("\n")
    if span is None:
        lo, hi, marked = 1, min(len(lines), 2 * context + 1), range(0)
    else:
        first, last = line_range(text, span)
        marked = range(first, last + 1)
        lo, hi = max(1, first - context), min(len(lines), last + context)
    offset = sum(len(line) + 1 for line in lines[: lo - 1])
    out = []
    for number in range(lo, hi + 1):
        line = lines[number - 1]
        mark: tuple[int, int] | None = None
        if span is not None and number in marked:
            a, b = max(0, span.start - offset), min(len(line), span.end - offset)
            limit = max(max_line, b - a + 2 * margin)
            start = _clip(line, a, b, margin, limit)
            mark = (a - start, b - start)
        else:
            limit, start = max_line, 0
        shown = line[start : start + limit]
        out.append(ExcerptLine(number, shown, *(mark or (None, None)), start > 0, start + limit < len(line)))
        offset += len(line) + 1
    return Excerpt(tuple(out), len(lines))


def marked_excerpt(ex: Excerpt) -> str:
    """The excerpt as plain text for a `diff` code block, with line numbers and `…` where a line was
    clipped. Exactly the span is marked: a line the span covers only partly is split into up to three
    rows (before, span, after) under the same line number, and only the span's row starts with `+`."""
    width = len(str(ex.last_line or 1))
    rows = []
    for line in ex.lines:
        pieces = [(line.text, False)]
        if line.mark_from is not None and line.mark_to is not None:
            pieces = [(line.text[: line.mark_from], False), (line.text[line.mark_from : line.mark_to], True),
                      (line.text[line.mark_to :], False)]
            pieces = [p for p in pieces if p[0]] or [("", True)]
        for k, (body, marked) in enumerate(pieces):
            if k == 0 and line.clipped_before:
                body = "…" + body
            if k == len(pieces) - 1 and line.clipped_after:
                body += "…"
            rows.append(f"{MARK if marked else ' '} {line.number:>{width}} │ {body}")
    return "\n".join(rows)


_EXCERPT_STYLE = ("margin:0;padding:0.6rem 0.8rem;border-radius:0.5rem;background:rgba(128,128,128,0.08);"
                  "font-family:'Source Code Pro',monospace;font-size:0.85rem;line-height:1.5;"
                  "white-space:pre-wrap;overflow-wrap:anywhere")
_LINE_NUMBER_STYLE = "color:rgba(128,128,128,0.9);user-select:none"
_MARK_STYLE = "background:rgba(255,196,0,0.45);color:inherit;padding:0;border-radius:2px"


def highlighted_html(ex: Excerpt) -> str:
    """The excerpt as one `<pre>` block: one row per source line (line number, `│`, the line), `…` where
    a line was clipped, and the quoted span wrapped in `<mark>` inside the line it belongs to.

    Every piece of the text has its invisible characters made visible and is then `html.escape`d (each
    piece after slicing, so the span's offsets into the original text stay right); the markup is fixed
    here (`pre`, `span`, `mark` with constant styles), so nothing from the text can add an element or an
    attribute."""
    def safe(piece: str) -> str:
        return html.escape(show_invisible(piece))

    width = len(str(ex.last_line or 1))
    rows = []
    for line in ex.lines:
        a, b = (line.mark_from, line.mark_to) if line.marked else (len(line.text), len(line.text))
        body = safe(line.text[:a])
        if line.marked:
            body += f'<mark style="{_MARK_STYLE}">{safe(line.text[a:b])}</mark>'
        body += safe(line.text[b:])
        body = ("…" if line.clipped_before else "") + body + ("…" if line.clipped_after else "")
        rows.append(f'<span style="{_LINE_NUMBER_STYLE}">{line.number:>{width}} │ </span>{body}')
    return f'<pre class="gcpc-excerpt" style="{_EXCERPT_STYLE}">' + "\n".join(rows) + "</pre>"


def collapse(text: str, *, max_lines: int = 30, max_chars: int = 3000) -> tuple[str, int]:
    """The head of a long text (at most `max_lines` lines and `max_chars` characters) and how many
    characters it leaves out; (text, 0) when it is short enough to show whole."""
    head = text[:max_chars]
    cut = -1
    for _ in range(max_lines):
        cut = head.find("\n", cut + 1)
        if cut < 0:
            break
    if cut >= 0:
        head = head[:cut]
    return (text, 0) if len(head) >= len(text) else (head, len(text) - len(head))
