"""Simulated raters for the demo project: labelled SIMULATED in the data (flags, source) and the UI.

A simulated rater answers from a noisy latent progress of each trajectory (its official reward, with
a trajectory-specific partial progress drawn for failed all-or-nothing runs), plus a personal bias.
This only exists so that the admin page, α and the analysis have something to show on the demo; it
says nothing about real people.
"""

from __future__ import annotations

import random

from gcpc_core.store import Store

from .design import DesignParams
from .study import CreatedStudy, RaterSession, create_study, load_study

__all__ = ["DEMO_STUDY_ID", "SIMULATED_RATERS", "add_demo_study", "simulate_answers"]

DEMO_STUDY_ID = "demo-study"
SIMULATED_RATERS = ("sim-rater-1", "sim-rater-2", "sim-rater-3")
DEMO_HUMAN_RATER = "demo-you"
"""A non-simulated seat in the demo study: issue it a link from the admin page to try the rate page."""


def _latent(store: Store, trajectory_id: str, seed: int) -> float:
    traj = store.trials.get_trajectory(trajectory_id)
    assert traj is not None
    rng = random.Random(f"{seed}:latent:{trajectory_id}")
    if traj.outcome == "PASS":
        return 1.0
    reward = traj.reward or 0.0
    return reward if reward > 0 else rng.uniform(0.1, 0.6)


def simulate_answers(store: Store, study_id: str, *, seed: int = 0, share: float = 0.85) -> int:
    """Answer the first `share` of every simulated rater's queue; returns the answers written."""
    study = load_study(store, study_id)
    scale = study.guidelines.scale_values
    lo, hi = min(scale), max(scale)
    latent = {uid: _latent(store, u.trajectory_id, seed) for uid, u in study.units.items()}
    written = 0
    for rater in (r.rater for r in store.studies.raters(study_id) if r.is_simulated):
        rng = random.Random(f"{seed}:sim:{rater}")
        bias, noise = rng.gauss(0, 0.45), rng.uniform(0.15, 0.45)  # some simulated raters are sloppier
        session = RaterSession(store, study, rater, simulated=True)
        queue = session.queue()
        for item in queue[: round(share * len(queue))]:
            token = f"simulated:{study_id}:{rater}:{item.kind}:{item.target}"
            if item.kind == "progress_rating":
                q = latent[item.target] + rng.gauss(0, noise)
                rating = min(hi, max(lo, round(lo + (hi - lo) * q + bias)))
                written += session.submit_rating(item.target, rating, client_token=token).created
            else:
                pair = study.pairs[item.target]
                diff = latent[pair.left_unit] - latent[pair.right_unit] + rng.gauss(0, 0.15)
                choice = "tie" if abs(diff) < 0.08 else ("A" if diff > 0 else "B")
                confidence = 3 if abs(diff) > 0.5 else 2 if abs(diff) > 0.2 else 1
                written += session.submit_preference(item.target, choice, confidence, client_token=token).created
    return written


def add_demo_study(store: Store, *, seed: int = 7) -> CreatedStudy | None:
    """The demo project's small study: every demo task, three SIMULATED raters and one open seat.

    Idempotent: returns None when the demo study already exists.
    """
    if store.studies.get(DEMO_STUDY_ID) is not None:
        return None
    params = DesignParams(tasks=None, per_task=8, raters_per_unit=2, seed=seed,
                          raters=(*SIMULATED_RATERS, DEMO_HUMAN_RATER), pairs_per_task=8)
    created = create_study(store, params, study_id=DEMO_STUDY_ID, name="Demo study (SIMULATED raters)",
                           simulated_raters=SIMULATED_RATERS, created_by="gcpc demo")
    simulate_answers(store, DEMO_STUDY_ID, seed=seed)
    return created
