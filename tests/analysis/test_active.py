"""Active auditing: the stratified estimate, the proposals, the stopping rule, and a simulation with known
errors comparing active with uniform random selection."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from gcpc_core.analysis.active import (
    compare,
    estimate_error,
    estimate_history,
    population,
    propose,
    should_stop,
    simulate,
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


def test_estimate_by_hand() -> None:
    # 10 Yes audited, 1 error; 5 No audited, 2 errors
    audits = audits_for([("t1", f"Y{k}", k != 0) for k in range(10)] + [("t2", f"N{k}", k >= 2) for k in range(5)])
    pop = population(items_frame(), audits, "j")
    est = estimate_error(pop)
    yes = (1 + 0.5) / (10 + 1)
    no = (2 + 0.5) / (5 + 1)
    assert est.estimate == pytest.approx(0.8 * yes + 0.2 * no)
    var = 0.8**2 * (1 - 10 / 80) * yes * (1 - yes) / 12 + 0.2**2 * (1 - 5 / 20) * no * (1 - no) / 7
    assert est.high - est.estimate == pytest.approx(1.959964 * np.sqrt(var), rel=1e-5)
    assert (est.n_audited, est.n_population) == (15, 100)
    routes = est.by_route.set_index("route")
    assert routes.loc["generated", "estimate"] == pytest.approx(no)


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


def test_simulation_active_needs_at_most_half_the_audits_of_uniform_and_its_interval_covers() -> None:
    """On a population with known errors (errors concentrated in No and Abstain verdicts), fixed seeds."""
    table = compare("concentrated", target_width=0.04, seeds=range(4), batch=10)
    total = table.set_index("seed").loc["total"]
    assert total["ratio"] == pytest.approx(total["active"] / total["uniform"])
    assert total["ratio"] <= 0.5, table.to_string()
    # the interval the active loop stops at must still cover the true error rate (95% intervals)
    assert table["covered"].iloc[:-1].sum() >= 3 and total["covered"] == table["covered"].iloc[:-1].sum()


def test_simulation_is_reproducible() -> None:
    items, truth = synthetic_population("concentrated", n_tasks=2, per_task=300, seed=3)
    pop = population(items, None, "sim")
    assert simulate(pop, truth, 0.08, seed=3) == simulate(pop, truth, 0.08, seed=3)
