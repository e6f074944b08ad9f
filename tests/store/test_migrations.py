"""The migrations are listed in the numeric order of their names, and listing them so loses nothing: a DB
that applied them in the order they were listed before (m1401 ahead of m1201) opens with every row as
it was and no migration run again, and one that stopped between the two is carried forward to the schema
of a new DB."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

from sqlite_utils import Database
from sqlite_utils.migrations import Migrations

from gcpc_core.store import MIGRATIONS, Store
from gcpc_core.store.migrations import known_migrations

PREVIOUS_ORDER = [{"m1201_run_counts": "m1401_trial_outcome_basis", "m1401_trial_outcome_basis": "m1201_run_counts"}
                  .get(name, name) for name in known_migrations()]
"""The order the migrations were listed (and so applied) in before they were sorted."""


def _number(name: str) -> int:
    return int(re.match(r"m(\d+)_", name).group(1))  # type: ignore[union-attr]


def _previous(stop_before: str | None = None) -> Migrations:
    """The migration set as it was listed before, up to `stop_before`: the same functions, the old order."""
    fns = {m.name: m.fn for m in MIGRATIONS._migrations}
    old = Migrations(MIGRATIONS.name)
    for name in PREVIOUS_ORDER[: PREVIOUS_ORDER.index(stop_before) if stop_before else None]:
        old(name=name)(fns[name])
    return old


def _schema(path: Path) -> list[tuple[str, str, str]]:
    with sqlite3.connect(path) as conn:
        return sorted(conn.execute("SELECT type, name, coalesce(sql, '') FROM sqlite_master"))


def _contents(path: Path) -> dict[str, list[tuple]]:
    """Every table's rows, the migrations' own record included, in a stable order."""
    with sqlite3.connect(path) as conn:
        tables = [t for (t,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return {t: sorted(map(repr, conn.execute(f"SELECT * FROM {t}"))) for t in tables}


def test_migrations_are_listed_in_numeric_order() -> None:
    numbers = [_number(name) for name in known_migrations()]
    assert numbers == sorted(numbers) and len(set(numbers)) == len(numbers)
    assert PREVIOUS_ORDER != known_migrations() and sorted(PREVIOUS_ORDER) == sorted(known_migrations())


def test_a_db_migrated_in_the_previous_order_opens_with_nothing_lost(demo_copy: Path) -> None:
    with sqlite3.connect(demo_copy) as conn:  # the demo's migration record, rewritten as the old order applied it
        applied = dict(conn.execute("SELECT name, applied_at FROM _sqlite_migrations"))
        conn.execute("DELETE FROM _sqlite_migrations")
        conn.executemany("INSERT INTO _sqlite_migrations (migration_set, name, applied_at) VALUES (?, ?, ?)",
                         [(MIGRATIONS.name, name, applied[name]) for name in PREVIOUS_ORDER])
    before, schema = _contents(demo_copy), _schema(demo_copy)
    store = Store(demo_copy)
    assert [m.name for m in MIGRATIONS.applied(store.db)] == PREVIOUS_ORDER and not MIGRATIONS.pending(store.db)
    store.close()
    assert _contents(demo_copy) == before and _schema(demo_copy) == schema


def test_a_db_stopped_between_the_two_reordered_migrations_is_carried_forward(tmp_path: Path) -> None:
    old = tmp_path / "old.db"
    db = Database(old)
    _previous(stop_before="m1201_run_counts").apply(db)  # m1401 applied, m1201 not yet: possible before the sort
    db["tasks"].insert({"id": "t", "instruction": "do it", "source_path": "/tasks/t"})
    db["trajectories"].insert({"id": "t__1", "task": "t", "agent": "a", "model": "m", "outcome": "PASS",
                               "source_path": "/trials/t__1", "log_path": "log", "log_format": "gcpc-jsonl",
                               "outcome_basis": "reward 1.0 >= 1.0"})
    db["runs"].insert({"id": "import-1", "kind": "import", "status": "done", "started_at": "2026-01-01T00:00:00"})
    db.close()

    store = Store(old)
    stopped = PREVIOUS_ORDER[: PREVIOUS_ORDER.index("m1201_run_counts")]
    assert [m.name for m in MIGRATIONS.applied(store.db)] == stopped + [n for n in known_migrations() if n not in stopped]
    assert not MIGRATIONS.pending(store.db)
    [traj] = store.trials.trajectories()
    assert (traj.id, traj.outcome_basis) == ("t__1", "reward 1.0 >= 1.0")
    run = store.runs.get("import-1")
    assert run is not None and (run.kind, run.status, run.counts) == ("import", "done", None)
    store.close()
    fresh = tmp_path / "fresh.db"
    Store(fresh).close()
    assert _schema(old) == _schema(fresh)
