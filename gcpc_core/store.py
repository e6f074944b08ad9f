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
import uuid
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from sqlite_utils import Database
from sqlite_utils.migrations import Migrations

from .models import CtrfTest, Event, Task, Trajectory, VerifierTest

__all__ = ["EventRow", "Store", "TrajectoryClash", "derive_label", "event_rows", "utcnow"]

MIGRATIONS = Migrations("gcpc")
BUSY_TIMEOUT_S = 60.0
PAGE_SIZE = 16384
"""Page size of a new project DB. Events (log text, ~1 KB a row on average) are most of it; with
16 KiB pages instead of SQLite's default 4 KiB, storing the import benchmark's synthetic events took
~15% less CPU and a ~12% smaller file. An existing DB keeps the page size it was created with."""


class TrajectoryClash(ValueError):
    """A trial that cannot be stored under its name; the message says which row is in the way."""


def utcnow() -> str:
    """ISO-8601 UTC timestamp used for every `created_at` column."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def derive_label(judge: str, model: str | None, prompt_version: str | None, rules_version: str | None) -> str:
    """The label a judge run gets when nobody names it: what makes two runs of one judge kind different.

    Deterministic, so a rerun of the same judge, model, prompt and rules resumes the same label.
    """
    return f"{judge}:{model or 'offline'}:{prompt_version or '-'}:rules-{(rules_version or '-')[:12]}"


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
    _append_only_triggers(db)


def _append_only_triggers(db: Database) -> None:
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


@MIGRATIONS()
def m401_judging(db: Database) -> None:
    """Judging and scores (gcpc_core.judge): one unit row per (trajectory, judge) marks it judged;
    item judgments carry raw and postprocessed verdicts; every reply is kept for audit; scores per
    (trajectory, judge); Batch-API submissions."""
    db["judge_units"].create(
        {
            "trajectory_id": str,
            "judge": str,
            "task": str,
            "checklist_sha": str,
            "model": str,
            "prompt_version": str,
            "rules_version": str,
            "content_hash": str,
            "n_items": int,
            "progress": float,
            "rationale": str,
            "citations": str,
            "reason": str,
            "run_id": str,
            "created_at": str,
        },
        pk=("trajectory_id", "judge"),
        foreign_keys=[("trajectory_id", "trajectories", "id")],
        not_null={"task", "prompt_version", "created_at"},
    )
    db["judgments"].create(
        {
            "trajectory_id": str,
            "judge": str,
            "item_id": str,
            "position": int,
            "task": str,
            "route": str,
            "verdict_raw": str,
            "reason_raw": str,
            "verdict": str,
            "reason": str,
            "citations": str,
            "rationale": str,
            "checklist_sha": str,
            "model": str,
            "prompt_version": str,
            "rules_version": str,
            "run_id": str,
            "created_at": str,
            "scored_at": str,
        },
        pk=("trajectory_id", "judge", "item_id"),
        foreign_keys=[("trajectory_id", "trajectories", "id")],
        not_null={"task", "route", "verdict_raw", "verdict", "created_at"},
    )
    db["judgments"].create_index(["judge", "task"])
    db["judge_replies"].create(
        {
            "id": int,
            "trajectory_id": str,
            "judge": str,
            "run_id": str,
            "attempt": str,
            "item_id": str,
            "llm_key": str,
            "cache_hit": int,
            "status": str,
            "problems": str,
            "raw": str,
            "created_at": str,
        },
        pk="id",
        not_null={"trajectory_id", "judge", "attempt", "status", "created_at"},
    )
    db["judge_replies"].create_index(["trajectory_id", "judge"])
    db["scores"].create(
        {
            "trajectory_id": str,
            "judge": str,
            "task": str,
            "outcome": str,
            "condition": str,
            "partial_credit": float,
            "evidence_coverage": float,
            "perfect": int,
            "perfect_with_endpoint": int,
            "n_items": int,
            "n_yes": int,
            "n_no": int,
            "n_abstain": int,
            "checklist_sha": str,
            "model": str,
            "prompt_version": str,
            "rules_version": str,
            "run_id": str,
            "scored_at": str,
        },
        pk=("trajectory_id", "judge"),
        foreign_keys=[("trajectory_id", "trajectories", "id")],
        not_null={"task", "outcome", "scored_at"},
    )
    db["judge_batches"].create(
        {
            "id": str,
            "judge": str,
            "model": str,
            "prompt_version": str,
            "rules_version": str,
            "status": str,
            "input_path": str,
            "input_file_id": str,
            "output_file_id": str,
            "error_file_id": str,
            "n_requests": int,
            "requests": str,
            "run_id": str,
            "created_at": str,
            "collected_at": str,
            "note": str,
        },
        pk="id",
        not_null={"judge", "model", "status", "requests", "created_at"},
    )


@MIGRATIONS()
def m501_evidence_sensitivity(db: Database) -> None:
    """Evidence sensitivity (gcpc_core.analysis.sensitivity): one row per perturbed (trajectory, judge,
    item) under one (seed, scope, model, prompt version) — the recipe, the original Yes and the verdict
    on the perturbed log. The run itself is a `runs` row (kind `perturb-<judge>`)."""
    db["perturbations"].create(
        {
            "id": str,
            "run_id": str,
            "trajectory_id": str,
            "task": str,
            "judge": str,
            "item_id": str,
            "route": str,
            "checklist_sha": str,
            "model": str,
            "prompt_version": str,
            "rules_version": str,
            "seed": int,
            "scope": str,
            "status": str,
            "kind": str,
            "recipe": str,
            "original_verdict": str,
            "original_citations": str,
            "verdict": str,
            "reason": str,
            "citations": str,
            "rationale": str,
            "replies": str,
            "created_at": str,
        },
        pk="id",
        foreign_keys=[("trajectory_id", "trajectories", "id")],
        not_null={"trajectory_id", "task", "judge", "item_id", "seed", "scope", "status", "created_at"},
    )
    db["perturbations"].create_index(["judge", "task"])


@MIGRATIONS()
def m601_run_owner(db: Database) -> None:
    """Which process runs a `running` row, so a run killed with SIGKILL can be told from a live one."""
    db["runs"].add_column("pid", int)
    db["runs"].add_column("host", str)


@MIGRATIONS()
def m701_llm_modes(db: Database) -> None:
    """The structured-output mode negotiated per (endpoint, model) — with the context window `llm check`
    found the server reporting — and the mode each run used."""
    db["llm_modes"].create(
        {"endpoint": str, "model": str, "mode": str, "rejected": str, "context_window": int, "negotiated_at": str},
        pk=("endpoint", "model"),
        not_null={"mode", "negotiated_at"},
    )
    db["runs"].add_column("structured_mode", str)


@MIGRATIONS()
def m1401_trial_outcome_basis(db: Database) -> None:
    """Trials record the evidence for their official outcome (reward and threshold, or why unscored)."""
    db["trajectories"].add_column("outcome_basis", str)


@MIGRATIONS()
def m1201_run_counts(db: Database) -> None:
    """What each run counted when it ended (imported, judged, scored, frozen, …), as JSON."""
    db["runs"].add_column("counts", str)


_LABELLED = {
    "judge_units": ("trajectory_id", "judge", "label"),
    "judgments": ("trajectory_id", "judge", "label", "item_id"),
    "scores": ("trajectory_id", "judge", "label"),
    "judge_replies": None,
}
"""Tables keyed by judge run label, with their new primary key (replies keep their integer id)."""


@MIGRATIONS()
def m1701_judge_labels(db: Database) -> None:
    """Labelled judge runs: several runs of one judge kind (another model, prompt or rules) coexist.

    Judgments, units, scores and replies gain a `label` in their key. Existing rows get the label
    derived from the provenance their unit recorded (`derive_label`), so nothing is dropped and a
    rerun with the same setting resumes them. `judge_labels` records each label once (who named it,
    whether its verdicts are simulated). Existing item audits are attached to the label of the
    unit they audited: their `label` is set and their `target` extended with it, which keeps each
    audit's supersession chain intact; the append-only triggers are lifted for this one rewrite only.
    """
    db.register_function(derive_label, deterministic=True, replace=True)
    for table in _LABELLED:
        db[table].add_column("label", str)
    db.execute("UPDATE judge_units SET label = derive_label(judge, model, prompt_version, rules_version)")
    unit_label = ("(SELECT u.label FROM judge_units AS u WHERE u.trajectory_id = {t}.trajectory_id "
                  "AND u.judge = {t}.judge)")
    for table in ("judgments", "scores", "judge_replies"):
        db.execute(f"UPDATE {table} SET label = {unit_label.format(t=table)}")
    for table in ("judgments", "scores"):  # rows without a unit (none are written so) keep their own provenance
        db.execute(f"UPDATE {table} SET label = derive_label(judge, model, prompt_version, rules_version) "
                   "WHERE label IS NULL")
    db.execute("UPDATE judge_replies SET label = derive_label(judge, NULL, NULL, NULL) WHERE label IS NULL")
    for table, pk in _LABELLED.items():
        if pk is not None:
            db[table].transform(pk=pk, not_null={"label"})
    db["judge_units"].create_index(["judge", "label"])
    db["judgments"].create_index(["judge", "label", "task"])
    db["judge_replies"].create_index(["trajectory_id", "judge", "label"])
    db["judge_labels"].create(
        {"judge": str, "label": str, "model": str, "prompt_version": str, "rules_version": str, "named": int,
         "simulated": int, "note": str, "created_at": str},
        pk=("judge", "label"),
        not_null={"created_at"},
    )
    db.execute(
        "INSERT INTO judge_labels (judge, label, model, prompt_version, rules_version, named, simulated, created_at) "
        "SELECT judge, label, model, prompt_version, rules_version, 0, 0, min(created_at) FROM judge_units "
        "GROUP BY judge, label"
    )
    db["annotations"].add_column("label", str)
    for op in ("update", "delete"):
        db.execute(f"DROP TRIGGER annotations_append_only_{op}")
    db.execute(
        f"UPDATE annotations SET label = {unit_label.format(t='annotations')} WHERE kind = 'item_audit'"
    )
    db.execute("UPDATE annotations SET target = target || '|' || label WHERE kind = 'item_audit' AND label IS NOT NULL")
    _append_only_triggers(db)


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

_LLM_CALL_COLUMNS = (
    "run_id", "created_at", "key", "model", "prompt_version", "tag", "cache_hit", "status", "prompt_tokens",
    "cached_tokens", "completion_tokens", "cost_usd", "latency_s", "retries", "error", "raw_reply",
)
_SELECT_EVENTS = (
    "SELECT id, seq, kind, text, tool_name, call_id, path, is_error, source FROM events "
    "WHERE trajectory_id = ? ORDER BY seq"
)
_INSERT_LLM_CALL = (
    f"INSERT INTO llm_calls ({', '.join(_LLM_CALL_COLUMNS)}) VALUES ({', '.join('?' * len(_LLM_CALL_COLUMNS))})"
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
            db.execute(f"PRAGMA page_size = {PAGE_SIZE};")  # takes effect in a new DB only, before WAL
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
            row[key] = _dumps(row[key])
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

    def get_trajectory(self, traj_id: str) -> Trajectory | None:
        rows = list(self.db["trajectories"].rows_where("id = ?", [traj_id]))
        return _traj_from_row(rows[0]) if rows else None

    def events(self, traj_id: str) -> list[Event]:
        # one fixed statement rather than `db["events"].rows_where`, which looks the table up in
        # sqlite_master on every call: judging reads every trajectory's events on its hot path
        cursor = self.db.conn.execute(_SELECT_EVENTS, [traj_id])
        columns = [c[0] for c in cursor.description]
        return [_event_from_row(dict(zip(columns, row))) for row in cursor]

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
        """Row counts for `info`; tables that later stages add count as 0 until they exist. `judgments`
        counts each judge's chosen (default) run, as every read does; `judgments_all_runs` every labelled run."""
        db = self.db

        def count(table: str, where: str | None = None, args: list | None = None) -> int:
            return db[table].count_where(where, args or []) if db[table].exists() else 0

        return {
            "tasks": count("tasks"),
            "trials": count("trajectories"),
            "pass": count("trajectories", "outcome = 'PASS'"),
            "fail": count("trajectories", "outcome = 'FAIL'"),
            "unscored": count("trajectories", "outcome = 'unscored'"),
            "with_skills": count("trajectories", "condition = 'with-skills'"),
            "without_skills": count("trajectories", "condition = 'without-skills'"),
            "unknown_condition": count("trajectories", "condition = 'unknown'"),
            "events": count("events"),
            "checklists": count("checklists"),
            "judgments": count("judgments", *self._label_clause(None, False)) if db["judge_units"].exists() else 0,
            "judgments_all_runs": count("judgments"),
            "judge_runs": len(self.judge_labels()) if db["judge_units"].exists() else 0,
            "annotations": count("annotations"),
            "import_issues": count("import_issues"),
        }

    # ==== LLM layer and checklists (gcpc_core.llm, gcpc_core.checklist.synthesis) ====
    # Helpers of this section are static methods here, so the section stays self-contained.

    CHECKLIST_STATUSES = ("frozen", "failed")

    @staticmethod
    def _decode(row: dict, *columns: str) -> dict:
        """Row with its JSON columns decoded."""
        return {**row, **{c: json.loads(row[c]) if row.get(c) else None for c in columns}}

    # ---- LLM response cache ----------------------------------------------

    def llm_cache_get(self, key: str) -> dict | None:
        """The cached chat-completion body for a request key, or None."""
        row = self.db.conn.execute("SELECT response FROM llm_cache WHERE key = ?", [key]).fetchone()
        return json.loads(row[0]) if row else None

    def llm_cache_put(self, key: str, *, model: str, response: dict) -> None:
        """Cache a validated reply; the first one stored for a key wins."""
        with self.atomic() as db:  # plain SQL: one row per LLM call is on the judging hot path
            db.conn.execute(
                "INSERT OR IGNORE INTO llm_cache (key, model, response, created_at) VALUES (?, ?, ?, ?)",
                (key, model, _dumps(response), utcnow()),
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
        pid: int | None = None,
        host: str | None = None,
    ) -> str:
        """Open a `runs` row (status `running`) owned by process `pid` on `host`, and return its id."""
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
                    "pid": pid,
                    "host": host,
                },
                pk="id",
            )
        return run_id

    def running_runs(self, *, host: str) -> list[dict]:
        """Id and owning process of every `running` row started on `host`."""
        return list(self.db["runs"].rows_where("status = 'running' AND host = ?", [host], select="id, pid"))

    def interrupt_runs(self, run_ids: Iterable[str]) -> None:
        """Close rows whose process is gone as `interrupted`."""
        with self.atomic() as db:
            for run_id in run_ids:
                db["runs"].update(run_id, {"status": "interrupted", "finished_at": utcnow()})

    def finish_run(
        self, run_id: str, *, status: str, wall_s: float, totals: dict, counts: dict[str, int] | None = None
    ) -> None:
        """Close a run with its status, wall time, totals (calls, tokens, cost) and what it counted."""
        row = {"status": status, "finished_at": utcnow(), "wall_s": wall_s, **totals}
        if counts is not None:
            row["counts"] = _dumps(counts)
        with self.atomic() as db:
            db["runs"].update(run_id, row)

    def get_run(self, run_id: str) -> dict | None:
        rows = list(self.db["runs"].rows_where("id = ?", [run_id]))
        return self._decode(rows[0], "params", "counts") if rows else None

    def runs(self, *, kind: str | None = None) -> list[dict]:
        where, args = ("kind = ?", [kind]) if kind else (None, [])
        return [self._decode(r, "params", "counts")
                for r in self.db["runs"].rows_where(where, args, order_by="started_at, id")]

    def record_llm_call(self, row: dict) -> None:
        """One LLM call: run id, cache hit, tokens, cost, latency, status and error (raw reply on errors)."""
        unknown = set(row) - set(_LLM_CALL_COLUMNS)
        if unknown:
            raise ValueError(f"llm_calls has no column(s) {sorted(unknown)}")
        row = {**row, "created_at": row.get("created_at") or utcnow()}
        with self.atomic() as db:  # one fixed prepared statement: one row per LLM call is on the judging hot path
            db.conn.execute(_INSERT_LLM_CALL, tuple(row.get(c) for c in _LLM_CALL_COLUMNS))

    def llm_calls(self, *, run_id: str | None = None) -> list[dict]:
        where, args = ("run_id = ?", [run_id]) if run_id else (None, [])
        return list(self.db["llm_calls"].rows_where(where, args, order_by="id"))

    # ---- negotiated structured-output modes ---------------------------------------

    def llm_mode(self, endpoint: str, model: str) -> dict | None:
        """The structured mode negotiated for this endpoint and model (with the modes it rejected), or None."""
        rows = list(self.db["llm_modes"].rows_where("endpoint = ? AND model = ?", [endpoint, model]))
        return self._decode(rows[0], "rejected") if rows else None

    def set_llm_mode(
        self,
        endpoint: str,
        model: str,
        mode: str,
        *,
        rejected: dict[str, str] | None = None,
        context_window: int | None = None,
    ) -> None:
        """Store the mode that worked; `rejected`: modes the endpoint refused first, with its message;
        `context_window`: the server's figure when known (None keeps the one stored)."""
        row = {"endpoint": endpoint, "model": model, "mode": mode, "rejected": _dumps(rejected or {}),
               "negotiated_at": utcnow()}
        if context_window is not None:
            row["context_window"] = context_window
        with self.atomic() as db:
            db["llm_modes"].upsert(row, pk=("endpoint", "model"))

    def llm_modes(self) -> list[dict]:
        return [self._decode(r, "rejected") for r in self.db["llm_modes"].rows_where(order_by="endpoint, model")]

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

    # ==== Annotations and human studies (annotations/) ====
    # Annotations are append-only: an edit is a new row whose `supersedes` points at the row it
    # replaces, so the *current* answer of (kind, study, target, rater) is the row nobody supersedes.
    # Item audits (the review app) and study answers (progress ratings, preferences) share the table.

    ANNOTATION_KINDS = ("item_audit", "progress_rating", "preference")
    ANNOTATION_TARGET_KEYS: dict[str, tuple[str, ...]] = {
        "item_audit": ("trajectory_id", "item_id", "judge"),
        "progress_rating": ("trajectory_id",),
        "preference": ("pair_id",),
    }
    """Columns that say what an annotation is about; joined with `|` they form its `target`."""
    ANNOTATION_TARGET_OPTIONAL: dict[str, tuple[str, ...]] = {"item_audit": ("label",)}
    """Appended to the target when set: the judge run an audit checked (an audit of a judge with no run has none)."""
    _NOT_SUPERSEDED = "NOT EXISTS (SELECT 1 FROM annotations AS b WHERE b.supersedes = annotations.id)"

    @classmethod
    def annotation_target(cls, kind: str, keys: dict[str, Any]) -> str:
        """The `target` key of an annotation of `kind` from its key columns."""
        if kind not in cls.ANNOTATION_TARGET_KEYS:
            raise ValueError(f"annotation kind must be one of {cls.ANNOTATION_KINDS}, not {kind!r}")
        names = cls.ANNOTATION_TARGET_KEYS[kind]
        missing = [n for n in names if not keys.get(n)]
        if missing:
            raise ValueError(f"a {kind} annotation needs {', '.join(missing)}")
        names += tuple(n for n in cls.ANNOTATION_TARGET_OPTIONAL.get(kind, ()) if keys.get(n))
        return "|".join(str(keys[n]) for n in names)

    @staticmethod
    def _annotation_row(row: dict) -> dict:
        return {**row, "value": json.loads(row["value"]), "is_simulated": bool(row["is_simulated"])}

    def _current_annotation(self, db: Database, kind: str, study_id: str | None, target: str, rater: str) -> dict | None:
        rows = db["annotations"].rows_where(
            f"kind = ? AND study_id IS ? AND target = ? AND rater = ? AND {self._NOT_SUPERSEDED}",
            [kind, study_id, target, rater], order_by="id DESC", limit=1,
        )
        return next(iter(rows), None)

    def add_annotation(
        self,
        *,
        kind: str,
        rater: str,
        value: dict,
        study_id: str | None = None,
        task: str | None = None,
        trajectory_id: str | None = None,
        unit_id: str | None = None,
        pair_id: str | None = None,
        item_id: str | None = None,
        judge: str | None = None,
        label: str | None = None,
        note: str | None = None,
        confidence: int | None = None,
        client_token: str | None = None,
        source: str = "app",
        is_simulated: bool = False,
        created_at: str | None = None,
        assignment: tuple[str, str] | None = None,
    ) -> tuple[dict, bool]:
        """Append one annotation in one transaction; returns (stored row, whether a row was written).

        Idempotent twice over: a `client_token` already stored returns its row (a double submit),
        and an answer identical to the current one is not stored again (a refresh re-sending it).
        Otherwise the new row supersedes the current answer of (kind, study, target, rater).
        With `assignment=(kind, target)` the rater must hold that active assignment in an open
        study, checked inside the same transaction as the write (PermissionError otherwise).
        """
        if not rater:
            raise ValueError("an annotation needs a rater")
        keys = {"trajectory_id": trajectory_id, "pair_id": pair_id, "item_id": item_id, "judge": judge, "label": label}
        target = self.annotation_target(kind, keys)
        token = client_token or uuid.uuid4().hex
        value_json = _dumps(value)
        with self.atomic() as db:
            same = next(iter(db["annotations"].rows_where("client_token = ?", [token])), None)
            if same is not None:
                if (same["kind"], same["study_id"], same["target"], same["rater"]) != (kind, study_id, target, rater):
                    raise ValueError("client token already used for a different annotation")
                return self._annotation_row(same), False
            if assignment is not None:
                self._require_assignment(db, study_id, rater, *assignment)
            current = self._current_annotation(db, kind, study_id, target, rater)
            if current is not None and (current["value"], current["note"], current["confidence"]) == (
                value_json, note, confidence
            ):
                return self._annotation_row(current), False
            row = {
                "kind": kind, "study_id": study_id, "target": target, "task": task,
                "trajectory_id": trajectory_id, "unit_id": unit_id, "pair_id": pair_id, "item_id": item_id,
                "judge": judge, "label": label, "rater": rater, "value": value_json, "note": note, "confidence": confidence,
                "created_at": created_at or utcnow(), "supersedes": None if current is None else current["id"],
                "client_token": token, "source": source, "is_simulated": int(is_simulated),
            }
            table = db["annotations"].insert(row)
            stored = next(iter(db["annotations"].rows_where("id = ?", [table.last_pk])))
        return self._annotation_row(stored), True

    def annotations(
        self,
        *,
        kind: str | None = None,
        study_id: str | None = None,
        rater: str | None = None,
        target: str | None = None,
        trajectory_id: str | None = None,
        current: bool = True,
        labels: Mapping[str, str] | None = None,
        all_labels: bool = False,
    ) -> list[dict]:
        """Annotation rows (value decoded) in id order; only current answers unless `current=False`.

        Item audits are kept only for each judge's chosen run (its default label, or `labels`), like
        the verdicts they audit, unless `all_labels`; audits naming no run (made before the judge had
        one) and other kinds are always kept.
        """
        filters = [("kind = ?", kind), ("study_id = ?", study_id), ("rater = ?", rater), ("target = ?", target),
                   ("trajectory_id = ?", trajectory_id)]
        where, args = self._where(filters, None, True)
        clauses = [where] if where else []
        clauses += [self._NOT_SUPERSEDED] if current else []
        label_where, label_args = self._label_clause(labels, all_labels)
        if label_where is not None:
            clauses.append(f"(kind != 'item_audit' OR label IS NULL OR {label_where})")
            args += label_args
        rows = self.db["annotations"].rows_where(" AND ".join(clauses) or None, args, order_by="id")
        return [self._annotation_row(r) for r in rows]

    def annotation_history(self, *, kind: str, study_id: str | None, target: str, rater: str) -> list[dict]:
        """Every version of one rater's answer on one target, oldest first (the last is current)."""
        rows = self.db["annotations"].rows_where(
            "kind = ? AND study_id IS ? AND target = ? AND rater = ?", [kind, study_id, target, rater], order_by="id"
        )
        return [self._annotation_row(r) for r in rows]

    # ---- studies -------------------------------------------------------------

    def insert_study(
        self, study: dict, *, units: Iterable[dict], pairs: Iterable[dict], raters: Iterable[dict],
        assignments: Iterable[dict],
    ) -> None:
        """Store a frozen study design in one transaction; an existing study id is an error."""
        now = utcnow()
        with self.atomic() as db:
            if db["studies"].count_where("id = ?", [study["id"]]):
                raise ValueError(f"study {study['id']!r} already exists")
            given = {k: v for k, v in study.items() if v is not None}
            db["studies"].insert({"status": "open", "created_at": now, **given,
                                  "params": _dumps(study["params"]), "design": _dumps(study["design"])}, pk="id")
            db["study_units"].insert_all(({"study_id": study["id"], **u} for u in units), batch_size=500)
            db["study_pairs"].insert_all(({"study_id": study["id"], **p} for p in pairs), batch_size=500)
            db["study_raters"].insert_all(({"study_id": study["id"], "created_at": now, **r} for r in raters))
            db["study_assignments"].insert_all(
                ({"study_id": study["id"], "active": 1, "assigned_at": now, **a} for a in assignments), batch_size=500
            )

    def _study_row(self, row: dict) -> dict:
        return {**self._decode(row, "params", "design"), "is_simulated": bool(row["is_simulated"])}

    def studies(self) -> list[dict]:
        return [self._study_row(r) for r in self.db["studies"].rows_where(order_by="created_at, id")]

    def get_study(self, study_id: str) -> dict | None:
        rows = list(self.db["studies"].rows_where("id = ?", [study_id]))
        return self._study_row(rows[0]) if rows else None

    def set_study_status(self, study_id: str, status: str) -> None:
        """`open` accepts answers; `closed` keeps them read-only."""
        if status not in ("open", "closed"):
            raise ValueError(f"study status must be open or closed, not {status!r}")
        with self.atomic() as db:
            db["studies"].update(study_id, {"status": status})

    def study_units(self, study_id: str) -> list[dict]:
        return list(self.db["study_units"].rows_where("study_id = ?", [study_id], order_by="unit_id"))

    def study_pairs(self, study_id: str) -> list[dict]:
        return list(self.db["study_pairs"].rows_where("study_id = ?", [study_id], order_by="pair_id"))

    def study_raters(self, study_id: str) -> list[dict]:
        """Raters of a study; `token_hash` is left out (it is only ever compared, in `rater_by_token_hash`)."""
        rows = self.db["study_raters"].rows_where("study_id = ?", [study_id], order_by="rater")
        return [{**{k: v for k, v in r.items() if k != "token_hash"}, "has_token": r["token_hash"] is not None,
                 "is_simulated": bool(r["is_simulated"])} for r in rows]

    def rater_by_token_hash(self, token_hash: str) -> dict | None:
        """(study_id, rater, is_simulated) of the rater whose invitation token hashes to `token_hash`."""
        rows = list(self.db["study_raters"].rows_where(
            "token_hash = ?", [token_hash], select="study_id, rater, is_simulated"))
        return rows[0] if rows else None

    def add_study_rater(self, study_id: str, rater: str, *, token_hash: str | None, is_simulated: bool = False) -> None:
        """A rater joining an existing study (with an empty queue until items are reassigned)."""
        now = utcnow()
        with self.atomic() as db:
            if db["study_raters"].count_where("study_id = ? AND rater = ?", [study_id, rater]):
                raise ValueError(f"rater {rater!r} already belongs to study {study_id!r}")
            db["study_raters"].insert({"study_id": study_id, "rater": rater, "token_hash": token_hash,
                                       "is_simulated": int(is_simulated), "created_at": now,
                                       "token_issued_at": now if token_hash else None})

    def set_rater_token_hash(self, study_id: str, rater: str, token_hash: str) -> None:
        """Replace a rater's token (a new invitation link); the old link stops working."""
        with self.atomic() as db:
            if not db["study_raters"].count_where("study_id = ? AND rater = ?", [study_id, rater]):
                raise KeyError(f"no rater {rater!r} in study {study_id!r}")
            db.execute("UPDATE study_raters SET token_hash = ?, token_issued_at = ? WHERE study_id = ? AND rater = ?",
                       [token_hash, utcnow(), study_id, rater])

    def study_assignments(self, study_id: str, *, rater: str | None = None, active: bool | None = True) -> list[dict]:
        """Assignments of a study (active ones by default), by rater, kind and queue position."""
        clauses = [("study_id = ?", study_id)] + [(c, v) for c, v in (("rater = ?", rater),) if v is not None]
        if active is not None:
            clauses.append(("active = ?", int(active)))
        rows = self.db["study_assignments"].rows_where(
            " AND ".join(c for c, _ in clauses), [v for _, v in clauses], order_by="rater, kind DESC, position")
        return list(rows)

    def _require_assignment(self, db: Database, study_id: str | None, rater: str, kind: str, target: str) -> None:
        study = next(iter(db["studies"].rows_where("id = ?", [study_id], select="status")), None)
        if study is None or study["status"] != "open":
            raise PermissionError(f"study {study_id!r} is not open for answers")
        if not db["study_assignments"].count_where(
            "study_id = ? AND rater = ? AND kind = ? AND target = ? AND active = 1", [study_id, rater, kind, target]
        ):
            raise PermissionError(f"{kind} {target} is not in this rater's queue")

    def reassign(self, study_id: str, *, kind: str, target: str, from_rater: str, to_rater: str) -> None:
        """Move one assignment to another rater, at the end of their queue; answers already given stay."""
        with self.atomic() as db:
            if not db["study_raters"].count_where("study_id = ? AND rater = ?", [study_id, to_rater]):
                raise KeyError(f"no rater {to_rater!r} in study {study_id!r}")
            moved = db.execute(
                "UPDATE study_assignments SET active = 0 WHERE study_id = ? AND rater = ? AND kind = ? AND target = ?"
                " AND active = 1", [study_id, from_rater, kind, target]).rowcount
            if not moved:
                raise KeyError(f"{from_rater!r} holds no active {kind} assignment {target!r}")
            held = next(iter(db["study_assignments"].rows_where(
                "study_id = ? AND rater = ? AND kind = ? AND target = ?", [study_id, to_rater, kind, target])), None)
            if held is not None and held["active"]:
                raise ValueError(f"{to_rater!r} already holds {kind} {target!r}")
            last = db.execute("SELECT max(position) FROM study_assignments WHERE study_id = ? AND rater = ? AND kind = ?",
                              [study_id, to_rater, kind]).fetchone()[0]
            position = -1 if last is None else last
            if held is not None:
                db.execute("UPDATE study_assignments SET active = 1, position = ?, reassigned_from = ?, assigned_at = ?"
                           " WHERE id = ?", [position + 1, from_rater, utcnow(), held["id"]])
            else:
                db["study_assignments"].insert({
                    "study_id": study_id, "rater": to_rater, "kind": kind, "target": target, "position": position + 1,
                    "active": 1, "assigned_at": utcnow(), "reassigned_from": from_rater})

    # ==== Judging and scores (gcpc_core.judge) ====
    # A (trajectory, judge) is judged once its `judge_units` row exists. That row, its item
    # judgments and its replies are written in one transaction, so a kill -9 never leaves half a
    # trajectory. Scoring rewrites postprocessed verdicts and scores; raw verdicts stay as judged.
    # Plain SQL with executemany here: these writes sit on the judging hot path.

    JUDGMENT_COLUMNS = (
        "trajectory_id", "judge", "label", "item_id", "position", "task", "route", "verdict_raw", "reason_raw",
        "verdict", "reason", "citations", "rationale", "checklist_sha", "model", "prompt_version",
        "rules_version", "run_id", "created_at", "scored_at",
    )
    JUDGE_UNIT_COLUMNS = (
        "trajectory_id", "judge", "label", "task", "checklist_sha", "model", "prompt_version", "rules_version",
        "content_hash", "n_items", "progress", "rationale", "citations", "reason", "run_id", "created_at",
    )
    JUDGE_REPLY_COLUMNS = (
        "trajectory_id", "judge", "label", "run_id", "attempt", "item_id", "llm_key", "cache_hit", "status",
        "problems", "raw", "created_at",
    )
    SCORE_COLUMNS = (
        "trajectory_id", "judge", "label", "task", "outcome", "condition", "partial_credit", "evidence_coverage",
        "perfect", "perfect_with_endpoint", "n_items", "n_yes", "n_no", "n_abstain", "checklist_sha", "model",
        "prompt_version", "rules_version", "run_id", "scored_at",
    )

    @staticmethod
    def _insert_sql(table: str, columns: tuple[str, ...], verb: str = "INSERT") -> str:
        return f"{verb} INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"

    @staticmethod
    def _values(rows: Iterable[dict], columns: tuple[str, ...]) -> list[tuple]:
        """Row dicts as value tuples; list/dict values become JSON."""
        out = []
        for r in rows:
            values = [r.get(c) for c in columns]
            out.append(tuple(_dumps(v) if isinstance(v, (list, dict)) else v for v in values))
        return out

    # ---- labelled judge runs ------------------------------------------------------
    # Several labelled runs of one judge kind coexist. Reads that do not name labels see one run per
    # kind: its default label (see `default_labels`), so every view and figure shows one set per judge
    # unless a label is chosen (`labels={judge: label}`) or every run is asked for (`all_labels`).

    def judge_labels(self) -> list[dict]:
        """Every labelled run, oldest first by its latest write: judge, label, provenance, `named`,
        `simulated`, `note`, `n_trajectories`, `first_at`, `last_at`."""
        rows = self.db.execute(
            "SELECT u.judge, u.label, l.model, l.prompt_version, l.rules_version, coalesce(l.named, 0),"
            " coalesce(l.simulated, 0), l.note, count(*), min(u.created_at), max(u.created_at), max(u.rowid)"
            " FROM judge_units AS u LEFT JOIN judge_labels AS l ON l.judge = u.judge AND l.label = u.label"
            " GROUP BY u.judge, u.label ORDER BY max(u.created_at), max(u.rowid)"
        ).fetchall()
        keys = ("judge", "label", "model", "prompt_version", "rules_version", "named", "simulated", "note",
                "n_trajectories", "first_at", "last_at")
        return [{**dict(zip(keys, r[:-1])), "named": bool(r[5]), "simulated": bool(r[6])} for r in rows]

    def default_labels(self) -> dict[str, str]:
        """judge kind → its default label: the most recently written run whose verdicts a judge produced.

        A simulated run (the demo's second model) is the default only when its kind has no other run,
        so simulated verdicts never silently replace a judge's figures.
        """
        chosen: dict[str, tuple[bool, str]] = {}
        for row in self.judge_labels():  # oldest first: a later real run wins, a simulated one never beats a real one
            held = chosen.get(row["judge"])
            if held is None or not (row["simulated"] and not held[0]):
                chosen[row["judge"]] = (row["simulated"], row["label"])
        return {judge: label for judge, (_, label) in chosen.items()}

    def resolve_labels(self, names: Iterable[str]) -> dict[str, str]:
        """judge kind → label for labels a user typed (`NAME`, or `KIND=NAME` when NAME is ambiguous).

        Raises ValueError naming the unknown or ambiguous label and listing the labels there are.
        """
        known = self.judge_labels()
        out: dict[str, str] = {}
        for name in names:
            kind, sep, label = name.partition("=")
            hits = [r for r in known if (r["judge"], r["label"]) == (kind, label)] if sep else []
            hits = hits or [r for r in known if r["label"] == name]
            listing = ", ".join(f"{r['judge']}={r['label']}" for r in known) or "none: run `judge` first"
            if not hits:
                raise ValueError(f"no judge run labelled {name!r} (labels: {listing})")
            if len(hits) > 1:
                raise ValueError(f"label {name!r} names runs of several judges: write KIND=LABEL (labels: {listing})")
            if hits[0]["judge"] in out and out[hits[0]["judge"]] != hits[0]["label"]:
                raise ValueError(f"two labels chosen for judge {hits[0]['judge']!r}: {out[hits[0]['judge']]!r} "
                                 f"and {hits[0]['label']!r}")
            out[hits[0]["judge"]] = hits[0]["label"]
        return out

    def _label_clause(self, labels: Mapping[str, str] | None, all_labels: bool) -> tuple[str | None, list[str]]:
        """WHERE clause keeping the chosen run of each judge kind (defaults, overridden by `labels`)."""
        if all_labels:
            return None, []
        chosen = {**self.default_labels(), **(labels or {})}
        if not chosen:
            return "0", []
        clause = "(" + " OR ".join("(judge = ? AND label = ?)" for _ in chosen) + ")"
        return clause, [v for pair in chosen.items() for v in pair]

    def _where(self, filters: Iterable[tuple[str, Any]], labels: Mapping[str, str] | None,
               all_labels: bool) -> tuple[str | None, list[Any]]:
        clauses = [(c, v) for c, v in filters if v is not None]
        where, args = [c for c, _ in clauses], [v for _, v in clauses]
        label_where, label_args = self._label_clause(labels, all_labels)
        if label_where is not None:
            where.append(label_where)
            args += label_args
        return " AND ".join(where) or None, args

    def judge_units(self, judge: str | None = None, *, labels: Mapping[str, str] | None = None) -> dict[tuple[str, str], dict]:
        """(trajectory id, judge) → unit row (JSON columns decoded) of each judge's chosen run: what is judged already."""
        where, args = self._where([("judge = ?", judge)], labels, False)
        return {
            (r["trajectory_id"], r["judge"]): self._decode(r, "citations")
            for r in self.db["judge_units"].rows_where(where, args, order_by="trajectory_id, judge")
        }

    def save_trajectory_judgment(
        self, unit: dict, judgments: list[dict], replies: list[dict], *, named: bool = False,
        simulated: bool = False, note: str | None = None,
    ) -> None:
        """Replace one (trajectory, judge, label)'s judgments, unit row and score; append its replies.
        One transaction. Every row is stored under the unit's label (one save is one run's); a unit
        without one gets the label derived from its provenance (`derive_label`). The label is recorded on first use (`named`: a
        person chose it; `simulated`: the verdicts were simulated, not judged)."""
        label = unit.get("label") or derive_label(unit["judge"], unit.get("model"), unit.get("prompt_version"),
                                                  unit.get("rules_version"))
        unit = {**unit, "label": label}
        judgments = [{**r, "label": label} for r in judgments]
        replies = [{**r, "label": label} for r in replies]
        key = [unit["trajectory_id"], unit["judge"], label]
        with self.atomic() as db:
            for table in ("judgments", "scores", "judge_units"):
                db.execute(f"DELETE FROM {table} WHERE trajectory_id = ? AND judge = ? AND label = ?", key)
            db.conn.executemany(
                self._insert_sql("judgments", self.JUDGMENT_COLUMNS), self._values(judgments, self.JUDGMENT_COLUMNS)
            )
            db.conn.executemany(
                self._insert_sql("judge_replies", self.JUDGE_REPLY_COLUMNS),
                self._values(replies, self.JUDGE_REPLY_COLUMNS),
            )
            db.conn.execute(
                self._insert_sql("judge_units", self.JUDGE_UNIT_COLUMNS), self._values([unit], self.JUDGE_UNIT_COLUMNS)[0]
            )
            db.conn.execute(
                "INSERT OR IGNORE INTO judge_labels (judge, label, model, prompt_version, rules_version, named,"
                " simulated, note, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (unit["judge"], unit["label"], unit.get("model"), unit.get("prompt_version"), unit.get("rules_version"),
                 int(named), int(simulated), note, unit["created_at"]),
            )

    def judgments(
        self, *, judge: str | None = None, trajectory_id: str | None = None,
        labels: Mapping[str, str] | None = None, all_labels: bool = False,
    ) -> list[dict]:
        """Item judgment rows (citations decoded) of each judge's chosen run (every run with `all_labels`),
        by trajectory, judge, label and checklist position."""
        where, args = self._where([("judge = ?", judge), ("trajectory_id = ?", trajectory_id)], labels, all_labels)
        rows = self.db["judgments"].rows_where(where, args, order_by="trajectory_id, judge, label, position")
        return [self._decode(r, "citations") for r in rows]

    def judge_replies(
        self, *, trajectory_id: str | None = None, judge: str | None = None,
        labels: Mapping[str, str] | None = None,
    ) -> list[dict]:
        """Every stored reply of each judge's chosen run (the audit trail), oldest first, problems decoded."""
        where, args = self._where([("trajectory_id = ?", trajectory_id), ("judge = ?", judge)], labels, False)
        return [self._decode(r, "problems") for r in self.db["judge_replies"].rows_where(where, args, order_by="id")]

    def save_scores(self, scored: Iterable[tuple[dict, list[dict]]]) -> int:
        """Write postprocessed verdicts and scores: each entry is (score row, postprocessed judgment
        rows, endpoint included) of one (trajectory, judge, label). Raw verdicts are never touched.
        One transaction; returns the count."""
        n = 0
        with self.atomic() as db:
            for score, rows in scored:
                key = [score["trajectory_id"], score["judge"], score["label"]]
                db.execute("DELETE FROM judgments WHERE trajectory_id = ? AND judge = ? AND label = ? "
                           "AND route = 'endpoint'", key)
                real = [r for r in rows if r["route"] != "endpoint"]
                db.conn.executemany(
                    "UPDATE judgments SET verdict = ?, reason = ?, scored_at = ? "
                    "WHERE trajectory_id = ? AND judge = ? AND label = ? AND item_id = ?",
                    [(r["verdict"], r["reason"], r["scored_at"], r["trajectory_id"], r["judge"], r["label"], r["item_id"])
                     for r in real],
                )
                db.conn.executemany(
                    self._insert_sql("judgments", self.JUDGMENT_COLUMNS),
                    self._values([r for r in rows if r["route"] == "endpoint"], self.JUDGMENT_COLUMNS),
                )
                db.conn.execute(
                    self._insert_sql("scores", self.SCORE_COLUMNS, "INSERT OR REPLACE"),
                    self._values([score], self.SCORE_COLUMNS)[0],
                )
                n += 1
        return n

    def scores(
        self, *, judge: str | None = None, labels: Mapping[str, str] | None = None, all_labels: bool = False,
    ) -> list[dict]:
        """Score rows of each judge's chosen run (every run with `all_labels`), by trajectory, judge, label."""
        where, args = self._where([("judge = ?", judge)], labels, all_labels)
        return list(self.db["scores"].rows_where(where, args, order_by="trajectory_id, judge, label"))

    def add_judge_batch(self, row: dict) -> None:
        """Record a submitted Batch-API job (`requests` maps custom_id → what it judges)."""
        columns = tuple(row)
        with self.atomic() as db:
            db.conn.execute(self._insert_sql("judge_batches", columns), self._values([row], columns)[0])

    def update_judge_batch(self, batch_id: str, fields: dict) -> None:
        with self.atomic() as db:
            db["judge_batches"].update(batch_id, {k: _dumps(v) if isinstance(v, (list, dict)) else v for k, v in fields.items()})

    def judge_batches(self, *, status: str | None = None) -> list[dict]:
        where, args = ("status = ?", [status]) if status else (None, [])
        return [self._decode(r, "requests") for r in self.db["judge_batches"].rows_where(where, args, order_by="created_at, id")]

    def get_judge_batch(self, batch_id: str) -> dict | None:
        rows = list(self.db["judge_batches"].rows_where("id = ?", [batch_id]))
        return self._decode(rows[0], "requests") if rows else None

    # ==== Review app (gcpc_core/review) ====
    # Read-only helpers for the pages: a cheap version string to key Streamlit caches on, and the
    # live progress of a run read from what it has written so far (whichever process runs it).

    _VERSION_SQL: dict[str, str] = {
        "tasks": "SELECT count(*), max(rowid), max(imported_at) FROM tasks",
        "trajectories": "SELECT count(*), max(rowid), max(imported_at) FROM trajectories",
        "checklists": "SELECT count(*), max(rowid), max(created_at) FROM checklists",
        "judgments": "SELECT count(*), max(rowid), max(created_at), max(scored_at) FROM judgments",
        "scores": "SELECT count(*), max(rowid), max(scored_at) FROM scores",
        "annotations": "SELECT count(*), max(id) FROM annotations",
        "runs": "SELECT count(*), max(started_at), max(finished_at), sum(status = 'running') FROM runs",
        "perturbations": "SELECT count(*), max(rowid), max(created_at) FROM perturbations",
    }
    DATA_VERSION_TABLES: tuple[str, ...] = tuple(_VERSION_SQL)

    def data_version(self, *tables: str) -> str:
        """A string that changes whenever rows of `tables` (default: every table in
        `DATA_VERSION_TABLES`) are written: row count, highest rowid and latest timestamps."""
        parts = []
        for name in tables or self.DATA_VERSION_TABLES:
            row = self.db.execute(self._VERSION_SQL[name]).fetchone()
            parts.append(f"{name}:" + ",".join(map(str, row)))
        return "|".join(parts)

    def run_progress(self, run_id: str) -> dict[str, Any]:
        """What run `run_id` has stored so far: judged trajectories, checklists, and its LLM calls
        with tokens and cost (the `runs` row itself is only totalled when the run ends)."""
        db = self.db
        units = db.execute("SELECT count(*) FROM judge_units WHERE run_id = ?", [run_id]).fetchone()[0]
        checklists = db.execute("SELECT count(*) FROM checklists WHERE run_id = ?", [run_id]).fetchone()[0]
        calls = db.execute(
            "SELECT count(*), coalesce(sum(cache_hit = 0), 0), coalesce(sum(cache_hit), 0),"
            " coalesce(sum(status != 'ok'), 0), coalesce(sum(prompt_tokens), 0), coalesce(sum(cached_tokens), 0),"
            " coalesce(sum(completion_tokens), 0), coalesce(sum(cost_usd), 0.0) FROM llm_calls WHERE run_id = ?",
            [run_id],
        ).fetchone()
        keys = ("calls", "http_calls", "cache_hits", "errors", "prompt_tokens", "cached_tokens",
                "completion_tokens", "cost_usd")
        return {"judged": units, "checklists": checklists, **dict(zip(keys, calls))}

    def event_counts(self) -> dict[str, int]:
        """trajectory id → number of events, without loading any event."""
        return dict(self.db.execute("SELECT trajectory_id, count(*) FROM events GROUP BY trajectory_id").fetchall())

    def count_trajectories_imported_since(self, since: str) -> int:
        """Trajectories written (imported or updated) at or after the ISO time `since`."""
        return self.db["trajectories"].count_where("imported_at >= ?", [since])

    # ==== Evidence sensitivity (gcpc_core/analysis/sensitivity) ====
    # One row per perturbed item under one setting; a rerun of the same setting replaces its rows.

    PERTURBATION_COLUMNS = (
        "id", "run_id", "trajectory_id", "task", "judge", "item_id", "route", "checklist_sha", "model",
        "prompt_version", "rules_version", "seed", "scope", "status", "kind", "recipe", "original_verdict",
        "original_citations", "verdict", "reason", "citations", "rationale", "replies", "created_at",
    )
    _PERTURBATION_JSON = ("recipe", "original_citations", "citations", "replies")

    def save_perturbation(self, row: dict) -> None:
        """Insert or replace one perturbation result (keyed by its `id`), in one transaction."""
        with self.atomic() as db:
            db.conn.execute(self._insert_sql("perturbations", self.PERTURBATION_COLUMNS, "INSERT OR REPLACE"),
                            self._values([row], self.PERTURBATION_COLUMNS)[0])

    def perturbations(self, *, judge: str | None = None, run_id: str | None = None) -> list[dict]:
        """Perturbation rows (JSON columns decoded), by judge, trajectory and item."""
        clauses = [(c, v) for c, v in (("judge = ?", judge), ("run_id = ?", run_id)) if v is not None]
        where = " AND ".join(c for c, _ in clauses) or None
        rows = self.db["perturbations"].rows_where(where, [v for _, v in clauses],
                                                   order_by="judge, trajectory_id, item_id, seed, scope")
        return [self._decode(r, *self._PERTURBATION_JSON) for r in rows]


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
