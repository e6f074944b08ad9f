"""The one size limit on free text a person types (rater comments, audit notes).

Enforced where text enters (the rate page's comment box uses it as `max_chars`; `RaterSession`
and `record_item_audit` check it again server-side), where it leaves (`study export` refuses an
answer over it rather than write a file its own import would reject) and where it comes back
(`study import` rejects the row, naming its line). Above Python's default CSV field limit
(131,072 characters) on purpose: a comment the box accepts must survive a CSV round trip.
"""

from __future__ import annotations

__all__ = ["FREE_TEXT_MAX_CHARS", "free_text"]

FREE_TEXT_MAX_CHARS = 262_144
"""Longest free-text answer, in characters (256 Ki)."""


def free_text(value: str | None, what: str = "note") -> str | None:
    """`value` stripped (None when blank), or ValueError when it is not text or longer than `FREE_TEXT_MAX_CHARS`."""
    if value is not None and not isinstance(value, str):
        raise ValueError(f"{what} must be text, not {type(value).__name__}")
    text = (value or "").strip()
    if len(text) > FREE_TEXT_MAX_CHARS:
        raise ValueError(f"{what} has {len(text):,} characters, over the free-text limit of {FREE_TEXT_MAX_CHARS:,}")
    return text or None
