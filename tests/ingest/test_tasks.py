from __future__ import annotations

from pathlib import Path

import pytest

from gcpc_core.ingest.tasks import TaskError, find_task_dirs, load_task, parse_verifier_source

VERIFIER = '''
import pytest

def helper():
    pass

def test_top():
    """Top-level test."""

class TestGroup:
    def test_a(self):
        pass

    def not_a_test(self):
        pass

    class TestNested:
        def test_inner(self):
            pass

class TestWithInit:
    def __init__(self):
        pass

    def test_never_collected(self):
        pass

class Helper:
    def test_not_collected(self):
        pass

@pytest.mark.parametrize("x", [1, 2])
def test_param(x):
    pass
'''


def test_parse_verifier_source_node_ids_and_flags() -> None:
    tests = parse_verifier_source("test_outputs.py", VERIFIER)
    assert [t.node_id for t in tests] == [
        "test_outputs.py::test_top",
        "test_outputs.py::TestGroup::test_a",
        "test_outputs.py::TestGroup::TestNested::test_inner",
        "test_outputs.py::test_param",
    ]
    by_name = {t.name: t for t in tests}
    assert by_name["test_param"].parametrized and not by_name["test_top"].parametrized
    assert by_name["test_top"].docstring == "Top-level test."
    assert by_name["test_a"].cls == "TestGroup"
    assert by_name["test_top"].lineno < by_name["test_top"].end_lineno or by_name["test_top"].lineno > 0


def _task(tmp_path: Path, verifier: str = VERIFIER) -> Path:
    d = tmp_path / "my-task"
    (d / "tests").mkdir(parents=True)
    (d / "instruction.md").write_text("Write /root/out.txt containing 42.\n")
    (d / "task.toml").write_text('version = "1.0"\n[metadata]\ndifficulty = "easy"\n')
    (d / "tests" / "test_outputs.py").write_text(verifier)
    (d / "tests" / "conftest.py").write_text("def test_in_conftest():\n    pass\n")
    (d / "tests" / "test.sh").write_text("pytest /tests/test_outputs.py\n")
    return d


def test_load_task_reads_instruction_metadata_and_tests(tmp_path: Path) -> None:
    task = load_task(_task(tmp_path))
    assert task.id == "my-task"
    assert task.instruction.startswith("Write /root/out.txt")
    assert task.metadata["metadata"]["difficulty"] == "easy"
    assert set(task.verifier_files) == {"test_outputs.py", "conftest.py"}
    assert "test_outputs.py::test_top" in task.test_ids
    assert not any("conftest" in t for t in task.test_ids), "conftest.py holds no test nodes"
    assert task.test_script and "pytest" in task.test_script


def test_syntax_error_in_verifier_is_recorded_not_raised(tmp_path: Path) -> None:
    task = load_task(_task(tmp_path, verifier="def test_x(:\n"))
    assert task.tests == []
    assert len(task.parse_errors) == 1 and "test_outputs.py" in task.parse_errors[0]


def test_missing_instruction_and_bad_toml_are_clear_errors(tmp_path: Path) -> None:
    d = _task(tmp_path)
    (d / "task.toml").write_text("version = [unclosed\n")
    with pytest.raises(TaskError, match="task.toml: invalid TOML"):
        load_task(d)
    (d / "instruction.md").unlink()
    with pytest.raises(TaskError, match="no instruction.md"):
        load_task(d)


def test_non_utf8_instruction_is_refused(tmp_path: Path) -> None:
    d = _task(tmp_path)
    (d / "instruction.md").write_bytes(b"caf\xe9 \xff\n")
    with pytest.raises(TaskError, match="not UTF-8"):
        load_task(d)


def test_real_tasks_all_parse(skillsbench: Path) -> None:
    dirs = find_task_dirs(skillsbench / "tasks")
    assert len(dirs) == 87
    tasks = [load_task(d) for d in dirs]
    assert all(not t.parse_errors for t in tasks)
    no_nodes = sorted(t.id for t in tasks if not any(x.kind == "pytest" for x in t.tests))
    # these two verifiers are scripts, not pytest test modules (a main() and an evaluator class): each gets
    # one node for the script itself
    assert no_nodes == ["crystallographic-wyckoff-position-analysis", "python-scala-translation"]
    assert all([x.node_id for x in t.tests] == ["tests/test_outputs.py"] for t in tasks if t.id in no_nodes)
    citation = next(t for t in tasks if t.id == "citation-check")
    assert "test_outputs.py::TestFakeCitationsDetected::test_smith2020ai_detected" in citation.test_ids
