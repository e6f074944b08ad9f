"""Bounds that fit the task (issue 27 part 4): the item cap grows with the verifier, refs are written as
pytest writes them, and one length rule for literals holds in the contract, the gates and the grammar."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from gcpc_core.checklist import Checklist, Rules, gates, item_cap, parse_checklist, run_gates
from gcpc_core.checklist.gates import verifier_checks
from gcpc_core.checklist.rules import ItemRule
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


# ---- part 3: one length rule for literals, the same in the contract, the gates and the grammar

PROSE_WORDS = ("calibration", "measurement", "coordinates", "uncertainty", "temperature", "observation",
               "instruments", "laboratory", "spectrometer", "frequencies")


def prose_of(n: int) -> str:
    """Exactly `n` characters of plain prose (no literal, no banned phrase, one clause)."""
    words = " ".join(PROSE_WORDS[k % len(PROSE_WORDS)] for k in range(n // 5 + 2))
    text = ("The report names " + words)[:n]
    return text[:-1] + "x" if text.endswith(" ") else text


def literal_of(n: int, k: int = 0) -> str:
    """A backticked path of exactly `n` characters, backticks included."""
    return f"`/app/out/{k}" + "d" * (n - 15 - len(str(k))) + ".csv`"


def text_of(prose_chars: int, literal_chars: list[int]) -> str:
    """`prose_chars` characters of prose (the spaces before each literal included) and the literals."""
    text = prose_of(prose_chars - len(literal_chars)) + "".join(" " + literal_of(n, k) for k, n in enumerate(literal_chars))
    assert len(text) == prose_chars + sum(literal_chars)
    return text


def length_failures(text: str, task: Task, rules: Rules) -> list[str]:
    filler = [item(k, ["test_outputs.py::test_a"]) for k in range(1, 4)]
    own = {"id": "L1", "route": "generated", "text": text, "task_quote": QUOTE, "verifier_refs": []}
    return [f.message for f in run_gates(checklist([*filler, own]), task, rules) if f.gate == "G3"]


def grammar_text_bound(task: Task, rules: Rules) -> int:
    return draft_model(task, rules).decoding_schema()["$defs"]["ChecklistItem"]["properties"]["text"]["maxLength"]


SMALL = "def test_a():\n    assert True\n"


def test_long_literals_beside_full_prose_pass_the_gate_and_fit_the_grammar(rules: Rules) -> None:
    """300 characters of prose naming 200 characters of paths: G3 counts the prose, and the grammar's raw
    bound leaves room for the literals (it was 320, so the gate accepted an item no bounded model could write)."""
    task = task_with(SMALL)
    text = text_of(300, [100, 100])
    assert len(text) == 500
    assert length_failures(text, task, rules) == []
    assert len(text) <= grammar_text_bound(task, rules)


def test_too_much_prose_fails_the_gate(rules: Rules) -> None:
    task = task_with(SMALL)
    assert length_failures(text_of(330, []), task, rules) == [
        "text has 330 characters besides literals; allowed at most 320"]
    assert length_failures(text_of(330, [100]), task, rules) == [
        "text has 330 characters besides literals; allowed at most 320"]


def test_a_text_over_the_raw_cap_fails_the_gate_and_the_grammar(rules: Rules) -> None:
    task = task_with(SMALL)
    text = text_of(100, [100] * 6)  # 100 characters of prose: the old rule measured only those
    assert len(text) == 700
    assert length_failures(text, task, rules) == [
        "text has 700 characters as written, literals included; allowed at most 640"]
    assert len(text) > grammar_text_bound(task, rules) == rules.contract.item.max_raw_chars == 640


def test_the_gate_and_the_grammar_draw_the_line_at_the_same_character(rules: Rules) -> None:
    task = task_with(SMALL)
    cap = rules.contract.item.max_raw_chars
    assert grammar_text_bound(task, rules) == cap
    for raw in (cap - 1, cap, cap + 1):
        text = text_of(40, [raw - 40 - 300, 150, 150])
        assert (length_failures(text, task, rules) == []) == (len(text) <= grammar_text_bound(task, rules)), raw


def test_the_prompt_states_the_numbers_the_gate_and_grammar_apply(rules: Rules) -> None:
    """The length rule's numbers come from one Rules field each: change them and the gate, the grammar and
    the synthesis prompt's contract text all move together; the contract prose repeats none of them."""
    task = task_with(SMALL)
    rule = rules.contract.item
    system = build_messages(task, rules)[0]["content"]
    assert gates.length_rule(rules) in system
    assert f"{rule.min_chars}-{rule.max_chars} characters of prose" in system
    assert f"at most {rule.max_raw_chars} characters as written" in system
    assert f"max_raw_chars: {rule.max_raw_chars}" in system  # the gate settings, as loaded
    prose = rules.prose["checklist_contract.md"]
    assert str(rule.max_chars) not in prose and str(rule.max_raw_chars) not in prose

    tight_item = rule.model_copy(update={"max_chars": 200, "max_raw_chars": 300})
    tight = rules.model_copy(update={"contract": rules.contract.model_copy(update={"item": tight_item})})
    system = build_messages(task, tight)[0]["content"]
    assert "15-200 characters of prose" in system and "at most 300 characters as written" in system
    assert grammar_text_bound(task, tight) == 300
    assert length_failures(text_of(210, []), task, tight) == [
        "text has 210 characters besides literals; allowed at most 200"]
    assert length_failures(text_of(100, [100, 101]), task, tight) == [
        "text has 301 characters as written, literals included; allowed at most 300"]
    assert length_failures(text_of(100, [100, 100]), task, tight) == []


def test_the_raw_cap_cannot_be_below_the_prose_bound(rules: Rules) -> None:
    fields = rules.contract.item.model_dump()
    with pytest.raises(ValidationError, match="max_raw_chars is below max_chars"):
        ItemRule.model_validate({**fields, "max_raw_chars": fields["max_chars"] - 1})
