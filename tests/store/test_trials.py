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


def test_events_skipped_by_kind_are_not_read_and_an_unknown_kind_is_still_refused(demo_copy: Path) -> None:
    store = Store(demo_copy)
    traj = store.trials.trajectories()[0]
    every = store.trials.events(traj.id)
    narration = {"agent_message", "agent_thinking", "system", "user"}
    evidence = store.trials.events(traj.id, skip_kinds=narration)
    assert evidence == [e for e in every if e.kind not in narration] and len(evidence) < len(every)
    with store.atomic() as db:  # NULLs written by hand read as the model's defaults
        db["events"].update((traj.id, evidence[0].seq), {"is_error": None, "source": None})
    assert store.trials.events(traj.id)[every.index(evidence[0])] == evidence[0].model_copy(
        update={"is_error": False, "source": ""})
    with store.atomic() as db:
        db["events"].update((traj.id, evidence[-1].seq), {"kind": "bogus"})
    with pytest.raises(ValidationError, match="kind"):
        store.trials.events(traj.id, skip_kinds=narration)
    store.close()
