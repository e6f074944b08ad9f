"""Fixtures for checklist tests: the repo's rules and the in-memory toy task.

Tests that read the real tasks use the shared `skillsbench` fixture (tests/conftest.py), which
skips with a reason when ../shared/skillsbench is absent.
"""

from __future__ import annotations

import pytest

from gcpc_core.checklist import Rules, load_rules
from gcpc_core.models import Task

from .toy import make_toy_task


@pytest.fixture(scope="session")
def rules() -> Rules:
    """The repository's rules/ folder, validated."""
    return load_rules()


@pytest.fixture
def toy_task() -> Task:
    """A small task with three verifier nodes, one of them parametrized."""
    return make_toy_task()
