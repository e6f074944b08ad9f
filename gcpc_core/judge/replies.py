"""What a judge model writes: the pydantic reply schemas sent as structured output.

Kept deliberately plain (no numeric bounds, no defaults) so every structured mode accepts the
schema, OpenAI's strict mode included; range checks that must not appear in the schema are
validators, which still make a bad reply fail validation (and so get one repair round).
Grammar bounds on citations and strings (`decoding_bounds`) reach only servers that constrain
decoding through `json_object`'s schema field (see `gcpc_core.decoding`); the prompts ask for the
same limits in words, so every server hears them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, field_validator

from ..decoding import DecodingBounds
from ..models import Citation, Verdict

__all__ = [
    "HOLISTIC_MAX_CITATIONS",
    "ITEM_MAX_CITATIONS",
    "MAX_QUOTE_CHARS",
    "MAX_RATIONALE_CHARS",
    "HolisticReply",
    "ItemJudgeReply",
    "ItemVerdictReply",
    "SingleItemReply",
]

ITEM_MAX_CITATIONS = 5
"""Citations one item's verdict may carry under a grammar (and the item prompts ask for at most this
many): one decisive quote is the norm, but an item over five entries (five titles, five rows) needs one
quote per entry. Was 3 before judge-items-v4 / judge-per-item-v4."""
HOLISTIC_MAX_CITATIONS = 5
MAX_QUOTE_CHARS = 300
"""A quote is a span an auditor checks at a glance, not a copied output."""
MAX_RATIONALE_CHARS = 400
"""One or two sentences."""
MAX_ITEMS = 100
"""Entries of an all-items reply under a grammar: above any real checklist, so it only stops a loop."""
_IDS = {"item_id": 32, "event_id": 16}
_CITATION_BOUNDS = {"quote": MAX_QUOTE_CHARS, "rationale": MAX_RATIONALE_CHARS, **_IDS}


class _Reply(DecodingBounds, BaseModel):
    model_config = ConfigDict(extra="forbid")
    decoding_bounds: ClassVar[Mapping[str, int]] = {"citations": ITEM_MAX_CITATIONS, **_CITATION_BOUNDS}


class SingleItemReply(_Reply):
    """The verdict on one item (per-item mode: the item is named by the request)."""

    citations: list[Citation]
    """Evidence first: verbatim spans of evidence events the verdict rests on."""
    rationale: str
    """One or two sentences an auditor can check against the citations."""
    verdict: Verdict


class _ItemRef(_Reply):
    item_id: str
    """The checklist item's id, exactly as given."""


class ItemVerdictReply(SingleItemReply, _ItemRef):
    """The verdict on one item inside an all-items reply (the item id comes first)."""


class ItemJudgeReply(_Reply):
    """All items of one checklist for one trajectory (the default, one call per trajectory)."""

    items: list[ItemVerdictReply]

    decoding_bounds: ClassVar[Mapping[str, int]] = {"items": MAX_ITEMS, "citations": ITEM_MAX_CITATIONS,
                                                    **_CITATION_BOUNDS}


class HolisticReply(_Reply):
    """The holistic baseline: overall progress towards the instruction, no checklist."""

    citations: list[Citation]
    rationale: str
    progress: float
    """0.0 (nothing done) … 0.9 (every step visibly done, correctness unchecked) … 1.0 (shown correct);
    the anchors are `prompts.HOLISTIC_ANCHORS`."""

    decoding_bounds: ClassVar[Mapping[str, int]] = {"citations": HOLISTIC_MAX_CITATIONS, **_CITATION_BOUNDS}

    @field_validator("progress")
    @classmethod
    def _unit_interval(cls, value: float) -> float:
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"progress must lie in [0, 1], got {value}")
        return value
