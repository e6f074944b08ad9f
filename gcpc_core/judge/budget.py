"""Evidence windowing: a judge's prompt that does not fit the model's context window has its evidence
shortened — explicitly, never silently truncated (the budget itself, and `fit_prompt` for requests
without evidence, are `llm.budget`).

Windowing, until the prompt fits:
1. long outputs are cut shorter (each of `WINDOW_STEPS` characters in turn; twice that for a text that
   decides an item), each still windowed for the view's
   focus (`evidence.Focus`: probe matches kept, then the lines naming what the items name, then
   head and tail; a probe's match is never cut from a text; the full text still citable);
2. whole evidence events are left out (`elision_order`): boilerplate first (skill texts, search
   results, installs), then events naming nothing the items name, then those that decide no item,
   then those that decide items (the latest naming an item's literal), oldest first. When no step
   fits with every event, each step is fitted by leaving out as few events as it needs, and the
   one that shows the most items' deciding text (`items_shown`) is sent, the longer on a tie. Each run of left-out events is one `⟦gcpc cut: …⟧` marker between the
   events around it. Left-out events are not in the view, so a citation of one is not grounded:
   a verdict rests on what its judge saw. Events a probe matched go last, only when nothing else is
   left, and the note says so.
If the prompt does not fit even with every event left out (rules, instruction and checklist alone
are too long), the caller stores Abstain with reason `context_overflow`.
What was done is returned as one line, recorded with the judgment's replies (the audit page shows
it); each token count in it says whether the server's tokenizer counted it or it was estimated.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pydantic import BaseModel

from ..evidence import DEFAULT_WINDOW_CHARS, EvidenceEntry, EvidenceView, Gap, build_evidence_view
from ..llm import LLM, budget_head, count_prompt_tokens, prompt_budget
from .prompts import Messages

__all__ = ["WINDOW_STEPS", "Fit", "elide", "elision_order", "fit_evidence", "items_shown"]

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

    def recorded_note(self, server_prompt_tokens: int | None) -> str | None:
        """The note as recorded after the call, with the server's own count of the prompt it was sent
        when it reported one: an estimate made before sending can be far off."""
        if self.note is None or not server_prompt_tokens:
            return self.note
        return f"{self.note}; the server counted {server_prompt_tokens:,} prompt tokens"


def rewindow(view: EvidenceView, window_chars: int) -> EvidenceView:
    """The same evidence, for the same focus, with long outputs cut to `window_chars` — those that
    decide items (`Focus.deciding`) to twice that, within the default window. (Measured on the real
    trials of bench/window_bench.py: more room per deciding item costs more events than it saves.)"""
    events = [entry.event for entry in view.entries]
    decides = {found[0] for found in view.focus.deciding([e.text for e in events]) if found is not None}
    windows = {events[i].id: max(window_chars, min(DEFAULT_WINDOW_CHARS, window_chars * 2)) for i in decides}
    return build_evidence_view(events, window_chars=window_chars, focus=view.focus, windows=windows)


def _ranks(view: EvidenceView) -> list[tuple[bool, int, int, int]]:
    """Each entry's (pinned, kind, items it decides, position) as `elision_order` sorts them."""
    entries = view.entries
    decides = [0] * len(entries)
    for found in view.focus.deciding([e.event.text for e in entries]):
        if found is not None:
            decides[found[0]] += 1
    ranks = []
    for i, entry in enumerate(entries):
        kind = 0 if entry.boilerplate and not entry.focus_hits else 1 if not entry.focus_hits else 3 if decides[i] else 2
        ranks.append((entry.pinned, kind, decides[i], i))
    return ranks


def elision_order(view: EvidenceView) -> list[int]:
    """Indexes of the entries in the order they are left out: boilerplate first, then events naming
    nothing in focus, then events naming it that decide no item, then those that decide items
    (`Focus.deciding`: the latest naming an item's literal), fewest items first; oldest first within
    each. Events a probe matched go last of all, only when nothing else is left to leave out."""
    return [i for *_, i in sorted(_ranks(view))]


def items_shown(full: EvidenceView, shown: EvidenceView) -> int:
    """How many items' deciding text (`Focus.deciding` over `full`) `shown` still shows, naming the
    item's literal where it is shown: what windowing keeps for the judge."""
    entries = {e.event.id: e for e in shown.entries}
    kept = 0
    for found in full.focus.deciding([e.event.text for e in full.entries]):
        if found is None:
            continue
        entry = entries.get(full.entries[found[0]].event.id)
        kept += entry is not None and bool(found[1].term_hits(entry.shown))
    return kept


def elide(view: EvidenceView, order: list[int], count: int, window: int) -> EvidenceView:
    """`view` without the first `count` entries of `order`, each run of left-out events one `Gap`."""
    out = set(order[:count])
    if not out:
        return view
    kept: list[EvidenceEntry] = []
    gaps: list[Gap] = []
    run: list[EvidenceEntry] = []
    why = f"left out to fit the model's {window:,}-token context window"
    for index, entry in enumerate([*view.entries, None]):
        if entry is not None and index in out:
            run.append(entry)
            continue
        if run:
            gaps.append(Gap(before=len(kept), ids=tuple(e.event.id for e in run),
                            chars=sum(len(e.event.text) for e in run), why=why))
            run = []
        if entry is not None:
            kept.append(entry)
    return EvidenceView(kept, gaps=tuple(gaps), focus=view.focus)


def _how(exact: bool) -> str:
    return "counted by the server" if exact else "estimated"


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

    async def least(candidate: EvidenceView, order: list[int], most: int) -> EvidenceView | None:
        """`candidate` with the fewest of the first `most` of `order` left out that fits; None if none does."""
        if (await tokens(elide(candidate, order, most, window)))[0] > budget:
            return None
        low, high = 0, most  # leaving out `high` entries fits; leaving out `low` does not
        while high - low > 1:
            middle = (low + high) // 2
            if (await tokens(elide(candidate, order, middle, window)))[0] <= budget:
                high = middle
            else:
                low = middle
        return elide(candidate, order, high, window)

    def left_out(candidate: EvidenceView, fitted: EvidenceView) -> str:
        gone = [i for gap in fitted.gaps for i in gap.ids]
        pinned = sum(e.pinned for e in candidate.entries if e.event.id in set(gone))
        also = f", {pinned:,} of them matched by a probe (nothing else was left)" if pinned else ""
        return (f"{len(gone):,} of {len(candidate.entries):,} evidence events left out (boilerplate first, then those "
                f"naming nothing the items name, then those deciding no item, oldest first){also}")

    fitted_steps: list[tuple[int, int, EvidenceView, EvidenceView]] = []
    for step in WINDOW_STEPS:
        candidate = rewindow(view, step)
        count, exact = await tokens(candidate)
        if count <= budget:
            return Fit(candidate, f"{head} → {count:,} ({_how(exact)}): long outputs cut to {step:,} chars")
        order = elision_order(candidate)
        fitted = await least(candidate, order, len(order))
        if fitted is None:
            break  # the prompt without evidence does not fit: no step can
        fitted_steps.append((items_shown(view, fitted), step, candidate, fitted))
    if not fitted_steps:
        bare, exact = await tokens(elide(candidate, order, len(order), window))
        return Fit(candidate, overflow=f"{head}; even with every evidence event left out it needs {bare:,} tokens "
                                       f"({_how(exact)}), more than the {budget:,} available: rules, instruction "
                                       f"and checklist alone do not fit")
    _, step, candidate, fitted = max(fitted_steps, key=lambda f: f[:2])
    count, exact = await tokens(fitted)
    return Fit(fitted, f"{head} → {count:,} ({_how(exact)}): long outputs cut to {step:,} chars and "
                       f"{left_out(candidate, fitted)}")
