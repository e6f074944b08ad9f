"""Evidence view: what a judge (and an auditor) may see and cite of a trajectory.

Only tool calls, tool outputs and file contents are evidence — an agent's
narration or thinking is a claim, not evidence. Long outputs stay whole in the
DB and are windowed here with an explicit marker saying what was cut; repeated
identical reads are collapsed to a pointer. Citations are checked against the
full stored text, so nothing windowed is lost to grounding.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from .models import Event

__all__ = [
    "EVIDENCE_KINDS",
    "EvidenceEntry",
    "EvidenceView",
    "build_evidence_view",
    "evidence_share",
    "normalize_ws",
    "quote_occurs",
]

EVIDENCE_KINDS = frozenset({"tool_call", "tool_output", "file_content"})
DEFAULT_WINDOW_CHARS = 6000
"""Outputs longer than this are shown as head + marker + tail."""
MIN_COLLAPSE_CHARS = 80
"""Identical texts shorter than this are cheap to repeat and clearer left in place."""

_WS = re.compile(r"\s+")


def normalize_ws(text: str) -> str:
    """Collapse every run of whitespace to one space: quotes are compared modulo layout."""
    return _WS.sub(" ", text).strip()


def quote_occurs(quote: str, text: str) -> bool:
    """The grounding primitive: is `quote` a verbatim (whitespace-normalized) span of `text`?"""
    q = normalize_ws(quote)
    return bool(q) and q in normalize_ws(text)


def _cut_at_newline(text: str, limit: int, *, from_end: bool = False) -> str:
    """Up to `limit` chars of the head (or tail), ending on a line boundary when one is near."""
    if from_end:
        piece = text[-limit:]
        nl = piece.find("\n")
        return piece[nl + 1 :] if 0 <= nl < limit // 4 else piece
    piece = text[:limit]
    nl = piece.rfind("\n")
    return piece[: nl + 1] if nl > limit * 3 // 4 else piece


def _window(event: Event, window_chars: int) -> tuple[str, int]:
    """The shown text and how many characters it leaves out."""
    text = event.text
    if len(text) <= window_chars:
        return text, 0
    head = _cut_at_newline(text, window_chars * 2 // 3)
    tail = _cut_at_newline(text, window_chars // 3, from_end=True)
    cut_start, cut_end = len(head), len(text) - len(tail)
    first_line = text.count("\n", 0, cut_start) + 1
    last_line = text.count("\n", 0, cut_end) + 1
    total_lines = text.count("\n") + 1
    marker = (
        f"\n⟦gcpc: {cut_end - cut_start:,} chars elided here (lines {first_line:,}–{last_line:,} "
        f"of {total_lines:,}); the full text of {event.id} is stored and citable⟧\n"
    )
    return head + marker + tail, cut_end - cut_start


@dataclass(frozen=True)
class EvidenceEntry:
    """One evidence event as shown: possibly windowed, possibly a pointer to an identical earlier one."""

    event: Event
    shown: str
    elided_chars: int = 0
    duplicate_of: str | None = None


@dataclass
class EvidenceView:
    """The ordered evidence of one trajectory, with the lookups grounding needs."""

    entries: list[EvidenceEntry]
    _by_id: dict[str, Event] = field(default_factory=dict, repr=False)
    _normalized: dict[str, str] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self._by_id = {e.event.id: e.event for e in self.entries}

    @property
    def event_ids(self) -> list[str]:
        return [e.event.id for e in self.entries]

    def get(self, event_id: str) -> Event | None:
        """The full event behind an id, if it is part of the evidence view."""
        return self._by_id.get(event_id)

    def _norm(self, event_id: str) -> str:
        cached = self._normalized.get(event_id)
        if cached is None:
            cached = self._normalized[event_id] = normalize_ws(self._by_id[event_id].text)
        return cached

    def quote_in_event(self, event_id: str, quote: str) -> bool:
        """True when `quote` is a verbatim span of evidence event `event_id` (narration never is)."""
        if event_id not in self._by_id:
            return False
        q = normalize_ws(quote)
        return bool(q) and q in self._norm(event_id)

    def find_quote(self, quote: str) -> list[str]:
        """Every evidence event id containing `quote`: lets an auditor locate an uncited span."""
        q = normalize_ws(quote)
        return [eid for eid in self._by_id if q and q in self._norm(eid)] if q else []

    def render(self) -> str:
        """The view as plain text for a judge prompt, each event headed by its id."""
        parts = []
        for entry in self.entries:
            e = entry.event
            label = " · ".join(x for x in (e.id, e.kind, e.tool_name, e.path) if x)
            if e.call_id:
                label += f" (output of {e.call_id})"
            parts.append(f"### {label}\n{entry.shown}")
        return "\n\n".join(parts)

    @property
    def shown_chars(self) -> int:
        return sum(len(e.shown) for e in self.entries)


def build_evidence_view(
    events: Iterable[Event], *, window_chars: int = DEFAULT_WINDOW_CHARS
) -> EvidenceView:
    """Keep tool I/O and file contents in order, window long texts, collapse repeated reads."""
    entries: list[EvidenceEntry] = []
    seen: dict[tuple[str, str | None, str], str] = {}
    for event in events:
        if event.kind not in EVIDENCE_KINDS:
            continue
        key = (event.kind, event.path, event.text)
        earlier = seen.get(key) if len(event.text) >= MIN_COLLAPSE_CHARS else None
        if earlier is not None and event.kind != "tool_call":
            entries.append(
                EvidenceEntry(event, f"⟦gcpc: identical to {earlier}; not repeated⟧", duplicate_of=earlier)
            )
            continue
        seen.setdefault(key, event.id)
        shown, elided = _window(event, window_chars)
        entries.append(EvidenceEntry(event, shown, elided_chars=elided))
    return EvidenceView(entries)


def evidence_share(events: Sequence[Event], raw_chars: int) -> float:
    """Characters a judge sees, relative to the raw log: the evidence view's compression."""
    return build_evidence_view(events).shown_chars / raw_chars if raw_chars else 0.0
