"""gcpc_core.review.scores: each score read back in words, with the counts it comes from."""

from __future__ import annotations

from pathlib import Path

from gcpc_core.review.scores import SCORE_HELP, score_explanation, trajectory_score
from gcpc_core.store import ScoreRow, Store

REPO = Path(__file__).resolve().parents[2]


def _score(**over: object) -> ScoreRow:
    base = {"trajectory_id": "t__1", "judge": "probe", "task": "t", "scored_at": "2026-01-01T00:00:00+00:00",
            "label": "probe-run", "outcome": "FAIL", "partial_credit": 0.5, "evidence_coverage": 0.75, "perfect": 1,
            "perfect_with_endpoint": 0, "n_items": 8, "n_yes": 1, "n_no": 1, "n_abstain": 7}
    return ScoreRow.model_validate({**base, **over})


def test_a_perfect_fail_run_is_explained() -> None:
    """The issue's case: FAIL, Perfect 1, partial credit 0.5, 8 items with Yes + No + Abstain = 9."""
    lines = score_explanation(_score())
    assert lines[0] == ("Partial credit 0.500 = 1 Yes / (1 Yes + 1 No), the endpoint item's No included; "
                        "the 7 Abstain are left out.")
    assert lines[1].startswith("8 items, yet Yes + No + Abstain = 9: the official FAIL adds the endpoint item")
    assert lines[2].startswith("Evidence coverage 0.750: the share of the 8 items the judge decided")
    assert "before the official outcome was applied" in lines[2]
    assert lines[3].startswith("Perfect 1: no real item is No (the endpoint item is left out); "
                               "Perfect with endpoint 0: the endpoint item is No.")
    assert "A FAIL run can be Perfect" in lines[3]


def test_a_pass_run_with_abstains_is_explained() -> None:
    lines = score_explanation(_score(outcome="PASS", partial_credit=1.0, evidence_coverage=0.5, perfect_with_endpoint=1,
                                     n_yes=4, n_no=0, n_abstain=4))
    assert lines[0] == "Partial credit 1.000 = 4 Yes / (4 Yes + 0 No); the 4 Abstain are left out."
    assert "official PASS counts every assertion item" in lines[1]
    assert lines[2].startswith("Evidence coverage 0.500") and "rests on few items" in lines[2]
    assert not any("endpoint item is No" in line for line in lines)
    one = score_explanation(_score(outcome="PASS", n_abstain=1))[0]
    assert one.endswith("the 1 Abstain is left out.")


def test_holistic_and_unscored_values() -> None:
    assert score_explanation(_score(n_items=0, partial_credit=0.4))[0].startswith("Partial credit 0.400: the judge's "
                                                                                  "overall progress rating")
    assert score_explanation(_score(partial_credit=None, evidence_coverage=None))[0].startswith("Partial credit n/a")


def test_every_score_of_the_export_is_defined_and_documented(demo: Store) -> None:
    row = trajectory_score(demo, demo.trials.trajectories()[0].id, "probe")
    assert row is not None
    for column in ("partial_credit", "evidence_coverage", "perfect", "perfect_with_endpoint", "n_items", "n_yes",
                   "n_no", "n_abstain"):
        assert column in ScoreRow.model_fields and SCORE_HELP[column]
    doc = (REPO / "docs" / "scores.md").read_text(encoding="utf-8")
    for term in ("`partial_credit`", "`evidence_coverage`", "`perfect`", "`perfect_with_endpoint`", "`n_items`",
                 "**raw** verdicts", "endpoint item"):
        assert term in doc, term
