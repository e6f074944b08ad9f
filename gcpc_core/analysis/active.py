"""Active auditing: which item verdicts to audit next so that the judge's error rate is known to a
target interval width with as few audits as possible, and when to stop.

The population is one judge's real item verdicts (the endpoint is the outcome itself), split into
estimation strata — by default route × raw verdict, where a judge's error rates differ most — and,
within a stratum, by task for selection (see below). Adding ``task`` to the estimation strata is
allowed (``by``), but every one of the many small strata then starts wholly unknown and needs audits
of its own before it stops dominating the variance; the simulation shows what that costs. An
audited item verdict is an *error* when the auditors' consensus (`audits.auditor_consensus`)
differs from the judge's raw verdict; split audits are not yet an observation.

Estimate (`estimate_error`): each stratum's error rate has a Jeffreys Beta(x + ½, n − x + ½)
posterior (`scipy.stats.beta`); the population's error rate is the stratum-weighted sum
Σ W_h θ_h, W_h = N_h / N, with mean Σ W_h E[θ_h] and variance Σ W_h² (1 − n_h/N_h) Var[θ_h]
(the finite-population factor: audited items are known). The interval is the normal interval of
that mean and variance, clipped to [0, 1]. A stratum nobody audited keeps the Beta(½, ½) prior, so
its whole weight is uncertain; fully audited strata contribute no variance. Per route, the same over
the route's strata.

Proposal (`propose`): greedy expected variance reduction — repeatedly give the next audit to the
stratum whose variance term drops most from one more audit at its current estimated rate (which is
Neyman allocation, n_h ∝ N_h S_h, built up one audit at a time); within the stratum each audit goes
to the task furthest below its proportional share of the stratum's audits (so tasks are represented
as in the population: implicit stratification by task, which never adds variance), and to a seeded
random unaudited item of that task. Stopping rule (`should_stop`): the overall interval,
and each route's when a route target is given, is at most the target width, or nothing is left to
audit.

`simulate` compares this with uniform random auditing (with its natural pooled estimator, the
same Jeffreys posterior over all audited items and the same finite-population factor) on a
population with known errors, counting the audits each needs to reach a target width.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.stats import beta, norm

from ..models import ENDPOINT_ITEM_ID
from .audits import KEY, auditor_consensus, auditor_verdicts
from .frames import require_columns

__all__ = ["PRIOR", "SCENARIOS", "STRATA", "ErrorEstimate", "compare", "estimate_error", "estimate_history", "population",
           "propose", "should_stop", "simulate", "stratum_table", "synthetic_population", "verifier_audits"]

STRATA = ("route", "verdict_raw")
PRIOR = 0.5
"""Jeffreys prior Beta(½, ½) of every stratum's error rate."""


@dataclass(frozen=True)
class ErrorEstimate:
    """The error rate's estimate and interval, overall and per route, with the stratum table behind it."""

    estimate: float
    low: float
    high: float
    n_audited: int
    n_population: int
    by_route: pd.DataFrame
    """``route, estimate, low, high, width, n_audited, n_population``."""
    strata: pd.DataFrame
    """`stratum_table` of the population."""

    @property
    def width(self) -> float:
        return self.high - self.low


def population(items: pd.DataFrame, audits: pd.DataFrame | None, judge: str, by: Sequence[str] = STRATA) -> pd.DataFrame:
    """One judge's real item verdicts with ``stratum`` (the `by` values joined by " · "), ``audited`` and
    ``error`` (1.0 / 0.0 where an auditor consensus exists, NaN otherwise)."""
    require_columns(items, (*KEY, *by, "route", "verdict_raw", "task"), "items")
    pop = items[(items["judge"] == judge) & (items["item_id"] != ENDPOINT_ITEM_ID)].drop_duplicates(KEY)
    pop = pop[[*KEY, *dict.fromkeys([*by, "route", "verdict_raw", "task"])]].reset_index(drop=True)
    pop["stratum"] = pop[list(by)].astype(str).agg(" · ".join, axis=1) if len(pop) else pd.Series(dtype=str)
    pop["error"] = np.nan
    if audits is not None and len(audits):
        consensus = auditor_consensus(auditor_verdicts(pop, audits)).dropna(subset=["consensus"])
        pop = pop.drop(columns="error").merge(consensus[[*KEY, "consensus"]], on=KEY, how="left")
        pop["error"] = np.where(pop["consensus"].isna(), np.nan, (pop["consensus"] != pop["verdict_raw"]).astype(float))
        pop = pop.drop(columns="consensus")
    pop["audited"] = pop["error"].notna()
    return pop


def stratum_table(pop: pd.DataFrame) -> pd.DataFrame:
    """Per stratum: ``route, N, n, errors``, the posterior ``rate`` and ``var``, ``fpc`` and weight ``W``."""
    g = pop.groupby("stratum", sort=True)
    t = pd.DataFrame({"route": g["route"].first(), "N": g.size(), "n": g["audited"].sum().astype(int),
                      "errors": g["error"].sum().astype(float)})
    a, b = t["errors"] + PRIOR, t["n"] - t["errors"] + PRIOR
    t["rate"], t["var"] = beta.mean(a, b), beta.var(a, b)
    t["fpc"] = 1.0 - t["n"] / t["N"]
    t["W"] = t["N"] / t["N"].sum() if len(t) else t["N"]
    return t


def _interval(t: pd.DataFrame, ci: float) -> tuple[float, float, float]:
    w = t["N"] / t["N"].sum()
    mean = float((w * t["rate"]).sum())
    sd = float(np.sqrt((w**2 * t["fpc"] * t["var"]).sum()))
    z = float(norm.ppf(0.5 + ci / 2))
    return mean, max(0.0, mean - z * sd), min(1.0, mean + z * sd)


def estimate_error(pop: pd.DataFrame, *, ci: float = 0.95) -> ErrorEstimate:
    """The stratified posterior estimate of the error rate (see the module docstring)."""
    t = stratum_table(pop)
    if t.empty:
        raise ValueError("no item verdicts to estimate an error rate over")
    mean, low, high = _interval(t, ci)
    routes = []
    for route, r in t.groupby("route", sort=True):
        m, lo, hi = _interval(r, ci)
        routes.append({"route": route, "estimate": m, "low": lo, "high": hi, "width": hi - lo,
                       "n_audited": int(r["n"].sum()), "n_population": int(r["N"].sum())})
    return ErrorEstimate(mean, low, high, int(t["n"].sum()), int(t["N"].sum()), pd.DataFrame(routes), t)


def propose(pop: pd.DataFrame, k: int, *, seed: int = 0) -> pd.DataFrame:
    """The next `k` unaudited item verdicts to audit, in order, by greedy expected variance reduction."""
    t = stratum_table(pop)
    n, N, rate, W = t["n"].to_numpy(float), t["N"].to_numpy(float), t["rate"].to_numpy(), t["W"].to_numpy()
    left = N - n

    def term(m: np.ndarray) -> np.ndarray:
        # W² (1 − m/N) Var of Beta with the current mean and m observations: rate (1 − rate) / (m + 2·PRIOR + 1)
        return W**2 * (1 - m / N) * rate * (1 - rate) / (m + 2 * PRIOR + 1)

    planned = np.zeros(len(t))
    order: list[int] = []
    for _ in range(int(min(k, left.sum()))):
        gain = np.where(planned < left, term(n + planned) - term(n + planned + 1), -np.inf)
        h = int(np.argmax(gain))
        planned[h] += 1
        order.append(h)
    rng = np.random.default_rng(seed)
    picks: list[int] = []
    taken = pd.Series(False, index=pop.index)
    for h in order:
        members = pop[pop["stratum"] == t.index[h]]
        size = members.groupby("task").size()
        done = members["audited"] | taken[members.index]
        have = done.groupby(members["task"]).sum()
        free = (~done).groupby(members["task"]).sum()
        deficit = (size / size.sum() * (done.sum() + 1) - have).where(free > 0)
        task = deficit.idxmax()
        choice = members.index[(members["task"] == task).to_numpy() & ~done.to_numpy()]
        pick = int(rng.choice(choice))
        taken[pick] = True
        picks.append(pick)
    out = pop.loc[picks, [*KEY, "stratum", "route", "verdict_raw"]].reset_index(drop=True)
    out.insert(0, "order", np.arange(1, len(out) + 1))
    return out


def should_stop(est: ErrorEstimate, target_width: float, *, route_width: float | None = None) -> bool:
    """Stop auditing: every interval asked for is at most its target width, or everything is audited."""
    if est.n_audited >= est.n_population:
        return True
    ok = est.width <= target_width
    if route_width is not None:
        ok = ok and bool((est.by_route["width"] <= route_width).all())
    return ok


def estimate_history(pop: pd.DataFrame, audits: pd.DataFrame, *, ci: float = 0.95, max_points: int = 200) -> pd.DataFrame:
    """The estimate and interval after each audit in the order audits arrived (``created_at``): ``n_audits,
    estimate, low, high, width`` (at most `max_points` evenly spaced steps, the last always included)."""
    require_columns(audits, (*KEY, "created_at"), "audits")
    first = audits.sort_values("created_at", kind="stable").drop_duplicates(KEY, keep="first")
    seen = pop[pop["audited"]].merge(first[[*KEY, "created_at"]], on=KEY).sort_values("created_at", kind="stable")
    steps = np.unique(np.linspace(0, len(seen), min(max_points, len(seen) + 1)).round().astype(int))
    rows = []
    for step in steps:
        known = pop[KEY].merge(seen.iloc[:step][KEY].assign(_k=True), on=KEY, how="left")["_k"].eq(True).to_numpy()
        partial = pop.assign(audited=known, error=np.where(known, pop["error"], np.nan))
        est = estimate_error(partial, ci=ci)
        rows.append({"n_audits": int(step), "estimate": est.estimate, "low": est.low, "high": est.high,
                     "width": est.width})
    return pd.DataFrame(rows, columns=["n_audits", "estimate", "low", "high", "width"])


def _pooled_width(errors: np.ndarray, n_population: int, ci: float) -> float:
    n, x = len(errors), float(errors.sum())
    var = beta.var(x + PRIOR, n - x + PRIOR) * (1 - n / n_population)
    mean = beta.mean(x + PRIOR, n - x + PRIOR)
    z = float(norm.ppf(0.5 + ci / 2))
    return min(1.0, mean + z * np.sqrt(var)) - max(0.0, mean - z * np.sqrt(var))


def simulate(pop: pd.DataFrame, truth: np.ndarray, target_width: float, *, batch: int = 10, seed: int = 0,
             ci: float = 0.95) -> dict[str, float]:
    """Audits needed to reach `target_width` by active selection and by uniform random selection, and the
    interval the active loop stopped at (``low``, ``high``), to check that it covers the truth.

    `pop` is a population (see `population`; its audit columns are ignored) and `truth` each row's
    known error (0/1). Active: propose `batch`, reveal their truth, re-estimate, until `should_stop`.
    Uniform: audit in one seeded random order, checking the pooled interval after every `batch`.
    """
    truth = np.asarray(truth, dtype=float)
    state = pop.assign(audited=False, error=np.nan)
    active = 0
    while True:
        est = estimate_error(state, ci=ci)
        if should_stop(est, target_width):
            break
        picks = propose(state, batch, seed=seed + active)
        index = state.reset_index().merge(picks[KEY], on=KEY)["index"].to_numpy()
        state.loc[index, "audited"] = True
        state.loc[index, "error"] = truth[index]
        active += len(index)
    order = np.random.default_rng(seed).permutation(len(pop))
    uniform = 0
    while uniform < len(pop) and _pooled_width(truth[order[:uniform]], len(pop), ci) > target_width:
        uniform = min(len(pop), uniform + batch)
    return {"active": active, "uniform": uniform, "low": est.low, "high": est.high}


SCENARIOS: dict[str, dict[tuple[str, str], tuple[float, float]]] = {
    "concentrated": {  # (route, raw verdict) → (share of item verdicts, error rate)
        ("assertion", "Yes"): (0.40, 0.005), ("assertion", "No"): (0.08, 0.10), ("assertion", "Abstain"): (0.04, 0.50),
        ("generated", "Yes"): (0.22, 0.01), ("generated", "No"): (0.06, 0.20), ("generated", "Abstain"): (0.04, 0.55),
        ("judge", "Yes"): (0.08, 0.03), ("judge", "No"): (0.04, 0.30), ("judge", "Abstain"): (0.04, 0.60),
    },
    "spread": {
        ("assertion", "Yes"): (0.35, 0.01), ("assertion", "No"): (0.10, 0.08), ("assertion", "Abstain"): (0.05, 0.30),
        ("generated", "Yes"): (0.20, 0.02), ("generated", "No"): (0.08, 0.15), ("generated", "Abstain"): (0.04, 0.40),
        ("judge", "Yes"): (0.10, 0.05), ("judge", "No"): (0.05, 0.25), ("judge", "Abstain"): (0.03, 0.45),
    },
}
"""Simulation scenarios: a judge that rarely errs on grounded Yes and mostly on No and Abstain
("concentrated"), and one whose errors are spread more evenly ("spread"). Stratification gains with
how unevenly errors are spread, so both are reported."""


def synthetic_population(scenario: str = "concentrated", *, n_tasks: int = 6, per_task: int = 900,
                         seed: int = 0) -> tuple[pd.DataFrame, np.ndarray]:
    """A population of one judge's item verdicts with known errors drawn from a `SCENARIOS` entry:
    ``(items, truth)``, items with ``trajectory_id, judge, item_id, task, route, verdict_raw``."""
    cells = SCENARIOS[scenario]
    keys = list(cells)
    share = np.array([cells[k][0] for k in keys])
    rate = np.array([cells[k][1] for k in keys])
    rng = np.random.default_rng(seed)
    cell = rng.choice(len(keys), size=n_tasks * per_task, p=share / share.sum())
    task = np.repeat(np.arange(n_tasks), per_task)
    j = np.tile(np.arange(per_task), n_tasks)
    items = pd.DataFrame({"trajectory_id": [f"task{t}-T{k // 10}" for t, k in zip(task, j)], "judge": "sim",
                          "item_id": [f"I{k % 10}" for k in j], "task": [f"task{t}" for t in task],
                          "route": [keys[c][0] for c in cell], "verdict_raw": [keys[c][1] for c in cell]})
    return items, (rng.random(len(cell)) < rate[cell]).astype(float)


def compare(scenario: str = "concentrated", *, target_width: float = 0.04, seeds: Sequence[int] = range(5),
            batch: int = 10, by: Sequence[str] = STRATA, **population_kw: int) -> pd.DataFrame:
    """`simulate` over several seeds (a fresh population each): ``seed, active, uniform, ratio``, the true
    error rate, the active loop's final interval and whether it ``covered`` the truth; plus a ``total`` row
    whose ratio is Σ active / Σ uniform and whose ``covered`` counts the seeds covered."""
    rows = []
    for seed in seeds:
        items, truth = synthetic_population(scenario, seed=seed, **population_kw)
        got = simulate(population(items, None, "sim", by), truth, target_width, batch=batch, seed=seed)
        rows.append({"seed": str(seed), "active": got["active"], "uniform": got["uniform"],
                     "ratio": got["active"] / got["uniform"], "true_rate": truth.mean(), "low": got["low"],
                     "high": got["high"], "covered": got["low"] <= truth.mean() <= got["high"]})
    out = pd.DataFrame(rows, columns=["seed", "active", "uniform", "ratio", "true_rate", "low", "high", "covered"])
    total = {"seed": "total", "active": int(out["active"].sum()), "uniform": int(out["uniform"].sum()),
             "covered": int(out["covered"].sum())}
    total["ratio"] = total["active"] / total["uniform"]
    return pd.concat([out, pd.DataFrame([total])], ignore_index=True)


def verifier_audits(verdicts: pd.DataFrame, picks: pd.DataFrame, *, rater: str = "simulated verifier") -> pd.DataFrame:
    """Simulated audits (an audits frame, ``is_simulated`` true) of the `picks` the verifier decides, answered
    with the verifier's truth: what an auditor who trusts the CTRF report would record. `verdicts` is
    `triage.item_verdicts`; picks without a verifier truth are skipped."""
    known = picks[KEY].merge(verdicts[[*KEY, "verdict_raw", "verifier"]], on=KEY).dropna(subset=["verifier"])
    agree = known["verifier"] == known["verdict_raw"]
    return pd.DataFrame({**{k: known[k] for k in KEY}, "rater": rater, "agree": agree,
                         "verdict": known["verifier"].where(~agree, None),
                         "created_at": [f"simulated-{k:06d}" for k in range(len(known))], "is_simulated": True},
                        columns=["trajectory_id", "judge", "item_id", "rater", "agree", "verdict", "created_at",
                                 "is_simulated"])
