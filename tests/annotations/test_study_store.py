"""The annotations store: append-only history, idempotent submits, and concurrent writers."""

from __future__ import annotations

import sqlite3
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from study_helpers import small_project

from annotations import create_study, item_audit_history, item_audits, open_rater_session, record_item_audit
from annotations.design import DesignParams
from gcpc_core.store import Store


def study_with_raters(store: Store, raters: tuple[str, ...] = ("ann", "ben", "cat", "dov"), k: int = 2):
    small_project(store, tasks=2, per_stratum=2)
    created = create_study(store, DesignParams(tasks=None, per_task=8, raters_per_unit=k, seed=4, raters=raters,
                                               pairs_per_task=4))
    return created


def test_edits_supersede_and_keep_history(store: Store) -> None:
    created = study_with_raters(store)
    s = open_rater_session(store, created.tokens["ann"])
    unit = s.queue()[0].target
    first = s.submit_rating(unit, 2, note="first look")
    second = s.submit_rating(unit, 4, note="after reading the output")
    assert first.created and second.created and second.row["supersedes"] == first.row["id"]
    assert [h["value"]["rating"] for h in s.history("progress_rating", unit)] == [2, 4]
    assert s.answer("progress_rating", unit)["note"] == "after reading the output"
    current = store.annotations.list(study_id=created.study_id, rater="ann")
    assert [r["value"]["rating"] for r in current] == [4]
    assert len(store.annotations.list(study_id=created.study_id, current=False)) == 2


def test_double_submit_and_refresh_resend_store_one_row(store: Store) -> None:
    created = study_with_raters(store)
    s = open_rater_session(store, created.tokens["ben"])
    unit = s.queue()[0].target
    a = s.submit_rating(unit, 3, client_token="tok-1")
    b = s.submit_rating(unit, 3, client_token="tok-1")  # double click
    c = s.submit_rating(unit, 3)  # a refreshed page re-sends the same answer with a new token
    assert a.created and not b.created and not c.created
    assert b.row["id"] == a.row["id"] == c.row["id"]
    assert store.project.counts()["annotations"] == 1
    with pytest.raises(ValueError, match="different annotation"):
        s.submit_rating(s.queue()[1].target, 3, client_token="tok-1")


def test_annotations_are_append_only_in_sql(store: Store) -> None:
    created = study_with_raters(store)
    s = open_rater_session(store, created.tokens["ann"])
    s.submit_rating(s.queue()[0].target, 3)
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        store.db.execute("UPDATE annotations SET note = 'tampered'")
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        store.db.execute("DELETE FROM annotations")
    store.db.conn.rollback()


def test_concurrent_raters_lose_and_duplicate_nothing(tmp_path: Path) -> None:
    """Eight raters answer their whole queues at once, each answer double-submitted from two threads."""
    path = tmp_path / "concurrent.db"
    raters = tuple(f"r{i}" for i in range(8))
    created = study_with_raters(Store(path), raters=raters, k=4)
    store = Store(path)  # one Store shared by every thread, as the app does; a connection per thread
    jobs = []
    for rater, token in created.tokens.items():
        for item in open_rater_session(store, token).queue():
            jobs.append((token, item, f"{rater}:{item.target}"))
    barrier = threading.Barrier(16)

    def answer(job: tuple) -> bool:
        token, item, client_token = job
        s = open_rater_session(store, token)
        if item.kind == "progress_rating":
            return s.submit_rating(item.target, 1 + len(client_token) % 5, client_token=client_token).created
        return s.submit_preference(item.target, "A", 2, client_token=client_token).created

    def start(job: tuple) -> bool:
        try:
            barrier.wait(timeout=5)
        except threading.BrokenBarrierError:
            pass
        return answer(job)

    with ThreadPoolExecutor(max_workers=16) as pool:
        results = list(pool.map(start, jobs + jobs))  # every answer submitted twice, concurrently
    assert sum(results) == len(jobs)  # exactly one of each double submit wrote a row
    rows = store.annotations.list(study_id=created.study_id, current=False)
    assert len(rows) == len(jobs)
    assert len({r["client_token"] for r in rows}) == len(jobs)
    assert {r["client_token"] for r in rows} == {j[2] for j in jobs}


def test_concurrent_edits_by_one_rater_form_one_chain(tmp_path: Path) -> None:
    path = tmp_path / "edits.db"
    created = study_with_raters(Store(path))
    store = Store(path)
    s = open_rater_session(store, created.tokens["cat"])
    unit = s.queue()[0].target
    ratings = [1 + i % 5 for i in range(40)]

    def edit(i: int) -> None:
        open_rater_session(store, created.tokens["cat"]).submit_rating(unit, ratings[i], note=f"v{i}")

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(edit, range(len(ratings))))
    history = store.annotations.list(study_id=created.study_id, rater="cat", current=False)
    assert len(history) == len(ratings)  # every distinct edit kept
    assert [r["supersedes"] for r in history] == [None] + [r["id"] for r in history[:-1]]  # a chain, no fork
    assert len(store.annotations.list(study_id=created.study_id, rater="cat")) == 1


def test_item_audits_share_the_store(store: Store) -> None:
    small_project(store, tasks=1, per_stratum=1)
    traj = store.trials.trajectories()[0].id
    row, created = record_item_audit(store, trajectory_id=traj, item_id="C1", judge="gcpc", reviewer="alice",
                                     agree=True, client_token="audit-1")
    again, created_again = record_item_audit(store, trajectory_id=traj, item_id="C1", judge="gcpc",
                                             reviewer="alice", agree=True, client_token="audit-1")
    assert created and not created_again and again["id"] == row["id"]
    record_item_audit(store, trajectory_id=traj, item_id="C1", judge="gcpc", reviewer="alice", agree=False,
                      corrected_verdict="No", note="the file is empty")
    record_item_audit(store, trajectory_id=traj, item_id="C1", judge="gcpc", reviewer="bob", agree=True)
    history = item_audit_history(store, trajectory_id=traj, item_id="C1", judge="gcpc")
    assert [(h["rater"], h["value"]["agree"]) for h in history] == [("alice", True), ("alice", False), ("bob", True)]
    current = item_audits(store, trajectory_id=traj)
    assert {(r["rater"], r["value"]["verdict"]) for r in current} == {("alice", "No"), ("bob", None)}
    assert current[0]["task"] == "task-0" and store.project.counts()["annotations"] == 3
    with pytest.raises(ValueError, match="corrected verdict"):
        record_item_audit(store, trajectory_id=traj, item_id="C1", judge="gcpc", reviewer="x", agree=False)
