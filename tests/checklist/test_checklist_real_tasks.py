"""Hand-written checklists and negative fixtures against the real SkillsBench tasks.

Positive fixtures (tests/fixtures/checklists/*.yaml) must pass every gate against the task they
name; each negative fixture (negative/gN_*.{yaml,json}) must be rejected by gate GN and by no
other gate. Skipped when ../shared/skillsbench is absent.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gcpc_core.checklist import freeze, load_checklist_file, validate_files
from gcpc_core.checklist.validate_cli import EXIT_FAILED, EXIT_OK, EXIT_UNUSABLE

from .toy import FIXTURES

pytestmark = pytest.mark.skillsbench

POSITIVE = sorted(FIXTURES.glob("*.yaml")) + sorted(FIXTURES.glob("*.json"))
POSITIVE = [p for p in POSITIVE if p.name != "verifier_node_counts.json"]
NEGATIVE = sorted(p for p in (FIXTURES / "negative").iterdir() if p.suffix in (".yaml", ".json"))
REQUIRED_TASKS = {"citation-check", "3d-scan-calc", "dialogue-parser", "azure-bgp-oscillation-route-leak"}
LINE = re.compile(r"^(?P<item>\S+) (?P<gate>G[1-6]) (?P<message>\S.*)$")


def test_fixture_inventory() -> None:
    tasks = {load_checklist_file(p).task for p in POSITIVE}
    assert REQUIRED_TASKS <= tasks and len(tasks) >= 5
    gates = {p.name[:2].upper() for p in NEGATIVE}
    assert gates == {"G1", "G2", "G3", "G4", "G5", "G6"}
    for name in ("g1_fabricated_quote", "g2_unknown_test_id", "g3_compound_item", "g3_outcome_item",
                 "g4_duplicate", "g5_uncovered_test", "g6_bad_route"):
        assert name in {p.stem for p in NEGATIVE}


@pytest.mark.parametrize("path", POSITIVE, ids=lambda p: p.stem)
def test_hand_written_checklist_passes_every_gate(path: Path, skillsbench: Path) -> None:
    checklist = load_checklist_file(path)
    code, lines = validate_files(skillsbench / "tasks" / checklist.task, path)
    assert (code, lines) == (EXIT_OK, [])
    assert 4 <= len(checklist.items) <= 15
    assert any(item.probes for item in checklist.items), "each hand-written checklist carries some probes"
    assert len(freeze(checklist).sha) == 64


@pytest.mark.parametrize("path", NEGATIVE, ids=lambda p: p.stem)
def test_negative_fixture_is_rejected_by_exactly_its_gate(path: Path, skillsbench: Path) -> None:
    expected = path.name[:2].upper()
    code, lines = validate_files(skillsbench / "tasks" / "citation-check", path)
    assert code == EXIT_FAILED and lines
    parsed = [LINE.match(line) for line in lines]
    assert all(parsed), lines
    assert {m["gate"] for m in parsed if m} == {expected}, lines


def test_validate_files_exit_2_when_gates_cannot_run(tmp_path: Path, skillsbench: Path) -> None:
    code, lines = validate_files(tmp_path / "no-task", POSITIVE[0])
    assert code == EXIT_UNUSABLE and "no instruction.md" in lines[0]
    code, lines = validate_files(skillsbench / "tasks" / "citation-check", tmp_path / "missing.yaml")
    assert code == EXIT_UNUSABLE and "checklist file not found" in lines[0]
    code, lines = validate_files(skillsbench / "tasks" / "citation-check", POSITIVE[0], rules_dir=tmp_path)
    assert code == EXIT_UNUSABLE and "required rules file is missing" in lines[0]


def test_checklist_run_against_another_task_fails(skillsbench: Path) -> None:
    path = FIXTURES / "citation-check.yaml"
    code, lines = validate_files(skillsbench / "tasks" / "3d-scan-calc", path)
    assert code == EXIT_FAILED
    assert "- G6 checklist is for task 'citation-check', not '3d-scan-calc'" in lines
