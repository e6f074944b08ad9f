"""What a judge model writes: the pydantic reply schemas sent as structured output.

Kept deliberately plain (no numeric bounds, no defaults) so every structured mode accepts the
schema, OpenAI's strict mode included; range checks that must not appear in the schema are
validators, which still make a bad reply fail validation (and so get one repair round).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, field_validator

from ..models import Citation, Verdict

__all__ = ["HolisticReply", "ItemJudgeReply", "ItemVerdictReply", "SingleItemReply"]


class _Reply(BaseModel):
    model_config = ConfigDict(extra="forbid")


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


class HolisticReply(_Reply):
    """The holistic baseline: overall progress towards the instruction, no checklist."""

    citations: list[Citation]
    rationale: str
    progress: float
    """0.0 (nothing done) … 1.0 (every requirement visibly met)."""

    @field_validator("progress")
    @classmethod
    def _unit_interval(cls, value: float) -> float:
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"progress must lie in [0, 1], got {value}")
        return value
