"""Export a study's responses with its design, and import responses collected elsewhere.

Export: every version of every answer (`is_current` marks the live one) with the design columns a
reader needs (task, trajectory ids, strata, left/right sides) as CSV, or as JSONL whose first
record is the whole frozen design (params, units, pairs, guidelines, blinding terms, assignments,
raters without their token hashes) followed by one record per response.

Import: CSV or JSONL rows in that shape, validated one by one (known study, rater, unit or pair,
value on the study's frozen scale, the item once assigned to that rater); bad rows are reported
with their line and reason and skipped. Idempotent: a row keeps its `client_token` (or gets one
hashed from its content), so importing the same file twice adds nothing. A JSONL export imported
into a project without the study first recreates the study from its design record (raters get no
link until an admin issues one), so export → import reproduces the study.

A design record is trusted only as far as it checks out (`_restore_plan`): a record that does not is
refused with the file, its line and the problem (`DesignRecordError`), before anything of the file is
written. Its blinding terms are merged into the project's own, never put in their place; its guidelines
must parse to the scale they claim (and are only ever shown through `guidelines.safe_markdown`); its
raters must have valid names and its assignments name only its raters and its units or pairs. An
imported history is held to `limits.ANSWER_VERSIONS_MAX` versions per answer, as the rate page is.

CSV cells are neutralised against spreadsheet formula injection (`gcpc_core.csv_safe`) and the
import reverses it, so a comment such as ``=HYPERLINK(…)`` is text in a spreadsheet and comes back
exactly; JSONL is written as stored. Free text is held to `limits.FREE_TEXT_MAX_CHARS` both ways:
an export refuses an answer over it (naming the annotation), an import rejects the row (naming
its line), and any field up to it is read, although that is beyond Python's default CSV field limit.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime

from gcpc_core.csv_safe import csv_value, write_csv_rows
from gcpc_core.store import Store, StudyAssignmentRow, StudyPairRow, StudyRaterRow, StudyRow, StudyUnitRow, utcnow

from .blinding import BlindingTerms
from .design import DesignParams, StudyDesign, check_rater_name
from .guidelines import GUIDELINES_MAX_CHARS, Guidelines, parse_guidelines
from .limits import ANSWER_VERSIONS_MAX, FREE_TEXT_MAX_CHARS, free_text
from .study import StudyInfo, load_study, preference_value, project_terms, rating_value
from .targets import add_annotation

__all__ = ["RESPONSE_COLUMNS", "DesignRecordError", "ImportReport", "export_csv", "export_jsonl", "import_responses",
           "response_rows"]

RESPONSE_COLUMNS = (
    "study_id", "annotation_id", "kind", "unit_id", "pair_id", "task", "trajectory_id", "left_id", "right_id",
    "stratum", "left_stratum", "right_stratum", "rater", "rating", "choice", "confidence", "note", "created_at",
    "supersedes", "is_current", "client_token", "source", "is_simulated",
)
STUDY_KINDS = ("progress_rating", "preference")
EXPORTED_ASSIGNMENT = frozenset({"rater", "kind", "target", "position", "active", "assigned_at", "reassigned_from"})
"""Columns of an assignment in the design record: the queues as they stand, without row ids."""


def response_rows(store: Store, study_id: str, *, history: bool = True) -> Iterator[dict]:
    """One flat row per stored answer version (only current ones with `history=False`), oldest first."""
    study = load_study(store, study_id)
    current = {r.id for r in store.annotations.list(study_id=study_id)}
    for r in store.annotations.list(study_id=study_id, current=not history):
        try:
            free_text(r.note)
        except ValueError as exc:
            raise ValueError(f"annotation {r.id} of rater {r.rater}: {exc}; shorten it before exporting") from None
        row = dict.fromkeys(RESPONSE_COLUMNS)
        row.update(study_id=study_id, annotation_id=r.id, kind=r.kind, task=r.task, rater=r.rater,
                   confidence=r.confidence, note=r.note, created_at=r.created_at, supersedes=r.supersedes,
                   is_current=r.id in current, client_token=r.client_token, source=r.source,
                   is_simulated=r.is_simulated)
        if r.kind == "progress_rating":
            unit = study.units[r.unit_id]
            row.update(unit_id=r.unit_id, trajectory_id=unit.trajectory_id, stratum=unit.stratum,
                       rating=r.value["rating"])
        else:
            pair = study.pairs[r.pair_id]
            left, right = study.units[pair.left_unit], study.units[pair.right_unit]
            row.update(pair_id=r.pair_id, left_id=left.trajectory_id, right_id=right.trajectory_id,
                       left_stratum=left.stratum, right_stratum=right.stratum, choice=r.value["choice"])
        yield row


def _design_record(store: Store, study: StudyInfo) -> dict:
    row = store.studies.get(study.id)
    assert row is not None
    return {
        "record": "study", "study_id": study.id, "name": study.name, "status": study.status,
        "created_at": study.created_at, "seed": row.seed, "design_sha": row.design_sha,
        "is_simulated": study.is_simulated, "params": row.params, "design": row.design,
        "raters": [{"rater": r.rater, "is_simulated": r.is_simulated} for r in store.studies.raters(study.id)],
        # `active` as stored (0/1), as exports have always written it
        "assignments": [{**a.model_dump(include=EXPORTED_ASSIGNMENT), "active": int(a.active)}
                        for a in store.studies.assignments(study.id, active=None)],
    }


def export_jsonl(store: Store, study_id: str, *, history: bool = True) -> str:
    """The design record, then one `response` record per answer version."""
    study = load_study(store, study_id)
    lines = [json.dumps(_design_record(store, study), ensure_ascii=False, sort_keys=True)]
    lines += [json.dumps({"record": "response", **r}, ensure_ascii=False, sort_keys=True)
              for r in response_rows(store, study_id, history=history)]
    return "\n".join(lines) + "\n"


def export_csv(store: Store, study_id: str, *, history: bool = True) -> str:
    """Responses with their design columns, one row per answer version."""
    out = io.StringIO()
    write_csv_rows(out, response_rows(store, study_id, history=history), RESPONSE_COLUMNS)
    return out.getvalue()


@dataclass
class ImportReport:
    added: int = 0
    duplicates: int = 0
    rejected: list[tuple[int, str]] = field(default_factory=list)
    """(line number, reason) of every row not imported."""
    created_studies: list[str] = field(default_factory=list)
    source: str | None = None
    """The file the responses came from, named in every rejection."""

    @property
    def ok(self) -> bool:
        return not self.rejected

    def lines(self) -> list[str]:
        out = [f"created study {s} from its design record" for s in self.created_studies]
        out.append(f"responses: {self.added} added, {self.duplicates} already present, {len(self.rejected)} rejected")
        where = f"{self.source}: " if self.source else ""
        out += [f"  {where}line {n}: {reason}" for n, reason in self.rejected]
        return out


class DesignRecordError(ValueError):
    """A design record `study import` refuses: the whole file is refused and nothing is written."""


def _assignments(rows: object, raters: set[str], units: set[str], pairs: set[str]) -> list[dict]:
    """The record's assignment rows, each only to a rater of the study and a unit or pair of the design."""
    if not isinstance(rows, list):
        raise ValueError("assignments must be a list")
    out, seen = [], set()
    for i, a in enumerate(rows, 1):
        if not isinstance(a, dict) or set(a) - EXPORTED_ASSIGNMENT or not {"rater", "kind", "target"} <= set(a):
            raise ValueError(f"assignment {i} must have rater, kind and target (and only {sorted(EXPORTED_ASSIGNMENT)})")
        where = f"assignment {i} ({a['kind']} {a['target']!r} to {a['rater']!r})"
        if a["rater"] not in raters:
            raise ValueError(f"{where}: {a['rater']!r} is not a rater of the study")
        targets = {"progress_rating": units, "preference": pairs}.get(a["kind"])
        if targets is None:
            raise ValueError(f"{where}: kind must be one of {STUDY_KINDS}")
        if a["target"] not in targets:
            raise ValueError(f"{where}: no such {'unit' if a['kind'] == 'progress_rating' else 'pair'} in the design")
        if a.get("reassigned_from") not in (None, *raters):
            raise ValueError(f"{where}: reassigned from {a['reassigned_from']!r}, who is not a rater of the study")
        position = a.get("position")
        if isinstance(position, bool) or not isinstance(position, int) or position < 0:
            raise ValueError(f"{where}: position must be a whole number from 0, not {position!r}")
        if (a["rater"], a["kind"], a["target"]) in seen:
            raise ValueError(f"{where}: assigned twice")
        seen.add((a["rater"], a["kind"], a["target"]))
        if not isinstance(a.get("assigned_at", ""), str):
            raise ValueError(f"{where}: assigned_at must be a time")
        out.append(dict(a))
    return out


def _restore_plan(store: Store, record: dict) -> dict:
    """The `store.studies.insert` arguments (rows) that recreate a study from an export's design record, or
    ValueError naming what in the record cannot be trusted. Everything the record brings is checked
    against itself and this project: the design against its sha, the units against this project's
    trajectories, pairs and assignments against the units and raters, rater names (`check_rater_name`),
    the guidelines against their own text (re-parsed: the scale a rater answers on is the one the text
    shows), and the blinding terms are the project's own merged with the record's, never the record's alone."""
    if not isinstance(record.get("design"), dict):
        raise ValueError("design must be an object with design, guidelines and blinding")
    design = StudyDesign.model_validate(record["design"].get("design"))
    if design.sha != record.get("design_sha"):
        raise ValueError("design record does not match its design_sha")
    if DesignParams.model_validate(record.get("params")) != design.params or record.get("seed") != design.params.seed:
        raise ValueError("params or seed differ from the design's own")
    if record.get("status", "open") not in ("open", "closed"):
        raise ValueError(f"status must be open or closed, not {record.get('status')!r}")
    if not isinstance(record.get("name"), (str, type(None))):
        raise ValueError("name must be text")
    if record.get("created_at") is not None:
        datetime.fromisoformat(str(record["created_at"]))  # ValueError on a malformed time
    units = {u.unit_id: u for u in design.units}
    pairs = {p.pair_id: p for p in design.pairs}
    if len(units) != len(design.units) or len(pairs) != len(design.pairs) or set(units) & set(pairs):
        raise ValueError("unit and pair codes must be distinct")
    found = {u.trajectory_id: store.trials.get_trajectory(u.trajectory_id) for u in design.units}
    missing = [tid for tid, t in found.items() if t is None]
    if missing:
        raise ValueError(f"{len(missing)} trajectories of the study are not in this project, e.g. {missing[0]}")
    for u in design.units:
        task = found[u.trajectory_id].task  # type: ignore[union-attr]
        if u.task != task:
            raise ValueError(f"unit {u.unit_id}: trajectory {u.trajectory_id} is of task {task}, not {u.task}")
    for p in design.pairs:
        if p.left_unit not in units or p.right_unit not in units or p.left_unit == p.right_unit:
            raise ValueError(f"pair {p.pair_id} must compare two distinct units of the design")
        if {units[p.left_unit].task, units[p.right_unit].task} != {p.task}:
            raise ValueError(f"pair {p.pair_id} compares units of another task than its own ({p.task})")
    if not isinstance(record.get("raters"), list) or not all(isinstance(r, dict) for r in record["raters"]):
        raise ValueError("raters must be a list of objects")
    raters = [check_rater_name(r.get("rater")) for r in record["raters"]]
    if len(set(raters)) != len(raters):
        raise ValueError("rater names must be distinct")
    absent = [r for r in design.params.raters if r not in raters]
    if absent:
        raise ValueError(f"rater {absent[0]!r} of the design is not among the raters")
    assignments = _assignments(record["assignments"] if record.get("assignments") is not None
                               else [a.model_dump() for a in design.assignments], set(raters), set(units), set(pairs))
    guidelines = Guidelines.model_validate(record["design"].get("guidelines"))
    if len(guidelines.text) > GUIDELINES_MAX_CHARS:
        raise ValueError(f"guidelines have {len(guidelines.text):,} characters, over the limit of "
                         f"{GUIDELINES_MAX_CHARS:,}")
    if parse_guidelines(guidelines.text) != guidelines:
        raise ValueError("guidelines do not match their own text (scale, confidence or sha)")
    terms = project_terms(store, design).merged(BlindingTerms.model_validate(record["design"].get("blinding") or {}))
    sid, now = record["study_id"], utcnow()
    return {
        "study": StudyRow(id=sid, name=record.get("name"), status=record.get("status", "open"),
                          created_at=record.get("created_at") or now, seed=design.params.seed,
                          params=design.params.model_dump(mode="json"),
                          # only what was checked is stored: the parsed design, guidelines and merged terms
                          design={"design": design.model_dump(mode="json"),
                                  "guidelines": guidelines.model_dump(mode="json"), "blinding": terms.model_dump(mode="json")},
                          design_sha=record["design_sha"], is_simulated=bool(record.get("is_simulated"))),
        "units": [StudyUnitRow(study_id=sid, **u.model_dump()) for u in design.units],
        "pairs": [StudyPairRow(study_id=sid, **p.model_dump()) for p in design.pairs],
        "raters": [StudyRaterRow(study_id=sid, rater=name, token_hash=None, is_simulated=bool(r.get("is_simulated")),
                                 created_at=now) for name, r in zip(raters, record["raters"])],
        "assignments": [StudyAssignmentRow(**{"study_id": sid, "assigned_at": now, **a}) for a in assignments],
    }


def _records(text: str) -> Iterator[tuple[int, dict]]:
    """(line number, record) from JSONL or CSV text (told apart by the first non-blank character)."""
    if text.lstrip().startswith("{"):
        for n, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    yield n, json.loads(line)
                except json.JSONDecodeError as exc:
                    yield n, {"record": "invalid", "error": f"not JSON: {exc.msg}"}
    else:
        # every field fits, however long (the text is in memory already); the free-text limit is checked
        # per field below. The limit is process-wide, so it is only ever raised, never lowered.
        csv.field_size_limit(max(csv.field_size_limit(), len(text) + 1))
        reader = csv.DictReader(io.StringIO(text))
        start = 2
        for row in reader:
            n, start = start, reader.line_num + 1  # a record's first line, though a quoted field may span several
            # + 1: the export may have prefixed a quote that neutralises a formula (`csv_safe`)
            long = [(k, len(v)) for k, v in row.items() if isinstance(v, str) and len(v) > FREE_TEXT_MAX_CHARS + 1]
            if long:
                name, size = long[0]
                yield n, {"record": "invalid", "error": f"field {name!r} has {size:,} characters, over the free-text "
                                                        f"limit of {FREE_TEXT_MAX_CHARS:,}"}
                continue
            yield n, {k: csv_value(v) for k, v in row.items() if isinstance(k, str) and v not in ("", None)}


def _int(value: object, name: str) -> int | None:
    if value in (None, ""):
        return None
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ValueError(f"{name} is not a number: {value!r}") from None
    if number != int(number):
        raise ValueError(f"{name} is not a whole number: {value!r}")
    return int(number)


def _bool(value: object) -> bool:
    return str(value).strip().lower() in ("1", "true", "yes")


def _validate(row: dict, study: StudyInfo, raters: set[str], assigned: set[tuple[str, str, str]],
              allow_unassigned: bool) -> dict:
    """The `add_annotation` arguments of one response row, or ValueError saying what is wrong."""
    kind = row.get("kind")
    if kind not in STUDY_KINDS:
        raise ValueError(f"kind must be one of {STUDY_KINDS}, not {kind!r}")
    rater = (row.get("rater") or "").strip()
    if rater not in raters:
        raise ValueError(f"rater {rater!r} is not a rater of study {study.id}")
    if kind == "progress_rating":
        unit_id = row.get("unit_id") or study.unit_of_trajectory.get(row.get("trajectory_id", ""))
        if unit_id not in study.units:
            raise ValueError(f"no unit {row.get('unit_id') or row.get('trajectory_id')!r} in study {study.id}")
        traj = study.units[unit_id].trajectory_id
        if row.get("trajectory_id") not in (None, traj):
            raise ValueError(f"unit {unit_id} is trajectory {traj}, not {row['trajectory_id']}")
        target, keys = unit_id, {"unit_id": unit_id, "trajectory_id": traj}
        value = rating_value(_int(row.get("rating", (row.get("value") or {}).get("rating")), "rating"),
                             study.guidelines)
        confidence = _int(row.get("confidence"), "confidence")
    else:
        pair_id = row.get("pair_id")
        if pair_id not in study.pairs:
            raise ValueError(f"no pair {pair_id!r} in study {study.id}")
        sides = study.pair_sides(pair_id)
        if (row.get("left_id"), row.get("right_id")) not in ((None, None), sides):
            raise ValueError(f"pair {pair_id} is {sides[0]} vs {sides[1]}, not as given")
        target, keys = pair_id, {"pair_id": pair_id}
        confidence = _int(row.get("confidence"), "confidence")
        value = preference_value(row.get("choice", (row.get("value") or {}).get("choice")), confidence, study.guidelines)
    if not allow_unassigned and (rater, kind, target) not in assigned:
        raise ValueError(f"{kind} {target} was never assigned to {rater}")
    created_at = row.get("created_at")
    if created_at:
        datetime.fromisoformat(str(created_at))  # ValueError on a malformed time
    note = free_text(row.get("note"))
    content = [study.id, kind, target, rater, value, confidence, note, created_at]
    token = row.get("client_token") or "import:" + hashlib.sha256(
        json.dumps(content, sort_keys=True, default=str).encode()).hexdigest()[:32]
    return {"kind": kind, "rater": rater, "value": value, "study_id": study.id, "task": study.task_of(kind, target),
            "note": note, "confidence": confidence, "client_token": token, "source": row.get("source") or "import",
            "is_simulated": _bool(row.get("is_simulated")), "created_at": created_at,
            "max_versions": ANSWER_VERSIONS_MAX, **keys}


def import_responses(
    store: Store, text: str, *, study_id: str | None = None, allow_unassigned: bool = False,
    source: str | None = None,
) -> ImportReport:
    """Validate and add responses from CSV or JSONL text (read from file `source`); see the module docstring."""
    report = ImportReport(source=source)
    valid: list[tuple[str, int, int, dict]] = []
    studies: dict[str, tuple[StudyInfo, set[str], set[tuple[str, str, str]]]] = {}
    plans: dict[str, dict] = {}

    def context(sid: str) -> tuple[StudyInfo, set[str], set[tuple[str, str, str]]]:
        if sid not in studies:
            studies[sid] = (load_study(store, sid), {r.rater for r in store.studies.raters(sid)},
                            {(a.rater, a.kind, a.target) for a in store.studies.assignments(sid, active=None)})
        return studies[sid]

    records = list(_records(text))
    for n, record in records:  # every design record first: a refused one refuses the file before any write
        if record.get("record") != "study":
            continue
        sid = record.get("study_id")
        try:
            if not isinstance(sid, str) or not sid.strip():
                raise ValueError("study_id must be a non-empty string")
            existing = store.studies.get(sid)
            if existing is not None and existing.design_sha != record.get("design_sha"):
                raise ValueError("this project holds that study with a different design")
            if existing is None and sid not in plans:
                plans[sid] = _restore_plan(store, record)
        except (ValueError, KeyError, TypeError) as exc:
            raise DesignRecordError(f"{source or 'input'}: line {n}: design record of study {sid!r} refused: {exc}; "
                                    "nothing was imported") from None
    for sid, plan in plans.items():  # one transaction each: a study is stored whole or not at all
        try:
            store.studies.insert(plan["study"], units=plan["units"], pairs=plan["pairs"], raters=plan["raters"],
                                 assignments=plan["assignments"])
        except ValueError as exc:
            raise DesignRecordError(f"{source or 'input'}: design record of study {sid!r} refused: {exc}; "
                                    f"studies imported before it: {report.created_studies or 'none'}") from None
        report.created_studies.append(sid)
    for n, record in records:
        kind = record.get("record", "response")
        try:
            if kind == "invalid":
                raise ValueError(record["error"])
            if kind == "study":
                continue
            if kind != "response":
                raise ValueError(f"unknown record type {kind!r}")
            sid = record.get("study_id") or study_id
            if not sid:
                raise ValueError("no study_id in the row and none given")
            if study_id and sid != study_id:
                raise ValueError(f"row belongs to study {sid}, not {study_id}")
            try:
                study, raters, assigned = context(sid)
            except KeyError:
                raise ValueError(f"no study {sid!r} in this project") from None
            args = _validate(record, study, raters, assigned, allow_unassigned)
            valid.append((args["created_at"] or "", _int(record.get("annotation_id"), "annotation_id") or 0, n, args))
        except (ValueError, KeyError, TypeError) as exc:
            report.rejected.append((n, str(exc)))
    for _, _, n, args in sorted(valid, key=lambda v: v[:3]):  # replay in time order: edits chain as they did
        try:
            _, created = add_annotation(store, **args)
        except ValueError as exc:
            report.rejected.append((n, str(exc)))
            continue
        report.added += created
        report.duplicates += not created
    report.rejected.sort()
    return report
