"""Kill -9 resume drill: a CLI judge run SIGKILLed at 5 seeded random points, resumed each time."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import copy_db

from .resume import run_resume_drill

pytestmark = pytest.mark.drill


@pytest.mark.timeout(240)
def test_five_kill_9s_then_resume_equal_an_uninterrupted_run(demo_master: Path, tmp_path: Path) -> None:
    clean, killed = copy_db(demo_master, tmp_path / "clean.db"), copy_db(demo_master, tmp_path / "killed.db")
    figures = run_resume_drill(clean, killed, kills=5, seed=8)
    print("\n".join(figures.lines()))
    assert len(figures.kills) == 5 and all(k["mid_run"] for k in figures.kills), figures.kills
    assert all(0 < k["stored"] < figures.trajectories for k in figures.kills), figures.kills
    assert figures.half_stored == 0, "a kill -9 left half a trajectory"
    assert figures.duplicates == 0 and figures.missing == 0
    assert figures.equal_judgments and figures.equal_scores, figures.diff
    assert figures.judgments > figures.trajectories  # every item of every trajectory, not only units
