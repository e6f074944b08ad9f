"""Judging and scoring: item verdicts grounded in evidence, baselines, postprocessing, scores.

Judges (`JUDGES`, one `registry.JudgeSpec` and one module each): `gcpc` (the LLM item judge over
the task's frozen checklist), `holistic` (one LLM progress rating, no checklist), `fixed` (the
same item judge over the task-agnostic checklist in `rules/`) and `probe` (offline, deterministic
regex probes). Every verdict passes the same grounding check; `score_project` applies the
official outcome and writes scores.

Modules: `registry` (the judge specs), `prompts` (versioned prompt constants), `replies` (reply
schemas), `grounding`, `calls` (the one-repair policy), `item_judge` (shared by `gcpc` and
`fixed`), the judge modules, `units` (plan / judge / store one trajectory), `reports` (what a
run tallies), `runner` (`judge_project`), `batch` (Batch API), `scoring`, `export`.
"""

from __future__ import annotations

# The judge modules register their specs on import, in this order (the order `JUDGES` lists).
from . import gcpc, holistic, fixed, probe  # noqa: F401, I001
from .batch import CollectReport, collect_batches, submit_batch
from .export import export_judgments, export_scores
from .grounding import GroundedItems, ground_citations, ground_items
from .holistic import HolisticResult, judge_holistic
from .item_judge import judge_items
from .probe import probe_item, probe_judge
from .prompts import HOLISTIC_PROMPT_VERSION, ITEMS_PROMPT_VERSION, PER_ITEM_PROMPT_VERSION, PROBE_VERSION
from .replies import HolisticReply, ItemJudgeReply, ItemVerdictReply, SingleItemReply
from .registry import (
    ITEM_JUDGES,
    JUDGE_ORDER,
    JUDGES,
    LLM_JUDGES,
    JudgeCall,
    JudgeSpec,
    Verdicts,
    find_judge,
    get_judge,
    ordered_judges,
    register_judge,
    unregister_judge,
)
from .results import ReplyRecord, TrajectoryJudgment
from .reports import JudgeReport
from .runner import judge_project
from .scoring import ScoreReport, score_project
from .units import Unit, judge_unit, plan_units, store_judgment

__all__ = [
    "HOLISTIC_PROMPT_VERSION",
    "ITEMS_PROMPT_VERSION",
    "ITEM_JUDGES",
    "JUDGES",
    "JUDGE_ORDER",
    "LLM_JUDGES",
    "PER_ITEM_PROMPT_VERSION",
    "PROBE_VERSION",
    "CollectReport",
    "GroundedItems",
    "HolisticReply",
    "HolisticResult",
    "ItemJudgeReply",
    "ItemVerdictReply",
    "JudgeCall",
    "JudgeReport",
    "JudgeSpec",
    "ReplyRecord",
    "ScoreReport",
    "SingleItemReply",
    "TrajectoryJudgment",
    "Unit",
    "Verdicts",
    "collect_batches",
    "export_judgments",
    "export_scores",
    "find_judge",
    "get_judge",
    "ground_citations",
    "ground_items",
    "judge_holistic",
    "judge_items",
    "judge_project",
    "judge_unit",
    "ordered_judges",
    "plan_units",
    "probe_item",
    "probe_judge",
    "register_judge",
    "score_project",
    "store_judgment",
    "submit_batch",
    "unregister_judge",
]
