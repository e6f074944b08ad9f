"""Human-study designs (annotations/): studies, their blinded units and pairs, raters and the
assignment queues.

A rater's invitation token is stored only as its hash, and the hash never leaves this module: raters
are read as `Rater` (which says whether a token was issued, not what it hashes to), and a token is
only ever compared, in `rater_by_token_hash`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field
from sqlite_utils import Database

from .common import JSON, Repository, Row, utcnow

StudyStatus = Literal["open", "closed"]
QuestionKind = Literal["progress_rating", "preference"]


class StudyRow(Row):
    """One frozen study design: what was sampled, with which seed, guidelines and blinding terms."""

    TABLE: ClassVar[str] = "studies"

    id: str
    """Study id (`study-<design sha prefix>` unless named)."""
    name: str | None = None
    """Display name."""
    status: StudyStatus = "open"
    """`open` accepts answers; `closed` keeps them read-only."""
    seed: int
    """Seed the design was sampled with."""
    params: Annotated[dict, JSON]
    """The design parameters (`annotations.design.DesignParams`, as JSON)."""
    design: Annotated[dict, JSON]
    """The frozen design, rater guidelines and blinding terms (`design`, `guidelines`, `blinding`)."""
    design_sha: str
    """Hash of the design: an import of the same study must carry the same one."""
    is_simulated: bool = False
    """True when some raters are simulated (the demo study)."""
    created_at: str = Field(default_factory=utcnow)
    """When the study was created."""
    created_by: str | None = None
    """Who created it."""


class StudyUnitRow(Row):
    """One trajectory of a study, rated blind under its unit code."""

    TABLE: ClassVar[str] = "study_units"

    study_id: str
    """The study."""
    unit_id: str
    """Blind code of the unit (what raters see instead of the trajectory id)."""
    trajectory_id: str
    """The trial behind the code."""
    task: str
    """Task of the trial."""
    stratum: str | None = None
    """Sampling stratum (outcome × condition) the unit was drawn from."""


class StudyPairRow(Row):
    """Two units of one task shown side by side for a preference."""

    TABLE: ClassVar[str] = "study_pairs"

    study_id: str
    """The study."""
    pair_id: str
    """Blind code of the pair."""
    task: str
    """Task of both units."""
    left_unit: str
    """Unit shown as A."""
    right_unit: str
    """Unit shown as B."""


class StudyRaterRow(Row):
    """One rater of a study as stored, token hash included: written here, never returned."""

    TABLE: ClassVar[str] = "study_raters"

    study_id: str
    """The study."""
    rater: str
    """Rater name."""
    token_hash: str | None = None
    """Hash of the rater's invitation token (None until a link is issued)."""
    is_simulated: bool = False
    """True for a simulated rater (answers written by the demo's simulator)."""
    created_at: str = Field(default_factory=utcnow)
    """When the rater joined the study."""
    token_issued_at: str | None = None
    """When the current token was issued."""


class Rater(BaseModel):
    """A rater of a study as the rest of GCPC sees one: whether a link was issued, never its hash."""

    model_config = ConfigDict(use_attribute_docstrings=True, extra="forbid", frozen=True)

    study_id: str
    """The study."""
    rater: str
    """Rater name."""
    is_simulated: bool
    """True for a simulated rater."""
    created_at: str
    """When the rater joined the study."""
    token_issued_at: str | None
    """When the current token was issued (None when none was)."""
    has_token: bool
    """Whether an invitation link was issued."""

    @classmethod
    def of(cls, row: StudyRaterRow) -> Rater:
        return cls(**row.model_dump(exclude={"token_hash"}), has_token=row.token_hash is not None)


class StudyAssignmentRow(Row):
    """One question on one rater's queue: a unit to rate or a pair to compare."""

    TABLE: ClassVar[str] = "study_assignments"

    id: int | None = None
    """Row id (assigned on insert)."""
    study_id: str
    """The study."""
    rater: str
    """Whose queue it is on."""
    kind: QuestionKind
    """`progress_rating` (target is a unit) or `preference` (target is a pair)."""
    target: str
    """The unit or pair code."""
    position: int
    """Place in the rater's queue of that kind."""
    active: bool = True
    """False once moved to another rater (the row is kept, so a move back revives it)."""
    assigned_at: str = Field(default_factory=utcnow)
    """When it was (last) put on this queue."""
    reassigned_from: str | None = None
    """The rater it was moved from, if it was."""


_INSERT_STUDY = StudyRow.insert_sql()
_INSERT_UNIT = StudyUnitRow.insert_sql()
_INSERT_PAIR = StudyPairRow.insert_sql()
_INSERT_RATER = StudyRaterRow.insert_sql()
_INSERT_ASSIGNMENT = StudyAssignmentRow.insert_sql()


class StudyRepository(Repository):
    """Frozen study designs, raters and assignment rows."""

    def insert(
        self, study: StudyRow, *, units: Iterable[StudyUnitRow], pairs: Iterable[StudyPairRow],
        raters: Iterable[StudyRaterRow], assignments: Iterable[StudyAssignmentRow],
    ) -> None:
        """Store a frozen study design with its rows in one transaction; an existing study id is an error,
        and so is a row of another study (ValueError)."""
        tables: list[tuple[str, list[StudyUnitRow | StudyPairRow | StudyRaterRow | StudyAssignmentRow]]] = [
            (_INSERT_UNIT, list(units)), (_INSERT_PAIR, list(pairs)), (_INSERT_RATER, list(raters)),
            (_INSERT_ASSIGNMENT, list(assignments))]
        strays = sorted({r.study_id for _, rows in tables for r in rows if r.study_id != study.id})
        if strays:
            raise ValueError(f"rows of study {strays[0]!r} given with study {study.id!r}")
        with self.atomic() as db:
            if db["studies"].count_where("id = ?", [study.id]):
                raise ValueError(f"study {study.id!r} already exists")
            db.execute(_INSERT_STUDY, study.db_values())
            for sql, rows in tables:
                db.conn.executemany(sql, [r.db_values() for r in rows])

    def list(self) -> list[StudyRow]:
        return [StudyRow.from_db(r) for r in self.db["studies"].rows_where(order_by="created_at, id")]

    def get(self, study_id: str) -> StudyRow | None:
        rows = self.db["studies"].rows_where("id = ?", [study_id])
        return next((StudyRow.from_db(r) for r in rows), None)

    def set_status(self, study_id: str, status: str) -> None:
        """`open` accepts answers; `closed` keeps them read-only."""
        if status not in ("open", "closed"):
            raise ValueError(f"study status must be open or closed, not {status!r}")
        with self.atomic() as db:
            db["studies"].update(study_id, {"status": status})

    def units(self, study_id: str) -> list[StudyUnitRow]:
        rows = self.db["study_units"].rows_where("study_id = ?", [study_id], order_by="unit_id")
        return [StudyUnitRow.from_db(r) for r in rows]

    def pairs(self, study_id: str) -> list[StudyPairRow]:
        rows = self.db["study_pairs"].rows_where("study_id = ?", [study_id], order_by="pair_id")
        return [StudyPairRow.from_db(r) for r in rows]

    def raters(self, study_id: str) -> list[Rater]:
        """Raters of a study, by name."""
        rows = self.db["study_raters"].rows_where("study_id = ?", [study_id], order_by="rater")
        return [Rater.of(StudyRaterRow.from_db(r)) for r in rows]

    def rater_by_token_hash(self, token_hash: str) -> Rater | None:
        """The rater whose invitation token hashes to `token_hash`, or None."""
        rows = self.db["study_raters"].rows_where("token_hash = ?", [token_hash])
        return next((Rater.of(StudyRaterRow.from_db(r)) for r in rows), None)

    def add_rater(self, study_id: str, rater: str, *, token_hash: str | None, is_simulated: bool = False) -> None:
        """A rater joining an existing study (with an empty queue until items are reassigned)."""
        now = utcnow()
        with self.atomic() as db:
            if db["study_raters"].count_where("study_id = ? AND rater = ?", [study_id, rater]):
                raise ValueError(f"rater {rater!r} already belongs to study {study_id!r}")
            row = StudyRaterRow(study_id=study_id, rater=rater, token_hash=token_hash, is_simulated=is_simulated,
                                created_at=now, token_issued_at=now if token_hash else None)
            db.execute(_INSERT_RATER, row.db_values())

    def set_rater_token_hash(self, study_id: str, rater: str, token_hash: str) -> None:
        """Replace a rater's token (a new invitation link); the old link stops working."""
        with self.atomic() as db:
            if not db["study_raters"].count_where("study_id = ? AND rater = ?", [study_id, rater]):
                raise KeyError(f"no rater {rater!r} in study {study_id!r}")
            db["study_raters"].update((study_id, rater), {"token_hash": token_hash, "token_issued_at": utcnow()})

    def assignments(
        self, study_id: str, *, rater: str | None = None, active: bool | None = True,
    ) -> list[StudyAssignmentRow]:
        """Assignments of a study (active ones by default), by rater, kind and queue position."""
        clauses = [("study_id = ?", study_id)] + [(c, v) for c, v in (("rater = ?", rater),) if v is not None]
        if active is not None:
            clauses.append(("active = ?", int(active)))
        rows = self.db["study_assignments"].rows_where(
            " AND ".join(c for c, _ in clauses), [v for _, v in clauses], order_by="rater, kind DESC, position")
        return [StudyAssignmentRow.from_db(r) for r in rows]

    def require_assignment(self, db: Database, study_id: str | None, rater: str, kind: str, target: str, *,
                           token_hash: str | None = None) -> None:
        """PermissionError unless the study is open, (rater, kind, target) is on the rater's active queue and,
        with `token_hash`, the rater's current invitation token is still the one hashing to it (a link
        replaced or withdrawn since the page opened saves nothing); reads through `db`, so inside the
        caller's transaction."""
        study = next(iter(db["studies"].rows_where("id = ?", [study_id], select="status")), None)
        if study is None or study["status"] != "open":
            raise PermissionError(f"study {study_id!r} is not open for answers")
        if token_hash is not None and not db["study_raters"].count_where(
            "study_id = ? AND rater = ? AND token_hash = ?", [study_id, rater, token_hash]
        ):
            raise PermissionError("this link no longer works: it was replaced or withdrawn. "
                                  "Please ask the study organisers for a new one.")
        if not db["study_assignments"].count_where(
            "study_id = ? AND rater = ? AND kind = ? AND target = ? AND active = 1", [study_id, rater, kind, target]
        ):
            raise PermissionError(f"{kind} {target} is not in this rater's queue")

    def has_rater(self, study_id: str, rater: str) -> bool:
        return bool(self.db["study_raters"].count_where("study_id = ? AND rater = ?", [study_id, rater]))

    def assignment(self, study_id: str, *, rater: str, kind: str, target: str) -> StudyAssignmentRow | None:
        """The assignment row of (rater, kind, target), active or not, or None."""
        rows = self.db["study_assignments"].rows_where(
            "study_id = ? AND rater = ? AND kind = ? AND target = ?", [study_id, rater, kind, target])
        return next((StudyAssignmentRow.from_db(r) for r in rows), None)

    def last_position(self, study_id: str, *, rater: str, kind: str) -> int | None:
        """The highest queue position of the rater's assignments of `kind` (inactive ones included)."""
        rows = self.db["study_assignments"].rows_where(
            "study_id = ? AND rater = ? AND kind = ?", [study_id, rater, kind], select="max(position) AS p")
        return next(iter(rows))["p"]

    def deactivate_assignment(self, study_id: str, *, rater: str, kind: str, target: str) -> bool:
        """Take an active assignment off the rater's queue; False when they hold none such."""
        held = self.assignment(study_id, rater=rater, kind=kind, target=target)
        if held is None or not held.active:
            return False
        with self.atomic() as db:
            db["study_assignments"].update(held.id, {"active": 0})
        return True

    def place_assignment(self, study_id: str, *, rater: str, kind: str, target: str, position: int,
                         reassigned_from: str | None) -> None:
        """Make (rater, kind, target) an active assignment at `position`, reviving its old row if it has one."""
        row = {"active": 1, "position": position, "reassigned_from": reassigned_from, "assigned_at": utcnow()}
        held = self.assignment(study_id, rater=rater, kind=kind, target=target)
        with self.atomic() as db:
            if held is not None:
                db["study_assignments"].update(held.id, row)
            else:
                placed = StudyAssignmentRow(study_id=study_id, rater=rater, kind=kind, target=target, **row)
                db.execute(_INSERT_ASSIGNMENT, placed.db_values())
