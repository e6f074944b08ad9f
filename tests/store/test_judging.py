"""Labelled judge runs in the project DB: a DB written by the previous schema is carried forward by
migration m1701 (every judgment, score, reply and audit kept, each under the label derived from what it
recorded), several labelled runs of one judge coexist, reads default to each judge's most recent
non-simulated run, and a rerun under the same label replaces that label's rows."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from sqlite_utils import Database

from annotations.audits import item_audit_history, item_audits, record_item_audit
from gcpc_core.analysis.audits import audits_frame
from gcpc_core.judge import score_project
from gcpc_core.store import MIGRATIONS, JudgeUnitRow, JudgmentRow, Store, derive_label

NOW = "2026-01-01T00:00:00+00:00"
LATER = "2026-01-02T00:00:00+00:00"
RULES = "abcdef0123456789"
PROBE_LABEL = derive_label("probe", None, "probe-v1", RULES)
GCPC_LABEL = derive_label("gcpc", "model-a", "items-v3", RULES)


def _old_db(path: Path) -> None:
    """A project DB at the schema before labels: every migration up to m1701, rows written as that code wrote them."""
    db = Database(path)
    MIGRATIONS.apply(db, stop_before="m1701_judge_labels")
    assert "label" not in db["judgments"].columns_dict
    db["tasks"].insert({"id": "t", "instruction": "do it", "source_path": "/t", "verifier_files": "{}", "tests": "[]",
                        "parse_errors": "[]", "metadata": "{}", "imported_at": NOW})
    for traj, outcome in (("t__1", "PASS"), ("t__2", "FAIL")):
        db["trajectories"].insert({"id": traj, "task": "t", "outcome": outcome, "condition": "with-skills",
                                   "source_path": f"/{traj}", "log_format": "gcpc-jsonl", "content_hash": "h", "is_demo": 0,
                                   "agent": "claude-code", "model": "m", "log_path": "log.jsonl", "trial_index": 0,
                                   "ctrf": "[]", "timings": "{}", "tokens": "{}", "imported_at": NOW})
    units = [("t__1", "probe", None, "probe-v1"), ("t__2", "probe", None, "probe-v1"), ("t__1", "gcpc", "model-a", "items-v3")]
    for traj, judge, model, prompt in units:
        common = {"trajectory_id": traj, "judge": judge, "task": "t", "checklist_sha": "sha1", "model": model,
                  "prompt_version": prompt, "rules_version": RULES, "run_id": f"run-{judge}", "created_at": NOW}
        db["judge_units"].insert({**common, "content_hash": "h", "n_items": 2, "citations": "[]"})
        for pos, (item, verdict) in enumerate((("C1", "Yes"), ("C2", "No"))):
            db["judgments"].insert({**common, "item_id": item, "position": pos, "route": "generated",
                                    "verdict_raw": verdict, "verdict": verdict, "citations": "[]", "scored_at": NOW})
        db["judge_replies"].insert({"trajectory_id": traj, "judge": judge, "run_id": f"run-{judge}", "attempt": "first",
                                    "status": "ok", "problems": "[]", "created_at": NOW})
        db["scores"].insert({k: v for k, v in common.items() if k != "created_at"} | {
            "outcome": "PASS" if traj == "t__1" else "FAIL", "partial_credit": 0.5, "scored_at": NOW})
    audit = {"kind": "item_audit", "task": "t", "trajectory_id": "t__1", "item_id": "C2", "judge": "probe",
             "target": "t__1|C2|probe", "rater": "alice", "source": "app", "is_simulated": 0}
    db["annotations"].insert({**audit, "id": 1, "value": json.dumps({"agree": True, "verdict": None}),
                              "created_at": NOW, "client_token": "tok1"})
    db["annotations"].insert({**audit, "id": 2, "value": json.dumps({"agree": False, "verdict": "Yes"}),
                              "created_at": LATER, "client_token": "tok2", "supersedes": 1})
    db["annotations"].insert({"id": 3, "kind": "item_audit", "task": "t", "trajectory_id": "t__2", "item_id": "C1",
                              "judge": "holistic", "target": "t__2|C1|holistic", "rater": "bob",
                              "value": json.dumps({"agree": True, "verdict": None}), "created_at": NOW,
                              "client_token": "tok3", "source": "app", "is_simulated": 0})
    db.conn.commit()
    db.close()


@pytest.fixture
def migrated(tmp_path: Path) -> Store:
    path = tmp_path / "old.db"
    _old_db(path)
    return Store(path)


def test_migration_keeps_every_row_under_its_derived_label(migrated: Store) -> None:
    db = migrated.db
    assert migrated.schema_version == len(MIGRATIONS.applied(db)) and not MIGRATIONS.pending(db)
    assert {t: db[t].count for t in ("judge_units", "judgments", "scores", "judge_replies", "annotations")} == {
        "judge_units": 3, "judgments": 6, "scores": 3, "judge_replies": 3, "annotations": 3}
    assert db["judgments"].pks == ["trajectory_id", "judge", "label", "item_id"]
    assert db["judge_units"].pks == ["trajectory_id", "judge", "label"]
    assert db["scores"].pks == ["trajectory_id", "judge", "label"]
    for table in ("judge_units", "judgments", "scores"):  # the rebuilt tables keep their trajectory foreign key
        assert [fk.other_table for fk in db[table].foreign_keys] == ["trajectories"]
    assert db.execute("PRAGMA foreign_key_check").fetchall() == []
    for table in ("judge_units", "judgments", "scores", "judge_replies"):
        labels = {(r["judge"], r["label"]) for r in db[table].rows}
        assert labels == {("probe", PROBE_LABEL), ("gcpc", GCPC_LABEL)}, table
    assert {(r.judge, r.label): r.n_trajectories for r in migrated.judging.labels()} == {
        ("probe", PROBE_LABEL): 2, ("gcpc", GCPC_LABEL): 1}
    assert migrated.judging.default_labels() == {"probe": PROBE_LABEL, "gcpc": GCPC_LABEL}
    assert [r.verdict_raw for r in migrated.judging.judgments(judge="probe", trajectory_id="t__1")] == ["Yes", "No"]
    assert len(migrated.judging.scores()) == 3


def test_migration_attaches_audits_to_the_run_they_were_made_on(migrated: Store) -> None:
    rows = {r.id: r for r in migrated.annotations.list(kind="item_audit", current=False, all_labels=True)}
    assert rows[1].label == rows[2].label == PROBE_LABEL
    assert rows[1].target == rows[2].target == f"t__1|C2|probe|{PROBE_LABEL}"
    assert rows[2].supersedes == 1 and rows[2].value == {"agree": False, "verdict": "Yes"}
    assert rows[3].label is None and rows[3].target == "t__2|C1|holistic"  # its judge had no run: unattached
    current = item_audits(migrated, trajectory_id="t__1", judge="probe")
    assert [a.id for a in current] == [2]
    history = item_audit_history(migrated, trajectory_id="t__1", item_id="C2", judge="probe")
    assert [h.id for h in history] == [1, 2]
    # the same reviewer's next audit continues the migrated chain
    row, written = record_item_audit(migrated, trajectory_id="t__1", item_id="C2", judge="probe", reviewer="alice",
                                     agree=True)
    assert written and row.supersedes == 2 and row.label == PROBE_LABEL
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        migrated.db.execute("UPDATE annotations SET rater = 'mallory' WHERE id = 1")


def _unit(traj: str, label: str, verdicts: tuple[str, str], *, model: str,
          at: str) -> tuple[JudgeUnitRow, list[JudgmentRow]]:
    common = {"trajectory_id": traj, "judge": "probe", "label": label, "task": "t", "checklist_sha": "sha1",
              "model": model, "prompt_version": "probe-v1", "rules_version": RULES, "run_id": None, "created_at": at}
    unit = JudgeUnitRow(**common, content_hash="h", n_items=2, citations=[])
    items = [JudgmentRow(**common, item_id=item, position=k, route="generated", verdict_raw=v, verdict=v,
                         citations=[], scored_at=None) for k, (item, v) in enumerate(zip(("C1", "C2"), verdicts))]
    return unit, items


def test_labelled_runs_coexist_and_reads_default_to_the_most_recent(migrated: Store) -> None:
    for traj in ("t__1", "t__2"):
        unit, items = _unit(traj, "model-b", ("No", "No"), model="model-b", at=LATER)
        migrated.judging.save_trajectory_judgment(unit, items, [], named=True)
    assert migrated.judging.default_labels()["probe"] == "model-b"
    assert {r.label for r in migrated.judging.judgments(judge="probe")} == {"model-b"}
    assert len(migrated.judging.judgments(judge="probe", all_labels=True)) == 8
    counts = migrated.project.counts()  # `info`: each judge's chosen run, and every run
    assert (counts["judgments"], counts["judgments_all_runs"], counts["judge_runs"]) == (6, 10, 3)
    assert {r.label for r in migrated.judging.judgments(judge="probe", labels={"probe": PROBE_LABEL})} == {PROBE_LABEL}
    # the migrated audit stays with the run it checked, not with the new default
    assert audits_frame(migrated).query("judge == 'probe'").empty
    old = audits_frame(migrated, labels={"probe": PROBE_LABEL})
    assert list(old.query("judge == 'probe'")["label"]) == [PROBE_LABEL]

    score_project(migrated)  # every labelled run is scored
    scored = {(r.trajectory_id, r.label): r.partial_credit for r in migrated.judging.scores(judge="probe", all_labels=True)}
    assert scored[("t__1", "model-b")] == 0.0 and scored[("t__1", PROBE_LABEL)] == 0.5

    unit, items = _unit("t__1", "model-b", ("Yes", "Yes"), model="model-b", at=LATER)  # a rerun of the same label
    migrated.judging.save_trajectory_judgment(unit, items, [])
    rows = migrated.judging.judgments(judge="probe", trajectory_id="t__1", all_labels=True)
    assert sorted((r.label, r.verdict_raw) for r in rows) == sorted(
        [("model-b", "Yes"), ("model-b", "Yes"), (PROBE_LABEL, "Yes"), (PROBE_LABEL, "No")])


def test_a_simulated_run_is_never_the_default_over_a_judged_one(migrated: Store) -> None:
    unit, items = _unit("t__1", "simulated-b", ("No", "Yes"), model="sim", at=LATER)
    migrated.judging.save_trajectory_judgment(unit, items, [], simulated=True)
    assert migrated.judging.default_labels()["probe"] == PROBE_LABEL
    assert next(r for r in migrated.judging.labels() if r.label == "simulated-b").simulated


def test_resolve_labels_names_what_is_wrong(migrated: Store) -> None:
    assert migrated.judging.resolve_labels([GCPC_LABEL]) == {"gcpc": GCPC_LABEL}
    assert migrated.judging.resolve_labels([f"probe={PROBE_LABEL}"]) == {"probe": PROBE_LABEL}
    with pytest.raises(ValueError, match="no judge run labelled 'nope'.*probe="):
        migrated.judging.resolve_labels(["nope"])
    for traj, judge in (("t__1", "gcpc"), ("t__1", "probe")):
        unit, items = _unit(traj, "shared", ("Yes", "No"), model="m", at=LATER)
        migrated.judging.save_trajectory_judgment(unit.replaced(judge=judge), [i.replaced(judge=judge) for i in items], [])
    with pytest.raises(ValueError, match="several judges: write KIND=LABEL"):
        migrated.judging.resolve_labels(["shared"])
    assert migrated.judging.resolve_labels(["gcpc=shared"]) == {"gcpc": "shared"}


def test_a_batch_run_cannot_take_a_label(store: Store) -> None:
    from gcpc_core.judge import judge_project

    with pytest.raises(ValueError, match="--label is not available with --batch"):
        judge_project(store, judge="gcpc", batch=True, label="mine", progress=False)
