"""The postprocessing truth table and the score formulas on hand-computed cases."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gcpc_core.models import ENDPOINT_ITEM_ID, ItemJudgment
from gcpc_core.outcome import partial_credit_of, postprocess, score_items


def item(item_id: str, route: str, verdict: str) -> ItemJudgment:
    return ItemJudgment(item_id=item_id, route=route, verdict_raw=verdict, verdict=verdict)


@pytest.mark.parametrize(
    ("route", "raw", "outcome", "expected"),
    [
        ("assertion", "Yes", "PASS", "Yes"),
        ("assertion", "No", "PASS", "Yes"),
        ("assertion", "Abstain", "PASS", "Yes"),
        ("generated", "No", "PASS", "No"),
        ("judge", "Abstain", "PASS", "Abstain"),
        ("assertion", "No", "FAIL", "No"),
        ("assertion", "Abstain", "FAIL", "Abstain"),
        ("generated", "Yes", "FAIL", "Yes"),
    ],
)
def test_truth_table(route: str, raw: str, outcome: str, expected: str) -> None:
    out = postprocess([item("C1", route, raw)], outcome)
    assert out[0].verdict == expected
    assert out[0].verdict_raw == raw  # raw is kept for audit
    endpoints = [i for i in out if i.item_id == ENDPOINT_ITEM_ID]
    assert len(endpoints) == (1 if outcome == "FAIL" else 0)
    if endpoints:
        assert endpoints[0].verdict == "No" and endpoints[0].route == "endpoint"


def test_postprocess_is_idempotent_and_ablations_switch_parts_off() -> None:
    items = [item("C1", "assertion", "No"), item("C2", "generated", "Yes")]
    once = postprocess(items, "FAIL")
    assert postprocess(once, "FAIL") == once
    assert [i.item_id for i in postprocess(items, "FAIL", add_endpoint=False)] == ["C1", "C2"]
    assert postprocess(items, "PASS", propagate_pass=False)[0].verdict == "No"


def test_scores_fail_case_by_hand() -> None:
    # 5 real items: Yes, Yes, No, Abstain, Abstain; FAIL adds endpoint No.
    raw = [item("C1", "assertion", "Yes"), item("C2", "generated", "Yes"), item("C3", "assertion", "No"),
           item("C4", "judge", "Abstain"), item("C5", "generated", "Abstain")]
    s = score_items(postprocess(raw, "FAIL"))
    assert s.partial_credit == pytest.approx(2 / 4)  # Yes=2, No=2 (C3 + endpoint)
    assert s.evidence_coverage == pytest.approx(3 / 5)
    assert (s.perfect, s.perfect_with_endpoint) == (0, 0)
    assert (s.n_items, s.n_yes, s.n_no, s.n_abstain) == (5, 2, 2, 2)


def test_scores_fail_with_no_real_no_is_perfect_only_without_endpoint() -> None:
    s = score_items(postprocess([item("C1", "generated", "Yes"), item("C2", "judge", "Abstain")], "FAIL"))
    assert s.partial_credit == pytest.approx(1 / 2)
    assert s.evidence_coverage == pytest.approx(1 / 2)
    assert (s.perfect, s.perfect_with_endpoint) == (1, 0)


def test_scores_pass_case_by_hand() -> None:
    raw = [item("C1", "assertion", "No"), item("C2", "generated", "Yes"), item("C3", "judge", "No")]
    s = score_items(postprocess(raw, "PASS"))
    assert s.partial_credit == pytest.approx(2 / 3)
    assert s.evidence_coverage == pytest.approx(1.0)
    assert (s.perfect, s.perfect_with_endpoint) == (0, 0)


def test_all_abstain_has_undefined_partial_credit_not_zero() -> None:
    s = score_items(postprocess([item("C1", "judge", "Abstain")], "PASS"))
    assert s.partial_credit is None
    assert s.evidence_coverage == 0.0
    assert s.perfect == 1


def test_evidence_coverage_reads_raw_verdicts_not_the_official_pass() -> None:
    # two assertion items the judge left Abstain, one judge item Yes: PASS sets both assertions to Yes,
    # but only the judge item has log evidence of its own
    raw = [item("A1", "assertion", "Abstain"), item("A2", "assertion", "Abstain"), item("J1", "judge", "Yes")]
    s = score_items(postprocess(raw, "PASS"))
    assert s.partial_credit == 1.0 and s.n_abstain == 0
    assert s.evidence_coverage == pytest.approx(1 / 3)
    assert score_items(postprocess(raw, "PASS", propagate_pass=False)).evidence_coverage == pytest.approx(1 / 3)


@given(items=st.lists(st.tuples(st.sampled_from(["assertion", "generated", "judge"]),
                                st.sampled_from(["Yes", "No", "Abstain"])), max_size=8),
       outcome=st.sampled_from(["PASS", "FAIL"]), propagate=st.booleans(), endpoint=st.booleans())
def test_partial_credit_of_tuples_is_that_of_the_postprocessed_judgments(
    items: list[tuple[str, str]], outcome: str, propagate: bool, endpoint: bool,
) -> None:
    # triage's shortcut must score exactly as postprocess + score_items, for every variant
    judged = [item(f"C{k}", route, raw) for k, (route, raw) in enumerate(items)]
    expected = score_items(postprocess(judged, outcome, propagate_pass=propagate, add_endpoint=endpoint)).partial_credit
    assert partial_credit_of(items, outcome, propagate_pass=propagate, add_endpoint=endpoint) == expected
