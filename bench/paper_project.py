"""A SIMULATED project DB at the paper's scale, built through the real pipeline: for page benchmarks.

    python bench/paper_project.py OUT.db [--trajectories 4455] [--tasks 85]

The paper's population is 4,455 trajectories over 85 tasks (1,946 matched with/without-Skills pairs, about
40,000 item verdicts per judge). Nothing here is real data: the tasks are copies of the three demo tasks
(`gcpc_core.demo_corpus`, renamed `<task>-NNN`), the trials are demo trials written with one seed after
another and moved to the copies, and the DB is marked as a demo project, so every page shows its DEMO banner.
Then, as `build_demo_project` does, each copy's demo checklist is frozen, every trial is judged with the
offline probe judge and scored, a study of 96 trajectories and 96 pairs is answered by SIMULATED raters, and
SIMULATED auditors audit a random sample of the item verdicts (recorded ``selection: random``).

Building takes minutes (import, judging and scoring of 4,455 trials); `page_load_bench.py --project paper`
builds it once and keeps it beside the bench's other files (`--keep`).
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from annotations.audits import audit_value  # noqa: E402
from annotations.design import DesignParams  # noqa: E402
from annotations.simulate import SIMULATED_RATERS, simulate_answers  # noqa: E402
from annotations.study import create_study  # noqa: E402
from annotations.targets import add_annotation  # noqa: E402
from gcpc_core.checklist import load_checklist_file, load_rules  # noqa: E402
from gcpc_core.checklist.registry import register_checklist  # noqa: E402
from gcpc_core.demo import DEMO_CHECKLISTS_DIR, DEMO_MARKER  # noqa: E402
from gcpc_core.demo_corpus import write_demo_corpus  # noqa: E402
from gcpc_core.ingest import import_project  # noqa: E402
from gcpc_core.judge import judge_project, score_project  # noqa: E402
from gcpc_core.models import ENDPOINT_ITEM_ID  # noqa: E402
from gcpc_core.store import Store  # noqa: E402

PAPER_TRAJECTORIES = 4455
PAPER_TASKS = 85
STUDY_TASKS, STUDY_PER_TASK = 24, 4
"""96 rated trajectories and 96 pairs (4 per task over 24 tasks), 3 raters each: the paper's study size."""
AUDIT_SHARE = 0.02
"""Share of the item verdicts the SIMULATED auditors audit (about 800 of 40,000)."""
AUDITOR_AGREES = 0.85
"""How often a SIMULATED auditor agrees with the probe judge's verdict."""
AUDITOR = "simulated auditor"
_DEMO_TRIALS_PER_TASK = 12
"""Trials one demo corpus holds per task."""


def _write_corpus(root: Path, n_trajectories: int, n_tasks: int) -> tuple[Path, Path]:
    """Copies of the demo tasks and, seed after seed, demo trials moved to them, until `n_trajectories`."""
    tasks_dir, trials_dir = root / "tasks", root / "trials"
    tasks_dir.mkdir(parents=True)
    trials_dir.mkdir()
    per_task = -(-n_trajectories // n_tasks)
    copies: dict[str, list[str]] = {}
    written, seed = 0, 0
    while written < n_trajectories:
        src_tasks, src_trials = write_demo_corpus(root / f"seed-{seed}", seed=seed)
        bases = sorted(p.name for p in src_tasks.iterdir())
        if not copies:
            copies = {b: [f"{b}-{k:03d}" for k in range(i, n_tasks, len(bases))] for i, b in enumerate(bases)}
            for base, names in copies.items():
                for name in names:
                    shutil.copytree(src_tasks / base, tasks_dir / name)
        for trial in sorted(src_trials.iterdir()):
            if written >= n_trajectories:
                break
            result = json.loads((trial / "result.json").read_text(encoding="utf-8"))
            base = result["task_name"]
            names = copies[base]
            # this seed's trials of `base` go to one copy; a copy takes trials from several seeds in turn
            task = names[(seed * _DEMO_TRIALS_PER_TASK // per_task) % len(names)]
            name = f"{task}__s{seed}{trial.name.split('__', 1)[1]}"
            result["task_name"], result["trial_name"] = task, name
            result.get("config", {})["trial_name"] = name
            dest = trials_dir / name
            shutil.copytree(trial, dest)
            (dest / "result.json").write_text(json.dumps(result, indent=4), encoding="utf-8")
            config = json.loads((dest / "config.json").read_text(encoding="utf-8"))
            config["trial_name"] = name
            (dest / "config.json").write_text(json.dumps(config, indent=4), encoding="utf-8")
            written += 1
        shutil.rmtree(root / f"seed-{seed}")
        seed += 1
    return tasks_dir, trials_dir


def _freeze_checklists(store: Store, tasks: list[str]) -> None:
    """Each copy gets its demo task's hand-written checklist, renamed, through the gates."""
    rules = load_rules()
    demo = {load_checklist_file(p).task: load_checklist_file(p) for p in sorted(DEMO_CHECKLISTS_DIR.glob("*.yaml"))}
    for task in tasks:
        base = task.rsplit("-", 1)[0]
        checklist = demo[base].model_copy(update={"task": task})
        _, failures = register_checklist(store, checklist, created_by="gcpc paper-scale bench", rules=rules)
        if failures:
            raise RuntimeError(f"{task}: the demo checklist fails its gates: {[f.line() for f in failures]}")


def _simulated_audits(store: Store, seed: int) -> int:
    """SIMULATED audits of a random `AUDIT_SHARE` of the probe judge's item verdicts, drawn at random."""
    rng = random.Random(seed)
    rows = [j for j in store.judging.judgments(judge="probe") if j.item_id != ENDPOINT_ITEM_ID]
    picks = rng.sample(rows, int(len(rows) * AUDIT_SHARE))
    others = {"Yes": ("No", "Abstain"), "No": ("Yes", "Abstain"), "Abstain": ("Yes", "No")}
    for j in picks:
        agree = rng.random() < AUDITOR_AGREES
        corrected = None if agree else rng.choice(others[j.verdict_raw])
        add_annotation(store, kind="item_audit", rater=AUDITOR, value=audit_value(agree, corrected, "random"),
                       task=j.task, trajectory_id=j.trajectory_id, item_id=j.item_id, judge="probe", label=j.label,
                       is_simulated=True, source="simulated")
    return len(picks)


def build_paper_project(db: Path, *, n_trajectories: int = PAPER_TRAJECTORIES, n_tasks: int = PAPER_TASKS,
                        seed: int = 0) -> dict[str, float]:
    """Write the SIMULATED paper-scale project to `db` (a new file); returns its counts and each stage's seconds."""
    db = Path(db)
    if db.exists():
        raise FileExistsError(f"{db} exists; the paper-scale project is written to a new file")
    times: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="gcpc-paper-corpus-") as tmp:
        started = time.perf_counter()
        tasks_dir, trials_dir = _write_corpus(Path(tmp), n_trajectories, n_tasks)
        times["corpus_s"] = time.perf_counter() - started
        store = Store(db)
        store.project.set_meta("is_demo", "1")
        store.project.set_meta("demo_note", DEMO_MARKER + " — paper-scale copies for benchmarks")
        started = time.perf_counter()
        import_project(store, tasks_dir=tasks_dir, trials_dir=trials_dir, is_demo=True, progress=False)
        times["import_s"] = time.perf_counter() - started
    started = time.perf_counter()
    tasks = sorted(t.id for t in store.trials.tasks())
    _freeze_checklists(store, tasks)
    judge_project(store, judge="probe", progress=False)
    score_project(store)
    times["judge_score_s"] = time.perf_counter() - started
    started = time.perf_counter()
    params = DesignParams(tasks=STUDY_TASKS, per_task=STUDY_PER_TASK, raters_per_unit=len(SIMULATED_RATERS),
                          seed=seed, raters=SIMULATED_RATERS, pairs_per_task=STUDY_PER_TASK)
    create_study(store, params, study_id="paper-scale", name="Paper-scale study (SIMULATED raters)",
                 simulated_raters=SIMULATED_RATERS, created_by="gcpc paper-scale bench")
    simulate_answers(store, "paper-scale", seed=seed)
    n_audits = _simulated_audits(store, seed)
    times["study_audits_s"] = time.perf_counter() - started
    counts = store.project.counts()
    return {"tasks": counts["tasks"], "trials": counts["trials"], "judgments": counts["judgments"],
            "annotations": counts["annotations"], "audits": n_audits, **{k: round(v, 1) for k, v in times.items()}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("db", type=Path, help="the project DB to write (must not exist)")
    parser.add_argument("--trajectories", type=int, default=PAPER_TRAJECTORIES)
    parser.add_argument("--tasks", type=int, default=PAPER_TASKS)
    args = parser.parse_args()
    print(json.dumps(build_paper_project(args.db, n_trajectories=args.trajectories, n_tasks=args.tasks)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
