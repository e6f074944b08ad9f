"""AUC, its vectorized task-clustered bootstrap, paired ΔAUC and ROC bands."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

from gcpc_core.analysis import (
    auc_draws,
    auc_table,
    bootstrap_auc,
    cluster_counts,
    delta_auc_table,
    draw_clusters,
    mann_whitney_kernel,
    roc_data,
)


def frame(outcomes: list[str], tasks: list[str], **judges: list[float]) -> pd.DataFrame:
    base = pd.DataFrame({"trajectory_id": [f"t{i}" for i in range(len(outcomes))], "task": tasks, "outcome": outcomes})
    return pd.concat([base.assign(judge=j, partial_credit=s) for j, s in judges.items()], ignore_index=True)


def random_frame(n: int = 120, n_tasks: int = 9, seed: int = 1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    y = rng.random(n) < 0.45
    return frame(list(np.where(y, "PASS", "FAIL")), [f"task{k}" for k in rng.integers(0, n_tasks, n)],
                 gcpc=list(np.round(rng.random(n) * 0.6 + 0.4 * y, 1)), holistic=list(np.round(rng.random(n), 1)))


def test_point_auc_with_ties_by_hand() -> None:
    # PASS scores 0.8, 0.5; FAIL scores 0.5, 0.2 → pairs 1, 1, ½, 1 → 3.5 / 4
    f = frame(["PASS", "PASS", "FAIL", "FAIL"], ["a", "b", "a", "b"], gcpc=[0.8, 0.5, 0.5, 0.2])
    table = auc_table(bootstrap_auc(f, n_boot=200, seed=0))
    assert table.loc[0, "auc"] == pytest.approx(0.875)
    assert table.loc[0, "n_pass"] == 2 and table.loc[0, "n_tasks"] == 2


def test_kernel_by_hand() -> None:
    y = np.array([1, 1, 0, 0], dtype=bool)
    s = np.array([0.8, 0.5, 0.5, 0.2])
    codes = np.array([0, 1, 0, 1])
    # K[t, u]: PASS of task t vs FAIL of task u. task0 PASS 0.8 beats FAIL 0.5 (task0) and 0.2 (task1);
    # task1 PASS 0.5 ties 0.5 (task0), beats 0.2 (task1)
    assert mann_whitney_kernel(y, s, codes, 2).tolist() == [[1.0, 1.0], [0.5, 1.0]]


def test_vectorized_draws_equal_roc_auc_score_on_materialised_resamples() -> None:
    f = random_frame()
    boot = bootstrap_auc(f, n_boot=300, seed=11)
    codes, tasks = pd.factorize(boot.data["task"])
    draws = draw_clusters(len(tasks), 300, 11)  # the very draws bootstrap_auc used
    y = (boot.data["outcome"] == "PASS").to_numpy()
    for judge_k, judge in enumerate(boot.judges):
        s = boot.data[judge].to_numpy()
        for b in range(0, 300, 23):
            idx = np.concatenate([np.flatnonzero(codes == t) for t in draws[b]])
            expected = roc_auc_score(y[idx], s[idx]) if 0 < y[idx].sum() < len(idx) else np.nan
            assert boot.draws[judge_k, b] == pytest.approx(expected, abs=1e-12, nan_ok=True)
        assert boot.auc[judge_k] == pytest.approx(roc_auc_score(y, s))


def test_bootstrap_is_deterministic_by_seed() -> None:
    f = random_frame()
    a, b, c = (bootstrap_auc(f, n_boot=500, seed=s) for s in (5, 5, 6))
    assert np.array_equal(a.draws, b.draws)
    assert not np.array_equal(a.draws, c.draws)
    pd.testing.assert_frame_equal(auc_table(a), auc_table(b))


def test_one_outcome_class_gives_nan_with_a_reason() -> None:
    f = frame(["PASS", "PASS", "PASS"], ["a", "b", "c"], gcpc=[0.1, 0.5, 0.9])
    row = auc_table(bootstrap_auc(f, n_boot=100)).iloc[0]
    assert np.isnan(row["auc"]) and np.isnan(row["ci_low"])
    assert "only one outcome class" in row["note"]


def test_one_class_tasks_are_kept_and_one_class_draws_dropped() -> None:
    # task a is all PASS, task b all FAIL: the pooled AUC is defined, but any draw that samples only
    # one of the two tasks has a single class → NaN, dropped and counted.
    f = frame(["PASS", "PASS", "FAIL", "FAIL"], ["a", "a", "b", "b"], gcpc=[0.9, 0.6, 0.7, 0.1])
    boot = bootstrap_auc(f, n_boot=1000, seed=2)
    row = auc_table(boot).iloc[0]
    assert row["auc"] == pytest.approx(0.75)
    one_class = np.isnan(boot.draws[0])
    counts = boot.counts
    assert np.array_equal(one_class, (counts == 0).any(axis=1))  # exactly the draws missing a task
    assert row["n_valid_draws"] == (~one_class).sum() < 1000
    assert "draws had one outcome class" in row["note"]
    assert row["ci_low"] == row["ci_high"] == pytest.approx(0.75)  # both tasks drawn once each → same sample


def test_constant_score_is_flagged_and_nan_scores_excluded() -> None:
    f = frame(["PASS", "FAIL", "PASS", "FAIL"], ["a", "a", "b", "b"], gcpc=[0.5, 0.5, 0.5, 0.5],
              holistic=[0.9, 0.1, np.nan, 0.3])
    table = auc_table(bootstrap_auc(f, n_boot=50))
    assert table["n"].tolist() == [3, 3] and table["n_excluded"].tolist() == [1, 1]
    assert table.loc[0, "auc"] == 0.5 and "constant score" in table.loc[0, "note"]
    assert table.loc[1, "auc"] == 1.0


def test_no_common_trajectory() -> None:
    f = frame(["PASS", "FAIL"], ["a", "a"], gcpc=[np.nan, 0.1], holistic=[0.2, np.nan])
    row = auc_table(bootstrap_auc(f, n_boot=20)).iloc[0]
    assert row["n"] == 0 and "no trajectory" in row["note"]


def test_paired_delta_uses_the_same_draws() -> None:
    boot = bootstrap_auc(random_frame(), n_boot=400, seed=3)
    d = delta_auc_table(boot).iloc[0]
    diff = boot.draws[0] - boot.draws[1]
    assert (d["judge_a"], d["judge_b"]) == ("gcpc", "holistic")
    assert d["delta_auc"] == pytest.approx(boot.auc[0] - boot.auc[1])
    assert d["share_draws_gt_0"] == pytest.approx(np.mean(diff[np.isfinite(diff)] > 0))
    assert d["ci_low"] == pytest.approx(np.nanpercentile(diff, 2.5))
    assert d["ci_low"] < d["delta_auc"] < d["ci_high"]


def test_auc_draws_nan_when_a_draw_has_one_class() -> None:
    y = np.array([True, False])
    counts = np.array([[1.0, 1.0], [2.0, 0.0], [0.0, 2.0]])
    out = auc_draws(y, np.array([0.7, 0.3]), np.array([0, 1]), counts)
    assert out[0] == 1.0 and np.isnan(out[1]) and np.isnan(out[2])


def test_roc_band_brackets_the_curve() -> None:
    boot = bootstrap_auc(random_frame(n=300), n_boot=400, seed=0)
    curves, bands = roc_data(boot, grid=21)
    assert set(curves["judge"]) == set(bands["judge"]) == {"gcpc", "holistic"}
    assert len(bands) == 2 * 21
    assert (bands["tpr_low"] <= bands["tpr_high"] + 1e-12).all()
    assert bands["tpr_low"].between(0, 1).all() and bands["tpr_high"].between(0, 1).all()
    g = bands[bands["judge"] == "gcpc"]
    assert g["tpr_high"].iloc[-1] == 1.0
    point = np.interp(g["fpr"], *curves[curves["judge"] == "gcpc"][["fpr", "tpr"]].to_numpy().T)
    inside = (point >= g["tpr_low"] - 0.05) & (point <= g["tpr_high"] + 0.05)
    assert inside.mean() > 0.9


def test_draws_counts_shape() -> None:
    counts = cluster_counts(draw_clusters(3, 10, 0), 3)
    boot = bootstrap_auc(random_frame(n_tasks=3), n_boot=10, seed=0)
    assert boot.counts.shape == counts.shape and np.array_equal(boot.counts, counts)
