"""Judge calibration against auditors and the verifier, and audited figures, on data with known answers."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score, precision_recall_fscore_support

from gcpc_core.analysis import build_report, calibration
from gcpc_core.analysis.active import verifier_truth
from gcpc_core.analysis.audits import auditor_consensus, auditor_verdicts
from gcpc_core.analysis.bootstrap import draw_clusters, percentile_ci
from gcpc_core.analysis.calibration import (
    STATS,
    audited_figures,
    audited_items,
    calibration_table,
    draw_unaudited_verdicts,
    figure_error_intervals,
    reference_labels,
    rescore,
    table_stats,
)

T = "test_outputs.py::TestX::"


def audit(traj: str, item: str, rater: str, agree: bool, verdict: str | None = None, judge: str = "gcpc") -> dict:
    return {"trajectory_id": traj, "judge": judge, "item_id": item, "rater": rater, "agree": agree,
            "verdict": verdict, "created_at": "2026-01-01T00:00:00Z", "is_simulated": False}


def sklearn_stats(truth: pd.Series | np.ndarray, pred: pd.Series | np.ndarray) -> np.ndarray:
    """`STATS` by scikit-learn, over items the reference calls Yes or No: the reference the table-count formulas
    of `table_stats` must equal."""
    truth, pred = np.asarray(truth, dtype=object), np.asarray(pred, dtype=object)
    binary = pred != "Abstain"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        p, r, _, _ = (precision_recall_fscore_support(truth[binary], pred[binary], labels=["Yes", "No"],
                                                      zero_division=np.nan) if binary.any() else ([np.nan] * 2,) * 4)
        _, r_all, _, _ = precision_recall_fscore_support(truth, pred, labels=["Yes", "No"], zero_division=np.nan)
        kappa = cohen_kappa_score(truth[binary], pred[binary], labels=["Yes", "No"]) if binary.any() else np.nan
    abstain = [np.mean(pred[truth == c] == "Abstain") if (truth == c).any() else np.nan for c in ("Yes", "No")]
    return np.array([p[0], r[0], r_all[0], abstain[0], p[1], r[1], r_all[1], abstain[1], kappa], dtype=float)


def table_of(truth: np.ndarray, pred: np.ndarray) -> np.ndarray:
    return np.array([np.sum((truth == t) & (pred == j)) for t in ("Yes", "No") for j in ("Yes", "No", "Abstain")])


def test_table_stats_by_hand() -> None:
    # reference × judge: Yes: 8 Yes, 2 No, 5 Abstain; No: 1 Yes, 9 No, 10 Abstain
    got = dict(zip(STATS, table_stats(np.array([8, 2, 5, 1, 9, 10]))))
    assert got["precision_yes"] == pytest.approx(8 / 9) and got["recall_yes"] == pytest.approx(8 / 10)
    assert got["precision_no"] == pytest.approx(9 / 11) and got["recall_no"] == pytest.approx(9 / 10)
    # the judge's Abstains counted as misses, and how often it abstained on each class
    assert got["recall_yes_all"] == pytest.approx(8 / 15) and got["abstain_yes"] == pytest.approx(5 / 15)
    assert got["recall_no_all"] == pytest.approx(9 / 20) and got["abstain_no"] == pytest.approx(10 / 20)
    # p_o = 17/20, p_e = (10·9 + 10·11)/400 = 1/2 → κ = (0.85 − 0.5)/0.5
    assert got["kappa"] == pytest.approx(0.7)
    undefined = dict(zip(STATS, table_stats(np.array([5, 0, 0, 0, 0, 0]))))
    assert undefined["precision_yes"] == 1.0 and np.isnan(undefined["precision_no"]) and np.isnan(undefined["kappa"])
    assert np.isnan(table_stats(np.zeros(6))).all()


def test_table_stats_equal_sklearn_on_random_tables() -> None:
    """The count formulas give scikit-learn's values on every table, degenerate ones included."""
    rng = np.random.default_rng(0)
    tables, expected = [], []
    for k in range(300):
        n = int(rng.integers(1, 12))
        q = [0.0, 1.0, rng.random()][k % 3]
        truth = rng.choice(["Yes", "No"], n, p=[q, 1 - q])
        pred = rng.choice(["Yes", "No", "Abstain"], n, p=rng.dirichlet(np.ones(3) * (0.3 if k % 2 else 3)))
        tables.append(table_of(truth, pred))
        expected.append(sklearn_stats(truth, pred))
    got = table_stats(np.array(tables))
    np.testing.assert_allclose(got, np.array(expected), rtol=1e-12, atol=1e-12, equal_nan=True)


ITEMS = pd.DataFrame([
    # traj, task, item, route, raw, refs
    ("t1", "a", "C1", "assertion", "Yes", [T + "p"]),   # CTRF passed → verifier Yes (judge right)
    ("t1", "a", "C2", "assertion", "Yes", [T + "f"]),   # CTRF failed → verifier No (judge wrong)
    ("t1", "a", "C3", "generated", "No", []),            # auditors: bob agrees, carol says Yes → split
    ("t1", "a", "C4", "judge", "Abstain", []),           # auditor: Yes (judge abstained)
    ("t2", "b", "C1", "assertion", "No", [T + "f"]),    # CTRF failed → verifier No (right); auditor agrees
    ("t2", "b", "C2", "generated", "Yes", []),           # auditor: No
    ("t2", "b", "ENDPOINT", "endpoint", "No", []),       # never labelled
], columns=["trajectory_id", "task", "item_id", "route", "verdict_raw", "verifier_refs"]).assign(judge="gcpc")
CTRF = pd.DataFrame({"trajectory_id": ["t1", "t1", "t2"], "test": [T + "p", T + "f", T + "f"],
                     "status": ["passed", "failed", "failed"]})
AUDITS = pd.DataFrame([
    audit("t1", "C3", "bob", True), audit("t1", "C3", "carol", False, "Yes"),
    audit("t1", "C4", "bob", False, "Yes"),
    audit("t2", "C1", "bob", True),
    audit("t2", "C2", "bob", False, "No"), audit("t2", "C2", "carol", False, "No"),
    audit("t9", "C1", "bob", True),  # an item verdict that no longer exists
])


def test_consensus_majority_and_split() -> None:
    c = auditor_consensus(auditor_verdicts(ITEMS, AUDITS)).set_index(["trajectory_id", "item_id"])
    assert ("t9", "C1") not in c.index
    assert c.loc[("t1", "C3"), "split"] and pd.isna(c.loc[("t1", "C3"), "consensus"])
    assert c.loc[("t1", "C3"), "auditors"] == "bob: No; carol: Yes"
    assert c.loc[("t2", "C2"), "consensus"] == "No" and not c.loc[("t2", "C2"), "split"]
    assert c.loc[("t2", "C1"), "consensus"] == "No"  # agreeing holds the raw verdict


def test_reference_labels_and_calibration_counts() -> None:
    labels = reference_labels(ITEMS, CTRF, AUDITS)
    got = {(r.reference, r.trajectory_id, r.item_id): r.truth for r in labels.itertuples()}
    assert got == {("verifier", "t1", "C1"): "Yes", ("verifier", "t1", "C2"): "No", ("verifier", "t2", "C1"): "No",
                   ("auditor", "t1", "C4"): "Yes", ("auditor", "t2", "C1"): "No", ("auditor", "t2", "C2"): "No"}
    table = calibration_table(labels, ("judge", "reference"), n_boot=50).set_index("reference")
    v = table.loc["verifier"]
    assert (v["n"], v["yes_yes"], v["no_yes"], v["no_no"], v["yes_no"]) == (3, 1, 1, 1, 0)
    assert v["precision_yes"] == pytest.approx(0.5) and v["recall_no"] == pytest.approx(0.5)
    assert v["precision_no"] == 1.0 and v["recall_yes"] == 1.0
    a = table.loc["auditor"]
    assert (a["n_labelled"], a["n_judge_abstain"], a["n"], a["no_no"], a["no_yes"]) == (3, 1, 2, 1, 1)
    # t1 C4: the auditor says Yes where the judge abstained — no recall without Abstain, a miss with it
    assert a["yes_abstain"] == 1 and np.isnan(a["recall_yes"]) and a["recall_yes_all"] == 0.0
    assert a["abstain_yes"] == 1.0 and a["abstain_no"] == 0.0 and a["recall_no_all"] == a["recall_no"] == 0.5
    assert a["note"] == "κ undefined: one class only on both sides" or np.isfinite(a["kappa"])
    by_route = calibration_table(labels, ("judge", "reference", "route"), n_boot=20)
    assert set(map(tuple, by_route[["reference", "route"]].to_numpy())) == {
        ("auditor", "assertion"), ("auditor", "generated"), ("auditor", "judge"), ("verifier", "assertion")}
    assert by_route.set_index(["reference", "route"]).loc[("auditor", "judge"), "note"].startswith("no item verdict")


def test_recall_with_and_without_the_judges_abstains() -> None:
    """Recall of No leaves the judge's Abstains out (15 of 23 decided) or counts them as misses (15 of 42),
    and the Abstain rate of each class stands beside them."""
    truth = ["No"] * 42 + ["Yes"] * 30
    pred = ["No"] * 15 + ["Yes"] * 8 + ["Abstain"] * 19 + ["Yes"] * 27 + ["Abstain"] * 3
    labels = pd.DataFrame({"judge": "probe", "reference": "verifier", "task": [f"t{k % 6}" for k in range(72)],
                           "trajectory_id": [f"r{k % 18}" for k in range(72)], "truth": truth, "verdict_raw": pred})
    row = calibration_table(labels, n_boot=200).iloc[0]
    assert row["recall_no"] == pytest.approx(15 / 23) and row["recall_no_all"] == pytest.approx(15 / 42)
    assert row["abstain_no"] == pytest.approx(19 / 42) and row["abstain_yes"] == pytest.approx(3 / 30)
    assert row["recall_yes_all"] == pytest.approx(27 / 30) and row["recall_yes"] == 1.0
    assert row["recall_no_all_low"] <= row["recall_no_all"] <= row["recall_no_all_high"] < row["recall_no"]


def test_bootstrap_interval_replays_sklearn_on_resampled_tasks() -> None:
    rng = np.random.default_rng(3)
    n = 120
    labels = pd.DataFrame({"judge": "gcpc", "reference": "verifier", "task": rng.integers(0, 8, n).astype(str),
                           "trajectory_id": rng.integers(0, 30, n).astype(str),
                           "truth": rng.choice(["Yes", "No"], n, p=[0.6, 0.4])})
    flip = rng.random(n) < 0.2
    labels["verdict_raw"] = np.where(flip, np.where(labels["truth"] == "Yes", "No", "Yes"), labels["truth"])
    labels.loc[rng.random(n) < 0.1, "verdict_raw"] = "Abstain"
    n_boot, seed = 60, 4
    row = calibration_table(labels, n_boot=n_boot, seed=seed).iloc[0]
    codes, tasks = pd.factorize(labels["task"])
    draws = []
    for draw in draw_clusters(len(tasks), n_boot, seed):
        sample = pd.concat([labels[codes == c] for c in draw])
        draws.append(sklearn_stats(sample["truth"], sample["verdict_raw"]))
    low, high, _ = percentile_ci(np.array(draws).T)
    for k, name in enumerate(STATS):
        assert row[f"{name}_low"] == pytest.approx(low[k]) and row[f"{name}_high"] == pytest.approx(high[k])
    np.testing.assert_allclose(row[list(STATS)].to_numpy(float), sklearn_stats(labels["truth"], labels["verdict_raw"]))


def figure_project() -> tuple[pd.DataFrame, pd.DataFrame]:
    """Two tasks, each a with/without-skills pair; the without side FAILs, items known."""
    rows, scores = [], []
    for task in ("a", "b"):
        for condition, outcome in (("with-skills", "PASS"), ("without-skills", "FAIL")):
            traj = f"{task}-{condition}"
            scores.append({"trajectory_id": traj, "task": task, "judge": "gcpc", "outcome": outcome,
                           "condition": condition, "agent": "ag", "model": "m", "trial_index": 0})
            for item, route, raw in (("C1", "assertion", "Yes"), ("C2", "generated", "No"), ("C3", "generated", "Yes")):
                rows.append({"trajectory_id": traj, "task": task, "judge": "gcpc", "item_id": item, "route": route,
                             "verdict_raw": raw, "verdict": raw, "outcome": outcome, "condition": condition})
    return pd.DataFrame(rows), pd.DataFrame(scores).assign(partial_credit=np.nan)


def test_audited_figures_apply_consensus_and_count_overrides() -> None:
    items, scores = figure_project()
    audits = pd.DataFrame([
        audit("a-without-skills", "C2", "bob", False, "Yes"),   # FAIL side: 2/4 → 3/4
        audit("a-with-skills", "C1", "bob", False, "No"),       # PASS propagation sets it back to Yes: no change
        audit("b-with-skills", "C3", "bob", True),               # agreement: no override
    ])
    corrected, overrides = audited_items(items, audits)
    assert len(overrides) == 2 and set(overrides["truth"]) == {"Yes", "No"} and set(overrides["source"]) == {"auditor"}
    assert corrected.set_index(["trajectory_id", "item_id"]).loc[("a-without-skills", "C2"), "verdict_raw"] == "Yes"
    fig, _ = audited_figures(items, scores, audits, n_boot=50)
    f = fig.set_index(["figure", "group"])
    # `known`: the corrections applied, the unaudited verdicts as judged; raw: with side 2/3 (PASS: C1 Yes, C2 No, C3 Yes), without side 2/4 (endpoint No)
    assert f.loc[("mean_partial_credit", "with-skills"), "raw"] == pytest.approx(2 / 3)
    assert f.loc[("mean_partial_credit", "with-skills"), "known"] == pytest.approx(2 / 3)
    assert f.loc[("mean_partial_credit", "without-skills"), "raw"] == pytest.approx(0.5)
    assert f.loc[("mean_partial_credit", "without-skills"), "known"] == pytest.approx((0.75 + 0.5) / 2)
    # Δ per pair: raw 2/3 − 1/2 = 0.167 > 0.1 for both; audited task a: 2/3 − 3/4 < 0 (not regressing by > 0.1)
    assert f.loc[("share_improving", "FAIL→PASS"), "raw"] == 1.0
    assert f.loc[("share_improving", "FAIL→PASS"), "known"] == 0.5
    assert (fig["n_overrides"] == 2).all()
    assert f.loc[("auc", "all"), "raw"] == 1.0


def test_report_shows_calibration_and_audited_figures(tmp_path: Path) -> None:
    items, scores = figure_project()
    audits = pd.DataFrame([audit("a-without-skills", "C2", "bob", False, "Yes")])
    scores = rescore(items, scores)
    result = build_report({"items": items, "scores": scores, "audits": audits}, tmp_path,
                          n_boot=30, figures=False)
    assert {"calibration", "calibration_by_route", "audited_figures", "audit_overrides"} <= set(result.csv)
    assert len(result.tables["audit_overrides"]) == 1
    assert "Judge calibration and audited figures" in result.markdown.read_text()
    bare = build_report({"items": items, "scores": scores}, tmp_path / "bare", n_boot=30,
                        figures=False)
    assert "audited_figures" not in bare.tables and "calibration" not in bare.tables
    assert any("no item verdict is labelled yet" in m for m in bare.missing)


def _agreeing(items: pd.DataFrame, keep_open: frozenset[tuple[str, str]] = frozenset()) -> pd.DataFrame:
    return pd.DataFrame([audit(r.trajectory_id, r.item_id, "bob", True) for r in items.itertuples()
                         if (r.trajectory_id, r.item_id) not in keep_open])


def test_judge_error_interval_of_one_open_verdict_by_hand() -> None:
    """Everything audited and right except a-without-skills C3 (generated, Yes, FAIL side): its stratum has
    3 audited verdicts and no error, so it is wrong with probability E[Beta(½, 3½)] = 1/8, then No or
    Abstain alike (no correction seen). The FAIL side's mean partial credit is (2/4 + 2/4)/2 as judged,
    (1/4 + 2/4)/2 if it is No, (1/3 + 2/4)/2 if Abstain."""
    items, scores = figure_project()
    audits = _agreeing(items, frozenset({("a-without-skills", "C3")}))
    verdicts, base, n_open, n_split = draw_unaudited_verdicts(items, audits, "gcpc", 4000, np.random.default_rng(1))
    assert (n_open, n_split) == (1, 0)
    col = base.index[(base["trajectory_id"] == "a-without-skills") & (base["item_id"] == "C3")][0]
    drawn = pd.Series(verdicts[:, col]).value_counts(normalize=True)
    assert drawn["Yes"] == pytest.approx(7 / 8, abs=0.02)
    assert drawn["No"] == pytest.approx(1 / 16, abs=0.015) and drawn["Abstain"] == pytest.approx(1 / 16, abs=0.015)
    others = np.delete(verdicts, col, axis=1)
    assert (others == base["verdict_raw"].drop(index=col).to_numpy()).all()  # audited verdicts never move
    fig, _ = audited_figures(items, scores, audits, n_boot=20, error_draws=2000)
    f = fig.set_index(["figure", "group"])
    row = f.loc[("mean_partial_credit", "without-skills")]
    assert (row["error_low"], row["error_high"]) == (pytest.approx((1 / 4 + 2 / 4) / 2), pytest.approx(0.5))
    assert row["audited"] == 0.5  # the draws' median: the verdict is most likely right
    assert f.loc[("mean_partial_credit", "with-skills"), "error_width"] == 0.0  # nothing open on that side
    assert (fig["n_unaudited"] == 1).all()


def test_judge_error_interval_shrinks_as_audits_arrive_and_vanishes_when_all_are_audited() -> None:
    items, scores = figure_project()
    real = items[items["item_id"] != "ENDPOINT"]
    widths = []
    for n in (0, 6, 12):
        audits = _agreeing(real.iloc[:n]) if n else None
        fig, _ = audited_figures(items, scores, audits, n_boot=20, error_draws=400, seed=3)
        widths.append(fig.set_index(["figure", "group"]).loc[("mean_partial_credit", "without-skills"), "error_width"])
        if n == 12:
            assert (fig["error_width"] == 0).all() and (fig["error_low"] == fig["audited"]).all()
            assert (fig["n_unaudited"] == 0).all()
    assert widths[0] > widths[1] > widths[2] == 0.0
    again, _ = audited_figures(items, scores, None, n_boot=20, error_draws=400, seed=3)
    first, _ = audited_figures(items, scores, None, n_boot=20, error_draws=400, seed=3)
    pd.testing.assert_frame_equal(again, first)  # seeded
    bare, _ = audited_figures(items, scores, None, n_boot=20, error_draws=0)
    assert bare["error_width"].isna().all()


def test_per_task_bootstrap_is_computed_from_counts_once_per_row(monkeypatch: pytest.MonkeyPatch) -> None:
    """A per-task table at paper scale (85 tasks × 1,000 draws) took 158 s with one scikit-learn call per
    resampled table: every row's draws are now one `table_stats` call on their count tables."""
    from gcpc_core.analysis import calibration

    calls = []

    def counting(tables: np.ndarray) -> np.ndarray:
        calls.append(np.shape(tables))
        return table_stats(tables)

    monkeypatch.setattr(calibration, "table_stats", counting)
    rng = np.random.default_rng(5)
    n = 2000
    labels = pd.DataFrame({"judge": "gcpc", "reference": "verifier", "task": rng.integers(0, 40, n).astype(str),
                           "trajectory_id": rng.integers(0, 600, n).astype(str),
                           "truth": rng.choice(["Yes", "No"], n), "verdict_raw": rng.choice(["Yes", "No", "Abstain"], n)})
    table = calibration.calibration_table(labels, ("judge", "reference", "task"), n_boot=1000)
    assert len(table) == 40 and len(calls) == 2 * 40  # the point and the draws of each row
    assert sorted({c[0] for c in calls if len(c) == 2}) == [1000]


# ---- the audited figures' coverage, on projects with known truth -------------------------------------------
SIM_ROUTES = ("assertion", "assertion", "generated", "generated", "judge")
SIM_VERDICTS = np.array(["Yes", "No", "Abstain"], dtype=object)


def sim_design(n_tasks: int = 3, per_cell: int = 2, seed: int = 0) -> pd.DataFrame:
    """Trajectories: `per_cell` with and without Skills per task, outcomes at random (PASS likelier with)."""
    rng = np.random.default_rng(seed)
    rows = [{"trajectory_id": f"t{task}-{cond}-{k}", "task": f"task{task}", "condition": cond, "agent": "ag",
             "model": "m", "trial_index": k,
             "outcome": "PASS" if rng.random() < (0.6 if cond == "with-skills" else 0.35) else "FAIL"}
            for task in range(n_tasks) for cond in ("with-skills", "without-skills") for k in range(per_cell)]
    return pd.DataFrame(rows)


def sim_runs(traj: pd.DataFrame, n_runs: int, seed: int, *, audited: float = 0.3, verifier: bool = False,
             rates: tuple[float, float] = (0.02, 0.4), routes: tuple[str, ...] = SIM_ROUTES, aimed: float = 0.0,
             ) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """`n_runs` simulated judges over the same trajectories, each with its own error rate and replacement share per
    route × raw verdict, its raw verdicts, the true verdicts (wrong as often as its stratum's rate says, errors
    exchangeable within a stratum: what the audited figures assume) and audits of a random `audited` share of its
    verdicts. With `verifier`, every assertion item's truth is a CTRF result (the same for every run) and the
    audits go first to the verdicts the verifier contradicts, as triage steers auditors, then at random. With
    `aimed`, that share of the audits is chosen among the judge's errors (an auditor led to them by the
    disagreement list), recorded ``selection: chosen``, before the random ones (``random``).
    Returns (items, true items, audits, scores, ctrf)."""
    rng = np.random.default_rng(seed)
    k = len(routes)
    item_routes, routes = routes, np.tile(routes, len(traj))
    p_yes = np.repeat(np.where(traj["outcome"] == "PASS", 0.75, 0.45), k)
    tests = np.array([f"{T}t{i}" for i in range(k)], dtype=object)
    refs = [[str(tests[i])] if r == "assertion" else [] for i, r in enumerate(item_routes)] * len(traj)
    ctrf_truth = np.where(rng.random(len(routes)) < p_yes, "Yes", "No").astype(object)
    ctrf = pd.DataFrame({"trajectory_id": np.repeat(traj["trajectory_id"].to_numpy(), k), "test": np.tile(tests, len(traj)),
                         "status": np.where(ctrf_truth == "Yes", "passed", "failed")})[routes == "assertion"]
    items, true_items, audits = [], [], []
    for r in range(n_runs):
        cells = [(route, v) for route in sorted(set(item_routes)) for v in SIM_VERDICTS]
        rate = dict(zip(cells, rng.uniform(*rates, len(cells))))
        share = dict(zip(cells, rng.uniform(0, 1, len(cells))))
        u = rng.random(len(routes))
        raw = np.where(u < p_yes, "Yes", np.where(u < p_yes + (1 - p_yes) * 0.75, "No", "Abstain")).astype(object)
        alt = np.array([[v for v in SIM_VERDICTS if v != x] for x in raw], dtype=object)
        first = rng.random(len(raw)) < np.array([share[c] for c in zip(routes, raw)])
        wrong = rng.random(len(raw)) < np.array([rate[c] for c in zip(routes, raw)])
        truth = np.where(wrong, np.where(first, alt[:, 0], alt[:, 1]), raw)
        if verifier:
            truth = np.where(routes == "assertion", ctrf_truth, truth)
        frame = pd.DataFrame({"trajectory_id": np.repeat(traj["trajectory_id"].to_numpy(), k),
                              "task": np.repeat(traj["task"].to_numpy(), k), "judge": f"run{r}",
                              "item_id": np.tile([f"C{i}" for i in range(k)], len(traj)), "route": routes,
                              "verdict_raw": raw, "verdict": raw, "outcome": np.repeat(traj["outcome"].to_numpy(), k),
                              "verifier_refs": refs})
        items.append(frame)
        true_items.append(frame.assign(verdict_raw=truth))
        n_audits = int(audited * len(raw))
        order = rng.permutation(len(raw))
        if verifier:  # the verifier's contradictions first
            order = order[np.argsort(~((routes == "assertion") & (raw != ctrf_truth))[order], kind="stable")]
        n_aimed = min(int(aimed * n_audits), int((truth != raw).sum()))
        order = order[np.argsort(~np.isin(order, order[(truth != raw)[order]][:n_aimed]), kind="stable")]
        picks = order[:n_audits]
        agree = truth[picks] == raw[picks]
        audits.append(pd.DataFrame({"trajectory_id": frame["trajectory_id"].to_numpy()[picks], "judge": f"run{r}",
                                    "item_id": frame["item_id"].to_numpy()[picks], "rater": "r", "agree": agree,
                                    "verdict": np.where(agree, None, truth[picks]), "created_at": "2026",
                                    "is_simulated": False,
                                    "selection": np.where(np.arange(n_audits) < n_aimed, "chosen", "random")}))
    scores = pd.concat([traj.assign(judge=f"run{r}") for r in range(n_runs)], ignore_index=True)
    return (pd.concat(items, ignore_index=True), pd.concat(true_items, ignore_index=True),
            pd.concat(audits, ignore_index=True), scores.assign(partial_credit=np.nan), ctrf)


def coverage(n_runs: int, seed: int, design: dict | None = None, *, unrecorded: bool = False,
             **kw: object) -> pd.DataFrame:
    """Every figure of every simulated run: its judge-error interval, its audited value and the truth (`unrecorded`:
    the audits' selections dropped)."""
    items, true_items, audits, scores, ctrf = sim_runs(sim_design(**(design or {})), n_runs, seed, **kw)
    if unrecorded:
        audits = audits.drop(columns="selection")
    judges = [f"run{r}" for r in range(n_runs)]
    verifier = verifier_truth(items, ctrf) if kw.get("verifier") else None
    got = figure_error_intervals(items, scores, audits, judges, n_draws=200, seed=seed, verifier=verifier)
    full = rescore(true_items, scores)
    truth = calibration._figure_frame(full, calibration._draw_auc(full, judges), 0.10)  # what figure_values gives
    m = got.merge(truth[["judge", "figure", "group", "value"]], on=["judge", "figure", "group"])
    m["covered"] = (m["error_low"] <= m["value"]) & (m["value"] <= m["error_high"])
    return m


def test_audited_figures_lie_in_their_interval_which_covers_the_full_audit_95_percent_of_the_time() -> None:
    """200 seeded runs of 32 trajectories, 15 % of each run's verdicts audited at random, error rates 0.1–0.5: the
    audited figure is inside its own interval every time (the judged value was outside it in 9 % of runs for the
    mean partial credit, 3.5 % for the AUC), and the interval holds the figure a full audit gives in ≥ 93 % of runs
    for every kind of figure (AUC 0.915 and mean partial credit 0.905 before: shares drawn per item, interpolated
    quantiles)."""
    m = coverage(200, seed=11, design={"n_tasks": 4, "per_cell": 4}, audited=0.15, rates=(0.1, 0.5))
    assert ((m["error_low"] <= m["audited"]) & (m["audited"] <= m["error_high"])).all()
    by_figure = m.groupby("figure")["covered"].mean()
    assert (by_figure >= 0.93).all(), by_figure
    assert m.groupby("judge").size().min() >= 4  # AUC and both conditions' mean partial credit at least


def test_audits_chosen_among_errors_settle_their_verdicts_but_estimate_nothing() -> None:
    """Half of the audits chosen among the judge's errors (the disagreement list leads auditors to them), recorded
    as chosen, the rest drawn at random: the unaudited verdicts' error rate comes from the random audits alone, so
    the interval still holds the full audit's figure in ≥ 93 % of 200 runs. Taken as random draws (what every audit
    was before audits recorded their selection), the chosen ones inflate each stratum's error rate and the
    coverage falls well below."""
    kw = {"design": {"n_tasks": 4, "per_cell": 4}, "audited": 0.3, "rates": (0.05, 0.3), "aimed": 0.5}
    m = coverage(200, seed=13, **kw)
    assert ((m["error_low"] <= m["audited"]) & (m["audited"] <= m["error_high"])).all()
    by_figure = m.groupby("figure")["covered"].mean()
    assert (by_figure >= 0.93).all(), by_figure
    unrecorded = coverage(200, seed=13, unrecorded=True, **kw).groupby("figure")["covered"].mean()
    assert (unrecorded < by_figure - 0.05).any(), (unrecorded, by_figure)


def test_audits_aimed_at_the_verifiers_contradictions_do_not_bias_the_audited_interval() -> None:
    """The same with the verifier's per-test truth and the audits sent first to the verdicts it contradicts (as
    the triage list sends auditors): the verifier's verdicts are known and kept in strata of their own, so the
    aimed audits say nothing wrong about the rest, and the audited figure stays inside its interval (the judged
    value fell outside it in 3 % of runs for the mean partial credit)."""
    m = coverage(200, seed=12, verifier=True)
    assert ((m["error_low"] <= m["audited"]) & (m["audited"] <= m["error_high"])).all()
    by_figure = m.groupby("figure")["covered"].mean()
    assert (by_figure >= 0.93).all(), by_figure


def test_intervals_are_values_the_figure_can_take() -> None:
    """A share over 2 matched pairs is 0, ½ or 1 in every draw, so its audited value and bounds are too
    (interpolated quantiles reported such values as 0.5125 here, at 200 draws and seed 11)."""
    items, scores = figure_project()
    fig, _ = audited_figures(items, scores, None, n_boot=20, error_draws=200, seed=11)
    shares = fig[fig["figure"].str.startswith("share_") & (fig["n"] == 2)]
    assert len(shares) and shares[["audited", "error_low", "error_high"]].isin([0.0, 0.5, 1.0]).all().all()
    assert (shares["error_width"] > 0).any()


def test_the_replacement_share_is_drawn_once_per_stratum_and_draw() -> None:
    """400 generated Yes, 20 audited: 5 corrected to No, 5 to Abstain. In each draw the wrong verdicts of the
    stratum become No in one shared proportion ~ Beta(5½, 5½) (sd 0.14 across draws); drawn per item the
    proportion was ½ ± 0.04 in every draw, which understated the figures' uncertainty."""
    items = pd.DataFrame({"trajectory_id": [f"r{k // 4}" for k in range(400)], "task": "a", "judge": "gcpc",
                          "item_id": [f"C{k % 4}" for k in range(400)], "route": "generated", "verdict_raw": "Yes"})
    audits = pd.DataFrame([audit(f"r{k // 4}", f"C{k % 4}", "bob", k >= 10, None if k >= 10 else ["No", "Abstain"][k % 2])
                           for k in range(20)])
    verdicts, base, n_open, _ = draw_unaudited_verdicts(items, audits, "gcpc", 400, np.random.default_rng(0))
    open_ = verdicts[:, 20:]
    assert n_open == 380 and (base["item_id"].iloc[:20] == [f"C{k % 4}" for k in range(20)]).all()
    wrong = open_ != "Yes"
    share_no = (open_ == "No").sum(axis=1) / wrong.sum(axis=1)
    assert share_no.std() == pytest.approx(np.sqrt(1 / (4 * 12)), rel=0.2)
    assert wrong.mean() == pytest.approx(10.5 / 21, abs=0.03)  # the stratum's posterior error rate, Beta(10½, 10½)


def test_split_audits_enter_the_audited_figures_with_their_own_uncertainty() -> None:
    """Everything audited right except a-without-skills C2 (generated, No), on which two auditors split between
    No and Yes: it is Yes in about half the draws, so the FAIL side's mean partial credit lies between
    (2/4 + 2/4)/2 and (3/4 + 2/4)/2 (a split audit counted as unaudited inherited its stratum's 0 errors)."""
    items, scores = figure_project()
    audits = pd.concat([_agreeing(items, frozenset({("a-without-skills", "C2")})),
                        pd.DataFrame([audit("a-without-skills", "C2", "bob", True),
                                      audit("a-without-skills", "C2", "carol", False, "Yes")])], ignore_index=True)
    verdicts, base, n_open, n_split = draw_unaudited_verdicts(items, audits, "gcpc", 2000, np.random.default_rng(2))
    assert (n_open, n_split) == (0, 1)
    col = base.index[(base["trajectory_id"] == "a-without-skills") & (base["item_id"] == "C2")][0]
    assert (verdicts[:, col] == "Yes").mean() == pytest.approx(0.5, abs=0.04)
    fig, _ = audited_figures(items, scores, audits, n_boot=20, error_draws=400)
    row = fig.set_index(["figure", "group"]).loc[("mean_partial_credit", "without-skills")]
    assert (row["error_low"], row["error_high"]) == (pytest.approx(0.5), pytest.approx(0.625))
    assert row["n_split"] == 1 and row["n_unaudited"] == 0 and row["known"] == pytest.approx(0.5)


def test_the_verifiers_truth_enters_the_audited_figures_as_audit_evidence() -> None:
    """No human audit: the verifier's CTRF status corrects a-without-skills C1 (its test failed, the judge said
    Yes) and confirms the other assertion items, which are then known; the rest stay open."""
    items, scores = figure_project()
    items = items.assign(verifier_refs=[[T + "c1"] if r == "assertion" else [] for r in items["route"]])
    ctrf = pd.DataFrame({"trajectory_id": ["a-with-skills", "a-without-skills", "b-with-skills", "b-without-skills"],
                         "test": T + "c1", "status": ["passed", "failed", "passed", "passed"]})
    fig, overrides = audited_figures(items, scores, None, n_boot=20, error_draws=200, ctrf=ctrf)
    assert overrides[["trajectory_id", "item_id", "truth", "source"]].values.tolist() == [
        ["a-without-skills", "C1", "No", "verifier"]]
    f = fig.set_index(["figure", "group"])
    # FAIL side, task a: C1 No, C2 No, C3 Yes, endpoint No → 1/4; task b as judged, 2/4
    assert f.loc[("mean_partial_credit", "without-skills"), "known"] == pytest.approx((1 / 4 + 2 / 4) / 2)
    assert (fig["n_unaudited"] == 8).all() and (fig["n_overrides"] == 1).all()
    bare, _ = audited_figures(items, scores, None, n_boot=20, error_draws=200)
    assert bare.set_index(["figure", "group"]).loc[("mean_partial_credit", "without-skills"), "known"] == 0.5
