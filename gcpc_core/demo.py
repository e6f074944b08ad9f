"""The embedded demo project: simulated data, labelled DEMO everywhere it appears.

The corpus itself is written by `demo_corpus`; this module turns it into a
ready project DB, which the app opens when no project is configured.
"""

from __future__ import annotations

import os
from pathlib import Path

from .demo_corpus import DEMO_MARKER, DEMO_SEED, write_demo_corpus
from .ingest import ImportReport, import_project
from .store import Store

__all__ = ["DEMO_CHECKLISTS_DIR", "DEMO_MARKER", "DEMO_SEED", "build_demo_project", "default_demo_db", "ensure_demo_project", "write_demo_corpus"]


def default_demo_db() -> Path:
    """Where the app keeps its demo project: `$GCPC_HOME/demo/demo.db` (default ~/.cache/gcpc)."""
    home = Path(os.environ.get("GCPC_HOME") or Path.home() / ".cache" / "gcpc")
    return home / "demo" / "demo.db"


def build_demo_project(db_path: Path, *, seed: int = DEMO_SEED) -> ImportReport:
    """Write the demo corpus beside `db_path` and import it; the DB is marked as demo. Then the demo
    checklists are frozen, every trial is probe-judged and scored, and a simulated study is added."""
    db_path = Path(db_path)
    corpus = db_path.parent / f"{db_path.stem}_corpus"
    tasks_dir, trials_dir = write_demo_corpus(corpus, seed=seed)
    store = Store(db_path)
    store.set_meta("is_demo", "1")
    store.set_meta("demo_note", DEMO_MARKER)
    report = import_project(store, tasks_dir=tasks_dir, trials_dir=trials_dir, is_demo=True, progress=False)
    _add_demo_judgments(store)
    _add_demo_study(store, seed=seed)
    return report


DEMO_CHECKLISTS_DIR = Path(__file__).with_name("demo_checklists")
"""Hand-written DEMO checklists, with probes, for the three demo tasks."""
DEMO_CHECKLIST_AUTHOR = "gcpc demo"


def _add_demo_judgments(store: Store) -> None:
    """Freeze the demo checklists, judge every demo trial with the offline probe judge, score."""
    from .checklist import load_checklist_file, load_rules
    from .checklist.registry import register_checklist
    from .judge import judge_project, score_project  # the judge builds on this package: import late

    rules = load_rules()
    for path in sorted(DEMO_CHECKLISTS_DIR.glob("*.yaml")):
        _, failures = register_checklist(store, load_checklist_file(path), created_by=DEMO_CHECKLIST_AUTHOR, rules=rules)
        if failures:  # tests keep every demo checklist passing the gates
            raise RuntimeError(f"demo checklist {path.name} fails gates: {[f.line() for f in failures]}")
    judge_project(store, judge="probe", progress=False, rules=rules)
    score_project(store)


def _add_demo_study(store: Store, *, seed: int) -> None:
    """A small human study answered by SIMULATED raters (annotations.simulate), so study pages have data."""
    from annotations.simulate import add_demo_study  # annotations builds on gcpc_core: import late

    add_demo_study(store, seed=seed)


def ensure_demo_project(db_path: Path | None = None) -> Path:
    """Build the demo project on first use; later calls reuse it."""
    db_path = Path(db_path or default_demo_db())
    if not db_path.is_file() or Store(db_path).get_meta("is_demo") != "1":
        build_demo_project(db_path)
    return db_path
