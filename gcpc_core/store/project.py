"""Project-wide reads and settings: `meta`, the row counts `info` prints, and the data version the
pages key their caches on."""

from __future__ import annotations

from .common import Repository
from .judging import JudgingRepository


class ProjectRepository(Repository):
    """Settings and summaries over every table of the project DB."""

    def __init__(self, store, judging: JudgingRepository):
        super().__init__(store)
        self._judging = judging

    def set_meta(self, key: str, value: str) -> None:
        """Project-level settings, e.g. `is_demo`, `pass_threshold`."""
        with self.atomic() as db:
            db["meta"].upsert({"key": key, "value": value}, pk="key")

    def get_meta(self, key: str, default: str | None = None) -> str | None:
        rows = list(self.db["meta"].rows_where("key = ?", [key]))
        return rows[0]["value"] if rows else default

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
            "judgments": count("judgments", *self._judging.label_clause(None, False)) if db["judge_units"].exists() else 0,
            "judgments_all_runs": count("judgments"),
            "judge_runs": len(self._judging.labels()) if db["judge_units"].exists() else 0,
            "annotations": count("annotations"),
            "import_issues": count("import_issues"),
        }

    # ==== LLM layer and checklists (gcpc_core.llm, gcpc_core.checklist.synthesis) ====
    # Helpers of this section are static methods here, so the section stays self-contained.


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
