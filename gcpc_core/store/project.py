"""Project-wide reads and settings: `meta`, the row counts `info` prints, and the data version the
pages key their caches on."""

from __future__ import annotations

from typing import ClassVar

from .common import Repository, Row
from .judging import JudgingRepository


class MetaRow(Row):
    """One project-level setting."""

    TABLE: ClassVar[str] = "meta"

    key: str
    """The setting's name (`is_demo`, `pass_threshold`, a stored headline's slot, …)."""
    value: str | None = None
    """Its value, as text."""


class DataVersionRow(Row):
    """The write counter of one table, kept by triggers (migration m2401)."""

    TABLE: ClassVar[str] = "data_versions"

    name: str
    """The table counted."""
    version: int
    """Inserts, updates and deletes of its rows so far."""


_UPSERT_META = MetaRow.upsert_sql("key")
_SELECT_VERSIONS = f"SELECT {', '.join(DataVersionRow.columns())} FROM data_versions"
"""Read on every rerun of every page (the caches' key): one fixed statement, name and version per row."""


class ProjectRepository(Repository):
    """Settings and summaries over every table of the project DB."""

    def __init__(self, store, judging: JudgingRepository):
        super().__init__(store)
        self._judging = judging

    def set_meta(self, key: str, value: str) -> None:
        """Project-level settings, e.g. `is_demo`, `pass_threshold`."""
        with self.atomic() as db:
            db.conn.execute(_UPSERT_META, MetaRow(key=key, value=value).db_values())

    def get_meta(self, key: str, default: str | None = None) -> str | None:
        row = next((MetaRow.from_db(r) for r in self.db["meta"].rows_where("key = ?", [key])), None)
        return row.value if row is not None else default

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


    def data_version(self, *tables: str) -> str:
        """A string that changes whenever rows of `tables` (default: every table with a write counter) are
        inserted, updated or deleted, by any connection and across restarts: the per-table counters that
        triggers keep in `data_versions` (migration m2401)."""
        counters = dict(self.db.execute(_SELECT_VERSIONS).fetchall())
        unknown = sorted(set(tables) - set(counters))
        if unknown:
            raise ValueError(f"no write counter for table(s) {', '.join(unknown)}; counted: {', '.join(sorted(counters))}")
        return "|".join(f"{name}:{counters[name]}" for name in tables or sorted(counters))
