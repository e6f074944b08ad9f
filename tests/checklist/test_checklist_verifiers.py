"""The verifier parsing behind G2/G5 over all 87 real tasks, and CTRF names resolving to nodes.

`verifier_node_counts.json` records, per task, the pytest nodes `load_task` finds and how many are
parametrized (a script verifier's one node for the whole script is not counted there); this test keeps
that record honest. The counts were cross-checked once against
`pytest --collect-only` run on each task's tests/ folder (unknown third-party imports stubbed):
the node ids agreed for all 87 tasks.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from gcpc_core.checklist import split_ref
from gcpc_core.ingest.tasks import find_task_dirs, load_task
from gcpc_core.models import Task

from .toy import FIXTURES

pytestmark = pytest.mark.skillsbench

RECORDED: dict[str, dict[str, int]] = json.loads((FIXTURES / "verifier_node_counts.json").read_text())
SCRIPT_STYLE = {"crystallographic-wyckoff-position-analysis", "python-scala-translation"}
"""Verifiers that are standalone scripts (`main()` writes the reward), not pytest suites."""


@pytest.fixture(scope="module")
def tasks(skillsbench: Path) -> dict[str, Task]:
    return {t.id: t for t in map(load_task, find_task_dirs(skillsbench / "tasks"))}


def test_node_counts_of_all_87_tasks(tasks: dict[str, Task], record_property) -> None:
    counts = {
        tid: {"nodes": sum(x.kind == "pytest" for x in t.tests), "parametrized": sum(x.parametrized for x in t.tests)}
        for tid, t in sorted(tasks.items())
    }
    record_property("verifier_node_counts", json.dumps(counts))
    assert len(tasks) == 87
    assert counts == RECORDED
    assert sum(c["nodes"] for c in counts.values()) == 593
    assert all(not t.parse_errors for t in tasks.values())
    assert all(len(set(t.test_ids)) == len(t.test_ids) for t in tasks.values())
    assert {tid for tid, c in counts.items() if c["nodes"] == 0} == SCRIPT_STYLE
    # each of them gets one node for the script itself, its path as the ref (issue 27 part 4)
    scripts = {tid: [(x.node_id, x.kind) for x in t.tests] for tid, t in tasks.items() if tid in SCRIPT_STYLE}
    assert scripts == {tid: [("tests/test_outputs.py", "script")] for tid in SCRIPT_STYLE}
    assert all(x.kind == "pytest" for tid, t in tasks.items() if tid not in SCRIPT_STYLE for x in t.tests)


@pytest.mark.parametrize("task_id", sorted(SCRIPT_STYLE))
def test_zero_node_verifiers_are_scripts(task_id: str, tasks: dict[str, Task]) -> None:
    """No module-level `test*` function, no `Test*` class with test methods; a `__main__` entry point."""
    source = tasks[task_id].verifier_files["test_outputs.py"]
    tree = ast.parse(source)
    functions = [n.name for n in tree.body if isinstance(n, ast.FunctionDef)]
    classes = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name.startswith("Test")]
    assert "main" in functions and not [f for f in functions if f.startswith("test")]
    assert all(not s.name.startswith("test") for c in classes for s in c.body if isinstance(s, ast.FunctionDef))
    assert 'if __name__ == "__main__"' in source.replace("'", '"')


def test_every_ctrf_test_name_resolves_to_a_parsed_node(skillsbench: Path, tasks: dict[str, Task]) -> None:
    """What G2 accepts must be what CTRF reports: every real CTRF name maps to a node of its task."""
    seen = 0
    for ctrf in sorted((skillsbench / "trials").glob("*/verifier/ctrf.json")):
        result = json.loads((ctrf.parents[1] / "result.json").read_text())
        task = tasks[result["task_name"]]
        for test in json.loads(ctrf.read_text())["results"]["tests"]:
            assert split_ref(test["name"])[0] in task.test_ids, (ctrf, test["name"])
            seen += 1
    assert seen > 0
