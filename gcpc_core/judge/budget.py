"""Evidence windowing: a judge's prompt that does not fit the model's context window has its evidence
shortened — explicitly, never silently truncated (the budget itself, and `fit_prompt` for requests
without evidence, are `llm.budget`).

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

from collections.abc import Callable
from dataclasses import dataclass

from pydantic import BaseModel

from ..evidence import EvidenceEntry, EvidenceView, build_evidence_view
from ..llm import LLM, budget_head, count_prompt_tokens, prompt_budget
from .prompts import Messages

__all__ = ["WINDOW_STEPS", "Fit", "fit_evidence"]

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


async def fit_evidence(
    llm: LLM | None, view: EvidenceView, build: Callable[[EvidenceView], Messages], response_model: type[BaseModel]
) -> Fit:
    """The evidence view shortened (as little as needed) so `build(view)` fits the context window."""
    if llm is None or not llm.context_window:
        return Fit(view)
    window, reserve, budget = prompt_budget(llm)

    async def tokens(candidate: EvidenceView) -> tuple[int, bool]:
        return await count_prompt_tokens(llm, build(candidate), response_model)

    first, exact = await tokens(view)
    if first <= budget:
        return Fit(view)
    head = budget_head(window, reserve, first, exact)
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
