"""An importer that never falls over: each failure a red-team pass found, as a test.

Every per-task and per-trial failure is reported with its path and reason and the import goes on;
only regular files within their size limits are opened; a renamed trial is updated in place; name
clashes are checked inside the write transaction; re-imports converge.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from gcpc_core.project_frames import frames_from_store
from gcpc_core.cli import main
from gcpc_core.ingest import UNEXPECTED, find_trial_dirs, import_project
from gcpc_core.ingest.confine import walk
from gcpc_core.store import Store

from .test_import import make_task, make_trial

pytestmark = pytest.mark.timeout(120)  # a pipe opened for reading would hang the import: fail instead


def _import(store: Store, root: Path, **kw: object):
    return import_project(store, tasks_dir=root / "tasks", trials_dir=root / "trials", progress=False, **kw)


def _reasons(report) -> dict[str, str]:
    return {Path(p).name: r for p, r in report.skipped}


# ---- renamed trials ----

def test_renamed_trial_is_updated_in_place_and_later_trials_still_import(tmp_path: Path, store: Store) -> None:
    make_task(tmp_path)
    first = make_trial(tmp_path, "demo-task__a")
    _import(store, tmp_path)
    res = first / "result.json"
    res.write_text(json.dumps({**json.loads(res.read_text()), "trial_name": "renamed"}))
    make_trial(tmp_path, "demo-task__b")
    report = _import(store, tmp_path)
    assert (report.trials_updated, report.trials_imported, report.skipped) == (1, 1, [])
    assert store.trials.get_trajectory("demo-task__a") is None and store.trials.get_trajectory("renamed").source_path == str(first)
    assert len(store.trials.events("renamed")) == 3 and store.project.counts()["trials"] == 2
    again = _import(store, tmp_path)
    assert (again.trials_unchanged, again.trials_updated, again.trials_imported) == (2, 0, 0)


def test_renaming_a_judged_trial_is_reported_and_keeps_its_rows(tmp_path: Path, store: Store) -> None:
    make_task(tmp_path)
    first = make_trial(tmp_path, "demo-task__a")
    _import(store, tmp_path)
    store.db["judge_units"].insert({"trajectory_id": "demo-task__a", "judge": "probe", "label": "probe-run",
                                   "task": "demo-task", "prompt_version": "p1", "created_at": "now"})
    res = first / "result.json"
    res.write_text(json.dumps({**json.loads(res.read_text()), "trial_name": "renamed"}))
    make_trial(tmp_path, "demo-task__b")
    for _ in range(2):  # the same report each time: nothing changes until the user decides
        report = _import(store, tmp_path)
        assert "trial name changed from 'demo-task__a' to 'renamed'" in _reasons(report)["demo-task__a"]
        assert "judge_units (1 rows)" in _reasons(report)["demo-task__a"]
    assert store.trials.get_trajectory("demo-task__a") is not None and store.trials.get_trajectory("demo-task__b") is not None


def test_a_name_held_by_another_folder_is_reported(tmp_path: Path, store: Store) -> None:
    make_task(tmp_path)
    make_trial(tmp_path, "demo-task__a")
    clone = make_trial(tmp_path, "demo-task__clone")
    res = clone / "result.json"
    res.write_text(json.dumps({**json.loads(res.read_text()), "trial_name": "demo-task__a"}))
    report = _import(store, tmp_path)
    assert report.trials_imported == 1
    assert _reasons(report) == {"demo-task__clone": f"trial name 'demo-task__a' is already imported from "
                                                    f"{(tmp_path / 'trials' / 'demo-task__a').resolve()}"}


def _import_folder(db: str, trials: str, queue) -> None:
    report = import_project(Store(db), trials_dir=Path(trials), progress=False, workers=1)
    queue.put((trials, report.trials_imported, len(report.skipped)))


def test_concurrent_imports_with_clashing_names_each_report_only_their_own_rows(tmp_path: Path) -> None:
    make_task(tmp_path)
    db = tmp_path / "p.db"
    import_project(Store(db), tasks_dir=tmp_path / "tasks", progress=False)
    n = 40
    for side in ("left", "right"):
        for i in range(n):
            make_trial(tmp_path / side, f"demo-task__{i:03d}", reward=1.0 if side == "left" else 0.0)
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_import_folder, args=(str(db), str(tmp_path / side / "trials"), queue))
             for side in ("left", "right")]
    for p in procs:
        p.start()
    results = [queue.get(timeout=90) for _ in procs]
    for p in procs:
        p.join(30)
    store = Store(db)
    rows = store.trials.trajectories()
    assert len(rows) == n
    for folder, imported, skipped in results:
        mine = sum(t.source_path.startswith(str(Path(folder).resolve())) for t in rows)
        assert imported == mine and imported + skipped == n, (folder, imported, skipped, mine)


# ---- bad task folders ----

def _bad_tasks(root: Path) -> None:
    make_task(root, "good")
    make_task(root, "dir-test") and (root / "tasks" / "dir-test" / "tests" / "test_x.py").mkdir()
    nested = make_task(root, "nested-toml")
    (nested / "task.toml").write_text("x = " + "[" * 100_000 + "]" * 100_000 + "\n")
    huge = make_task(root, "huge-expression")
    (huge / "tests" / "test_outputs.py").write_text("def test_x():\n    assert " + "1 + " * 300_000 + "1\n")


BAD_TASK_REASONS = {
    "test_x.py": "a folder where a verifier file is expected",
    "task.toml": "TOML nested too deeply to read",
    "test_outputs.py": "verifier nested too deeply to parse its tests statically",
}


def _check_bad_tasks(report, store: Store) -> None:
    reasons = sorted(r for _, r in report.skipped)
    assert len(reasons) == 3 and not any(UNEXPECTED in r for r in reasons)
    for name, needle in BAD_TASK_REASONS.items():
        assert any(f"/{name}: {needle}" in r for r in reasons), (name, reasons)
    assert store.trials.task_ids() == {"good"}


def test_bad_task_folders_are_reported_and_the_rest_imports(tmp_path: Path, store: Store) -> None:
    _bad_tasks(tmp_path)
    make_trial(tmp_path, "good__1", task="good")
    report = _import(store, tmp_path)
    _check_bad_tasks(report, store)
    assert report.trials_imported == 1


def test_bad_task_folders_in_an_archive_are_reported_too(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    _bad_tasks(tmp_path / "src")
    archive = tmp_path / "tasks.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for p in sorted((tmp_path / "src").rglob("*")):
            zf.write(p, p.relative_to(tmp_path / "src").as_posix())
    assert main(["import", "--tasks", str(archive), "--db", str(tmp_path / "p.db"), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "tasks: 1 imported" in out
    for name, needle in BAD_TASK_REASONS.items():
        assert f"/{name}: {needle}" in out, out


def test_duplicate_task_names_are_reported_with_the_one_used(tmp_path: Path, store: Store) -> None:
    make_task(tmp_path / "a")
    second = make_task(tmp_path / "b")
    (second / "instruction.md").write_text("A swapped instruction.\n")
    report = import_project(store, tasks_dir=tmp_path, progress=False)
    first = (tmp_path / "a" / "tasks" / "demo-task").resolve()
    assert report.skipped == [(str(second.resolve()), f"task name 'demo-task' is also the name of {first}, "
                                                       "which was imported; this folder was not")]
    assert store.trials.get_task("demo-task").instruction == "Write 42 to /root/out.txt.\n"


# ---- files that are not regular, or too large ----

@pytest.mark.parametrize("where", ["tasks/demo-task/tests/test_fifo.py", "trials/demo-task__x/verifier/reward.txt",
                                   "trials/demo-task__x/agent/claude-code.txt", "trials/demo-task__x/result.json",
                                   "trials/demo-task__x/verifier/ctrf.json"])
def test_a_named_pipe_is_never_opened(tmp_path: Path, store: Store, where: str) -> None:
    make_task(tmp_path)
    make_trial(tmp_path, "demo-task__ok")
    make_trial(tmp_path, "demo-task__x", reward=None)
    (tmp_path / where).unlink(missing_ok=True)
    os.mkfifo(tmp_path / where)
    report = _import(store, tmp_path)
    path, reason = report.skipped[0]
    assert reason.startswith(f"{tmp_path / where}: ") and ("named pipe" in reason or "not a regular file" in reason)
    if where.startswith("tasks/"):  # the task is left out, so its trials are reported as of an unknown task
        assert [r for _, r in report.skipped[1:]] == [f"{tmp_path / 'trials' / t}: task 'demo-task' is unknown "
                                                      "(import its task folder first)" for t in ("demo-task__ok",
                                                                                                 "demo-task__x")]
    else:
        assert path == str(tmp_path / "trials" / "demo-task__x") and len(report.skipped) == 1
        assert store.trials.get_trajectory("demo-task__ok") is not None


_PEAK_RSS_CHILD = """
import json, sys
from pathlib import Path
from gcpc_core.ingest import import_project
from gcpc_core.store import Store
root = Path(sys.argv[1])
report = import_project(Store(root / "p.db"), tasks_dir=root / "tasks", trials_dir=root / "trials",
                        progress=False, workers=1)
peak_kb = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(json.dumps({"skipped": report.skipped, "peak_kb": peak_kb}))
"""


@pytest.mark.parametrize("where", ["verifier/reward.txt", "agent/claude-code.txt", "result.json"])
def test_a_1gb_sparse_file_is_refused_without_reading_it(tmp_path: Path, where: str) -> None:
    """The import runs in a fresh process whose VmHWM (the peak RSS of its own address space; `ru_maxrss`
    would carry the forking pytest process's peak across exec) shows a whole-file read: it would add 1 GiB."""
    make_task(tmp_path)
    bad = make_trial(tmp_path, "demo-task__big", reward=None)
    with open(bad / where, "wb") as fh:
        fh.truncate(2**30)
    done = subprocess.run([sys.executable, "-c", _PEAK_RSS_CHILD, str(tmp_path)], capture_output=True, text=True,
                          timeout=300, cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    [(_, reason)] = result["skipped"]
    if where.endswith(".txt") and "agent" in where:  # the log's first bytes already show it is no log
        assert reason == f"{bad / where}: binary file (NUL byte at byte offset 0)"
    else:
        assert "over the" in reason and "1024.0 MiB" in reason, reason
    peak_mb = result["peak_kb"] / 1024
    assert peak_mb < 400, f"the importing process peaked at {peak_mb:.0f} MB"


def test_a_reward_that_is_not_a_finite_number_is_reported(tmp_path: Path, store: Store) -> None:
    make_task(tmp_path)
    bad = make_trial(tmp_path, "demo-task__nan", reward=None)
    (bad / "verifier" / "reward.txt").write_text("nan\n")
    [(_, reason)] = _import(store, tmp_path).skipped
    assert reason.endswith("reward.txt: not a finite number: 'nan'")


def test_a_symlink_loop_is_a_reported_skip(tmp_path: Path, store: Store) -> None:
    make_task(tmp_path)
    make_trial(tmp_path, "demo-task__ok")
    looped = make_trial(tmp_path, "demo-task__loop")
    log = looped / "agent" / "claude-code.txt"
    log.unlink()
    log.symlink_to(log.name)
    (tmp_path / "trials" / "circle").symlink_to("circle")
    report = _import(store, tmp_path)
    reasons = _reasons(report)
    assert reasons["claude-code.txt"] == f"{log}: symbolic link loop: not followed"
    assert reasons["circle"] == f"{tmp_path / 'trials' / 'circle'}: symbolic link loop: not followed"
    assert "demo-task__loop" in reasons and not any(UNEXPECTED in r for r in reasons.values())
    assert report.trials_imported == 1


def test_discovery_walk_lists_what_os_walk_lists_in_its_order(tmp_path: Path) -> None:
    """Discovery's walk classifies entries from the listing; it must see the tree exactly as os.walk does."""
    root = tmp_path / "trials"
    for d in ("b/agent/deep/er", "a/agent", "a/verifier", "c"):
        (root / d).mkdir(parents=True)
    (root / "a" / "result.json").write_text("{}")
    (root / "b" / "agent" / "log.txt").write_text("x")
    (root / "linked").symlink_to(root / "b", target_is_directory=True)  # listed as a folder, never entered
    (root / "loop").symlink_to("loop")
    (root / "broken").symlink_to("nowhere")
    os.mkfifo(root / "c" / "pipe")
    (root / "c" / "unreadable").mkdir()
    (root / "c" / "unreadable").chmod(0)
    try:
        ours = [(top, [d.name for d in dirs], [f.name for f in files]) for top, dirs, files in walk(root)]
        assert ours == list(os.walk(root))
        assert [(top, len(dirs), len(files)) for top, dirs, files in walk(str(root) + "/")] == [
            (top, len(dirs), len(files)) for top, dirs, files in os.walk(str(root) + "/")]
    finally:
        (root / "c" / "unreadable").chmod(0o755)
    assert find_trial_dirs(root) == [root / "a", root / "b"]  # not linked/: a link to a folder is not entered


# ---- unfinished and non-Harbor trials ----

def _unfinished(root: Path, name: str, statuses: list[str]) -> Path:
    d = make_trial(root, name)
    (d / "result.json").unlink()
    (d / "config.json").write_text(json.dumps({"task": {"name": "demo-task"}, "agent": {"name": "terminus-2"}}))
    (d / "verifier" / "ctrf.json").write_text(json.dumps({"results": {"tests": [
        {"name": f"test_outputs.py::test_{i}", "status": s} for i, s in enumerate(statuses)]}}))
    return d


def test_unfinished_trial_with_a_verifier_report_is_unscored_and_counted(tmp_path: Path, store: Store,
                                                                        capsys: pytest.CaptureFixture) -> None:
    make_task(tmp_path)
    make_trial(tmp_path, "demo-task__done")
    _unfinished(tmp_path, "demo-task__cut", ["passed", "passed"])
    report = _import(store, tmp_path)
    assert report.skipped == [] and report.trials_imported == 2
    t = store.trials.get_trajectory("demo-task__cut")
    assert (t.outcome, t.reward, t.reward_source, t.agent) == ("unscored", None, "missing", "terminus-2")
    assert t.outcome_basis == ("no reward recorded (verifier/ctrf.json: 2 passed, 0 failed of 2); "
                               "no result.json (an unfinished trial)")
    assert main(["info", "--db", str(store.path), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert (info["trials"], info["pass"], info["fail"], info["unscored"]) == (2, 1, 0, 1)
    assert _import(store, tmp_path).trials_unchanged == 2


def test_derive_outcome_from_the_verifier_report_records_the_basis(tmp_path: Path, store: Store) -> None:
    make_task(tmp_path)
    _unfinished(tmp_path, "demo-task__p", ["passed", "skipped"])
    _unfinished(tmp_path, "demo-task__f", ["passed", "failed"])
    _import(store, tmp_path, derive_outcome=True)
    p, f = store.trials.get_trajectory("demo-task__p"), store.trials.get_trajectory("demo-task__f")
    assert (p.outcome, f.outcome) == ("PASS", "FAIL")
    assert f.outcome_basis.startswith("derived on request from verifier/ctrf.json (1 passed, 1 failed of 2)")
    assert _import(store, tmp_path).trials_updated == 2  # the flag is a setting: without it, unscored again
    assert store.trials.get_trajectory("demo-task__p").outcome == "unscored"


def test_unscored_trials_are_left_out_of_outcome_statistics(tmp_path: Path, store: Store) -> None:
    make_task(tmp_path)
    make_trial(tmp_path, "demo-task__done")
    _unfinished(tmp_path, "demo-task__cut", ["passed"])
    _import(store, tmp_path)
    for traj in ("demo-task__done", "demo-task__cut"):
        outcome = store.trials.get_trajectory(traj).outcome
        store.db["judge_units"].insert({"trajectory_id": traj, "judge": "probe", "label": "probe-run",
                                       "task": "demo-task", "prompt_version": "p1", "created_at": "now"})
        store.db["scores"].insert({"trajectory_id": traj, "judge": "probe", "label": "probe-run", "task": "demo-task",
                                   "outcome": outcome, "condition": "unknown", "partial_credit": 1.0,
                                   "scored_at": "now"}, alter=True)
    frames = frames_from_store(store)
    assert list(frames["scores"]["trajectory_id"]) == ["demo-task__done"]
    assert frames["scores"].attrs["unscored_trials"] == 1


def test_flat_result_json_is_read(tmp_path: Path, store: Store) -> None:
    make_task(tmp_path)
    d = make_trial(tmp_path, "demo-task__flat", result={
        "task_name": "demo-task", "trial_name": "demo-task__flat", "rewards": {"reward": 1.0}, "agent": "opencode",
        "model": "google/gemini-3-flash-preview", "n_tool_calls": 1, "error": "agent timed out",
        "started_at": "2026-05-02 15:38:45", "timing": {"agent_execution": 120.0, "total": 257.6}})
    (d / "config.json").write_text(json.dumps({"task_path": "/x/tasks/demo-task", "skills_dir": "/skills"}))
    _import(store, tmp_path)
    t = store.trials.get_trajectory("demo-task__flat")
    assert (t.outcome, t.reward, t.agent, t.model) == ("PASS", 1.0, "opencode", "google/gemini-3-flash-preview")
    assert (t.condition, t.condition_basis) == ("with-skills", "config.json skills_dir=/skills")
    assert t.tokens == {"n_tool_calls": 1} and t.exception == {"error": "agent timed out"}
    assert t.timings["durations_s"] == {"agent_execution": 120.0, "total": 257.6}
