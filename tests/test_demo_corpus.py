"""The embedded demo corpus: Harbor layout, determinism, internal consistency, and agreement
between the recorded verifier outcomes and the real verifier run on each trial's final files."""

from __future__ import annotations

import ast
import json
import sys
import tomllib
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest

from gcpc_core.demo_corpus import (
    DEMO_MARKER,
    DEMO_MODELS,
    LOG_BYTES,
    build_demo_corpus,
    write_demo_corpus,
)

TRIAL_FILES = ("result.json", "config.json", "agent/claude-code.txt", "verifier/ctrf.json",
               "verifier/reward.txt", "verifier/test-stdout.txt")


@pytest.fixture(scope="module")
def corpus_dirs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return write_demo_corpus(tmp_path_factory.mktemp("demo"), seed=7)


@pytest.fixture(scope="module")
def trials(corpus_dirs: tuple[Path, Path]) -> list[dict[str, Any]]:
    """Every trial folder, parsed: result, config, ctrf, reward text and log lines."""
    found = []
    for folder in sorted(p for p in corpus_dirs[1].iterdir() if p.is_dir()):
        log_text = (folder / "agent/claude-code.txt").read_text()
        found.append({
            "dir": folder,
            "result": json.loads((folder / "result.json").read_text()),
            "config": json.loads((folder / "config.json").read_text()),
            "ctrf": json.loads((folder / "verifier/ctrf.json").read_text()),
            "reward_txt": (folder / "verifier/reward.txt").read_text(),
            "log_bytes": len(log_text.encode()),
            "log": [json.loads(line) for line in log_text.splitlines()],
        })
    return found


def verifier_node_ids(source: str, file: str = "test_outputs.py") -> tuple[set[str], set[str]]:
    """(plain node ids, parametrized base ids) of a verifier, parsed with ast."""
    plain, parametrized = set(), set()

    def add(prefix: str, fn: ast.FunctionDef) -> None:
        node = f"{prefix}::{fn.name}"
        is_param = any(isinstance(d, ast.Call) and isinstance(d.func, ast.Attribute) and d.func.attr == "parametrize"
                       for d in fn.decorator_list)
        (parametrized if is_param else plain).add(node)

    for stmt in ast.parse(source).body:
        if isinstance(stmt, ast.FunctionDef) and stmt.name.startswith("test"):
            add(file, stmt)
        elif isinstance(stmt, ast.ClassDef) and stmt.name.startswith("Test"):
            for sub in stmt.body:
                if isinstance(sub, ast.FunctionDef) and sub.name.startswith("test"):
                    add(f"{file}::{stmt.name}", sub)
    return plain, parametrized


def condition_of(trial: dict[str, Any]) -> str:
    return "without-skills" if "noskills" in trial["config"]["task"]["path"] else "with-skills"


def tool_blocks(trial: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    role = "assistant" if kind == "tool_use" else "user"
    return [block for line in trial["log"] if line["type"] == role
            for block in line["message"]["content"] if isinstance(block, dict) and block.get("type") == kind]


# -- layout and counts ------------------------------------------------------------------------


def test_layout_and_counts(corpus_dirs: tuple[Path, Path], trials: list[dict[str, Any]]) -> None:
    tasks_dir, trials_dir = corpus_dirs
    tasks = sorted(p.name for p in tasks_dir.iterdir())
    assert len(tasks) >= 3
    for task in tasks:
        for rel in ("instruction.md", "task.toml", "tests/test_outputs.py", "tests/test.sh"):
            assert (tasks_dir / task / rel).is_file(), f"{task}/{rel}"
    for trial in trials:
        for rel in TRIAL_FILES:
            assert (trial["dir"] / rel).is_file(), f"{trial['dir'].name}/{rel}"
    per_task = Counter(t["result"]["task_name"] for t in trials)
    assert set(per_task) == set(tasks)
    assert min(per_task.values()) >= 8


def test_conditions_outcomes_and_matched_pairs(trials: list[dict[str, Any]]) -> None:
    by_task: dict[str, set[tuple[str, str]]] = defaultdict(set)
    keys: dict[str, set[tuple[str, str, str, int]]] = defaultdict(set)
    for t in trials:
        result, condition = t["result"], condition_of(t)
        outcome = "PASS" if result["verifier_result"]["rewards"]["reward"] >= 1.0 else "FAIL"
        by_task[result["task_name"]].add((condition, outcome))
        assert result["demo_condition"] == condition
        assert result["config"]["agent"]["name"] == "claude-code"
        assert result["config"]["agent"]["model_name"] in DEMO_MODELS
        if condition == "with-skills":
            assert "/demo/tasks/" in result["config"]["task"]["path"]
        key = (result["task_name"], result["config"]["agent"]["name"], result["config"]["agent"]["model_name"],
               result["demo_repeat"])
        keys[condition].add(key)
    for task, seen in by_task.items():
        for condition in ("with-skills", "without-skills"):
            assert {(condition, "PASS"), (condition, "FAIL")} <= seen, f"{task} lacks an outcome under {condition}"
    pairs = keys["with-skills"] & keys["without-skills"]
    assert pairs and pairs == keys["with-skills"] == keys["without-skills"]
    assert {key[2] for key in pairs} == set(DEMO_MODELS)


# -- determinism ------------------------------------------------------------------------------


def _snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_deterministic_per_seed(tmp_path: Path) -> None:
    first, again, other = (_snapshot(write_demo_corpus(tmp_path / name, seed=seed)[0].parent)
                           for name, seed in (("a", 7), ("b", 7), ("c", 8)))
    assert first == again
    assert first != other
    tasks = {k: v for k, v in first.items() if k.startswith("tasks/")}
    assert tasks == {k: v for k, v in other.items() if k.startswith("tasks/")}  # the seed varies trials only


def test_rewrite_replaces_demo_but_never_foreign_data(tmp_path: Path) -> None:
    tasks_dir, trials_dir = write_demo_corpus(tmp_path, seed=1)
    stale = {p.name for p in trials_dir.iterdir()}
    write_demo_corpus(tmp_path, seed=2)
    assert stale.isdisjoint(p.name for p in trials_dir.iterdir())  # no leftovers from seed 1
    for foreign in ("trials/real-run__abc/result.json", "tasks/notes.txt"):
        root = tmp_path / foreign.replace("/", "_")
        (root / foreign).parent.mkdir(parents=True)
        (root / foreign).write_text("{}")
        with pytest.raises(FileExistsError):
            write_demo_corpus(root)
        assert (root / foreign).read_text() == "{}"


# -- well-formedness ----------------------------------------------------------------------------


def test_task_files_parse_and_verifiers_compile(corpus_dirs: tuple[Path, Path]) -> None:
    n_parametrized = 0
    for task_dir in sorted(corpus_dirs[0].iterdir()):
        toml = tomllib.loads((task_dir / "task.toml").read_text())
        assert toml["metadata"]["demo"] is True
        assert DEMO_MARKER in toml["metadata"]["description"]
        source = (task_dir / "tests/test_outputs.py").read_text()
        compile(source, str(task_dir / "tests/test_outputs.py"), "exec")
        plain, parametrized = verifier_node_ids(source)
        assert 4 <= len(plain) + len(parametrized) <= 7, task_dir.name
        n_parametrized += len(parametrized)
        assert (task_dir / "tests/test.sh").read_text().startswith("#!/bin/bash")
        instruction = (task_dir / "instruction.md").read_text()
        assert "/root/" in instruction and "do not" in instruction.lower()  # output paths and a constraint
        assert DEMO_MARKER not in instruction  # instructions stay realistic
    assert n_parametrized >= 1


def test_logs_are_stream_json(trials: list[dict[str, Any]]) -> None:
    for t in trials:
        name, log = t["dir"].name, t["log"]
        assert LOG_BYTES[0] <= t["log_bytes"] <= LOG_BYTES[1], name
        init = log[0]
        assert (init["type"], init["subtype"]) == ("system", "init"), name
        assert init["gcpc_demo"] == DEMO_MARKER
        assert init["model"] == t["result"]["config"]["agent"]["model_name"]
        assert bool(init["skills"]) == (condition_of(t) == "with-skills"), name
        assert {line["type"] for line in log} <= {"system", "assistant", "user", "result"}
        uses = {b["id"]: b for b in tool_blocks(t, "tool_use")}
        results = tool_blocks(t, "tool_result")
        assert {r["tool_use_id"] for r in results} <= set(uses), name
        if t["result"]["exception_info"]:
            assert log[-1]["type"] == "assistant"  # killed mid-tool-call: no result line
        else:
            assert log[-1]["type"] == "result" and log[-1]["subtype"] == "success", name
            assert len(results) == len(uses), name


def test_log_features_across_corpus(trials: list[dict[str, Any]]) -> None:
    tools = Counter(b["name"] for t in trials for b in tool_blocks(t, "tool_use"))
    assert {"Bash", "Read", "Write", "Edit", "Glob", "Grep", "Skill"} <= set(tools)
    skill_trials = [t for t in trials if any(b["name"] == "Skill" for b in tool_blocks(t, "tool_use"))]
    assert skill_trials and all(condition_of(t) == "with-skills" for t in skill_trials)
    results = [r for t in trials for r in tool_blocks(t, "tool_result")]
    assert any(isinstance(r["content"], list) and r["content"][0]["type"] == "text" for r in results)
    assert any(isinstance(r["content"], str) for r in results)
    assert any(r.get("is_error") for r in results)
    assert any(isinstance(r["content"], str) and r["content"].startswith("     1\u2192") for r in results)

    def text(r: dict[str, Any]) -> str:
        return r["content"] if isinstance(r["content"], str) else "".join(b["text"] for b in r["content"])

    long_output = {t["dir"].name for t in trials for r in tool_blocks(t, "tool_result") if len(text(r)) > 8192}
    assert 1 <= len(long_output) < len(trials)
    kinds = {b["type"] for t in trials for line in t["log"] if line["type"] == "assistant"
             for b in line["message"]["content"]}
    assert {"thinking", "text", "tool_use"} <= kinds
    timeouts = [t for t in trials if t["result"]["exception_info"]]
    assert len(timeouts) == 1
    assert timeouts[0]["result"]["exception_info"]["exception_type"] == "AgentTimeoutError"


def test_claimed_success_contradicted_by_tool_output(trials: list[dict[str, Any]]) -> None:
    """Some runs narrate success although a tool reported an error and the verifier failed."""
    contradicted = [t for t in trials if t["result"]["demo_scenario"] == "false_claim"]
    assert len({t["result"]["task_name"] for t in contradicted}) >= 3
    for t in contradicted:
        assert t["result"]["verifier_result"]["rewards"]["reward"] < 1.0
        assert any(r.get("is_error") for r in tool_blocks(t, "tool_result"))
        final = t["log"][-1]["result"].lower()
        assert any(word in final for word in ("complete", "met", "fixed", "repaired", "generated"))


def test_result_json_matches_harbor_shape(trials: list[dict[str, Any]]) -> None:
    for t in trials:
        result = t["result"]
        assert result["demo"] is True and result["demo_note"] == DEMO_MARKER
        assert result["trial_name"] == t["dir"].name and t["dir"].name.startswith(result["task_name"] + "__")
        assert result["config"] == t["config"]
        assert result["agent_info"]["name"] == "claude-code"
        assert set(result["agent_result"]) >= {"n_input_tokens", "n_cache_tokens", "n_output_tokens", "metadata"}
        for phase in ("environment_setup", "agent_setup", "agent_execution", "verifier"):
            assert result[phase]["started_at"] < result[phase]["finished_at"]
        assert result["started_at"] <= result["environment_setup"]["started_at"]
        assert result["verifier"]["finished_at"] <= result["finished_at"]


# -- verifier consistency -----------------------------------------------------------------------


def test_ctrf_names_are_verifier_node_ids(corpus_dirs: tuple[Path, Path], trials: list[dict[str, Any]]) -> None:
    nodes = {d.name: verifier_node_ids((d / "tests/test_outputs.py").read_text()) for d in corpus_dirs[0].iterdir()}
    seen_param = False
    for t in trials:
        plain, parametrized = nodes[t["result"]["task_name"]]
        for test in t["ctrf"]["results"]["tests"]:
            name = test["name"]
            if "[" in name:
                seen_param = True
                assert name.endswith("]") and name.split("[", 1)[0] in parametrized, name
            else:
                assert name in plain, name
    assert seen_param


def test_rewards_consistent_with_ctrf(corpus_dirs: tuple[Path, Path], trials: list[dict[str, Any]]) -> None:
    modes = {d.name: tomllib.loads((d / "task.toml").read_text())["metadata"]["reward_mode"]
             for d in corpus_dirs[0].iterdir()}
    for t in trials:
        ctrf = t["ctrf"]["results"]
        tests, summary = ctrf["tests"], ctrf["summary"]
        assert ctrf["tool"]["name"] == "pytest"
        passed = sum(x["status"] == "passed" for x in tests)
        assert {x["status"] for x in tests} <= {"passed", "failed"}
        assert (summary["tests"], summary["passed"], summary["failed"]) == (len(tests), passed, len(tests) - passed)
        reward = t["result"]["verifier_result"]["rewards"]["reward"]
        assert float(t["reward_txt"]) == reward
        expected = passed / len(tests) if modes[t["result"]["task_name"]] == "fraction" else float(passed == len(tests))
        assert reward == pytest.approx(expected, abs=1e-4)
        assert (reward >= 1.0) == (passed == len(tests))
        for x in tests:
            assert ("message" in x) == (x["status"] == "failed")
        stdout = (t["dir"] / "verifier/test-stdout.txt").read_text()
        assert f"REWARD: {reward}" in stdout


class _Collector:
    """pytest plugin recording call-phase outcomes and crash locations."""

    def __init__(self) -> None:
        self.outcomes: dict[str, tuple[str, str | None, int | None]] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "call" or (report.when == "setup" and report.failed):
            crash = getattr(report.longrepr, "reprcrash", None)
            message = crash.message.splitlines()[0] if crash else None
            self.outcomes[report.nodeid] = (report.outcome, message, crash.lineno if crash else None)


def test_recorded_outcomes_match_real_verifier_runs(tmp_path: Path) -> None:
    """Run each task's official verifier (real pytest, one session) on every trial's final files."""
    corpus = build_demo_corpus(7)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    root_line = 'ROOT = Path(os.environ.get("TASK_ROOT", "/root"))'
    modules = {}
    for i, trial in enumerate(corpus.trials):
        root = tmp_path / f"root{i}"
        for path, text in trial.workspace.items():
            target = root / Path(path).relative_to("/root")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
        source = corpus.tasks[trial.task]["tests/test_outputs.py"]
        assert source.count(root_line) == 1
        modules[f"test_outputs_demo{i}"] = trial
        (tmp_path / f"test_outputs_demo{i}.py").write_text(source.replace(root_line, f"ROOT = Path({str(root)!r})"))
    collector = _Collector()
    code = pytest.main([str(tmp_path), "-q", "-p", "no:cacheprovider", "--import-mode=importlib",
                        "--rootdir", str(tmp_path), "-c", str(tmp_path / "pytest.ini")], plugins=[collector])
    for module in modules:
        sys.modules.pop(module, None)
    assert code in (0, 1)
    for module, trial in modules.items():
        recorded = json.loads(trial.files["verifier/ctrf.json"])["results"]["tests"]
        actual = {nodeid.replace(f"{module}.py", "test_outputs.py"): v
                  for nodeid, v in collector.outcomes.items() if nodeid.startswith(f"{module}.py::")}
        assert [x["name"] for x in recorded] == list(actual), trial.name
        for x in recorded:
            outcome, message, lineno = actual[x["name"]]
            assert x["status"] == outcome, (trial.name, trial.scenario, x["name"], message)
            if outcome == "failed":
                assert message is not None and f"E       {message}\n" in x["trace"], (trial.name, x["name"])
                assert x["trace"].endswith(f"/tests/test_outputs.py:{lineno}: AssertionError"), (trial.name, x["name"])
