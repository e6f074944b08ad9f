"""Checklists, frozen or failed, one row per version (gcpc_core.checklist)."""

from __future__ import annotations

from .common import Repository, decode, dumps, utcnow


class ChecklistRepository(Repository):
    """Checklist versions of each task; a frozen row is never updated (an edit is a new version)."""

    STATUSES = ("frozen", "failed")

    def add(
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
        if status not in self.STATUSES:
            raise ValueError(f"checklist status must be one of {self.STATUSES}, not {status!r}")
        row = {
            "sha": sha,
            "task": task,
            "source": source,
            "status": status,
            "checklist": None if checklist is None else dumps(checklist),
            "gate_failures": dumps(gate_failures or []),
            "reason": reason,
            "raw_reply": raw_reply,
            "attempts": dumps(attempts or []),
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
                return self._row(existing[0])
            if existing:
                row["version"] = existing[0]["version"]
                db["checklists"].update(sha, row)
            else:
                versions = db["checklists"].rows_where("task = ?", [task], select="max(version) AS v")
                row["version"] = (next(iter(versions))["v"] or 0) + 1
                db["checklists"].insert(row, pk="sha")
        return self.get(sha)  # type: ignore[return-value]

    def get(self, sha: str) -> dict | None:
        rows = list(self.db["checklists"].rows_where("sha = ?", [sha]))
        return self._row(rows[0]) if rows else None

    def list(self, *, task: str | None = None, status: str | None = None) -> list[dict]:
        """Checklist rows (JSON columns decoded), by task then version."""
        clauses = [(c, v) for c, v in (("task = ?", task), ("status = ?", status)) if v is not None]
        where = " AND ".join(c for c, _ in clauses) or None
        rows = self.db["checklists"].rows_where(where, [v for _, v in clauses], order_by="task, version")
        return [self._row(r) for r in rows]

    def latest(self, task: str, *, status: str | None = "frozen") -> dict | None:
        """The highest version for a task (frozen only, by default)."""
        rows = self.list(task=task, status=status)
        return rows[-1] if rows else None

    def _row(self, row: dict) -> dict:
        return decode(row, "checklist", "gate_failures", "attempts")

    def frozen_tasks(self) -> set[str]:
        """Tasks that have at least one frozen checklist."""
        return {r["task"] for r in self.db["checklists"].rows_where("status = 'frozen'", select="task")}
