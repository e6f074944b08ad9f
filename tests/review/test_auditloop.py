"""The Triage page's data (gcpc_core.review.auditloop) on the demo project."""

from __future__ import annotations

from gcpc_core.review.auditloop import audited_data
from gcpc_core.store import Store


def test_the_audited_figures_flag_intervals_over_three_tasks(demo: Store) -> None:
    """The demo has 3 tasks: the page's raw and audited figures carry the flag of their task-clustered intervals."""
    data = audited_data(demo, n_boot=50)
    assert data.interval_note.startswith("interval unreliable: only 3 tasks (10 distinct task resamples")
