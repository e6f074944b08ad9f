"""The full log viewer: a trajectory's events by kind, tool calls with their outputs, search, paging.

Pure functions over `Event`s; the audit page renders what they return (text and code only).
Tool outputs and file contents are attached to the call that produced them (`call_id`), so the
viewer shows each call with its results even when the log interleaved them with other events.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..evidence import EVIDENCE_KINDS
from ..models import EVENT_KINDS, Event
from ..text import search_fold, search_pattern
from .excerpts import Span

__all__ = [
    "LogBlock",
    "LogQuery",
    "event_title",
    "first_hit",
    "kind_counts",
    "log_blocks",
    "page_of",
    "search_hits",
]


def event_title(event: Event) -> str:
    """One plain-text line naming an event: id, kind, tool, path, producing call, error flag, size."""
    parts = [event.id, event.kind]
    parts += [p for p in (event.tool_name, event.path) if p]
    if event.call_id:
        parts.append(f"output of {event.call_id}")
    if event.is_error:
        parts.append("ERROR")
    parts.append(f"{len(event.text):,} chars")
    return " · ".join(parts)


def kind_counts(events: Iterable[Event]) -> dict[str, int]:
    """Events per kind, in the model's kind order, kinds with no event left out."""
    counts = Counter(e.kind for e in events)
    return {k: counts[k] for k in EVENT_KINDS if counts[k]}


def search_hits(event: Event, query: str) -> int:
    """Case-insensitive occurrences of `query` in the event's text, tool name and path, invisible
    characters ignored on both sides (`pass\u200bword` is a hit for "password")."""
    q = search_fold(query.strip())
    if not q:
        return 0
    return sum(search_fold(s).count(q) for s in (event.text, event.tool_name or "", event.path or ""))


def first_hit(text: str, query: str) -> Span | None:
    """Where `query` first occurs in `text`, case-insensitively and across invisible characters
    (None: nowhere, or an empty query)."""
    pattern = search_pattern(query)
    match = pattern.search(text) if pattern else None
    return Span(match.start(), match.end()) if match else None


@dataclass(frozen=True)
class LogQuery:
    """What the viewer shows: event kinds (empty = all), a search string, evidence only, errors only."""

    kinds: frozenset[str] = frozenset()
    query: str = ""
    evidence_only: bool = False
    errors_only: bool = False

    def matches(self, event: Event) -> bool:
        if self.kinds and event.kind not in self.kinds:
            return False
        if self.evidence_only and event.kind not in EVIDENCE_KINDS:
            return False
        if self.errors_only and not event.is_error:
            return False
        return not self.query.strip() or search_hits(event, self.query) > 0


@dataclass(frozen=True)
class LogBlock:
    """One event as the viewer shows it, with the outputs of a tool call attached to it."""

    event: Event
    outputs: tuple[Event, ...] = ()
    hits: int = 0
    """Search hits in the event and its attached outputs."""


def log_blocks(events: Sequence[Event], query: LogQuery = LogQuery()) -> list[LogBlock]:
    """The events `query` selects, in log order; a tool call carries its outputs and file contents.

    An output is shown under its call whenever the call is shown (the call matching is enough);
    an output whose call is not shown, or that has no call, stands on its own if it matches.
    """
    by_call: dict[str, list[Event]] = {}
    ids = {e.id for e in events}
    for e in events:
        if e.call_id and e.call_id in ids and e.kind != "tool_call":
            by_call.setdefault(e.call_id, []).append(e)
    blocks, attached = [], set()
    for e in events:
        if e.kind == "tool_call":
            outputs = by_call.get(e.id, [])
            if query.matches(e) or any(query.matches(o) for o in outputs):
                hits = search_hits(e, query.query) + sum(search_hits(o, query.query) for o in outputs)
                blocks.append(LogBlock(e, tuple(outputs), hits))
                attached.update(o.id for o in outputs)
    shown = {b.event.id for b in blocks}
    for e in events:
        if e.kind == "tool_call" or e.id in attached:
            continue
        if e.call_id and e.call_id in shown:
            continue
        if query.matches(e):
            blocks.append(LogBlock(e, (), search_hits(e, query.query)))
    order = {e.id: i for i, e in enumerate(events)}
    return sorted(blocks, key=lambda b: order[b.event.id])


def page_of(items: Sequence, page: int, size: int) -> tuple[Sequence, int, int]:
    """(items of 0-based `page` (clamped), the page used, number of pages) — lazy rendering of long logs."""
    pages = max(1, math.ceil(len(items) / size))
    page = min(max(0, page), pages - 1)
    return items[page * size : (page + 1) * size], page, pages
