"""Fixtures of the drills: the hostile-text project (reused by the browser suite)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gcpc_core.store import Store

from .hostile import HostileCorpus, add_hostile_project


@pytest.fixture
def hostile_project(tmp_path: Path) -> tuple[Store, HostileCorpus]:
    """A project holding only the hostile task and trial, checklist frozen, probe-judged and scored."""
    store = Store(tmp_path / "hostile.db")
    corpus, report = add_hostile_project(store, tmp_path / "corpus")
    assert report.trials_imported == 1 and not report.skipped, report.summary_lines()
    return store, corpus
