"""Sampler properties: strata, balance of pairs and load, randomized order, determinism by seed."""

from __future__ import annotations

import random
from collections import Counter, defaultdict

import pytest

from annotations.design import (
    Candidate,
    DesignError,
    DesignParams,
    assign_balanced,
    build_pairs,
    make_design,
    sample_units,
)

STRATA = [(o, c) for o in ("PASS", "FAIL") for c in ("with-skills", "without-skills")]


def pool(counts: dict[str, dict[tuple[str, str], int]]) -> list[Candidate]:
    """Candidates per task and (outcome, condition) stratum."""
    return [Candidate(trajectory_id=f"{task}__{o}{c}{i}", task=task, outcome=o, condition=c)
            for task, strata in counts.items() for (o, c), n in strata.items() for i in range(n)]


def full(n: int) -> dict[tuple[str, str], int]:
    return dict.fromkeys(STRATA, n)


def params(**kw: object) -> DesignParams:
    base: dict = {"tasks": 3, "per_task": 8, "raters_per_unit": 3, "seed": 1, "raters": ("a", "b", "c", "d", "e")}
    return DesignParams(**{**base, **kw})


def test_stratified_sample_fills_every_stratum_equally() -> None:
    chosen, notes = sample_units(pool({f"t{i}": full(5) for i in range(4)}), tasks=3, per_task=8, seed=3)
    assert len(chosen) == 3 and notes == []
    for members in chosen.values():
        assert Counter((c.outcome, c.condition) for c in members) == Counter(dict.fromkeys(STRATA, 2))


def test_unfillable_stratum_is_said_plainly_and_filled_from_others() -> None:
    counts = {"lean": {**full(4), ("PASS", "without-skills"): 1}}
    chosen, notes = sample_units(pool(counts), tasks=1, per_task=8, seed=0)
    assert len(chosen["lean"]) == 8
    assert len(notes) == 1 and "lean cannot fill its strata" in notes[0]
    assert "PASS/without-skills has 1 of 2 wanted" in notes[0] and "1 filled from other strata" in notes[0]


def test_small_task_and_too_few_tasks_are_reported() -> None:
    chosen, notes = sample_units(pool({"tiny": {("PASS", "with-skills"): 2, ("FAIL", "with-skills"): 1}}),
                                 tasks=4, per_task=8, seed=0)
    assert len(chosen["tiny"]) == 3
    assert any("4 tasks requested but only 1" in n for n in notes)
    assert any("tiny has only 3 trajectories" in n for n in notes)


def test_tasks_that_fill_their_strata_are_preferred() -> None:
    counts = {"good-1": full(2), "good-2": full(3), "poor": {("PASS", "with-skills"): 20}}
    chosen, _ = sample_units(pool(counts), tasks=2, per_task=8, seed=5)
    assert set(chosen) == {"good-1", "good-2"}


def test_task_restriction() -> None:
    chosen, _ = sample_units(pool({"x": full(2), "y": full(2)}), tasks=None, per_task=4, seed=0, task_ids=["y"])
    assert set(chosen) == {"y"}
    with pytest.raises(DesignError, match="no trajectories for task"):
        sample_units(pool({"x": full(2)}), tasks=None, per_task=4, seed=0, task_ids=["nope"])


@pytest.mark.parametrize("n_units", range(2, 11))
def test_sampled_pairs_balance_unit_appearances(n_units: int) -> None:
    units = [f"u{i}" for i in range(n_units)]
    for n_pairs in range(1, n_units * (n_units - 1) // 2):
        for seed in range(8):
            pairs, _ = build_pairs({"t": units}, pairs_per_task=n_pairs, seed=seed)
            assert len(pairs) == n_pairs
            assert len({frozenset(p[1:]) for p in pairs}) == n_pairs  # distinct pairs, no self-pairs
            degree = Counter(u for _, a, b in pairs for u in (a, b))
            spread = [degree[u] for u in units]
            assert max(spread) - min(spread) <= 1, (n_units, n_pairs, seed, degree)


def test_all_pairs_no_pairs_and_random_left_right() -> None:
    units = {"t1": [f"a{i}" for i in range(8)], "t2": [f"b{i}" for i in range(5)]}
    every, _ = build_pairs(units, pairs_per_task=None, seed=2)
    assert len(every) == 28 + 10 and all(p[1][0] == p[2][0] for p in every)  # within-task only
    assert build_pairs(units, pairs_per_task=0, seed=2)[0] == []
    lefts = Counter(a for _, a, _ in every)
    assert any(a > b for _, a, b in every) and any(a < b for _, a, b in every)  # both orientations occur
    assert 0 < sum(lefts.values()) / len(every) <= 1
    flips = sum(a > b for _, a, b in every)
    assert 0.25 < flips / len(every) < 0.75


def test_assignment_gives_k_distinct_raters_with_balanced_load() -> None:
    raters = ["r1", "r2", "r3", "r4", "r5", "r6", "r7"]
    targets = [f"x{i}" for i in range(41)]
    out = assign_balanced(targets, raters, 3, random.Random(0))
    assert set(out) == set(targets)
    assert all(len(set(v)) == 3 for v in out.values())
    load = Counter(r for v in out.values() for r in v)
    assert max(load.values()) - min(load.values()) <= 1
    with pytest.raises(DesignError):
        assign_balanced(targets, raters[:2], 3, random.Random(0))


def test_design_queues_are_balanced_randomized_and_ratings_first() -> None:
    design = make_design(pool({f"t{i}": full(3) for i in range(3)}), params(pairs_per_task=6))
    assert len(design.units) == 24 and len(design.pairs) == 18
    by_rater: dict[str, list] = defaultdict(list)
    for a in design.assignments:
        by_rater[a.rater].append(a)
    for kind in ("progress_rating", "preference"):
        per_target = Counter(a.target for a in design.assignments if a.kind == kind)
        assert set(per_target.values()) == {3}
        load = [sum(a.kind == kind for a in rows) for rows in by_rater.values()]
        assert max(load) - min(load) <= 1
    for rows in by_rater.values():
        kinds = [a.kind for a in rows]
        assert kinds == sorted(kinds, key=("progress_rating", "preference").index)  # ratings first
        assert [a.position for a in rows if a.kind == "preference"] == list(range(kinds.count("preference")))
    orders = {r: [a.target for a in rows if a.kind == "progress_rating"] for r, rows in by_rater.items()}
    assert any(o != sorted(o) for o in orders.values())  # not in code order: shuffled per rater


def test_design_is_deterministic_by_seed_and_parts_independent() -> None:
    candidates = pool({f"t{i}": full(4) for i in range(4)})
    a, b = make_design(candidates, params()), make_design(list(reversed(candidates)), params())
    assert a == b and a.sha == b.sha
    c = make_design(candidates, params(seed=2))
    assert c.sha != a.sha
    fewer_pairs = make_design(candidates, params(pairs_per_task=3))
    assert fewer_pairs.units == a.units  # the pair count does not reshuffle the sampled units


def test_codes_are_opaque_and_unique() -> None:
    design = make_design(pool({"citation-check": full(3)}), params(tasks=1))
    codes = [u.unit_id for u in design.units] + [p.pair_id for p in design.pairs]
    assert len(set(codes)) == len(codes)
    for u in design.units:
        assert u.unit_id.startswith("U-") and "citation" not in u.unit_id and u.trajectory_id not in u.unit_id
    assert sorted(design.units, key=lambda u: u.unit_id) != sorted(design.units, key=lambda u: u.trajectory_id)


def test_params_are_validated() -> None:
    with pytest.raises(ValueError, match="at least that many raters"):
        params(raters=("a", "b"))
    with pytest.raises(ValueError, match="distinct"):
        params(raters=("a", "a", "b"))
    with pytest.raises(DesignError, match="no trajectories"):
        make_design([], params())


def test_summary_states_shortfalls() -> None:
    design = make_design(pool({"lean": {**full(3), ("FAIL", "with-skills"): 0}}), params(tasks=1))
    text = "\n".join(design.summary_lines())
    assert "NOTE: task lean cannot fill its strata" in text and "rater a:" in text
