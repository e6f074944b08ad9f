"""The annotations repository: append-only rows, supersession chains, idempotent submits, the
assignment check inside the write, and concurrent writers, read back as typed rows."""

from __future__ import annotations

import sqlite3
import threading
from typing import Any
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from pydantic import ValidationError

from gcpc_core.store import AnnotationRow, Store, StoredRowError

from .study_rows import STUDY, UNITS, studied_store


def add(store: Store, **given: Any) -> tuple[AnnotationRow, bool]:
    """`AnnotationRepository.add` of the row the given columns make, with the given write options."""
    options = {k: given.pop(k) for k in ("assignment", "token_hash", "max_versions") if k in given}
    return store.annotations.add(AnnotationRow(**given), **options)


def rate(store: Store, rater: str, unit: str, rating: int, **given: object) -> tuple[AnnotationRow, bool]:
    """A progress rating as a rater session stores it: keyed by the trial, checked against the queue."""
    return add(store, kind="progress_rating", study_id=STUDY, target=UNITS[unit], rater=rater,
                                 value={"rating": rating}, task="task-a", trajectory_id=UNITS[unit], unit_id=unit,
                                 assignment=("progress_rating", unit), **given)


def audit(store: Store, rater: str, label: str | None, **given: object) -> AnnotationRow:
    row, _ = add(store, kind="item_audit", target=f"t1|C1|probe|{label}", rater=rater,
                                   value={"agree": True, "verdict": None}, trajectory_id="t1", item_id="C1",
                                   judge="probe", label=label, **given)
    return row


def test_add_returns_the_stored_row_typed_with_its_value_decoded(studied: Store) -> None:
    value = {"agree": False, "verdict": "No", "why": ["naïve", {"nested": 1.5}]}
    row, created = add(studied, kind="item_audit", target="t1|C1|probe", rater="alice", value=value,
                                           trajectory_id="t1", item_id="C1", judge="probe", note="see E3")
    assert created and isinstance(row, AnnotationRow)
    assert row.value == value  # JSON round trip
    assert (row.kind, row.rater, row.note, row.supersedes, row.source, row.is_simulated) == (
        "item_audit", "alice", "see E3", None, "app", False)
    assert isinstance(row.id, int) and len(row.client_token) == 32 and row.created_at.endswith("+00:00")
    assert studied.annotations.list() == [row]


def test_an_edit_supersedes_and_history_keeps_every_version(studied: Store) -> None:
    first, _ = rate(studied, "ann", "U1", 2, note="first look")
    second, _ = rate(studied, "ann", "U1", 4, note="after reading the output")
    third, _ = rate(studied, "ann", "U1", 3)
    other, _ = rate(studied, "ben", "U2", 5)
    assert (second.supersedes, third.supersedes, other.supersedes) == (first.id, second.id, None)
    history = studied.annotations.history(kind="progress_rating", study_id=STUDY, target="t1", rater="ann")
    assert [(h.value["rating"], h.note) for h in history] == [(2, "first look"), (4, "after reading the output"),
                                                              (3, None)]
    assert [r.id for r in studied.annotations.list(study_id=STUDY)] == [third.id, other.id]  # current only
    assert len(studied.annotations.list(study_id=STUDY, current=False)) == 4
    assert studied.annotations.history(kind="progress_rating", study_id=STUDY, target="t9", rater="ann") == []


def test_double_submit_and_refresh_resend_store_one_row(studied: Store) -> None:
    a, created_a = rate(studied, "ben", "U2", 3, client_token="tok-1")
    b, created_b = rate(studied, "ben", "U2", 3, client_token="tok-1")  # double click
    c, created_c = rate(studied, "ben", "U2", 3)  # a refreshed page re-sends the same answer with a new token
    assert created_a and not created_b and not created_c and a == b == c
    assert studied.project.counts()["annotations"] == 1
    _, created_d = rate(studied, "ben", "U2", 3, note="a comment is an edit")
    assert created_d and studied.project.counts()["annotations"] == 2
    with pytest.raises(ValueError, match="different annotation"):
        rate(studied, "ben", "U3", 3, client_token="tok-1")


def test_bad_input_is_refused_and_nothing_is_written(studied: Store) -> None:
    with pytest.raises(ValidationError, match="kind"):
        add(studied, kind="essay", target="t1", rater="ann", value={})
    with pytest.raises(ValueError, match="needs a rater"):
        add(studied, kind="item_audit", target="t1|C1|probe", rater="", value={})
    with pytest.raises(ValidationError, match="value"):
        add(studied, kind="item_audit", target="t1|C1|probe", rater="ann", value=["not", "a", "dict"])
    for given in ({"id": 7}, {"supersedes": 1}):
        with pytest.raises(ValueError, match="set by the store"):
            add(studied, kind="item_audit", target="t1|C1|probe", rater="ann", value={}, **given)
    assert studied.project.counts()["annotations"] == 0


def test_the_assignment_is_checked_inside_the_write(studied: Store) -> None:
    with pytest.raises(PermissionError, match="not in this rater's queue"):
        rate(studied, "ann", "U3", 1)  # U3 is ben's
    studied.studies.set_status(STUDY, "closed")
    with pytest.raises(PermissionError, match="not open"):
        rate(studied, "ann", "U1", 1)
    assert studied.project.counts()["annotations"] == 0


def test_list_filters_and_keeps_audits_of_the_chosen_run(studied: Store) -> None:
    rate(studied, "ann", "U1", 2)
    rate(studied, "ben", "U2", 4)
    unattached = audit(studied, "alice", None)
    of_run = audit(studied, "alice", "probe:run-1")
    assert [r.rater for r in studied.annotations.list(kind="progress_rating", rater="ben")] == ["ben"]
    assert [r.unit_id for r in studied.annotations.list(trajectory_id="t1", study_id=STUDY)] == ["U1"]
    assert [r.target for r in studied.annotations.list(target="t2")] == ["t2"]
    # no judge run is chosen in this project: only the audit naming no run is kept, unless asked for
    assert [r.id for r in studied.annotations.list(kind="item_audit")] == [unattached.id]
    assert [r.id for r in studied.annotations.list(kind="item_audit", labels={"probe": "probe:run-1"})] == [
        unattached.id, of_run.id]
    assert len(studied.annotations.list(kind="item_audit", all_labels=True)) == 2
    assert studied.annotations.list(study_id="nope") == []


def test_annotations_are_append_only_in_sql(studied: Store) -> None:
    rate(studied, "ann", "U1", 3)
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        studied.db.execute("UPDATE annotations SET note = 'tampered'")
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        studied.db.execute("DELETE FROM annotations")
    studied.db.conn.rollback()


@pytest.mark.parametrize(("value", "error", "match"), [
    ("{not json", ValueError, r"annotations\.value is not valid JSON"),
    ("[1, 2]", StoredRowError, "value"),
])
def test_a_row_written_outside_gcpc_is_refused_when_read(studied: Store, value: str, error: type[Exception],
                                                         match: str) -> None:
    with studied.atomic() as db:
        db["annotations"].insert({"kind": "item_audit", "target": "t1|C1|probe", "rater": "mallory", "value": value,
                                  "created_at": "2026-01-01T00:00:00+00:00", "client_token": "outside"})
    with pytest.raises(error, match=match):
        studied.annotations.list()


def test_concurrent_raters_lose_and_duplicate_nothing(tmp_path: Path) -> None:
    """Eight raters answer their whole queues at once, each answer double-submitted from two threads."""
    path = tmp_path / "concurrent.db"
    setup = studied_store(path)
    raters = [f"r{i}" for i in range(8)]
    for rater in raters:
        setup.studies.add_rater(STUDY, rater, token_hash=None)
        for n, unit in enumerate(UNITS):
            setup.studies.place_assignment(STUDY, rater=rater, kind="progress_rating", target=unit, position=n,
                                           reassigned_from=None)
    setup.close()
    store = Store(path)  # one Store shared by every thread, as the app does; a connection per thread
    jobs = [(rater, unit, f"{rater}:{unit}") for rater in raters for unit in UNITS]
    barrier = threading.Barrier(16)

    def answer(job: tuple[str, str, str]) -> bool:
        rater, unit, token = job
        try:
            barrier.wait(timeout=5)
        except threading.BrokenBarrierError:
            pass
        return rate(store, rater, unit, 1 + len(token) % 5, client_token=token)[1]

    with ThreadPoolExecutor(max_workers=16) as pool:
        results = list(pool.map(answer, jobs + jobs))  # every answer submitted twice, concurrently
    assert sum(results) == len(jobs)  # exactly one of each double submit wrote a row
    rows = store.annotations.list(study_id=STUDY, current=False)
    assert sorted(r.client_token for r in rows) == sorted(j[2] for j in jobs)


def test_concurrent_edits_by_one_rater_form_one_chain(tmp_path: Path) -> None:
    path = tmp_path / "edits.db"
    studied_store(path).close()
    store = Store(path)
    ratings = [1 + i % 5 for i in range(40)]

    def edit(i: int) -> None:
        rate(store, "ann", "U1", ratings[i], note=f"v{i}")

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(edit, range(len(ratings))))
    history = store.annotations.list(study_id=STUDY, rater="ann", current=False)
    assert len(history) == len(ratings)  # every distinct edit kept
    assert [r.supersedes for r in history] == [None] + [r.id for r in history[:-1]]  # a chain, no fork
    assert len(store.annotations.list(study_id=STUDY, rater="ann")) == 1


def test_a_save_with_a_replaced_token_is_refused_inside_the_write(studied: Store) -> None:
    rate(studied, "ann", "U1", 2, token_hash=f"hash-ann-{STUDY}")
    studied.studies.set_rater_token_hash(STUDY, "ann", "hash-of-a-new-link")
    with pytest.raises(PermissionError, match="this link no longer works"):
        rate(studied, "ann", "U1", 4, token_hash=f"hash-ann-{STUDY}")
    assert [r.value["rating"] for r in studied.annotations.list(study_id=STUDY, current=False)] == [2]


def test_max_versions_refuses_a_change_past_the_cap_and_keeps_the_history(studied: Store) -> None:
    for n in range(3):
        rate(studied, "ann", "U1", 1 + n % 5, max_versions=3)
    again, created = rate(studied, "ann", "U1", 3, max_versions=3)  # the same answer again: no change, no error
    assert not created
    with pytest.raises(ValueError, match="already has 3 saved versions"):
        rate(studied, "ann", "U1", 5, max_versions=3)
    chain = {"kind": "progress_rating", "study_id": STUDY, "target": "t1", "rater": "ann"}
    assert studied.annotations.versions(**chain) == 3
    assert [h.value["rating"] for h in studied.annotations.history(**chain)] == [1, 2, 3]
    assert studied.annotations.list(study_id=STUDY, rater="ann")[0].id == again.id  # the last version stands
    rate(studied, "ben", "U2", 5, max_versions=3)  # another rater's answer has its own count


def test_history_reads_one_page_newest_first(studied: Store) -> None:
    for n in range(7):
        rate(studied, "ann", "U1", 1 + n % 5)
    chain = {"kind": "progress_rating", "study_id": STUDY, "target": "t1", "rater": "ann"}
    every = studied.annotations.history(**chain)
    assert [h.id for h in studied.annotations.history(**chain, newest_first=True, limit=3)] == \
        [h.id for h in every[::-1][:3]]
    assert [h.id for h in studied.annotations.history(**chain, newest_first=True, limit=3, offset=6)] == [every[0].id]
