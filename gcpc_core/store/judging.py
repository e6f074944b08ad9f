"""Judging and scores (gcpc_core.judge): labelled judge runs, their units, item judgments, replies,
scores and Batch-API submissions.

A (trajectory, judge, label) is judged once its `judge_units` row exists. That row, its item
judgments and its replies are written in one transaction, so a kill -9 never leaves half a
trajectory. Scoring rewrites postprocessed verdicts and scores; raw verdicts stay as judged.
Plain SQL with executemany here: these writes sit on the judging hot path.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .common import Repository, decode, derive_label, dumps, insert_sql, values

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


class JudgingRepository(Repository):
    """Labelled judge runs and everything they wrote."""

    # ---- labelled judge runs ------------------------------------------------------
    # Several labelled runs of one judge kind coexist. Reads that do not name labels see one run per
    # kind: its default label (see `default_labels`), so every view and figure shows one set per judge
    # unless a label is chosen (`labels={judge: label}`) or every run is asked for (`all_labels`).

    def labels(self) -> list[dict]:
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
        for row in self.labels():  # oldest first: a later real run wins, a simulated one never beats a real one
            held = chosen.get(row["judge"])
            if held is None or not (row["simulated"] and not held[0]):
                chosen[row["judge"]] = (row["simulated"], row["label"])
        return {judge: label for judge, (_, label) in chosen.items()}

    def resolve_labels(self, names: Iterable[str]) -> dict[str, str]:
        """judge kind → label for labels a user typed (`NAME`, or `KIND=NAME` when NAME is ambiguous).

        Raises ValueError naming the unknown or ambiguous label and listing the labels there are.
        """
        known = self.labels()
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

    def label_clause(self, labels: Mapping[str, str] | None, all_labels: bool) -> tuple[str | None, list[str]]:
        """WHERE clause keeping the chosen run of each judge kind (defaults, overridden by `labels`)."""
        if all_labels:
            return None, []
        chosen = {**self.default_labels(), **(labels or {})}
        if not chosen:
            return "0", []
        clause = "(" + " OR ".join("(judge = ? AND label = ?)" for _ in chosen) + ")"
        return clause, [v for pair in chosen.items() for v in pair]

    def where(self, filters: Iterable[tuple[str, Any]], labels: Mapping[str, str] | None,
               all_labels: bool) -> tuple[str | None, list[Any]]:
        clauses = [(c, v) for c, v in filters if v is not None]
        where, args = [c for c, _ in clauses], [v for _, v in clauses]
        label_where, label_args = self.label_clause(labels, all_labels)
        if label_where is not None:
            where.append(label_where)
            args += label_args
        return " AND ".join(where) or None, args

    def units(self, judge: str | None = None, *, labels: Mapping[str, str] | None = None) -> dict[tuple[str, str], dict]:
        """(trajectory id, judge) → unit row (JSON columns decoded) of each judge's chosen run: what is judged already."""
        where, args = self.where([("judge = ?", judge)], labels, False)
        return {
            (r["trajectory_id"], r["judge"]): decode(r, "citations")
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
                insert_sql("judgments", JUDGMENT_COLUMNS), values(judgments, JUDGMENT_COLUMNS)
            )
            db.conn.executemany(
                insert_sql("judge_replies", JUDGE_REPLY_COLUMNS),
                values(replies, JUDGE_REPLY_COLUMNS),
            )
            db.conn.execute(
                insert_sql("judge_units", JUDGE_UNIT_COLUMNS), values([unit], JUDGE_UNIT_COLUMNS)[0]
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
        where, args = self.where([("judge = ?", judge), ("trajectory_id = ?", trajectory_id)], labels, all_labels)
        rows = self.db["judgments"].rows_where(where, args, order_by="trajectory_id, judge, label, position")
        return [decode(r, "citations") for r in rows]

    def replies(
        self, *, trajectory_id: str | None = None, judge: str | None = None,
        labels: Mapping[str, str] | None = None,
    ) -> list[dict]:
        """Every stored reply of each judge's chosen run (the audit trail), oldest first, problems decoded."""
        where, args = self.where([("trajectory_id = ?", trajectory_id), ("judge = ?", judge)], labels, False)
        return [decode(r, "problems") for r in self.db["judge_replies"].rows_where(where, args, order_by="id")]

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
                    insert_sql("judgments", JUDGMENT_COLUMNS),
                    values([r for r in rows if r["route"] == "endpoint"], JUDGMENT_COLUMNS),
                )
                db.conn.execute(
                    insert_sql("scores", SCORE_COLUMNS, "INSERT OR REPLACE"),
                    values([score], SCORE_COLUMNS)[0],
                )
                n += 1
        return n

    def scores(
        self, *, judge: str | None = None, labels: Mapping[str, str] | None = None, all_labels: bool = False,
    ) -> list[dict]:
        """Score rows of each judge's chosen run (every run with `all_labels`), by trajectory, judge, label."""
        where, args = self.where([("judge = ?", judge)], labels, all_labels)
        return list(self.db["scores"].rows_where(where, args, order_by="trajectory_id, judge, label"))

    def add_batch(self, row: dict) -> None:
        """Record a submitted Batch-API job (`requests` maps custom_id → what it judges)."""
        columns = tuple(row)
        with self.atomic() as db:
            db.conn.execute(insert_sql("judge_batches", columns), values([row], columns)[0])

    def update_batch(self, batch_id: str, fields: dict) -> None:
        with self.atomic() as db:
            db["judge_batches"].update(batch_id, {k: dumps(v) if isinstance(v, (list, dict)) else v for k, v in fields.items()})

    def batches(self, *, status: str | None = None) -> list[dict]:
        where, args = ("status = ?", [status]) if status else (None, [])
        return [decode(r, "requests") for r in self.db["judge_batches"].rows_where(where, args, order_by="created_at, id")]

    def get_batch(self, batch_id: str) -> dict | None:
        rows = list(self.db["judge_batches"].rows_where("id = ?", [batch_id]))
        return decode(rows[0], "requests") if rows else None
