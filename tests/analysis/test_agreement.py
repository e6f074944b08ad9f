"""Human agreement: MT-Bench pairwise agreement, Spearman ρ with clustered CIs, Krippendorff's α."""

from __future__ import annotations

import krippendorff
import numpy as np
import pandas as pd
import pytest
from scipy import stats

from gcpc_core.analysis import (
    alpha_table,
    canonical_preferences,
    cluster_counts,
    draw_clusters,
    judge_choice,
    pairwise_agreement,
    preference_votes,
    spearman_table,
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


def test_canonical_orientation_flips_swapped_votes() -> None:
    c = canonical_preferences(P)
    p3 = c[c["pair_id"] == "P3"]
    assert set(p3["first_id"]) == {"z1"} and p3["choice"].tolist() == ["B", "B"]


def test_judge_choice_with_tolerance_and_missing() -> None:
    out = judge_choice(np.array([0.8, 0.5, 0.50, np.nan]), np.array([0.5, 0.8, 0.52, 0.1]), tie_tol=0.05)
    assert out.tolist() == ["A", "B", "tie", None]


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


def test_nominal_alpha_by_hand() -> None:
    # 2 coders × 4 units: (A,A) (A,B) (B,B) (B,B). Coincidences o_AA=2, o_AB=o_BA=1, o_BB=4; n_A=3, n_B=5, n=8.
    # α = 1 − (n−1)·(o_AB+o_BA) / (2·n_A·n_B) = 1 − 7·2/30 = 8/15
    units = [("A", "A"), ("A", "B"), ("B", "B"), ("B", "B")]
    p = prefs([(f"P{k}", f"u{k}", f"v{k}", rater, c) for k, pair in enumerate(units) for rater, c in zip(("r1", "r2"), pair)])
    table = alpha_table(None, p, scores({"u0": 0.1}))
    assert table.loc[0, "alpha"] == pytest.approx(8 / 15)
    assert (table.loc[0, "data"], table.loc[0, "coders"], table.loc[0, "level"]) == ("preferences", "humans", "nominal")


LITERATURE = [[1, 2, 3, 3, 2, 1, 4, 1, 2, np.nan, np.nan, np.nan],
              [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, np.nan, 3],
              [np.nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, np.nan],
              [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, np.nan]]
"""Krippendorff's worked example (4 coders × 12 units); ordinal α = 0.815."""


def literature_ratings() -> pd.DataFrame:
    return ratings([(f"u{u:02d}", f"c{c}", int(v)) for c, row in enumerate(LITERATURE) for u, v in enumerate(row)
                    if not np.isnan(v)])


def test_ordinal_alpha_matches_the_published_value_and_the_package() -> None:
    table = alpha_table(literature_ratings(), None, scores({"u00": 0.5}))
    humans = table[table["coders"] == "humans"].iloc[0]
    assert round(humans["alpha"], 3) == 0.815
    assert humans["alpha"] == pytest.approx(krippendorff.alpha(LITERATURE, level_of_measurement="ordinal",
                                                                value_domain=[1, 2, 3, 4, 5]))
    assert humans["n_units"] == 11  # unit 11 has one coder: not pairable


def test_judge_joins_the_rating_scale_as_an_extra_coder() -> None:
    r = literature_ratings()
    judge = {f"u{u:02d}": s for u, s in enumerate([0.0, 0.25, 0.5, 0.5, 0.3, 0.6, 0.75, 0.1, 0.2, 1.0, 0.0, 0.625])}
    table = alpha_table(r, None, scores(judge)).set_index("coders")
    # scale 1–5: 1 + floor(4s + ½): 0→1, .25→2, .5→3, .3→2, .6→3, .75→4, .1→1, .2→2, 1→5, .625→4 (half up)
    mapped = [1, 2, 3, 3, 2, 3, 4, 1, 2, 5, 1, 4]
    expected = krippendorff.alpha([*LITERATURE, mapped], level_of_measurement="ordinal", value_domain=[1, 2, 3, 4, 5])
    assert table.loc["humans + gcpc", "alpha"] == pytest.approx(expected)
    assert table.loc["humans + gcpc", "n_coders"] == 5 and table.loc["humans + gcpc", "n_units"] == 12


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
