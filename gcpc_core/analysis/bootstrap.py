"""Task-clustered bootstrap primitives, vectorized over draws.

Trajectories of one task are not independent (same checklist, same difficulty),
so confidence intervals resample *tasks* with replacement and keep all their
trajectories. A draw is summarised by how often each task was sampled (a
``draws × tasks`` count matrix); statistics are then computed for all draws at
once from that matrix, never with a Python loop per draw.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
from scipy.special import comb

__all__ = ["FEW_CLUSTERS_NOTE", "MIN_CLUSTERS", "RELIABLE_CLUSTERS", "cluster_counts", "clustered_ci",
           "distinct_resamples", "draw_clusters", "draw_members", "few_clusters_note", "percentile_ci",
           "ratio_draws"]

MIN_CLUSTERS = 2
"""Fewer tasks than this give no interval: resampling a single task only repeats it, so every draw
equals the point estimate and a zero-width interval would claim a certainty the data cannot give."""
FEW_CLUSTERS_NOTE = f"fewer than {MIN_CLUSTERS} tasks: no task-clustered interval"
RELIABLE_CLUSTERS = 10
"""Fewer tasks than this give an interval that is shown but flagged unreliable: a cluster bootstrap over so few
clusters understates the spread, and n tasks have only C(2n − 1, n) distinct resamples (10 with 3 tasks, 126
with 5), so its percentiles are read off a handful of values however many draws are made."""


def distinct_resamples(n_clusters: int) -> int:
    """How many different samples a bootstrap drawing `n_clusters` of `n_clusters` clusters can give: C(2n − 1, n)."""
    return int(comb(2 * n_clusters - 1, n_clusters, exact=True)) if n_clusters > 0 else 0


def few_clusters_note(n_clusters: int) -> str:
    """The flag of an interval over `n_clusters` tasks: "" from `RELIABLE_CLUSTERS` tasks on (and below
    `MIN_CLUSTERS`, where there is no interval to flag), else why it is unreliable."""
    if n_clusters < MIN_CLUSTERS or n_clusters >= RELIABLE_CLUSTERS:
        return ""
    return (f"interval unreliable: only {n_clusters} tasks ({distinct_resamples(n_clusters)} distinct task "
            f"resamples; {RELIABLE_CLUSTERS} or more tasks are needed)")


def draw_clusters(n_clusters: int, n_boot: int, seed: int | np.random.Generator) -> np.ndarray:
    """``(n_boot, n_clusters)`` cluster indices drawn with replacement, from `np.random.default_rng(seed)`.

    Exposed so that a reference implementation (tests, the benchmark's per-draw loop) can
    replay exactly the same draws.
    """
    rng = np.random.default_rng(seed)
    return rng.integers(0, n_clusters, size=(n_boot, n_clusters)) if n_clusters else np.zeros((n_boot, 0), dtype=np.int64)


def cluster_counts(draws: np.ndarray, n_clusters: int) -> np.ndarray:
    """How many times each cluster was drawn, per draw: ``(n_boot, n_clusters)`` float counts."""
    n_boot = draws.shape[0]
    flat = (draws + np.arange(n_boot)[:, None] * n_clusters).ravel()
    return np.bincount(flat, minlength=n_boot * n_clusters).reshape(n_boot, n_clusters).astype(float)


def draw_members(codes: np.ndarray, counts: np.ndarray) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Materialise the resampled members of every draw, grouped by sample size.

    `codes` gives each member's cluster index. A draw's sample is every member of every drawn
    cluster, repeated as often as the cluster was drawn, so sample sizes differ between draws.
    Draws of equal size are yielded together as ``(rows, index)``: the draw numbers and an
    ``(len(rows), size)`` matrix of member indices, ready for an ``axis=1`` statistic.
    """
    weights = counts[:, codes].astype(np.int64)
    lengths = weights.sum(axis=1)
    n_boot, n_members = weights.shape
    flat = np.repeat(np.tile(np.arange(n_members), n_boot), weights.ravel())
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    for size in np.unique(lengths):
        rows = np.flatnonzero(lengths == size)
        yield rows, flat[starts[rows][:, None] + np.arange(size)]


def ratio_draws(numerators: np.ndarray, denominators: np.ndarray, codes: np.ndarray, counts: np.ndarray
                ) -> np.ndarray:
    """A ratio of sums (a mean, a share) in every draw: Σ numerator / Σ denominator over the resampled members.

    `numerators` is ``(members,)`` or ``(statistics, members)``, `denominators` ``(members,)`` (1 per member for a
    mean or share), `codes` each member's cluster; returns ``(n_boot,)`` or ``(statistics, n_boot)``, NaN where a
    draw holds no denominator. Each draw is the task-count-weighted sum of per-task totals, so all draws are two
    matrix products.
    """
    n_clusters = counts.shape[1]
    num = np.atleast_2d(np.asarray(numerators, dtype=float))
    per_num = np.stack([np.bincount(codes, weights=row, minlength=n_clusters) for row in num])
    per_den = np.bincount(codes, weights=np.asarray(denominators, dtype=float), minlength=n_clusters)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = (per_num @ counts.T) / (counts @ per_den)[None, :]
    out[:, (counts @ per_den) == 0] = np.nan
    return out[0] if np.ndim(numerators) == 1 else out


def percentile_ci(draws: np.ndarray, ci: float = 0.95) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Percentile interval along the last axis, ignoring NaN draws (undefined statistics).

    Returns ``(low, high, n_valid)``; low and high are NaN where no draw was valid.
    """
    draws = np.asarray(draws, dtype=float)
    flat = draws.reshape(-1, draws.shape[-1])
    n_valid = np.isfinite(flat).sum(axis=1)
    tail = 50 * (1 - ci)
    low = np.full(len(flat), np.nan)
    high = np.full(len(flat), np.nan)
    ok = n_valid > 0
    if ok.any():
        low[ok], high[ok] = np.nanpercentile(flat[ok], [tail, 100 - tail], axis=1)
    shape = draws.shape[:-1]
    return low.reshape(shape), high.reshape(shape), n_valid.reshape(shape)


def clustered_ci(draws: np.ndarray, n_clusters: int, ci: float = 0.95) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`percentile_ci` of task-clustered draws, with NaN bounds when there are fewer than `MIN_CLUSTERS` tasks."""
    low, high, n_valid = percentile_ci(draws, ci)
    if n_clusters < MIN_CLUSTERS:
        low, high = np.full_like(low, np.nan), np.full_like(high, np.nan)
    return low, high, n_valid
