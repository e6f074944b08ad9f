"""Human annotations (annotations/): append-only rows; an edit is a new row whose `supersedes` points
at the row it replaces, so the *current* answer of (kind, study, target, rater) is the row nobody
supersedes. Item audits (the review app) and study answers (progress ratings, preferences) share
the table. What an annotation's `target` is made of is decided in `annotations/`; here it is a key.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Annotated, ClassVar, Literal

from pydantic import Field
from sqlite_utils import Database

from .common import JSON, Repository, Row, dumps, utcnow
from .judging import JudgingRepository
from .studies import StudyRepository

AnnotationKind = Literal["item_audit", "progress_rating", "preference"]

_CHAIN = "kind = ? AND study_id IS ? AND target = ? AND rater = ?"
"""The versions of one rater's answer on one target."""
_NOT_SUPERSEDED = "NOT EXISTS (SELECT 1 FROM annotations AS b WHERE b.supersedes = annotations.id)"


class AnnotationRow(Row):
    """One version of one rater's answer on one target (an item audit, a progress rating or a preference)."""

    TABLE: ClassVar[str] = "annotations"

    id: int | None = None
    """Row id (assigned on insert); ids grow with time, so id order is the order answers were stored."""
    kind: AnnotationKind
    """What was answered: an item audit, a progress rating or a pairwise preference."""
    study_id: str | None = None
    """The study a rating or preference belongs to (None for item audits)."""
    target: str
    """What the answer is about, as `annotations.targets` keys it: one chain of versions per (kind, study,
    target, rater)."""
    task: str | None = None
    """Task of the rated trial or pair."""
    trajectory_id: str | None = None
    """The audited or rated trial (None for a preference)."""
    unit_id: str | None = None
    """The study unit rated (progress ratings)."""
    pair_id: str | None = None
    """The study pair compared (preferences)."""
    item_id: str | None = None
    """The checklist item audited (item audits)."""
    judge: str | None = None
    """The judge whose item verdict was audited (item audits)."""
    rater: str
    """Who answered: a study rater or an auditor."""
    value: Annotated[dict, JSON]
    """The answer: `{agree, verdict, selection}` for an audit (`selection` once recorded), `{rating}` for a
    rating, `{choice}` for a preference."""
    note: str | None = None
    """The rater's free-text comment."""
    confidence: int | None = None
    """A preference's confidence on the study's scale."""
    created_at: str = Field(default_factory=utcnow)
    """When the answer was given (now, unless given)."""
    supersedes: int | None = None
    """The row this version replaces (None for a first answer)."""
    client_token: str = Field(default_factory=lambda: uuid.uuid4().hex)
    """Idempotency key of the submit: the same token twice stores one row (a fresh one unless given)."""
    source: str = "app"
    """Where the answer came from: `app`, `import` or `simulated`."""
    is_simulated: bool = False
    """True for answers of a simulated rater (the demo study)."""
    label: str | None = None
    """The labelled judge run whose verdict an item audit checked (None for other kinds, or an audit of a
    judge that had no run)."""


_INSERT = AnnotationRow.insert_sql()


class AnnotationRepository(Repository):
    """Annotation rows and their supersession chains."""

    def __init__(self, store, judging: JudgingRepository, studies: StudyRepository):
        super().__init__(store)
        self._judging = judging
        self._studies = studies

    def _current(self, db: Database, kind: str, study_id: str | None, target: str, rater: str) -> AnnotationRow | None:
        rows = db["annotations"].rows_where(
            f"{_CHAIN} AND {_NOT_SUPERSEDED}",
            [kind, study_id, target, rater], order_by="id DESC", limit=1,
        )
        return next((AnnotationRow.from_db(r) for r in rows), None)

    def add(
        self, row: AnnotationRow, *, assignment: tuple[str, str] | None = None, token_hash: str | None = None,
        max_versions: int | None = None,
    ) -> tuple[AnnotationRow, bool]:
        """Append one annotation in one transaction; returns (stored row, whether a row was written).

        The row is new: its `id` and `supersedes` are the store's to set (ValueError when given).
        Idempotent twice over: a `client_token` already stored returns its row (a double submit),
        and an answer identical to the current one is not stored again (a refresh re-sending it).
        Otherwise the new row supersedes the current answer of (kind, study, target, rater); `target`
        is the key `annotations.targets.annotation_target` makes of the row's key columns.
        With `assignment=(kind, target)` the rater must hold that active assignment in an open
        study, checked inside the same transaction as the write (PermissionError otherwise); with
        `token_hash` too, the rater's invitation link must still be that one (not replaced or withdrawn
        since the rater's page opened). With `max_versions`, a change to an answer that already has that
        many versions is refused (ValueError) and nothing is written: the history stays append-only and
        bounded, its last version current.
        """
        if not row.rater:
            raise ValueError("an annotation needs a rater")
        if row.id is not None or row.supersedes is not None:
            raise ValueError("a new annotation's id and supersedes are set by the store, not given")
        chain = (row.kind, row.study_id, row.target, row.rater)
        with self.atomic() as db:
            same = next(iter(db["annotations"].rows_where("client_token = ?", [row.client_token])), None)
            if same is not None:
                if (same["kind"], same["study_id"], same["target"], same["rater"]) != chain:
                    raise ValueError("client token already used for a different annotation")
                return AnnotationRow.from_db(same), False
            if assignment is not None:
                self._studies.require_assignment(db, row.study_id, row.rater, *assignment, token_hash=token_hash)
            current = self._current(db, *chain)
            if current is not None and (dumps(current.value), current.note, current.confidence) == (
                dumps(row.value), row.note, row.confidence
            ):
                return current, False
            if max_versions is not None and current is not None:
                versions = db["annotations"].count_where(_CHAIN, list(chain))
                if versions >= max_versions:
                    raise ValueError(f"this answer already has {versions} saved versions, the most kept for one "
                                     "answer: it cannot be changed again (the last saved version stands)")
            if current is not None:
                row = row.replaced(supersedes=current.id)
            written = db.execute(_INSERT, row.db_values()).lastrowid
            stored = next(iter(db["annotations"].rows_where("id = ?", [written])))
        return AnnotationRow.from_db(stored), True

    def list(
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
    ) -> list[AnnotationRow]:
        """Annotation rows in id order; only current answers unless `current=False`.

        Item audits are kept only for each judge's chosen run (its default label, or `labels`), like
        the verdicts they audit, unless `all_labels`; audits naming no run (made before the judge had
        one) and other kinds are always kept.
        """
        filters = [("kind = ?", kind), ("study_id = ?", study_id), ("rater = ?", rater), ("target = ?", target),
                   ("trajectory_id = ?", trajectory_id)]
        where, args = self._judging.where(filters, None, True)
        clauses = [where] if where else []
        clauses += [_NOT_SUPERSEDED] if current else []
        label_where, label_args = self._judging.label_clause(labels, all_labels)
        if label_where is not None:
            clauses.append(f"(kind != 'item_audit' OR label IS NULL OR {label_where})")
            args += label_args
        rows = self.db["annotations"].rows_where(" AND ".join(clauses) or None, args, order_by="id")
        return [AnnotationRow.from_db(r) for r in rows]

    def history(
        self, *, kind: str, study_id: str | None, target: str, rater: str, newest_first: bool = False,
        limit: int | None = None, offset: int = 0,
    ) -> list[AnnotationRow]:
        """Versions of one rater's answer on one target, oldest first (the last is current) or newest first;
        `limit` and `offset` read one page of a long history without loading the rest."""
        rows = self.db["annotations"].rows_where(
            _CHAIN, [kind, study_id, target, rater], order_by="id DESC" if newest_first else "id",
            limit=limit, offset=offset or None,
        )
        return [AnnotationRow.from_db(r) for r in rows]

    def versions(self, *, kind: str, study_id: str | None, target: str, rater: str) -> int:
        """How many versions one rater's answer on one target has."""
        return self.db["annotations"].count_where(_CHAIN, [kind, study_id, target, rater])
