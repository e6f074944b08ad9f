"""rules/: loading, validation, the content-hash version and self-consistency with the gates."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from gcpc_core.checklist import DEFAULT_RULES_DIR, Rules, RulesError, fixed_checklist, load_rules, rules_version
from gcpc_core.checklist import requirement_problems


@pytest.fixture
def rules_copy(tmp_path: Path) -> Path:
    """A private copy of the repo's rules/ that a test may edit."""
    return Path(shutil.copytree(DEFAULT_RULES_DIR, tmp_path / "rules"))


def test_default_rules_load(rules: Rules) -> None:
    assert Path(rules.rules_dir) == DEFAULT_RULES_DIR
    assert (rules.contract.budget.min_items, rules.contract.budget.max_items) == (4, 15)
    assert set(rules.contract.routes) == {"assertion", "generated", "judge"}
    assert {"checklist_contract.md", "evidence.md"} <= set(rules.prose)
    assert rules.version == rules.version_full[:12] and len(rules.version_full) == 64


def test_version_is_content_not_location(rules_copy: Path) -> None:
    assert rules_version(rules_copy) == rules_version(DEFAULT_RULES_DIR)
    assert rules_version(rules_copy, full=True) == load_rules(rules_copy).version_full


@pytest.mark.parametrize(
    "edit",
    [
        lambda d: (d / "evidence.md").write_text((d / "evidence.md").read_text() + "\n"),
        lambda d: (d / "checklist_contract.yaml").write_text(
            (d / "checklist_contract.yaml").read_text().replace("threshold: 0.9", "threshold: 0.91")
        ),
        lambda d: (d / "rater_notes.md").write_text("new file"),
        lambda d: (d / "evidence.md").rename(d / "evidence2.md"),
        lambda d: (d / "sub").mkdir() or (d / "sub" / "x.txt").write_bytes(b""),
    ],
    ids=["edit-md", "edit-yaml", "add-file", "rename-file", "add-empty-nested-file"],
)
def test_version_changes_with_any_file_change(rules_copy: Path, edit) -> None:
    before = rules_version(rules_copy)
    edit(rules_copy)
    assert rules_version(rules_copy) != before


def test_changed_threshold_is_loaded(rules_copy: Path) -> None:
    path = rules_copy / "checklist_contract.yaml"
    path.write_text(path.read_text().replace("threshold: 0.9", "threshold: 0.75"))
    assert load_rules(rules_copy).contract.duplicates.threshold == 0.75


@pytest.mark.parametrize(
    ("edit", "needle"),
    [
        (lambda d: (d / "evidence.md").unlink(), "evidence.md: required rules file is missing"),
        (lambda d: (d / "fixed_checklist.yaml").unlink(), "fixed_checklist.yaml: required rules file is missing"),
        (lambda d: (d / "checklist_contract.yaml").write_text("budget: [unclosed"), "checklist_contract.yaml: invalid YAML"),
        (
            lambda d: (d / "checklist_contract.yaml").write_text(
                (d / "checklist_contract.yaml").read_text().replace("min_items: 4", "min_items: 40")
            ),
            "min_items exceeds max_items",
        ),
        (
            lambda d: (d / "checklist_contract.yaml").write_text(
                (d / "checklist_contract.yaml").read_text().replace("  judge:\n    definition", "  bonus:\n    definition")
            ),
            "routes",
        ),
    ],
)
def test_broken_rules_are_refused_with_the_file_named(rules_copy: Path, edit, needle: str) -> None:
    edit(rules_copy)
    with pytest.raises(RulesError) as info:
        load_rules(rules_copy)
    assert needle in str(info.value)


def test_missing_rules_folder(tmp_path: Path) -> None:
    with pytest.raises(RulesError, match="rules folder not found"):
        rules_version(tmp_path / "nope")


def test_fixed_checklist(rules: Rules) -> None:
    assert [q.id for q in rules.fixed] == [f"F{i}" for i in range(1, 7)]
    assert {q.route for q in rules.fixed} == {"judge"}
    checklist = fixed_checklist(rules, "citation-check")
    assert checklist.task == "citation-check" and checklist.source == f"fixed:rules-{rules.version}"
    assert [i.text for i in checklist.items] == [q.text for q in rules.fixed]


def test_rules_obey_themselves(rules: Rules) -> None:
    """Route examples and fixed questions are what the prompt shows as good items: they must pass G3."""
    texts = [(e, route) for route, r in rules.contract.routes.items() for e in r.examples]
    texts += [(q.text, q.route) for q in rules.fixed]
    assert {t: requirement_problems(t[0], rules, t[1]) for t in texts} == {t: [] for t in texts}
