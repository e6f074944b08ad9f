"""The Triage page's data (gcpc_core.review.auditloop) on the demo project."""

from __future__ import annotations

from gcpc_core.review.auditloop import audited_data
from gcpc_core.store import Store


def test_the_audited_figures_flag_intervals_over_three_tasks(demo: Store) -> None:
    """The demo has 3 tasks: the page's raw and audited figures carry the flag of their task-clustered intervals."""
    data = audited_data(demo, n_boot=50)
    assert data.interval_note.startswith("interval unreliable: only 3 tasks (10 distinct task resamples")


def test_the_disagreements_count_settled_items_and_flag_their_widths(demo: Store) -> None:
    from annotations.audits import record_item_audit
    from gcpc_core.review.auditloop import loop_data

    first = loop_data(demo, "http://app")
    assert first.n_settled == 0 and first.interval_note.startswith("interval unreliable: only 3 tasks")
    top = first.disagreements.iloc[0]
    record_item_audit(demo, trajectory_id=top["trajectory_id"], item_id=top["item_id"], judge=top["judge"],
                      reviewer="alice", agree=False, corrected_verdict=top["proposed"])
    again = loop_data(demo, "http://app")
    assert again.n_settled == 1 and len(again.disagreements) == len(first.disagreements) - 1


def test_the_overview_prefetches_the_triage_and_agreement_first_views_once_per_data_version(
        demo: Store, monkeypatch) -> None:  # noqa: ANN001 - pytest's MonkeyPatch
    """What the Triage page computes first (its ranking and the first judge's loop) is in the cache after the
    prefetch: the page's own call computes nothing again; the prefetch runs once per data version."""
    import gcpc_core.review.auditloop as auditloop
    from annotations.audits import record_item_audit
    from gcpc_core.defaults import AUDIT_TARGET_WIDTH

    ranked: list[int] = []
    real = auditloop.triage
    monkeypatch.setattr(auditloop, "triage", lambda *a, **k: ranked.append(1) or real(*a, **k))
    thread = auditloop.prefetch_pages(demo, "http://app")
    assert thread is not None
    thread.join(timeout=120)
    assert ranked == [1] and auditloop.prefetch_pages(demo, "http://app") is None
    data = auditloop.cached_loop_data(demo, "http://app", labels=None)  # as the page calls it
    loop = auditloop.cached_judge_loop(demo, "http://app", data.judges[0], auditloop.DEFAULT_PROPOSALS,
                                       float(AUDIT_TARGET_WIDTH), labels=None)
    assert ranked == [1] and len(loop.proposals) == auditloop.DEFAULT_PROPOSALS
    top = data.disagreements.iloc[0]
    record_item_audit(demo, trajectory_id=top["trajectory_id"], item_id=top["item_id"], judge=top["judge"],
                      reviewer="alice", agree=False, corrected_verdict=top["proposed"])
    again = auditloop.prefetch_pages(demo, "http://app")  # new data: prefetched again
    assert again is not None
    again.join(timeout=120)
    assert ranked == [1, 1]
