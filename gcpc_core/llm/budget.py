"""Context budget: a prompt is counted before it is sent, and what does not fit the model's context
window is shortened explicitly, never silently truncated — for judges and checklist synthesis alike.

The window is the layer's `context_window` (`GCPC_CONTEXT_WINDOW`, or what `llm check` found the
server reporting); without one nothing is counted and a server's own overflow error is the caller's
`context_overflow`. Tokens are counted by the server's tokenizer endpoint where it has one, else
estimated (`server.estimate_tokens`). A reply reserve is kept free: `max_completion_tokens` when
set, else `DEFAULT_REPLY_RESERVE` (at most a quarter of the window).

`fit_prompt` takes ever shorter forms of a request, each saying what it leaves out, and returns the
first that fits (the judges window their evidence instead: `judge.budget.fit_evidence`, on
`prompt_budget`). `repair_room` gives the repair of a reply cut at its token bound a larger bound,
or none when the window has no room for one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from pydantic import BaseModel

from .client import LLM
from .errors import REASON_TRUNCATED, LLMReplyError
from .request import Message
from .server import count_prompt_tokens

__all__ = [
    "DEFAULT_REPLY_RESERVE",
    "REPAIR_TOKENS_FACTOR",
    "PromptFit",
    "RepairRoom",
    "budget_head",
    "fit_prompt",
    "prompt_budget",
    "repair_room",
]

REPAIR_TOKENS_FACTOR = 2
"""A repair of a reply cut at its token bound may write this many times as much (within the window)."""
DEFAULT_REPLY_RESERVE = 2048

M = TypeVar("M", bound=Sequence[Message])


def prompt_budget(llm: LLM) -> tuple[int, int, int]:
    """(window, reply reserve, prompt budget) in tokens; only for a layer with a window."""
    window = llm.context_window or 0
    reserve = llm.config.max_completion_tokens or min(DEFAULT_REPLY_RESERVE, window // 4)
    return window, reserve, window - reserve


def budget_head(window: int, reserve: int, tokens: int, exact: bool) -> str:
    """The first part of a budget note: the window, the reserve and the full prompt's count."""
    how = "counted by the server" if exact else "estimated"
    return f"context budget: {window:,}-token window, {reserve:,} reserved for the reply; prompt {tokens:,} tokens ({how})"


@dataclass
class PromptFit(Generic[M]):
    """The request to send (None when none fits), what was shortened, and why nothing fits."""

    messages: M | None
    note: str | None = None
    overflow: str | None = None


async def fit_prompt(
    llm: LLM | None, candidates: Sequence[tuple[M, str]], response_model: type[BaseModel]
) -> PromptFit[M]:
    """The first of `candidates` — a request and what was shortened in it, fullest first — whose
    prompt fits the context window. For requests without evidence to window (checklist synthesis):
    the caller says what each shorter form leaves out, and records the note."""
    if llm is None or not llm.context_window:
        return PromptFit(candidates[0][0])
    window, reserve, budget = prompt_budget(llm)
    first = None
    for index, (messages, shortened) in enumerate(candidates):
        count, exact = await count_prompt_tokens(llm, messages, response_model)
        first = first or budget_head(window, reserve, count, exact)
        if count <= budget:
            return PromptFit(messages, None if index == 0 else f"{first} → {count:,}: {shortened}")
    least = f"even with {candidates[-1][1]}" if len(candidates) > 1 else "with nothing to leave out"
    return PromptFit(None, overflow=f"{first}; {least} it needs {count:,} tokens, more than the {budget:,} available")


@dataclass
class RepairRoom:
    """How a repair after a reply cut at its token bound is sent."""

    max_completion_tokens: int | None = None
    """The repair's reply bound (None: the layer's own — nothing is known to enlarge)."""
    full: str | None = None
    """Set when the context window leaves no room for a longer reply: why (the repair is not sent,
    since the same bound would cut it again)."""


async def repair_room(
    llm: LLM, messages: Sequence[Message], response_model: type[BaseModel], cut: LLMReplyError, *, had: int | None = None
) -> RepairRoom:
    """The reply bound for the repair of `cut`. A reply cut at the bound (`truncated`) is repaired
    with `REPAIR_TOKENS_FACTOR` times the bound it had (`had` when the call set its own, else the
    configured one, else the tokens the server reported writing), capped by what the window leaves
    after the repair prompt (`messages`); when that is no more than the cut reply had, there is no
    room. Other reply errors keep the layer's bound."""
    if cut.reason != REASON_TRUNCATED:
        return RepairRoom()
    had = had or llm.config.max_completion_tokens or cut.usage.completion_tokens
    wanted = had * REPAIR_TOKENS_FACTOR if had else None
    if llm.context_window:
        prompt, exact = await count_prompt_tokens(llm, messages, response_model)
        room = llm.context_window - prompt
        if had and room <= had:
            how = "counted by the server" if exact else "estimated"
            return RepairRoom(full=f"no repair sent: the {llm.context_window:,}-token window leaves {max(room, 0):,} "
                                   f"tokens after the {prompt:,}-token repair prompt ({how}), no more than the "
                                   f"{had:,} the cut reply had")
        wanted = room if wanted is None else min(wanted, room)
    return RepairRoom(wanted)
