"""Tasks, trials (trajectories) and their events, and what an import skipped (gcpc_core.ingest)."""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, TypeAdapter
from sqlite_utils import Database

from ..models import CtrfTest, Event, Task, Trajectory, VerifierTest
from .common import Repository, Row, dumps, utcnow


class TrajectoryClash(ValueError):
    """A trial that cannot be stored under its name; the message says which row is in the way."""


_EVENT_COLUMNS = ("trajectory_id", "seq", "id", "kind", "tool_name", "call_id", "path", "is_error", "source", "text")
EventRow = tuple[str, int, str, str, str | None, str | None, str | None, int, str, str]
"""One `events` row, in `_EVENT_COLUMNS` order."""
_INSERT_EVENT = f"INSERT INTO events ({', '.join(_EVENT_COLUMNS)}) VALUES ({', '.join('?' * len(_EVENT_COLUMNS))})"
_TRAJ_COLUMNS = (*Trajectory.model_fields, "imported_at")
_UPSERT_TRAJ = (
    f"INSERT INTO trajectories ({', '.join(_TRAJ_COLUMNS)}) VALUES ({', '.join('?' * len(_TRAJ_COLUMNS))}) "
    f"ON CONFLICT(id) DO UPDATE SET {', '.join(f'{c} = excluded.{c}' for c in _TRAJ_COLUMNS if c != 'id')}"
)
"""Import writes trajectories in batches: fixed statements, so sqlite-utils' per-call schema
lookups (a third of the write time in bench/import_bench.py) are not paid per trial."""


def event_rows(traj_id: str, events: Iterable[Event]) -> list[EventRow]:
    """The `events` rows of one trajectory. Import builds them in its parse workers: plain tuples
    cross to the writing process several times faster than pickled models (bench/import_bench.py)."""
    return [(traj_id, e.seq, e.id, e.kind, e.tool_name, e.call_id, e.path, int(e.is_error), e.source, e.text)
            for e in events]


_SELECT_EVENTS = (
    "SELECT id, seq, kind, text, tool_name, call_id, path, coalesce(is_error, 0) != 0 AS is_error,"
    " coalesce(source, '') AS source FROM events WHERE trajectory_id = ?{skip} ORDER BY seq"
)
"""One fixed statement (per number of kinds skipped) rather than `db["events"].rows_where`, which looks
the table up in sqlite_master on every call: judging reads every trajectory's events on its hot path."""
_EVENTS = TypeAdapter(list[Event])
"""Events read back are validated again, all of a trajectory's in one call (several times faster
than one model per row): a row edited outside GCPC is refused, not shown as it is."""
_JSON_TASK = ("verifier_files", "tests", "parse_errors", "metadata")
_JSON_TRAJ = ("ctrf", "timings", "exception", "tokens")


class ImportIssueRow(Row):
    """A task or trial folder an import skipped, and why (shown on the Overview page)."""

    TABLE: ClassVar[str] = "import_issues"

    id: int
    """Row id, in the order recorded."""
    run_at: str
    """When the import that skipped it ran."""
    path: str
    """The skipped folder or file."""
    kind: str
    """What happened to it (`skipped`)."""
    reason: str
    """Why it was skipped."""


class TrajectoryRef(BaseModel):
    """What judging a trajectory needs of its `trajectories` row (a projection of three columns, not
    a table's `Row`): which it is, its task, and the hash that says whether a stored judgment is of
    this very log. Planning a run reads only these: the full `Trajectory` (outcome, timings, verifier
    results) costs a validation per trial before the first request can go out."""

    model_config = ConfigDict(use_attribute_docstrings=True, frozen=True)

    id: str
    """Trajectory id (the trial folder's name)."""
    task: str
    """Id of the task it is a trial of."""
    content_hash: str
    """Hash of the imported log: a judgment of another hash is of another log."""


class TrialRepository(Repository):
    """Tasks, trials and events: written by import, read by every later stage."""

    def upsert_task(self, task: Task) -> bool:
        """Store a task; returns False when an identical copy is already stored."""
        row = task.model_dump()
        for key in _JSON_TASK:
            row[key] = dumps(row[key])
        existing = self._task_row(task.id)
        if existing is not None and all(existing[k] == row[k] for k in row):
            return False
        row["imported_at"] = utcnow()
        with self.atomic() as db:
            db["tasks"].upsert(row, pk="id")
        return True

    def _task_row(self, task_id: str) -> dict | None:
        rows = list(self.db["tasks"].rows_where("id = ?", [task_id]))
        return rows[0] if rows else None

    def get_task(self, task_id: str) -> Task | None:
        row = self._task_row(task_id)
        return None if row is None else _task_from_row(row)

    def tasks(self) -> list[Task]:
        return [_task_from_row(r) for r in self.db["tasks"].rows_where(order_by="id")]

    def task_ids(self) -> set[str]:
        return {r["id"] for r in self.db["tasks"].rows_where(select="id")}

    # ---- trajectories ---------------------------------------------------

    def trajectory_hashes(self) -> dict[str, tuple[str, str]]:
        """source path → (trajectory id, content hash): what a re-import compares against."""
        return {
            r["source_path"]: (r["id"], r["content_hash"])
            for r in self.db["trajectories"].rows_where(select="id, source_path, content_hash")
        }

    def replace_trajectory(self, traj: Trajectory, events: Iterable[Event]) -> str:
        """Store a trajectory with its events in one transaction, replacing an older copy.

        Returns `imported` or `updated`; raises `TrajectoryClash` as `replace_trajectories` reports it.
        """
        done = self.replace_trajectories([(traj, event_rows(traj.id, events))])[0]
        if isinstance(done, TrajectoryClash):
            raise done
        return done

    def replace_trajectories(self, batch: Iterable[tuple[Trajectory, list[EventRow]]]) -> list[str | TrajectoryClash]:
        """Store trajectories with their events (`event_rows`) in one transaction, replacing older copies.

        Returns, per trajectory, `imported`, `updated` or the `TrajectoryClash` that kept it out (the
        others are stored). The checks run inside the write transaction, so two imports racing cannot
        both claim a name: a trial name already held by another folder is a clash, and so is renaming
        a stored trial (its `trial_name` changed) while judgments, scores or studies refer to the old
        name. A rename without such references updates the row in place. Each trajectory's checks run
        before any of its writes, so a clash leaves nothing of it behind.
        """
        imported_at = utcnow()
        out: list[str | TrajectoryClash] = []
        with self.atomic() as db:
            for traj, rows in batch:
                if any(r[0] != traj.id for r in rows):
                    raise ValueError(f"event rows of {traj.id!r} name another trajectory")
                try:
                    out.append(self._replace_one(db, traj, rows, imported_at))
                except TrajectoryClash as exc:
                    out.append(exc)
        return out

    def _replace_one(self, db: Database, traj: Trajectory, rows: list[EventRow], imported_at: str) -> str:
        row = traj.model_dump()
        for key in _JSON_TRAJ:
            row[key] = dumps(row[key])
        row["is_demo"] = int(traj.is_demo)
        row["imported_at"] = imported_at
        conn = db.conn
        owner = conn.execute("SELECT source_path FROM trajectories WHERE id = ?", [traj.id]).fetchone()
        if owner is not None and owner[0] != traj.source_path:
            raise TrajectoryClash(f"trial name {traj.id!r} is already imported from {owner[0]}")
        old = conn.execute("SELECT id FROM trajectories WHERE source_path = ? AND id != ?",
                           [traj.source_path, traj.id]).fetchone()
        if old is not None:
            refs = self._trajectory_references(db, old[0])
            if refs:
                raise TrajectoryClash(
                    f"trial name changed from {old[0]!r} to {traj.id!r}, but {', '.join(refs)} refer to "
                    f"{old[0]!r}: kept as it was (restore the name, or remove those rows to rename)")
            conn.execute("DELETE FROM events WHERE trajectory_id = ?", [old[0]])
            conn.execute("UPDATE trajectories SET id = ? WHERE id = ?", [traj.id, old[0]])
        conn.execute("DELETE FROM events WHERE trajectory_id = ?", [traj.id])
        conn.execute(_UPSERT_TRAJ, [row[c] for c in _TRAJ_COLUMNS])
        # Events are the bulk of an import: one prepared statement, executemany, instead of
        # insert_all's per-value conversion, which cost ~60% of import time (bench/import_bench.py).
        conn.executemany(_INSERT_EVENT, rows)
        return "updated" if owner is not None or old is not None else "imported"

    @staticmethod
    def _trajectory_references(db: Database, traj_id: str) -> list[str]:
        """`table (n rows)` for every table other than events whose rows name this trajectory."""
        found = []
        for name in db.table_names():
            if name in ("events", "trajectories") or "trajectory_id" not in db[name].columns_dict:
                continue
            n = db[name].count_where("trajectory_id = ?", [traj_id])
            if n:
                found.append(f"{name} ({n} rows)")
        return found

    def set_trial_indexes(self, indexes: dict[str, int]) -> None:
        """Apply recomputed matched-pair indexes (trajectory id → index)."""
        with self.atomic() as db:  # one statement for all: sqlite-utils' update() re-reads each row
            db.conn.executemany("UPDATE trajectories SET trial_index = ? WHERE id = ?",
                                [(index, traj_id) for traj_id, index in indexes.items()])

    def trajectories(self, *, task: str | None = None) -> list[Trajectory]:
        where, args = ("task = ?", [task]) if task else (None, [])
        rows = self.db["trajectories"].rows_where(where, args, order_by="task, id")
        return [_traj_from_row(r) for r in rows]

    def trajectory_refs(self) -> list[TrajectoryRef]:
        """Every trajectory's `TrajectoryRef`, in the order of `trajectories()`."""
        rows = self.db["trajectories"].rows_where(  # a NULL hash reads as "", as in `Trajectory`
            select="id, task, coalesce(content_hash, '') AS content_hash", order_by="task, id")
        return [TrajectoryRef.model_validate(r) for r in rows]

    def get_trajectory(self, traj_id: str) -> Trajectory | None:
        rows = list(self.db["trajectories"].rows_where("id = ?", [traj_id]))
        return _traj_from_row(rows[0]) if rows else None

    def events(self, traj_id: str, *, skip_kinds: Collection[str] = ()) -> list[Event]:
        """A trajectory's events in order, validated; `skip_kinds` leaves events of those kinds unread
        (a judge reads only evidence). A row of an unknown kind is never skipped: it is refused."""
        skip = f" AND kind NOT IN ({', '.join('?' * len(skip_kinds))})" if skip_kinds else ""
        cursor = self.db.conn.execute(_SELECT_EVENTS.format(skip=skip), [traj_id, *skip_kinds])
        columns = [c[0] for c in cursor.description]
        return _EVENTS.validate_python([dict(zip(columns, row)) for row in cursor])

    # ---- import issues ----------------------------------------------------

    def record_import_issues(self, issues: Iterable[tuple[str, str, str]]) -> None:
        """Keep (path, kind, reason) of every skipped task or trial for the app to show."""
        run_at = utcnow()
        with self.atomic() as db:
            db["import_issues"].insert_all(
                {"run_at": run_at, "path": p, "kind": k, "reason": r} for p, k, r in issues
            )

    def import_issues(self) -> list[ImportIssueRow]:
        """Everything imports skipped, oldest first."""
        return [ImportIssueRow.from_db(r) for r in self.db["import_issues"].rows_where(order_by="id")]

    def event_counts(self) -> dict[str, int]:
        """trajectory id → number of events, without loading any event."""
        return dict(self.db.execute("SELECT trajectory_id, count(*) FROM events GROUP BY trajectory_id").fetchall())

    def count_trajectories_imported_since(self, since: str) -> int:
        """Trajectories written (imported or updated) at or after the ISO time `since`."""
        return self.db["trajectories"].count_where("imported_at >= ?", [since])


def _task_from_row(row: dict) -> Task:
    data = {k: row[k] for k in Task.model_fields if k in row}
    for key in _JSON_TASK:
        data[key] = json.loads(row[key]) if row[key] else None
    data["tests"] = [VerifierTest(**t) for t in data["tests"] or []]
    return Task(**{k: v for k, v in data.items() if v is not None})


def _traj_from_row(row: dict) -> Trajectory:
    data = {k: row[k] for k in Trajectory.model_fields if k in row}
    for key in _JSON_TRAJ:
        data[key] = json.loads(row[key]) if row[key] else None
    data["ctrf"] = [CtrfTest(**c) for c in data["ctrf"] or []]
    data["timings"] = data["timings"] or {}
    data["tokens"] = data["tokens"] or {}
    data["is_demo"] = bool(row["is_demo"])
    return Trajectory(**{k: v for k, v in data.items() if v is not None or k == "exception"})
