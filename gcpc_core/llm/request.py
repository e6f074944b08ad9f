"""The chat-completion request of a structured call, exactly as sent: the body for each structured
mode (`chat_request_body`, one builder for live calls and Batch-API lines) and the canonical JSON
that cache keys and error quotes are written in.

Schemas are derived once per response class (pydantic rebuilds one from scratch on every call, and
every request needs it), so the hot path of a large run only assembles messages.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel

from .config import StructuredMode

__all__ = ["JSON_OBJECT_PROMPT", "Message", "canonical_json", "chat_request_body", "schema_of"]

Message = Mapping[str, str]

JSON_OBJECT_PROMPT = (
    "Reply with exactly one JSON object and nothing else (no prose, no code fences). "
    "It must validate against this JSON Schema, named {name}:\n{schema}"
)
"""System message prepended in `json_object` mode, for a server that ignores the `schema` field."""

_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)
"""Encodes the canonical text of cache keys (`json.dumps` would build an encoder on every call)."""


def canonical_json(value: Any) -> str:
    """`value` as compact JSON with sorted keys: the same value always gives the same text."""
    return _CANONICAL.encode(value)


@functools.lru_cache(maxsize=256)
def schema_of(response_model: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON schema, computed once per class: it is needed on every call (cache key,
    response_format) and pydantic rebuilds it from scratch each time (~1 ms)."""
    return response_model.model_json_schema()


@functools.lru_cache(maxsize=256)
def _decoding_schema(response_model: type[BaseModel]) -> dict[str, Any]:
    """The schema `json_object` mode sends (extension field and prompt): the model's own
    `decoding_schema()` when it declares grammar bounds (`gcpc_core.decoding`), else its JSON schema."""
    bounded = getattr(response_model, "decoding_schema", None)
    return bounded() if callable(bounded) else schema_of(response_model)


@functools.lru_cache(maxsize=256)
def _response_format(response_model: type[BaseModel], mode: StructuredMode) -> dict[str, Any]:
    """The `response_format` parameter of a structured mode. `parse` sends exactly what
    `completions.parse` would: the SDK's strict JSON schema, built once per class instead of on
    every request. `json_object` carries the schema in `schema`, the extension field through which
    llama-cpp-python's server (and Anyscale-style endpoints) constrain decoding to it; servers that
    do not know the field ignore it, and the schema travels in a system message as well."""
    if mode == "parse":
        from openai.lib._parsing._completions import type_to_response_format_param

        return dict(type_to_response_format_param(response_model))  # type: ignore[arg-type]
    if mode == "json_schema":
        return {
            "type": "json_schema",
            "json_schema": {"name": response_model.__name__, "schema": schema_of(response_model), "strict": False},
        }
    return {"type": "json_object", "schema": _decoding_schema(response_model)}


def chat_request_body(
    *,
    model: str,
    messages: Sequence[Message],
    response_model: type[BaseModel],
    mode: StructuredMode,
    temperature: float | None,
    max_completion_tokens: int | None = None,
) -> dict[str, Any]:
    """The chat-completion request body for a structured call: one builder for live calls and
    Batch-API lines, so a batched request is byte-for-byte the request a live call would send."""
    body: dict[str, Any] = {"model": model, "messages": [dict(m) for m in messages]}
    if mode == "json_object":
        schema_prompt = JSON_OBJECT_PROMPT.format(
            name=response_model.__name__, schema=canonical_json(_decoding_schema(response_model))
        )
        body["messages"] = [{"role": "system", "content": schema_prompt}, *body["messages"]]
    body["response_format"] = _response_format(response_model, mode)
    if temperature is not None:
        body["temperature"] = temperature
    if max_completion_tokens is not None:
        body["max_completion_tokens"] = max_completion_tokens
        if mode != "parse":
            # the legacy name too: llama-cpp-python reads only `max_tokens` (and ignores the other, so a
            # reply would run to the context window); OpenAI, the only `parse` server that refuses
            # `max_tokens` for some models, never sees it
            body["max_tokens"] = max_completion_tokens
    return body
