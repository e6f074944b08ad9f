"""Opening a project DB: the migrations run exactly once however many processes open it at the same
time (new or old file), and a DB written by a newer GCPC is refused, naming it, before anything is
written."""

from __future__ import annotations

import hashlib
import multiprocessing
import sqlite3
from collections import Counter
from pathlib import Path

import pytest
from sqlite_utils import Database

from gcpc_core.store import MIGRATIONS, SchemaTooNew, Store
from gcpc_core.store.migrations import known_migrations

OPENERS = 8
ROUNDS = 4
FUTURE = "m9901_from_a_newer_gcpc"


def _open(path: Path, start: multiprocessing.synchronize.Event, out: multiprocessing.Queue) -> None:
    """One opener: waits for the others at `start`, opens the DB, reports its schema version or its error."""
    start.wait(60)
    try:
        out.put(Store(path).schema_version)
    except Exception as exc:  # reported to the test, which names it
        out.put(f"{type(exc).__name__}: {exc}")


def _open_at_once(path: Path) -> list[int | str]:
    ctx = multiprocessing.get_context("fork")
    start, out = ctx.Event(), ctx.Queue()
    openers = [ctx.Process(target=_open, args=(path, start, out)) for _ in range(OPENERS)]
    for p in openers:
        p.start()
    start.set()
    results = [out.get(timeout=120) for _ in openers]
    for p in openers:
        p.join(timeout=60)
    return results


def _applied_once(path: Path) -> None:
    with sqlite3.connect(path) as conn:
        names = Counter(name for (name,) in conn.execute(
            "SELECT name FROM _sqlite_migrations WHERE migration_set = ?", [MIGRATIONS.name]))
    assert names == Counter(known_migrations())  # every migration, each once


def test_processes_opening_a_new_db_at_once_all_succeed_and_migrate_it_once(tmp_path: Path) -> None:
    for r in range(ROUNDS):
        path = tmp_path / f"new{r}.db"
        assert _open_at_once(path) == [len(known_migrations())] * OPENERS, r
        _applied_once(path)
        assert Store(path).db.journal_mode == "wal"


def test_processes_opening_an_old_db_at_once_all_succeed_and_migrate_it_once(tmp_path: Path) -> None:
    for r in range(ROUNDS):
        path = tmp_path / f"old{r}.db"
        old = Database(path)  # as an older GCPC left it: rollback journal, the last migrations pending
        MIGRATIONS.apply(old, stop_before="m1701_judge_labels")
        old.close()
        assert _open_at_once(path) == [len(known_migrations())] * OPENERS, r
        _applied_once(path)


def _from_a_newer_gcpc(path: Path, journal_mode: str) -> None:
    """A DB this code migrated, then a newer GCPC one step further."""
    Store(path).close()
    with sqlite3.connect(path) as conn:
        conn.execute("INSERT INTO _sqlite_migrations (migration_set, name, applied_at) VALUES (?, ?, ?)",
                     [MIGRATIONS.name, FUTURE, "2030-01-01 00:00:00+00:00"])
    conn.close()
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA journal_mode = {journal_mode}")
    conn.close()


def _db_files(path: Path) -> dict[str, str]:
    """The DB file and any file beside it named after it (WAL, lock, link key), with content hashes."""
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(path.parent.glob(f"{path.name}*"))}


@pytest.mark.parametrize("journal_mode", ["wal", "delete"])
def test_a_db_from_a_newer_gcpc_is_refused_and_left_unchanged(tmp_path: Path, journal_mode: str) -> None:
    path = tmp_path / "newer.db"
    _from_a_newer_gcpc(path, journal_mode)
    before = _db_files(path)
    with pytest.raises(SchemaTooNew) as refused:
        Store(path)
    message = str(refused.value)
    ours = len(known_migrations())
    assert message.startswith(f"{path}: this project DB was written by a newer version of GCPC")
    assert f"schema version {ours + 1}" in message and f"this code's schema version is {ours}" in message
    assert repr(FUTURE) in message
    assert _db_files(path) == before  # not a byte written, no file added


@pytest.mark.parametrize("argv", [
    ["info"], ["study", "status"], ["import", "--tasks", "{tmp}", "--trials", "{tmp}"], ["llm", "check"], ["demo"],
], ids=lambda argv: " ".join(argv[:2]))
def test_the_cli_refuses_a_db_from_a_newer_gcpc_without_a_traceback(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    from gcpc_core.cli import main

    path = tmp_path / "newer.db"
    _from_a_newer_gcpc(path, "wal")
    before = _db_files(path)
    verb = " ".join(argv[:2]) if argv[0] == "llm" else argv[0]
    assert main([*(a.format(tmp=tmp_path) for a in argv), "--db", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{verb}: {path}: this project DB was written by a newer version of GCPC" in err, err
    assert "Traceback" not in err
    assert _db_files(path) == before
