"""Study administration: progress, live inter-rater α, disagreements to adjudicate, reassignment, links.

Everything here reads current answers (the latest version of each rater's answer) and the live
assignment table; the frozen design stays as created. Results are plain rows for the admin page,
the CLI and tests alike.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from gcpc_core.analysis.agreement import alpha_table, usable_preferences, usable_ratings
from gcpc_core.store import AnnotationRow, Store

from .design import check_rater_name
from .frames import preferences_frame, ratings_frame
from .study import CHOICES, load_study, mint_token

__all__ = [
    "AlphaResult",
    "ReassignReport",
    "add_rater",
    "agreement",
    "answers_by_target",
    "disagreements",
    "format_alpha",
    "issue_link",
    "rater_progress",
    "reassign",
    "status_lines",
    "unit_progress",
]

KIND_LABEL = {"progress_rating": "rating", "preference": "pair"}


def _code(row: AnnotationRow) -> str:
    return row.unit_id if row.kind == "progress_rating" else row.pair_id


def _answer(row: AnnotationRow) -> int | str:
    return row.value.get("rating") if row.kind == "progress_rating" else row.value.get("choice")


def answers_by_target(store: Store, study_id: str, kind: str) -> dict[str, dict[str, int | str]]:
    """target code → {rater: current answer} for one kind of question."""
    out: dict[str, dict[str, int | str]] = defaultdict(dict)
    for row in store.annotations.list(study_id=study_id, kind=kind):
        out[_code(row)][row.rater] = _answer(row)
    return dict(out)


def rater_progress(store: Store, study_id: str) -> list[dict]:
    """Per rater: assigned and answered ratings and pairs, share done, last answer time."""
    raters = store.studies.raters(study_id)
    assigned: dict[tuple[str, str], set[str]] = defaultdict(set)
    for a in store.studies.assignments(study_id):
        assigned[(a.rater, a.kind)].add(a.target)
    answered: dict[tuple[str, str], set[str]] = defaultdict(set)
    last: dict[str, str] = {}
    for row in store.annotations.list(study_id=study_id):
        answered[(row.rater, row.kind)].add(_code(row))
        last[row.rater] = max(last.get(row.rater, ""), row.created_at)
    rows = []
    for r in raters:
        name = r.rater
        entry: dict = {"rater": name, "simulated": r.is_simulated, "has_link": r.has_token}
        done = total = 0
        for kind, label in KIND_LABEL.items():
            todo = assigned[(name, kind)]
            got = len(todo & answered[(name, kind)])
            entry[f"{label}s_done"], entry[f"{label}s_assigned"] = got, len(todo)
            done, total = done + got, total + len(todo)
        entry.update(done=done, total=total, share=round(done / total, 3) if total else 1.0,
                     last_answer_at=last.get(name))
        rows.append(entry)
    return rows


def unit_progress(store: Store, study_id: str) -> list[dict]:
    """Per unit and per pair: task, trajectories, raters assigned, answers in."""
    study = load_study(store, study_id)
    holders: dict[tuple[str, str], list[str]] = defaultdict(list)
    for a in store.studies.assignments(study_id):
        holders[(a.kind, a.target)].append(a.rater)
    answers = {kind: answers_by_target(store, study_id, kind) for kind in KIND_LABEL}
    rows = []
    for kind, targets in (("progress_rating", study.units), ("preference", study.pairs)):
        for code in sorted(targets):
            trajectories = ([study.units[code].trajectory_id] if kind == "progress_rating"
                            else list(study.pair_sides(code)))
            got = answers[kind].get(code, {})
            assigned = sorted(holders[(kind, code)])
            rows.append({
                "kind": kind, "target": code, "task": targets[code].task, "trajectories": " vs ".join(trajectories),
                "assigned": ", ".join(assigned), "answers": len(got),
                "complete": bool(assigned) and all(r in got for r in assigned),
            })
    return rows


@dataclass(frozen=True)
class AlphaResult:
    """Krippendorff's α over current answers of one kind (a humans row of `analysis.alpha_table`)."""

    kind: str
    level: str
    alpha: float
    units: int
    """Units with two or more answers (the only ones α uses)."""
    raters: int
    answers: int
    note: str = ""


def format_alpha(alpha: float) -> str:
    """α as `report.md` prints it (three decimals), "n/a" when undefined."""
    return "n/a" if math.isnan(alpha) else f"{alpha:.3f}"


def agreement(store: Store, study_id: str) -> list[AlphaResult]:
    """Live α among raters, computed by the analysis report's own `alpha_table` on the same frames the
    report reads: ordinal over progress ratings on the study's scale, nominal over preferences with each
    vote coded as the pair's first or second trajectory (ids in sorted order, whatever side was shown) or a
    tie. So `study status`, this page and `report` agree."""
    load_study(store, study_id)
    ratings, bad_ratings = usable_ratings(ratings_frame(store, study_id))
    preferences, bad_preferences = usable_preferences(preferences_frame(store, study_id))
    table = alpha_table(ratings, preferences)
    rows = {r["data"]: r for r in table.to_dict("records")}
    left_out = {"ratings": len(bad_ratings), "preferences": len(bad_preferences)}
    out = []
    for kind, data, level in (("progress_rating", "ratings", "ordinal"), ("preference", "preferences", "nominal")):
        row = rows.get(data)
        skipped = f"{left_out[data]} malformed answers left out" if left_out[data] else ""
        if row is None:
            out.append(AlphaResult(kind=kind, level=level, alpha=math.nan, units=0, raters=0, answers=0,
                                   note="; ".join(n for n in ("no answers yet", skipped) if n)))
        else:
            out.append(AlphaResult(kind=kind, level=level, alpha=float(row["alpha"]), units=int(row["n_units"]),
                                   raters=int(row["n_coders"]), answers=int(row["n_answers"]),
                                   note="; ".join(n for n in (row["note"], skipped) if n)))
    return out


def disagreements(store: Store, study_id: str, *, min_spread: int = 2) -> list[dict]:
    """Units and pairs to adjudicate, most divided first.

    A rating unit is listed when its ratings span at least `min_spread` scale points; a pair when
    some raters chose A and others B. `spread` orders the list (scale points for ratings, 1 minus
    the majority's share for pairs).
    """
    study = load_study(store, study_id)
    rows = []
    for code, got in answers_by_target(store, study_id, "progress_rating").items():
        values = [x for x in got.values() if isinstance(x, int) and not isinstance(x, bool)]  # malformed: not spread
        if len(values) >= 2 and max(values) - min(values) >= min_spread:
            rows.append({"kind": "progress_rating", "target": code, "task": study.units[code].task,
                         "trajectories": study.units[code].trajectory_id, "spread": float(max(values) - min(values)),
                         "answers": ", ".join(f"{r}: {x}" for r, x in sorted(got.items()))})
    for code, got in answers_by_target(store, study_id, "preference").items():
        choices = list(got.values())
        if "A" in choices and "B" in choices:
            majority = max(choices.count(c) for c in CHOICES) / len(choices)
            rows.append({"kind": "preference", "target": code, "task": study.pairs[code].task,
                         "trajectories": " vs ".join(study.pair_sides(code)), "spread": round(1 - majority, 3),
                         "answers": ", ".join(f"{r}: {x}" for r, x in sorted(got.items()))})
    return sorted(rows, key=lambda r: (r["kind"] != "progress_rating", -r["spread"], r["target"]))


@dataclass
class ReassignReport:
    moved: list[tuple[str, str]] = field(default_factory=list)
    skipped: list[tuple[str, str, str]] = field(default_factory=list)
    """(kind, target, reason) for each item not moved."""


def reassign(
    store: Store, study_id: str, from_rater: str, to_rater: str, *, targets: Iterable[tuple[str, str]] | None = None
) -> ReassignReport:
    """Move (kind, target) items from one rater's queue to another's; by default every unanswered one.

    Answers the first rater already gave are kept; an item the second rater already holds is skipped.
    """
    if from_rater == to_rater:
        raise ValueError("cannot reassign a rater's items to the same rater")
    known = {r.rater for r in store.studies.raters(study_id)}
    for r in (from_rater, to_rater):
        if r not in known:
            raise KeyError(f"no rater {r!r} in study {study_id!r}")
    held = {(a.kind, a.target) for a in store.studies.assignments(study_id, rater=from_rater)}
    theirs = {(a.kind, a.target) for a in store.studies.assignments(study_id, rater=to_rater)}
    answered = {(r.kind, _code(r)) for r in store.annotations.list(study_id=study_id, rater=from_rater)}
    wanted = sorted(held - answered) if targets is None else list(targets)
    report = ReassignReport()
    for kind, target in wanted:
        if (kind, target) not in held:
            report.skipped.append((kind, target, f"not in {from_rater}'s queue"))
        elif (kind, target) in theirs:
            report.skipped.append((kind, target, f"{to_rater} already has it"))
        else:
            move_assignment(store, study_id, kind=kind, target=target, from_rater=from_rater, to_rater=to_rater)
            report.moved.append((kind, target))
    return report


def move_assignment(store: Store, study_id: str, *, kind: str, target: str, from_rater: str, to_rater: str) -> None:
    """Move one assignment to another rater, at the end of their queue; answers already given stay.

    One transaction, so two admins moving the same item cannot both take it off the first queue.
    """
    with store.atomic():
        if not store.studies.has_rater(study_id, to_rater):
            raise KeyError(f"no rater {to_rater!r} in study {study_id!r}")
        if not store.studies.deactivate_assignment(study_id, rater=from_rater, kind=kind, target=target):
            raise KeyError(f"{from_rater!r} holds no active {kind} assignment {target!r}")
        held = store.studies.assignment(study_id, rater=to_rater, kind=kind, target=target)
        if held is not None and held.active:
            raise ValueError(f"{to_rater!r} already holds {kind} {target!r}")
        last = store.studies.last_position(study_id, rater=to_rater, kind=kind)
        store.studies.place_assignment(study_id, rater=to_rater, kind=kind, target=target,
                                       position=0 if last is None else last + 1, reassigned_from=from_rater)


def add_rater(store: Store, study_id: str, rater: str) -> str:
    """A new rater with an empty queue (fill it by reassignment); returns their secret token."""
    load_study(store, study_id)
    name = check_rater_name(rater)
    return mint_token(store, study_id, name,
                      lambda token_hash: store.studies.add_rater(study_id, name, token_hash=token_hash))


def issue_link(store: Store, study_id: str, rater: str) -> str:
    """A fresh token for a rater (their old link stops working); returns the secret."""
    return mint_token(store, study_id, rater,
                      lambda token_hash: store.studies.set_rater_token_hash(study_id, rater, token_hash))


def status_lines(store: Store, study_id: str) -> list[str]:
    """A plain-text status: design, per-rater progress, α and the disagreement count."""
    study = load_study(store, study_id)
    head = f"study {study.id} ({study.name}), {study.status}, created {study.created_at}"
    lines = [head + (" — SIMULATED raters" if study.is_simulated else "")]
    lines += study.design.summary_lines()
    for p in rater_progress(store, study_id):
        tag = " (simulated)" if p["simulated"] else ""
        lines.append(f"  {p['rater']}{tag}: {p['done']}/{p['total']} answered "
                     f"({p['ratings_done']}/{p['ratings_assigned']} ratings, {p['pairs_done']}/{p['pairs_assigned']} pairs)")
    for a in agreement(store, study_id):
        lines.append(f"  α {a.kind} ({a.level}): {format_alpha(a.alpha)} over {a.units} units with ≥2 answers, "
                     f"{a.raters} raters, {a.answers} answers" + (f" — {a.note}" if a.note else ""))
    lines.append(f"  {len(disagreements(store, study_id))} units or pairs with high disagreement")
    return lines
