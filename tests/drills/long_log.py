"""Long-log fixture: trajectories of 10,000 steps in a one-rater study, for the rate page's speed
(bench/app_bench.py, the browser suite) and for text that hides itself.

Every trajectory is a realistic shell session (commands, outputs of a few lines, some multi-kilobyte
file reads, agent messages). The first steps carry a right-to-left override and a zero-width space, so
the pages must show them visibly and search must see through them.
"""

from __future__ import annotations

from annotations import DesignParams, create_study
from gcpc_core.models import Event, Task, Trajectory
from gcpc_core.store import Store
from store.helpers import replace_trajectory

__all__ = ["BIDI_TEXT", "LONG_RATER", "LONG_TASK", "SPLIT_WORD", "add_long_log_study", "long_events"]

LONG_TASK = "long-log"
LONG_RATER = "long-rater"
BIDI_TEXT = "report_\u202eTXT.EXE\u202c"
"""Reads "report_EXE.TXT" in a browser that obeys the override."""
SPLIT_WORD = "pass\u200bword"
"""A word a zero-width space splits: a search for "password" must find it."""


def long_events(steps: int, seed: int = 0) -> list[Event]:
    """`steps` events: tool calls with their outputs, a file read every 50 steps, a message every 10."""
    events: list[Event] = []
    last_call: str | None = None
    for n in range(1, steps + 1):
        eid = f"E{n}"
        if n == 1:
            kind, text, tool = "agent_message", f"Looking at {BIDI_TEXT}; the {SPLIT_WORD} file comes next.", None
        elif n % 10 == 0:
            kind, text, tool = "agent_message", f"Step {n}: checked batch {n // 10} of the input, moving on.", None
        elif n % 2 == 1:
            kind, text, tool = "tool_call", f"python3 process.py --batch {n + seed} --out /root/out/part-{n}.csv", "Bash"
        elif n % 50 == 2:
            kind, tool = "file_content", "Read"
            text = "\n".join(f"{i},{(i * 7 + seed) % 101},{'x' * 40}" for i in range(60))
        else:
            kind, tool = "tool_output", "Bash"
            text = f"processed {n * 13 % 977} rows\nwrote /root/out/part-{n - 1}.csv\nelapsed {n % 7}.{n % 10} s"
        call = last_call if kind in ("tool_output", "file_content") else None
        events.append(Event(id=eid, seq=n, kind=kind, text=text, tool_name=tool, call_id=call,  # type: ignore[arg-type]
                            path="/root/data/input.csv" if kind == "file_content" else None))
        if kind == "tool_call":
            last_call = eid
    return events


def add_long_log_study(store: Store, *, steps: int = 10_000, trajectories: int = 2) -> str:
    """A task, `trajectories` runs of `steps` steps each, and a study in which one rater rates them all
    and compares one pair. Returns the rater's token."""
    store.trials.upsert_task(Task(id=LONG_TASK, instruction="Process every batch of /root/data/input.csv into /root/out/.",
                           source_path=f"/data/tasks/{LONG_TASK}"))
    for k in range(trajectories):
        traj = Trajectory(id=f"{LONG_TASK}__run{k:04d}x", task=LONG_TASK, agent="terminus-2", model="acme/long-model",
                          condition="with-skills" if k % 2 else "without-skills", outcome="PASS" if k % 2 else "FAIL",
                          reward=float(k % 2), source_path=f"/data/trials/{LONG_TASK}__run{k:04d}x",
                          log_path="agent/log.jsonl", log_format="gcpc-jsonl", trial_index=k // 2)
        replace_trajectory(store, traj, long_events(steps, seed=k))
    created = create_study(store, DesignParams(tasks=None, per_task=trajectories, raters_per_unit=1, seed=0,
                                               raters=(LONG_RATER,), pairs_per_task=1, task_ids=(LONG_TASK,)),
                           study_id="long-study", name="Long-log study", created_by="fixture")
    return created.tokens[LONG_RATER]
