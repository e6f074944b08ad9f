"""The `fixed` judge: the `gcpc` item judge over the task-agnostic fixed checklist of `rules/`,
the baseline that shows what a task-specific checklist adds."""

from __future__ import annotations

from .item_judge import items_request, judge_checklist
from .prompts import ITEMS_PROMPT_VERSION, PER_ITEM_PROMPT_VERSION
from .registry import JudgeSpec, register_judge

__all__ = ["FIXED"]

FIXED = register_judge(JudgeSpec(
    name="fixed",
    order=1,
    calls_llm=True,
    checklist="fixed",
    prompt_version=ITEMS_PROMPT_VERSION,
    per_item_prompt_version=PER_ITEM_PROMPT_VERSION,
    judge=judge_checklist,
    first_request=items_request,
    variant_of="gcpc",
))
