"""`analysis.compare` on constructed frames with answers worked out by hand: the two runs' AUCs and their
paired ΔAUC, the raw-verdict agreement and Cohen's κ, the cross-table and the differing items."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from gcpc_core.analysis.compare import compare_runs, run_key
from gcpc_core.analysis.discrimination import bootstrap_auc, delta_auc_table

A = ("gcpc", "model-a")
B = ("gcpc", "model-b")


def _scores() -> pd.DataFrame:
    """Two tasks, 4 PASS and 4 FAIL. Run A ranks every PASS above every FAIL (AUC 1). Run B puts one FAIL
    (t2-f1, 0.9) above two PASS (0.5, 0.6) and one FAIL (t1-f1, 0.55) above one PASS (0.5): 13 of the
    16 PASS–FAIL pairs ordered right, AUC 13/16 = 0.8125. A trajectory only A scored is left out."""
    outcome = {"t1-p1": "PASS", "t1-p2": "PASS", "t1-f1": "FAIL", "t1-f2": "FAIL",
               "t2-p1": "PASS", "t2-p2": "PASS", "t2-f1": "FAIL", "t2-f2": "FAIL"}
    a = {"t1-p1": 0.9, "t1-p2": 0.8, "t1-f1": 0.2, "t1-f2": 0.1, "t2-p1": 0.95, "t2-p2": 0.7, "t2-f1": 0.3,
         "t2-f2": 0.0}
    b = {"t1-p1": 0.5, "t1-p2": 0.95, "t1-f1": 0.55, "t1-f2": 0.1, "t2-p1": 0.6, "t2-p2": 0.92, "t2-f1": 0.9,
         "t2-f2": 0.05}
    rows = [{"trajectory_id": t, "task": t[:2], "judge": j, "label": lab, "outcome": outcome[t], "partial_credit": s}
            for (j, lab), run in ((A, a), (B, b)) for t, s in run.items()]
    rows.append({"trajectory_id": "t1-only-a", "task": "t1", "judge": A[0], "label": A[1], "outcome": "PASS",
                 "partial_credit": 1.0})
    rows.append({"trajectory_id": "t1-p1", "task": "t1", "judge": "holistic", "label": "h", "outcome": "PASS",
                 "partial_credit": 0.1})  # another judge's run: not part of the comparison
    return pd.DataFrame(rows)


VERDICTS_A = ["Yes", "Yes", "Yes", "Yes", "No", "No", "No", "Abstain", "Abstain", "Yes"]
VERDICTS_B = ["Yes", "Yes", "Yes", "No", "No", "No", "Yes", "Abstain", "No", "Yes"]


def _items() -> pd.DataFrame:
    """Ten paired items on trajectory t1-p1 (verdicts above), plus rows that must not be paired: the endpoint,
    an item only A judged, one only B judged, and one judged from another checklist version by B."""
    rows = []
    for k, (va, vb) in enumerate(zip(VERDICTS_A, VERDICTS_B), 1):
        for (judge, label), v in ((A, va), (B, vb)):
            rows.append({"trajectory_id": "t1-p1", "task": "t1", "judge": judge, "label": label, "item_id": f"C{k}",
                         "route": "generated", "verdict_raw": v, "verdict": v, "outcome": "PASS", "checklist_sha": "s1"})
    extra = [(A, "ENDPOINT", "endpoint", "No", "s1"), (B, "ENDPOINT", "endpoint", "Yes", "s1"),
             (A, "C11", "judge", "Yes", "s1"), (B, "C12", "judge", "No", "s1"),
             (A, "C13", "judge", "Yes", "s1"), (B, "C13", "judge", "No", "s2")]
    for (judge, label), item, route, v, sha in extra:
        rows.append({"trajectory_id": "t1-p1", "task": "t1", "judge": judge, "label": label, "item_id": item,
                     "route": route, "verdict_raw": v, "verdict": v, "outcome": "PASS", "checklist_sha": sha})
    return pd.DataFrame(rows)


def test_auc_of_each_run_and_the_paired_delta() -> None:
    result = compare_runs(_scores(), _items(), A, B, n_boot=500, seed=3)
    auc = dict(zip(result.auc["judge"], result.auc["auc"]))
    assert auc[run_key(*A)] == pytest.approx(1.0)
    assert auc[run_key(*B)] == pytest.approx(13 / 16)
    assert set(result.auc["n"]) == {8}  # t1-only-a is not scored by B: left out of both
    assert set(result.auc["n_excluded"]) == {1}
    delta = result.delta.iloc[0]
    assert delta["delta_auc"] == pytest.approx(3 / 16)
    # the interval is the project's paired bootstrap on the same draws, not another implementation
    scores = _scores()
    both = pd.concat([scores[(scores["judge"] == j) & (scores["label"] == lab)].assign(judge=run_key(j, lab))
                      for j, lab in (A, B)])
    reference = delta_auc_table(bootstrap_auc(both, [run_key(*A), run_key(*B)], n_boot=500, seed=3)).iloc[0]
    assert (delta["ci_low"], delta["ci_high"]) == (reference["ci_low"], reference["ci_high"])
    assert delta["ci_low"] <= delta["delta_auc"] <= delta["ci_high"]


def test_agreement_kappa_and_differing_items() -> None:
    result = compare_runs(_scores(), _items(), A, B, n_boot=200)
    assert result.n_items == 10
    assert result.n_agree == 7
    assert result.agreement == pytest.approx(0.7)
    # p_o = 0.7; marginals A (Yes 5, No 3, Abstain 2), B (Yes 5, No 4, Abstain 1): p_e = (25 + 12 + 2) / 100
    assert result.kappa == pytest.approx((0.7 - 0.39) / (1 - 0.39))
    assert result.confusion.loc["Yes", "No"] == 1
    assert result.confusion.loc["No", "Yes"] == 1
    assert result.confusion.loc["Abstain", "No"] == 1
    assert int(np.trace(result.confusion.to_numpy())) == 7
    assert list(result.differing["item_id"]) == ["C4", "C7", "C9"]
    assert list(zip(result.differing["verdict_a"], result.differing["verdict_b"])) == [
        ("Yes", "No"), ("No", "Yes"), ("Abstain", "No")]
    assert (result.n_only_a, result.n_only_b, result.n_checklist_mismatch) == (1, 1, 1)
    assert any("different checklist versions" in n for n in result.notes)
    payload = result.as_dict()
    assert payload["agreement"]["n_differ"] == 3 and payload["delta"]["delta_auc"] == pytest.approx(3 / 16)
    assert "κ 0.508" in result.headline()
    n_tasks = int(result.delta.iloc[0]["n_tasks"])  # a handful of tasks: the ΔAUC interval is flagged
    assert n_tasks < 10 and f"(interval unreliable: only {n_tasks} tasks (" in result.headline()


def test_identical_runs_agree_fully_and_kappa_is_one() -> None:
    items = _items()
    items = items[items["label"] == A[1]]
    same = pd.concat([items, items.assign(label=B[1])])
    scores = _scores()
    scores = pd.concat([scores[scores["label"] == A[1]], scores[scores["label"] == A[1]].assign(label=B[1])])
    result = compare_runs(scores, same, A, B, n_boot=100)
    assert result.agreement == 1.0 and result.kappa == pytest.approx(1.0) and result.differing.empty
    assert result.delta.iloc[0]["delta_auc"] == 0.0


def test_one_verdict_everywhere_leaves_kappa_undefined() -> None:
    items = _items()
    items = items[items["item_id"].isin(["C1", "C2"])]
    result = compare_runs(_scores(), items, A, B, n_boot=100)
    assert result.n_items == 2 and result.agreement == 1.0
    assert np.isnan(result.kappa)
    assert any("undefined" in n for n in result.notes)


def test_bad_requests_are_refused() -> None:
    with pytest.raises(ValueError, match="two different runs"):
        compare_runs(_scores(), _items(), A, A)
    with pytest.raises(ValueError, match="no rows of run gcpc=model-c"):
        compare_runs(_scores(), _items(), A, ("gcpc", "model-c"))
    with pytest.raises(ValueError, match="missing required column"):
        compare_runs(_scores().drop(columns="label"), _items(), A, B)
