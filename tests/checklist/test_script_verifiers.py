"""Assertion items on a plain-script verifier (issue 27 part 4): the one node the importer gives a
verifier with no pytest test node (`tests/<file>`, see tests/ingest/test_verifier_scripts.py) is cited
like a test (G2), must be covered or waived (G5), and is listed to the synthesis model as a verifier
test; the offline draft cites it. Fixtures: tests/fixtures/script_verifiers/."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gcpc_core.checklist import Rules, parse_checklist, read_checklist_data, run_gates
from gcpc_core.checklist.draft import draft_checklist
from gcpc_core.checklist.synthesis import NO_TEST_NODES, build_messages, draft_model
from gcpc_core.ingest.tasks import load_task
from gcpc_core.models import Task

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "script_verifiers"
SCRIPT_REF = "tests/verify.py"


@pytest.fixture
def task() -> Task:
    return load_task(FIXTURES / "plain-script")


def data() -> dict[str, Any]:
    """The fixture checklist (two assertion items cite the script), as plain data to mutate."""
    return read_checklist_data(FIXTURES / "plain-script.checklist.yaml")


def failures(checklist_data: dict[str, Any], task: Task, rules: Rules) -> list[str]:
    return [f.line() for f in run_gates(parse_checklist(checklist_data, "t"), task, rules)]


def test_a_checklist_citing_the_script_passes_the_ref_and_coverage_gates(task: Task, rules: Rules) -> None:
    assert [i["verifier_refs"] for i in data()["items"][:2]] == [[SCRIPT_REF], [SCRIPT_REF]]
    assert failures(data(), task, rules) == []


def test_no_item_citing_the_script_fails_coverage(task: Task, rules: Rules) -> None:
    d = data()
    for item in d["items"][:2]:
        item.update(route="generated", verifier_refs=[])
    assert failures(d, task, rules) == [
        "- G5 verifier test tests/verify.py is neither covered by an assertion item nor waived"]
    d["waivers"] = [{"verifier_ref": SCRIPT_REF, "reason": "every check is an item of its own"}]
    assert failures(d, task, rules) == []


def test_a_ref_to_the_script_is_its_path(task: Task, rules: Rules) -> None:
    """`tests/verify.py` as written; the bare file name is no node (a hint names the right one)."""
    d = data()
    d["items"][0]["verifier_refs"] = ["verify.py"]
    assert failures(d, task, rules) == [
        "C1 G2 unknown verifier ref 'verify.py': not a test node of this task; did you mean 'tests/verify.py'?"]
    d["items"][0]["verifier_refs"] = ["tests/verify.py[a]"]
    assert failures(d, task, rules) == [
        "C1 G2 verifier ref 'tests/verify.py[a]' has a [param] suffix but 'tests/verify.py' is not parametrized"]


def test_the_synthesis_prompt_lists_the_script_as_a_verifier_test(task: Task, rules: Rules) -> None:
    user = build_messages(task, rules)[1]["content"]
    nodes = user.split("## Verifier test nodes", 1)[1].split("## Item budget", 1)[0]
    assert ("- tests/verify.py (the verifier script as a whole, not a pytest test: it passes when the script "
            "succeeds; it makes 3 checks. Cite it from each assertion item") in nodes
    assert "Checks /app/mean.txt and /app/count.txt against the readings." in nodes  # its docstring
    assert NO_TEST_NODES not in user
    assert "4 to 15 items for this task (3 verifier checks" in user
    assert "### tests/verify.py" in user and "### tests/test.sh" in user  # the sources, as before
    schema = draft_model(task, rules).decoding_schema()["$defs"]
    assert schema["ChecklistItem"]["properties"]["verifier_refs"]["maxItems"] == 1
    assert schema["Waiver"]["properties"]["verifier_ref"]["maxLength"] >= len(SCRIPT_REF)  # a waiver of it fits


@pytest.mark.parametrize(("folder", "ref"), [("plain-script", "tests/verify.py"),
                                             ("main-script", "tests/evaluate.py"),
                                             ("shell-only", "tests/test.sh")])
def test_the_offline_draft_cites_the_script(folder: str, ref: str, rules: Rules) -> None:
    task = load_task(FIXTURES / folder)
    draft = draft_checklist(task, rules)
    assert [i.verifier_refs for i in draft.checklist.items if i.route == "assertion"] == [[ref]]
    assert [f.gate for f in draft.failures if f.gate in ("G2", "G5")] == []
