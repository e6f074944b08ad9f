"""Evidence sensitivity (gcpc_core.perturb): one row per perturbed item of one labelled judge run
under one setting; a rerun of the same setting on the same run replaces its rows. Reads see each
judge's chosen run, like judgments."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, ClassVar

from ..models import Route, Verdict
from .common import JSON, Connection, Repository, Row
from .judging import JudgingRepository


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
    route: Route | None = None
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
    original_verdict: Verdict | None = None
    """The raw verdict before perturbation (Yes)."""
    original_citations: Annotated[list[dict] | None, JSON] = None
    """The citations of the original Yes."""
    verdict: Verdict | None = None
    """The verdict on the perturbed log (None when it was not judged)."""
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
    label: str
    """The labelled judge run whose Yes was perturbed (with `id`, the key: two runs of one judge with
    the same model and prompt share the `id`)."""


_REPLACE = PerturbationRow.insert_sql("INSERT OR REPLACE")


class PerturbationRepository(Repository):
    """Perturbation results, keyed by their `id` and the label of the judge run they perturbed."""

    def __init__(self, store: Connection, judging: JudgingRepository):
        super().__init__(store)
        self._judging = judging

    def save(self, row: PerturbationRow) -> None:
        """Insert or replace one perturbation result, in one transaction."""
        if not row.label:
            raise ValueError(f"perturbation {row.id!r} names no judge run label")
        with self.atomic() as db:
            db.conn.execute(_REPLACE, row.db_values())

    def list(
        self, *, judge: str | None = None, run_id: str | None = None, labels: Mapping[str, str] | None = None,
        all_labels: bool = False,
    ) -> list[PerturbationRow]:
        """Perturbation rows of each judge's chosen run (its default label, or `labels`; every run with
        `all_labels`), by judge, label, trajectory and item."""
        where, args = self._judging.where([("judge = ?", judge), ("run_id = ?", run_id)], labels, all_labels)
        rows = self.db["perturbations"].rows_where(where, args,
                                                   order_by="judge, label, trajectory_id, item_id, seed, scope")
        return [PerturbationRow.from_db(r) for r in rows]
