"""One LLM request with at most one repair round: the retry policy every LLM judge shares.

HTTP faults (429, 5xx, timeouts) are retried by the `openai` client inside the LLM layer; what
reaches this module is either a validated reply or a reply error (invalid JSON, schema,
refusal, truncation). A server's "prompt too long" (`context_overflow`) is deterministic, so it
is treated like a reply error that no repair can cure (a repair turn is longer still). So is a
request that ran out of its time bound (`GCPC_LLM_TIMEOUT`, after the client's own retries,
reason `timeout`): on a server too slow for it the same request, or a longer repair, would time out
again, so the items are stored Abstain `timeout` rather than left unjudged (`judge --force` asks
again). A reply error — or a reply that validates but is mislabelled (e.g.
unknown item ids) — gets exactly one repair turn that names the problem; after that the best
usable reply wins, or the caller abstains with the reason. Every reply is kept for audit.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

from ..llm import UNREPAIRABLE_CALL_ERRORS, LLM, LLMCallError, LLMReplyError, LLMResult, repair_room
from .prompts import REPAIR_REPLY_PROMPT, Messages, repair_messages
from .results import ReplyRecord

__all__ = ["Assessed", "Outcome", "RepairResult", "call", "with_one_repair"]

V = TypeVar("V")
Outcome = LLMResult[Any] | LLMReplyError
"""What one request produced: a validated reply or the reason it was unusable."""


@dataclass
class Assessed(Generic[V]):
    """A validated reply, judged by the caller: its value, and whether it deserves a repair."""

    value: V
    repair_ask: str | None = None
    """Set when the reply is usable but flawed in a way worth one repair turn (the turn's text)."""
    status: str = "ok"
    """Status recorded for the reply (`ok`, or e.g. `unknown_item_id` when `repair_ask` is set)."""
    problems: list[str] = field(default_factory=list)


@dataclass
class RepairResult(Generic[V]):
    value: V | None
    """The last usable value, or None when no reply was usable."""
    reason: str | None
    """Why no reply was usable (the last reply error's reason); None when `value` is set."""
    records: list[ReplyRecord]
    prompt_tokens: int | None = None
    """Prompt tokens the server reported for the initial request (its tokenizer's count, where
    GCPC's own count before sending may have been an estimate); None when it reported none."""


async def call(
    llm: LLM, messages: Messages, response_model: type[BaseModel], *, prompt_version: str, tag: str,
    max_completion_tokens: int | None = None,
) -> Outcome:
    """One request through the LLM layer; a reply error is returned, an HTTP failure raised."""
    try:
        return await llm.complete(messages, response_model, prompt_version=prompt_version, tag=tag,
                                  max_completion_tokens=max_completion_tokens)
    except LLMReplyError as error:
        return error


async def with_one_repair(
    llm: LLM | None,
    messages: Messages,
    response_model: type[BaseModel],
    assess: Callable[[Any], Assessed[V]],
    *,
    prompt_version: str,
    tag: str,
    item_id: str | None = None,
    first: Outcome | None = None,
) -> RepairResult[V]:
    """The initial request (or `first`, an outcome obtained elsewhere, e.g. from a batch) and at
    most one repair. LLMCallError propagates unless an earlier reply was usable (or it is one of
    `UNREPAIRABLE_CALL_ERRORS`: then that is the reason). A reply cut at its token bound is
    repaired with a larger bound, or not at all when the window has no room for one (`repair_room`)."""
    records: list[ReplyRecord] = []
    best: V | None = None
    reason: str | None = None
    outcome = first
    limit: int | None = None
    prompt_tokens: int | None = None
    for attempt in ("initial", "repair"):
        if outcome is None:
            if llm is None:
                break  # no endpoint to repair with (e.g. collecting a batch offline)
            try:
                outcome = await call(llm, messages, response_model, prompt_version=prompt_version, tag=tag,
                                     max_completion_tokens=limit)
            except LLMCallError as error:
                if error.reason in UNREPAIRABLE_CALL_ERRORS:
                    records.append(ReplyRecord(attempt=attempt, item_id=item_id, status=error.reason,
                                               problems=[str(error)]))
                    reason = reason or error.reason  # a repair that failed so: the first reply's reason stands
                    break
                if best is None:
                    raise
                break
        kind = "batch" if attempt == "initial" and first is not None else attempt
        if attempt == "initial":
            prompt_tokens = outcome.usage.prompt_tokens or None
        if isinstance(outcome, LLMReplyError):
            reason = outcome.reason
            records.append(
                ReplyRecord(attempt=kind, item_id=item_id, status=outcome.reason, problems=[str(outcome)], raw=outcome.raw)
            )
            echo = outcome.raw
            ask = REPAIR_REPLY_PROMPT.format(reason=outcome.reason, message=" ".join(str(outcome).split())[:2000])
        else:
            assessed = assess(outcome.parsed)
            records.append(
                ReplyRecord(
                    attempt=kind,
                    item_id=item_id,
                    llm_key=outcome.key,
                    cache_hit=outcome.cache_hit,
                    status=assessed.status,
                    problems=assessed.problems,
                    raw=outcome.text,
                )
            )
            best, reason = assessed.value, None
            if assessed.repair_ask is None:
                break
            echo, ask = outcome.text, assessed.repair_ask
        if attempt == "initial":
            messages = repair_messages(messages, echo, ask)
            if isinstance(outcome, LLMReplyError) and llm is not None:
                room = await repair_room(llm, messages, response_model, outcome)
                if room.full:
                    records[-1].problems.append(room.full)
                    break
                limit = room.max_completion_tokens
            outcome = None
    return RepairResult(best, None if best is not None else reason, records, prompt_tokens)
