"""Active auditing: which item verdicts to audit next so that the judge's error rate is known to a
target interval width with as few audits as possible, and when to stop.

The population is one judge's real item verdicts (the endpoint is the outcome itself), split into
estimation strata — by default route × raw verdict, where a judge's error rates differ most — and,
within a stratum, by task for selection (see below). Adding ``task`` to the estimation strata is
allowed (``by``), but every one of the many small strata then starts wholly unknown and needs audits
of its own before it stops dominating the variance; the simulation shows what that costs.

What is known of a verdict (`population`): an audited item verdict is an *error* when the auditors'
consensus (the verdict most of them hold, as in `audits.auditor_consensus`) differs from the judge's
raw verdict. Auditors who are split (the most common verdicts they hold tie) leave its truth open
between the tied verdicts: it counts as audited, with the chance that it is an error (the share of
the tied verdicts that differ from the judge's) and that chance's own variance. Given `verifier`
(the per-test truth of assertion items, `verifier_truth`), a verdict the verifier decides is known
without an audit (an auditors' consensus still wins over it, and it settles a tie); those verdicts
form strata of their own (" · verifier"), wholly known, so neither their error rate nor the triage
list that sends auditors to them carries over to the verdicts the verifier does not decide. The
error rate of those is estimated from the audits drawn at random among them: each audit records its
``selection`` (`models.AuditSelection`) — ``random`` when the auditor opened it from `propose`'s
proposals (a seeded random draw within its stratum), ``chosen`` when it came from the disagreement
list or browsing. A chosen audit is known (its verdict counts as what the auditors say) but is no
sample: the app steers auditors to likely errors, so counting it would inflate the stratum's rate.
Audits that record no selection (older projects, other tools) are taken as drawn at random; the
triage page and the report say how many there are.

Estimate (`estimate_error`): each stratum's error rate θ_h has a Jeffreys Beta(x + ½, n − x + ½)
posterior (`scipy.stats.beta`). The population's error rate is that of the finite population:
(the known errors + the errors among the N_h − n_h unaudited verdicts) / N — audited verdicts count
as they are, no posterior mean stands in for a known count — each stratum's unaudited errors
beta-binomial (`scipy.stats.betabinom`). The interval is the quantiles of the Beta with the mean and
variance of the part not known (split verdicts' own variance included), rescaled to the number of
verdicts not known: a single stratum of a large population gives the Jeffreys interval itself; it
never collapses at 0 errors (Beta(½, n + ½) keeps an upper tail); it is a point once every verdict
is known. Per route, the same over the route's strata.

Proposal (`propose`): greedy expected variance reduction — repeatedly give the next audit to the
stratum whose variance term drops most from one more audit at its current estimated rate (which is
Neyman allocation, n_h ∝ N_h S_h, built up one audit at a time); within the stratum each audit goes
to the task furthest below its proportional share of the stratum's audits (so tasks are represented
as in the population: implicit stratification by task, which never adds variance), and to a seeded
random unaudited item of that task. Stopping rule (`should_stop`): the overall interval,
and each route's when a route target is given, is at most the target width, or nothing is left to
audit.

`simulate` compares this with uniform random auditing on a population with known errors: both arms
use the same estimate and the same stopping rule, checked after every batch, so the ratio of their
audits is the proposals' gain alone. `compare` repeats it over seeds; `summarize` gives the ratio of
the audits summed over seeds, the spread of the per-seed ratios and how often each arm's final
interval covered the true error rate.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.stats import beta, betabinom

from ..models import ENDPOINT_ITEM_ID, UNRECORDED_SELECTION
from .audits import KEY, auditor_verdicts, verdict_votes
from .frames import require_columns
from .item_accuracy import assertion_truth

__all__ = ["PRIOR", "SCENARIOS", "SELECTION_RANK", "STRATA", "VERIFIER_STRATUM", "ErrorEstimate", "compare",
           "estimate_error", "estimate_history", "in_sample", "population", "propose", "should_stop", "simulate",
           "stratum_table", "summarize", "synthetic_population", "verifier_audits", "verifier_truth"]

STRATA = ("route", "verdict_raw")
PRIOR = 0.5
"""Jeffreys prior Beta(½, ½) of every stratum's error rate."""
SELECTION_RANK = {"random": 0, UNRECORDED_SELECTION: 1, "chosen": 2}
"""A verdict audited several times counts as drawn at random if any audit was (its inclusion was random)."""
VERIFIER_STRATUM = "verifier"
"""What the strata of the verdicts the verifier decides end with (``assertion · Yes · verifier``)."""


@dataclass(frozen=True)
class ErrorEstimate:
    """The error rate's estimate and interval, overall and per route, with the stratum table behind it."""

    estimate: float
    low: float
    high: float
    n_audited: int
    """Verdicts known: audited (at random or by choice) or decided by the verifier."""
    n_population: int
    by_route: pd.DataFrame
    """``route, estimate, low, high, width, n_audited, n_population``."""
    strata: pd.DataFrame
    """`stratum_table` of the population."""
    n_chosen: int = 0
    """Of `n_audited`, the audits chosen by hand (the disagreement list, browsing): known, but left out of the
    sample the error rate of the verdicts not known is estimated from."""

    @property
    def width(self) -> float:
        return self.high - self.low


def verifier_truth(items: pd.DataFrame, ctrf: pd.DataFrame | None) -> pd.DataFrame:
    """``trajectory_id, judge, item_id, truth``: each assertion item verdict the verifier's CTRF report decides
    (`item_accuracy.assertion_truth`) with the verdict it says is right; empty when it decides none."""
    if ctrf is None or not len(ctrf) or "verifier_refs" not in items.columns:
        return pd.DataFrame(columns=[*KEY, "truth"])
    truth = assertion_truth(items[items["item_id"] != ENDPOINT_ITEM_ID], ctrf)
    return truth.loc[truth["basis"] == "ctrf", [*KEY, "truth"]].drop_duplicates(KEY).reset_index(drop=True)


def _auditors(pop: pd.DataFrame, audits: pd.DataFrame) -> pd.DataFrame:
    """Per audited item verdict: ``consensus`` (the verdict most auditors hold; None when the most common tie),
    ``tied`` (those tied verdicts, sorted, when they tie; else None) and ``selection`` (`_selection_of`)."""
    held = auditor_verdicts(pop, audits)
    if held.empty:
        return pd.DataFrame(columns=[*KEY, "consensus", "tied", "selection"])
    out = verdict_votes(held)
    selection = held["selection"] if "selection" in held else pd.Series(UNRECORDED_SELECTION, index=held.index)
    rank = selection.map(SELECTION_RANK).fillna(SELECTION_RANK[UNRECORDED_SELECTION])
    best = held.assign(_rank=rank).groupby(KEY, sort=True)["_rank"].min()
    out["selection"] = out.set_index(KEY).index.map(best).map(dict(map(reversed, SELECTION_RANK.items()))).to_numpy()
    return out[[*KEY, "consensus", "tied", "selection"]]


def population(items: pd.DataFrame, audits: pd.DataFrame | None, judge: str, by: Sequence[str] = STRATA, *,
               verifier: pd.DataFrame | None = None) -> pd.DataFrame:
    """One judge's real item verdicts with ``stratum`` (the `by` values joined by " · ", then " · verifier" where
    `verifier` (`verifier_truth`) decides the verdict), ``source`` (``auditor``, ``verifier``, ``split`` or None),
    ``truth`` (the verdict known to be right, else None), ``tied`` (a split verdict's tied verdicts, else None),
    ``error`` (1.0 / 0.0 where the truth is known, a split verdict's chance of being an error, NaN when nothing
    is known), ``audited`` (something is known), ``selection`` (how an audited verdict came to be known: ``random``,
    ``chosen`` or ``unrecorded`` — `models.AuditSelection` — the most random of its audits; ``verifier``): see
    `drawn`."""
    require_columns(items, (*KEY, *by, "route", "verdict_raw", "task"), "items")
    pop = items[(items["judge"] == judge) & (items["item_id"] != ENDPOINT_ITEM_ID)].drop_duplicates(KEY)
    pop = pop[[*KEY, *dict.fromkeys([*by, "route", "verdict_raw", "task"])]].reset_index(drop=True)
    stratum = pop[by[0]].astype(str)
    for column in by[1:]:
        stratum = stratum + " · " + pop[column].astype(str)
    pop["stratum"] = stratum
    pop = pop.assign(consensus=None, tied=None, selection=None, verified=None)
    if audits is not None and len(audits):
        pop = pop.drop(columns=["consensus", "tied", "selection"]).merge(_auditors(pop, audits), on=KEY, how="left")
    if verifier is not None and len(verifier):
        pop = pop.drop(columns="verified").merge(verifier[[*KEY, "truth"]].rename(columns={"truth": "verified"}),
                                                 on=KEY, how="left")
        decided = pop["verified"].notna().to_numpy()
        pop.loc[decided, "stratum"] = pop.loc[decided, "stratum"] + f" · {VERIFIER_STRATUM}"
    consensus = pop["consensus"].notna()
    verified = pop["verified"].notna() & ~consensus
    split = pop["tied"].notna() & ~consensus & ~verified
    known = consensus | verified
    pop["source"] = pd.Series(np.select([consensus, verified, split], ["auditor", "verifier", "split"], ""),
                              index=pop.index, dtype=object).where(known | split, None)
    pop["truth"] = pop["consensus"].where(consensus, pop["verified"]).astype(object).where(known, None)
    pop["tied"] = pop["tied"].astype(object).where(split, None)
    chance = [float(np.mean([v != raw for v in tied])) if isinstance(tied, tuple) else np.nan
              for tied, raw in zip(pop["tied"], pop["verdict_raw"])]
    pop["error"] = np.where(known, (pop["truth"] != pop["verdict_raw"]).astype(float), chance)
    pop["audited"] = pop["error"].notna()
    pop["selection"] = pop["selection"].where(pop["source"].isin(["auditor", "split"]),
                                              np.where(pop["source"] == "verifier", VERIFIER_STRATUM, None))
    return pop.drop(columns=["consensus", "verified"])


def in_sample(pop: pd.DataFrame) -> np.ndarray:
    """Which verdicts of `pop` may estimate their stratum's error rate: the audited ones not ``chosen`` (drawn at
    random, of unrecorded selection, or decided by the verifier). Without a ``selection`` column, every audited
    verdict."""
    audited = pop["audited"].to_numpy(bool)
    if "selection" not in pop:
        return audited
    return audited & (pop["selection"] != "chosen").to_numpy()


def stratum_table(pop: pd.DataFrame) -> pd.DataFrame:
    """Per stratum: ``route, N``; ``n`` and ``errors``, the drawn verdicts (audited at random or unrecorded, or
    decided by the verifier) and their errors, the sample the error rate is estimated from (a split verdict counts
    its chance of being one); ``n_chosen`` and ``chosen_errors``, the verdicts audited by choice, known but no
    sample; ``n_split``, ``split_errors`` and ``split_var`` (every split verdict's chance and its own variance);
    the posterior ``rate`` and ``var`` of the stratum's error rate, ``fpc`` and weight ``W``."""
    error = np.nan_to_num(pop["error"].to_numpy(float))
    audited = pop["audited"].to_numpy(bool)
    drawn = in_sample(pop)
    split = (pop["source"] == "split").to_numpy() if "source" in pop else np.zeros(len(pop), dtype=bool)
    chosen = audited & ~drawn
    g = pop.assign(_d=drawn, _e=np.where(drawn, error, 0.0), _c=chosen, _ce=np.where(chosen, error, 0.0), _s=split,
                   _se=np.where(split, error, 0.0), _sv=np.where(split, error * (1 - error), 0.0)
                   ).groupby("stratum", sort=True)
    t = pd.DataFrame({"route": g["route"].first(), "N": g.size(), "n": g["_d"].sum().astype(int),
                      "errors": g["_e"].sum().astype(float), "n_chosen": g["_c"].sum().astype(int),
                      "chosen_errors": g["_ce"].sum().astype(float), "n_split": g["_s"].sum().astype(int),
                      "split_errors": g["_se"].sum().astype(float), "split_var": g["_sv"].sum().astype(float)})
    a, b = t["errors"] + PRIOR, t["n"] - t["errors"] + PRIOR
    t["rate"], t["var"] = beta.mean(a, b), beta.var(a, b)
    t["fpc"] = 1.0 - (t["n"] + t["n_chosen"]) / t["N"]
    t["W"] = t["N"] / t["N"].sum() if len(t) else t["N"]
    return t


def _interval(N: np.ndarray, n: np.ndarray, errors: np.ndarray, n_split: np.ndarray, split_errors: np.ndarray,
              split_var: np.ndarray, ci: float, n_chosen: np.ndarray | float = 0.0,
              chosen_errors: np.ndarray | float = 0.0) -> tuple[float, float, float]:
    """The finite-population estimate and interval of the error rate Σ errors / Σ N (see the module docstring),
    from per-stratum counts: the rate of the verdicts not known is estimated from the `n` drawn ones alone; the
    `n_chosen` audited by choice count only as what they are."""
    N, n, errors = np.asarray(N, dtype=float), np.asarray(n, dtype=float), np.asarray(errors, dtype=float)
    total = N.sum()
    a, b, m = errors + PRIOR, n - errors + PRIOR, N - n - n_chosen
    # errors of the verdicts whose truth is known, drawn or chosen
    fixed = float(errors.sum() + np.sum(chosen_errors) - np.sum(split_errors))
    mean = float(np.sum(split_errors) + (m * a / (a + b)).sum())  # of the errors among the verdicts not known
    var = float(np.sum(split_var) + np.where(m > 0, betabinom.var(m.astype(int), a, b), 0.0).sum())
    unknown = float(m.sum() + np.sum(n_split))
    estimate = (fixed + mean) / total
    if unknown <= 0 or var <= 0:
        return estimate, estimate, estimate
    mu, v = mean / unknown, var / unknown**2
    size = mu * (1 - mu) / v - 1  # a + b of the Beta with mean mu and variance v
    lo, hi = beta.ppf([(1 - ci) / 2, (1 + ci) / 2], max(mu * size, 1e-9), max((1 - mu) * size, 1e-9))
    return estimate, (fixed + unknown * lo) / total, (fixed + unknown * hi) / total


def _interval_of(t: pd.DataFrame, ci: float) -> tuple[float, float, float]:
    return _interval(t["N"].to_numpy(), t["n"].to_numpy(), t["errors"].to_numpy(), t["n_split"].to_numpy(),
                     t["split_errors"].to_numpy(), t["split_var"].to_numpy(), ci, t["n_chosen"].to_numpy(),
                     t["chosen_errors"].to_numpy())


def estimate_error(pop: pd.DataFrame, *, ci: float = 0.95) -> ErrorEstimate:
    """The finite-population estimate of the error rate and its interval (see the module docstring)."""
    t = stratum_table(pop)
    if t.empty:
        raise ValueError("no item verdicts to estimate an error rate over")
    mean, low, high = _interval_of(t, ci)
    routes = []
    for route, r in t.groupby("route", sort=True):
        m, lo, hi = _interval_of(r, ci)
        routes.append({"route": route, "estimate": m, "low": lo, "high": hi, "width": hi - lo,
                       "n_audited": int(r["n"].sum() + r["n_chosen"].sum()), "n_population": int(r["N"].sum())})
    return ErrorEstimate(mean, low, high, int(t["n"].sum() + t["n_chosen"].sum()), int(t["N"].sum()),
                         pd.DataFrame(routes), t, int(t["n_chosen"].sum()))


def _allocate(N: np.ndarray, n: np.ndarray, rate: np.ndarray, k: int,
              n_chosen: np.ndarray | None = None) -> list[int]:
    """The strata of the next `k` audits, in order, by greedy expected variance reduction (`n` drawn verdicts per
    stratum, `n_chosen` known by choice: no sample, but not left to audit either)."""
    N, n = N.astype(float), n.astype(float)
    fixed = np.zeros(len(N)) if n_chosen is None else np.asarray(n_chosen, dtype=float)
    W, left = N / N.sum(), N - n - fixed

    def term(m: np.ndarray) -> np.ndarray:
        # W² (1 − known/N) Var of Beta with the current mean and m observations: rate (1 − rate) / (m + 2·PRIOR + 1)
        return W**2 * (1 - (m + fixed) / N) * rate * (1 - rate) / (m + 2 * PRIOR + 1)

    planned = np.zeros(len(N))
    order: list[int] = []
    for _ in range(int(min(k, left.sum()))):
        gain = np.where(planned < left, term(n + planned) - term(n + planned + 1), -np.inf)
        h = int(np.argmax(gain))
        planned[h] += 1
        order.append(h)
    return order


def _pick(order: Sequence[int], strata: np.ndarray, tasks: np.ndarray, done: np.ndarray,
          rng: np.random.Generator) -> list[int]:
    """Positions of the audits `order` allocates: in each stratum the task furthest below its proportional share
    of the stratum's audits, then a random unaudited verdict of it (`strata`, `tasks`: codes per verdict)."""
    n_strata, n_tasks = int(strata.max()) + 1, int(tasks.max()) + 1
    size = np.zeros((n_strata, n_tasks))
    np.add.at(size, (strata, tasks), 1)
    have = np.zeros_like(size)
    np.add.at(have, (strata[done], tasks[done]), 1)
    done = done.copy()
    picks: list[int] = []
    for h in order:
        deficit = size[h] / size[h].sum() * (have[h].sum() + 1) - have[h]
        task = int(np.argmax(np.where(size[h] > have[h], deficit, -np.inf)))
        pick = int(rng.choice(np.flatnonzero((strata == h) & (tasks == task) & ~done)))
        done[pick] = True
        have[h, task] += 1
        picks.append(pick)
    return picks


def propose(pop: pd.DataFrame, k: int, *, seed: int = 0) -> pd.DataFrame:
    """The next `k` unaudited item verdicts to audit, in order, by greedy expected variance reduction."""
    t = stratum_table(pop)
    order = _allocate(t["N"].to_numpy(), t["n"].to_numpy(), t["rate"].to_numpy(), k, t["n_chosen"].to_numpy())
    tasks, _ = pd.factorize(pop["task"], sort=True)
    picks = _pick(order, t.index.get_indexer(pop["stratum"]), tasks, pop["audited"].to_numpy(bool),
                  np.random.default_rng(seed)) if order else []
    out = pop.iloc[picks][[*KEY, "stratum", "route", "verdict_raw"]].reset_index(drop=True)
    out.insert(0, "order", np.arange(1, len(out) + 1))
    return out


def _done(width: float, n_audited: int, n_population: int, target_width: float) -> bool:
    return n_audited >= n_population or width <= target_width


def should_stop(est: ErrorEstimate, target_width: float, *, route_width: float | None = None) -> bool:
    """Stop auditing: every interval asked for is at most its target width, or everything is audited."""
    ok = _done(est.width, est.n_audited, est.n_population, target_width)
    if route_width is not None and est.n_audited < est.n_population:
        ok = ok and bool((est.by_route["width"] <= route_width).all())
    return ok


def estimate_history(pop: pd.DataFrame, audits: pd.DataFrame, *, ci: float = 0.95, max_points: int = 200) -> pd.DataFrame:
    """The estimate and interval after each audit in the order audits arrived (``created_at``): ``n_audits,
    estimate, low, high, width`` (at most `max_points` evenly spaced steps, the last always included). What
    the audits do not decide (the verifier's truth) is known from the start.

    Each step's estimate is `estimate_error`'s, computed from per-stratum counts of what is known by then (the counts
    of `stratum_table`, kept as running sums): a full estimate per step took seconds at paper scale."""
    require_columns(audits, (*KEY, "created_at"), "audits")
    first = audits.sort_values("created_at", kind="stable").drop_duplicates(KEY, keep="first")
    by_audit = (pop["source"].isin(["auditor", "split"]) if "source" in pop else pop["audited"]).to_numpy(bool)
    order = pop[KEY].assign(_row=np.arange(len(pop)))[by_audit].merge(first[[*KEY, "created_at"]], on=KEY)
    seen = order.sort_values("created_at", kind="stable")["_row"].to_numpy()
    steps = np.unique(np.linspace(0, len(seen), min(max_points, len(seen) + 1)).round().astype(int))
    codes, strata = pd.factorize(pop["stratum"])
    error = np.nan_to_num(pop["error"].to_numpy(float))
    drawn = in_sample(pop)
    split = (pop["source"] == "split").to_numpy() if "source" in pop else np.zeros(len(pop), dtype=bool)
    chosen = pop["audited"].to_numpy(bool) & ~drawn
    # per verdict, what knowing it adds to its stratum: n, errors, n_chosen, chosen_errors, n_split, split_errors,
    # split_var (as `stratum_table` counts them)
    adds = np.column_stack([drawn, np.where(drawn, error, 0.0), chosen, np.where(chosen, error, 0.0), split,
                            np.where(split, error, 0.0), np.where(split, error * (1 - error), 0.0)]).astype(float)
    N = np.bincount(codes, minlength=len(strata)).astype(float)

    def counts(rows: np.ndarray) -> list[np.ndarray]:
        return [np.bincount(codes[rows], weights=adds[rows, c], minlength=len(strata)) for c in range(adds.shape[1])]

    base = counts(np.flatnonzero(pop["audited"].to_numpy(bool) & ~by_audit))
    rows = []
    for step in steps:
        n, errors, n_chosen, chosen_errors, n_split, split_errors, split_var = (
            b + a for b, a in zip(base, counts(seen[:step])))
        mean, low, high = _interval(N, n, errors, n_split, split_errors, split_var, ci, n_chosen, chosen_errors)
        rows.append({"n_audits": int(step), "estimate": mean, "low": low, "high": high, "width": high - low})
    return pd.DataFrame(rows, columns=["n_audits", "estimate", "low", "high", "width"])


def simulate(pop: pd.DataFrame, truth: np.ndarray, target_width: float, *, batch: int = 10, seed: int = 0,
             ci: float = 0.95) -> dict[str, float]:
    """Audits each arm needs to reach `target_width`, and the interval each stopped at (``active_low``…
    ``uniform_high``), to check that it covers the true error rate.

    `pop` is a population (see `population`; its audit columns are ignored) and `truth` each row's known
    error (0/1). Both arms reveal `batch` audits at a time and stop by the same rule (`should_stop`) on
    the same estimate (`estimate_error`, computed here from the stratum counts): the active arm audits
    what `propose` proposes, the uniform arm in one seeded random order.
    """
    truth = np.asarray(truth, dtype=float)
    strata, names = pd.factorize(pop["stratum"], sort=True)
    tasks, _ = pd.factorize(pop["task"], sort=True)
    N = np.bincount(strata, minlength=len(names)).astype(float)
    zero = np.zeros(len(names))

    def run(next_batch) -> tuple[int, float, float]:  # noqa: ANN001 - a closure over the arm's state
        done = np.zeros(len(pop), dtype=bool)
        while True:
            n = np.bincount(strata[done], minlength=len(names)).astype(float)
            errors = np.bincount(strata[done], weights=truth[done], minlength=len(names))
            _, low, high = _interval(N, n, errors, zero, zero, zero, ci)
            if _done(high - low, int(done.sum()), len(pop), target_width):
                return int(done.sum()), low, high
            done[next_batch(done, n, errors)] = True

    rng = np.random.default_rng(seed)

    def active(done: np.ndarray, n: np.ndarray, errors: np.ndarray) -> list[int]:
        rate = beta.mean(errors + PRIOR, n - errors + PRIOR)
        return _pick(_allocate(N, n, rate, batch), strata, tasks, done, rng)

    order = np.random.default_rng(seed).permutation(len(pop))

    def uniform(done: np.ndarray, n: np.ndarray, errors: np.ndarray) -> np.ndarray:
        k = int(done.sum())
        return order[k:k + batch]

    a, a_low, a_high = run(active)
    u, u_low, u_high = run(uniform)
    return {"active": a, "uniform": u, "active_low": a_low, "active_high": a_high, "uniform_low": u_low,
            "uniform_high": u_high}


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


def compare(scenario: str = "concentrated", *, target_width: float = 0.04, seeds: Sequence[int] = range(100),
            batch: int = 10, by: Sequence[str] = STRATA, ci: float = 0.95, **population_kw: int) -> pd.DataFrame:
    """`simulate` over several seeds (a fresh population each): ``seed, active, uniform, ratio``, the true
    error rate, each arm's final interval and whether it ``*_covered`` the truth; plus a ``total`` row whose
    ratio is Σ active / Σ uniform and whose ``*_covered`` count the seeds covered (`summarize` reads it all)."""
    rows = []
    for seed in seeds:
        items, truth = synthetic_population(scenario, seed=seed, **population_kw)
        got = simulate(population(items, None, "sim", by), truth, target_width, batch=batch, seed=seed, ci=ci)
        rate = truth.mean()
        rows.append({"seed": str(seed), "active": got["active"], "uniform": got["uniform"],
                     "ratio": got["active"] / got["uniform"], "true_rate": rate,
                     "active_low": got["active_low"], "active_high": got["active_high"],
                     "active_covered": got["active_low"] <= rate <= got["active_high"],
                     "uniform_low": got["uniform_low"], "uniform_high": got["uniform_high"],
                     "uniform_covered": got["uniform_low"] <= rate <= got["uniform_high"]})
    out = pd.DataFrame(rows, columns=["seed", "active", "uniform", "ratio", "true_rate", "active_low", "active_high",
                                      "active_covered", "uniform_low", "uniform_high", "uniform_covered"])
    total = {"seed": "total", "active": int(out["active"].sum()), "uniform": int(out["uniform"].sum()),
             "active_covered": int(out["active_covered"].sum()), "uniform_covered": int(out["uniform_covered"].sum())}
    total["ratio"] = total["active"] / total["uniform"]
    return pd.concat([out, pd.DataFrame([total])], ignore_index=True)


def summarize(table: pd.DataFrame) -> dict[str, float]:
    """The claim a `compare` table supports: ``n_seeds``; ``ratio`` (Σ active / Σ uniform audits); the per-seed
    ratios' ``ratio_min``, ``ratio_p05``, ``ratio_median``, ``ratio_p95``, ``ratio_max``; the mean audits of each
    arm; and each arm's ``*_coverage``, the share of seeds whose final interval covered the true error rate."""
    runs = table[table["seed"] != "total"]
    ratios = runs["ratio"].to_numpy(float)
    p05, median, p95 = np.quantile(ratios, [0.05, 0.5, 0.95])
    return {"n_seeds": len(runs), "ratio": float(runs["active"].sum() / runs["uniform"].sum()),
            "ratio_min": float(ratios.min()), "ratio_p05": float(p05), "ratio_median": float(median),
            "ratio_p95": float(p95), "ratio_max": float(ratios.max()), "active_mean": float(runs["active"].mean()),
            "uniform_mean": float(runs["uniform"].mean()),
            "active_coverage": float(runs["active_covered"].astype(bool).mean()),
            "uniform_coverage": float(runs["uniform_covered"].astype(bool).mean())}


def verifier_audits(verdicts: pd.DataFrame, picks: pd.DataFrame, *, rater: str = "simulated verifier") -> pd.DataFrame:
    """Simulated audits (an audits frame, ``is_simulated`` true) of the `picks` the verifier decides, answered
    with the verifier's truth: what an auditor who trusts the CTRF report would record; ``selection`` random (the
    picks are `propose`'s draws). `verdicts` is
    `triage.item_verdicts`; picks without a verifier truth are skipped."""
    known = picks[KEY].merge(verdicts[[*KEY, "verdict_raw", "verifier"]], on=KEY).dropna(subset=["verifier"])
    agree = known["verifier"] == known["verdict_raw"]
    return pd.DataFrame({**{k: known[k] for k in KEY}, "rater": rater, "agree": agree,
                         "verdict": known["verifier"].where(~agree, None),
                         "created_at": [f"simulated-{k:06d}" for k in range(len(known))], "is_simulated": True,
                         "selection": "random"},
                        columns=["trajectory_id", "judge", "item_id", "rater", "agree", "verdict", "created_at",
                                 "is_simulated", "selection"])
