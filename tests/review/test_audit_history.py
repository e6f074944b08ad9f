"""The Triage page's "Error rate as audits arrived" chart (`auditloop.history_figure`): a rate axis from 0 to 1,
one point per audit recorded, and no chart at all (the page says why) before there are two audits."""

from __future__ import annotations

from annotations.audits import record_item_audit
from gcpc_core.review.auditloop import MIN_HISTORY_AUDITS, history_figure, judge_loop
from gcpc_core.store import Store

APP = "http://127.0.0.1:8501"


def _audit(store: Store, n: int) -> None:
    """Audit the first `n` decided probe verdicts, disagreeing with every other one."""
    decided = [j for j in store.judging.judgments(judge="probe") if j.verdict_raw in ("Yes", "No")][:n]
    for k, j in enumerate(decided):
        record_item_audit(store, trajectory_id=j.trajectory_id, item_id=j.item_id, judge="probe", reviewer="alice",
                          agree=k % 2 == 0, corrected_verdict=None if k % 2 == 0 else
                          ("No" if j.verdict_raw == "Yes" else "Yes"))


def test_no_chart_before_two_audits(demo: Store) -> None:
    assert history_figure(judge_loop(demo, APP, "probe", 3, 0.1).history, 0.1) is None  # no audit: no lone dot
    _audit(demo, 1)
    assert MIN_HISTORY_AUDITS == 2
    assert history_figure(judge_loop(demo, APP, "probe", 3, 0.1).history, 0.1) is None


def test_one_point_per_audit_on_a_rate_axis(demo: Store) -> None:
    _audit(demo, 6)
    loop = judge_loop(demo, APP, "probe", 3, 0.1)
    assert loop.history["n_audits"].max() == 6  # the estimate also counts what the verifier decides
    fig = history_figure(loop.history, 0.1)
    assert fig is not None
    band_high, band_low, estimate = fig.data
    assert list(estimate.x) == [1, 2, 3, 4, 5, 6] and len(estimate.y) == 6  # the running estimate after each audit
    assert list(band_low.x) == list(band_high.x) == list(estimate.x)
    assert all(0 <= lo <= e <= hi <= 1 for lo, e, hi in zip(band_low.y, estimate.y, band_high.y))
    assert len(set(estimate.y)) > 1  # it moves as agreeing and disagreeing audits arrive
    assert tuple(fig.layout.yaxis.range) == (0, 1) and tuple(fig.layout.xaxis.range) == (1, 6)
    assert "Error rate as audits arrived" in fig.layout.title.text
