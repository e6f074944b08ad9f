"""Judging and scoring: item verdicts grounded in evidence, baselines, postprocessing, scores.

Judges (`JUDGES`): `gcpc` (the LLM item judge over the task's frozen checklist), `fixed` (the
same judge over the task-agnostic checklist in `rules/`), `holistic` (one LLM progress rating,
no checklist) and `probe` (offline, deterministic regex probes). Every verdict passes the same
grounding check; `score_project` applies the official outcome and writes scores.

Modules: `prompts` (versioned prompt constants), `replies` (reply schemas), `grounding`,
`calls` (the one-repair policy), `item_judge`, `holistic`, `probe`, `units` (plan / judge /
store one trajectory), `reports` (what a run tallies), `runner` (`judge_project`), `batch`
(Batch API), `scoring`, `export`.
"""

from __future__ import annotations

from .batch import CollectReport, collect_batches, submit_batch
from .export import export_judgments, export_scores
from .grounding import GroundedItems, ground_citations, ground_items
from .holistic import HolisticResult, judge_holistic
from .item_judge import judge_items
from .probe import probe_item, probe_judge
from .prompts import HOLISTIC_PROMPT_VERSION, ITEMS_PROMPT_VERSION, PER_ITEM_PROMPT_VERSION, PROBE_VERSION
from .replies import HolisticReply, ItemJudgeReply, ItemVerdictReply, SingleItemReply
from .results import ITEM_JUDGES, JUDGES, ReplyRecord, TrajectoryJudgment
from .reports import JudgeReport
from .runner import judge_project
from .scoring import ScoreReport, score_project
from .units import Unit, judge_unit, plan_units, store_judgment

__all__ = [
    "HOLISTIC_PROMPT_VERSION",
    "ITEMS_PROMPT_VERSION",
    "ITEM_JUDGES",
    "JUDGES",
    "PER_ITEM_PROMPT_VERSION",
    "PROBE_VERSION",
    "CollectReport",
    "GroundedItems",
    "HolisticReply",
    "HolisticResult",
    "ItemJudgeReply",
    "ItemVerdictReply",
    "JudgeReport",
    "ReplyRecord",
    "ScoreReport",
    "SingleItemReply",
    "TrajectoryJudgment",
    "Unit",
    "collect_batches",
    "export_judgments",
    "export_scores",
    "ground_citations",
    "ground_items",
    "judge_holistic",
    "judge_items",
    "judge_project",
    "judge_unit",
    "plan_units",
    "probe_item",
    "probe_judge",
    "score_project",
    "store_judgment",
    "submit_batch",
]
