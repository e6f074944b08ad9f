"""Human agreement: MT-Bench pairwise agreement, Spearman ρ with clustered CIs, Krippendorff's α."""

from __future__ import annotations

import krippendorff
import numpy as np
import pandas as pd
import pytest
from scipy import stats

from hypothesis import given, settings
from hypothesis import strategies as st

from gcpc_core.analysis import (
    FrameContractError,
    alpha_table,
    cluster_counts,
    draw_clusters,
    judge_chosen,
    pairwise_agreement,
    preference_choices,
    preference_votes,
    spearman_table,
    usable_preferences,
    usable_ratings,
)


def scores(values: dict[str, float], judge: str = "gcpc") -> pd.DataFrame:
    return pd.DataFrame({"trajectory_id": list(values), "task": [t[0] for t in values], "judge": judge,
                         "outcome": "FAIL", "partial_credit": list(values.values())})


def prefs(rows: list[tuple[str, str, str, str, str]]) -> pd.DataFrame:
    return pd.DataFrame([(p, l[0], l, r, rater, c) for p, l, r, rater, c in rows],
                        columns=["pair_id", "task", "left_id", "right_id", "rater", "choice"])


S = scores({"x1": 0.8, "x2": 0.5, "y1": 0.5, "y2": 0.5, "z1": 0.2, "z2": 0.7})
P = prefs([
    ("P1", "x1", "x2", "r1", "A"), ("P1", "x1", "x2", "r2", "A"),
    ("P2", "y1", "y2", "r1", "tie"), ("P2", "y1", "y2", "r2", "B"),
    ("P3", "z1", "z2", "r1", "B"), ("P3", "z2", "z1", "r2", "A"),  # r2 saw the pair swapped: same opinion as r1
    ("P4", "w1", "w2", "r1", "A"),  # the judge scored neither side
])


def test_a_vote_is_the_chosen_trajectory_whatever_side_it_was_shown_on() -> None:
    c = preference_choices(P)
    assert c[c["pair_id"] == "P3"]["chosen"].tolist() == ["z2", "z2"]  # r2 saw the pair swapped
    assert c[c["pair_id"] == "P2"]["chosen"].tolist() == ["tie", "y2"]


def test_a_pair_id_naming_two_different_pairs_is_a_contract_error() -> None:
    with pytest.raises(FrameContractError, match="pair 'P1' names different trajectories"):
        preference_choices(pd.concat([P, prefs([("P1", "x1", "x3", "r3", "A")])]))


def test_judge_chosen_with_tolerance_and_missing() -> None:
    out = judge_chosen(np.array(["a", "b", "c", "d"]), np.array(["e", "f", "g", "h"]),
                       np.array([0.8, 0.5, 0.50, np.nan]), np.array([0.5, 0.8, 0.52, 0.1]), tie_tol=0.05)
    assert out.tolist() == ["a", "f", "tie", None]


def test_pairwise_agreement_by_hand_mt_bench_convention() -> None:
    table = pairwise_agreement(preference_votes(P, S)).set_index("judge")
    # judge: P1 A, P2 tie, P3 B. Votes (canonical): P1 A A, P2 tie B, P3 B B → with ties 5/6;
    # without ties the two P2 votes go (judge tie) → 4/4.
    g = table.loc["gcpc"]
    assert (g["n_votes_with_ties"], g["agreement_with_ties"]) == (6, pytest.approx(5 / 6))
    assert (g["n_votes_without_ties"], g["agreement_without_ties"]) == (4, 1.0)
    assert "1 votes dropped" in g["note"]
    # human–human: P1 agree, P2 disagree (tie vs B), P3 agree → 2/3; without ties 2/2
    h = table.loc["human-human"]
    assert (h["n_votes_with_ties"], h["agreement_with_ties"]) == (3, pytest.approx(2 / 3))
    assert (h["n_votes_without_ties"], h["agreement_without_ties"]) == (2, 1.0)


def test_single_rater_pairs_have_no_human_human_agreement() -> None:
    table = pairwise_agreement(preference_votes(P[P["rater"] == "r1"], S)).set_index("judge")
    assert table.loc["human-human", "n_votes_with_ties"] == 0
    assert np.isnan(table.loc["human-human", "agreement_with_ties"])
    assert "no pair has two or more raters" in table.loc["human-human", "note"]


def ratings(rows: list[tuple[str, str, int]]) -> pd.DataFrame:
    return pd.DataFrame([(t, t[0], r, v) for t, r, v in rows], columns=["trajectory_id", "task", "rater", "rating"])


def test_spearman_by_hand_and_single_rater_note() -> None:
    r = ratings([("a1", "r1", 1), ("a1", "r2", 1), ("a2", "r1", 2), ("b1", "r1", 3), ("b1", "r2", 3),
                 ("b2", "r1", 4), ("b2", "r2", 5)])
    s = scores({"a1": 0.1, "a2": 0.4, "b1": 0.3, "b2": 0.9})
    table, data = spearman_table(r, s, n_boot=200, seed=0)
    # means 1, 2, 3, 4.5 vs scores .1 .4 .3 .9: ranks differ at two places by 1 → 1 − 6·2 / (4·15) = 0.8
    row = table.iloc[0]
    assert row["rho"] == pytest.approx(0.8)
    assert data["mean_rating"].tolist() == [1.0, 2.0, 3.0, 4.5]
    assert "1 trajectories rated by a single rater" in row["note"]


def test_spearman_bootstrap_matches_a_per_draw_spearmanr_loop_and_is_seeded() -> None:
    rng = np.random.default_rng(4)
    ids = [f"{'abcdefgh'[k % 8]}{k}" for k in range(40)]
    latent = rng.random(40)
    r = ratings([(t, f"r{j}", int(np.clip(round(1 + 4 * latent[k] + rng.normal(0, 0.8)), 1, 5)))
                 for k, t in enumerate(ids) for j in range(2)])
    s = scores(dict(zip(ids, np.round(latent + rng.normal(0, 0.2, 40), 1))))
    table, data = spearman_table(r, s, n_boot=150, seed=9)
    again, _ = spearman_table(r, s, n_boot=150, seed=9)
    pd.testing.assert_frame_equal(table, again)
    codes, tasks = pd.factorize(data["task"])
    counts = cluster_counts(draw_clusters(len(tasks), 150, 9), len(tasks))
    x, y = data["mean_rating"].to_numpy(), data["gcpc"].to_numpy()
    loop = []
    for c in counts:
        idx = np.concatenate([np.repeat(np.flatnonzero(codes == t), int(k)) for t, k in enumerate(c)])
        loop.append(stats.spearmanr(x[idx], y[idx]).statistic)
    low, high = np.nanpercentile(loop, [2.5, 97.5])
    assert table.loc[0, "ci_low"] == pytest.approx(low) and table.loc[0, "ci_high"] == pytest.approx(high)
    assert table.loc[0, "rho"] == pytest.approx(stats.spearmanr(x, y).statistic)


@pytest.mark.parametrize(("rows", "message"), [
    ([("a1", "r1", 3), ("a2", "r1", 3), ("b1", "r1", 3)], "mean human rating is constant"),
    ([("a1", "r1", 3), ("a2", "r1", 4)], "ρ needs at least 3"),
])
def test_spearman_degenerate(rows: list, message: str) -> None:
    table, _ = spearman_table(ratings(rows), scores({"a1": 0.1, "a2": 0.5, "b1": 0.9}), n_boot=20)
    assert np.isnan(table.loc[0, "rho"]) and message in table.loc[0, "note"]


def test_nominal_alpha_by_hand_codes_votes_first_second_or_tie() -> None:
    # 2 coders × 4 pairs (u_k, v_k), u_k sorting first: (A,A) (A,B) (B,B) (B,B) → first first | first second |
    # second second | second second. Values n_first=3, n_second=5 (n=8); the one disagreement is
    # o(first,second)=o(second,first)=1. α = 1 − (n−1)·Σ_{c≠k} o_ck / Σ_{c≠k} n_c·n_k = 1 − 7·2 / (2·3·5) = 8/15
    units = [("A", "A"), ("A", "B"), ("B", "B"), ("B", "B")]
    p = prefs([(f"P{k}", f"u{k}", f"v{k}", rater, c) for k, pair in enumerate(units) for rater, c in zip(("r1", "r2"), pair)])
    table = alpha_table(None, p, scores({"u0": 0.1}))
    assert table.loc[0, "alpha"] == pytest.approx(8 / 15)
    assert table.loc[0, "alpha"] == pytest.approx(krippendorff.alpha([[0, 0, 1, 1], [0, 1, 1, 1]],
                                                                      level_of_measurement="nominal"))
    assert (table.loc[0, "data"], table.loc[0, "coders"], table.loc[0, "level"]) == ("preferences", "humans", "nominal")
    assert alpha_table(None, p).equals(table[table["coders"] == "humans"])  # no scores: humans only


def random_votes(rng: np.random.Generator, n_pairs: int, n_raters: int, choices: tuple[str, ...]) -> pd.DataFrame:
    """`n_pairs` × `n_raters` votes drawn at random from `choices`, each vote shown with its sides at random."""
    rows = []
    for k in range(n_pairs):
        for r in range(n_raters):
            left, right = (f"a{k}", f"b{k}") if rng.random() < 0.5 else (f"b{k}", f"a{k}")
            rows.append((f"P{k}", left, right, f"r{r}", choices[rng.integers(len(choices))]))
    return prefs(rows)


def flipped(p: pd.DataFrame) -> pd.DataFrame:
    """Every vote of `p` as recorded by a rater who saw its pair the other way round: the same opinions."""
    return p.assign(left_id=p["right_id"], right_id=p["left_id"], choice=p["choice"].replace({"A": "B", "B": "A"}))


@pytest.mark.parametrize("choices", [("A", "B"), ("A", "B", "tie")])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_raters_voting_at_random_agree_at_chance(choices: tuple[str, ...], seed: int) -> None:
    """2,000 random votes (500 pairs × 4 raters): α ≈ 0, with the judge as a coder too, and the same α whichever
    side each pair was shown on. (Coding a vote as the chosen trajectory's id gave α ≈ 0.5 here.)"""
    rng = np.random.default_rng(seed)
    p = random_votes(rng, 500, 4, choices)
    judge = scores({t: float(rng.integers(3)) / 2 for k in range(500) for t in (f"a{k}", f"b{k}")})
    table = alpha_table(None, p, judge)
    assert table["n_answers"].tolist() == [2000, 2500]
    assert table["alpha"].abs().max() < 0.05, table
    pd.testing.assert_frame_equal(alpha_table(None, flipped(p), judge), table)


VOTE = st.tuples(st.integers(0, 5), st.sampled_from(["r1", "r2", "r3"]), st.sampled_from(["A", "B", "tie"]),
                 st.booleans())


@settings(max_examples=60, deadline=None)
@given(votes=st.lists(VOTE, min_size=2, max_size=30), swap=st.lists(st.booleans(), min_size=30, max_size=30),
       rename=st.lists(st.booleans(), min_size=6, max_size=6),
       judge=st.lists(st.sampled_from([0.0, 0.5, 1.0]), min_size=12, max_size=12))
def test_pair_orientation_never_changes_a_preference_statistic(
        votes: list, swap: list[bool], rename: list[bool], judge: list[float]) -> None:
    """The same opinions give the same α and agreement whichever side each vote was recorded from (`swap`);
    pairwise agreement also whichever trajectory of a pair sorts first (`rename` swaps the two ids' names).
    α's classes are a pair's first and second trajectory in id order, so renaming may change α: it relabels."""
    def frames(flip: list[bool], names: list[bool]) -> tuple[pd.DataFrame, pd.DataFrame]:
        def name(side: str, k: int) -> str:
            return f"{'ba'['ab'.index(side)] if names[k] else side}{k}"

        rows = []
        for (pair, rater, choice, shown_swapped), f in zip(votes, flip):
            left, right = name("a", pair), name("b", pair)
            if shown_swapped != f:  # the same opinion, recorded from the other side
                left, right, choice = right, left, {"A": "B", "B": "A"}.get(choice, choice)
            rows.append((f"P{pair}", left, right, rater, choice))
        s = scores({name(side, k): judge[2 * k + (side == "b")] for k in range(6) for side in "ab"})
        return prefs(rows), s

    before, after = frames([False] * len(votes), [False] * 6), frames(swap[:len(votes)], rename)
    shown_swapped = frames(swap[:len(votes)], [False] * 6)
    pd.testing.assert_frame_equal(alpha_table(None, *before), alpha_table(None, *shown_swapped))
    pd.testing.assert_frame_equal(pairwise_agreement(preference_votes(*before)),
                                  pairwise_agreement(preference_votes(*after)))


def test_judge_scores_map_onto_the_declared_scale_not_the_range_raters_used() -> None:
    # raters use only 2–4 of the declared 1–5 scale; a judge score of 0 is a 1, not a 2
    r = ratings([("a1", "r1", 2), ("a1", "r2", 2), ("a2", "r1", 3), ("a2", "r2", 4), ("b1", "r1", 4), ("b1", "r2", 4)])
    s = scores({"a1": 0.0, "a2": 0.5, "b1": 1.0})
    declared = alpha_table(r.assign(scale_min=1, scale_max=5), None, s).set_index("coders")
    expected = krippendorff.alpha([[2, 3, 4], [2, 4, 4], [1, 3, 5]], level_of_measurement="ordinal",
                                  value_domain=[1, 2, 3, 4, 5])
    assert declared.loc["humans + gcpc", "alpha"] == pytest.approx(expected)
    assert declared.loc["humans + gcpc", "scale"] == "1–5" and declared.loc["humans + gcpc", "note"] == ""
    assert alpha_table(r, None, s, scale=(1, 5))["alpha"].tolist() == declared["alpha"].tolist()
    observed = alpha_table(r, None, s).set_index("coders")  # no declared scale: said so, observed range used
    assert "observed range 2–4" in observed.loc["humans + gcpc", "note"]
    assert observed.loc["humans + gcpc", "alpha"] != pytest.approx(expected)


def test_malformed_ratings_and_preferences_are_set_aside_with_row_and_reason() -> None:
    r = ratings([("a1", "r1", 2), ("a2", "r1", 9), ("b1", "r1", 3)]).assign(scale_min=1, scale_max=5)
    r["rating"] = r["rating"].astype(object)
    r.loc[len(r)] = ["b2", "b", "r2", "high", 1, 5]
    r.loc[len(r)] = ["b3", "b", "r2", None, 1, 5]
    usable, rejected = usable_ratings(r)
    assert usable["trajectory_id"].tolist() == ["a1", "b1"] and usable["rating"].tolist() == [2, 3]
    assert rejected[["row", "target", "reason"]].values.tolist() == [
        [1, "a2", "rating 9 is outside the declared scale 1–5"], [3, "b2", "rating 'high' is not a whole number"],
        [4, "b3", "rating is missing"]]
    usable_p, rejected_p = usable_preferences(pd.concat([P, prefs([("P9", "q1", "q2", "r1", "left")])],
                                                        ignore_index=True))
    assert len(usable_p) == len(P) and rejected_p[["row", "target", "value"]].values.tolist() == [[7, "P9", "'left'"]]


def test_spearman_interval_needs_two_tasks() -> None:
    r = ratings([(f"a{k}", f"r{j}", 1 + (k + j) % 5) for k in range(6) for j in range(2)])
    table, _ = spearman_table(r, scores({f"a{k}": k / 5 for k in range(6)}), n_boot=50)
    row = table.iloc[0]
    assert not np.isnan(row["rho"]) and np.isnan(row["ci_low"]) and np.isnan(row["ci_high"])
    assert "fewer than 2 tasks" in row["note"]


@pytest.mark.parametrize(("rows", "message"), [
    ([("a1", "r1", 2), ("a2", "r2", 4)], "no unit has two or more coders"),
    ([("a1", "r1", 3), ("a1", "r2", 3), ("a2", "r1", 3), ("a2", "r2", 3)], "same value"),
])
def test_alpha_degenerate_cases(rows: list, message: str) -> None:
    table = alpha_table(ratings(rows), None, scores({"a1": 0.5, "a2": 0.5}))
    humans = table.iloc[0]
    assert np.isnan(humans["alpha"]) and message in humans["note"]


def test_unit_id_stands_in_for_trajectory_id() -> None:
    r = ratings([("a1", "r1", 1), ("a2", "r1", 2), ("b1", "r1", 3)]).rename(columns={"trajectory_id": "unit_id"})
    table, _ = spearman_table(r, scores({"a1": 0.1, "a2": 0.2, "b1": 0.3}), n_boot=10)
    assert table.loc[0, "rho"] == pytest.approx(1.0)


def test_last_row_wins_for_a_rater_who_rated_twice() -> None:
    r = ratings([("a1", "r1", 1), ("a1", "r2", 1), ("a2", "r1", 5), ("a2", "r2", 4), ("a2", "r2", 5)])
    table = alpha_table(r, None, scores({"a1": 0.0, "a2": 1.0}))
    assert table.loc[0, "alpha"] == pytest.approx(1.0)
