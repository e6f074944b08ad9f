"""A verifier that is a plain script, with no pytest test node, gets one node for the script itself
(issue 27 part 4): its ref is the script's path (`tests/<file>`), its checks (asserts, exits with a
failure) are counted for the item cap, and assertion items can cite it. Fixtures:
tests/fixtures/script_verifiers/ (synthetic task folders)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gcpc_core.checklist import item_cap, load_rules
from gcpc_core.checklist.gates import verifier_checks
from gcpc_core.ingest.tasks import load_task, script_checks, script_node
from gcpc_core.models import is_script_ref

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "script_verifiers"


def test_a_plain_script_gets_one_node_for_the_script() -> None:
    """Module-level asserts and a `sys.exit(1)`, run by test.sh; `expected.py` is a helper it imports."""
    task = load_task(FIXTURES / "plain-script")
    assert set(task.verifier_files) == {"verify.py", "expected.py"} and not task.parse_errors
    [node] = task.tests
    assert (node.node_id, node.file, node.name, node.kind) == ("tests/verify.py", "verify.py", "verify.py", "script")
    assert node.docstring == "Checks /app/mean.txt and /app/count.txt against the readings."
    assert (node.lineno, node.end_lineno) == (1, len(task.verifier_files["verify.py"].splitlines()))
    assert node.checks == 3 and verifier_checks(task) == 3  # two asserts and one sys.exit(1)
    assert task.test_ids == ["tests/verify.py"] and is_script_ref(node.node_id)


def test_a_main_function_under_the_main_guard_is_a_script() -> None:
    """A `main()` whose result is the exit status, no test function, no test.sh."""
    task = load_task(FIXTURES / "main-script")
    [node] = task.tests
    assert (node.node_id, node.kind, node.checks) == ("tests/evaluate.py", "script", 1)
    assert node.docstring.startswith("Evaluates the word counter")


def test_a_test_named_file_with_no_test_function_is_a_script(tmp_path: Path) -> None:
    """The SkillsBench shape (2 of its 87 tasks): `tests/test_outputs.py` holding a `main()`, not pytest tests.
    Written here, not kept as a fixture file: pytest would collect a `test_*.py` under tests/."""
    d = tmp_path / "wyckoff"
    (d / "tests").mkdir(parents=True)
    (d / "instruction.md").write_text("Write /root/workspace/solution.py.\n")
    source = (FIXTURES / "main-script" / "tests" / "evaluate.py").read_text()
    (d / "tests" / "test_outputs.py").write_text(source)
    task = load_task(d)
    assert [(t.node_id, t.kind) for t in task.tests] == [("tests/test_outputs.py", "script")]


def test_a_shell_only_verifier_is_its_test_sh() -> None:
    task = load_task(FIXTURES / "shell-only")
    assert task.verifier_files == {}
    [node] = task.tests
    assert (node.node_id, node.file, node.kind, node.checks) == ("tests/test.sh", "test.sh", "script", 2)
    assert node.docstring == "Checks that /app/out.txt holds the greeting."
    assert task.verifier_text("test.sh") == task.test_script


def test_the_item_cap_sees_a_scripts_checks() -> None:
    rules = load_rules()
    source = "import sys\n" + "".join(f"assert {k} == {k}, 'check {k}'\n" for k in range(30)) + "sys.exit('bad')\n"
    node = script_node({"verify.py": source}, None)
    assert node is not None and node.checks == 31
    task = load_task(FIXTURES / "plain-script").model_copy(update={"tests": [node]})
    assert item_cap(task, rules) == 33


@pytest.mark.parametrize(("source", "checks"), [
    ("import sys\nsys.exit(0)\n", 1),  # a success exit is no check; the script itself still is one
    ("import sys\nif bad():\n    sys.exit(2)\nexit()\nquit(None)\n", 1),
    ("import os, sys\nassert a\nos._exit(3)\nraise SystemExit('x')\nraise SystemExit(0)\nsys.exit(0 if ok else 1)\n", 4),
])
def test_python_checks_are_asserts_and_failure_exits(source: str, checks: int) -> None:
    assert script_checks("verify.py", source) == checks


def test_shell_checks_are_failure_exits() -> None:
    script = "#!/bin/sh\n# exit 9 in a comment is not one\ntest -f a || exit 1\n[ -s b ] || { echo no; exit $rc; }\nexit 0\n"
    assert script_checks("test.sh", script) == 2


def test_which_script_stands_for_the_verifier() -> None:
    run = "print('checking')\n"
    # test.sh names one of two scripts: that one
    assert script_node({"a.py": run, "b.py": run}, "python3 /tests/b.py\n").node_id == "tests/b.py"
    # test.sh runs both: the verifier as a whole is test.sh, counting the scripts' checks too
    both = script_node({"a.py": "assert x\n", "b.py": "assert y\nassert z\n"}, "python3 /tests/a.py && python3 /tests/b.py\n")
    assert (both.node_id, both.checks) == ("tests/test.sh", 1 + 1 + 2)
    # no test.sh: test-named files first
    assert script_node({"check.py": run, "test_outputs.py": run}, None).node_id == "tests/test_outputs.py"
    # only helpers (definitions, constants) and a conftest: no script, so no node
    assert script_node({"helpers.py": "X = 1\ndef f():\n    return X\n", "conftest.py": run}, None) is None
    assert script_node({}, None) is None


def test_a_pytest_verifier_gets_no_script_node(tmp_path: Path) -> None:
    d = tmp_path / "pytest-task"
    (d / "tests").mkdir(parents=True)
    (d / "instruction.md").write_text("Write /app/x.txt.\n")
    (d / "tests" / "test_outputs.py").write_text("def test_x():\n    assert True\n\nif __name__ == '__main__':\n    test_x()\n")
    (d / "tests" / "test.sh").write_text("pytest /tests/test_outputs.py\n")
    task = load_task(d)
    assert task.test_ids == ["test_outputs.py::test_x"] and task.tests[0].kind == "pytest"


def test_a_script_that_does_not_parse_is_a_parse_error(tmp_path: Path) -> None:
    d = tmp_path / "broken"
    (d / "tests").mkdir(parents=True)
    (d / "instruction.md").write_text("Write /app/x.txt.\n")
    (d / "tests" / "verify.py").write_text("assert (\n")
    task = load_task(d)
    assert task.tests == [] and len(task.parse_errors) == 1 and "verify.py: line 1" in task.parse_errors[0]
