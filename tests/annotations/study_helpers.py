"""Small hand-made projects for study tests: trajectories whose logs leak every blinded field."""

from __future__ import annotations

from typing import Any

from annotations import CreatedStudy, create_study
from annotations.design import DesignParams
from gcpc_core.models import Event, Task, Trajectory
from gcpc_core.store import Store
from store.helpers import replace_trajectory

SECRET_MODEL = "acme/secret-model-x9"
SKILL = "pdf-wizardry"
CONDITIONS = ("with-skills", "without-skills")


def add_task(store: Store, task_id: str) -> None:
    store.trials.upsert_task(Task(
        id=task_id, instruction=f"Convert report.pdf to /root/out/{task_id}.txt and count the pages.",
        source_path=f"/data/tasks/{task_id}", metadata={"metadata": {"demo_skill": SKILL}},
    ))


def leaky_events(traj_id: str, model: str, condition: str) -> list[Event]:
    """A Claude-Code-like log that names the model, the agent, the skill and the trial everywhere."""
    texts: list[tuple[str, str, str | None, str | None]] = [
        ("system", f"Claude Code 2.1.0 session start\nmodel: {model}\nskills: {SKILL}\nsession: {traj_id}", None, None),
        ("user", "Convert report.pdf to text.", None, None),
        ("agent_message", f"I am {model.split('/')[-1]} running in claude-code. Let me look at the files.", None, None),
        ("tool_call", "ls -la /root", "Bash", None),
        ("tool_output", f"report.pdf\nnotes-{traj_id}.txt", "Bash", None),
    ]
    if condition == "with-skills":
        texts += [
            ("agent_message", f"There is a {SKILL} skill installed. I will load it. Then convert.", None, None),
            ("tool_call", f"skill: {SKILL}", "Skill", None),
            ("tool_output", f"Launching skill: {SKILL}", "Skill", None),
            ("user", f"Base directory for this skill: /root/.claude/skills/{SKILL}\n\n# PDF wizardry", None, None),
            ("tool_call", f"file_path: /root/.claude/skills/{SKILL}/SKILL.md", "Read", None),
            ("file_content", "# PDF wizardry\nUse pdftotext.", "Read", f"/root/.claude/skills/{SKILL}/SKILL.md"),
            ("tool_call", f"python3 /root/.claude/skills/{SKILL}/scripts/convert.py report.pdf", "Bash", None),
        ]
    else:
        texts += [("tool_call", "pdftotext report.pdf /root/out/report.txt", "Bash", None)]
    texts += [
        ("tool_output", "Converted 12 pages.", "Bash", None),
        ("agent_message", "Done: 12 pages converted.", None, None),
        ("system", "Done: 12 pages converted.", None, None),
    ]
    events, last_call = [], None
    for seq, (kind, text, tool, path) in enumerate(texts, 1):
        eid = f"E{seq}"
        events.append(Event(id=eid, seq=seq, kind=kind, text=text, tool_name=tool, path=path,  # type: ignore[arg-type]
                            call_id=last_call if kind in ("tool_output", "file_content") else None))
        if kind == "tool_call":
            last_call = eid
    return events


def add_trajectory(store: Store, traj_id: str, task: str, *, outcome: str, condition: str,
                   model: str = SECRET_MODEL, agent: str = "claude-code", reward: float | None = None) -> None:
    traj = Trajectory(
        id=traj_id, task=task, agent=agent, model=model, condition=condition, outcome=outcome,  # type: ignore[arg-type]
        reward=reward if reward is not None else (1.0 if outcome == "PASS" else 0.0), source_path=f"/data/trials/{traj_id}",
        log_path="agent/claude-code.txt", log_format="claude-code",
    )
    replace_trajectory(store, traj, leaky_events(traj_id, model, condition))


def small_project(store: Store, *, tasks: int = 3, per_stratum: int = 3) -> list[str]:
    """`tasks` tasks with `per_stratum` trajectories in each outcome × condition stratum; returns task ids."""
    names = []
    for t in range(tasks):
        task = f"task-{t}"
        names.append(task)
        add_task(store, task)
        n = 0
        for outcome in ("PASS", "FAIL"):
            for condition in CONDITIONS:
                for _ in range(per_stratum):
                    add_trajectory(store, f"{task}__trial{n:03d}x", task, outcome=outcome, condition=condition)
                    n += 1
    return names


def small_study(
    store: Store, *, tasks: int, raters: tuple[str, ...] = ("ann", "ben", "cat"), **design: Any
) -> CreatedStudy:
    """A frozen study over every task of a fresh `small_project` (two trajectories per stratum)."""
    small_project(store, tasks=tasks, per_stratum=2)
    return create_study(store, DesignParams(tasks=None, raters=raters, **design))
