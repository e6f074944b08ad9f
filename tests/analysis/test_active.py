"""Active auditing: the stratified estimate, the proposals, the stopping rule, and a simulation with known
errors comparing active with uniform random selection."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import beta

from gcpc_core.analysis.active import (
    compare,
    estimate_error,
    estimate_history,
    population,
    propose,
    should_stop,
    simulate,
    summarize,
    synthetic_population,
)


def items_frame() -> pd.DataFrame:
    rows = [("t1", f"Y{k}", "assertion", "Yes", "a") for k in range(80)]
    rows += [("t2", f"N{k}", "generated", "No", "b") for k in range(20)]
    return pd.DataFrame(rows, columns=["trajectory_id", "item_id", "route", "verdict_raw", "task"]).assign(judge="j")


def audits_for(pairs: list[tuple[str, str, bool]]) -> pd.DataFrame:
    return pd.DataFrame([{"trajectory_id": t, "judge": "j", "item_id": i, "rater": "r", "agree": ok,
                          "verdict": None if ok else "Abstain", "created_at": f"2026-01-01T00:00:{k:02d}Z",
                          "is_simulated": False} for k, (t, i, ok) in enumerate(pairs)])


def predictive_draws(strata: list[tuple[int, int, float]], n_draws: int = 400_000, seed: int = 0) -> np.ndarray:
    """The error rate of a finite population by brute force: per stratum (N, n audited, errors among them) the
    audited errors as they are, and Binomial(N − n, θ) more with θ from the Jeffreys posterior."""
    rng = np.random.default_rng(seed)
    total = np.zeros(n_draws)
    for N, n, x in strata:
        theta = rng.beta(x + 0.5, n - x + 0.5, n_draws)
        total += x + rng.binomial(N - n, theta)
    return total / sum(N for N, _, _ in strata)


def test_estimate_by_hand_and_against_the_posterior_predictive() -> None:
    # 10 Yes audited of 80, 1 error; 5 No audited of 20, 2 errors
    audits = audits_for([("t1", f"Y{k}", k != 0) for k in range(10)] + [("t2", f"N{k}", k >= 2) for k in range(5)])
    pop = population(items_frame(), audits, "j")
    est = estimate_error(pop)
    yes = (1 + 0.5) / (10 + 1)
    no = (2 + 0.5) / (5 + 1)
    # the audited verdicts' errors as they are, the unaudited ones at the posterior mean rate
    assert est.estimate == pytest.approx((1 + 70 * yes + 2 + 15 * no) / 100)
    draws = predictive_draws([(80, 10, 1), (20, 5, 2)])
    assert est.estimate == pytest.approx(draws.mean(), abs=1e-3)
    low, high = np.quantile(draws, [0.025, 0.975])
    assert (est.low, est.high) == (pytest.approx(low, abs=0.012), pytest.approx(high, abs=0.012))
    assert (est.n_audited, est.n_population) == (15, 100)
    routes = est.by_route.set_index("route")
    assert routes.loc["generated", "estimate"] == pytest.approx((2 + 15 * no) / 20)


def test_a_fully_audited_stratum_counts_its_errors_as_they_are() -> None:
    """Posterior means stood in for known counts: 1 error in 80 fully audited Yes read (1 + ½)/81."""
    audits = audits_for([("t1", f"Y{k}", k != 0) for k in range(80)] + [("t2", f"N{k}", k >= 5) for k in range(20)])
    est = estimate_error(population(items_frame(), audits, "j"))
    assert (est.estimate, est.low, est.high) == (0.06, 0.06, 0.06)
    assert est.by_route.set_index("route").loc["assertion", "estimate"] == pytest.approx(1 / 80)


def test_no_error_in_50_audits_leaves_the_interval_open_as_jeffreys_does() -> None:
    """The clipped normal interval was [0, 0.036] after 0 errors in 50 (and let a 0.04 target stop); the
    Jeffreys interval's upper end is Beta(½, 50½)'s 97.5 % quantile, 0.049, scaled to the unaudited share."""
    items = pd.DataFrame({"trajectory_id": "t", "item_id": [f"I{k}" for k in range(5000)], "route": "assertion",
                          "verdict_raw": "Yes", "task": "a", "judge": "j"})
    audits = audits_for([("t", f"I{k}", True) for k in range(50)])
    est = estimate_error(population(items, audits, "j"))
    assert est.low >= 0 and est.high == pytest.approx(beta.ppf(0.975, 0.5, 50.5) * 4950 / 5000, rel=0.01)
    assert not should_stop(est, 0.04)


def test_split_audits_carry_their_own_uncertainty() -> None:
    """Five verdicts on which two auditors disagree, every other verdict audited right: each is an error with
    chance ½, so the error rate is 2.5/100 with the spread of Binomial(5, ½)/100 around it, not 0 wide."""
    pairs = [(t, i, True) for t, i in zip(items_frame()["trajectory_id"], items_frame()["item_id"])]
    audits = audits_for(pairs)
    split = [("t2", f"N{k}") for k in range(5)]
    audits = pd.concat([audits, audits_for([(t, i, False) for t, i in split]).assign(rater="s")], ignore_index=True)
    pop = population(items_frame(), audits, "j")
    row = pop.set_index(["trajectory_id", "item_id"]).loc[("t2", "N0")]
    assert (row["source"], row["tied"], row["error"], row["truth"]) == ("split", ("Abstain", "No"), 0.5, None)
    est = estimate_error(pop)
    assert est.n_audited == 100 and est.estimate == pytest.approx(0.025)
    assert est.low <= 0.01 and est.high >= 0.04 and est.width > 0.02
    assert propose(pop, 10).empty  # nothing left to propose: a tie is settled by a third auditor, not a proposal


def test_audits_chosen_among_errors_are_known_but_estimate_nothing() -> None:
    """5,000 Yes verdicts, 10 % wrong; 100 audits drawn at random find 10 errors, 60 more chosen from the
    disagreement list are all errors. Taken as one sample (as every audit was before audits recorded how they
    were selected) the unaudited verdicts' rate reads 70/160 = 0.44 and the interval misses the true 0.10; with
    the selection recorded the 60 settle their own verdicts, the rate comes from the 100 random draws, and the
    interval holds the truth. The proposals skip the chosen verdicts (they are known)."""
    n = 5000
    items = pd.DataFrame({"trajectory_id": "t", "item_id": [f"I{k}" for k in range(n)], "route": "assertion",
                          "verdict_raw": "Yes", "task": "a", "judge": "j"})
    random = audits_for([("t", f"I{k}", k >= 10) for k in range(100)]).assign(selection="random")
    chosen = audits_for([("t", f"I{k}", False) for k in range(100, 160)]).assign(selection="chosen")
    true_rate = (10 + 60 + 0.1 * (n - 160)) / n  # the other verdicts are wrong at the random draws' rate
    pooled = estimate_error(population(items, pd.concat([random, chosen.drop(columns="selection")]), "j"))
    assert not pooled.low <= true_rate <= pooled.high and pooled.estimate > 0.4
    pop = population(items, pd.concat([random, chosen]), "j")
    est = estimate_error(pop)
    assert est.low <= true_rate <= est.high and est.estimate == pytest.approx(
        (10 + 60 + (n - 160) * (10 + 0.5) / (100 + 1)) / n)
    assert (est.n_audited, est.n_chosen) == (160, 60)
    assert set(pop.loc[pop["audited"], "selection"]) == {"random", "chosen"}
    assert not set(propose(pop, 50)["item_id"]) & {f"I{k}" for k in range(160)}
    # a verdict audited both ways was included at random: it is in the sample
    both = population(items, pd.concat([random, chosen, audits_for([("t", "I120", False)]).assign(
        rater="s", selection="random")]), "j")
    assert estimate_error(both).n_chosen == 59


def test_the_verifier_decides_its_verdicts_in_strata_of_their_own() -> None:
    items = items_frame()
    verifier = pd.DataFrame({"trajectory_id": "t1", "judge": "j", "item_id": [f"Y{k}" for k in range(40)],
                             "truth": ["No"] * 8 + ["Yes"] * 32})
    audits = audits_for([("t1", "Y0", True), ("t1", "Y1", False)])  # auditors overrule the verifier on Y0
    pop = population(items, audits, "j", verifier=verifier)
    got = pop.set_index("item_id")
    assert got.loc["Y0", "source"] == "auditor" and got.loc["Y0", "error"] == 0.0
    assert got.loc["Y2", "source"] == "verifier" and got.loc["Y2", "error"] == 1.0
    assert got.loc["Y9", "error"] == 0.0 and np.isnan(got.loc["Y50", "error"])
    assert got.loc["Y2", "stratum"] == "assertion · Yes · verifier" and got.loc["Y50", "stratum"] == "assertion · Yes"
    t = estimate_error(pop).strata
    assert (t.loc["assertion · Yes · verifier", ["N", "n", "errors"]].tolist()) == [40, 40, 7.0]
    assert t.loc["assertion · Yes", "n"] == 0  # the verifier's 7 errors in 40 say nothing of the other 40
    assert set(propose(pop, 100)["stratum"]) == {"assertion · Yes", "generated · No"}


def test_proposals_go_where_the_variance_is_and_skip_audited_items() -> None:
    # the No stratum errs often, the Yes stratum never: after a first look, audits go mostly to No
    audits = audits_for([("t1", f"Y{k}", True) for k in range(20)] + [("t2", f"N{k}", k % 2 == 0) for k in range(4)])
    pop = population(items_frame(), audits, "j")
    nxt = propose(pop, 10, seed=1)
    assert len(nxt) == 10 and nxt["order"].tolist() == list(range(1, 11))
    audited = set(zip(audits["trajectory_id"], audits["item_id"]))
    assert not audited & set(zip(nxt["trajectory_id"], nxt["item_id"]))
    assert (nxt["verdict_raw"] == "No").sum() > (nxt["verdict_raw"] == "Yes").sum()
    assert len(set(zip(nxt["trajectory_id"], nxt["item_id"]))) == 10  # no item proposed twice
    assert len(propose(pop, 1000)) == 100 - len(audits)  # never more than what is left


def test_stopping_rule_and_history() -> None:
    pop = population(items_frame(), None, "j")
    assert not should_stop(estimate_error(pop), 0.2)
    everything = audits_for([(t, i, True) for t, i in zip(pop["trajectory_id"], pop["item_id"])])
    full = population(items_frame(), everything, "j")
    est = estimate_error(full)
    assert est.width == pytest.approx(0.0, abs=1e-12) and should_stop(est, 0.0)
    history = estimate_history(full, everything, max_points=11)
    assert history["n_audits"].tolist() == list(range(0, 101, 10))
    assert history["width"].iloc[-1] < history["width"].iloc[0]
    assert history["width"].is_monotonic_decreasing


def test_history_steps_equal_the_estimate_of_what_was_known_then() -> None:
    """Each step of the history (kept as running per-stratum counts) is `estimate_error` of the population with only
    the audits made by then: random, chosen and split audits and the verifier's verdicts mixed."""
    items = items_frame()
    verifier = pd.DataFrame({"trajectory_id": "t1", "judge": "j", "item_id": [f"Y{k}" for k in range(60, 70)],
                             "truth": ["No"] * 3 + ["Yes"] * 7})
    audits = pd.concat([
        audits_for([("t1", f"Y{k}", k % 4 != 0) for k in range(12)]).assign(selection="random"),
        audits_for([("t2", f"N{k}", False) for k in range(6)]).assign(selection="chosen", created_at="2026-01-02"),
        audits_for([("t2", "N7", True)]).assign(rater="s", created_at="2026-01-03"),
        audits_for([("t2", "N7", False)]).assign(rater="u", created_at="2026-01-04"),  # split
    ], ignore_index=True)
    pop = population(items, audits, "j", verifier=verifier)
    history = estimate_history(pop, audits)
    order = audits.sort_values("created_at", kind="stable").drop_duplicates(["trajectory_id", "item_id"])
    for step, row in zip(history["n_audits"], history.itertuples()):
        upto = order.iloc[:step]
        expected = estimate_error(population(items, audits.merge(upto[["trajectory_id", "item_id"]]), "j",
                                             verifier=verifier))
        assert (row.estimate, row.low, row.high) == pytest.approx((expected.estimate, expected.low, expected.high)), step


def test_both_arms_stop_by_the_same_rule_on_the_same_estimate() -> None:
    """Replayed: the uniform arm's audits, estimated as the active arm's are, are just narrow enough at its stop
    and not a batch earlier (it used a pooled estimator, and the active arm a stratified one)."""
    items, truth = synthetic_population("concentrated", n_tasks=3, per_task=600, seed=2)
    pop = population(items, None, "sim")
    got = simulate(pop, truth, 0.06, batch=10, seed=2)
    order = np.random.default_rng(2).permutation(len(pop))

    def estimate_after(k: int) -> tuple[float, float, float]:
        audited = np.zeros(len(pop), dtype=bool)
        audited[order[:k]] = True
        est = estimate_error(pop.assign(audited=audited, error=np.where(audited, truth, np.nan)))
        return est.width, est.low, est.high

    width, low, high = estimate_after(got["uniform"])
    assert width <= 0.06 < estimate_after(got["uniform"] - 10)[0]
    assert (got["uniform_low"], got["uniform_high"]) == (pytest.approx(low), pytest.approx(high))


def test_simulation_over_seeds_reports_the_ratio_its_spread_and_coverage() -> None:
    """On populations with known errors (concentrated in No and Abstain verdicts), fixed seeds: active
    auditing needs about two thirds of the audits uniform auditing needs with the same estimator, and both
    arms' final intervals cover the true rate about as often as 95 % intervals should."""
    table = compare("concentrated", target_width=0.04, seeds=range(20), batch=10)
    total = table.set_index("seed").loc["total"]
    assert total["ratio"] == pytest.approx(total["active"] / total["uniform"])
    claim = summarize(table)
    assert claim["n_seeds"] == 20 and claim["ratio"] == pytest.approx(total["ratio"])
    assert 0.55 <= claim["ratio"] <= 0.75, table.to_string()
    assert claim["ratio_min"] <= claim["ratio_p05"] <= claim["ratio_median"] <= claim["ratio_p95"] <= claim["ratio_max"]
    assert claim["ratio_median"] < 0.8  # a seed may need as many audits either way (seed 18: 410 and 410)
    assert claim["active_coverage"] >= 0.85 and claim["uniform_coverage"] >= 0.85, table.to_string()


def test_simulation_is_reproducible() -> None:
    items, truth = synthetic_population("concentrated", n_tasks=2, per_task=300, seed=3)
    pop = population(items, None, "sim")
    assert simulate(pop, truth, 0.08, seed=3) == simulate(pop, truth, 0.08, seed=3)
