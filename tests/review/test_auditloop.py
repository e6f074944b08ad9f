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
