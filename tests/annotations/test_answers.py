"""Answers through their policies: a rater session's edits and what it shows of them, and item audits
(the store's own behaviour, concurrency included, is tested in tests/store/test_annotations.py)."""

from __future__ import annotations

import pytest
from study_helpers import small_project

from annotations import CreatedStudy, create_study, item_audit_history, item_audits, open_rater_session, record_item_audit
from annotations.design import DesignParams
from gcpc_core.store import Store


def study_with_raters(store: Store) -> CreatedStudy:
    small_project(store, tasks=2, per_stratum=2)
    return create_study(store, DesignParams(tasks=None, per_task=8, raters_per_unit=2, seed=4,
                                            raters=("ann", "ben", "cat", "dov"), pairs_per_task=4))


def test_edits_supersede_and_keep_history(store: Store) -> None:
    created = study_with_raters(store)
    s = open_rater_session(store, created.tokens["ann"])
    unit = s.queue()[0].target
    first = s.submit_rating(unit, 2, note="first look")
    second = s.submit_rating(unit, 4, note="after reading the output")
    assert first.created and second.created and second.row.supersedes == first.row.id
    history = s.history("progress_rating", unit)
    assert [(h.value["rating"], h.note) for h in history] == [(2, "first look"), (4, "after reading the output")]
    assert s.answer("progress_rating", unit) == history[-1]
    current = store.annotations.list(study_id=created.study_id, rater="ann")
    assert [r.value["rating"] for r in current] == [4]
    assert len(store.annotations.list(study_id=created.study_id, current=False)) == 2


def test_item_audits_share_the_store(store: Store) -> None:
    small_project(store, tasks=1, per_stratum=1)
    traj = store.trials.trajectories()[0].id
    row, created = record_item_audit(store, trajectory_id=traj, item_id="C1", judge="gcpc", reviewer="alice",
                                     agree=True, client_token="audit-1")
    again, created_again = record_item_audit(store, trajectory_id=traj, item_id="C1", judge="gcpc",
                                             reviewer="alice", agree=True, client_token="audit-1")
    assert created and not created_again and again.id == row.id
    record_item_audit(store, trajectory_id=traj, item_id="C1", judge="gcpc", reviewer="alice", agree=False,
                      corrected_verdict="No", note="the file is empty")
    record_item_audit(store, trajectory_id=traj, item_id="C1", judge="gcpc", reviewer="bob", agree=True)
    history = item_audit_history(store, trajectory_id=traj, item_id="C1", judge="gcpc")
    assert [(h.rater, h.value["agree"]) for h in history] == [("alice", True), ("alice", False), ("bob", True)]
    current = item_audits(store, trajectory_id=traj)
    assert {(r.rater, r.value["verdict"]) for r in current} == {("alice", "No"), ("bob", None)}
    assert current[0].task == "task-0" and store.project.counts()["annotations"] == 3
    with pytest.raises(ValueError, match="corrected verdict"):
        record_item_audit(store, trajectory_id=traj, item_id="C1", judge="gcpc", reviewer="x", agree=False)
