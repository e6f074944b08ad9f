"""The OpenAI Batch API, for large runs: submit now, collect within 24 h, typically at half price.

A batch line carries exactly the body a live call would send (`LLM.request_body`) and is keyed like
it (`cache.request_key`), and a batch reply is accepted exactly like a live one (`LLM.accept_reply`):
a batched request is held to the same rules, cached the same way, and a later live run of it makes
no call. The judges' use of it (which trajectories, how results become judgments) is `judge.batch`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from .cache import request_key
from .client import LLM
from .errors import call_error
from .pricing import BATCH_PRICE_FACTOR
from .reply import LLMResult
from .request import Message

__all__ = ["BATCH_ENDPOINT", "accept_batch_reply", "batch_line", "batch_results", "create_batch", "retrieve_batch"]

T = TypeVar("T", bound=BaseModel)

BATCH_ENDPOINT = "/v1/chat/completions"


def batch_line(
    llm: LLM,
    custom_id: str,
    messages: Sequence[Message],
    response_model: type[BaseModel],
    *,
    prompt_version: str,
    temperature: float | None = None,
) -> tuple[dict[str, Any], str]:
    """One Batch-API JSONL line — exactly the body a live call would send — and its cache key."""
    temp = llm.config.temperature if temperature is None else temperature
    line = {"custom_id": custom_id, "method": "POST", "url": BATCH_ENDPOINT,
            "body": llm.request_body(messages, response_model, temperature=temp)}
    key = request_key(model=llm.model, messages=messages, response_model=response_model, temperature=temp,
                      prompt_version=prompt_version)
    return line, key


async def create_batch(
    llm: LLM, lines: Sequence[Mapping[str, Any]], *, path: Path, metadata: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """Write `lines` as JSONL to `path` (kept for audit), upload it and create the batch.

    Returns the provider's batch object as a dict; raises LLMCallError when the endpoint fails.
    """
    import openai

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8")
    client = llm.client()
    extra: dict[str, Any] = {"metadata": dict(metadata)} if metadata else {}
    try:
        uploaded = await client.files.create(file=(path.name, path.read_bytes()), purpose="batch")
        batch = await client.batches.create(
            input_file_id=uploaded.id, endpoint=BATCH_ENDPOINT, completion_window="24h", **extra
        )
    except openai.APIError as exc:
        raise call_error(exc) from exc
    return batch.model_dump()


async def retrieve_batch(llm: LLM, batch_id: str) -> dict[str, Any]:
    """The provider's current batch object (status, output and error file ids, counts)."""
    import openai

    try:
        return (await llm.client().batches.retrieve(batch_id)).model_dump()
    except openai.APIError as exc:
        raise call_error(exc) from exc


async def batch_results(llm: LLM, batch: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """custom_id → result row (`response: {status_code, body}` and/or `error`) from a finished
    batch's output and error files."""
    import openai

    client = llm.client()
    rows: dict[str, dict[str, Any]] = {}
    for file_key in ("output_file_id", "error_file_id"):
        file_id = batch.get(file_key)
        if not file_id:
            continue
        try:
            content = (await client.files.content(file_id)).read()
        except openai.APIError as exc:
            raise call_error(exc) from exc
        for line in content.decode("utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                rows.setdefault(row["custom_id"], row)
    return rows


def accept_batch_reply(
    llm: LLM,
    body: Mapping[str, Any],
    response_model: type[T],
    *,
    key: str,
    prompt_version: str,
    tag: str = "",
) -> LLMResult[T]:
    """Validate one batch reply exactly like a live one, record it in the run, and cache it when
    valid (so a later live run of the same request makes no call). Raises LLMReplyError."""
    return llm.accept_reply(
        body, response_model, key=key, prompt_version=prompt_version, tag=tag, cost_factor=BATCH_PRICE_FACTOR
    )
