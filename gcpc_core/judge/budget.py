"""Context budget: a judge or synthesis prompt is counted before it is sent, and what does not fit
the model's context window is windowed — explicitly, never silently truncated. Judges window their
evidence (`fit_evidence`, below); synthesis offers ever shorter forms of its request, each saying
what it leaves out (`fit_prompt`), and a task whose request fits in no form is stored as failed with
reason `context_overflow`.

The window is the layer's `context_window` (`GCPC_CONTEXT_WINDOW`, or what `llm check` found the
server reporting); without one nothing is counted and a server's own overflow error becomes
Abstain `context_overflow` (see `calls`). Tokens are counted by the server's tokenizer endpoint
where it has one, else estimated (`llm_server.estimate_tokens`). A reply reserve is kept free:
`max_completion_tokens` when set, else `DEFAULT_REPLY_RESERVE` (at most a quarter of the window).

Windowing, in order, until the prompt fits:
1. long outputs are cut shorter (`WINDOW_STEPS` characters; head and tail around the usual
   ⟦gcpc: … elided⟧ marker, the full text still citable);
2. whole evidence events are elided from the middle of the run — its start and its end are the
   parts most often decisive — behind one marker naming the elided ids. Elided events are left out
   of the view entirely, so a citation of one is not grounded: a verdict rests on what its judge saw.
If the prompt does not fit even with every evidence event elided (rules, instruction and checklist
alone are too long), the caller stores Abstain with reason `context_overflow`.
What was done is returned as one line, recorded with the judgment's replies (the audit page shows it).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pydantic import BaseModel

from ..evidence import EvidenceEntry, EvidenceView, build_evidence_view
from ..llm import LLM, LLMReplyError
from ..llm_server import count_prompt_tokens
from .prompts import Messages

__all__ = [
    "DEFAULT_REPLY_RESERVE",
    "REASON_CONTEXT_OVERFLOW",
    "WINDOW_STEPS",
    "Fit",
    "PromptFit",
    "RepairRoom",
    "fit_evidence",
    "fit_prompt",
    "repair_room",
]

REASON_CONTEXT_OVERFLOW = "context_overflow"
REASON_TRUNCATED = "truncated"
REPAIR_TOKENS_FACTOR = 2
"""A repair of a reply cut at its token bound may write this many times as much (within the window)."""
DEFAULT_REPLY_RESERVE = 2048
WINDOW_STEPS = (2000, 800, 300)
"""Characters a long output is cut to, step by step, before whole events are elided."""


@dataclass
class Fit:
    """The evidence view to judge with, what was done to it, and whether even that does not fit."""

    view: EvidenceView
    note: str | None = None
    """One line for the record when evidence was windowed or elided (None: sent as is)."""
    overflow: str | None = None
    """Set when nothing fits: why, for the Abstain rationale."""


def rewindow(view: EvidenceView, window_chars: int) -> EvidenceView:
    """The same evidence with long outputs cut to `window_chars`."""
    return build_evidence_view([entry.event for entry in view.entries], window_chars=window_chars)


def elide_middle(view: EvidenceView, keep: int, window: int) -> EvidenceView:
    """The first ⌈keep/2⌉ and last ⌊keep/2⌋ entries, with one marker entry for those in between."""
    entries = view.entries
    if keep >= len(entries):
        return view
    head, tail = entries[: keep - keep // 2], entries[len(entries) - keep // 2 :]
    gap = entries[len(head) : len(entries) - len(tail)]
    ids = f"{gap[0].event.id}–{gap[-1].event.id}" if len(gap) > 1 else gap[0].event.id
    chars = sum(len(e.event.text) for e in gap)
    marker = EvidenceEntry(
        gap[0].event,
        f"⟦gcpc: {len(gap):,} evidence events ({ids}, {chars:,} chars) elided here to fit the model's "
        f"context window of {window:,} tokens; stored in full, not shown to this judge⟧",
        elided_chars=chars,
    )
    fitted = EvidenceView([*head, marker, *tail])
    fitted._by_id.pop(gap[0].event.id, None)  # the marker stands in for the elided event: not citable
    return fitted


def _budget(llm: LLM) -> tuple[int, int, int]:
    """(window, reply reserve, prompt budget) in tokens; only for a layer with a window."""
    window = llm.context_window or 0
    reserve = llm.config.max_completion_tokens or min(DEFAULT_REPLY_RESERVE, window // 4)
    return window, reserve, window - reserve


def _head(window: int, reserve: int, tokens: int, exact: bool) -> str:
    how = "counted by the server" if exact else "estimated"
    return f"context budget: {window:,}-token window, {reserve:,} reserved for the reply; prompt {tokens:,} tokens ({how})"


@dataclass
class PromptFit:
    """The request to send (None when none fits), what was shortened, and why nothing fits."""

    messages: Messages | None
    note: str | None = None
    overflow: str | None = None


async def fit_prompt(
    llm: LLM | None, candidates: Sequence[tuple[Messages, str]], response_model: type[BaseModel]
) -> PromptFit:
    """The first of `candidates` — a request and what was shortened in it, fullest first — whose
    prompt fits the context window. For requests without evidence to window (checklist synthesis):
    the caller says what each shorter form leaves out, and records the note."""
    if llm is None or not llm.context_window:
        return PromptFit(candidates[0][0])
    window, reserve, budget = _budget(llm)
    first = None
    for index, (messages, shortened) in enumerate(candidates):
        count, exact = await count_prompt_tokens(llm, messages, response_model)
        first = first or _head(window, reserve, count, exact)
        if count <= budget:
            return PromptFit(messages, None if index == 0 else f"{first} → {count:,}: {shortened}")
    least = f"even with {candidates[-1][1]}" if len(candidates) > 1 else "with nothing to leave out"
    return PromptFit(None, overflow=f"{first}; {least} it needs {count:,} tokens, more than the {budget:,} available")


async def fit_evidence(
    llm: LLM | None, view: EvidenceView, build: Callable[[EvidenceView], Messages], response_model: type[BaseModel]
) -> Fit:
    """The evidence view shortened (as little as needed) so `build(view)` fits the context window."""
    if llm is None or not llm.context_window:
        return Fit(view)
    window, reserve, budget = _budget(llm)

    async def tokens(candidate: EvidenceView) -> tuple[int, bool]:
        return await count_prompt_tokens(llm, build(candidate), response_model)

    first, exact = await tokens(view)
    if first <= budget:
        return Fit(view)
    head = _head(window, reserve, first, exact)
    for step in WINDOW_STEPS:
        candidate = rewindow(view, step)
        count, _ = await tokens(candidate)
        if count <= budget:
            return Fit(candidate, f"{head} → {count:,}: long outputs cut to {step:,} chars")
    base = rewindow(view, WINDOW_STEPS[-1])
    bare, _ = await tokens(elide_middle(base, 0, window)) if base.entries else await tokens(base)
    if bare > budget:
        return Fit(base, overflow=f"{head}; even with every evidence event elided it needs {bare:,} tokens, more "
                                  f"than the {budget:,} available: rules, instruction and checklist alone do not fit")
    low, high = 0, len(base.entries)  # keeping `low` entries fits; keeping `high` does not
    while high - low > 1:
        middle = (low + high) // 2
        if (await tokens(elide_middle(base, middle, window)))[0] <= budget:
            low = middle
        else:
            high = middle
    fitted = elide_middle(base, low, window)
    count, _ = await tokens(fitted)
    elided = len(base.entries) - low
    return Fit(fitted, f"{head} → {count:,}: long outputs cut to {WINDOW_STEPS[-1]:,} chars and {elided:,} of "
                       f"{len(base.entries):,} evidence events elided from the middle")


@dataclass
class RepairRoom:
    """How a repair after a reply cut at its token bound is sent."""

    max_completion_tokens: int | None = None
    """The repair's reply bound (None: the layer's own — nothing is known to enlarge)."""
    full: str | None = None
    """Set when the context window leaves no room for a longer reply: why (the repair is not sent,
    since the same bound would cut it again)."""


async def repair_room(
    llm: LLM, messages: Messages, response_model: type[BaseModel], cut: LLMReplyError, *, had: int | None = None
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
