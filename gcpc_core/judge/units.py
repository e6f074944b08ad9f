"""Units of judging work: one (trajectory, judge). Planning what is left, judging one, storing one.

Shared by live runs (`runner`) and Batch-API runs (`batch`) so both resume alike and store alike.
A unit is *done* when its stored row matches what a run would do now: same checklist sha,
model, prompt version and trajectory content. Anything else is judged (again); the response
cache makes a repeated request free.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from pydantic import BaseModel

from ..checklist import Checklist, Rules, checklist_sha, fixed_checklist
from ..evidence import EVIDENCE_KINDS, EvidenceView, Focus, build_evidence_view
from ..llm import LLM, LLMCallError
from ..models import EVENT_KINDS, Task
from ..store import Store, TrajectoryRef, derive_label, utcnow
from ..store.judging import JudgeReplyRow, JudgeUnitRow, JudgmentRow, TrajectorySave
from .calls import Outcome
from .focus import focus_for
from .prompts import Messages
from .registry import JudgeCall, JudgeSpec, get_judge
from .results import TrajectoryJudgment

__all__ = [
    "Plan",
    "Unit",
    "evidence_of",
    "initial_request",
    "judge_unit",
    "judgment_rows",
    "plan_units",
    "store_judgment",
    "store_judgments",
    "trajectory_view",
    "unit_for",
]


@dataclass(frozen=True)
class Unit:
    """One trajectory to judge, with everything judging it needs except its events."""

    trajectory: TrajectoryRef
    """Which trajectory: its id, task and content hash are all judging reads of it."""
    task: Task
    checklist: Checklist | None
    """The checklist the judge's spec names: the task's frozen one, the fixed one, or None."""
    checklist_sha: str | None
    focus: Focus | None = None
    """What its view is windowed for (`focus.focus_for`), the same for every trajectory of the task:
    `plan_units` works it out once per task (a third of a millisecond per view, on the loop);
    None: `evidence_of` works it out."""


@dataclass
class Plan:
    todo: list[Unit]
    skipped: dict[str, str] = field(default_factory=dict)
    """trajectory id → why it is not judged now (already judged, no frozen checklist, in a batch)."""
    checklists: dict[str, str] = field(default_factory=dict)
    """task → checklist sha this run judges against (the run record keeps it)."""


def _checklist_for(store: Store, spec: JudgeSpec, task: str, rules: Rules) -> tuple[Checklist | None, str | None, str | None]:
    """(checklist, sha, why none) for one task under one judge."""
    if spec.checklist == "none":
        return None, None, None
    if spec.checklist == "fixed":
        checklist = fixed_checklist(rules, task)
        return checklist, checklist_sha(checklist), None
    row = store.checklists.latest(task)
    if row is None:
        return None, None, f"task {task} has no frozen checklist (synthesize or `checklist add` one)"
    return Checklist.model_validate(row.checklist), row.sha, None


def unit_for(store: Store, judge: str, trajectory_id: str, sha: str | None, rules: Rules) -> Unit | str:
    """Rebuild the unit a batch request was made for, or say why it cannot be (a string)."""
    stored = store.trials.get_trajectory(trajectory_id)
    if stored is None:
        return f"trajectory {trajectory_id} is no longer in the project"
    traj = TrajectoryRef(id=stored.id, task=stored.task, content_hash=stored.content_hash)
    task = store.trials.get_task(traj.task)
    if task is None:
        return f"task {traj.task} is no longer in the project"
    spec = get_judge(judge)
    if spec.checklist == "none":
        return Unit(traj, task, None, None)
    checklist: Checklist | None
    if spec.checklist == "fixed":
        checklist = fixed_checklist(rules, traj.task)
    else:
        row = store.checklists.get(sha or "")
        checklist = Checklist.model_validate(row.checklist) if row and row.checklist else None
    if checklist is None or checklist_sha(checklist) != sha:
        return f"checklist {str(sha)[:12]} the request was built from is gone or changed"
    return Unit(traj, task, checklist, sha)


_NOT_EVIDENCE = frozenset(EVENT_KINDS) - EVIDENCE_KINDS


def evidence_of(store: Store, unit: Unit, rules: Rules) -> EvidenceView:
    """A unit's evidence view, windowed for what its checklist names (`focus.focus_for`), reading only
    the trajectory's evidence events (narration is never shown to a judge, and is a third of a log's
    events)."""
    focus = unit.focus if unit.focus is not None else focus_for(unit.task, unit.checklist, rules)
    return trajectory_view(store, unit.trajectory.id, focus)


def trajectory_view(store: Store, trajectory_id: str, focus: Focus) -> EvidenceView:
    """The evidence view of a stored trajectory windowed for `focus`: what `evidence_of` builds on the
    run's loop and `prepare.ViewPool` in its workers."""
    return build_evidence_view(store.trials.events(trajectory_id, skip_kinds=_NOT_EVIDENCE), focus=focus)


def initial_request(unit: Unit, judge: str, view: EvidenceView, rules: Rules) -> tuple[Messages, type[BaseModel], str]:
    """(messages, reply schema, prompt version) of a unit's first request in the default mode:
    what a live run sends first, and what a batch line carries."""
    first_request = get_judge(judge).first_request
    if first_request is None:
        raise ValueError(f"judge {judge!r} sends no requests")
    return first_request(unit.task, unit.checklist, view, rules)


def plan_units(
    store: Store,
    judge: str,
    *,
    rules: Rules,
    model: str | None,
    per_item: bool = False,
    limit: int | None = None,
    force: bool = False,
    exclude: Iterable[str] = (),
    label: str | None = None,
) -> Plan:
    """What a run of `judge` still has to do, in (task, trajectory) order; at most `limit` units.

    `label` names the run (default: derived from judge, model, prompt and rules version): only its
    judgments count as done, so another label judges every trajectory afresh."""
    spec = get_judge(judge)
    prompt_version = spec.version(per_item=per_item)
    label = label or derive_label(judge, model, prompt_version, rules.version)
    done = {} if force else store.judging.units(judge, labels={judge: label})
    excluded = set(exclude)
    tasks = {t.id: t for t in store.trials.tasks()}
    by_task: dict[str, tuple[Checklist | None, str | None, str | None]] = {}
    focus_of: dict[str, Focus] = {}
    plan = Plan(todo=[])
    for traj in store.trials.trajectory_refs():
        if traj.task not in by_task:
            by_task[traj.task] = _checklist_for(store, spec, traj.task, rules)
        checklist, sha, why_not = by_task[traj.task]
        if why_not is not None:
            plan.skipped[traj.id] = why_not
            continue
        row = done.get((traj.id, judge))
        if row is not None and (row.checklist_sha, row.model, row.prompt_version, row.content_hash) == (
            sha, model, prompt_version, traj.content_hash
        ):
            plan.skipped[traj.id] = "already judged"
            continue
        if traj.id in excluded:
            plan.skipped[traj.id] = "waiting in a submitted batch (run `batch collect`)"
            continue
        if limit is not None and len(plan.todo) >= limit:
            continue
        if traj.task not in focus_of:
            focus_of[traj.task] = focus_for(tasks[traj.task], checklist, rules)
        plan.todo.append(Unit(traj, tasks[traj.task], checklist, sha, focus_of[traj.task]))
        if sha is not None:
            plan.checklists[traj.task] = sha
    return plan


async def judge_unit(
    unit: Unit,
    judge: str,
    *,
    store: Store,
    rules: Rules,
    llm: LLM | None,
    per_item: bool = False,
    first: Outcome | None = None,
    view: EvidenceView | None = None,
) -> TrajectoryJudgment:
    """Judge one trajectory. An endpoint failure gives status `error` (nothing to store).

    `view` replaces the evidence built from the stored events: the evidence-sensitivity test
    (`analysis.sensitivity`) judges a perturbed log through this very path.
    """
    spec = get_judge(judge)
    traj = unit.trajectory
    result = TrajectoryJudgment(
        trajectory_id=traj.id,
        task=traj.task,
        judge=judge,
        checklist_sha=unit.checklist_sha,
        model=llm.model if llm is not None and spec.calls_llm else None,
        prompt_version=spec.version(per_item=per_item),
        rules_version=rules.version,
        content_hash=traj.content_hash,
    )
    if view is None:
        view = evidence_of(store, unit, rules)
    call = JudgeCall(task=unit.task, checklist=unit.checklist, view=view, rules=rules,
                     llm=llm if spec.calls_llm else None, tag=traj.id, per_item=per_item, first=first)
    try:
        out = await spec.judge(call)
        result.items, result.replies, result.progress = out.items, out.replies, out.progress
        result.rationale, result.citations, result.reason = out.rationale, out.citations, out.reason
    except LLMCallError as error:
        result.status, result.reason = "error", f"{error.reason}: {error}"
    return result


def store_judgment(store: Store, result: TrajectoryJudgment, *, run_id: str | None, label: str | None = None) -> None:
    """Write one judged trajectory (unit row, raw verdicts, replies) in one transaction, under run
    `label` (default: derived from the result's judge, model, prompt and rules version)."""
    store_judgments(store, [result], run_id=run_id, label=label)


def store_judgments(
    store: Store, results: Iterable[TrajectoryJudgment], *, run_id: str | None, label: str | None = None
) -> None:
    """`store_judgment` for several judged trajectories in one transaction (a run's group of finished ones)."""
    store.judging.save_trajectory_judgments([judgment_rows(result, run_id=run_id, label=label) for result in results])


def judgment_rows(result: TrajectoryJudgment, *, run_id: str | None, label: str | None = None) -> TrajectorySave:
    """The rows a judged trajectory is stored as, stamped now (a run builds them as each trajectory
    finishes and writes them a group at a time)."""
    if result.status != "judged":
        raise ValueError(f"{result.trajectory_id}: nothing to store for a unit in status {result.status!r}")
    now = utcnow()
    derived = derive_label(result.judge, result.model, result.prompt_version, result.rules_version)
    common = {
        "trajectory_id": result.trajectory_id,
        "judge": result.judge,
        "label": label or derived,
        "task": result.task,
        "checklist_sha": result.checklist_sha,
        "model": result.model,
        "prompt_version": result.prompt_version,
        "rules_version": result.rules_version,
        "run_id": run_id,
        "created_at": now,
    }
    judgments = [
        JudgmentRow(
            **common,
            item_id=item.item_id,
            position=position,
            route=item.route,
            verdict_raw=item.verdict_raw,
            reason_raw=item.reason,
            verdict=item.verdict_raw,
            reason=item.reason,
            citations=[c.model_dump() for c in item.citations],
            rationale=item.rationale,
            scored_at=None,
        )
        for position, item in enumerate(result.items)
    ]
    unit = JudgeUnitRow(
        **common,
        content_hash=result.content_hash,
        n_items=len(result.items),
        progress=result.progress,
        rationale=result.rationale,
        citations=[c.model_dump() for c in result.citations],
        reason=result.reason,
    )
    replies = [
        JudgeReplyRow(
            trajectory_id=result.trajectory_id,
            judge=result.judge,
            label=common["label"],
            run_id=run_id,
            created_at=now,
            **r.model_dump(),
        )
        for r in result.replies
    ]
    return TrajectorySave(unit, judgments, replies, named=bool(label) and label != derived)
