"""The project DB: one SQLite file per project, and its connection.

Each thread gets its own connection (Streamlit serves sessions from several threads), every
connection runs in WAL mode with foreign keys on and a busy timeout, and each logical write is one
`atomic()` transaction so a failure never leaves half a trial. Opening a `Store` applies the
migrations the file has not seen yet, once however many processes open it at the same time, and
refuses (`SchemaTooNew`) a file that a newer GCPC has migrated, before writing to it. The tables of
each stage are read and written through the repository that hangs off the store (`store.trials`, …).
"""

from __future__ import annotations

import fcntl
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlite_utils import Database

from .annotations import AnnotationRepository
from .checklists import ChecklistRepository
from .common import PAGE_SIZE
from .judging import JudgingRepository
from .migrations import MIGRATIONS, SchemaTooNew, refuse_newer_schema
from .perturbations import PerturbationRepository
from .project import ProjectRepository
from .runs import RunRepository
from .studies import StudyRepository
from .trials import TrialRepository

BUSY_TIMEOUT_S = 60.0


class Store:
    """A project DB. Cheap to create; safe to share between threads."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._local = threading.local()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._set_up()
        self.trials = TrialRepository(self)
        self.runs = RunRepository(self)
        self.checklists = ChecklistRepository(self)
        self.judging = JudgingRepository(self)
        self.studies = StudyRepository(self)
        self.annotations = AnnotationRepository(self, self.judging, self.studies)
        self.perturbations = PerturbationRepository(self, self.judging)
        self.project = ProjectRepository(self, self.judging)

    @property
    def db(self) -> Database:
        """This thread's connection, opened on first use."""
        db = getattr(self._local, "db", None)
        if db is None:
            conn = sqlite3.connect(str(self.path), timeout=BUSY_TIMEOUT_S, check_same_thread=False)
            db = Database(conn)
            try:
                refuse_newer_schema(db, self.path)  # before anything is written
            except SchemaTooNew:
                conn.close()
                raise
            db.execute("PRAGMA foreign_keys = ON;")
            db.execute("PRAGMA synchronous = NORMAL;")
            self._local.db = db
        return db

    def _set_up(self) -> None:
        """Switch the file to WAL and apply the pending migrations, exactly once however many processes open
        it at the same time: a DB that is set up already takes no lock; otherwise the openers take turns on
        an exclusive `flock` of `<db>.lock` (SQLite's own locks cannot queue them: switching the journal
        mode fails at once with "database is locked" while another connection does it) and each looks
        again once it holds it. The migrations run in one write transaction, which waits for other writers."""
        db = self.db
        if db.journal_mode == "wal" and not MIGRATIONS.pending(db):
            return
        with open(f"{self.path}.lock", "a") as lock:  # "a": made if missing, never truncated
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file is closed (or the process ends)
            refuse_newer_schema(db, self.path)  # again: a newer GCPC may have migrated it meanwhile
            db.execute(f"PRAGMA page_size = {PAGE_SIZE};")  # takes effect in a new DB only, before WAL
            db.enable_wal()
            with self.atomic():
                MIGRATIONS.apply(db)

    @contextmanager
    def atomic(self) -> Iterator[Database]:
        """One write transaction: everything inside commits together or not at all.

        It starts with BEGIN IMMEDIATE: a deferred transaction that reads and then
        writes cannot wait for a concurrent writer in WAL mode (SQLITE_BUSY at once),
        whereas taking the write lock up front lets the busy timeout queue writers.
        """
        db = self.db
        if db.conn.in_transaction:
            with db.atomic():  # nested: a savepoint inside the open transaction
                yield db
            return
        db.execute("BEGIN IMMEDIATE")
        try:
            yield db
        except BaseException:
            db.rollback()
            raise
        else:
            db.commit()

    def close(self) -> None:
        """Close this thread's connection (other threads keep theirs)."""
        db = getattr(self._local, "db", None)
        if db is not None:
            db.close()
            self._local.db = None

    @property
    def schema_version(self) -> int:
        """Number of applied migrations."""
        return len(MIGRATIONS.applied(self.db))
