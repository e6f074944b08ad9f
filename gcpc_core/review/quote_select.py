"""Free selection of a task quote, by mouse or keyboard: what the selection component shows, and how a
selection in it maps back to the exact span of instruction.md it covers.

The component (`components/quote_select/index.html`) shows the instruction as `Segment`s, each one `<span>`
filled with `textContent`: runs of ordinary text shown as they are, and each invisible or direction-changing
character shown as its `⟨U+XXXX⟩` marker (`text.invisible_marker`, as everywhere else in the app). A
selection comes back as two boundaries, each a segment index and a code-point offset into what that
segment shows; `selected_span` turns them into offsets of the original text — an ordinary segment shows
its characters one for one, a marker stands for its one character (touched at all, it is in the quote)
— and `selection_quote` cuts the quote out of the instruction itself. The quote is therefore a verbatim
substring of instruction.md by construction, invisible characters included, and G1 passes for it once it
is long enough.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..checklist.gates import normalize_whitespace
from ..text import INVISIBLE, invisible_marker

__all__ = ["Segment", "SelectionError", "component_segments", "segments", "selected_span", "selection_quote"]


class SelectionError(ValueError):
    """A selection that gives no usable quote (empty, too short, or malformed), with the reason."""


@dataclass(frozen=True)
class Segment:
    """A piece of the shown instruction: `shown` stands for `text[start:end]` of the original."""

    shown: str
    start: int
    end: int
    marker: bool
    """An invisible character shown as its `⟨U+XXXX⟩` marker (`end == start + 1`)."""


def segments(text: str) -> list[Segment]:
    """`text` cut into ordinary runs and invisible characters, in order, covering it exactly."""
    out: list[Segment] = []
    at = 0
    for match in INVISIBLE.finditer(text):
        if match.start() > at:
            out.append(Segment(text[at:match.start()], at, match.start(), False))
        out.append(Segment(invisible_marker(match.group()), match.start(), match.end(), True))
        at = match.end()
    if at < len(text):
        out.append(Segment(text[at:], at, len(text), False))
    return out


def component_segments(text: str) -> list[list[Any]]:
    """The segments as the component takes them: ``[shown, is_marker]`` each (JSON-serialisable)."""
    return [[s.shown, s.marker] for s in segments(text)]


def _boundary(segs: Sequence[Segment], boundary: object, *, side: str) -> int:
    """The original offset of one selection boundary ``[segment index, code-point offset in what it shows]``."""
    if (not isinstance(boundary, (list, tuple)) or len(boundary) != 2
            or not all(isinstance(v, int) and not isinstance(v, bool) for v in boundary)):
        raise SelectionError(f"malformed selection {side} {boundary!r}: expected [segment index, offset]")
    index, offset = boundary
    if not 0 <= index < len(segs):
        raise SelectionError(f"selection {side} names segment {index}; the instruction has {len(segs)}")
    seg = segs[index]
    if not 0 <= offset <= len(seg.shown):
        raise SelectionError(f"selection {side} offset {offset} lies outside segment {index} "
                             f"({len(seg.shown)} characters)")
    if not seg.marker:
        return seg.start + offset
    if side == "start":  # a marker partly selected stands for its whole character
        return seg.end if offset == len(seg.shown) else seg.start
    return seg.start if offset == 0 else seg.end


def selected_span(segs: Sequence[Segment], start: object, end: object) -> tuple[int, int]:
    """Original offsets ``(start, end)`` of the selection between two boundaries (in document order)."""
    first, last = _boundary(segs, start, side="start"), _boundary(segs, end, side="end")
    if last < first:
        raise SelectionError("selection end lies before its start")
    return first, last


def selection_quote(text: str, value: object, *, min_chars: int) -> tuple[str, int, int]:
    """The task quote a selection component `value` (``{"start": [i, k], "end": [j, l], ...}``) gives on
    `text`: the selected span of `text` itself, whitespace at its ends left out, with its offsets.

    Raises `SelectionError` saying why when the value is malformed, the selection is empty or it is
    shorter than `min_chars` (G1's minimum, counted as G1 counts: whitespace runs as one space)."""
    if not isinstance(value, dict) or "start" not in value or "end" not in value:
        raise SelectionError(f"malformed selection {value!r}: expected start and end boundaries")
    start, end = selected_span(segments(text), value["start"], value["end"])
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    quote = text[start:end]
    if not quote:
        raise SelectionError("nothing selected: select part of the instruction (mouse, or Shift and the arrow keys)")
    size = len(normalize_whitespace(quote))
    if size < min_chars:
        raise SelectionError(f"the selection has {size} character(s); a task quote needs at least {min_chars}")
    return quote, start, end
