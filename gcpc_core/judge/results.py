"""What judging one trajectory produces, before it is stored: verdicts plus the audit trail."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from ..models import Citation, ItemJudgment

__all__ = ["ReplyRecord", "TrajectoryJudgment"]


class ReplyRecord(BaseModel):
    """One model reply (or probe pass), kept for audit whether or not it was usable."""

    attempt: Literal["initial", "repair", "batch"]
    item_id: str | None = None
    """Per-item mode: the item asked about; None when the reply covers every item."""
    llm_key: str | None = None
    """Response-cache key of the request (joins `llm_calls` and `llm_cache`)."""
    cache_hit: bool = False
    status: str = "ok"
    """`ok`, or why the reply was unusable: `invalid_json`, `schema`, `refusal`, `unknown_item_id`, …"""
    problems: list[str] = Field(default_factory=list)
    """Findings of validation and grounding, one line each (unknown ids, dropped citations, …)."""
    raw: str | None = None
    """The reply text as received."""


class TrajectoryJudgment(BaseModel):
    """One judge's result for one trajectory: stored in one transaction, or not at all.

    `status` is `judged` (store it; some items may be Abstain with a reason) or `error` (the
    endpoint failed after the client's retries: nothing is stored and a rerun tries again).
    """

    trajectory_id: str
    task: str
    judge: str
    status: Literal["judged", "error"] = "judged"
    items: list[ItemJudgment] = Field(default_factory=list)
    """Grounded raw verdicts, one per checklist item (empty for a rating judge such as `holistic`)."""
    progress: float | None = None
    """Rating judges only: progress in [0, 1], None when no usable rating was obtained."""
    rationale: str = ""
    """Rating judges only: the rating's rationale (item rationales live on the items)."""
    citations: list[Citation] = Field(default_factory=list)
    """Rating judges only: grounded citations."""
    reason: str | None = None
    """Why the unit is incomplete: a rating reply error, or the call error for `error`."""
    checklist_sha: str | None = None
    model: str | None = None
    prompt_version: str
    rules_version: str
    content_hash: str = ""
    """The trajectory's content hash when judged: a re-imported, changed log is judged again."""
    replies: list[ReplyRecord] = Field(default_factory=list)
