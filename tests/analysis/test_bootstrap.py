"""Clustered resampling primitives: seeded, exact counts, members materialised correctly."""

from __future__ import annotations

import numpy as np
import pytest

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


def test_few_tasks_give_few_distinct_resamples_and_their_intervals_are_flagged() -> None:
    """3 tasks: 10 distinct task resamples, however many draws; fewer than 10 tasks flag every interval."""
    from itertools import combinations_with_replacement

    from gcpc_core.analysis import RELIABLE_CLUSTERS, distinct_resamples, few_clusters_note

    for n in range(1, 7):
        assert distinct_resamples(n) == len(list(combinations_with_replacement(range(n), n)))
    counts = cluster_counts(draw_clusters(3, 10_000, 0), 3)
    assert len(np.unique(counts, axis=0)) == distinct_resamples(3) == 10
    assert RELIABLE_CLUSTERS == 10
    assert few_clusters_note(3) == ("interval unreliable: only 3 tasks (10 distinct task resamples; 10 or more "
                                    "tasks are needed)")
    assert all(few_clusters_note(n) for n in range(2, 10))
    assert few_clusters_note(1) == "" and few_clusters_note(10) == "" and few_clusters_note(85) == ""


def test_ratio_draws_match_a_per_draw_loop() -> None:
    from gcpc_core.analysis import ratio_draws

    rng = np.random.default_rng(1)
    codes = rng.integers(0, 4, 30)
    values = rng.random((2, 30))
    counts = cluster_counts(draw_clusters(4, 50, 2), 4)
    got = ratio_draws(values, np.ones(30), codes, counts)
    for b, c in enumerate(counts):
        w = c[codes]
        assert got[:, b] == pytest.approx((values * w).sum(axis=1) / w.sum())
    assert ratio_draws(values[0], np.ones(30), codes, counts) == pytest.approx(got[0])
