"""Frame contracts: clear errors naming the problem, and the common subset of judges."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from gcpc_core.analysis import FrameContractError, JudgeOrder, common_subset, require_columns


def scores(rows: list[tuple]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["trajectory_id", "task", "judge", "outcome", "partial_credit"])


def test_missing_column_is_named() -> None:
    with pytest.raises(FrameContractError, match="scores frame is missing required column.*'outcome'"):
        require_columns(pd.DataFrame({"trajectory_id": [1]}), ["trajectory_id", "outcome"], "scores")


def test_common_subset_keeps_only_trajectories_every_judge_scored() -> None:
    s = scores([("t1", "a", "gcpc", "PASS", 0.9), ("t1", "a", "holistic", "PASS", 0.7),
                ("t2", "a", "gcpc", "FAIL", np.nan), ("t2", "a", "holistic", "FAIL", 0.2),
                ("t3", "b", "gcpc", "FAIL", 0.1)])
    wide, judges, excluded = common_subset(s)
    assert judges == ["gcpc", "holistic"]
    assert wide["trajectory_id"].tolist() == ["t1"]
    assert excluded == 2
    assert wide.loc[0, "gcpc"] == 0.9 and wide.loc[0, "outcome"] == "PASS"


def test_conflicting_outcomes_and_duplicates_are_rejected() -> None:
    with pytest.raises(FrameContractError, match="more than one task or outcome"):
        common_subset(scores([("t1", "a", "gcpc", "PASS", 1.0), ("t1", "a", "holistic", "FAIL", 0.5)]))
    with pytest.raises(FrameContractError, match="more than one row"):
        common_subset(scores([("t1", "a", "gcpc", "PASS", 1.0), ("t1", "a", "gcpc", "PASS", 0.5)]))
    with pytest.raises(FrameContractError, match="other than PASS/FAIL"):
        common_subset(scores([("t1", "a", "gcpc", "pass", 1.0)]))


def test_unknown_judge_is_an_error_not_an_empty_subset() -> None:
    with pytest.raises(ValueError, match="'gpcp'"):
        common_subset(scores([("t1", "a", "gcpc", "PASS", 0.9)]), ["gpcp"])


def test_judge_order_puts_known_judges_first() -> None:
    order = JudgeOrder(names=("gcpc", "fixed", "holistic"))
    assert order.ordered(["zeta", "holistic", "alpha", "gcpc", "fixed"]) == ["gcpc", "fixed", "holistic", "alpha", "zeta"]
    assert JudgeOrder().ordered(["gcpc", "fixed"]) == ["fixed", "gcpc"]  # a frame without an order: alphabetical
