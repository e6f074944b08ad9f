"""The content-addressed response cache: `request_key`, the key an identical request (model,
messages, schema, temperature, prompt version) is answered from without an HTTP call, and
`HeldWrites`, the cache rows and call records a caller holds back to commit with its own results.

Only replies that validated are cached (`LLM.accept_reply`); the rows live in the project DB
(`store.runs`).
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from ..store import LLMCacheRow, LLMCallRow
from .request import Message, canonical_json, schema_of

if TYPE_CHECKING:
    from ..store import Store

__all__ = ["HeldWrites", "request_key"]


def request_key(
    *,
    model: str,
    messages: Sequence[Message],
    response_model: type[BaseModel],
    temperature: float | None,
    prompt_version: str,
) -> str:
    """Cache key: sha256 of the canonical request — `canonical_json` of {model, messages, schema,
    temperature, prompt_version}. The structured mode is deliberately not part of it: a reply that
    validates against the schema is equally good whichever way it was asked.

    The canonical text is assembled from its parts in sorted-key order, byte for byte what
    `canonical_json` of the whole mapping gives, with the schema's part encoded once per class: it is
    the largest constant of every request."""
    text = (
        f'{{"messages":{canonical_json([dict(m) for m in messages])},"model":{canonical_json(model)},'
        f'"prompt_version":{canonical_json(prompt_version)},"schema":{_canonical_schema(response_model)},'
        f'"temperature":{canonical_json(temperature)}}}'
    )
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@functools.lru_cache(maxsize=256)
def _canonical_schema(response_model: type[BaseModel]) -> str:
    """The `schema` part of a cache key, encoded once per class."""
    return canonical_json({"name": response_model.__name__, "json_schema": schema_of(response_model)})


@dataclass
class HeldWrites:
    """Response-cache rows and call records an `LLM` holds back inside `LLM.holding_writes`, for a
    caller that stores its own results to write together with them, in one transaction
    (`write`, then `clear` once it committed): a judging run commits once per group of finished
    trajectories instead of once per call. A held reply still answers an identical request."""

    cache: dict[str, tuple[str, dict[str, Any], str]] = field(default_factory=dict)
    """Request key → (model, validated reply body, when it was received)."""
    calls: list[LLMCallRow] = field(default_factory=list)
    """`llm_calls` rows, their time fixed when the call ended."""

    def __bool__(self) -> bool:
        return bool(self.cache or self.calls)

    def write(self, store: Store) -> None:
        """Store what is held, inside the caller's transaction when one is open. Kept until `clear`,
        so a transaction that rolls back loses nothing."""
        if self.cache:
            store.runs.cache_put_many(LLMCacheRow(key=key, model=model, response=body, created_at=at)
                                      for key, (model, body, at) in self.cache.items())
        if self.calls:
            store.runs.record_llm_calls(self.calls)

    def clear(self) -> None:
        self.cache.clear()
        self.calls.clear()

    def snapshot(self) -> HeldWrites:
        """What is held now, to write on another thread while more is held; `forget` it once committed."""
        return HeldWrites(dict(self.cache), list(self.calls))

    def forget(self, written: HeldWrites) -> None:
        """Drop what a `snapshot` held once it has been committed (calls held since stay, in order)."""
        for key in written.cache:
            self.cache.pop(key, None)
        del self.calls[: len(written.calls)]
