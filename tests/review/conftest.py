"""Review-module tests read and write a private copy of the demo project."""

from __future__ import annotations

from pathlib import Path

import pytest

from gcpc_core.store import Store


@pytest.fixture
def demo(demo_copy: Path) -> Store:
    return Store(demo_copy)
