"""Analysis benchmark on a synthetic project at paper scale.

    python bench/analysis_bench.py [--n-boot 10000] [--loop-draws 1000] [--repeat 3] [--figures] [--keep DIR]

Paper scale: 4,455 trajectories × 9 checklist items (judges gcpc and fixed, plus holistic),
1,946 matched with/without-skills pairs, 96 human-rated trajectories × 3 raters (and 96
preference pairs × 3 raters). Prints (1) the full report's compute time without figures — tables,
CSVs, report.md and report.html — cold (first call in the process) and warm (median of
--repeat), target ≤ 3 s on a 2-core machine, and each section's time computed alone (`report_tables`) with its
share of their sum; (2) the task-clustered AUC bootstrap's speed-up
over a per-draw loop that materialises each resample and calls `roc_auc_score`, on the same
draws (the loop is timed on --loop-draws draws and scaled to --n-boot).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.metrics import roc_auc_score

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gcpc_core.analysis import auc_draws, build_report, cluster_counts, common_subset, draw_clusters  # noqa: E402
from gcpc_core.analysis.report import SECTION_NAMES, report_tables  # noqa: E402
from gcpc_core.analysis.synthetic import synthetic_frames  # noqa: E402


def per_draw_loop(y: np.ndarray, score: np.ndarray, codes: np.ndarray, draws: np.ndarray) -> np.ndarray:
    """The straightforward bootstrap, kept only here as the reference: one resample and one sklearn call per draw."""
    members = [np.flatnonzero(codes == t) for t in range(codes.max() + 1)]
    out = np.full(len(draws), np.nan)
    for b, drawn in enumerate(draws):
        idx = np.concatenate([members[t] for t in drawn])
        if 0 < y[idx].sum() < len(idx):
            out[b] = roc_auc_score(y[idx], score[idx])
    return out


def bench_bootstrap(scores: pd.DataFrame, n_boot: int, loop_draws: int, seed: int = 0) -> None:
    data, _, _ = common_subset(scores, ["gcpc"])
    y = (data["outcome"] == "PASS").to_numpy()
    s = data["gcpc"].to_numpy()
    codes, tasks = pd.factorize(data["task"])
    t0 = time.perf_counter()
    draws = draw_clusters(len(tasks), n_boot, seed)
    fast = auc_draws(y, s, codes, cluster_counts(draws, len(tasks)))
    t_fast = time.perf_counter() - t0
    n_loop = min(loop_draws, n_boot)
    t0 = time.perf_counter()
    slow = per_draw_loop(y, s, codes, draws[:n_loop])
    t_loop = time.perf_counter() - t0
    t_loop_full = t_loop * n_boot / n_loop
    diff = np.nanmax(np.abs(fast[:n_loop] - slow))
    scaled = "" if n_loop == n_boot else f" (measured {t_loop:.2f} s on {n_loop} draws, scaled)"
    print(f"AUC bootstrap, {len(y)} trajectories in {len(tasks)} tasks, {n_boot} draws, one judge:")
    print(f"  vectorized (draws + counts + U as a quadratic form): {t_fast * 1000:.0f} ms")
    print(f"  per-draw loop (resample + roc_auc_score):            {t_loop_full:.2f} s{scaled}")
    print(f"  speed-up ×{t_loop_full / t_fast:.0f}; max |difference| on the looped draws {diff:.1e}")


def bench_sections(frames: dict[str, pd.DataFrame], n_boot: int) -> None:
    """Each report section computed alone, the way `report_tables` computes it, and its share of their sum."""
    times = {}
    for name in ("inputs", *SECTION_NAMES):
        t0 = time.perf_counter()
        report_tables(frames, [name], n_boot=n_boot, seed=0)
        times[name] = time.perf_counter() - t0
    total = sum(times.values())
    print(f"report sections computed alone (sum {total:.2f} s):")
    for name, t in sorted(times.items(), key=lambda kv: -kv[1]):
        print(f"  {name:<15} {t:6.2f} s  {t / total:6.1%}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n-boot", type=int, default=10_000, help="bootstrap draws (default %(default)s)")
    ap.add_argument("--loop-draws", type=int, default=1000, help="draws timed in the per-draw loop (default %(default)s)")
    ap.add_argument("--repeat", type=int, default=3, help="warm report runs (default %(default)s)")
    ap.add_argument("--figures", action="store_true", help="also time a report with figures")
    ap.add_argument("--keep", type=Path, help="write the reports here instead of a temporary folder")
    args = ap.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="gcpc-analysis-bench-"))
    try:
        t0 = time.perf_counter()
        frames = synthetic_frames()
        print(f"synthetic project built in {time.perf_counter() - t0:.2f} s: "
              + ", ".join(f"{k} {len(v):,} rows" for k, v in frames.items()))
        n_traj = frames["scores"]["trajectory_id"].nunique()
        print(f"  {n_traj:,} trajectories; {os.cpu_count()} CPUs; n_boot {args.n_boot:,}")
        times = []
        for k in range(args.repeat + 1):
            t0 = time.perf_counter()
            result = build_report(frames, work / "report", n_boot=args.n_boot, seed=0, figures=False)
            times.append(time.perf_counter() - t0)
        pairs = len(result.tables["skills_pairs"]) // result.tables["skills_pairs"]["judge"].nunique()
        rated = len(result.tables["agreement_spearman_data"])
        print(f"full report without figures ({len(result.csv)} CSV tables, {pairs:,} matched pairs, "
              f"{rated} rated trajectories): cold {times[0]:.2f} s, warm median {statistics.median(times[1:]):.2f} s "
              f"(runs: {', '.join(f'{t:.2f}' for t in times[1:])}); target ≤ 3 s")
        bench_sections(frames, args.n_boot)
        if args.figures:
            t0 = time.perf_counter()
            result = build_report(frames, work / "report_fig", n_boot=args.n_boot, seed=0, figures=True)
            print(f"full report with {len(result.figures)} figures: {time.perf_counter() - t0:.2f} s, "
                  f"report.html {result.html.stat().st_size / 2**20:.1f} MB")
        bench_bootstrap(frames["scores"], args.n_boot, args.loop_draws)
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
