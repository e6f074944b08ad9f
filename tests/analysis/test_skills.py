"""Matched with/without-skills pairs: Δ, transitions, strict thresholds, NaN handling, item changes."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from gcpc_core.analysis import FrameContractError, item_changes, matched_pairs, transition_table

COLUMNS = ["trajectory_id", "task", "judge", "outcome", "condition", "agent", "model", "trial_index", "partial_credit"]


def row(tid: str, task: str, cond: str, outcome: str, score: float, trial: int, agent: str = "cc") -> tuple:
    return (tid, task, "gcpc", outcome, cond, agent, "m", trial, score)


SCORES = pd.DataFrame([
    row("k1w", "A", "with-skills", "PASS", 0.9, 0), row("k1o", "A", "without-skills", "FAIL", 0.4, 0),
    row("k2w", "A", "with-skills", "FAIL", 0.4, 1), row("k2o", "A", "without-skills", "FAIL", 0.3, 1),  # Δ = 0.1000…03
    row("k3w", "B", "with-skills", "FAIL", 0.5, 0), row("k3o", "B", "without-skills", "FAIL", 0.2, 0),
    row("k4w", "B", "with-skills", "FAIL", 0.3, 1), row("k4o", "B", "without-skills", "FAIL", 0.5, 1),
    row("k5w", "B", "with-skills", "PASS", 1.0, 2), row("k5o", "B", "without-skills", "PASS", 1.0, 2),
    row("k6w", "C", "with-skills", "FAIL", np.nan, 0), row("k6o", "C", "without-skills", "PASS", 0.8, 0),
    row("k7w", "C", "with-skills", "PASS", 0.7, 1),  # no partner
    row("k8u", "C", "unknown", "PASS", 0.7, 0, agent="other"),  # condition unknown
], columns=COLUMNS)


def test_pairs_and_deltas() -> None:
    pairs = matched_pairs(SCORES).set_index("trajectory_id_with")
    assert sorted(pairs.index) == ["k1w", "k2w", "k3w", "k4w", "k5w", "k6w"]
    assert pairs.loc["k1w", "transition"] == "FAIL→PASS" and pairs.loc["k1w", "delta"] == pytest.approx(0.5)
    assert pairs.loc["k6w", "transition"] == "PASS→FAIL" and np.isnan(pairs.loc["k6w", "delta"])
    assert pairs.loc["k4w", "trajectory_id_without"] == "k4o"


def test_transition_table_by_hand() -> None:
    t = transition_table(matched_pairs(SCORES), threshold=0.10).set_index("transition")
    ff = t.loc["FAIL→FAIL"]  # Δ = 0.1000…03 (not > 0.10), 0.3 (improving), −0.2 (regressing)
    assert (ff["n_pairs"], ff["n_scored"]) == (3, 3)
    assert ff["median_delta"] == pytest.approx(0.1)
    assert ff["share_improving"] == pytest.approx(1 / 3) and ff["share_regressing"] == pytest.approx(1 / 3)
    pp = t.loc["PASS→PASS"]
    assert (pp["n_pairs"], pp["median_delta"], pp["share_improving"], pp["share_regressing"]) == (1, 0.0, 0.0, 0.0)
    pf = t.loc["PASS→FAIL"]  # the only pair has a NaN score: counted, not scored
    assert (pf["n_pairs"], pf["n_scored"]) == (1, 0) and np.isnan(pf["median_delta"])
    assert "no pair has both scores" in pf["note"]
    assert (t.loc["FAIL→PASS", "n_pairs"], t.loc["all", "n_pairs"], t.loc["all", "n_scored"]) == (1, 6, 5)


def test_threshold_is_strict_and_configurable() -> None:
    t = transition_table(matched_pairs(SCORES), threshold=0.3).set_index("transition")
    assert t.loc["FAIL→FAIL", "share_improving"] == 0.0  # Δ = 0.3 is not more than 0.3
    t = transition_table(matched_pairs(SCORES), threshold=0.05).set_index("transition")
    assert t.loc["FAIL→FAIL", "share_improving"] == pytest.approx(2 / 3)


def test_every_transition_is_listed_even_when_empty() -> None:
    only_b = matched_pairs(SCORES[SCORES["task"] == "B"])
    t = transition_table(only_b).set_index("transition")
    assert t.loc["FAIL→PASS", "n_pairs"] == 0 and t.loc["FAIL→PASS", "note"] == "no pairs"


def test_duplicate_condition_for_a_key_is_a_contract_error() -> None:
    dup = pd.concat([SCORES, SCORES.iloc[[0]].assign(trajectory_id="k1w-bis")])
    with pytest.raises(FrameContractError, match="trial_index"):
        matched_pairs(dup)


def test_item_changes_by_hand() -> None:
    items = pd.DataFrame([
        ("k3o", "gcpc", "C1", "No"), ("k3o", "gcpc", "C2", "Yes"),
        ("k3w", "gcpc", "C1", "Yes"), ("k3w", "gcpc", "C2", "Yes"),
        ("k4o", "gcpc", "C1", "Yes"), ("k4o", "gcpc", "C2", "Abstain"),
        ("k4w", "gcpc", "C1", "No"), ("k4w", "gcpc", "C2", "Yes"),
        ("k3o", "gcpc", "ENDPOINT", "No"), ("k3w", "gcpc", "ENDPOINT", "No"),
    ], columns=["trajectory_id", "judge", "item_id", "verdict"])
    ch = item_changes(items, matched_pairs(SCORES)).set_index("item_id")
    assert list(ch.index) == ["C1", "C2"]  # endpoint left out; task A pairs have no items
    assert ch.loc["C1", ["n_pairs", "gained", "lost", "unchanged", "abstain_change"]].tolist() == [2, 1, 1, 0, 0]
    assert ch.loc["C2", ["n_pairs", "gained", "lost", "unchanged", "abstain_change"]].tolist() == [2, 0, 0, 1, 1]
    assert ch.loc["C1", "net_share"] == 0.0 and (ch["task"] == "B").all()
    only = item_changes(items, matched_pairs(SCORES), transitions=("PASS→PASS",))
    assert only.empty
