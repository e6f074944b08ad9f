"""Score variants from raw verdicts (against the real postprocessing), and Perfect vs the outcome."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from gcpc_core.analysis import VARIANTS, perfect_agreement, score_variants
from gcpc_core.analysis.synthetic import synthetic_frames
from gcpc_core.models import ItemJudgment
from gcpc_core.outcome import postprocess, score_items


def items(rows: list[tuple]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["trajectory_id", "task", "judge", "item_id", "route", "verdict_raw", "outcome"])


def test_variants_by_hand() -> None:
    f = items([
        ("t1", "a", "gcpc", "C1", "assertion", "No", "PASS"), ("t1", "a", "gcpc", "C2", "generated", "Yes", "PASS"),
        ("t2", "a", "gcpc", "C1", "assertion", "Yes", "FAIL"), ("t2", "a", "gcpc", "C2", "judge", "Abstain", "FAIL"),
        ("t2", "a", "gcpc", "ENDPOINT", "endpoint", "No", "FAIL"),  # stored endpoint: rebuilt, not double counted
    ])
    v = score_variants(f).set_index(["trajectory_id", "variant"])["partial_credit"]
    assert v["t1", "raw"] == 0.5 and v["t1", "pass_propagation"] == 1.0
    assert v["t1", "endpoint"] == 0.5 and v["t1", "full"] == 1.0
    assert v["t2", "raw"] == 1.0 and v["t2", "pass_propagation"] == 1.0
    assert v["t2", "endpoint"] == 0.5 and v["t2", "full"] == 0.5


def test_every_variant_has_the_raw_evidence_coverage() -> None:
    # PASS turns the Abstain assertion items into Yes, but they still have no log evidence: 1 of 3 covered
    f = items([("t1", "a", "gcpc", "C1", "assertion", "Abstain", "PASS"),
               ("t1", "a", "gcpc", "C2", "assertion", "Abstain", "PASS"), ("t1", "a", "gcpc", "J1", "judge", "Yes", "PASS")])
    v = score_variants(f).set_index("variant")
    assert v.loc["pass_propagation", "partial_credit"] == 1.0
    assert v["evidence_coverage"].to_dict() == pytest.approx(dict.fromkeys(VARIANTS, 1 / 3))


def test_signature_shortcut_equals_scoring_each_trajectory() -> None:
    f = synthetic_frames(n_tasks=6, n_pairs=40, n_unpaired=10, n_rated=5, n_pref_pairs=5, seed=3)["items"]
    got = score_variants(f).set_index(["judge", "trajectory_id", "variant"])
    for (judge, tid), g in f.groupby(["judge", "trajectory_id"]):
        judged = [ItemJudgment(item_id=r.item_id, route=r.route, verdict_raw=r.verdict_raw, verdict=r.verdict_raw)
                  for r in g.itertuples()]
        for name, (prop, end) in VARIANTS.items():
            s = score_items(postprocess(judged, g["outcome"].iloc[0], propagate_pass=prop, add_endpoint=end))
            row = got.loc[(judge, tid, name)]
            assert row["partial_credit"] == pytest.approx(s.partial_credit if s.partial_credit is not None else np.nan,
                                                          nan_ok=True)
            assert row["evidence_coverage"] == pytest.approx(s.evidence_coverage)
            assert (row["perfect"], row["perfect_with_endpoint"]) == (s.perfect, s.perfect_with_endpoint)


def test_all_abstain_gives_nan_partial_credit_without_endpoint() -> None:
    f = items([("t1", "a", "gcpc", "C1", "generated", "Abstain", "FAIL")])
    v = score_variants(f).set_index("variant")["partial_credit"]
    assert np.isnan(v["raw"]) and v["endpoint"] == 0.0


def test_perfect_agreement_by_hand() -> None:
    s = pd.DataFrame({
        "trajectory_id": ["t1", "t2", "t3", "t4", "t5"], "task": "a", "judge": ["gcpc"] * 4 + ["holistic"],
        "outcome": ["PASS", "PASS", "FAIL", "FAIL", "PASS"],
        "perfect": [1, 0, 1, 0, np.nan], "perfect_with_endpoint": [1, 0, 0, 0, np.nan]})
    t = perfect_agreement(s).set_index(["judge", "perfect"])
    w = t.loc[("gcpc", "without endpoint")]
    assert (w["n"], w["agreement"], w["kappa"]) == (4, 0.5, 0.0)
    assert (w["perfect_and_pass"], w["perfect_and_fail"], w["imperfect_and_pass"], w["imperfect_and_fail"]) == (1, 1, 1, 1)
    e = t.loc[("gcpc", "with endpoint")]
    assert e["agreement"] == 0.75 and e["kappa"] == pytest.approx(0.5)
    assert t.loc[("holistic", "without endpoint"), "n"] == 0
