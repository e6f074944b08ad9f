"""Importer fuzz drill over mutated copies of the real logs, plus regression tests for what it found."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from gcpc_core.ingest import import_project, load_trial
from gcpc_core.ingest.trials import TrialError
from gcpc_core.store import Store

from .fuzz import HOSTILE, MUTATIONS, run_fuzz_drill, run_hostile_drill

pytestmark = pytest.mark.drill


@pytest.mark.skillsbench
@pytest.mark.timeout(180)
def test_300_mutated_trials_never_crash_and_every_failure_is_reported(skillsbench: Path, tmp_path: Path) -> None:
    figures = run_fuzz_drill(skillsbench, tmp_path, cases=300, seed=8)
    print("\n".join(figures.lines()))
    assert figures.crashes == [], figures.crashes[:3]
    assert figures.violations == [], figures.violations[:5]
    assert figures.cases == 300 == figures.imported + figures.reported
    assert set(figures.by_mutation) == set(MUTATIONS) and figures.reported > 0 and figures.imported > 0
    assert not any(p.name.startswith("case-") for p in tmp_path.iterdir())  # each case cleans up


# ---- regressions the fuzz drill found (each crashed import_project before its fix) ----

def _copy_trial(skillsbench: Path, tmp_path: Path, name: str) -> Path:
    target = tmp_path / "trials" / name
    shutil.copytree(skillsbench / "trials" / name, target)
    for p in [target, *target.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    return target


@pytest.mark.skillsbench
@pytest.mark.parametrize("where", ["agent/claude-code.txt", "result.json", "verifier/ctrf.json"])
def test_lone_surrogate_escape_is_reported_not_a_crash(skillsbench: Path, tmp_path: Path, where: str) -> None:
    """A `\\udc80` escape is valid JSON but no valid Unicode: sqlite could not encode it."""
    trial = _copy_trial(skillsbench, tmp_path, "citation-check__yMTG5rC")
    path = trial / where
    if where.endswith(".txt"):
        lines = path.read_text().split("\n")
        record = json.loads(lines[1])
        lines[1] = json.dumps({**record, "message": {"content": "bad \udc80 byte"}})
        path.write_text("\n".join(lines))
    else:
        data = json.loads(path.read_text())
        data["trial_name" if where == "result.json" else "extra"] = "bad \udc80 byte"
        path.write_text(json.dumps(data))
    store = Store(tmp_path / "p.db")
    report = import_project(store, tasks_dir=skillsbench / "tasks", trials_dir=tmp_path / "trials", progress=False)
    [(skipped, reason)] = [s for s in report.skipped if "trials" in s[0]]
    assert skipped == str(trial) and "lone surrogate U+DC80" in reason and where.split("/")[-1] in reason
    assert store.project.counts()["trials"] == 0 and store.project.counts()["events"] == 0


@pytest.mark.skillsbench
def test_claude_code_record_type_of_the_wrong_json_type(skillsbench: Path, tmp_path: Path) -> None:
    """`{"type": [...]}` made format sniffing raise TypeError (unhashable): now an unknown format on the
    first line (reported), and a skipped record with a warning further down."""
    trial = _copy_trial(skillsbench, tmp_path, "citation-check__yMTG5rC")
    log = trial / "agent" / "claude-code.txt"
    original = log.read_text()
    log.write_text(json.dumps({"type": ["system"]}) + "\n" + original)
    with pytest.raises(TrialError, match="unknown log format"):
        load_trial(trial)
    first, rest = original.split("\n", 1)
    log.write_text(first + "\n" + json.dumps({"type": {"a": 1}}) + "\n" + rest)
    traj, events = load_trial(trial)
    assert events and traj.log_format == "claude-code"


@pytest.mark.skillsbench
@pytest.mark.parametrize("value", ["boom", ["boom"], 3])
def test_exception_info_of_the_wrong_type_is_a_trial_error(skillsbench: Path, tmp_path: Path, value: object) -> None:
    trial = _copy_trial(skillsbench, tmp_path, "citation-check__yMTG5rC")
    result = json.loads((trial / "result.json").read_text())
    (trial / "result.json").write_text(json.dumps({**result, "exception_info": value}))
    with pytest.raises(TrialError, match=r"result\.json: unexpected value \(exception"):
        load_trial(trial)


def test_deeply_nested_result_json_is_a_trial_error(tmp_path: Path) -> None:
    trial = tmp_path / "t"
    (trial / "agent").mkdir(parents=True)
    (trial / "result.json").write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(TrialError, match="nested too deeply"):
        load_trial(trial)


@pytest.mark.skillsbench
def test_folder_names_that_are_not_utf8_are_reported(skillsbench: Path, tmp_path: Path) -> None:
    """Such names reach Python as lone surrogates: as task or trial ids the DB write failed."""
    tasks, trials = tmp_path / "tasks", tmp_path / "trials"
    for parent, source in ((tasks, skillsbench / "tasks" / "citation-check"),
                           (trials, skillsbench / "trials" / "citation-check__yMTG5rC")):
        shutil.copytree(source, parent / source.name)
        shutil.copytree(source, os.fsdecode(os.fsencode(parent) + b"/bad-\xff" + os.fsencode(source.name)))
    for p in tmp_path.rglob("*"):
        p.chmod(0o755)
    store = Store(tmp_path / "p.db")
    report = import_project(store, tasks_dir=tasks, trials_dir=trials, progress=False)
    assert report.tasks_imported == 1 and report.trials_imported == 1 and len(report.skipped) == 2
    assert all("bad-\ufffd" in path and "not valid UTF-8" in reason for path, reason in report.skipped)
    assert len(store.trials.import_issues()) == 2


@pytest.mark.skillsbench
@pytest.mark.timeout(300)
def test_hostile_folders_are_reported_and_never_hang(skillsbench: Path, tmp_path: Path) -> None:
    figures = run_hostile_drill(skillsbench, tmp_path)
    print("\n".join(figures.lines()))
    assert figures.crashes == [], figures.crashes[:3]
    assert figures.violations == [], figures.violations[:5]
    assert figures.cases == len(HOSTILE) == figures.reported
    assert not any(p.name.startswith("hostile-") for p in tmp_path.iterdir())
