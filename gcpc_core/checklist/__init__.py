"""Checklists: rules, the checklist file schema, validation gates G1–G6 and freezing.

Everything here is deterministic; the LLM synthesis step builds on it and must pass the same
gates as a hand-written checklist.
"""

from __future__ import annotations

from .freeze import FrozenChecklist, canonical_json, checklist_sha, checklist_to_json, freeze
from .gates import (
    GATES,
    GateFailure,
    check_checklist_data,
    failure_lines,
    item_cap,
    literals,
    quoted_literals,
    requirement_problems,
    run_gates,
    schema_failures,
    split_ref,
)
from .rules import DEFAULT_RULES_DIR, FixedQuestion, Rules, RulesError, fixed_checklist, load_rules, rules_version
from .schema import (
    ROUTES,
    Checklist,
    ChecklistFileError,
    ChecklistItem,
    Probe,
    Waiver,
    load_checklist_file,
    parse_checklist,
    read_checklist_data,
)
from .validate_cli import validate_files

__all__ = [
    "DEFAULT_RULES_DIR",
    "GATES",
    "ROUTES",
    "Checklist",
    "ChecklistFileError",
    "ChecklistItem",
    "FixedQuestion",
    "FrozenChecklist",
    "GateFailure",
    "Probe",
    "Rules",
    "RulesError",
    "Waiver",
    "canonical_json",
    "check_checklist_data",
    "checklist_sha",
    "checklist_to_json",
    "failure_lines",
    "fixed_checklist",
    "freeze",
    "load_checklist_file",
    "load_rules",
    "parse_checklist",
    "read_checklist_data",
    "item_cap",
    "literals",
    "quoted_literals",
    "requirement_problems",
    "rules_version",
    "run_gates",
    "schema_failures",
    "split_ref",
    "validate_files",
]
