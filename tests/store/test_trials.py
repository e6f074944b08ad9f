"""Trials and events as the trials repository reads them back."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from gcpc_core.store import ImportIssueRow, Store, StoredRowError


def test_an_event_row_edited_outside_gcpc_is_refused_when_read(demo_copy: Path) -> None:
    store = Store(demo_copy)
    traj = store.trials.trajectories()[0]
    first = store.trials.events(traj.id)[0]  # the stored rows read back as events
    with store.atomic() as db:
        db["events"].update((traj.id, first.seq), {"kind": "bogus"})
    with pytest.raises(ValidationError, match="kind"):
        store.trials.events(traj.id)
    store.close()


def test_import_issues_read_back_as_typed_rows_in_the_order_recorded(store: Store) -> None:
    assert store.trials.import_issues() == []
    store.trials.record_import_issues([("/trials/b", "skipped", "no result.json"), ("/tasks/a", "skipped", "no tests")])
    store.trials.record_import_issues([("/trials/c", "skipped", "log: invalid UTF-8 at byte 12")])
    issues = store.trials.import_issues()
    assert all(isinstance(i, ImportIssueRow) for i in issues)
    assert [(i.path, i.kind, i.reason) for i in issues] == [
        ("/trials/b", "skipped", "no result.json"), ("/tasks/a", "skipped", "no tests"),
        ("/trials/c", "skipped", "log: invalid UTF-8 at byte 12")]
    assert issues[0].run_at == issues[1].run_at and [i.id for i in issues] == sorted(i.id for i in issues)


def test_an_import_issue_row_without_its_reason_is_refused_when_read(store: Store) -> None:
    store.trials.record_import_issues([("/trials/b", "skipped", "no result.json")])
    with store.atomic() as db:
        db["import_issues"].update(store.trials.import_issues()[0].id, {"reason": None})
    with pytest.raises(StoredRowError, match="reason"):
        store.trials.import_issues()


def test_events_skipped_by_kind_are_not_read_and_an_unknown_kind_is_still_refused(demo_copy: Path) -> None:
    store = Store(demo_copy)
    traj = store.trials.trajectories()[0]
    every = store.trials.events(traj.id)
    narration = {"agent_message", "agent_thinking", "system", "user"}
    evidence = store.trials.events(traj.id, skip_kinds=narration)
    assert evidence == [e for e in every if e.kind not in narration] and len(evidence) < len(every)
    with store.atomic() as db:  # NULLs written by hand read as the model's defaults
        db["events"].update((traj.id, evidence[0].seq), {"is_error": None, "source": None})
    assert store.trials.events(traj.id)[every.index(evidence[0])] == evidence[0].model_copy(
        update={"is_error": False, "source": ""})
    with store.atomic() as db:
        db["events"].update((traj.id, evidence[-1].seq), {"kind": "bogus"})
    with pytest.raises(ValidationError, match="kind"):
        store.trials.events(traj.id, skip_kinds=narration)
    store.close()


def test_trajectory_refs_are_the_trajectories_id_task_and_hash_in_the_same_order(demo_copy: Path) -> None:
    store = Store(demo_copy)
    full = store.trials.trajectories()
    assert [(r.id, r.task, r.content_hash) for r in store.trials.trajectory_refs()] == [
        (t.id, t.task, t.content_hash) for t in full]
    with store.atomic() as db:  # a row from before hashes were stored
        db.execute("UPDATE trajectories SET content_hash = NULL WHERE id = ?", [full[0].id])
    assert store.trials.trajectory_refs()[0].content_hash == "" == store.trials.trajectories()[0].content_hash
