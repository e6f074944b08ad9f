"""The grounding check: deterministic, and the only path from a judge's reply to verdicts.

A Yes/No stands only on citations that are verbatim spans of the cited event *in the evidence
view* (so a quote of the agent's own narration, which the view leaves out, never grounds
anything). Every judge's verdicts pass through here: LLM replies, batch results and probes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from ..checklist import ChecklistItem
from ..evidence import EvidenceView
from ..models import Citation, ItemJudgment, Verdict

__all__ = [
    "GroundedItems",
    "abstain",
    "ground_citations",
    "ground_items",
    "item_judgment",
    "REASON_JUDGE_ABSTAIN",
    "REASON_NOT_JUDGED",
    "REASON_UNGROUNDED",
    "REASON_UNKNOWN_ITEM",
]

REASON_UNGROUNDED = "ungrounded"
REASON_NOT_JUDGED = "not_judged"
REASON_UNKNOWN_ITEM = "unknown_item_id"
REASON_JUDGE_ABSTAIN = "judge_abstain"


def ground_citations(view: EvidenceView, citations: Iterable[Citation]) -> tuple[list[Citation], list[str]]:
    """(grounded citations, one problem line per rejected one)."""
    kept: list[Citation] = []
    problems: list[str] = []
    for c in citations:
        if view.get(c.event_id) is None:
            problems.append(f"citation of {c.event_id}: not an evidence event")
        elif not view.quote_in_event(c.event_id, c.quote):
            problems.append(f"citation of {c.event_id}: quote is not verbatim in that event: {c.quote[:80]!r}")
        else:
            kept.append(c)
    return kept, problems


def item_judgment(
    item: ChecklistItem,
    verdict: Verdict,
    citations: Iterable[Citation],
    rationale: str,
    view: EvidenceView,
    *,
    problems: list[str] | None = None,
) -> ItemJudgment:
    """One item's grounded verdict: a Yes/No left without a grounded citation becomes Abstain."""
    kept, rejected = ground_citations(view, citations)
    if problems is not None:
        problems.extend(f"{item.id}: {p}" for p in rejected)
    reason = None
    if verdict == "Abstain":
        reason = REASON_JUDGE_ABSTAIN
    elif not kept:
        verdict, reason = "Abstain", REASON_UNGROUNDED
    return ItemJudgment(
        item_id=item.id,
        route=item.route,
        verdict_raw=verdict,
        verdict=verdict,
        citations=kept,
        rationale=rationale.strip(),
        reason=reason,
    )


def abstain(item: ChecklistItem, reason: str, rationale: str = "") -> ItemJudgment:
    """An item the judge gave no usable verdict for."""
    return ItemJudgment(
        item_id=item.id, route=item.route, verdict_raw="Abstain", verdict="Abstain", rationale=rationale, reason=reason
    )


@dataclass
class GroundedItems:
    """Verdicts for every checklist item, in checklist order, plus what was wrong with the reply."""

    items: list[ItemJudgment]
    unknown_ids: list[str] = field(default_factory=list)
    duplicate_ids: list[str] = field(default_factory=list)
    missing_ids: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def ids_wrong(self) -> bool:
        """Unknown or duplicated ids: the reply is mislabelled, worth one repair round."""
        return bool(self.unknown_ids or self.duplicate_ids)


def ground_items(checklist_items: Sequence[ChecklistItem], reply_items: Sequence, view: EvidenceView) -> GroundedItems:
    """Map a reply's entries (anything with item_id, verdict, citations, rationale) onto the
    checklist: the first entry per id counts, a missing item is Abstain `not_judged` (or
    `unknown_item_id` when the reply used ids the checklist does not have)."""
    known = {i.id for i in checklist_items}
    counts = Counter(r.item_id for r in reply_items)
    out = GroundedItems(
        items=[],
        unknown_ids=sorted({r.item_id for r in reply_items if r.item_id not in known}),
        duplicate_ids=sorted(i for i, n in counts.items() if n > 1 and i in known),
    )
    first: dict[str, object] = {}
    for r in reply_items:
        first.setdefault(r.item_id, r)
    missing_reason = REASON_UNKNOWN_ITEM if out.unknown_ids else REASON_NOT_JUDGED
    for item in checklist_items:
        r = first.get(item.id)
        if r is None:
            out.missing_ids.append(item.id)
            out.items.append(abstain(item, missing_reason))
        else:
            out.items.append(item_judgment(item, r.verdict, r.citations, r.rationale, view, problems=out.problems))  # type: ignore[attr-defined]
    if out.unknown_ids:
        out.problems.append(f"unknown item ids: {', '.join(out.unknown_ids)}")
    if out.duplicate_ids:
        out.problems.append(f"items judged more than once (first kept): {', '.join(out.duplicate_ids)}")
    if out.missing_ids:
        out.problems.append(f"items not judged: {', '.join(out.missing_ids)}")
    return out
