"""Small helpers for the LLM tests."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from gcpc_core.llm import LLM, LLMError, LLMResult, Message


def closed_port_url() -> str:
    """A base URL on 127.0.0.1 where nothing listens (a server that is down)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


@dataclass(frozen=True)
class LLMRequest:
    """One structured call for `complete_many`."""

    messages: Sequence[Message]
    response_model: type[BaseModel]
    prompt_version: str
    tag: str = ""


async def complete_many(
    llm: LLM,
    requests: Iterable[LLMRequest],
    *,
    on_done: Callable[[int, LLMResult[Any] | LLMError], None] | None = None,
) -> list[LLMResult[Any] | LLMError]:
    """Many calls at once through one layer, results in request order: what the concurrency tests
    drive (the layer bounds them by `config.concurrency`). An LLMError is returned in its request's
    slot rather than raised; `on_done(index, outcome)` fires as each finishes."""

    async def one(index: int, request: LLMRequest) -> LLMResult[Any] | LLMError:
        try:
            outcome: LLMResult[Any] | LLMError = await llm.complete(
                request.messages, request.response_model, prompt_version=request.prompt_version, tag=request.tag
            )
        except LLMError as error:
            outcome = error
        if on_done is not None:
            on_done(index, outcome)
        return outcome

    return list(await asyncio.gather(*(one(i, r) for i, r in enumerate(requests))))
