"""Helpers for driving the app with AppTest (fixtures live in conftest.py)."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

REPO = Path(__file__).resolve().parents[2]


def app(**query: str) -> AppTest:
    """The app, run once, with `query` as URL query parameters."""
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=60)
    for key, value in query.items():
        at.query_params[key] = value
    return at.run()


def open_page(page: str, *, reviewer: str | None = "alice", **query: str) -> AppTest:
    """The app switched to `pages/<page>.py` (with `query`), the sidebar's reviewer set."""
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=60)
    for key, value in query.items():
        at.query_params[key] = value
    if reviewer is not None:
        at.session_state["reviewer"] = reviewer
    at.switch_page(f"pages/{page}.py")
    return at.run()
