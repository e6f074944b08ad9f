"""RQ1 — outcome discrimination: how well a judge's score separates official PASS from FAIL.

Reads the **scores** frame (see `frames`): ``trajectory_id, task, judge, outcome`` and a score
column (``partial_credit`` by default; the holistic judge's progress score lives there too).

* Point AUC: `sklearn.metrics.roc_auc_score`, pooled over all trajectories that *every*
  compared judge scored (a NaN score, i.e. nothing decided, drops the trajectory for all).
* CI: task-clustered bootstrap (tasks resampled with replacement), percentile intervals; with a
  single task there is no interval (NaN, noted), and with fewer than `bootstrap.RELIABLE_CLUSTERS`
  tasks the note flags it unreliable, as in every clustered statistic of the analysis.
  All judges share the same draws, so the paired ΔAUC of two judges is the per-draw
  difference, with its own CI and the share of draws in which it is > 0.
* Vectorization: a draw's sample is fully described by its task counts ``c`` (``draws × tasks``).
  The Mann–Whitney U statistic of the resampled data is the quadratic form ``cᵀ K c``, where
  ``K[t, u]`` counts PASS trajectories of task *t* scoring above FAIL trajectories of task *u*
  (ties ½), and ``n_pass · n_fail = (c·p)(c·f)``. So AUC = U / (n_pass n_fail) for 10,000 draws is
  two small matrix products — exact, not an approximation; tests replay draws through
  `roc_auc_score` on the materialised samples to prove it.

Degenerate cases, each reported in a ``note`` column rather than raised:

* one outcome class overall → AUC undefined (NaN);
* a constant score → AUC = 0.5 by construction (kept, flagged);
* a task with a single outcome class is *kept*: pooled AUC compares trajectories across tasks,
  so its trajectories still pair with the other class elsewhere. Only a draw whose sampled
  tasks hold a single outcome class in total has an undefined AUC; such draws are NaN,
  excluded from the percentiles, and counted (``n_valid_draws``).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from sklearn.metrics import roc_auc_score, roc_curve

from .bootstrap import FEW_CLUSTERS_NOTE, MIN_CLUSTERS, cluster_counts, clustered_ci, draw_clusters, few_clusters_note
from .frames import common_subset

__all__ = [
    "AucBootstrap",
    "auc_draws",
    "auc_table",
    "bootstrap_auc",
    "delta_auc_table",
    "mann_whitney_kernel",
    "roc_data",
]


@dataclass(frozen=True)
class AucBootstrap:
    """Point AUCs and their bootstrap draws for judges compared on one common subset."""

    judges: tuple[str, ...]
    data: pd.DataFrame
    """The common subset: ``trajectory_id, task, outcome`` and one score column per judge."""
    auc: np.ndarray
    """``(judges,)`` point AUCs from `roc_auc_score` (NaN when undefined)."""
    draws: np.ndarray
    """``(judges, n_boot)`` AUC per bootstrap draw (NaN where the draw had one outcome class)."""
    counts: np.ndarray
    """``(n_boot, tasks)`` how often each task of ``data`` (in order of first appearance) was drawn."""
    n_excluded: int
    """Trajectories scored by some but not all judges, hence left out."""

    @property
    def n_boot(self) -> int:
        return self.counts.shape[0]


def mann_whitney_kernel(y: np.ndarray, score: np.ndarray, codes: np.ndarray, n_tasks: int) -> np.ndarray:
    """``K[t, u]`` = Σ over PASS i in task t and FAIL j in task u of [s_i > s_j] + ½[s_i = s_j].

    Computed without a pairwise matrix: FAIL trajectories are sorted by (task, score rank) and
    each PASS score is located in every task's block with `searchsorted`.
    """
    pos = np.asarray(y, dtype=bool)
    _, rank = np.unique(score, return_inverse=True)
    n_ranks = int(rank.max()) + 1 if len(rank) else 1
    neg_keys = np.sort(codes[~pos].astype(np.int64) * n_ranks + rank[~pos])
    block = np.arange(n_tasks, dtype=np.int64) * n_ranks
    start = np.searchsorted(neg_keys, block)
    query = block[None, :] + rank[pos][:, None]
    left = np.searchsorted(neg_keys, query, side="left")
    right = np.searchsorted(neg_keys, query, side="right")
    one_hot = np.zeros((int(pos.sum()), n_tasks))
    one_hot[np.arange(len(one_hot)), codes[pos]] = 1.0
    return one_hot.T @ ((left - start) + 0.5 * (right - left))


def auc_draws(y: np.ndarray, score: np.ndarray, codes: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """AUC of every bootstrap draw from its task counts (see module docstring); NaN for one-class draws."""
    n_tasks = counts.shape[1]
    pos = np.asarray(y, dtype=bool)
    kernel = mann_whitney_kernel(pos, score, codes, n_tasks)
    n_pos = counts @ np.bincount(codes[pos], minlength=n_tasks)
    n_neg = counts @ np.bincount(codes[~pos], minlength=n_tasks)
    u_stat = ((counts @ kernel) * counts).sum(axis=1)
    denom = n_pos * n_neg
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(denom > 0, u_stat / denom, np.nan)


def _point_auc(y: np.ndarray, score: np.ndarray) -> float:
    return float(roc_auc_score(y, score)) if 0 < y.sum() < len(y) else float("nan")


def bootstrap_auc(
    scores: pd.DataFrame,
    judges: Sequence[str] | None = None,
    *,
    score_col: str = "partial_credit",
    n_boot: int = 10_000,
    seed: int = 0,
) -> AucBootstrap:
    """Point AUC and task-clustered bootstrap draws for each judge, on their common subset."""
    data, judges, n_excluded = common_subset(scores, judges, score_col=score_col)
    y = (data["outcome"] == "PASS").to_numpy()
    codes, tasks = pd.factorize(data["task"])
    counts = cluster_counts(draw_clusters(len(tasks), n_boot, seed), len(tasks))
    auc = np.array([_point_auc(y, data[j].to_numpy()) for j in judges])
    draws = np.array([auc_draws(y, data[j].to_numpy(), codes, counts) for j in judges]).reshape(len(judges), n_boot)
    return AucBootstrap(tuple(judges), data, auc, draws, counts, n_excluded)


def _subset_note(boot: AucBootstrap) -> str:
    y = boot.data["outcome"]
    if boot.data.empty:
        return "no trajectory was scored by all compared judges"
    if y.nunique() < 2:
        return f"only one outcome class (all {y.iloc[0]}): AUC undefined"
    return ""


def _draw_note(boot: AucBootstrap, n_valid: int) -> str:
    n_tasks = boot.counts.shape[1]
    if n_tasks < MIN_CLUSTERS:
        return FEW_CLUSTERS_NOTE
    n_boot = boot.n_boot
    dropped = f"{n_boot - n_valid} of {n_boot} draws had one outcome class and were dropped" if n_valid < n_boot else ""
    return _join(few_clusters_note(n_tasks), dropped)


def _join(*notes: str) -> str:
    return "; ".join(n for n in notes if n)


def auc_table(boot: AucBootstrap, *, ci: float = 0.95) -> pd.DataFrame:
    """One row per judge: n, PASS/FAIL counts, tasks, AUC with percentile CI, valid draws and a note."""
    low, high, n_valid = clustered_ci(boot.draws, boot.counts.shape[1], ci)
    y = boot.data["outcome"]
    base = _subset_note(boot)
    rows = []
    for k, judge in enumerate(boot.judges):
        constant = not base and boot.data[judge].nunique() == 1
        rows.append({
            "judge": judge, "n": len(y), "n_pass": int((y == "PASS").sum()), "n_fail": int((y == "FAIL").sum()),
            "n_tasks": boot.data["task"].nunique(), "n_excluded": boot.n_excluded,
            "auc": boot.auc[k], "ci_low": low[k], "ci_high": high[k],
            "n_draws": boot.n_boot, "n_valid_draws": int(n_valid[k]),
            "note": _join(base, "constant score: AUC = 0.5 by construction" if constant else "",
                          "" if base else _draw_note(boot, int(n_valid[k]))),
        })
    return pd.DataFrame(rows, columns=["judge", "n", "n_pass", "n_fail", "n_tasks", "n_excluded", "auc", "ci_low",
                                       "ci_high", "n_draws", "n_valid_draws", "note"])


def delta_auc_table(
    boot: AucBootstrap, pairs: Sequence[tuple[str, str]] | None = None, *, ci: float = 0.95
) -> pd.DataFrame:
    """Paired ΔAUC = AUC(a) − AUC(b) on the same draws: CI and the share of valid draws with Δ > 0.

    `pairs` defaults to every pair of judges in report order.
    """
    pairs = list(itertools.combinations(boot.judges, 2)) if pairs is None else list(pairs)
    index = {j: k for k, j in enumerate(boot.judges)}
    base = _subset_note(boot)
    rows = []
    for a, b in pairs:
        diff = boot.draws[index[a]] - boot.draws[index[b]]
        low, high, n_valid = clustered_ci(diff, boot.counts.shape[1], ci)
        valid = diff[np.isfinite(diff)] if boot.counts.shape[1] >= MIN_CLUSTERS else diff[:0]
        rows.append({
            "judge_a": a, "judge_b": b, "n": len(boot.data), "n_tasks": boot.data["task"].nunique(),
            "delta_auc": boot.auc[index[a]] - boot.auc[index[b]], "ci_low": float(low), "ci_high": float(high),
            "share_draws_gt_0": float((valid > 0).mean()) if len(valid) else float("nan"),
            "n_draws": boot.n_boot, "n_valid_draws": int(n_valid),
            "note": _join(base, "" if base else _draw_note(boot, int(n_valid))),
        })
    return pd.DataFrame(rows, columns=["judge_a", "judge_b", "n", "n_tasks", "delta_auc", "ci_low", "ci_high",
                                       "share_draws_gt_0", "n_draws", "n_valid_draws", "note"])


def _interp_rows(xq: np.ndarray, xp: np.ndarray, fp: np.ndarray) -> np.ndarray:
    """Row-wise linear interpolation of ``fp(xp)`` at `xq`; rows of `xp` are non-decreasing in [0, 1].

    At a vertical step (repeated x) the upper value is taken: the best TPR reachable at that FPR.
    Vectorized by offsetting row b by 2b so all rows form one sorted array.
    """
    n_rows, n_pts = xp.shape
    offset = 2.0 * np.arange(n_rows)[:, None]
    j = np.searchsorted((xp + offset).ravel(), (xq[None, :] + offset).ravel(), side="right").reshape(n_rows, -1)
    j = np.clip(j - 1 - np.arange(n_rows)[:, None] * n_pts, 0, n_pts - 2)
    x0, x1 = np.take_along_axis(xp, j, 1), np.take_along_axis(xp, j + 1, 1)
    f0, f1 = np.take_along_axis(fp, j, 1), np.take_along_axis(fp, j + 1, 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        t = np.clip(np.where(x1 > x0, (xq[None, :] - x0) / (x1 - x0), 1.0), 0.0, 1.0)
    return f0 + t * (f1 - f0)


def roc_data(
    boot: AucBootstrap, *, ci: float = 0.95, grid: int = 101, max_draws: int = 1000
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """ROC curves (`sklearn.metrics.roc_curve`) and bootstrap bands for plotting.

    Returns ``(curves, bands)``: curves has ``judge, fpr, tpr, threshold``; bands has
    ``judge, fpr, tpr_low, tpr_high`` on an even FPR grid, from the first `max_draws` draws of
    `boot` (vertical averaging: TPR at fixed FPR per draw, then percentiles). Empty frames when
    the AUC is undefined.
    """
    curves, bands = [], []
    y = (boot.data["outcome"] == "PASS").to_numpy()
    if _subset_note(boot):
        return (pd.DataFrame(columns=["judge", "fpr", "tpr", "threshold"]),
                pd.DataFrame(columns=["judge", "fpr", "tpr_low", "tpr_high"]))
    codes, _ = pd.factorize(boot.data["task"])
    counts = boot.counts[:max_draws]
    n_tasks = counts.shape[1]
    fpr_grid = np.linspace(0.0, 1.0, grid)
    for judge in boot.judges:
        score = boot.data[judge].to_numpy()
        fpr, tpr, thr = roc_curve(y, score)
        curves.append(pd.DataFrame({"judge": judge, "fpr": fpr, "tpr": tpr, "threshold": thr}))
        _, rank = np.unique(score, return_inverse=True)
        n_ranks = int(rank.max()) + 1
        at = np.zeros((2, n_tasks, n_ranks))
        np.add.at(at, (y.astype(int), codes, rank), 1.0)  # at[1] PASS, at[0] FAIL, per task and score rank
        above = at[:, :, ::-1].cumsum(axis=2)  # column k: scores ≥ the k-th highest value
        tp, fp = counts @ above[1], counts @ above[0]
        with np.errstate(invalid="ignore", divide="ignore"):
            tpr_d = np.concatenate([np.zeros((len(counts), 1)), tp / tp[:, -1:]], axis=1)
            fpr_d = np.concatenate([np.zeros((len(counts), 1)), fp / fp[:, -1:]], axis=1)
        ok = np.isfinite(tpr_d).all(axis=1) & np.isfinite(fpr_d).all(axis=1)
        band = _interp_rows(fpr_grid, fpr_d[ok], tpr_d[ok]) if ok.any() else np.full((1, grid), np.nan)
        low, high, _ = clustered_ci(band.T, n_tasks, ci)
        bands.append(pd.DataFrame({"judge": judge, "fpr": fpr_grid, "tpr_low": low, "tpr_high": high}))
    return pd.concat(curves, ignore_index=True), pd.concat(bands, ignore_index=True)
