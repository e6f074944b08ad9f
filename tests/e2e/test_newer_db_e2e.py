"""A project DB written by a newer GCPC, opened by the app in a real browser: a clear error naming the file and
both schema versions, its text shown literally (no link made of the file's text), and the file left unchanged."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

from playwright.sync_api import expect

from gcpc_core.store import Store
from gcpc_core.store.migrations import known_migrations

from .helpers import App, Server, Watch, running, server_env

FUTURE = "m9901_[see](http://127.0.0.1:9/x)_newer"


def test_the_app_refuses_a_db_from_a_newer_gcpc_with_a_clear_error(
        tmp_path: Path, page, watch: Watch) -> None:  # noqa: ANN001 - playwright's Page
    db = tmp_path / "newer.db"
    Store(db).close()
    with sqlite3.connect(db) as conn:  # a newer GCPC migrated it one step further
        conn.execute("INSERT INTO _sqlite_migrations (migration_set, name, applied_at) VALUES ('gcpc', ?, '2030')",
                     [FUTURE])
    conn.close()
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    with running(Server("newer", db, tmp_path / "server.log", server_env(db, tmp_path / "home"))) as server:
        app = App(page, server, watch).open()
        expect(app.main.locator('[data-testid="stAlertContentError"]')).to_have_text(
            "This project DB was written by a newer version of GCPC, so this one does not open it:")
        detail = app.main.locator('[data-testid="stText"]')
        expect(detail).to_have_count(1)
        shown = detail.inner_text()
        ours = len(known_migrations())
        assert shown.startswith(f"{db}: this project DB was written by a newer version of GCPC"), shown
        assert f"schema version {ours + 1}" in shown and f"this code's schema version is {ours}" in shown
        assert FUTURE in shown  # literally, brackets and all
        assert app.main.locator("a, img").count() == 0
        assert app.sidebar.count() == 0 or not app.sidebar.is_visible()  # no page of the project is offered
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before
