"""The schema migrations of the project DB, in the numeric order of their names.

Each migration describes the schema as it was when it was written, so none is ever edited: a change
to the schema is a new migration, and every project DB is carried forward by applying the ones it
has not seen yet. A DB records which migrations it has by name, not by position, so the order here
only decides the order a DB applies what it lacks (m1401 and m1201, once listed the other way round,
touch different tables: either order gives the same schema).
"""

from __future__ import annotations

from pathlib import Path

from sqlite_utils import Database
from sqlite_utils.migrations import Migrations

from .common import derive_label

MIGRATIONS = Migrations("gcpc")


class SchemaTooNew(RuntimeError):
    """The project DB carries migrations this code does not know: a newer GCPC wrote it, and this one
    would misread its tables or write rows the newer one does not expect."""


def known_migrations() -> list[str]:
    """The names of this code's migrations, oldest first: all a DB without any has pending."""
    return [m.name for m in MIGRATIONS.pending(Database(memory=True))]


def refuse_newer_schema(db: Database, path: Path) -> None:
    """Raise `SchemaTooNew`, naming the file and both schema versions (applied migrations), when `db` has
    a migration this code does not know. Reads only: called before anything is written."""
    applied = [m.name for m in MIGRATIONS.applied(db)]
    known = known_migrations()
    unknown = [name for name in applied if name not in known]
    if unknown:
        names = ", ".join(map(repr, unknown[:5])) + (", …" if unknown[5:] else "")  # repr: the file's text, quoted
        raise SchemaTooNew(
            f"{path}: this project DB was written by a newer version of GCPC (schema version {len(applied)}, with "
            f"migrations this code does not know: {names}); this code's schema version is {len(known)}. "
            "Open it with the newer GCPC (upgrade this one); the file was left unchanged.")


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
def m1201_run_counts(db: Database) -> None:
    """What each run counted when it ended (imported, judged, scored, frozen, …), as JSON."""
    db["runs"].add_column("counts", str)


@MIGRATIONS()
def m1401_trial_outcome_basis(db: Database) -> None:
    """Trials record the evidence for their official outcome (reward and threshold, or why unscored)."""
    db["trajectories"].add_column("outcome_basis", str)


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


@MIGRATIONS()
def m1702_perturbation_labels(db: Database) -> None:
    """Evidence-sensitivity results per labelled judge run: `perturbations` gains a `label`, and its key
    becomes (id, label), since the id (a hash of trajectory, judge, item, seed, scope, model and prompt)
    is the same for two runs of one judge with the same model and prompt.

    An existing row gets the label of the run it perturbed: the unit of its trajectory and judge with its
    model, prompt version and checklist, written before the perturbation (the most recent such: the run
    that was read then), else any such unit; failing both (the run was judged again since), the label
    derived from the row's own provenance (`derive_label`). No row is dropped.
    """
    db.register_function(derive_label, deterministic=True, replace=True)
    db["perturbations"].add_column("label", str)
    p = "perturbations"
    same_run = (f"u.trajectory_id = {p}.trajectory_id AND u.judge = {p}.judge AND u.model IS {p}.model "
                f"AND u.prompt_version IS {p}.prompt_version AND u.checklist_sha IS {p}.checklist_sha")
    latest = "ORDER BY u.created_at DESC, u.label LIMIT 1"
    db.execute(
        f"UPDATE {p} SET label = coalesce("
        f"(SELECT u.label FROM judge_units AS u WHERE {same_run} AND u.created_at <= {p}.created_at {latest}), "
        f"(SELECT u.label FROM judge_units AS u WHERE {same_run} {latest}), "
        f"derive_label(judge, model, prompt_version, rules_version))"
    )
    db["perturbations"].transform(pk=("id", "label"), not_null={"label"})
    db["perturbations"].create_index(["judge", "label", "task"])


_VERSIONED_2401 = ("tasks", "trajectories", "checklists", "judge_units", "judge_labels", "judgments", "scores",
                   "annotations", "runs", "perturbations", "studies", "study_raters", "study_units", "study_pairs",
                   "study_assignments")
"""The tables whose writes m2401 counts (every table a page or the analysis reads, but the events: a trajectory's
events are only ever written with the trajectory itself)."""


@MIGRATIONS()
def m2401_data_versions(db: Database) -> None:
    """A write counter per table (`data_versions`), kept by triggers, which the caches and the stored Agreement
    headline are keyed on: it moves with every INSERT, UPDATE and DELETE, whoever makes it (this package, the
    sqlite3 shell, another tool), and it is in the file, so it holds across restarts. Row counts and latest
    timestamps, read before, missed an edit in place (a score changed by an UPDATE left its stored headline shown)."""
    db["data_versions"].create({"name": str, "version": int}, pk="name", not_null={"version"})
    db["data_versions"].insert_all({"name": name, "version": 0} for name in _VERSIONED_2401)
    for name in _VERSIONED_2401:
        for op in ("INSERT", "UPDATE", "DELETE"):
            db.execute(f"""
                CREATE TRIGGER data_version_{name}_{op.lower()} AFTER {op} ON {name}
                BEGIN
                    UPDATE data_versions SET version = version + 1 WHERE name = '{name}';
                END
            """)
