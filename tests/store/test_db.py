from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from gcpc_core.models import Event, Task, Trajectory
from gcpc_core.store import Store

from .helpers import replace_trajectory


def _task(tid: str = "t1") -> Task:
    return Task(id=tid, instruction="Do it.", source_path=f"/tasks/{tid}")


def _traj(tid: str, task: str = "t1") -> Trajectory:
    return Trajectory(
        id=tid, task=task, agent="a", model="m", outcome="PASS", reward=1.0,
        source_path=f"/trials/{tid}", log_path="agent/claude-code.txt", log_format="claude-code",
    )


def _events(n: int) -> list[Event]:
    return [Event(id=f"E{i}", seq=i, kind="tool_output", text=f"out {i}") for i in range(1, n + 1)]


def test_pragmas_and_schema_version(store: Store) -> None:
    assert store.db.journal_mode == "wal"
    assert store.db.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert store.schema_version >= 1
    again = Store(store.path)  # reopening applies no migration twice
    assert again.schema_version == store.schema_version


def test_round_trip_and_replace(store: Store) -> None:
    store.trials.upsert_task(_task())
    replace_trajectory(store, _traj("x"), _events(3))
    assert [e.id for e in store.trials.events("x")] == ["E1", "E2", "E3"]
    replace_trajectory(store, _traj("x"), _events(2))
    assert [e.id for e in store.trials.events("x")] == ["E1", "E2"]
    got = store.trials.get_trajectory("x")
    assert got is not None and got.model_dump() | {"content_hash": ""} == _traj("x").model_dump()


def test_foreign_key_rejects_unknown_task_and_leaves_nothing(store: Store) -> None:
    with pytest.raises(sqlite3.IntegrityError):
        replace_trajectory(store, _traj("y", task="nope"), _events(2))
    assert store.trials.get_trajectory("y") is None
    assert store.project.counts()["events"] == 0


def test_failed_replace_keeps_previous_copy_whole(store: Store) -> None:
    store.trials.upsert_task(_task())
    replace_trajectory(store, _traj("x"), _events(3))
    dup = _events(2) + [Event(id="E1", seq=1, kind="tool_output", text="dup seq")]
    with pytest.raises(sqlite3.IntegrityError):
        replace_trajectory(store, _traj("x"), dup)
    assert [e.text for e in store.trials.events("x")] == ["out 1", "out 2", "out 3"]


def test_upsert_task_reports_unchanged(store: Store) -> None:
    assert store.trials.upsert_task(_task()) is True
    assert store.trials.upsert_task(_task()) is False
    changed = _task().model_copy(update={"instruction": "Do it twice."})
    assert store.trials.upsert_task(changed) is True
    assert store.trials.get_task("t1").instruction == "Do it twice."


def test_concurrent_writers_from_threads(tmp_path: Path) -> None:
    store = Store(tmp_path / "p.db")
    store.trials.upsert_task(_task())
    errors: list[BaseException] = []

    def work(k: int) -> None:
        try:
            for i in range(25):
                replace_trajectory(store, _traj(f"w{k}-{i}"), _events(5))
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert store.project.counts()["trials"] == 150
    assert store.project.counts()["events"] == 750


def test_meta(store: Store) -> None:
    assert store.project.get_meta("is_demo") is None
    store.project.set_meta("is_demo", "1")
    assert store.project.get_meta("is_demo") == "1"


UNCOUNTED = {"_sqlite_migrations", "meta", "data_versions", "events", "import_issues", "llm_cache", "llm_calls",
             "llm_modes", "judge_replies", "judge_batches"}
"""Tables without a write counter: bookkeeping, LLM plumbing, and events (written only with their trajectory)."""


def test_every_read_table_has_a_write_counter_kept_by_triggers(store: Store) -> None:
    """A table added later, or rebuilt by a migration (`transform` drops its triggers), without its three
    counting triggers would let the caches and the stored headline miss its writes."""
    tables = set(store.db.table_names())
    counted = {name for (name,) in store.db.execute("SELECT name FROM data_versions").fetchall()}
    assert counted == tables - UNCOUNTED
    triggers = {t.name: t.table for t in store.db.triggers}
    for name in counted:
        for op in ("insert", "update", "delete"):
            assert triggers.get(f"data_version_{name}_{op}") == name, (name, op)
    store.trials.upsert_task(_task())
    with sqlite3.connect(store.path) as conn:  # writes by any connection are counted
        conn.execute("UPDATE tasks SET instruction = 'Do it again.'")
        conn.execute("DELETE FROM tasks")
    assert store.db.execute("SELECT version FROM data_versions WHERE name = 'tasks'").fetchone()[0] == 3
