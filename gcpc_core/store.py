"""The project DB: one SQLite file per project, and the only module that speaks SQL.

Everything is written through sqlite-utils. Each thread gets its own
connection (Streamlit serves sessions from several threads), every connection
runs in WAL mode with foreign keys on and a busy timeout, and each logical
write is one `atomic()` transaction so a failure never leaves half a trial.
The schema is versioned with sqlite-utils migrations.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from sqlite_utils import Database
from sqlite_utils.migrations import Migrations

from .models import CtrfTest, Event, Task, Trajectory, VerifierTest

__all__ = ["SCHEMA_VERSION", "Store", "utcnow"]

MIGRATIONS = Migrations("gcpc")
BUSY_TIMEOUT_S = 60.0


def utcnow() -> str:
    """ISO-8601 UTC timestamp used for every `created_at` column."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


@MIGRATIONS()
def m001_core(db: Database) -> None:
    db["meta"].create({"key": str, "value": str}, pk="key")
    db["tasks"].create(
        {
            "id": str,
            "instruction": str,
            "verifier_files": str,
            "test_script": str,
            "tests": str,
            "parse_errors": str,
            "metadata": str,
            "source_path": str,
            "imported_at": str,
        },
        pk="id",
        not_null={"instruction", "source_path"},
    )
    db["trajectories"].create(
        {
            "id": str,
            "task": str,
            "agent": str,
            "agent_version": str,
            "model": str,
            "condition": str,
            "condition_basis": str,
            "trial_index": int,
            "outcome": str,
            "reward": float,
            "reward_source": str,
            "ctrf": str,
            "timings": str,
            "exception": str,
            "tokens": str,
            "source_path": str,
            "log_path": str,
            "log_format": str,
            "log_bytes": int,
            "content_hash": str,
            "is_demo": int,
            "imported_at": str,
        },
        pk="id",
        foreign_keys=[("task", "tasks", "id")],
        not_null={"task", "outcome", "source_path", "log_format"},
    )
    db["trajectories"].create_index(["task"])
    db["trajectories"].create_index(["source_path"], unique=True)
    db["events"].create(
        {
            "trajectory_id": str,
            "seq": int,
            "id": str,
            "kind": str,
            "tool_name": str,
            "call_id": str,
            "path": str,
            "is_error": int,
            "source": str,
            "text": str,
        },
        pk=("trajectory_id", "seq"),
        foreign_keys=[("trajectory_id", "trajectories", "id")],
        not_null={"id", "kind", "text"},
    )
    db["import_issues"].create(
        {
            "id": int,
            "run_at": str,
            "path": str,
            "kind": str,
            "reason": str,
        },
        pk="id",
    )


@MIGRATIONS()
def m101_llm_layer(db: Database) -> None:
    """LLM layer (gcpc_core.llm): runs, the content-addressed response cache, one row per call."""
    db["runs"].create(
        {
            "id": str,
            "kind": str,
            "model": str,
            "prompt_version": str,
            "rules_version": str,
            "params": str,
            "status": str,
            "started_at": str,
            "finished_at": str,
            "wall_s": float,
            "calls": int,
            "http_calls": int,
            "cache_hits": int,
            "errors": int,
            "prompt_tokens": int,
            "cached_tokens": int,
            "completion_tokens": int,
            "cost_usd": float,
            "unpriced_calls": int,
        },
        pk="id",
        not_null={"kind", "status", "started_at"},
    )
    db["llm_cache"].create(
        {"key": str, "model": str, "response": str, "created_at": str},
        pk="key",
        not_null={"model", "response", "created_at"},
    )
    db["llm_calls"].create(
        {
            "id": int,
            "run_id": str,
            "created_at": str,
            "key": str,
            "model": str,
            "prompt_version": str,
            "tag": str,
            "cache_hit": int,
            "status": str,
            "prompt_tokens": int,
            "cached_tokens": int,
            "completion_tokens": int,
            "cost_usd": float,
            "latency_s": float,
            "retries": int,
            "error": str,
            "raw_reply": str,
        },
        pk="id",
        foreign_keys=[("run_id", "runs", "id")],
        not_null={"created_at", "status"},
    )
    db["llm_calls"].create_index(["run_id"])
    db["llm_calls"].create_index(["key"])


@MIGRATIONS()
def m102_checklists(db: Database) -> None:
    """Checklists, frozen or failed, one row per version; frozen rows cannot be updated."""
    db["checklists"].create(
        {
            "sha": str,
            "task": str,
            "version": int,
            "source": str,
            "status": str,
            "checklist": str,
            "gate_failures": str,
            "reason": str,
            "raw_reply": str,
            "attempts": str,
            "rules_version": str,
            "model": str,
            "prompt_version": str,
            "run_id": str,
            "created_at": str,
            "created_by": str,
        },
        pk="sha",
        foreign_keys=[("task", "tasks", "id")],
        not_null={"task", "version", "source", "status", "created_at"},
    )
    db["checklists"].create_index(["task", "version"], unique=True)
    # Judgments cite a checklist by sha, so a frozen row must never change under them; the
    # Store never updates one, and this trigger stops anything else that tries.
    db.execute(
        """
        CREATE TRIGGER checklists_frozen_immutable
        BEFORE UPDATE ON checklists
        FOR EACH ROW WHEN OLD.status = 'frozen'
        BEGIN
            SELECT RAISE(ABORT, 'checklist is frozen: store an edit as a new version');
        END
        """
    )


@MIGRATIONS()
def m301_annotations_and_studies(db: Database) -> None:
    """Human annotations (append-only; an edit supersedes) and human-study designs (annotations/)."""
    db["studies"].create(
        {
            "id": str,
            "name": str,
            "status": str,
            "seed": int,
            "params": str,
            "design": str,
            "design_sha": str,
            "is_simulated": int,
            "created_at": str,
            "created_by": str,
        },
        pk="id",
        not_null={"status", "seed", "params", "design", "design_sha", "created_at"},
    )
    db["study_units"].create(
        {"study_id": str, "unit_id": str, "trajectory_id": str, "task": str, "stratum": str},
        pk=("study_id", "unit_id"),
        foreign_keys=[("study_id", "studies", "id"), ("trajectory_id", "trajectories", "id")],
        not_null={"trajectory_id", "task"},
    )
    db["study_units"].create_index(["study_id", "trajectory_id"], unique=True)
    db["study_pairs"].create(
        {"study_id": str, "pair_id": str, "task": str, "left_unit": str, "right_unit": str},
        pk=("study_id", "pair_id"),
        foreign_keys=[("study_id", "studies", "id")],
        not_null={"task", "left_unit", "right_unit"},
    )
    db["study_raters"].create(
        {"study_id": str, "rater": str, "token_hash": str, "is_simulated": int, "created_at": str,
         "token_issued_at": str},
        pk=("study_id", "rater"),
        foreign_keys=[("study_id", "studies", "id")],
        not_null={"created_at"},
    )
    db["study_raters"].create_index(["token_hash"], unique=True)
    db["study_assignments"].create(
        {"id": int, "study_id": str, "rater": str, "kind": str, "target": str, "position": int,
         "active": int, "assigned_at": str, "reassigned_from": str},
        pk="id",
        foreign_keys=[("study_id", "studies", "id")],
        not_null={"study_id", "rater", "kind", "target", "position", "active", "assigned_at"},
    )
    db["study_assignments"].create_index(["study_id", "rater", "kind", "target"], unique=True)
    db["study_assignments"].create_index(["study_id", "kind", "target"])
    # Written as SQL: sqlite-utils cannot declare a self-referencing foreign key or a CHECK.
    db.execute(
        """
        CREATE TABLE annotations (
            id INTEGER PRIMARY KEY,
            kind TEXT NOT NULL CHECK (kind IN ('item_audit', 'progress_rating', 'preference')),
            study_id TEXT REFERENCES studies(id),
            target TEXT NOT NULL,
            task TEXT,
            trajectory_id TEXT,
            unit_id TEXT,
            pair_id TEXT,
            item_id TEXT,
            judge TEXT,
            rater TEXT NOT NULL,
            value TEXT NOT NULL,
            note TEXT,
            confidence INTEGER,
            created_at TEXT NOT NULL,
            supersedes INTEGER REFERENCES annotations(id),
            client_token TEXT NOT NULL,
            source TEXT NOT NULL DEFAULT 'app',
            is_simulated INTEGER NOT NULL DEFAULT 0
        )
        """
    )
    db["annotations"].create_index(["client_token"], unique=True)
    db["annotations"].create_index(["supersedes"], unique=True)  # history is a chain, never a fork
    db["annotations"].create_index(["kind", "study_id", "target", "rater"])
    db["annotations"].create_index(["trajectory_id"])
    for op in ("UPDATE", "DELETE"):
        db.execute(
            f"""
            CREATE TRIGGER annotations_append_only_{op.lower()}
            BEFORE {op} ON annotations
            BEGIN
                SELECT RAISE(ABORT, 'annotations are append-only: store an edit as a new row');
            END
            """
        )


_JSON_TASK = ("verifier_files", "tests", "parse_errors", "metadata")
_JSON_TRAJ = ("ctrf", "timings", "exception", "tokens")


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


class Store:
    """A project DB. Cheap to create; safe to share between threads."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._local = threading.local()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        MIGRATIONS.apply(self.db)

    @property
    def db(self) -> Database:
        """This thread's connection, opened on first use."""
        db = getattr(self._local, "db", None)
        if db is None:
            conn = sqlite3.connect(str(self.path), timeout=BUSY_TIMEOUT_S, check_same_thread=False)
            db = Database(conn)
            db.enable_wal()
            db.execute("PRAGMA foreign_keys = ON;")
            db.execute("PRAGMA synchronous = NORMAL;")
            self._local.db = db
        return db

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

    # ---- meta -----------------------------------------------------------

    def set_meta(self, key: str, value: str) -> None:
        """Project-level settings, e.g. `is_demo`, `pass_threshold`."""
        with self.atomic() as db:
            db["meta"].upsert({"key": key, "value": value}, pk="key")

    def get_meta(self, key: str, default: str | None = None) -> str | None:
        rows = list(self.db["meta"].rows_where("key = ?", [key]))
        return rows[0]["value"] if rows else default

    # ---- tasks ----------------------------------------------------------

    def upsert_task(self, task: Task) -> bool:
        """Store a task; returns False when an identical copy is already stored."""
        row = task.model_dump()
        for key in _JSON_TASK:
            row[key] = _dumps(row[key])
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

    def replace_trajectory(self, traj: Trajectory, events: Iterable[Event]) -> None:
        """Store a trajectory with its events in one transaction, replacing an older copy."""
        row = traj.model_dump()
        for key in _JSON_TRAJ:
            row[key] = _dumps(row[key])
        row["is_demo"] = int(traj.is_demo)
        row["imported_at"] = utcnow()
        event_rows = (
            {
                "trajectory_id": traj.id,
                "seq": e.seq,
                "id": e.id,
                "kind": e.kind,
                "tool_name": e.tool_name,
                "call_id": e.call_id,
                "path": e.path,
                "is_error": int(e.is_error),
                "source": e.source,
                "text": e.text,
            }
            for e in events
        )
        with self.atomic() as db:
            db["events"].delete_where("trajectory_id = ?", [traj.id])
            db["trajectories"].upsert(row, pk="id")
            db["events"].insert_all(event_rows, batch_size=500)

    def set_trial_indexes(self, indexes: dict[str, int]) -> None:
        """Apply recomputed matched-pair indexes (trajectory id → index)."""
        with self.atomic() as db:
            for traj_id, index in indexes.items():
                db["trajectories"].update(traj_id, {"trial_index": index})

    def trajectories(self, *, task: str | None = None) -> list[Trajectory]:
        where, args = ("task = ?", [task]) if task else (None, [])
        rows = self.db["trajectories"].rows_where(where, args, order_by="task, id")
        return [_traj_from_row(r) for r in rows]

    def get_trajectory(self, traj_id: str) -> Trajectory | None:
        rows = list(self.db["trajectories"].rows_where("id = ?", [traj_id]))
        return _traj_from_row(rows[0]) if rows else None

    def events(self, traj_id: str) -> list[Event]:
        rows = self.db["events"].rows_where("trajectory_id = ?", [traj_id], order_by="seq")
        return [_event_from_row(r) for r in rows]

    # ---- import issues ----------------------------------------------------

    def record_import_issues(self, issues: Iterable[tuple[str, str, str]]) -> None:
        """Keep (path, kind, reason) of every skipped task or trial for the app to show."""
        run_at = utcnow()
        with self.atomic() as db:
            db["import_issues"].insert_all(
                {"run_at": run_at, "path": p, "kind": k, "reason": r} for p, k, r in issues
            )

    def import_issues(self) -> list[dict]:
        return list(self.db["import_issues"].rows_where(order_by="id"))

    # ---- summary ----------------------------------------------------------

    def counts(self) -> dict[str, int]:
        """Row counts for `info`; tables that later stages add count as 0 until they exist."""
        db = self.db

        def count(table: str, where: str | None = None) -> int:
            return db[table].count_where(where) if db[table].exists() else 0

        return {
            "tasks": count("tasks"),
            "trials": count("trajectories"),
            "pass": count("trajectories", "outcome = 'PASS'"),
            "fail": count("trajectories", "outcome = 'FAIL'"),
            "with_skills": count("trajectories", "condition = 'with-skills'"),
            "without_skills": count("trajectories", "condition = 'without-skills'"),
            "unknown_condition": count("trajectories", "condition = 'unknown'"),
            "events": count("events"),
            "checklists": count("checklists"),
            "judgments": count("judgments"),
            "annotations": count("annotations"),
            "import_issues": count("import_issues"),
        }

    # ==== LLM layer and checklists (gcpc_core.llm, gcpc_core.synthesis) ====
    # Helpers of this section are static methods here, so the section stays self-contained.

    CHECKLIST_STATUSES = ("frozen", "failed")

    @staticmethod
    def _decode(row: dict, *columns: str) -> dict:
        """Row with its JSON columns decoded."""
        return {**row, **{c: json.loads(row[c]) if row.get(c) else None for c in columns}}

    # ---- LLM response cache ----------------------------------------------

    def llm_cache_get(self, key: str) -> dict | None:
        """The cached chat-completion body for a request key, or None."""
        rows = list(self.db["llm_cache"].rows_where("key = ?", [key], select="response"))
        return json.loads(rows[0]["response"]) if rows else None

    def llm_cache_put(self, key: str, *, model: str, response: dict) -> None:
        """Cache a validated reply; the first one stored for a key wins."""
        with self.atomic() as db:
            db["llm_cache"].insert(
                {"key": key, "model": model, "response": _dumps(response), "created_at": utcnow()},
                pk="key",
                ignore=True,
            )

    # ---- runs and LLM calls -------------------------------------------------

    def start_run(
        self,
        *,
        kind: str,
        model: str | None,
        prompt_version: str | None,
        rules_version: str | None,
        params: dict | None = None,
    ) -> str:
        """Open a `runs` row (status `running`) and return its id."""
        import uuid

        started = utcnow()
        run_id = f"{kind}-{started.replace(':', '').replace('-', '')[:15]}-{uuid.uuid4().hex[:8]}"
        with self.atomic() as db:
            db["runs"].insert(
                {
                    "id": run_id,
                    "kind": kind,
                    "model": model,
                    "prompt_version": prompt_version,
                    "rules_version": rules_version,
                    "params": _dumps(params or {}),
                    "status": "running",
                    "started_at": started,
                },
                pk="id",
            )
        return run_id

    def finish_run(self, run_id: str, *, status: str, wall_s: float, totals: dict) -> None:
        """Close a run with its status, wall time and totals (calls, tokens, cost)."""
        with self.atomic() as db:
            db["runs"].update(run_id, {"status": status, "finished_at": utcnow(), "wall_s": wall_s, **totals})

    def get_run(self, run_id: str) -> dict | None:
        rows = list(self.db["runs"].rows_where("id = ?", [run_id]))
        return self._decode(rows[0], "params") if rows else None

    def runs(self, *, kind: str | None = None) -> list[dict]:
        where, args = ("kind = ?", [kind]) if kind else (None, [])
        return [self._decode(r, "params") for r in self.db["runs"].rows_where(where, args, order_by="started_at, id")]

    def record_llm_call(self, row: dict) -> None:
        """One LLM call: run id, cache hit, tokens, cost, latency, status and error (raw reply on errors)."""
        with self.atomic() as db:
            db["llm_calls"].insert({"created_at": utcnow(), **row}, pk="id")

    def llm_calls(self, *, run_id: str | None = None) -> list[dict]:
        where, args = ("run_id = ?", [run_id]) if run_id else (None, [])
        return list(self.db["llm_calls"].rows_where(where, args, order_by="id"))

    # ---- checklists -------------------------------------------------------------

    def add_checklist(
        self,
        *,
        sha: str,
        task: str,
        status: str,
        source: str,
        checklist: dict | None,
        gate_failures: list[dict] | None = None,
        reason: str | None = None,
        raw_reply: str | None = None,
        attempts: list[dict] | None = None,
        rules_version: str | None = None,
        model: str | None = None,
        prompt_version: str | None = None,
        run_id: str | None = None,
        created_by: str | None = None,
    ) -> dict:
        """Store a checklist as the task's next version and return its row.

        Frozen rows are never updated (an edit is a new sha and so a new row). Storing content whose
        sha is already stored returns the stored row, except that a `failed` row is promoted when the
        same content now passes (e.g. under new rules): failed rows carry no judgments.
        """
        if status not in self.CHECKLIST_STATUSES:
            raise ValueError(f"checklist status must be one of {self.CHECKLIST_STATUSES}, not {status!r}")
        row = {
            "sha": sha,
            "task": task,
            "source": source,
            "status": status,
            "checklist": None if checklist is None else _dumps(checklist),
            "gate_failures": _dumps(gate_failures or []),
            "reason": reason,
            "raw_reply": raw_reply,
            "attempts": _dumps(attempts or []),
            "rules_version": rules_version,
            "model": model,
            "prompt_version": prompt_version,
            "run_id": run_id,
            "created_at": utcnow(),
            "created_by": created_by,
        }
        with self.atomic() as db:
            existing = list(db["checklists"].rows_where("sha = ?", [sha]))
            if existing and not (existing[0]["status"] == "failed" and status == "frozen"):
                return self._checklist_row(existing[0])
            if existing:
                row["version"] = existing[0]["version"]
                db["checklists"].update(sha, row)
            else:
                versions = db["checklists"].rows_where("task = ?", [task], select="max(version) AS v")
                row["version"] = (next(iter(versions))["v"] or 0) + 1
                db["checklists"].insert(row, pk="sha")
        return self.get_checklist(sha)  # type: ignore[return-value]

    def get_checklist(self, sha: str) -> dict | None:
        rows = list(self.db["checklists"].rows_where("sha = ?", [sha]))
        return self._checklist_row(rows[0]) if rows else None

    def checklists(self, *, task: str | None = None, status: str | None = None) -> list[dict]:
        """Checklist rows (JSON columns decoded), by task then version."""
        clauses = [(c, v) for c, v in (("task = ?", task), ("status = ?", status)) if v is not None]
        where = " AND ".join(c for c, _ in clauses) or None
        rows = self.db["checklists"].rows_where(where, [v for _, v in clauses], order_by="task, version")
        return [self._checklist_row(r) for r in rows]

    def latest_checklist(self, task: str, *, status: str | None = "frozen") -> dict | None:
        """The highest version for a task (frozen only, by default)."""
        rows = self.checklists(task=task, status=status)
        return rows[-1] if rows else None

    def _checklist_row(self, row: dict) -> dict:
        return self._decode(row, "checklist", "gate_failures", "attempts")

    def frozen_checklist_tasks(self) -> set[str]:
        """Tasks that have at least one frozen checklist."""
        return {r["task"] for r in self.db["checklists"].rows_where("status = 'frozen'", select="task")}


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


def _event_from_row(row: dict) -> Event:
    return Event(
        id=row["id"],
        seq=row["seq"],
        kind=row["kind"],
        text=row["text"],
        tool_name=row["tool_name"],
        call_id=row["call_id"],
        path=row["path"],
        is_error=bool(row["is_error"]),
        source=row["source"] or "",
    )
