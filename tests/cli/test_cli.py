"""The command line: every verb documents itself, and the contracts of docs/design.md#contracts hold."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gcpc_core.cli import build_parser, main

REPO = Path(__file__).resolve().parents[2]


def verbs() -> list[str]:
    sub = next(a for a in build_parser()._actions if a.dest == "verb")
    return sorted(sub.choices)


@pytest.mark.parametrize("verb", verbs())
def test_every_verb_has_help(verb: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main([verb, "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: python -m gcpc_core {verb}")
    assert len(out.splitlines()) > 4  # a description and documented options, not a bare usage line


def test_checklist_add_has_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["checklist", "add", "--help"])
    assert "--db" in capsys.readouterr().out


def test_module_entry_point_runs() -> None:
    run = subprocess.run([sys.executable, "-m", "gcpc_core", "--help"], cwd=REPO, capture_output=True, text=True)
    assert run.returncode == 0
    for verb in ("import", "info", "export", "demo"):
        assert verb in run.stdout


def test_import_rejects_missing_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["import", "--trials", str(tmp_path / "nope"), "--db", str(tmp_path / "p.db")]) == 2
    assert "not a folder" in capsys.readouterr().err


def test_info_on_missing_db(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["info", "--db", str(tmp_path / "none.db")]) == 2
    assert "no such project DB" in capsys.readouterr().err


def test_demo_db_info_and_export(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "demo.db"
    assert main(["demo", "--db", str(db)]) == 0
    capsys.readouterr()
    assert main(["info", "--db", str(db), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["demo"] is True and info["tasks"] >= 3 and info["trials"] >= 24
    assert info["pass"] > 0 and info["fail"] > 0
    out = tmp_path / "trials.csv"
    assert main(["export", "--db", str(db), "--what", "trials", "--format", "csv", "--out", str(out)]) == 0
    lines = out.read_text().splitlines()
    assert lines[0].startswith("trajectory_id,task,") and len(lines) == info["trials"] + 1
    assert main(["export", "--db", str(db), "--what", "trials"]) == 0
    rows = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert len(rows) == info["trials"] and all(r["is_demo"] for r in rows)
    assert {r["condition"] for r in rows} == {"with-skills", "without-skills"}


FIXTURES = REPO / "tests" / "fixtures" / "checklists"


def test_validate_exit_codes_and_lines(skillsbench: Path, capsys: pytest.CaptureFixture[str]) -> None:
    task_dir = skillsbench / "tasks" / "citation-check"
    assert main(["validate", "--task-dir", str(task_dir), "--checklist", str(FIXTURES / "citation-check.yaml")]) == 0
    assert capsys.readouterr().out == ""
    bad = FIXTURES / "negative" / "g1_fabricated_quote.yaml"
    assert main(["validate", "--task-dir", str(task_dir), "--checklist", str(bad)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines and all(len(line.split(" ", 2)) == 3 for line in lines)
    assert any(line.split(" ")[1] == "G1" for line in lines)


def test_checklist_add_freezes_once_and_refuses_gate_failures(
    skillsbench: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "p.db"
    assert main(["import", "--tasks", str(skillsbench / "tasks" / "citation-check"), "--db", str(db), "--quiet"]) == 0
    good = str(FIXTURES / "citation-check.yaml")
    assert main(["checklist", "add", "--db", str(db), good]) == 0
    assert main(["checklist", "add", "--db", str(db), good]) == 0  # same content: same sha, no new version
    assert "v1 sha" in capsys.readouterr().out
    assert main(["checklist", "add", "--db", str(db), str(FIXTURES / "negative" / "g1_fabricated_quote.yaml")]) == 1
    assert "not frozen" in capsys.readouterr().err
    assert main(["export", "--db", str(db), "--what", "checklists"]) == 0
    rows = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert len(rows) == 1 and rows[0]["task"] == "citation-check" and rows[0]["version"] == 1
    assert {"items", "waivers", "source", "sha"} <= set(rows[0])


@pytest.mark.parametrize(
    "argv",
    [
        ["export", "--what", "trials"],
        ["checklist", "add", str(FIXTURES / "citation-check.yaml")],
    ],
)
def test_mistyped_db_is_refused_not_created(argv: list[str], tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "typo.db"
    full = argv[:2] + ["--db", str(db)] + argv[2:] if argv[0] == "checklist" else argv + ["--db", str(db)]
    assert main(full) == 2
    assert "no such project DB" in capsys.readouterr().err
    assert not db.exists()
