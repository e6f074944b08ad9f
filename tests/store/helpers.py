"""Store operations only tests (and the benchmarks built on them) need: storing one hand-made trial, and
reading back every LLM call or negotiated mode. GCPC itself stores trials a batch at a time
(`TrialRepository.replace_trajectories`) and reads calls through a run's progress and totals."""

from __future__ import annotations

from collections.abc import Iterable

from gcpc_core.models import Event, Trajectory
from gcpc_core.store import LLMCallRow, LLMModeRow, Store, TrajectoryClash, pack_events


def replace_trajectory(store: Store, traj: Trajectory, events: Iterable[Event]) -> str:
    """Store one trajectory with its events in one transaction, replacing an older copy; returns
    `imported` or `updated`, and raises the `TrajectoryClash` that `replace_trajectories` reports."""
    done = store.trials.replace_trajectories([(traj, pack_events(events))])[0]
    if isinstance(done, TrajectoryClash):
        raise done
    return done


def llm_calls(store: Store, *, run_id: str | None = None) -> list[LLMCallRow]:
    """The recorded LLM calls (of one run), oldest first."""
    where, args = ("run_id = ?", [run_id]) if run_id else (None, [])
    return [LLMCallRow.from_db(r) for r in store.db["llm_calls"].rows_where(where, args, order_by="id")]


def llm_modes(store: Store) -> list[LLMModeRow]:
    """Every negotiated structured-output mode, by endpoint and model."""
    return [LLMModeRow.from_db(r) for r in store.db["llm_modes"].rows_where(order_by="endpoint, model")]
