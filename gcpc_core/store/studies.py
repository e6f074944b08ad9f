"""Human-study designs (annotations/): studies, their blinded units and pairs, raters and the
assignment queues."""

from __future__ import annotations

from collections.abc import Iterable

from sqlite_utils import Database

from .common import Repository, decode, dumps, utcnow


class StudyRepository(Repository):
    """Frozen study designs, raters and assignment rows."""

    def insert(
        self, study: dict, *, units: Iterable[dict], pairs: Iterable[dict], raters: Iterable[dict],
        assignments: Iterable[dict],
    ) -> None:
        """Store a frozen study design in one transaction; an existing study id is an error."""
        now = utcnow()
        with self.atomic() as db:
            if db["studies"].count_where("id = ?", [study["id"]]):
                raise ValueError(f"study {study['id']!r} already exists")
            given = {k: v for k, v in study.items() if v is not None}
            db["studies"].insert({"status": "open", "created_at": now, **given,
                                  "params": dumps(study["params"]), "design": dumps(study["design"])}, pk="id")
            db["study_units"].insert_all(({"study_id": study["id"], **u} for u in units), batch_size=500)
            db["study_pairs"].insert_all(({"study_id": study["id"], **p} for p in pairs), batch_size=500)
            db["study_raters"].insert_all(({"study_id": study["id"], "created_at": now, **r} for r in raters))
            db["study_assignments"].insert_all(
                ({"study_id": study["id"], "active": 1, "assigned_at": now, **a} for a in assignments), batch_size=500
            )

    def _row(self, row: dict) -> dict:
        return {**decode(row, "params", "design"), "is_simulated": bool(row["is_simulated"])}

    def list(self) -> list[dict]:
        return [self._row(r) for r in self.db["studies"].rows_where(order_by="created_at, id")]

    def get(self, study_id: str) -> dict | None:
        rows = list(self.db["studies"].rows_where("id = ?", [study_id]))
        return self._row(rows[0]) if rows else None

    def set_status(self, study_id: str, status: str) -> None:
        """`open` accepts answers; `closed` keeps them read-only."""
        if status not in ("open", "closed"):
            raise ValueError(f"study status must be open or closed, not {status!r}")
        with self.atomic() as db:
            db["studies"].update(study_id, {"status": status})

    def units(self, study_id: str) -> list[dict]:
        return list(self.db["study_units"].rows_where("study_id = ?", [study_id], order_by="unit_id"))

    def pairs(self, study_id: str) -> list[dict]:
        return list(self.db["study_pairs"].rows_where("study_id = ?", [study_id], order_by="pair_id"))

    def raters(self, study_id: str) -> list[dict]:
        """Raters of a study; `token_hash` is left out (it is only ever compared, in `rater_by_token_hash`)."""
        rows = self.db["study_raters"].rows_where("study_id = ?", [study_id], order_by="rater")
        return [{**{k: v for k, v in r.items() if k != "token_hash"}, "has_token": r["token_hash"] is not None,
                 "is_simulated": bool(r["is_simulated"])} for r in rows]

    def rater_by_token_hash(self, token_hash: str) -> dict | None:
        """(study_id, rater, is_simulated) of the rater whose invitation token hashes to `token_hash`."""
        rows = list(self.db["study_raters"].rows_where(
            "token_hash = ?", [token_hash], select="study_id, rater, is_simulated"))
        return rows[0] if rows else None

    def add_rater(self, study_id: str, rater: str, *, token_hash: str | None, is_simulated: bool = False) -> None:
        """A rater joining an existing study (with an empty queue until items are reassigned)."""
        now = utcnow()
        with self.atomic() as db:
            if db["study_raters"].count_where("study_id = ? AND rater = ?", [study_id, rater]):
                raise ValueError(f"rater {rater!r} already belongs to study {study_id!r}")
            db["study_raters"].insert({"study_id": study_id, "rater": rater, "token_hash": token_hash,
                                       "is_simulated": int(is_simulated), "created_at": now,
                                       "token_issued_at": now if token_hash else None})

    def set_rater_token_hash(self, study_id: str, rater: str, token_hash: str) -> None:
        """Replace a rater's token (a new invitation link); the old link stops working."""
        with self.atomic() as db:
            if not db["study_raters"].count_where("study_id = ? AND rater = ?", [study_id, rater]):
                raise KeyError(f"no rater {rater!r} in study {study_id!r}")
            db["study_raters"].update((study_id, rater), {"token_hash": token_hash, "token_issued_at": utcnow()})

    def assignments(self, study_id: str, *, rater: str | None = None, active: bool | None = True) -> list[dict]:
        """Assignments of a study (active ones by default), by rater, kind and queue position."""
        clauses = [("study_id = ?", study_id)] + [(c, v) for c, v in (("rater = ?", rater),) if v is not None]
        if active is not None:
            clauses.append(("active = ?", int(active)))
        rows = self.db["study_assignments"].rows_where(
            " AND ".join(c for c, _ in clauses), [v for _, v in clauses], order_by="rater, kind DESC, position")
        return list(rows)

    def require_assignment(self, db: Database, study_id: str | None, rater: str, kind: str, target: str) -> None:
        study = next(iter(db["studies"].rows_where("id = ?", [study_id], select="status")), None)
        if study is None or study["status"] != "open":
            raise PermissionError(f"study {study_id!r} is not open for answers")
        if not db["study_assignments"].count_where(
            "study_id = ? AND rater = ? AND kind = ? AND target = ? AND active = 1", [study_id, rater, kind, target]
        ):
            raise PermissionError(f"{kind} {target} is not in this rater's queue")

    def has_rater(self, study_id: str, rater: str) -> bool:
        return bool(self.db["study_raters"].count_where("study_id = ? AND rater = ?", [study_id, rater]))

    def assignment(self, study_id: str, *, rater: str, kind: str, target: str) -> dict | None:
        """The assignment row of (rater, kind, target), active or not, or None."""
        rows = self.db["study_assignments"].rows_where(
            "study_id = ? AND rater = ? AND kind = ? AND target = ?", [study_id, rater, kind, target])
        return next(iter(rows), None)

    def last_position(self, study_id: str, *, rater: str, kind: str) -> int | None:
        """The highest queue position of the rater's assignments of `kind` (inactive ones included)."""
        rows = self.db["study_assignments"].rows_where(
            "study_id = ? AND rater = ? AND kind = ?", [study_id, rater, kind], select="max(position) AS p")
        return next(iter(rows))["p"]

    def deactivate_assignment(self, study_id: str, *, rater: str, kind: str, target: str) -> bool:
        """Take an active assignment off the rater's queue; False when they hold none such."""
        held = self.assignment(study_id, rater=rater, kind=kind, target=target)
        if held is None or not held["active"]:
            return False
        with self.atomic() as db:
            db["study_assignments"].update(held["id"], {"active": 0})
        return True

    def place_assignment(self, study_id: str, *, rater: str, kind: str, target: str, position: int,
                         reassigned_from: str | None) -> None:
        """Make (rater, kind, target) an active assignment at `position`, reviving its old row if it has one."""
        row = {"active": 1, "position": position, "reassigned_from": reassigned_from, "assigned_at": utcnow()}
        held = self.assignment(study_id, rater=rater, kind=kind, target=target)
        with self.atomic() as db:
            if held is not None:
                db["study_assignments"].update(held["id"], row)
            else:
                db["study_assignments"].insert({"study_id": study_id, "rater": rater, "kind": kind, "target": target,
                                                **row})
