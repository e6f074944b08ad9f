"""Evidence sensitivity (gcpc_core.perturb): one row per perturbed item under one setting; a rerun
of the same setting replaces its rows."""

from __future__ import annotations

from typing import Annotated, ClassVar

from .common import JSON, Repository, Row


class PerturbationRow(Row):
    """One perturbed (trajectory, judge, item) under one (seed, scope, model, prompt version): the
    original Yes, what was done to its cited evidence, and the verdict on the perturbed log."""

    TABLE: ClassVar[str] = "perturbations"

    id: str
    """Hash of the item and the setting: a rerun of the same setting replaces the row."""
    run_id: str | None = None
    """The `runs` row (kind `perturb-<judge>`)."""
    trajectory_id: str
    """The trial whose log was perturbed."""
    task: str
    """Task of the trial."""
    judge: str
    """Judge kind that judged the perturbed log."""
    item_id: str
    """The item whose Yes was put to the test."""
    route: str | None = None
    """Route of the item."""
    checklist_sha: str | None = None
    """Checklist of the item."""
    model: str | None = None
    """The judge's model."""
    prompt_version: str | None = None
    """Version of the judge's prompt."""
    rules_version: str | None = None
    """Hash of `rules/`."""
    seed: int
    """Seed of the perturbation."""
    scope: str
    """What was perturbed: the cited spans or the whole log."""
    status: str
    """`judged`, or why the item was not (e.g. nothing to perturb)."""
    kind: str | None = None
    """Kind of perturbation applied."""
    recipe: Annotated[dict | list | None, JSON] = None
    """What was changed in which events, and which cited spans are still in the log."""
    original_verdict: str | None = None
    """The raw verdict before perturbation (Yes)."""
    original_citations: Annotated[list[dict] | None, JSON] = None
    """The citations of the original Yes."""
    verdict: str | None = None
    """The verdict on the perturbed log."""
    reason: str | None = None
    """Reason of that verdict."""
    citations: Annotated[list[dict] | None, JSON] = None
    """Citations of that verdict."""
    rationale: str | None = None
    """The judge's rationale on the perturbed log."""
    replies: Annotated[list[dict] | None, JSON] = None
    """The judge's replies on the perturbed log."""
    created_at: str
    """When the result was stored."""


_REPLACE = PerturbationRow.insert_sql("INSERT OR REPLACE")


class PerturbationRepository(Repository):
    """Perturbation results, keyed by their `id`."""

    def save(self, row: dict) -> None:
        """Insert or replace one perturbation result (keyed by its `id`), in one transaction."""
        with self.atomic() as db:
            db.conn.execute(_REPLACE, PerturbationRow.values_of(row))

    def list(self, *, judge: str | None = None, run_id: str | None = None) -> list[PerturbationRow]:
        """Perturbation rows, by judge, trajectory and item."""
        clauses = [(c, v) for c, v in (("judge = ?", judge), ("run_id = ?", run_id)) if v is not None]
        where = " AND ".join(c for c, _ in clauses) or None
        rows = self.db["perturbations"].rows_where(where, [v for _, v in clauses],
                                                   order_by="judge, trajectory_id, item_id, seed, scope")
        return [PerturbationRow.from_db(r) for r in rows]
