"""Evidence sensitivity (gcpc_core.perturb): one row per perturbed item under one setting; a rerun
of the same setting replaces its rows."""

from __future__ import annotations

from .common import Repository, decode, insert_sql, values


class PerturbationRepository(Repository):
    """Perturbation results, keyed by their `id`."""

    COLUMNS = (
        "id", "run_id", "trajectory_id", "task", "judge", "item_id", "route", "checklist_sha", "model",
        "prompt_version", "rules_version", "seed", "scope", "status", "kind", "recipe", "original_verdict",
        "original_citations", "verdict", "reason", "citations", "rationale", "replies", "created_at",
    )
    _JSON = ("recipe", "original_citations", "citations", "replies")

    def save(self, row: dict) -> None:
        """Insert or replace one perturbation result (keyed by its `id`), in one transaction."""
        with self.atomic() as db:
            db.conn.execute(insert_sql("perturbations", self.COLUMNS, "INSERT OR REPLACE"),
                            values([row], self.COLUMNS)[0])

    def list(self, *, judge: str | None = None, run_id: str | None = None) -> list[dict]:
        """Perturbation rows (JSON columns decoded), by judge, trajectory and item."""
        clauses = [(c, v) for c, v in (("judge = ?", judge), ("run_id = ?", run_id)) if v is not None]
        where = " AND ".join(c for c, _ in clauses) or None
        rows = self.db["perturbations"].rows_where(where, [v for _, v in clauses],
                                                   order_by="judge, trajectory_id, item_id, seed, scope")
        return [decode(r, *self._JSON) for r in rows]
