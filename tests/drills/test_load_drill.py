"""Load drill: 16 annotators × 500 writes over threads and processes, through the pages' code path."""

from __future__ import annotations

from pathlib import Path

import pytest

from .load import run_load_drill

pytestmark = pytest.mark.drill


@pytest.mark.timeout(180)
def test_16_annotators_500_writes_lose_and_duplicate_nothing(demo_copy: Path) -> None:
    figures = run_load_drill(demo_copy, annotators=16, writes=500, processes=4)
    print("\n".join(figures.lines()))
    assert figures.errors == [] and figures.locked == 0
    assert figures.attempted == figures.created == figures.stored == 16 * 500
    assert figures.resubmits == 16 * 500 // 20
    assert figures.lost == figures.duplicated == figures.broken_chains == figures.stale_current == 0
    assert figures.ok
