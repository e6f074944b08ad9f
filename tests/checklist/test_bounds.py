"""Bounds that fit the task (issue 27 part 4): the item cap grows with the verifier, refs are written as
pytest writes them, and one length rule for literals holds in the contract, the gates and the grammar."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gcpc_core.checklist import Checklist, Rules, item_cap, parse_checklist, run_gates
from gcpc_core.checklist.gates import verifier_checks
from gcpc_core.checklist.synthesis import build_messages, draft_model, item_bound
from gcpc_core.ingest.tasks import parse_verifier_source
from gcpc_core.models import Task

INSTRUCTION = "Parse `/app/script.txt` and write the dialogue graph to `/app/dialogue.json` as JSON.\n"
QUOTE = "write the dialogue graph to `/app/dialogue.json`"

# 4 + 9 + 4 + 4 + 8 + 6 = 35 parametrized cases over six test functions (the shape of dialogue-parser)
CASES = {"test_basics": 4, "test_speakers": 9, "test_logic": 4, "test_viz": 4, "test_texts": 8, "test_edges": 6}
PARAMETRIZED = "import pytest\n" + "".join(
    f'@pytest.mark.parametrize("case", [{", ".join(repr(f"{name[5:]} {k}") for k in range(n))}])\n'
    f"def {name}(case):\n    assert case\n" for name, n in CASES.items())


def task_with(source: str, *, script: str | None = None) -> Task:
    tests = parse_verifier_source("test_outputs.py", source) if source else []
    return Task(id="dialogue", instruction=INSTRUCTION, verifier_files={"test_outputs.py": source} if source else {},
                test_script=script, tests=tests, source_path="/nonexistent/dialogue")


def item(k: int, refs: list[str], route: str = "assertion") -> dict[str, Any]:
    return {"id": f"C{k}", "route": route, "text": f"`/app/dialogue.json` holds the graph part `part-{k}`",
            "task_quote": QUOTE, "verifier_refs": refs}


def checklist(items: list[dict[str, Any]], waivers: list[dict[str, str]] | None = None) -> Checklist:
    return parse_checklist({"task": "dialogue", "source": "human:alice", "items": items, "waivers": waivers or []}, "t")


# ---- part 1: the item cap grows with the verifier


def test_parametrized_cases_are_counted_with_their_pytest_ids() -> None:
    task = task_with(PARAMETRIZED)
    assert [t.param_cases for t in task.tests] == list(CASES.values())
    assert task.tests[0].param_ids == ("basics 0", "basics 1", "basics 2", "basics 3")
    assert verifier_checks(task) == 35


def test_one_item_per_parametrized_case_passes_the_budget(rules: Rules) -> None:
    task = task_with(PARAMETRIZED)
    assert item_cap(task, rules) == 37  # 35 checks + items_beyond_checks
    refs = [f"{t.node_id}[{i}]" for t in task.tests for i in t.param_ids]
    failures = run_gates(checklist([item(k, [ref]) for k, ref in enumerate(refs)]), task, rules)
    assert failures == []
    over = checklist([item(k, [refs[k % 35]]) for k in range(38)])
    assert [f.message for f in run_gates(over, task, rules) if f.gate == "G6"] == [
        "38 items; the budget is 4-37 for this task (35 verifier checks)"]


def test_the_cap_has_a_floor_and_a_ceiling(rules: Rules) -> None:
    budget = rules.contract.budget
    assert item_cap(task_with("def test_a():\n    pass\n"), rules) == budget.max_items
    huge = "".join(f"def test_{k}():\n    pass\n" for k in range(100))
    assert item_cap(task_with(huge), rules) == budget.max_items_ceiling == 60


def test_the_synthesis_prompt_and_grammar_state_the_tasks_cap(rules: Rules) -> None:
    task = task_with(PARAMETRIZED)
    user = build_messages(task, rules)[1]["content"]
    assert "4 to 37 items for this task (35 verifier checks" in user
    assert "test_outputs.py::test_basics (parametrized, 4 cases: [basics 0], [basics 1]" in user
    assert item_bound(task, rules) == 37
    assert draft_model(task, rules).decoding_schema()["properties"]["items"]["maxItems"] == 37


def test_the_contract_prose_states_the_cap(rules: Rules) -> None:
    prose = (Path(rules.rules_dir) / "checklist_contract.md").read_text()
    budget = rules.contract.budget
    assert f"{budget.min_items} to {budget.max_items} items" in prose
    assert f"at most {budget.max_items_ceiling}" in prose
    assert f"plus {budget.items_beyond_checks}" in prose


# ---- part 4: refs as pytest writes them


def test_refs_as_pytest_writes_them_resolve_and_cover(rules: Rules) -> None:
    """Spaces and a trailing space inside the brackets, and the `tests/` prefix pytest prints when run
    from the task folder, name the node; the bare id stands for all its cases."""
    source = 'import pytest\n@pytest.mark.parametrize("c", ["a b ", "x"])\ndef test_case(c):\n    assert c\n'
    task = task_with(source + "def test_plain():\n    pass\n")
    assert task.tests[0].param_ids == ("a b ", "x")
    refs = ["tests/test_outputs.py::test_case[a b ]", "tests/test_outputs.py::test_plain"]
    assert run_gates(checklist([item(k, refs) for k in range(4)]), task, rules) == []
    bare = ["test_outputs.py::test_case", "test_outputs.py::test_plain"]
    assert run_gates(checklist([item(k, bare) for k in range(4)]), task, rules) == []
