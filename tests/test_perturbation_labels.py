"""Evidence-sensitivity results per labelled judge run in the project DB: a DB written by the previous schema
(perturbations keyed by their setting id alone) is carried forward by migration m1702, every row kept under
the label of the run it perturbed, and the table's key then keeps two runs' results with the same id apart."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError
from sqlite_utils import Database

from gcpc_core.store import MIGRATIONS, PerturbationRow, Store, derive_label

RULES = "abcdef0123456789"
EARLY, PERTURBED, LATE = "2026-01-01T00:00:00+00:00", "2026-01-02T00:00:00+00:00", "2026-01-03T00:00:00+00:00"
DERIVED = derive_label("probe", None, "probe-v1", RULES)
JSON_COLUMNS = ("recipe", "original_citations", "citations", "replies")


def _perturbation(pid: str, traj: str, *, model: str | None = None, sha: str = "sha1") -> dict:
    return {"id": pid, "run_id": "run-p", "trajectory_id": traj, "task": "t", "judge": "probe", "item_id": "C1",
            "route": "generated", "checklist_sha": sha, "model": model, "prompt_version": "probe-v1",
            "rules_version": RULES, "seed": 0, "scope": "cited", "status": "judged", "kind": "number",
            "recipe": '{"events": [], "still_in": []}', "original_verdict": "Yes", "original_citations": "[]",
            "verdict": "No", "reason": None, "citations": "[]", "rationale": "r", "replies": "[]",
            "created_at": PERTURBED}


def _decoded(pid: str, traj: str) -> dict:
    """A perturbation as the code hands it to the store: JSON columns as values."""
    return {k: json.loads(v) if k in JSON_COLUMNS else v for k, v in _perturbation(pid, traj).items()}


def _old_db(path: Path) -> None:
    """A project DB at the schema before perturbation labels (labelled judge runs already in), rows written
    as that code wrote them."""
    db = Database(path)
    MIGRATIONS.apply(db, stop_before="m1702_perturbation_labels")
    assert "label" not in db["perturbations"].columns_dict and "label" in db["judgments"].columns_dict
    db["tasks"].insert({"id": "t", "instruction": "do it", "source_path": "/t", "verifier_files": "{}", "tests": "[]",
                        "parse_errors": "[]",
                        "metadata": "{}", "imported_at": EARLY})
    for traj in ("t__1", "t__2", "t__3"):
        db["trajectories"].insert({"id": traj, "task": "t", "outcome": "PASS", "condition": "with-skills",
                                   "source_path": f"/{traj}", "log_format": "gcpc-jsonl", "content_hash": "h",
                                   "is_demo": 0, "ctrf": "[]", "timings": "{}", "tokens": "{}", "imported_at": EARLY})
    # t__1: the derived run, perturbed; a named run of the same setting judged after the perturbation
    # t__2: a named run judged before the perturbation (the default then) and the derived run judged earlier
    # t__3: no unit with the perturbation's checklist any more: the label derives from the row itself
    units = [("t__1", DERIVED, EARLY), ("t__1", "named-later", LATE), ("t__2", DERIVED, EARLY),
             ("t__2", "named-before", PERTURBED), ("t__3", "other-checklist", EARLY)]
    for traj, label, at in units:
        db["judge_units"].insert({"trajectory_id": traj, "judge": "probe", "label": label, "task": "t",
                                  "checklist_sha": "sha2" if label == "other-checklist" else "sha1", "model": None,
                                  "prompt_version": "probe-v1", "rules_version": RULES, "run_id": "run-j",
                                  "content_hash": "h", "n_items": 1, "citations": "[]", "created_at": at})
    db["perturbations"].insert_all([_perturbation("p1", "t__1"), _perturbation("p2", "t__2"),
                                    _perturbation("p3", "t__3")])
    db.conn.commit()
    db.close()


@pytest.fixture
def migrated(tmp_path: Path) -> Store:
    path = tmp_path / "old.db"
    _old_db(path)
    return Store(path)


def test_migration_keeps_every_perturbation_under_the_run_it_perturbed(migrated: Store) -> None:
    db = migrated.db
    assert not MIGRATIONS.pending(db)
    assert db["perturbations"].pks == ["id", "label"]
    assert [fk.other_table for fk in db["perturbations"].foreign_keys] == ["trajectories"]
    assert db.execute("PRAGMA foreign_key_check").fetchall() == []
    rows = {r.id: r for r in migrated.perturbations.list(all_labels=True)}
    assert {pid: r.label for pid, r in rows.items()} == {"p1": DERIVED, "p2": "named-before", "p3": DERIVED}
    for pid, traj in (("p1", "t__1"), ("p2", "t__2"), ("p3", "t__3")):  # every column kept as it was written
        written = _decoded(pid, traj)
        assert {k: getattr(rows[pid], k) for k in written} == written


def test_after_the_migration_two_runs_keep_their_results_with_the_same_id(migrated: Store) -> None:
    row = {**_decoded("p1", "t__1"), "label": "named-later", "verdict": "Yes", "created_at": LATE}
    migrated.perturbations.save(PerturbationRow(**row))
    both = migrated.perturbations.list(all_labels=True)
    assert {r.label: r.verdict for r in both if r.id == "p1"} == {DERIVED: "No", "named-later": "Yes"}
    migrated.perturbations.save(PerturbationRow(**{**row, "verdict": "Abstain"}))  # the same run and setting again: replaced
    assert len(migrated.perturbations.list(all_labels=True)) == 4
    assert [r.verdict for r in migrated.perturbations.list(labels={"probe": "named-later"})] == ["Abstain"]
    with pytest.raises(ValueError, match="names no judge run label"):
        migrated.perturbations.save(PerturbationRow(**{**row, "label": ""}))
    with pytest.raises(ValidationError, match="label"):
        PerturbationRow(**{**row, "label": None})
