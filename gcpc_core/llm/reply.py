"""What comes back: `interpret_reply`, the single validation path for a chat-completion body —
fresh replies in any structured mode, Batch-API replies and cache hits alike — and `LLMResult`,
a validated reply with what it cost.

A reply is validated from its raw text with `model_validate_json`, so a bad one can be reported
with its text (`LLMReplyError`) and a good one cached exactly as received.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from .errors import REASON_TRUNCATED, LLMRefusal, LLMReplyError
from .pricing import Usage
from .request import canonical_json

__all__ = ["MAX_ERRORS_SHOWN", "RAW_REPLY_LIMIT", "LLMResult", "clip_raw", "interpret_reply"]

T = TypeVar("T", bound=BaseModel)

RAW_REPLY_LIMIT = 200_000
"""Raw reply text kept on errors and in call records; longer replies are cut (and say so)."""

MAX_ERRORS_SHOWN = 20
"""Validation errors named in an LLMReplyError message (enough for a repair prompt)."""


@dataclass(frozen=True)
class LLMResult(Generic[T]):
    """A validated reply and what it cost."""

    parsed: T
    text: str
    model: str
    key: str
    usage: Usage
    """Tokens this call spent: zero for a cache hit."""
    cost_usd: float | None
    cache_hit: bool
    latency_s: float
    retries: int = 0


def clip_raw(text: str) -> str:
    """`text` cut to `RAW_REPLY_LIMIT` characters, saying how much was cut: a runaway reply must not
    bloat the call records and error messages it is kept in."""
    if len(text) <= RAW_REPLY_LIMIT:
        return text
    return text[:RAW_REPLY_LIMIT] + f"\n[… cut: {len(text) - RAW_REPLY_LIMIT} more characters]"


def _strip_fences(text: str) -> str:
    """Drop one ```json … ``` wrapper, which JSON-mode servers sometimes add."""
    stripped = text.strip()
    if stripped.startswith("```") and stripped.endswith("```"):
        stripped = stripped[3:-3]
        first_newline = stripped.find("\n")
        if first_newline != -1 and stripped[:first_newline].strip().isalpha():
            stripped = stripped[first_newline + 1 :]
    return stripped.strip()


def _validate_text(text: str, response_model: type[T]) -> T:
    """The reply text as a `response_model`. JSON forbids raw control characters inside strings, but a
    server decoding under a grammar may write them (llama-cpp-python with Gemma 3 270M wrote newlines
    inside a quote): such text is unambiguous, so it is read as Python's non-strict parser reads it,
    then validated the same way. Any other broken JSON stays an error."""
    try:
        return response_model.model_validate_json(text)
    except ValidationError as exc:
        if not any(err["type"] == "json_invalid" for err in exc.errors(include_url=False)):
            raise
        try:
            data = json.loads(text, strict=False)
        except ValueError:
            raise exc from None
        return response_model.model_validate(data)


def interpret_reply(body: Mapping[str, Any], response_model: type[T]) -> tuple[T, str]:
    """Validate a chat-completion body against `response_model`: (instance, reply text).

    The single validation path for fresh replies (any structured mode) and cache hits.
    """
    usage = Usage.from_body(body)
    choices = body.get("choices") or []
    if not choices:
        raise LLMReplyError("reply has no choices", reason="no_choices", raw=clip_raw(canonical_json(body)), usage=usage)
    choice = choices[0]
    message = choice.get("message") or {}
    text = message.get("content") or ""
    if message.get("refusal"):
        raise LLMRefusal(f"model refused: {message['refusal']}", reason="refusal", raw=clip_raw(message["refusal"]), usage=usage)
    finish = choice.get("finish_reason")
    if finish == "content_filter":
        raise LLMRefusal("reply stopped by the content filter", reason="content_filter", raw=clip_raw(text), usage=usage)
    if finish == "length":
        raise LLMReplyError(
            "reply was cut at the token limit", reason=REASON_TRUNCATED, raw=clip_raw(text), usage=usage
        )
    if not text.strip():
        raise LLMReplyError("reply is empty", reason="empty", raw=clip_raw(canonical_json(body)), usage=usage)
    try:
        return _validate_text(_strip_fences(text), response_model), text
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        json_broken = any(err["type"] == "json_invalid" for err in errors)
        detail = "; ".join(
            f"{'.'.join(map(str, err['loc'])) or '(root)'}: {err['msg']}" for err in errors[:MAX_ERRORS_SHOWN]
        )
        if len(errors) > MAX_ERRORS_SHOWN:
            detail += f"; and {len(errors) - MAX_ERRORS_SHOWN} more"
        raise LLMReplyError(
            f"reply is {'not valid JSON' if json_broken else f'not a valid {response_model.__name__}'}: {detail}",
            reason="invalid_json" if json_broken else "schema",
            raw=clip_raw(text),
            usage=usage,
        ) from exc
