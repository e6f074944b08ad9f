"""Shared fixtures: the real SkillsBench sample (read in place) and a fresh project DB."""

from __future__ import annotations

from pathlib import Path

import pytest

from gcpc_core.store import Store

SKILLSBENCH = Path(__file__).resolve().parents[1].parent / "shared" / "skillsbench"


@pytest.fixture(scope="session")
def skillsbench() -> Path:
    """`../shared/skillsbench`, or a skip saying why the real-data test cannot run."""
    if not (SKILLSBENCH / "tasks").is_dir() or not (SKILLSBENCH / "trials").is_dir():
        pytest.skip(f"real SkillsBench sample not found at {SKILLSBENCH}")
    return SKILLSBENCH


@pytest.fixture
def store(tmp_path: Path) -> Store:
    """An empty project DB in a temporary folder."""
    return Store(tmp_path / "project.db")
