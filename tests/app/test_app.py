"""The Streamlit app, driven headless with AppTest against a temporary demo project."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from gcpc_core.demo import build_demo_project
from gcpc_core.store import Store

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("demo") / "demo.db"
    build_demo_project(db)
    return db


def test_overview_renders_demo_project_labelled(demo_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GCPC_DB", str(demo_db))
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=60).run()
    assert not at.exception
    assert any("DEMO" in w.value for w in at.sidebar.warning)
    assert any("DEMO" in i.value for i in at.info)
    metrics = {m.label: m.value for m in at.metric}
    assert int(metrics["Trials"]) >= 24 and int(metrics["Tasks"]) >= 3
    assert len(at.dataframe) >= 2


def test_missing_project_db_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GCPC_DB", str(tmp_path / "missing.db"))
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=60).run()
    assert not at.exception
    assert any("not found" in e.value for e in at.error)


def test_a_project_db_from_a_newer_gcpc_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "newer.db"
    Store(db).close()
    with sqlite3.connect(db) as conn:  # a newer GCPC migrated it one step further
        conn.execute("INSERT INTO _sqlite_migrations (migration_set, name, applied_at) VALUES ('gcpc', ?, '2030')",
                     ["m9901_[from](http://a.test)_a_newer_gcpc"])
    conn.close()
    before = db.read_bytes()
    monkeypatch.setenv("GCPC_DB", str(db))
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=60).run()
    assert not at.exception
    [error] = at.error
    assert error.value.startswith("This project DB was written by a newer version of GCPC")
    [detail] = at.text  # plain text, never Markdown: it quotes the file
    assert detail.value.startswith(f"{db}: this project DB was written by a newer version of GCPC")
    assert "m9901_[from](http://a.test)_a_newer_gcpc" in detail.value
    assert db.read_bytes() == before
