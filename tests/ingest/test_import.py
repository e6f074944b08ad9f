"""The import stage over trial folders: good trials, every kind of bad input, idempotence."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from gcpc_core.ingest import import_project, load_condition_map
from gcpc_core.store import Store

INIT = {"type": "system", "subtype": "init", "model": "m1", "session_id": "s", "tools": ["Bash"], "skills": []}
CALL = {"type": "assistant", "message": {"role": "assistant", "content": [
    {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "echo 42 > /root/out.txt"}}]}}
RESULT = {"type": "user", "message": {"role": "user", "content": [
    {"type": "tool_result", "tool_use_id": "t1", "content": "wrote 42"}]}}


def make_task(root: Path, name: str = "demo-task") -> Path:
    d = root / "tasks" / name
    (d / "tests").mkdir(parents=True)
    (d / "instruction.md").write_text("Write 42 to /root/out.txt.\n")
    (d / "tests" / "test_outputs.py").write_text("def test_out():\n    pass\n")
    return d


def make_trial(root: Path, name: str, *, task: str = "demo-task", reward: float | None = 1.0,
               log: str | bytes | None = None, result: dict | None = None) -> Path:
    d = root / "trials" / name
    (d / "agent").mkdir(parents=True)
    (d / "verifier").mkdir()
    res = result if result is not None else {
        "task_name": task, "trial_name": name,
        "agent_info": {"name": "claude-code", "version": "1"},
        "config": {"agent": {"model_name": "prov/m1"}, "task": {"path": f"/x/{task}"}},
        "verifier_result": {"rewards": {"reward": reward}} if reward is not None else None,
        "started_at": f"2026-01-01T00:00:{len(name):02d}Z",
    }
    (d / "result.json").write_text(json.dumps(res))
    if log is None:
        log = "\n".join(json.dumps(x) for x in (INIT, CALL, RESULT)) + "\n"
    target = d / "agent" / "claude-code.txt"
    target.write_bytes(log if isinstance(log, bytes) else log.encode())
    (d / "verifier" / "ctrf.json").write_text(json.dumps({"results": {"tests": [
        {"name": "test_outputs.py::test_out", "status": "passed" if reward == 1.0 else "failed"}]}}))
    return d


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    make_task(tmp_path)
    make_trial(tmp_path, "demo-task__ok1")
    make_trial(tmp_path, "demo-task__ok2", reward=0.667)
    return tmp_path


def test_good_trials_import_with_outcome_and_events(corpus: Path, store: Store) -> None:
    report = import_project(store, tasks_dir=corpus / "tasks", trials_dir=corpus / "trials", progress=False)
    assert (report.tasks_imported, report.trials_imported, report.skipped) == (1, 2, [])
    ok1, ok2 = store.trials.get_trajectory("demo-task__ok1"), store.trials.get_trajectory("demo-task__ok2")
    assert ok1.outcome == "PASS" and ok2.outcome == "FAIL" and ok2.reward == pytest.approx(0.667)
    assert ok1.model == "prov/m1" and ok1.agent == "claude-code" and ok1.log_format == "claude-code"
    assert [c.status for c in ok1.ctrf] == ["passed"]
    assert ok1.condition == "without-skills" and "offers no skills" in ok1.condition_basis
    kinds = [e.kind for e in store.trials.events("demo-task__ok1")]
    assert "tool_call" in kinds and "tool_output" in kinds


def test_reimport_is_idempotent_and_changed_trial_is_updated(corpus: Path, store: Store) -> None:
    import_project(store, tasks_dir=corpus / "tasks", trials_dir=corpus / "trials", progress=False)
    again = import_project(store, tasks_dir=corpus / "tasks", trials_dir=corpus / "trials", progress=False)
    assert (again.tasks_unchanged, again.trials_unchanged, again.trials_imported, again.trials_updated) == (1, 2, 0, 0)
    res = corpus / "trials" / "demo-task__ok2" / "result.json"
    data = json.loads(res.read_text())
    data["verifier_result"]["rewards"]["reward"] = 1.0
    res.write_text(json.dumps(data))
    third = import_project(store, trials_dir=corpus / "trials", progress=False)
    assert (third.trials_updated, third.trials_unchanged) == (1, 1)
    assert store.trials.get_trajectory("demo-task__ok2").outcome == "PASS"
    assert store.project.counts()["trials"] == 2


def test_reward_txt_fallback_and_pass_threshold(tmp_path: Path, store: Store) -> None:
    make_task(tmp_path)
    d = make_trial(tmp_path, "demo-task__txt", reward=None)
    (d / "verifier" / "reward.txt").write_text("0.5\n")
    import_project(store, tasks_dir=tmp_path / "tasks", trials_dir=tmp_path / "trials", pass_threshold=0.5,
                   progress=False)
    t = store.trials.get_trajectory("demo-task__txt")
    assert (t.reward, t.reward_source, t.outcome) == (0.5, "verifier/reward.txt", "PASS")


BAD_CASES = {
    "truncated": (b'{"type": "system", "subtype": "init"}\n{"type": "assistant", "message": {"ro', "line 2"),
    "non_utf8": (b'{"type": "system", "subtype": "init", "x": "caf\xe9"}\n', "UTF-8"),
    "binary": (b"\x00\x01\x02\x03" * 64, "binary"),
    "unknown_format": (b'{"hello": "world"}\n', "claude-code.txt"),
}


@pytest.mark.parametrize("case", sorted(BAD_CASES))
def test_bad_log_is_reported_with_path_and_skipped(case: str, corpus: Path, store: Store) -> None:
    log, needle = BAD_CASES[case]
    bad = make_trial(corpus, f"demo-task__{case}", log=log)
    report = import_project(store, tasks_dir=corpus / "tasks", trials_dir=corpus / "trials", progress=False)
    assert report.trials_imported == 2
    assert len(report.skipped) == 1
    path, reason = report.skipped[0]
    assert path == str(bad.resolve())
    assert needle.lower() in reason.lower(), reason
    assert store.trials.get_trajectory(f"demo-task__{case}") is None
    assert store.trials.import_issues()[0].reason == reason


def test_no_result_json_and_no_verifier_report_is_skipped(corpus: Path, store: Store) -> None:
    bad = make_trial(corpus, "demo-task__nores")
    (bad / "result.json").unlink()
    shutil.rmtree(bad / "verifier")
    report = import_project(store, tasks_dir=corpus / "tasks", trials_dir=corpus / "trials", progress=False)
    assert report.skipped == [(str(bad.resolve()), f"{bad.resolve()}: no result.json and no verifier report "
                               "(verifier/ctrf.json or verifier/reward.txt): the trial did not reach its verifier")]


def test_unknown_task(corpus: Path, store: Store) -> None:
    make_trial(corpus, "other__1", task="other")
    report = import_project(store, tasks_dir=corpus / "tasks", trials_dir=corpus / "trials", progress=False)
    assert len(report.skipped) == 1 and "task 'other' is unknown" in report.skipped[0][1]


def test_oversized_log(corpus: Path, store: Store) -> None:
    big_line = json.dumps({"type": "user", "message": {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "t1", "content": "x" * (2**20)}]}})
    log = "\n".join([json.dumps(INIT), json.dumps(CALL)] + [big_line] * 50) + "\n"  # ~50 MB
    make_trial(corpus, "demo-task__huge", log=log)
    report = import_project(store, tasks_dir=corpus / "tasks", trials_dir=corpus / "trials", progress=False)
    assert len(report.skipped) == 1
    assert "50.0 MiB" in report.skipped[0][1] and "limit" in report.skipped[0][1]
    assert store.trials.get_trajectory("demo-task__huge") is None


def test_invalid_result_json(corpus: Path, store: Store) -> None:
    bad = make_trial(corpus, "demo-task__badres")
    (bad / "result.json").write_text('{"task_name": "demo-task", ')
    report = import_project(store, tasks_dir=corpus / "tasks", trials_dir=corpus / "trials", progress=False)
    assert len(report.skipped) == 1 and "result.json: invalid JSON" in report.skipped[0][1]


def test_duplicate_trial_name_in_another_folder_is_reported(corpus: Path, store: Store) -> None:
    import_project(store, tasks_dir=corpus / "tasks", trials_dir=corpus / "trials", progress=False)
    copy = corpus / "trials" / "copies" / "demo-task__ok1"
    shutil.copytree(corpus / "trials" / "demo-task__ok1", copy)
    report = import_project(store, trials_dir=corpus / "trials", progress=False)
    assert len(report.skipped) == 1 and "already imported from" in report.skipped[0][1]


def test_condition_mapping_file_wins(corpus: Path, store: Store, tmp_path: Path) -> None:
    mapping = tmp_path / "conditions.csv"
    mapping.write_text("trial,condition\ndemo-task__ok1,with-skills\n")
    import_project(store, tasks_dir=corpus / "tasks", trials_dir=corpus / "trials",
                   condition_map=load_condition_map(mapping), progress=False)
    t = store.trials.get_trajectory("demo-task__ok1")
    assert (t.condition, t.condition_basis) == ("with-skills", "condition mapping file")


def test_trial_index_forms_matched_pairs(tmp_path: Path, store: Store) -> None:
    make_task(tmp_path)
    for name in ("demo-task__a", "demo-task__bb", "demo-task__ccc"):
        make_trial(tmp_path, name)
    import_project(store, tasks_dir=tmp_path / "tasks", trials_dir=tmp_path / "trials", progress=False)
    idx = {t.id: t.trial_index for t in store.trials.trajectories()}
    assert idx == {"demo-task__a": 0, "demo-task__bb": 1, "demo-task__ccc": 2}
