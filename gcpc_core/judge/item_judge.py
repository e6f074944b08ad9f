"""The item judge: a checklist + the task instruction + one trajectory's evidence view → a grounded
verdict per item. The `gcpc` judge runs it over the task's frozen checklist, `fixed` over the
fixed checklist (same path, other items).

Default: one call for all items. `per_item`: one call per item (more calls, each smaller; the
evidence prefix is shared, so a provider's prompt cache absorbs most of the repeat).
"""

from __future__ import annotations

import asyncio
from typing import Any

from ..checklist import Checklist, ChecklistItem, Rules
from ..evidence import EvidenceView
from ..llm import REASON_CONTEXT_OVERFLOW, LLM
from ..models import ItemJudgment, Task
from .budget import Fit, fit_evidence
from .calls import Assessed, Outcome, RepairResult, with_one_repair
from .grounding import GroundedItems, abstain, ground_items, item_judgment
from .prompts import (
    ITEMS_PROMPT_VERSION,
    PER_ITEM_PROMPT_VERSION,
    REPAIR_IDS_PROMPT,
    Messages,
    items_messages,
    per_item_messages,
)
from .registry import JudgeCall, Verdicts
from .replies import ItemJudgeReply, SingleItemReply
from .results import ReplyRecord

__all__ = ["assess_items_reply", "items_request", "judge_checklist", "judge_items"]


def assess_items_reply(checklist: Checklist, view: EvidenceView, reply: ItemJudgeReply) -> Assessed[GroundedItems]:
    """Ground an all-items reply; mislabelled ids earn one repair turn naming them."""
    grounded = ground_items(checklist.items, reply.items, view)
    if not grounded.ids_wrong:
        return Assessed(grounded, problems=grounded.problems)
    wrong = []
    if grounded.unknown_ids:
        wrong.append(f"these item ids are not in the checklist: {', '.join(grounded.unknown_ids)}")
    if grounded.duplicate_ids:
        wrong.append(f"these items were judged more than once: {', '.join(grounded.duplicate_ids)}")
    ask = REPAIR_IDS_PROMPT.format(problems="; ".join(wrong), item_ids=", ".join(i.id for i in checklist.items))
    return Assessed(grounded, repair_ask=ask, status="unknown_item_id" if grounded.unknown_ids else "duplicate_item_id",
                    problems=grounded.problems)


def _overflowed(
    items: list[ChecklistItem], fit: Fit, item_id: str | None = None
) -> tuple[list[ItemJudgment], list[ReplyRecord]]:
    """Every item Abstain `context_overflow`, the budget's finding recorded as the (unsent) reply."""
    assert fit.overflow is not None
    record = ReplyRecord(attempt="initial", item_id=item_id, status=REASON_CONTEXT_OVERFLOW,
                         problems=[f"{item.id}: {fit.overflow}" for item in items])
    return [abstain(item, REASON_CONTEXT_OVERFLOW, fit.overflow) for item in items], [record]


def _note(result: RepairResult[Any], items: list[ChecklistItem], fit: Fit) -> None:
    """Record how the evidence was windowed to fit, once per item (the audit page lists it per item)."""
    note = fit.recorded_note(result.prompt_tokens)
    if note and result.records:
        result.records[0].problems[:0] = [f"{item.id}: {note}" for item in items]


async def _all_items(
    llm: LLM | None, task: Task, checklist: Checklist, view: EvidenceView, rules: Rules, *, tag: str, first: Outcome | None
) -> tuple[list[ItemJudgment], list[ReplyRecord]]:
    def build(candidate: EvidenceView) -> list[dict[str, str]]:
        return items_messages(task, checklist, candidate, rules)

    fit = Fit(view) if first is not None else await fit_evidence(llm, view, build, ItemJudgeReply)
    if fit.overflow:
        return _overflowed(checklist.items, fit)
    view = fit.view
    result = await with_one_repair(
        llm,
        build(view),
        ItemJudgeReply,
        lambda reply: assess_items_reply(checklist, view, reply),
        prompt_version=ITEMS_PROMPT_VERSION,
        tag=tag,
        first=first,
    )
    _note(result, checklist.items, fit)
    if result.value is None:
        return [abstain(item, result.reason or "no_reply") for item in checklist.items], result.records
    return result.value.items, result.records


async def _one_item(
    llm: LLM | None, task: Task, item: ChecklistItem, view: EvidenceView, rules: Rules, *, tag: str
) -> tuple[ItemJudgment, list[ReplyRecord]]:
    def build(candidate: EvidenceView) -> list[dict[str, str]]:
        return per_item_messages(task, item, candidate, rules)

    fit = await fit_evidence(llm, view, build, SingleItemReply)
    if fit.overflow:
        [judged], records = _overflowed([item], fit, item.id)
        return judged, records
    view = fit.view

    def assess(reply: SingleItemReply) -> Assessed[ItemJudgment]:
        problems: list[str] = []
        judged = item_judgment(item, reply.verdict, reply.citations, reply.rationale, view, problems=problems)
        return Assessed(judged, problems=problems)

    result = await with_one_repair(
        llm,
        build(view),
        SingleItemReply,
        assess,
        prompt_version=PER_ITEM_PROMPT_VERSION,
        tag=f"{tag}#{item.id}",
        item_id=item.id,
    )
    _note(result, [item], fit)
    return (result.value or abstain(item, result.reason or "no_reply")), result.records


async def judge_items(
    llm: LLM | None,
    task: Task,
    checklist: Checklist,
    view: EvidenceView,
    rules: Rules,
    *,
    per_item: bool = False,
    tag: str = "",
    first: Outcome | None = None,
) -> tuple[list[ItemJudgment], list[ReplyRecord]]:
    """Grounded raw verdicts for every item (checklist order) and every reply for the audit trail.

    `first` injects the initial reply obtained elsewhere (a Batch-API result); it then goes
    through exactly the validation, grounding and repair path of a live reply.
    Raises LLMCallError when the endpoint fails before any usable reply arrived.
    """
    if not per_item:
        return await _all_items(llm, task, checklist, view, rules, tag=tag, first=first)
    if first is not None:
        raise ValueError("a batch reply covers all items; per-item mode has no single first reply")
    done = await asyncio.gather(*(_one_item(llm, task, item, view, rules, tag=tag) for item in checklist.items))
    return [j for j, _ in done], [r for _, records in done for r in records]


async def judge_checklist(call: JudgeCall) -> Verdicts:
    """The item judge as a registered judge runs it: every item of the call's checklist."""
    assert call.checklist is not None
    items, replies = await judge_items(call.llm, call.task, call.checklist, call.view, call.rules,
                                       per_item=call.per_item, tag=call.tag, first=call.first)
    return Verdicts(items=items, replies=replies)


def items_request(
    task: Task, checklist: Checklist | None, view: EvidenceView, rules: Rules
) -> tuple[Messages, type[ItemJudgeReply], str]:
    """The all-items request a live run sends first and a Batch-API line carries."""
    assert checklist is not None
    return items_messages(task, checklist, view, rules), ItemJudgeReply, ITEMS_PROMPT_VERSION
