"""The GCPC item judge: a frozen checklist + the task instruction + one trajectory's evidence
view → a grounded verdict per item. Also judges the fixed checklist (same path, other items).

Default: one call for all items. `per_item`: one call per item (more calls, each smaller; the
evidence prefix is shared, so a provider's prompt cache absorbs most of the repeat).
"""

from __future__ import annotations

import asyncio

from ..checklist import Checklist, ChecklistItem, Rules
from ..evidence import EvidenceView
from ..llm import LLM
from ..models import ItemJudgment, Task
from .calls import Assessed, Outcome, with_one_repair
from .grounding import GroundedItems, abstain, ground_items, item_judgment
from .prompts import (
    ITEMS_PROMPT_VERSION,
    PER_ITEM_PROMPT_VERSION,
    REPAIR_IDS_PROMPT,
    items_messages,
    per_item_messages,
)
from .replies import ItemJudgeReply, SingleItemReply
from .results import ReplyRecord

__all__ = ["assess_items_reply", "judge_items", "prompt_version_for"]


def prompt_version_for(per_item: bool) -> str:
    return PER_ITEM_PROMPT_VERSION if per_item else ITEMS_PROMPT_VERSION


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


async def _all_items(
    llm: LLM | None, task: Task, checklist: Checklist, view: EvidenceView, rules: Rules, *, tag: str, first: Outcome | None
) -> tuple[list[ItemJudgment], list[ReplyRecord]]:
    result = await with_one_repair(
        llm,
        items_messages(task, checklist, view, rules),
        ItemJudgeReply,
        lambda reply: assess_items_reply(checklist, view, reply),
        prompt_version=ITEMS_PROMPT_VERSION,
        tag=tag,
        first=first,
    )
    if result.value is None:
        return [abstain(item, result.reason or "no_reply") for item in checklist.items], result.records
    return result.value.items, result.records


async def _one_item(
    llm: LLM | None, task: Task, item: ChecklistItem, view: EvidenceView, rules: Rules, *, tag: str
) -> tuple[ItemJudgment, list[ReplyRecord]]:
    def assess(reply: SingleItemReply) -> Assessed[ItemJudgment]:
        problems: list[str] = []
        judged = item_judgment(item, reply.verdict, reply.citations, reply.rationale, view, problems=problems)
        return Assessed(judged, problems=problems)

    result = await with_one_repair(
        llm,
        per_item_messages(task, item, view, rules),
        SingleItemReply,
        assess,
        prompt_version=PER_ITEM_PROMPT_VERSION,
        tag=f"{tag}#{item.id}",
        item_id=item.id,
    )
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
