"""Study design: which trajectories are rated, which pairs compared, and who answers what, in which order.

Pure functions of (candidate trajectories, parameters, seed): the same inputs always give the same
design, so a frozen design can be reproduced and audited. Every random choice draws from its own
`random.Random` seeded with a string naming its purpose (`"{seed}:units:{task}"`, …), so changing one
part (say, the number of pairs) never reshuffles another (the sampled units).

- **Units** are sampled per task, stratified by official outcome × skill condition; when a stratum
  has too few trajectories the shortfall is filled from the other strata and said plainly in `notes`.
- **Pairs** are within-task: all pairs, or `pairs_per_task` chosen greedily so that every unit
  appears about equally often (degrees differ by at most one where a task allows it); left/right is
  a fair coin per pair.
- **Assignments**: every unit and every pair goes to `raters_per_unit` distinct raters, always the
  least-loaded ones (ties broken at random), so loads differ by at most one per kind. Each rater's
  queue is their progress ratings in a random order, then their pairs in a random order: absolute
  ratings come first so that comparing trajectories cannot anchor them.
- Unit and pair codes are random (`U-7KQ3`, `P-M2XD`): raters see them, so they must not encode a
  trajectory id, a task, a stratum or even the sampling order.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import random
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

__all__ = [
    "KIND_ORDER",
    "Candidate",
    "DesignAssignment",
    "DesignError",
    "DesignPair",
    "DesignParams",
    "DesignUnit",
    "StudyDesign",
    "assign_balanced",
    "check_rater_name",
    "build_pairs",
    "make_design",
    "sample_units",
]

OUTCOMES = ("PASS", "FAIL")
KIND_ORDER = ("progress_rating", "preference")
"""Queue order of the two kinds of question."""
_CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # no 0/O, 1/I: codes are read aloud and typed


class DesignError(ValueError):
    """The requested design cannot be built (no candidates, too few raters, …)."""


RATER_NAME = re.compile(r"\w(?:[\w .'-]{0,62}[\w.])?")
"""A rater name: 1–64 letters, digits and `_`, with spaces, `.`, `'` and `-` inside. Names are shown on
admin pages and in messages, so nothing in one may read as markup, a link (no `@`: an address is linked
even when escaped) or a control character."""


def check_rater_name(name: object) -> str:
    """`name` stripped, or ValueError saying why it cannot be a rater name (see `RATER_NAME`)."""
    if not isinstance(name, str) or not RATER_NAME.fullmatch(name.strip()):
        raise ValueError(f"rater name {name!r} is not allowed: use 1 to 64 letters, digits and _ (with spaces, "
                         "'.', \"'\" or '-' inside)")
    return name.strip()


class Candidate(BaseModel):
    """What the sampler may know of a trajectory: never shown to raters."""

    model_config = ConfigDict(frozen=True)

    trajectory_id: str
    task: str
    outcome: str
    condition: str

    @property
    def stratum(self) -> str:
        return f"{self.outcome}/{self.condition}"


class DesignParams(BaseModel):
    """Everything that, with the project's trajectories, determines a design."""

    model_config = ConfigDict(frozen=True)

    tasks: int | None = Field(12, ge=1)
    """How many tasks to sample; None takes every eligible task."""
    per_task: int = Field(8, ge=1)
    """Trajectories rated per task."""
    raters_per_unit: int = Field(3, ge=1)
    """k: raters answering each unit and each pair."""
    seed: int = 0
    raters: tuple[str, ...]
    """Rater names; each gets an invitation link."""
    pairs_per_task: int | None = Field(None, ge=0)
    """Pairs compared per task; None means every within-task pair, 0 none."""
    task_ids: tuple[str, ...] | None = None
    """Restrict sampling to these tasks."""

    @field_validator("raters")
    @classmethod
    def _distinct_raters(cls, raters: tuple[str, ...]) -> tuple[str, ...]:
        names = tuple(r.strip() for r in raters)
        if any(not n for n in names) or len(set(names)) != len(names):
            raise ValueError("rater names must be distinct and non-empty")
        return names

    @model_validator(mode="after")
    def _enough_raters(self) -> DesignParams:
        if self.raters_per_unit > len(self.raters):
            raise ValueError(f"{self.raters_per_unit} raters per unit need at least that many raters, "
                             f"got {len(self.raters)}")
        return self


class DesignUnit(BaseModel):
    model_config = ConfigDict(frozen=True)

    unit_id: str
    trajectory_id: str
    task: str
    stratum: str


class DesignPair(BaseModel):
    model_config = ConfigDict(frozen=True)

    pair_id: str
    task: str
    left_unit: str
    right_unit: str


class DesignAssignment(BaseModel):
    model_config = ConfigDict(frozen=True)

    rater: str
    kind: str
    target: str
    """A unit id for a progress rating, a pair id for a preference."""
    position: int
    """0-based place in the rater's queue of this kind."""


class StudyDesign(BaseModel):
    """A complete, frozen design; `sha` identifies it."""

    model_config = ConfigDict(frozen=True)

    params: DesignParams
    units: tuple[DesignUnit, ...]
    pairs: tuple[DesignPair, ...]
    assignments: tuple[DesignAssignment, ...]
    notes: tuple[str, ...] = ()
    """Plain statements of where the design falls short of the request."""

    @property
    def sha(self) -> str:
        canonical = json.dumps(self.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()

    @property
    def tasks(self) -> list[str]:
        return sorted({u.task for u in self.units})

    def summary_lines(self) -> list[str]:
        """A human summary: sizes, per-task strata, loads and every shortfall."""
        p = self.params
        load = Counter((a.rater, a.kind) for a in self.assignments)
        lines = [
            f"design {self.sha[:12]}: seed {p.seed}, {len(self.tasks)} tasks, {len(self.units)} units, "
            f"{len(self.pairs)} pairs, {len(p.raters)} raters, {p.raters_per_unit} raters per unit and per pair",
        ]
        by_task: dict[str, Counter[str]] = defaultdict(Counter)
        for u in self.units:
            by_task[u.task][u.stratum] += 1
        pairs_by_task = Counter(pair.task for pair in self.pairs)
        for task in self.tasks:
            strata = ", ".join(f"{s} {n}" for s, n in sorted(by_task[task].items()))
            lines.append(f"  {task}: {sum(by_task[task].values())} units ({strata}); {pairs_by_task[task]} pairs")
        for rater in p.raters:
            lines.append(f"  rater {rater}: {load[(rater, 'progress_rating')]} ratings, "
                         f"{load[(rater, 'preference')]} pairs")
        lines += [f"NOTE: {n}" for n in self.notes]
        return lines


def _rng(seed: int, *purpose: object) -> random.Random:
    """An independent, reproducible stream per purpose (str seeds hash with sha512, not `hash()`)."""
    return random.Random(":".join(map(str, (seed, *purpose))))


def _strata(candidates: Sequence[Candidate]) -> list[str]:
    conditions = sorted({c.condition for c in candidates})
    return [f"{o}/{c}" for o in OUTCOMES for c in conditions]


def _quotas(strata: Sequence[str], per_task: int, rng: random.Random) -> dict[str, int]:
    """Equal share per stratum; the remainder goes to strata drawn at random."""
    base, extra = divmod(per_task, len(strata))
    lucky = set(rng.sample(list(strata), extra))
    return {s: base + (s in lucky) for s in strata}


def sample_units(
    candidates: Iterable[Candidate], *, tasks: int | None, per_task: int, seed: int,
    task_ids: Sequence[str] | None = None,
) -> tuple[dict[str, list[Candidate]], list[str]]:
    """Per-task stratified samples (task → chosen candidates) and notes on every shortfall.

    Tasks that can fill every stratum are preferred, then tasks with at least `per_task`
    trajectories, then the rest; order within each group is random.
    """
    pool = sorted(candidates, key=lambda c: c.trajectory_id)
    if task_ids is not None:
        unknown = sorted(set(task_ids) - {c.task for c in pool})
        if unknown:
            raise DesignError(f"no trajectories for task(s): {', '.join(unknown)}")
        pool = [c for c in pool if c.task in set(task_ids)]
    if not pool:
        raise DesignError("no trajectories to sample from")
    strata = _strata(pool)
    by_task: dict[str, dict[str, list[Candidate]]] = defaultdict(lambda: {s: [] for s in strata})
    for c in pool:
        by_task[c.task][c.stratum].append(c)
    quotas = {t: _quotas(strata, per_task, _rng(seed, "quota", t)) for t in sorted(by_task)}

    def rank(task: str) -> tuple[int, int, float]:
        fills = all(len(by_task[task][s]) >= q for s, q in quotas[task].items())
        big = sum(map(len, by_task[task].values())) >= per_task
        return (not fills, not big, _rng(seed, "task-order", task).random())

    ordered = sorted(by_task, key=rank)
    notes: list[str] = []
    wanted = len(ordered) if tasks is None else tasks
    if wanted > len(ordered):
        notes.append(f"{wanted} tasks requested but only {len(ordered)} have trajectories: all {len(ordered)} taken")
    chosen: dict[str, list[Candidate]] = {}
    for task in sorted(ordered[:wanted]):
        rng = _rng(seed, "units", task)
        taken: list[Candidate] = []
        short: list[str] = []
        for stratum, quota in quotas[task].items():
            members = list(by_task[task][stratum])
            rng.shuffle(members)
            taken += members[:quota]
            if len(members) < quota:
                short.append(f"{stratum} has {len(members)} of {quota} wanted")
        rest = [c for s in strata for c in by_task[task][s] if c not in taken]
        rng.shuffle(rest)
        need = per_task - len(taken)
        filled = 0
        while need > 0 and rest:  # fill from the stratum least represented so far
            have = Counter(c.stratum for c in taken)
            pick = min(rest, key=lambda c: have[c.stratum])
            rest.remove(pick)
            taken.append(pick)
            need -= 1
            filled += 1
        if short:
            msg = f"task {task} cannot fill its strata: {'; '.join(short)}"
            msg += f"; {filled} filled from other strata" if filled else ""
            notes.append(msg)
        if need > 0:
            notes.append(f"task {task} has only {len(taken)} trajectories, fewer than {per_task} per task: all taken")
        chosen[task] = sorted(taken, key=lambda c: c.trajectory_id)
    return chosen, notes


def _near_regular_pairs(units: Sequence[str], n_pairs: int, rng: random.Random) -> list[tuple[str, str]]:
    """`n_pairs` distinct pairs whose unit degrees differ by at most one (random among such graphs).

    Degrees are fixed first (the extra ones go to random units), then Havel–Hakimi builds the graph:
    the unit with most remaining degree links to the next-most ones, ties broken at random. A
    near-regular degree sequence with maximum below the unit count is always graphical.
    """
    base, extra = divmod(2 * n_pairs, len(units))
    lucky = set(rng.sample(list(units), extra))
    remaining = {u: base + (u in lucky) for u in units}
    pairs: list[tuple[str, str]] = []
    while any(remaining.values()):
        ties = {u: rng.random() for u in units}
        order = sorted((u for u in units if remaining[u]), key=lambda u: (-remaining[u], ties[u]))
        head, need = order[0], remaining[order[0]]
        if need > len(order) - 1:
            raise DesignError("internal: degree sequence not graphical")  # cannot happen for near-regular
        for other in order[1 : need + 1]:
            remaining[other] -= 1
            pairs.append(tuple(sorted((head, other))))  # type: ignore[arg-type]
        remaining[head] = 0
    return sorted(pairs)


def build_pairs(
    units_by_task: dict[str, list[str]], *, pairs_per_task: int | None, seed: int
) -> tuple[list[tuple[str, str, str]], list[str]]:
    """Within-task (task, left, right) pairs and notes; balanced so every unit appears about equally often."""
    pairs: list[tuple[str, str, str]] = []
    notes: list[str] = []
    for task in sorted(units_by_task):
        units = sorted(units_by_task[task])
        every = list(itertools.combinations(units, 2))
        rng = _rng(seed, "pairs", task)
        if pairs_per_task == 0:
            continue
        if not every:
            notes.append(f"task {task} has fewer than two units: no pairs")
            continue
        if pairs_per_task is None or pairs_per_task >= len(every):
            if pairs_per_task is not None and pairs_per_task > len(every):
                notes.append(f"task {task} allows only {len(every)} pairs ({pairs_per_task} requested): all taken")
            chosen = every
        else:
            chosen = _near_regular_pairs(units, pairs_per_task, rng)
        for a, b in chosen:
            pairs.append((task, *((a, b) if rng.random() < 0.5 else (b, a))))
    return pairs, notes


def assign_balanced(targets: Sequence[str], raters: Sequence[str], k: int, rng: random.Random) -> dict[str, list[str]]:
    """target → k distinct raters, each time the least-loaded ones (random tie-break)."""
    if k > len(raters):
        raise DesignError(f"{k} raters per unit need at least {k} raters")
    load = dict.fromkeys(raters, 0)
    order = list(targets)
    rng.shuffle(order)
    out: dict[str, list[str]] = {}
    for target in order:
        ties = {r: rng.random() for r in raters}
        chosen = sorted(raters, key=lambda r: (load[r], ties[r]))[:k]
        for r in chosen:
            load[r] += 1
        out[target] = sorted(chosen)
    return out


def _codes(rng: random.Random, prefix: str, n: int, taken: set[str]) -> list[str]:
    width = 4
    codes: list[str] = []
    while len(codes) < n:
        if len(taken) > len(_CODE_ALPHABET) ** width // 4:
            width += 1
        code = f"{prefix}-{''.join(rng.choice(_CODE_ALPHABET) for _ in range(width))}"
        if code not in taken:
            taken.add(code)
            codes.append(code)
    return codes


def make_design(candidates: Iterable[Candidate], params: DesignParams) -> StudyDesign:
    """Sample units, build pairs, assign both to raters and order every rater's queue."""
    seed = params.seed
    chosen, notes = sample_units(candidates, tasks=params.tasks, per_task=params.per_task, seed=seed,
                                 task_ids=params.task_ids)
    flat = [c for task in sorted(chosen) for c in chosen[task]]
    taken: set[str] = set()
    unit_codes = _codes(_rng(seed, "unit-codes"), "U", len(flat), taken)
    _rng(seed, "unit-code-order").shuffle(unit_codes)
    units = tuple(
        DesignUnit(unit_id=code, trajectory_id=c.trajectory_id, task=c.task, stratum=c.stratum)
        for code, c in zip(unit_codes, flat)
    )
    by_task: dict[str, list[str]] = defaultdict(list)
    for u in units:
        by_task[u.task].append(u.unit_id)
    raw_pairs, pair_notes = build_pairs(by_task, pairs_per_task=params.pairs_per_task, seed=seed)
    pair_codes = _codes(_rng(seed, "pair-codes"), "P", len(raw_pairs), taken)
    pairs = tuple(DesignPair(pair_id=code, task=t, left_unit=a, right_unit=b)
                  for code, (t, a, b) in zip(pair_codes, raw_pairs))
    queues: dict[tuple[str, str], list[str]] = defaultdict(list)
    for kind, targets in (("progress_rating", [u.unit_id for u in units]), ("preference", [p.pair_id for p in pairs])):
        for target, raters in assign_balanced(sorted(targets), params.raters, params.raters_per_unit,
                                              _rng(seed, "assign", kind)).items():
            for r in raters:
                queues[(r, kind)].append(target)
    assignments = []
    for rater in params.raters:
        for kind in KIND_ORDER:
            queue = sorted(queues[(rater, kind)])
            _rng(seed, "order", rater, kind).shuffle(queue)
            assignments += [DesignAssignment(rater=rater, kind=kind, target=t, position=i) for i, t in enumerate(queue)]
    return StudyDesign(params=params, units=units, pairs=pairs, assignments=tuple(assignments),
                       notes=tuple(notes + pair_notes))
