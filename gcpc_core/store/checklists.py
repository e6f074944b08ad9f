"""Checklists, frozen or failed, one row per version (gcpc_core.checklist)."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Field

from .common import JSON, Repository, Row, utcnow

ChecklistStatus = Literal["frozen", "failed"]


class ChecklistRow(Row):
    """One stored checklist version of a task: the checklist in the file schema (the `Checklist` model
    of gcpc_core.checklist validates it), or why synthesis could not produce one that passes."""

    TABLE: ClassVar[str] = "checklists"

    sha: str
    """sha256 of the checklist's canonical JSON (of the raw reply when there is no checklist)."""
    task: str
    """The task it is for."""
    version: int = 0
    """1, 2, … per task, in the order stored (`ChecklistRepository.add` sets it; 0 before)."""
    source: str
    """Who wrote it: `human:<name>` or `llm:<model>`."""
    status: ChecklistStatus
    """`frozen` (passed every gate; judged against, never updated) or `failed`."""
    checklist: Annotated[dict | None, JSON] = None
    """The checklist in the file schema (task, source, items, waivers); None when none was parsed."""
    gate_failures: Annotated[list[dict] | None, JSON] = None
    """The validation gates it failed (`item_id`, `gate`, `message`)."""
    reason: str | None = None
    """Why synthesis failed."""
    raw_reply: str | None = None
    """The model's last reply, kept when it failed."""
    attempts: Annotated[list[dict] | None, JSON] = None
    """Each synthesis attempt with what was wrong with it."""
    rules_version: str | None = None
    """Hash of `rules/` it was validated under."""
    model: str | None = None
    """The model that synthesized it (None for a human's)."""
    prompt_version: str | None = None
    """Version of the synthesis prompt."""
    run_id: str | None = None
    """The `runs` row that stored it."""
    created_at: str = Field(default_factory=utcnow)
    """When it was stored."""
    created_by: str | None = None
    """Who stored it (a CLI user, an app reviewer, the synthesizer)."""


_INSERT = ChecklistRow.insert_sql()


class ChecklistRepository(Repository):
    """Checklist versions of each task; a frozen row is never updated (an edit is a new version)."""

    def add(self, row: ChecklistRow) -> ChecklistRow:
        """Store a checklist as the task's next version and return its row as stored (its `version` is the
        store's to set; failures and attempts not given are stored as empty lists).

        Frozen rows are never updated (an edit is a new sha and so a new row). Storing content whose
        sha is already stored returns the stored row, except that a `failed` row is promoted when the
        same content now passes (e.g. under new rules): failed rows carry no judgments.
        """
        with self.atomic() as db:
            existing = self.get(row.sha)
            if existing is not None and not (existing.status == "failed" and row.status == "frozen"):
                return existing
            if existing is not None:
                version = existing.version
            else:
                versions = db["checklists"].rows_where("task = ?", [row.task], select="max(version) AS v")
                version = (next(iter(versions))["v"] or 0) + 1
            row = row.replaced(version=version, gate_failures=row.gate_failures or [], attempts=row.attempts or [])
            if existing is not None:
                db["checklists"].update(row.sha, dict(zip(ChecklistRow.columns(), row.db_values())))
            else:
                db.conn.execute(_INSERT, row.db_values())
        return self.get(row.sha)  # type: ignore[return-value]

    def get(self, sha: str) -> ChecklistRow | None:
        """The checklist stored under `sha`, or None."""
        rows = list(self.db["checklists"].rows_where("sha = ?", [sha]))
        return ChecklistRow.from_db(rows[0]) if rows else None

    def list(self, *, task: str | None = None, status: str | None = None) -> list[ChecklistRow]:
        """Checklist rows, by task then version."""
        clauses = [(c, v) for c, v in (("task = ?", task), ("status = ?", status)) if v is not None]
        where = " AND ".join(c for c, _ in clauses) or None
        rows = self.db["checklists"].rows_where(where, [v for _, v in clauses], order_by="task, version")
        return [ChecklistRow.from_db(r) for r in rows]

    def latest(self, task: str, *, status: str | None = "frozen") -> ChecklistRow | None:
        """The highest version for a task (frozen only, by default)."""
        rows = self.list(task=task, status=status)
        return rows[-1] if rows else None

    def frozen_tasks(self) -> set[str]:
        """Tasks that have at least one frozen checklist."""
        return {r["task"] for r in self.db["checklists"].rows_where("status = 'frozen'", select="task")}
