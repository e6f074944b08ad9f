"""Start-time benchmark of the command line (issue 24: every call paid about 3 s before it started).

    python bench/start_bench.py [--runs 11] [--db project.db] [--command gcpc]

Times, as separate processes, the median wall time of N runs of `gcpc --help` (target ≤ 0.5 s) and of
`gcpc info --db D` on the demo project (target ≤ 1.0 s; built in a temporary folder unless --db names a
project). The baseline measured in the same run is the interpreter's own start (`python -c pass`), so
a figure taken on a busy machine can be read against it: the ratio says how many interpreter starts a
call costs. Each figure also gives the CPU time (user + system) the call used, which a busy machine does
not inflate: on an idle core the wall time is about that. The command is the `gcpc` script beside this interpreter when it is installed
(`pip install -e .`), else `python -m gcpc_core` (what the script runs; --command overrides).
"""

from __future__ import annotations

import argparse
import os
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TARGETS = {"help": 0.5, "info": 1.0}
"""Seconds each call may take (issue 24, on the project's 2-core machine)."""


def default_command() -> list[str]:
    script = Path(sys.executable).with_name("gcpc")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "gcpc_core"]


def median_seconds(cmd: list[str], runs: int) -> tuple[float, float]:
    """Median wall time and median CPU time of `runs` runs of `cmd` (after one untimed run that warms the
    OS file cache)."""
    wall, cpu = [], []
    for i in range(runs + 1):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        subprocess.run(cmd, cwd=REPO, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        elapsed = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if i:
            wall.append(elapsed)
            cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(wall), statistics.median(cpu)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=11, help="timed runs per command (default %(default)s)")
    parser.add_argument("--db", type=Path, help="project DB for `info` (default: the demo, built in a temporary folder)")
    parser.add_argument("--command", help="the command to time, e.g. 'gcpc' (default: %(default)s)",
                        default=shlex.join(default_command()))
    args = parser.parse_args()
    gcpc = shlex.split(args.command)
    with tempfile.TemporaryDirectory(prefix="gcpc-start-bench-") as tmp:
        db = args.db
        if db is None:
            db = Path(tmp) / "demo.db"
            subprocess.run([*gcpc, "demo", "--db", str(db)], cwd=REPO, check=True, stdout=subprocess.DEVNULL)
        baseline = median_seconds([sys.executable, "-c", "pass"], args.runs)
        figures = {"help": median_seconds([*gcpc, "--help"], args.runs),
                   "info": median_seconds([*gcpc, "info", "--db", str(db)], args.runs)}
    load = os.getloadavg()[0]
    print(f"command: {shlex.join(gcpc)}; median of {args.runs} runs each; load average {load:.1f} on "
          f"{os.cpu_count()} cores")
    print(f"baseline `python -c pass`: {baseline[0]:.3f} s (CPU {baseline[1]:.3f} s)")
    ok = True
    for name, label in (("help", "gcpc --help"), ("info", f"gcpc info --db {db.name}")):
        (seconds, cpu), target = figures[name], TARGETS[name]
        ok &= seconds <= target
        print(f"{label}: {seconds:.3f} s, CPU {cpu:.3f} s (target ≤ {target:.1f} s: "
              f"{'met' if seconds <= target else 'MISSED'}; {seconds / baseline[0]:.1f}× the baseline)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
