"""Offline-draft benchmark: drafting and gating every task of ../shared/skillsbench in one process.

    python bench/draft_bench.py [--skillsbench ../shared/skillsbench] [--repeat 3] [--base 0386505]

Times `draft_checklist` (which gates its draft: `run_gates`) over the 87 tasks, tasks loaded beforehand and
imports done (one warm-up draft), median of --repeat runs. The baseline is the draft of commit --base (one
assertion item per test, text from docstrings, messages or names), loaded from git into this process and
timed on the same tasks in the same run, so the two figures share the machine's load. Target (issue 26):
≤ 3 s on the reference machine, where the baseline took 1.7 s; the ratio is what carries across machines.
Also prints what each draft holds: assertion items, the share carrying a probe, drafts passing every gate.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gcpc_core.checklist import Rules, load_rules  # noqa: E402
from gcpc_core.checklist.draft import Draft, draft_checklist  # noqa: E402
from gcpc_core.ingest.tasks import find_task_dirs, load_task  # noqa: E402
from gcpc_core.models import Task  # noqa: E402

TARGET_SECONDS = 3.0
REFERENCE_BASELINE_SECONDS = 1.7


def baseline_module(base: str) -> ModuleType | None:
    """The draft module of commit `base`, loaded as `gcpc_core.checklist._draft_baseline` (its relative imports
    resolve to today's package); None when git or the commit is not available."""
    try:
        source = subprocess.run(["git", "show", f"{base}:gcpc_core/checklist/draft.py"], cwd=ROOT, check=True,
                                capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    name = "gcpc_core.checklist._draft_baseline"
    spec = importlib.util.spec_from_loader(name, loader=None, origin=f"{base}:gcpc_core/checklist/draft.py")
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    module.__package__ = "gcpc_core.checklist"
    sys.modules[name] = module
    try:
        exec(compile(source, spec.origin or name, "exec"), module.__dict__)  # noqa: S102 - our own history
    except Exception as exc:  # noqa: BLE001 - an old draft that no longer runs against today's package
        print(f"baseline {base}: cannot load ({exc})", file=sys.stderr)
        return None
    return module


def timed(draft: Callable[[Task, Rules], Draft], tasks: list[Task], rules: Rules, repeat: int) -> tuple[float, list]:
    draft(tasks[0], rules)  # warm-up: lazy imports, compiled rule patterns
    runs, drafts = [], []
    for _ in range(repeat):
        start = time.perf_counter()
        drafts = [draft(t, rules) for t in tasks]
        runs.append(time.perf_counter() - start)
    return statistics.median(runs), drafts


def summary(drafts: list) -> str:
    items = [i for d in drafts for i in d.checklist.items if i.route == "assertion"]
    probed = sum(bool(i.probes) for i in items)
    passing = sum(not d.failures for d in drafts)
    return (f"{len(items)} assertion items, {probed / max(1, len(items)):.1%} with probes; "
            f"{passing}/{len(drafts)} drafts pass every gate")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--skillsbench", type=Path, default=ROOT.parent / "shared" / "skillsbench")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--base", default="0386505", help="commit whose draft is the baseline (default: %(default)s)")
    args = parser.parse_args(argv)
    dirs = find_task_dirs(args.skillsbench / "tasks")
    if not dirs:
        print(f"no tasks under {args.skillsbench / 'tasks'}", file=sys.stderr)
        return 2
    tasks = [load_task(d) for d in dirs]
    rules = load_rules()
    seconds, drafts = timed(draft_checklist, tasks, rules, args.repeat)
    print(f"draft + gates, {len(tasks)} tasks: {seconds:.2f} s (median of {args.repeat}); {summary(drafts)}")
    old = baseline_module(args.base)
    if old is not None:
        base_seconds, base_drafts = timed(old.draft_checklist, tasks, rules, args.repeat)
        ratio = seconds / base_seconds
        print(f"baseline {args.base}, same run: {base_seconds:.2f} s; {summary(base_drafts)}")
        print(f"ratio {ratio:.2f}; at the reference machine's baseline of {REFERENCE_BASELINE_SECONDS} s that is "
              f"{ratio * REFERENCE_BASELINE_SECONDS:.2f} s (target ≤ {TARGET_SECONDS} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
