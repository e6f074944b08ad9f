"""Checklist versions as the checklists repository stores and reads them back: typed rows, versions per
task, the failed-to-frozen promotion, JSON columns round-tripped, and rows edited outside GCPC."""

from __future__ import annotations

import sqlite3

import pytest

from gcpc_core.models import Task
from gcpc_core.store import ChecklistRow, Store, StoredRowError

CHECKLIST = {
    "task": "t1", "source": "human:alice",
    "items": [{"id": "C1", "route": "generated", "text": "out.txt says « done »", "task_quote": "Write done."}],
    "waivers": [],
}


@pytest.fixture
def tasks(store: Store) -> Store:
    for tid in ("t1", "t2"):
        store.trials.upsert_task(Task(id=tid, instruction="Write done.", source_path=f"/tasks/{tid}"))
    return store


def _add(store: Store, sha: str, *, task: str = "t1", status: str = "frozen", **extra: object) -> ChecklistRow:
    fields = {"source": "human:alice", "checklist": CHECKLIST, "rules_version": "r1", "created_by": "test", **extra}
    return store.checklists.add(ChecklistRow(sha=sha, task=task, status=status, **fields))  # type: ignore[arg-type]


def test_a_stored_checklist_reads_back_as_its_row(tasks: Store) -> None:
    row = _add(tasks, "a" * 64, model=None, prompt_version=None, run_id=None)
    assert isinstance(row, ChecklistRow) and row == tasks.checklists.get("a" * 64)
    assert (row.sha, row.task, row.version, row.status, row.source) == ("a" * 64, "t1", 1, "frozen", "human:alice")
    assert row.checklist == CHECKLIST and row.gate_failures == [] and row.attempts == []
    assert (row.rules_version, row.created_by, row.reason, row.raw_reply) == ("r1", "test", None, None)
    assert row.created_at


def test_failed_rows_keep_their_failures_attempts_and_reply(tasks: Store) -> None:
    failures = [{"item_id": "C1", "gate": "G1", "message": "task quote not found verbatim"}]
    attempts = [{"attempt": "first", "problems": ["G1"]}, {"attempt": "repair", "problems": ["G1"]}]
    row = _add(tasks, "f" * 64, status="failed", checklist=None, gate_failures=failures, attempts=attempts,
               reason="gates failed after repair", raw_reply="{not json", model="llm-1", prompt_version="s1",
               source="llm:llm-1")
    again = tasks.checklists.get("f" * 64)
    assert again == row and (row.status, row.checklist, row.raw_reply) == ("failed", None, "{not json")
    assert row.gate_failures == failures and row.attempts == attempts and row.reason == "gates failed after repair"


def test_versions_count_per_task_and_latest_is_the_highest_frozen(tasks: Store) -> None:
    _add(tasks, "1" * 64)
    _add(tasks, "2" * 64, task="t2")
    _add(tasks, "3" * 64)
    _add(tasks, "4" * 64, status="failed", checklist=None)
    assert [(r.task, r.version) for r in tasks.checklists.list()] == [("t1", 1), ("t1", 2), ("t1", 3), ("t2", 1)]
    assert tasks.checklists.latest("t1").sha == "3" * 64
    assert tasks.checklists.latest("t1", status=None).sha == "4" * 64
    assert [r.sha for r in tasks.checklists.list(task="t1", status="failed")] == ["4" * 64]
    assert [r.version for r in tasks.checklists.list(status="frozen")] == [1, 2, 1]
    assert tasks.checklists.frozen_tasks() == {"t1", "t2"}


def test_unknown_shas_and_tasks_are_none_or_empty(tasks: Store) -> None:
    assert tasks.checklists.get("0" * 64) is None and tasks.checklists.latest("t1") is None
    assert tasks.checklists.list() == [] and tasks.checklists.frozen_tasks() == set()
    _add(tasks, "5" * 64, status="failed", checklist=None)
    assert tasks.checklists.latest("t1") is None and tasks.checklists.latest("nope", status=None) is None
    assert tasks.checklists.frozen_tasks() == set()


def test_storing_the_same_content_again_returns_the_stored_row(tasks: Store) -> None:
    first = _add(tasks, "6" * 64, created_by="alice")
    again = _add(tasks, "6" * 64, created_by="bob", rules_version="r2")
    assert again == first and again.created_by == "alice" and len(tasks.checklists.list()) == 1


def test_a_failed_row_is_promoted_when_the_same_content_passes(tasks: Store) -> None:
    _add(tasks, "0" * 64)  # version 1
    failed = _add(tasks, "7" * 64, status="failed", reason="G2 under rules r1", checklist=CHECKLIST)
    promoted = _add(tasks, "7" * 64, rules_version="r2", created_by="bob")
    assert (failed.version, promoted.version, promoted.status) == (2, 2, "frozen")
    assert (promoted.rules_version, promoted.created_by, promoted.reason) == ("r2", "bob", None)
    assert len(tasks.checklists.list()) == 2


def test_a_frozen_row_stays_frozen_when_the_same_content_fails_later(tasks: Store) -> None:
    frozen = _add(tasks, "8" * 64)
    assert _add(tasks, "8" * 64, status="failed", reason="new rules") == frozen


def test_an_unknown_status_is_refused_and_nothing_is_stored(tasks: Store) -> None:
    with pytest.raises(ValueError, match=r"status\n  Input should be 'frozen' or 'failed'"):  # by the row
        _add(tasks, "9" * 64, status="draft")
    assert tasks.checklists.list(status=None) == []


def test_a_frozen_row_cannot_be_changed_outside_gcpc(tasks: Store) -> None:
    _add(tasks, "a" * 64)
    with pytest.raises(sqlite3.IntegrityError, match="checklist is frozen"), tasks.atomic() as db:
        db["checklists"].update("a" * 64, {"source": "human:mallory"})
    assert tasks.checklists.get("a" * 64).source == "human:alice"


def test_a_row_edited_outside_gcpc_with_a_bad_status_is_refused_when_read(tasks: Store) -> None:
    _add(tasks, "b" * 64, status="failed", checklist=None)
    with tasks.atomic() as db:
        db["checklists"].update("b" * 64, {"status": "approved"})
    with pytest.raises(StoredRowError, match="status"):
        tasks.checklists.get("b" * 64)
    with pytest.raises(StoredRowError, match="status"):
        tasks.checklists.list(status=None)


def test_a_row_whose_checklist_is_no_json_object_is_refused_when_read(tasks: Store) -> None:
    _add(tasks, "c" * 64, status="failed")
    with tasks.atomic() as db:
        db["checklists"].update("c" * 64, {"checklist": '["C1"]'})
    with pytest.raises(StoredRowError, match="checklist"):
        tasks.checklists.latest("t1", status=None)
    with tasks.atomic() as db:
        db["checklists"].update("c" * 64, {"checklist": "items: [C1]"})  # YAML, not JSON
    with pytest.raises(ValueError):
        tasks.checklists.get("c" * 64)
