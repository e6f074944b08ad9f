"""The windowing benchmark on the real SkillsBench trials (../shared, read in place): the item-aware view
keeps the deciding line of at least 95 % of assertion items at the default budget (issue 27's target),
and never fewer than plain head-and-tail windows. The figures themselves are printed by
`python bench/window_bench.py`."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
REPLIES = REPO.parent / "shared" / "capable-replies"

pytestmark = pytest.mark.skillsbench


def load_bench():  # noqa: ANN201 - the bench module
    spec = importlib.util.spec_from_file_location("window_bench", REPO / "bench" / "window_bench.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["window_bench"] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def test_item_aware_windows_keep_the_deciding_lines(skillsbench: Path) -> None:
    if not (REPLIES / "README.md").is_file():
        pytest.skip(f"capable-model replies not found at {REPLIES}")
    counts, missed, trials = load_bench().measure(skillsbench, REPLIES)
    assert trials == 12
    kept, counted = counts[("default", True)]
    assert counted >= 90 and kept / counted >= 0.95, missed
    assert counts[("8k", True)][0] / counted >= 0.9, counts
    for view in ("default", "8k"):
        assert counts[(view, True)][0] >= counts[(view, False)][0], counts
        assert counts[(view, True)][1] == counts[(view, False)][1] == counted
