"""The overview page's data: what the project holds and how far judging, auditing and studies got.

`task_status` is the guided path: per task, what exists (checklist, judgments per judge, scores,
audits), what is missing and the next step with the command that takes it. A task is done only when its
judges' audits are as the triage loop asks: every checklist judge's error-rate interval at most
`defaults.AUDIT_TARGET_WIDTH` wide (the stopping rule, `analysis.active.should_stop`) and no verdict of the
task left with its auditors split — not after its first audit. The Overview page and
`info --task-status` both show it, so the app and the command line tell a new user the same way forward.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field

import pandas as pd

from ..analysis.ablations import decided_counts, outcome_only_warnings
from ..analysis.active import estimate_error, population, verifier_truth
from ..defaults import AUDIT_TARGET_WIDTH
from ..judge.registry import TASK_CHECKLIST_JUDGES, checklist_kind
from ..project_frames import frames_from_store
from ..store import ChecklistRow, Store
from .audit import AuditFilters, audit_list

__all__ = [
    "NEXT_STEPS",
    "TASKS_PER_PAGE",
    "FramesLoader",
    "TaskStatus",
    "judge_warnings",
    "judges_frame",
    "next_step_note",
    "overview_trajectories",
    "status_frame",
    "studies_frame",
    "task_status",
]

NEXT_STEPS: tuple[str, ...] = ("import trials", "synthesize a checklist", "draft a checklist", "judge", "score",
                               "audit", "done")
"""The guided path's steps, in order."""


@dataclass(frozen=True)
class TaskStatus:
    """How far one task got along the guided path, and what to do next."""

    task: str
    verifier_tests: int
    trajectories: int
    checklist_version: int | None
    """The latest frozen checklist's version; None when the task has none."""
    checklist_items: int | None
    failed_versions: int
    """Stored versions that failed their gates (an LLM synthesis that could not be repaired)."""
    judged: dict[str, int] = field(default_factory=dict)
    """Judge → trajectories judged (checklist judges: against the latest frozen checklist)."""
    stale: dict[str, int] = field(default_factory=dict)
    """Checklist judge → trajectories judged against an older checklist version (a rerun judges them again)."""
    scored: dict[str, int] = field(default_factory=dict)
    """Judge → trajectories with scores."""
    audited_items: int = 0
    """Item verdicts of this task's trajectories with a current audit."""
    audit_width: dict[str, float] = field(default_factory=dict)
    """Checklist judge that judged every trajectory → the width of its error-rate interval over the project
    (`analysis.active.estimate_error`; 0 once every verdict is known), which audits narrow to `audit_target`."""
    audit_target: float = AUDIT_TARGET_WIDTH
    """The width the error-rate interval must reach (`defaults.AUDIT_TARGET_WIDTH`, the Triage page's default)."""
    split_items: int = 0
    """Item verdicts of this task the auditors split on (the most common verdicts tie): another auditor settles them."""
    next_step: str = "done"
    """One of `NEXT_STEPS`."""
    command: str = ""
    """The command line that takes the next step (empty when the app is the only way, or nothing is left)."""
    then: str = ""
    """What follows the command before the step is done (a draft is edited and stored)."""

    def counts(self, what: dict[str, int]) -> str:
        """`probe 12/12, gcpc 3/12`: a per-judge count over this task's trajectories."""
        return ", ".join(f"{j} {n}/{self.trajectories}" for j, n in sorted(what.items())) or "none"


def _next(status: TaskStatus, db: str, llm_ready: bool) -> tuple[str, str, str]:
    """(next step, its command, what follows it) for a status whose counts are filled in."""
    if status.trajectories == 0:
        return "import trials", f"python -m gcpc_core import --trials DIR --db {db}", ""
    if status.checklist_version is None:
        if llm_ready:
            return "synthesize a checklist", f"python -m gcpc_core synthesize --db {db} --task {status.task}", ""
        out = f"{status.task}.yaml"
        return ("draft a checklist", f"python -m gcpc_core checklist draft --db {db} --task {status.task} --out {out}",
                f"edit {out}, set 'source: human:<your name>', then: python -m gcpc_core checklist add --db {db} {out}")
    if not any(status.judged.get(j, 0) >= status.trajectories for j in TASK_CHECKLIST_JUDGES):
        judge = "gcpc" if llm_ready else "probe"
        return "judge", f"python -m gcpc_core judge --db {db} --judge {judge}", ""
    if any(status.scored.get(j, 0) < n for j, n in status.judged.items()):
        return "score", f"python -m gcpc_core score --db {db}", ""
    wide = {j: w for j, w in sorted(status.audit_width.items()) if not w <= status.audit_target}
    if wide or status.split_items:
        why = [f"{j}'s error-rate interval is {w:.3f} wide (target {status.audit_target:g})" for j, w in wide.items()]
        if status.split_items:
            why.append(f"{status.split_items} item verdict(s) of this task the auditors split on need another auditor")
        return ("audit", f"python -m gcpc_core triage --db {db} --next 10",
                "audit the proposals (their links open the app's Item audit page, as the Triage page's 'Audit next' "
                "does): " + "; ".join(why))
    return "done", "", ""


TASKS_PER_PAGE = 20
"""Tasks the Overview's guided path shows at once (`ui.paged`)."""

FramesLoader = Callable[[Store], Mapping[str, pd.DataFrame]]
"""How `task_status` reads a project's analysis frames: `project_frames.frames_from_store` (the command line) or
`ui.cached_frames` (pages, cached until the data changes)."""


def _audit_progress(store: Store, judges: set[str], load_frames: FramesLoader) -> tuple[dict[str, float], Counter[str]]:
    """Each of `judges`' error-rate interval width over the project (what is known: the auditors' consensus, else the
    verifier's per-test truth) and, per task, the item verdicts the auditors split on."""
    if not judges:
        return {}, Counter()
    frames = load_frames(store)
    items = frames["items"]
    known = verifier_truth(items, frames["ctrf"])
    widths: dict[str, float] = {}
    splits: Counter[str] = Counter()
    for judge in sorted(judges & set(items["judge"])):
        pop = population(items, frames["audits"], judge, verifier=known)
        if len(pop):
            widths[judge] = estimate_error(pop).width
            splits.update(pop.loc[pop["source"] == "split", "task"])
    return widths, splits


def task_status(store: Store, *, llm_ready: bool = False, load_frames: FramesLoader = frames_from_store,
                ) -> list[TaskStatus]:
    """One `TaskStatus` per task: tasks with trajectories first, then by id (`load_frames` reads the frames the
    audit progress is estimated from)."""
    trajectories = store.trials.trajectories()
    task_of = {t.id: t.task for t in trajectories}
    n_traj = Counter(task_of.values())
    latest: dict[str, ChecklistRow] = {}
    failed: Counter[str] = Counter()
    for row in store.checklists.list(status=None):
        if row.status == "frozen":
            if row.task not in latest or row.version > latest[row.task].version:
                latest[row.task] = row
        else:
            failed[row.task] += 1
    judged: dict[str, Counter[str]] = {}
    stale: dict[str, Counter[str]] = {}
    for (traj_id, judge), unit in store.judging.units().items():
        task = task_of.get(traj_id)
        if task is None:
            continue
        current = latest.get(task)
        fresh = checklist_kind(judge) != "task" or (current is not None and unit.checklist_sha == current.sha)
        (judged if fresh else stale).setdefault(task, Counter())[judge] += 1
    scored: dict[str, Counter[str]] = {}
    for row in store.judging.scores():
        if row.trajectory_id in task_of:
            scored.setdefault(task_of[row.trajectory_id], Counter())[row.judge] += 1
    audited = Counter(task_of.get(a.trajectory_id) for a in store.annotations.list(kind="item_audit"))
    widths, splits = _audit_progress(store, {j for counts in judged.values() for j in counts
                                             if checklist_kind(j) == "task"}, load_frames)
    out = []
    for task in store.trials.tasks():
        row = latest.get(task.id)
        status = TaskStatus(
            task=task.id, verifier_tests=len(task.tests), trajectories=n_traj[task.id],
            checklist_version=row.version if row else None,
            checklist_items=len(row.checklist["items"]) if row else None,
            failed_versions=failed[task.id], judged=dict(judged.get(task.id, {})),
            stale=dict(stale.get(task.id, {})), scored=dict(scored.get(task.id, {})),
            audited_items=audited[task.id],
            audit_width={j: w for j, w in widths.items() if judged.get(task.id, {}).get(j, 0) >= n_traj[task.id]},
            split_items=splits[task.id],
        )
        step, command, then = _next(status, str(store.path), llm_ready)
        out.append(TaskStatus(**{**asdict(status), "next_step": step, "command": command, "then": then}))
    return sorted(out, key=lambda s: (s.trajectories == 0, s.task))


def next_step_note(store: Store, task: str, *, llm_ready: bool = False,
                   load_frames: FramesLoader = frames_from_store) -> str | None:
    """Where the guided path of `task` stands, for a page that has nothing to show until it moves on
    ("…: no checklist yet; next: draft a checklist"); None when nothing is left to do or the task is unknown."""
    status = next((s for s in task_status(store, llm_ready=llm_ready, load_frames=load_frames) if s.task == task),
                  None)
    if status is None or status.next_step == "done":
        return None
    checklist = f"checklist v{status.checklist_version}" if status.checklist_version else "no checklist yet"
    return (f"Task {task}: {checklist}; judged {status.counts(status.judged)}; scored {status.counts(status.scored)}. "
            f"Next: {status.next_step} — the Overview has the button or link that takes it.")


def status_frame(statuses: list[TaskStatus]) -> pd.DataFrame:
    """The statuses as a table with one readable column per stage."""
    rows = [{"task": s.task, "trajectories": s.trajectories, "verifier tests": s.verifier_tests,
             "checklist": (f"v{s.checklist_version} ({s.checklist_items} items)" if s.checklist_version
                           else ("failed synthesis only" if s.failed_versions else "none")),
             "judged": s.counts(s.judged) + (f" (stale: {s.counts(s.stale)})" if s.stale else ""),
             "scored": s.counts(s.scored), "audited items": s.audited_items, "next step": s.next_step}
            for s in statuses]
    return pd.DataFrame(rows, columns=["task", "trajectories", "verifier tests", "checklist", "judged", "scored",
                                       "audited items", "next step"])


def judges_frame(trajectories: pd.DataFrame, stats: pd.DataFrame) -> pd.DataFrame:
    """Per judge: trajectories judged (of all), items, Abstain share, mean partial credit, items audited."""
    rows = []
    total = len(trajectories)
    for judge, g in stats.groupby("judge", sort=True):
        items = int(g["n_items"].sum())
        rows.append({"judge": judge, "trajectories": f"{len(g)}/{total}", "items": items,
                     "abstain_share": float(g["n_abstain"].sum() / items) if items else None,
                     "mean_partial_credit": float(g["partial_credit"].mean()) if g["partial_credit"].notna().any() else None,
                     "items_audited": f"{int(g['audited'].sum())}/{items}",
                     "auditor_disagreements": int(g["auditor_disagreements"].sum()),
                     "judge_disagreements": int(g["judge_disagreements"].sum())})
    return pd.DataFrame(rows, columns=["judge", "trajectories", "items", "abstain_share", "mean_partial_credit",
                                       "items_audited", "auditor_disagreements", "judge_disagreements"])


def judge_warnings(stats: pd.DataFrame) -> list[str]:
    """What the Overview warns about each judge's verdicts (from `review.audit.judge_stats`): a judge that abstained
    on every item has a partial credit that only restates the official outcome, and an AUC of it is no evidence;
    trajectories with no decided item are counted (the analysis report's own words, `outcome_only_warnings`)."""
    if stats.empty:
        return []
    per = stats.assign(n_decided=stats["n_yes"] + stats["n_no"])[["trajectory_id", "judge", "n_items", "n_decided"]]
    return outcome_only_warnings(decided_counts(per))


def overview_trajectories(trajectories: pd.DataFrame, stats: pd.DataFrame, filters: AuditFilters) -> pd.DataFrame:
    """Trajectories passing `filters`, with one partial-credit column per judge (`pc_<judge>`)."""
    view = audit_list(trajectories, stats, None, filters)
    wide = stats.pivot(index="trajectory_id", columns="judge", values="partial_credit") if len(stats) else None
    if wide is not None:
        wide.columns = [f"pc_{j}" for j in wide.columns]
        view = view.merge(wide, left_on="trajectory_id", right_index=True, how="left")
    drop = ["n_items", "n_yes", "n_no", "n_abstain", "partial_credit", "judge_disagreements", "audited",
            "auditor_disagreements"]
    return view.drop(columns=[c for c in drop if c in view.columns])


def studies_frame(store: Store) -> pd.DataFrame:
    """Per human study: status, raters (simulated or not) and answers in over answers assigned."""
    from annotations.admin import rater_progress  # annotations builds on gcpc_core

    rows = []
    for s in store.studies.list():
        progress = rater_progress(store, s.id)
        done, total = sum(r["done"] for r in progress), sum(r["total"] for r in progress)
        rows.append({"study": s.id, "name": s.name, "status": s.status, "raters": len(progress),
                     "simulated": s.is_simulated, "answers": f"{done}/{total}",
                     "share_done": round(done / total, 3) if total else 1.0})
    return pd.DataFrame(rows, columns=["study", "name", "status", "raters", "simulated", "answers", "share_done"])
