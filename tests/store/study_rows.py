"""A small stored study written straight through the studies repository (no sampler, no blinding), so
the store's tests see exactly the rows they put in."""

from __future__ import annotations

from pathlib import Path

from gcpc_core.models import Event, Task, Trajectory
from gcpc_core.store import Store, StudyAssignmentRow, StudyPairRow, StudyRaterRow, StudyRow, StudyUnitRow

from .helpers import replace_trajectory

STUDY = "s1"
TRAJECTORIES = ("t1", "t2", "t3")
UNITS = {"U1": "t1", "U2": "t2", "U3": "t3"}


def study_row(study_id: str = STUDY, **given: object) -> StudyRow:
    design = {"design": {"units": list(UNITS)}, "guidelines": {"scale": "1–5 ✓"}, "blinding": {}}
    return StudyRow(**{"id": study_id, "name": "Study one", "seed": 7, "params": {"raters": ["ann", "ben"], "seed": 7},
                       "design": design, "design_sha": "sha-" + study_id, "is_simulated": False, **given})


def insert_study(store: Store, study_id: str = STUDY, *, raters: tuple[str, ...] = ("ann", "ben"),
                 **given: object) -> None:
    """A study over t1–t3: three units, one pair; ann (token hash `hash-ann-<study>`) holds U1, U2 and the pair,
    ben (simulated, no token) holds U2 and U3."""
    queues = {"ann": [("progress_rating", "U1"), ("progress_rating", "U2"), ("preference", "P1")],
              "ben": [("progress_rating", "U2"), ("progress_rating", "U3")]}
    store.studies.insert(
        study_row(study_id, **given),
        units=[StudyUnitRow(study_id=study_id, unit_id=u, trajectory_id=t, task="task-a", stratum="PASS/with")
               for u, t in UNITS.items()],
        pairs=[StudyPairRow(study_id=study_id, pair_id="P1", task="task-a", left_unit="U1", right_unit="U2")],
        raters=[StudyRaterRow(study_id=study_id, rater=r, token_hash=f"hash-{r}-{study_id}" if r == "ann" else None,
                              is_simulated=r == "ben") for r in raters],
        assignments=[StudyAssignmentRow(study_id=study_id, rater=r, kind=kind, target=target, position=n)
                     for r in raters for n, (kind, target) in enumerate(queues.get(r, []))],
    )




def studied_store(path: Path) -> Store:
    """A project DB with task-a, trials t1–t3 and study s1 (see `insert_study`)."""
    store = Store(path)
    store.trials.upsert_task(Task(id="task-a", instruction="Do it.", source_path="/tasks/task-a"))
    for tid in TRAJECTORIES:
        replace_trajectory(store, 
            Trajectory(id=tid, task="task-a", agent="a", model="m", outcome="PASS", reward=1.0,
                       source_path=f"/trials/{tid}", log_path="agent/log.txt", log_format="claude-code"),
            [Event(id="E1", seq=1, kind="tool_output", text="ok")],
        )
    insert_study(store)
    return store
