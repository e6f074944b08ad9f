"""Fixtures of the store's tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from gcpc_core.store import Store

from .study_rows import studied_store


@pytest.fixture
def studied(tmp_path: Path) -> Iterator[Store]:
    """A project DB with a small study (see `study_rows.studied_store`)."""
    store = studied_store(tmp_path / "studied.db")
    yield store
    store.close()
