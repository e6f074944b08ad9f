"""The embedded demo project: simulated data, labelled DEMO everywhere it appears.

The corpus itself is written by `demo_corpus`; this module turns it into a
ready project DB, which the app opens when no project is configured.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

from .demo_corpus import DEMO_MARKER, DEMO_SEED, write_demo_corpus
from .ingest import ImportReport, import_project
from .store import JudgmentRow, RunRow, Store, utcnow

__all__ = ["DEMO_CHECKLISTS_DIR", "DEMO_MARKER", "DEMO_SEED", "DEMO_SIMULATED_LABEL", "DEMO_SIMULATED_MODEL",
           "build_demo_project", "default_demo_db", "ensure_demo_project", "write_demo_corpus"]


def default_demo_db() -> Path:
    """Where the app keeps its demo project: `$GCPC_HOME/demo/demo.db` (default ~/.cache/gcpc)."""
    home = Path(os.environ.get("GCPC_HOME") or Path.home() / ".cache" / "gcpc")
    return home / "demo" / "demo.db"


def build_demo_project(db_path: Path, *, seed: int = DEMO_SEED) -> ImportReport:
    """Write the demo corpus beside `db_path` and import it; the DB is marked as demo. Then the demo
    checklists are frozen, every trial is probe-judged, a second SIMULATED run of the probe judge is
    added under another model label (so two runs can be compared), everything is scored, and a
    simulated study is added. Last, the Agreement page's headline for its default settings is computed and
    kept in the DB (`review.agreement.stored_headline`), so the app's first visit of that page reads it."""
    db_path = Path(db_path)
    corpus = db_path.parent / f"{db_path.stem}_corpus"
    tasks_dir, trials_dir = write_demo_corpus(corpus, seed=seed)
    store = Store(db_path)
    store.project.set_meta("is_demo", "1")
    store.project.set_meta("demo_note", DEMO_MARKER)
    report = import_project(store, tasks_dir=tasks_dir, trials_dir=trials_dir, is_demo=True, progress=False)
    _add_demo_judgments(store, seed=seed)
    _add_demo_study(store, seed=seed)
    from .review.agreement import stored_headline  # the review layer builds on this module: import late

    stored_headline(store)
    return report


DEMO_CHECKLISTS_DIR = Path(__file__).with_name("demo_checklists")
"""Hand-written DEMO checklists, with probes, for the three demo tasks."""
DEMO_CHECKLIST_AUTHOR = "gcpc demo"


def _add_demo_judgments(store: Store, *, seed: int) -> None:
    """Freeze the demo checklists, judge every demo trial with the offline probe judge, add the simulated
    second run, score."""
    from .checklist import load_checklist_file, load_rules
    from .checklist.registry import register_checklist
    from .judge import judge_project, score_project  # the judge builds on this package: import late

    rules = load_rules()
    for path in sorted(DEMO_CHECKLISTS_DIR.glob("*.yaml")):
        _, failures = register_checklist(store, load_checklist_file(path), created_by=DEMO_CHECKLIST_AUTHOR, rules=rules)
        if failures:  # tests keep every demo checklist passing the gates
            raise RuntimeError(f"demo checklist {path.name} fails gates: {[f.line() for f in failures]}")
    judge_project(store, judge="probe", progress=False, rules=rules)
    _add_demo_simulated_run(store, seed=seed)
    score_project(store)


DEMO_SIMULATED_MODEL = "demo-model-b (SIMULATED)"
DEMO_SIMULATED_LABEL = "DEMO simulated: probe under demo-model-b"
DEMO_FLIP_SHARE = 0.2
"""Share of the probe's decided (Yes/No) verdicts the simulated second run flips."""


def _add_demo_simulated_run(store: Store, *, seed: int) -> None:
    """A second run of the probe judge whose verdicts are SIMULATED, not judged: the probe's raw
    verdicts with a seeded share of Yes/No flipped, stored under their own label and model and marked
    simulated (so it is never a judge's default run). It lets the compare page show two runs."""
    rng = random.Random(seed)
    base = store.judging.default_labels()["probe"]
    rows_by_traj: dict[str, list[dict]] = {}
    for judged in store.judging.judgments(judge="probe", labels={"probe": base}):
        if judged.route != "endpoint":
            rows_by_traj.setdefault(judged.trajectory_id, []).append(judged.model_dump())
    units = store.judging.units("probe", labels={"probe": base})
    first = next(iter(units.values()))
    run = store.runs.start(RunRow(kind="judge-probe-simulated", model=DEMO_SIMULATED_MODEL,
                                  prompt_version=first.prompt_version, rules_version=first.rules_version,
                                  params={"simulated": True, "from_label": base, "flip_share": DEMO_FLIP_SHARE,
                                          "seed": seed}))
    run_id = run.id
    now = utcnow()
    common = {"label": DEMO_SIMULATED_LABEL, "model": DEMO_SIMULATED_MODEL, "run_id": run_id, "created_at": now}
    flip = {"Yes": "No", "No": "Yes"}
    for (traj_id, _), unit in sorted(units.items()):
        rows = []
        for row in rows_by_traj.get(traj_id, []):
            verdict = row["verdict_raw"]
            if verdict in flip and rng.random() < DEMO_FLIP_SHARE:
                row = {**row, "verdict_raw": flip[verdict], "rationale": f"SIMULATED (demo): the probe judge said "
                       f"{verdict}; this simulated run says {flip[verdict]}"}
            rows.append(JudgmentRow(**{**row, **common, "verdict": row["verdict_raw"], "reason": row["reason_raw"],
                                       "scored_at": None}))
        store.judging.save_trajectory_judgment(unit.replaced(**common), rows, [], simulated=True,
                                       note="DEMO: simulated verdicts (the probe judge's, a share flipped), not a judge run")
    store.runs.finish(run.replaced(status="done", wall_s=0.0))


def _add_demo_study(store: Store, *, seed: int) -> None:
    """A small human study answered by SIMULATED raters (annotations.simulate), so study pages have data."""
    from annotations.simulate import add_demo_study  # annotations builds on gcpc_core: import late

    add_demo_study(store, seed=seed)


def ensure_demo_project(db_path: Path | None = None) -> Path:
    """Build the demo project on first use; later calls reuse it."""
    db_path = Path(db_path or default_demo_db())
    if not db_path.is_file() or Store(db_path).project.get_meta("is_demo") != "1":
        build_demo_project(db_path)
    return db_path
