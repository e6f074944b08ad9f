"""AppTest fixtures: app.py reruns on every run, and the app pointed at a private demo or real project."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.runtime.pages_manager import PagesManager
from streamlit.testing.v1 import app_test as app_test_module


@pytest.fixture(autouse=True)
def entrypoint_runs_every_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make AppTest rerun app.py on every run, as the server does.

    With a `pages/` folder beside app.py, AppTest resets Streamlit's "pages directory" flag before
    each run, so reruns after the first execute the page script alone (MPA v1 style) and skip
    app.py and its access rules. The server clears that flag for good once app.py calls
    st.navigation; this subclass does the same after each reset.
    """

    class EntrypointPagesManager(PagesManager):
        def __init__(self, *args: object, **kwargs: object) -> None:
            super().__init__(*args, **kwargs)
            PagesManager.uses_pages_directory = False

    monkeypatch.setattr(app_test_module, "PagesManager", EntrypointPagesManager)


def _open(db: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("GCPC_DB", str(db))
    monkeypatch.delenv("GCPC_ADMIN_TOKEN", raising=False)
    return db


@pytest.fixture
def demo_db(demo_copy: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private copy of the demo project (probe judgments, SIMULATED demo study), opened by the app."""
    return _open(demo_copy, monkeypatch)


@pytest.fixture
def real_db(real_copy: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private copy of the real-corpus project, opened by the app (skipped without the corpus)."""
    return _open(real_copy, monkeypatch)
