"""Tasks, trials (trajectories) and their events, and what an import skipped (gcpc_core.ingest)."""

from __future__ import annotations

import sqlite3
from collections.abc import Collection, Iterable, Mapping
from operator import attrgetter
from typing import Annotated, Any, ClassVar

from pydantic import BaseModel, ConfigDict, TypeAdapter
from sqlite_utils import Database

from ..models import Condition, Event, EventKind, LogFormat, Outcome, Task, Trajectory
from .common import JSON, PAGE_SIZE, Repository, Row, select_columns, utcnow


class TrajectoryClash(ValueError):
    """A trial that cannot be stored under its name; the message says which row is in the way."""


class TaskRow(Row):
    """One imported task (a `Task`), its structured parts as JSON."""

    TABLE: ClassVar[str] = "tasks"

    id: str
    """Task name (the folder name)."""
    instruction: str
    """The instruction the agent saw, verbatim."""
    verifier_files: Annotated[dict[str, str] | None, JSON] = None
    """Verifier sources under `tests/`, by file name."""
    test_script: str | None = None
    """`tests/test.sh`, when present."""
    tests: Annotated[list[dict[str, Any]] | None, JSON] = None
    """Parsed verifier test nodes (`VerifierTest` fields), in source order."""
    parse_errors: Annotated[list[str] | None, JSON] = None
    """Verifier files that could not be parsed, each with the reason."""
    metadata: Annotated[dict[str, Any] | None, JSON] = None
    """`task.toml` as parsed."""
    source_path: str
    """The task folder it was imported from."""
    imported_at: str | None = None
    """When it was last written."""

    @classmethod
    def of(cls, task: Task, imported_at: str) -> TaskRow:
        return cls(**task.model_dump(), imported_at=imported_at)


class TrajectoryRow(Row):
    """One imported trial (a `Trajectory`), its structured parts as JSON."""

    TABLE: ClassVar[str] = "trajectories"

    id: str
    """Trial name; unique in a project."""
    task: str
    """The task it ran."""
    agent: str
    """Agent harness name."""
    agent_version: str | None = None
    """Harness version, when recorded."""
    model: str
    """The agent's model."""
    condition: Condition = "unknown"
    """With or without curated Skills, or unknown."""
    condition_basis: str = ""
    """The evidence that decided the condition."""
    trial_index: int = 0
    """Rank among the trials of one (task, agent, model, condition): the matched-pair key."""
    outcome: Outcome
    """Official outcome."""
    reward: float | None = None
    """Official verifier reward."""
    reward_source: str = ""
    """Where the reward came from."""
    ctrf: Annotated[list[dict[str, Any]] | None, JSON] = None
    """Per-test verifier results (`CtrfTest` fields)."""
    timings: Annotated[dict[str, Any] | None, JSON] = None
    """Start and finish times of the trial and its phases."""
    exception: Annotated[dict[str, Any] | None, JSON] = None
    """`exception_info` of `result.json`, or None."""
    tokens: Annotated[dict[str, Any] | None, JSON] = None
    """Agent token usage as the harness recorded it."""
    source_path: str
    """The trial folder (unique: a second trial of one folder is a rename)."""
    log_path: str
    """The agent log, relative to the trial folder."""
    log_format: LogFormat
    """Detected agent-log format."""
    log_bytes: int = 0
    """Size of the agent log in bytes."""
    content_hash: str = ""
    """Hash of the trial's files: what a re-import compares."""
    is_demo: bool = False
    """A trial of the embedded, simulated demo corpus."""
    imported_at: str | None = None
    """When it was last written."""
    outcome_basis: str | None = None
    """The evidence for the outcome (NULL in rows imported before it was recorded, read as "")."""

    @classmethod
    def of(cls, traj: Trajectory, imported_at: str) -> TrajectoryRow:
        return cls(**traj.model_dump(), imported_at=imported_at)


class EventRow(Row):
    """One normalized event of one trajectory (an `Event` and the trajectory it belongs to). Import
    moves these as packs (`pack_event_values`), never as models: see there."""

    TABLE: ClassVar[str] = "events"

    trajectory_id: str
    """The trajectory."""
    seq: int
    """1-based position in the trajectory."""
    id: str
    """`E<seq>`: what citations point at."""
    kind: EventKind
    """What the step is."""
    tool_name: str | None = None
    """Tool of a call, output or file content."""
    call_id: str | None = None
    """The tool call an output or file content came from."""
    path: str | None = None
    """The file of a file content."""
    is_error: bool = False
    """A tool result the harness marked as an error, or a failed write."""
    source: str = ""
    """Where in the log file the step came from."""
    text: str
    """The step's content, whole."""


EventPack = bytes
"""A trajectory's events as `pack_event_values` gives them: what import's parse workers send the one
writing process, and what `replace_trajectories` stores."""
_FIELDS = tuple(Event.model_fields)
_PACK_TABLE = f"CREATE TABLE events ({', '.join(_FIELDS)})"
_PACK_INSERT = f"INSERT INTO events VALUES ({', '.join('?' * len(_FIELDS))})"
_OF_EVENT = attrgetter(*_FIELDS)
_SCRATCH = "gcpc_event_pack"
"""The in-memory database, attached to a writing connection, that a pack is loaded into to be copied."""
_COPY_EVENTS = (f"INSERT INTO main.events ({', '.join(EventRow.columns())}) "
                f"SELECT ?, {', '.join(EventRow.columns()[1:])} FROM {_SCRATCH}.events ORDER BY rowid")
"""Every `events` column after `trajectory_id` is the `Event` field of the same name; the packed
table holds no trajectory id, so a pack can only be stored as the events of the trajectory it is
given with."""


def pack_event_values(values: Iterable[tuple[Any, ...]]) -> EventPack:
    """Events given as their values in `Event` field order (what a log parser gives, already of the
    types an `Event` holds) as a serialized in-memory SQLite database of one table.

    Why: import parses in worker processes but stores from one writer. Sent as value tuples, every
    value of every event was unpickled and bound to a statement by that one writer, ~7 CPU ms per MB
    of log, the serial part that bounded the import whatever the number of workers. A pack is one
    bytes object to send, and the writer copies its rows inside SQLite (`_COPY_EVENTS`); the binding
    happens here, in the workers, in parallel (bench/import_bench.py)."""
    conn = sqlite3.connect(":memory:", isolation_level=None)
    try:
        conn.execute(f"PRAGMA page_size = {PAGE_SIZE}")  # as the project DB's
        conn.execute(_PACK_TABLE)
        conn.execute("BEGIN")
        conn.executemany(_PACK_INSERT, values)
        conn.execute("COMMIT")
        return conn.serialize()
    finally:
        conn.close()


def pack_events(events: Iterable[Event]) -> EventPack:
    """`pack_event_values` of validated events (a hand-made or re-stored trajectory's)."""
    return pack_event_values(map(_OF_EVENT, events))


_UPSERT_TASK = TaskRow.upsert_sql("id")
_UPSERT_TRAJ = TrajectoryRow.upsert_sql("id")
"""Import writes trajectories in batches: fixed statements, so sqlite-utils' per-call schema
lookups (a third of the write time in bench/import_bench.py) are not paid per trial."""


_EVENT_SELECT, _EVENT_DEFAULTS = select_columns(Event)
_SELECT_EVENTS = f"SELECT {_EVENT_SELECT} FROM events WHERE trajectory_id = ?{{skip}} ORDER BY seq"
"""One fixed statement (per number of kinds skipped) rather than `db["events"].rows_where`, which looks
the table up in sqlite_master on every call: judging reads every trajectory's events on its hot path."""
_EVENTS = TypeAdapter(list[Event])
"""Events read back are validated again, all of a trajectory's in one call (several times faster
than one model per row): a row edited outside GCPC is refused, not shown as it is."""


def _present(row: Mapping[str, Any]) -> dict[str, Any]:
    """A decoded row without its NULL columns, so they read as the domain model's defaults (the JSON
    columns of an empty list or mapping, a column added after the row was written)."""
    return {k: v for k, v in row.items() if v is not None}


class ImportIssueRow(Row):
    """A task or trial folder an import skipped, and why (shown on the Overview page)."""

    TABLE: ClassVar[str] = "import_issues"

    id: int | None = None
    """Row id, in the order recorded (assigned on insert)."""
    run_at: str
    """When the import that skipped it ran."""
    path: str
    """The skipped folder or file."""
    kind: str
    """What happened to it (`skipped`)."""
    reason: str
    """Why it was skipped."""


_INSERT_ISSUE = ImportIssueRow.insert_sql()


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
    content_hash: str = ""
    """Hash of the imported log: a judgment of another hash is of another log (empty for a row from
    before hashes were stored)."""


_REF_SELECT, _REF_DEFAULTS = select_columns(TrajectoryRef)


class TrialRepository(Repository):
    """Tasks, trials and events: written by import, read by every later stage."""

    def upsert_task(self, task: Task) -> bool:
        """Store a task; returns False when an identical copy is already stored."""
        row = TaskRow.of(task, utcnow())
        stored = next(iter(self.db["tasks"].rows_where("id = ?", [task.id])), None)
        unchanged = {"imported_at"}
        # compared as JSON, as stored: a tuple field of a verifier test reads back as a list
        if stored is not None and (TaskRow.from_db(stored).model_dump(mode="json", exclude=unchanged)
                                   == row.model_dump(mode="json", exclude=unchanged)):
            return False
        with self.atomic() as db:
            db.conn.execute(_UPSERT_TASK, row.db_values())
        return True

    def get_task(self, task_id: str) -> Task | None:
        return next((_task(r) for r in self.db["tasks"].rows_where("id = ?", [task_id])), None)

    def tasks(self) -> list[Task]:
        return [_task(r) for r in self.db["tasks"].rows_where(order_by="id")]

    def task_ids(self) -> set[str]:
        return {r["id"] for r in self.db["tasks"].rows_where(select="id")}

    # ---- trajectories ---------------------------------------------------

    def trajectory_hashes(self) -> dict[str, tuple[str, str]]:
        """source path → (trajectory id, content hash): what a re-import compares against."""
        return {
            r["source_path"]: (r["id"], r["content_hash"])
            for r in self.db["trajectories"].rows_where(select="id, source_path, content_hash")
        }

    def replace_trajectories(
        self, batch: Iterable[tuple[Trajectory, EventPack]],
    ) -> list[str | TrajectoryClash]:
        """Store trajectories with their events (`pack_event_values`) in one transaction, replacing older copies.

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
            if not any(name == _SCRATCH for _, name, *_ in db.conn.execute("PRAGMA database_list")):
                db.conn.execute(f"ATTACH ':memory:' AS {_SCRATCH}")  # once per connection
            for traj, pack in batch:
                try:
                    out.append(self._replace_one(db, traj, pack, imported_at))
                except TrajectoryClash as exc:
                    out.append(exc)
        return out

    def _replace_one(self, db: Database, traj: Trajectory, pack: EventPack, imported_at: str) -> str:
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
        conn.execute(_UPSERT_TRAJ, TrajectoryRow.of(traj, imported_at).db_values())
        # Events are the bulk of an import: copied from their pack by SQLite, with no Python per row
        # (see `pack_event_values`). The pack stays loaded until the next one replaces it.
        conn.deserialize(pack, name=_SCRATCH)
        conn.execute(_COPY_EVENTS, [traj.id])
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
        return [_trajectory(r) for r in rows]

    def trajectory_refs(self) -> list[TrajectoryRef]:
        """Every trajectory's `TrajectoryRef`, in the order of `trajectories()`."""
        cursor = self.db.conn.execute(f"SELECT {_REF_SELECT} FROM trajectories ORDER BY task, id", _REF_DEFAULTS)
        columns = [c[0] for c in cursor.description]
        return [TrajectoryRef.model_validate(dict(zip(columns, r))) for r in cursor]

    def get_trajectory(self, traj_id: str) -> Trajectory | None:
        return next((_trajectory(r) for r in self.db["trajectories"].rows_where("id = ?", [traj_id])), None)

    def events(self, traj_id: str, *, skip_kinds: Collection[str] = ()) -> list[Event]:
        """A trajectory's events in order, validated; `skip_kinds` leaves events of those kinds unread
        (a judge reads only evidence). A row of an unknown kind is never skipped: it is refused."""
        skip = f" AND kind NOT IN ({', '.join('?' * len(skip_kinds))})" if skip_kinds else ""
        cursor = self.db.conn.execute(_SELECT_EVENTS.format(skip=skip), [*_EVENT_DEFAULTS, traj_id, *skip_kinds])
        columns = [c[0] for c in cursor.description]
        return _EVENTS.validate_python([dict(zip(columns, row)) for row in cursor])

    # ---- import issues ----------------------------------------------------

    def record_import_issues(self, issues: Iterable[tuple[str, str, str]]) -> None:
        """Keep (path, kind, reason) of every skipped task or trial for the app to show."""
        run_at = utcnow()
        rows = [ImportIssueRow(run_at=run_at, path=p, kind=k, reason=r).db_values() for p, k, r in issues]
        with self.atomic() as db:
            db.conn.executemany(_INSERT_ISSUE, rows)

    def import_issues(self) -> list[ImportIssueRow]:
        """Everything imports skipped, oldest first."""
        return [ImportIssueRow.from_db(r) for r in self.db["import_issues"].rows_where(order_by="id")]

    def event_counts(self) -> dict[str, int]:
        """trajectory id → number of events, without loading any event."""
        return dict(self.db.execute("SELECT trajectory_id, count(*) FROM events GROUP BY trajectory_id").fetchall())

    def count_trajectories_imported_since(self, since: str) -> int:
        """Trajectories written (imported or updated) at or after the ISO time `since`."""
        return self.db["trajectories"].count_where("imported_at >= ?", [since])


def _task(row: Mapping[str, Any]) -> Task:
    return Task.model_validate(_present(TaskRow.decode(row)))


def _trajectory(row: Mapping[str, Any]) -> Trajectory:
    """A stored trajectory, validated once, as a `Trajectory` (its `TrajectoryRow` decoded, not
    validated twice: every later stage reads all of them)."""
    return Trajectory.model_validate(_present(TrajectoryRow.decode(row)))
