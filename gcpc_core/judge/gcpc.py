"""The `gcpc` judge: the LLM item judge over each task's latest frozen checklist."""

from __future__ import annotations

from .item_judge import items_request, judge_checklist
from .prompts import ITEMS_PROMPT_VERSION, PER_ITEM_PROMPT_VERSION
from .registry import JudgeSpec, register_judge

__all__ = ["GCPC"]

GCPC = register_judge(JudgeSpec(
    name="gcpc",
    order=0,
    calls_llm=True,
    checklist="task",
    prompt_version=ITEMS_PROMPT_VERSION,
    per_item_prompt_version=PER_ITEM_PROMPT_VERSION,
    judge=judge_checklist,
    first_request=items_request,
))
