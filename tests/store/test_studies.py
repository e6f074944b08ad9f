"""The studies repository: frozen designs, units and pairs, raters (whose token hashes never leave the
store) and the assignment queues, read back as typed rows."""

from __future__ import annotations

import sqlite3

import pytest
from pydantic import ValidationError

from gcpc_core.store import Rater, Store, StoredRowError, StudyAssignmentRow, StudyPairRow, StudyRow, StudyUnitRow

from .study_rows import STUDY, insert_study, study_row


def test_a_stored_study_reads_back_typed_with_its_json_and_defaults(studied: Store) -> None:
    study = studied.studies.get(STUDY)
    assert isinstance(study, StudyRow)
    assert study.params == {"raters": ["ann", "ben"], "seed": 7}
    assert study.design["guidelines"] == {"scale": "1–5 ✓"}  # JSON round trip, non-ASCII kept
    assert (study.status, study.seed, study.is_simulated, study.created_by) == ("open", 7, False, None)
    assert study.created_at.endswith("+00:00")  # filled in when not given
    assert studied.studies.get("nope") is None
    assert [s.id for s in studied.studies.list()] == [STUDY]


def test_studies_are_listed_by_creation_time_then_id(studied: Store) -> None:
    insert_study(studied, "s0", raters=(), created_at="2000-01-01T00:00:00+00:00")
    insert_study(studied, "s2", raters=(), created_at="2000-01-01T00:00:00+00:00")
    assert [s.id for s in studied.studies.list()] == ["s0", "s2", STUDY]


def test_an_existing_study_id_is_refused_and_nothing_is_added(studied: Store) -> None:
    with pytest.raises(ValueError, match="already exists"):
        insert_study(studied)
    assert len(studied.studies.units(STUDY)) == 3 and len(studied.studies.assignments(STUDY)) == 5


def test_a_bad_row_in_a_design_stores_none_of_it(studied: Store) -> None:
    with pytest.raises(ValidationError, match="strata"):  # a unit with a column the table lacks
        StudyUnitRow(study_id="s9", unit_id="U1", trajectory_id="t1", task="task-a", stratum="x", strata="typo")
    with pytest.raises(ValueError, match="rows of study 's8' given with study 's9'"):  # a row of another study
        studied.studies.insert(study_row("s9"), pairs=[], raters=[], assignments=[],
                               units=[StudyUnitRow(study_id="s8", unit_id="U1", trajectory_id="t1", task="task-a")])
    with pytest.raises(sqlite3.IntegrityError):  # a unit of a trial the project does not have
        studied.studies.insert(study_row("s9"), pairs=[], raters=[], assignments=[],
                               units=[StudyUnitRow(study_id="s9", unit_id="U1", trajectory_id="ghost", task="task-a")])
    assert studied.studies.get("s9") is None and studied.studies.units("s9") == []


def test_units_and_pairs_are_typed_and_ordered(studied: Store) -> None:
    units = studied.studies.units(STUDY)
    assert all(isinstance(u, StudyUnitRow) for u in units)
    assert [(u.unit_id, u.trajectory_id) for u in units] == list({"U1": "t1", "U2": "t2", "U3": "t3"}.items())
    [pair] = studied.studies.pairs(STUDY)
    assert isinstance(pair, StudyPairRow) and (pair.left_unit, pair.right_unit) == ("U1", "U2")
    assert studied.studies.units("nope") == [] and studied.studies.pairs("nope") == []


def test_set_status_closes_and_refuses_an_unknown_status(studied: Store) -> None:
    studied.studies.set_status(STUDY, "closed")
    study = studied.studies.get(STUDY)
    assert study is not None and study.status == "closed"
    with pytest.raises(ValueError, match="open or closed"):
        studied.studies.set_status(STUDY, "paused")


def test_raters_never_carry_their_token_hash(studied: Store) -> None:
    raters = studied.studies.raters(STUDY)
    assert all(isinstance(r, Rater) for r in raters) and "token_hash" not in Rater.model_fields
    assert [(r.rater, r.has_token, r.is_simulated) for r in raters] == [("ann", True, False), ("ben", False, True)]
    assert not any("hash-ann" in str(v) for r in raters for v in r.model_dump().values())
    found = studied.studies.rater_by_token_hash(f"hash-ann-{STUDY}")
    assert found is not None and (found.study_id, found.rater) == (STUDY, "ann")
    assert "hash-ann" not in repr(found) and "hash-ann" not in found.model_dump_json()
    assert studied.studies.rater_by_token_hash("hash-nobody") is None


def test_add_rater_and_a_new_token(studied: Store) -> None:
    studied.studies.add_rater(STUDY, "cat", token_hash="hash-cat")
    cat = next(r for r in studied.studies.raters(STUDY) if r.rater == "cat")
    assert cat.has_token and cat.token_issued_at is not None and studied.studies.has_rater(STUDY, "cat")
    assert studied.studies.assignments(STUDY, rater="cat") == []  # an empty queue until items are moved
    with pytest.raises(ValueError, match="already belongs"):
        studied.studies.add_rater(STUDY, "cat", token_hash=None)
    studied.studies.set_rater_token_hash(STUDY, "cat", "hash-cat-2")
    assert studied.studies.rater_by_token_hash("hash-cat") is None  # the old link stops working
    found = studied.studies.rater_by_token_hash("hash-cat-2")
    assert found is not None and found.rater == "cat"
    with pytest.raises(KeyError, match="no rater 'dov'"):
        studied.studies.set_rater_token_hash(STUDY, "dov", "hash-dov")
    assert not studied.studies.has_rater(STUDY, "dov") and not studied.studies.has_rater("nope", "ann")


def test_assignments_by_rater_kind_and_position(studied: Store) -> None:
    rows = studied.studies.assignments(STUDY)
    assert all(isinstance(a, StudyAssignmentRow) and a.active for a in rows)
    assert [(a.rater, a.kind, a.target) for a in rows] == [
        ("ann", "progress_rating", "U1"), ("ann", "progress_rating", "U2"), ("ann", "preference", "P1"),
        ("ben", "progress_rating", "U2"), ("ben", "progress_rating", "U3")]
    assert [a.target for a in studied.studies.assignments(STUDY, rater="ben")] == ["U2", "U3"]
    assert studied.studies.assignment(STUDY, rater="ann", kind="preference", target="P1").position == 2
    assert studied.studies.assignment(STUDY, rater="ben", kind="preference", target="P1") is None
    assert studied.studies.last_position(STUDY, rater="ann", kind="progress_rating") == 1
    assert studied.studies.last_position(STUDY, rater="ben", kind="preference") is None


def test_deactivate_and_place_keep_one_row_per_item(studied: Store) -> None:
    studies = studied.studies
    assert studies.deactivate_assignment(STUDY, rater="ben", kind="progress_rating", target="U3")
    assert not studies.deactivate_assignment(STUDY, rater="ben", kind="progress_rating", target="U3")  # already off
    assert not studies.deactivate_assignment(STUDY, rater="ann", kind="progress_rating", target="U3")  # never held
    assert [a.target for a in studies.assignments(STUDY, rater="ben")] == ["U2"]
    assert [a.target for a in studies.assignments(STUDY, rater="ben", active=False)] == ["U3"]
    old = studies.assignment(STUDY, rater="ben", kind="progress_rating", target="U3")
    studies.place_assignment(STUDY, rater="ann", kind="progress_rating", target="U3", position=2,
                             reassigned_from="ben")
    moved = studies.assignment(STUDY, rater="ann", kind="progress_rating", target="U3")
    assert moved is not None and (moved.active, moved.position, moved.reassigned_from) == (True, 2, "ben")
    studies.place_assignment(STUDY, rater="ben", kind="progress_rating", target="U3", position=5, reassigned_from=None)
    back = studies.assignment(STUDY, rater="ben", kind="progress_rating", target="U3")
    assert old is not None and back is not None and back.id == old.id  # revived, not duplicated
    assert (back.active, back.position) == (True, 5) and len(studies.assignments(STUDY, active=None)) == 6


def test_require_assignment_checks_the_open_study_and_the_queue(studied: Store) -> None:
    with studied.atomic() as db:
        studied.studies.require_assignment(db, STUDY, "ann", "progress_rating", "U1")  # held: no error
        with pytest.raises(PermissionError, match="not in this rater's queue"):
            studied.studies.require_assignment(db, STUDY, "ann", "progress_rating", "U3")
        with pytest.raises(PermissionError, match="not open"):
            studied.studies.require_assignment(db, "nope", "ann", "progress_rating", "U1")
    studied.studies.set_status(STUDY, "closed")
    with studied.atomic() as db, pytest.raises(PermissionError, match="not open"):
        studied.studies.require_assignment(db, STUDY, "ann", "progress_rating", "U1")


@pytest.mark.parametrize(("table", "change", "error", "match"), [
    ("studies", {"status": "paused"}, StoredRowError, "status"),
    ("studies", {"params": "{not json"}, ValueError, r"studies\.params is not valid JSON"),
    ("study_raters", {"is_simulated": 7}, StoredRowError, "is_simulated"),
    ("study_assignments", {"kind": "essay"}, StoredRowError, "kind"),
])
def test_a_row_edited_outside_gcpc_is_refused_when_read(studied: Store, table: str, change: dict,
                                                        error: type[Exception], match: str) -> None:
    with studied.atomic() as db:
        db[table].update(next(iter(db[table].pks_and_rows_where(limit=1)))[0], change)
    read = {"studies": lambda: studied.studies.get(STUDY), "study_raters": lambda: studied.studies.raters(STUDY),
            "study_assignments": lambda: studied.studies.assignments(STUDY)}[table]
    with pytest.raises(error, match=match):
        read()


def test_require_assignment_with_a_token_hash_checks_it_is_still_the_raters(studied: Store) -> None:
    with studied.atomic() as db:
        studied.studies.require_assignment(db, STUDY, "ann", "progress_rating", "U1", token_hash=f"hash-ann-{STUDY}")
    studied.studies.set_rater_token_hash(STUDY, "ann", "hash-of-a-new-link")  # the link is replaced
    with studied.atomic() as db, pytest.raises(PermissionError, match="this link no longer works"):
        studied.studies.require_assignment(db, STUDY, "ann", "progress_rating", "U1", token_hash=f"hash-ann-{STUDY}")
