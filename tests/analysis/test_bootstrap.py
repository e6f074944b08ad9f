"""Clustered resampling primitives: seeded, exact counts, members materialised correctly."""

from __future__ import annotations

import numpy as np

from gcpc_core.analysis import cluster_counts, draw_clusters, draw_members, percentile_ci


def test_draws_are_determined_by_the_seed() -> None:
    assert np.array_equal(draw_clusters(7, 50, 3), draw_clusters(7, 50, 3))
    assert not np.array_equal(draw_clusters(7, 50, 3), draw_clusters(7, 50, 4))


def test_counts_match_a_per_row_bincount() -> None:
    draws = draw_clusters(5, 20, 0)
    counts = cluster_counts(draws, 5)
    assert counts.shape == (20, 5)
    assert np.array_equal(counts, np.array([np.bincount(d, minlength=5) for d in draws]))
    assert (counts.sum(axis=1) == 5).all()


def test_members_repeat_each_drawn_cluster() -> None:
    codes = np.array([0, 0, 1, 2, 2, 2])  # cluster sizes 2, 1, 3
    counts = np.array([[2.0, 1.0, 0.0], [0.0, 0.0, 3.0], [1.0, 1.0, 1.0]])
    got = {}
    for rows, idx in draw_members(codes, counts):
        for r, members in zip(rows, idx):
            got[int(r)] = sorted(members.tolist())
    assert got == {0: [0, 0, 1, 1, 2], 1: [3, 3, 3, 4, 4, 4, 5, 5, 5], 2: [0, 1, 2, 3, 4, 5]}


def test_percentile_ci_ignores_nan_draws_and_reports_valid_count() -> None:
    draws = np.array([[1.0, 2.0, np.nan, 3.0, 4.0], [np.nan] * 5])
    low, high, n_valid = percentile_ci(draws, ci=0.5)
    assert n_valid.tolist() == [4, 0]
    assert low[0] == np.percentile([1, 2, 3, 4], 25) and high[0] == np.percentile([1, 2, 3, 4], 75)
    assert np.isnan(low[1]) and np.isnan(high[1])
