"""The embedded demo project: simulated data, labelled DEMO everywhere it appears.

The corpus itself is written by `demo_corpus`; this module turns it into a
ready project DB, which the app opens when no project is configured.
"""

from __future__ import annotations

import os
from pathlib import Path

from .demo_corpus import DEMO_MARKER, write_demo_corpus
from .ingest import ImportReport, import_project
from .store import Store

__all__ = ["DEMO_MARKER", "build_demo_project", "default_demo_db", "ensure_demo_project", "write_demo_corpus"]


def default_demo_db() -> Path:
    """Where the app keeps its demo project: `$GCPC_HOME/demo/demo.db` (default ~/.cache/gcpc)."""
    home = Path(os.environ.get("GCPC_HOME") or Path.home() / ".cache" / "gcpc")
    return home / "demo" / "demo.db"


def build_demo_project(db_path: Path, *, seed: int = 7) -> ImportReport:
    """Write the demo corpus beside `db_path` and import it; the DB is marked as demo."""
    db_path = Path(db_path)
    corpus = db_path.parent / f"{db_path.stem}_corpus"
    tasks_dir, trials_dir = write_demo_corpus(corpus, seed=seed)
    store = Store(db_path)
    store.set_meta("is_demo", "1")
    store.set_meta("demo_note", DEMO_MARKER)
    report = import_project(store, tasks_dir=tasks_dir, trials_dir=trials_dir, is_demo=True, progress=False)
    _add_demo_study(store, seed=seed)
    return report


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
