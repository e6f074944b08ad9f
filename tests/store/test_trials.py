"""Trials and events as the trials repository reads them back."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from gcpc_core.store import Store


def test_an_event_row_edited_outside_gcpc_is_refused_when_read(demo_copy: Path) -> None:
    store = Store(demo_copy)
    traj = store.trials.trajectories()[0]
    first = store.trials.events(traj.id)[0]  # the stored rows read back as events
    with store.atomic() as db:
        db["events"].update((traj.id, first.seq), {"kind": "bogus"})
    with pytest.raises(ValidationError, match="kind"):
        store.trials.events(traj.id)
    store.close()
