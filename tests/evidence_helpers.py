"""Evidence-view lookups only tests need: the ids a view keeps, and every event a quote occurs in.
GCPC itself checks a quote against the one event it cites (`EvidenceView.quote_in_event`)."""

from __future__ import annotations

from gcpc_core.evidence import EvidenceView


def event_ids(view: EvidenceView) -> list[str]:
    """The ids of the view's events, in order."""
    return [e.event.id for e in view.entries]


def find_quote(view: EvidenceView, quote: str) -> list[str]:
    """Every evidence event id containing `quote` (whitespace-normalized), in order."""
    return [eid for eid in event_ids(view) if view.quote_in_event(eid, quote)]
