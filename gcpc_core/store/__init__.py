"""The project DB, and the only package that speaks SQL: `Store` holds the connection and the
migrations; each stage's tables are read and written through its repository on the store."""

from . import lean_import  # noqa: F401, I001  (first: every later import of sqlite_utils is the lean one)
from .annotations import AnnotationRow
from .checklists import ChecklistRow
from .common import StoredRowError, derive_label, utcnow
from .db import Store
from .judging import JudgeBatchRow, JudgeReplyRow, JudgeRun, JudgeUnitRow, JudgmentRow, ScoreRow
from .migrations import MIGRATIONS, SchemaTooNew
from .perturbations import PerturbationRow
from .runs import LLMCacheRow, LLMCallRow, LLMModeRow, RunProgress, RunRow
from .studies import Rater, StudyAssignmentRow, StudyPairRow, StudyRaterRow, StudyRow, StudyUnitRow
from .trials import (EventPack, EventRow, ImportIssueRow, TaskRow, TrajectoryClash, TrajectoryRef, TrajectoryRow,
                     pack_event_values, pack_events)

__all__ = [
    "MIGRATIONS", "SchemaTooNew", "EventPack", "EventRow", "TaskRow", "TrajectoryRow", "JudgeBatchRow", "JudgeReplyRow", "JudgeRun", "JudgeUnitRow", "JudgmentRow", "PerturbationRow", "ScoreRow",
    "Store", "StoredRowError", "TrajectoryClash", "TrajectoryRef", "derive_label", "pack_event_values", "pack_events", "utcnow",
    "ChecklistRow", "ImportIssueRow", "LLMCacheRow", "LLMCallRow", "LLMModeRow", "RunProgress", "RunRow",
    "AnnotationRow", "Rater", "StudyAssignmentRow", "StudyPairRow", "StudyRaterRow", "StudyRow", "StudyUnitRow",
]
