"""The Streamlit app, driven headless with AppTest against a temporary demo project."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from gcpc_core.demo import build_demo_project

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
