"""Size limits on what a person types and stores: free text (rater comments, audit notes) and the
number of stored versions of one answer.

`FREE_TEXT_MAX_CHARS` is the outer limit of any free text: enforced where text enters
(`record_item_audit` checks it server-side), where it leaves (`study export` refuses an answer over it
rather than write a file its own import would reject) and where it comes back (`study import` rejects
the row, naming its line). Above Python's default CSV field limit (131,072 characters) on purpose: a
note that was accepted must survive a CSV round trip.

A rater's comment on a study answer is held to the much smaller `COMMENT_MAX_CHARS` (the rate page's
comment box uses it as `max_chars`; `RaterSession` checks it again), and one rater's answer on one item
keeps at most `ANSWER_VERSIONS_MAX` versions: edits stay append-only (each a new row superseding the
last), and at the cap a further change is refused with a message while every stored version, the
last one current, is kept. Together they bound what one rater can store per item (about 20 × 4,000
characters) however fast they click, so the answer history stays small enough to show at once.
"""

from __future__ import annotations

__all__ = ["ANSWER_VERSIONS_MAX", "COMMENT_MAX_CHARS", "FREE_TEXT_MAX_CHARS", "free_text"]

FREE_TEXT_MAX_CHARS = 262_144
"""Longest free text stored anywhere, in characters (256 Ki)."""
COMMENT_MAX_CHARS = 4_000
"""Longest comment a rater may save with a study answer, in characters."""
ANSWER_VERSIONS_MAX = 20
"""Most versions one rater's answer on one study item may have (the first answer and 19 changes)."""


def free_text(value: str | None, what: str = "note", limit: int = FREE_TEXT_MAX_CHARS) -> str | None:
    """`value` stripped (None when blank), or ValueError when it is not text or longer than `limit`
    characters (`FREE_TEXT_MAX_CHARS` unless a smaller limit is given)."""
    if value is not None and not isinstance(value, str):
        raise ValueError(f"{what} must be text, not {type(value).__name__}")
    text = (value or "").strip()
    if len(text) > limit:
        kind = "free-text limit" if limit == FREE_TEXT_MAX_CHARS else "limit"
        raise ValueError(f"{what} has {len(text):,} characters, over the {kind} of {limit:,}")
    return text or None
