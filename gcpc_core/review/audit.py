"""The item audit page's data: which trajectories to audit, and every item verdict with its evidence.

For one (trajectory, judge) each item becomes an `ItemView`: the route and text, the task quote
located in the full instruction, every verifier ref with its test's source and this trajectory's
CTRF status, raw and postprocessed verdicts with reasons explained, and every citation located in
its event with the lines around it. Audits themselves go through `annotations.audits`
(append-only); `record_audit` only adds the checks the page needs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from annotations.audits import VERDICTS, record_item_audit

from ..analysis.item_accuracy import node_id, same_node
from ..checklist import Checklist, ChecklistItem, fixed_checklist, load_rules, split_ref
from ..evidence import EVIDENCE_KINDS
from ..judge.grounding import REASON_JUDGE_ABSTAIN, REASON_NOT_JUDGED, REASON_UNGROUNDED, REASON_UNKNOWN_ITEM
from ..judge.probe import REASON_NO_MATCH, REASON_NO_PROBE
from ..judge.registry import checklist_kind
from ..models import ENDPOINT_ITEM_ID, SCORED_OUTCOMES, CtrfTest, Event, Task, Trajectory, is_script_ref
from ..store import AnnotationRow, JudgmentRow, ScoreRow, Store
from .excerpts import Excerpt, Span, excerpt, locate

__all__ = [
    "ITEM_SHOW",
    "REASON_TEXT",
    "TRAJECTORY_SHOW",
    "AuditFilters",
    "CitationView",
    "ItemView",
    "QuoteView",
    "RefView",
    "RunVerdict",
    "audit_list",
    "checklist_items",
    "correction_options",
    "explain_reason",
    "filter_items",
    "history_lines",
    "item_flags",
    "item_label",
    "item_views",
    "judge_stats",
    "neighbour",
    "record_audit",
    "ref_status",
    "trajectory_frame",
    "trajectory_label",
    "trajectory_summary",
]

REASON_TEXT: dict[str, str] = {
    REASON_UNGROUNDED: "ungrounded: the judge answered Yes/No, but none of its citations is a verbatim span of an "
                       "evidence event, so the grounding check made the verdict Abstain",
    REASON_NOT_JUDGED: "not judged: the judge's reply did not cover this item",
    REASON_UNKNOWN_ITEM: "not judged: the judge's reply used item ids that are not in the checklist",
    REASON_JUDGE_ABSTAIN: "the judge itself answered Abstain: not enough evidence either way",
    REASON_NO_PROBE: "the item has no probe, so the probe judge cannot decide it",
    REASON_NO_MATCH: "no probe of the item matched the evidence",
    "official_pass": "postprocessing: the official verifier PASSed, so this assertion item counts as Yes",
    "official_fail": "postprocessing: the official verifier FAILed, so the virtual endpoint item is No",
}
"""Plain explanations of the `reason` codes judging and postprocessing write."""


def explain_reason(reason: str | None) -> str:
    """A reason code in words (unknown codes are shown as they are)."""
    return "" if not reason else REASON_TEXT.get(reason, reason)


# ---------------------------------------------------------------- which trajectories


TRAJECTORY_COLUMNS = ["trajectory_id", "task", "agent", "model", "condition", "trial_index", "outcome", "reward",
                      "n_events", "ctrf_passed", "ctrf_failed"]
STAT_COLUMNS = ["trajectory_id", "judge", "n_items", "n_yes", "n_no", "n_abstain", "partial_credit",
                "judge_disagreements", "audited", "auditor_disagreements"]


def trajectory_frame(store: Store) -> pd.DataFrame:
    """One row per trajectory: identity, official outcome, event count and CTRF pass/fail counts."""
    n_events = store.trials.event_counts()
    rows = [{"trajectory_id": t.id, "task": t.task, "agent": t.agent, "model": t.model, "condition": t.condition,
             "trial_index": t.trial_index, "outcome": t.outcome, "reward": t.reward,
             "n_events": n_events.get(t.id, 0),
             "ctrf_passed": sum(c.status == "passed" for c in t.ctrf),
             "ctrf_failed": sum(c.status == "failed" for c in t.ctrf)} for t in store.trials.trajectories()]
    return pd.DataFrame(rows, columns=TRAJECTORY_COLUMNS)


def judge_stats(store: Store, labels: Mapping[str, str] | None = None) -> pd.DataFrame:
    """One row per judged (trajectory, judge) of each judge's chosen run (default label unless `labels`
    says otherwise): raw verdict counts (endpoint excluded), partial credit, items where judges' raw
    verdicts differ, items audited and audits that disagree."""
    rows = [r.model_dump() for r in store.judging.judgments(labels=labels) if r.route != "endpoint"]
    items = pd.DataFrame(rows, columns=["trajectory_id", "judge", "item_id", "verdict_raw"])
    if items.empty:
        return pd.DataFrame(columns=STAT_COLUMNS)
    spread = items.groupby(["trajectory_id", "item_id"])["verdict_raw"].nunique()
    contested = set(spread[spread > 1].index)
    items["contested"] = [(t, i) in contested for t, i in zip(items["trajectory_id"], items["item_id"])]
    items["yes"], items["no"] = items["verdict_raw"] == "Yes", items["verdict_raw"] == "No"
    items["abstain"] = items["verdict_raw"] == "Abstain"
    stats = (items.groupby(["trajectory_id", "judge"])
             .agg(n_items=("item_id", "size"), n_yes=("yes", "sum"), n_no=("no", "sum"),
                  n_abstain=("abstain", "sum"), judge_disagreements=("contested", "sum"))
             .reset_index())
    audits = pd.DataFrame(
        [{"trajectory_id": a.trajectory_id, "judge": a.judge, "item_id": a.item_id,
          "disagree": not a.value["agree"]} for a in store.annotations.list(kind="item_audit", labels=labels)],
        columns=["trajectory_id", "judge", "item_id", "disagree"]).astype({"disagree": bool})
    keys = ["trajectory_id", "judge"]
    per = pd.concat([audits.groupby(keys)["item_id"].nunique().rename("audited"),
                     audits.loc[audits["disagree"]].groupby(keys)["item_id"].nunique().rename("auditor_disagreements")],
                    axis=1).reset_index()
    scores = pd.DataFrame([s.model_dump() for s in store.judging.scores(labels=labels)], columns=["trajectory_id", "judge", "partial_credit"])
    stats = stats.merge(per, on=["trajectory_id", "judge"], how="left").merge(
        scores[["trajectory_id", "judge", "partial_credit"]], on=["trajectory_id", "judge"], how="left")
    stats[["audited", "auditor_disagreements"]] = stats[["audited", "auditor_disagreements"]].fillna(0).astype(int)
    return stats[STAT_COLUMNS]


TRAJECTORY_SHOW = ("all", "judged", "judges disagree", "auditors disagree", "not fully audited")
"""Which trajectories the audit list keeps (for the chosen judge)."""


@dataclass(frozen=True)
class AuditFilters:
    """The audit page's trajectory filters; empty tuples mean no restriction."""

    tasks: tuple[str, ...] = ()
    outcomes: tuple[str, ...] = ()
    conditions: tuple[str, ...] = ()
    show: str = "all"


def audit_list(trajectories: pd.DataFrame, stats: pd.DataFrame, judge: str | None, filters: AuditFilters) -> pd.DataFrame:
    """Trajectories with the chosen judge's statistics (zeros when it has not judged one), filtered."""
    mine = stats[stats["judge"] == judge].drop(columns="judge") if judge else stats.iloc[0:0].drop(columns="judge")
    out = trajectories.merge(mine, on="trajectory_id", how="left")
    counts = ["n_items", "n_yes", "n_no", "n_abstain", "judge_disagreements", "audited", "auditor_disagreements"]
    out[counts] = out[counts].fillna(0).astype(int)
    keep = pd.Series(True, index=out.index)
    for column, allowed in (("task", filters.tasks), ("outcome", filters.outcomes), ("condition", filters.conditions)):
        if allowed:
            keep &= out[column].isin(allowed)
    show = filters.show
    if show == "judged":
        keep &= out["n_items"] > 0
    elif show == "judges disagree":
        keep &= out["judge_disagreements"] > 0
    elif show == "auditors disagree":
        keep &= out["auditor_disagreements"] > 0
    elif show == "not fully audited":
        keep &= (out["n_items"] > 0) & (out["audited"] < out["n_items"])
    elif show != "all":
        raise ValueError(f"unknown filter {show!r}; one of {TRAJECTORY_SHOW}")
    return out[keep].reset_index(drop=True)


def trajectory_label(row: Mapping[str, Any]) -> str:
    """One line for the trajectory chooser: id, outcome, condition, audit progress, disagreements."""
    flags = [f"{row['judge_disagreements']} judge disagreements"] if row["judge_disagreements"] else []
    flags += [f"{row['auditor_disagreements']} auditor disagreements"] if row["auditor_disagreements"] else []
    return " · ".join([row["trajectory_id"], row["outcome"], row["condition"],
                       f"audited {row['audited']}/{row['n_items']}", *flags])


def trajectory_summary(row: Mapping[str, Any], judge: str | None, score: ScoreRow | None = None) -> list[str]:
    """Plain lines about a trajectory: identity and official outcome, the judge's raw counts, and (given
    its stored score row) the scores after the official outcome was applied."""
    lines = [f"{row['task']} · {row['agent']} · {row['model']} · {row['condition']} · trial #{row['trial_index']} · "
             f"official {row['outcome']} (reward {row['reward']}) · CTRF {row['ctrf_passed']} passed, "
             f"{row['ctrf_failed']} failed · {row['n_events']} events"]
    if judge and row["n_items"]:
        pc = row["partial_credit"]
        lines.append(f"{judge}: {row['n_items']} items, {row['n_yes']} Yes / {row['n_no']} No / {row['n_abstain']} "
                     "Abstain as judged (raw)"
                     + ("" if score is not None else f" · partial credit {'n/a' if pd.isna(pc) else f'{pc:.3f}'}"))
    if judge and score is not None and score.n_items:
        def share(v: object) -> str:
            return "n/a" if v is None or pd.isna(v) else f"{float(v):.3f}"  # type: ignore[arg-type]

        lines.append(f"scored: partial credit {share(score.partial_credit)} · evidence coverage "
                     f"{share(score.evidence_coverage)} · Perfect {score.perfect} · Perfect with endpoint "
                     f"{score.perfect_with_endpoint} · after the official outcome {score.n_yes} Yes / "
                     f"{score.n_no} No / {score.n_abstain} Abstain"
                     + (" (endpoint item included)" if score.outcome == "FAIL" else ""))
    return lines


def neighbour(ids: Sequence[str], current: str | None, step: int) -> str | None:
    """The id `step` places after `current` in `ids` (clamped); the first id when `current` is not listed."""
    if not ids:
        return None
    if current not in ids:
        return ids[0]
    return ids[min(max(list(ids).index(current) + step, 0), len(ids) - 1)]


# ---------------------------------------------------------------- one trajectory's items


@dataclass(frozen=True)
class QuoteView:
    """The item's task quote, located in the instruction (span None: not found verbatim)."""

    quote: str
    span: Span | None
    excerpt: Excerpt


@dataclass(frozen=True)
class RefView:
    """One verifier ref of an item: the test's source and this trajectory's CTRF results for it."""

    ref: str
    node_id: str
    param: str | None
    file: str | None
    lineno: int | None
    source: str | None
    """The test function's source lines; None when the ref names no parsed test."""
    docstring: str | None
    status: str
    """`passed`, `failed`, a mix such as `skipped`, `not in CTRF report` or `no CTRF report`; for a verifier
    script the CTRF report does not list, the official outcome (`passed (the official outcome: …)`)."""
    results: tuple[CtrfTest, ...] = ()


@dataclass(frozen=True)
class CitationView:
    """One citation, located in the cited event (span None: the quote is not in it verbatim)."""

    event_id: str
    quote: str
    event: Event | None
    in_evidence: bool
    span: Span | None
    excerpt: Excerpt | None


@dataclass(frozen=True)
class RunVerdict:
    """The same item as another labelled run of the same judge decided it (e.g. another model)."""

    label: str
    model: str | None
    simulated: bool
    verdict_raw: str
    reason_raw: str | None
    rationale: str
    citations: tuple[CitationView, ...]


@dataclass(frozen=True)
class ItemView:
    """Everything the auditor sees for one item verdict of one judge."""

    item_id: str
    route: str
    text: str
    quote: QuoteView | None
    refs: tuple[RefView, ...]
    verdict_raw: str
    reason_raw: str | None
    verdict: str
    reason: str | None
    rationale: str
    citations: tuple[CitationView, ...]
    other_judges: dict[str, str] = field(default_factory=dict)
    """Raw verdicts of the other judges that judged the same item id."""
    problems: tuple[str, ...] = ()
    """What the judge's replies got wrong on this item (e.g. rejected citations)."""
    other_runs: tuple[RunVerdict, ...] = ()
    """The item's raw verdicts in the judge's other labelled runs, with their citations."""

    @property
    def auditable(self) -> bool:
        """The endpoint item is the official outcome itself: there is nothing to audit."""
        return self.route != "endpoint"

    @property
    def overwritten(self) -> bool:
        return self.verdict != self.verdict_raw

    @property
    def judges_disagree(self) -> bool:
        return any(v != self.verdict_raw for v in self.other_judges.values())


def ref_status(ref: str, ctrf: Sequence[CtrfTest]) -> tuple[str, tuple[CtrfTest, ...]]:
    """The status of verifier ref `ref` in a CTRF report, and the results it rests on.

    A plain ref covers every parametrization (`[param]` results) of its test; a ref with a
    `[param]` suffix only its own. Failed as soon as one result failed, passed when all passed.
    """
    if not ctrf:
        return "no CTRF report", ()
    base, param = split_ref(ref)
    if param is None:
        hits = tuple(c for c in ctrf if same_node(node_id(c.name), node_id(base)))
    else:
        hits = tuple(c for c in ctrf if same_node(c.name.rsplit("/", 1)[-1], ref.strip()))
    if not hits:
        return "not in CTRF report", ()
    statuses = {c.status.lower() for c in hits}
    if "failed" in statuses:
        return "failed", hits
    if statuses == {"passed"}:
        return "passed", hits
    return ", ".join(sorted(statuses)), hits


def _ref_view(ref: str, task: Task, traj: Trajectory) -> RefView:
    base, param = split_ref(ref)
    test = next((t for t in task.tests if t.node_id == base), None)
    source = None
    if test is not None and task.verifier_text(test.file):
        lines = task.verifier_text(test.file).split("\n")
        source = "\n".join(lines[test.lineno - 1 : test.end_lineno])
    status, results = ref_status(ref, traj.ctrf)
    if not results and is_script_ref(base) and traj.outcome in SCORED_OUTCOMES:
        status = f"{'passed' if traj.outcome == 'PASS' else 'failed'} (the official outcome: the script as a whole)"
    return RefView(ref=ref, node_id=base, param=param, file=test.file if test else None,
                   lineno=test.lineno if test else None, source=source, docstring=test.docstring if test else None,
                   status=status, results=results)


def _citation_view(citation: dict, events: dict[str, Event]) -> CitationView:
    event = events.get(citation["event_id"])
    span = locate(citation["quote"], event.text) if event is not None else None
    return CitationView(event_id=citation["event_id"], quote=citation["quote"], event=event,
                        in_evidence=event is not None and event.kind in EVIDENCE_KINDS, span=span,
                        excerpt=excerpt(event.text, span) if event is not None and span is not None else None)


def checklist_items(store: Store, rows: Iterable[JudgmentRow], judge: str, task_id: str) -> dict[str, ChecklistItem]:
    """Items of the checklist(s) the judgments cite by sha; the fixed judge's come from `rules/`."""
    items: dict[str, ChecklistItem] = {}
    for sha in {r.checklist_sha for r in rows if r.checklist_sha}:
        row = store.checklists.get(sha)
        if row and row.checklist:
            items.update({i.id: i for i in Checklist.model_validate(row.checklist).items})
    if not items and checklist_kind(judge) == "fixed":
        items = {i.id: i for i in fixed_checklist(load_rules(), task_id).items}
    return items


def item_views(store: Store, trajectory_id: str, judge: str, label: str | None = None) -> list[ItemView]:
    """Every item verdict of `judge`'s run `label` (default: its default run) on one trajectory, in
    checklist order, endpoint last; each with the other judges' verdicts and the other runs' of this judge."""
    traj = store.trials.get_trajectory(trajectory_id)
    if traj is None:
        raise KeyError(f"no trajectory {trajectory_id!r}")
    task = store.trials.get_task(traj.task)
    chosen = {judge: label} if label else None
    everyone = store.judging.judgments(trajectory_id=trajectory_id, labels=chosen)
    rows = [r for r in everyone if r.judge == judge]
    label = rows[0].label if rows else label
    if not rows or task is None:
        return []
    others: dict[str, dict[str, str]] = {}
    for r in everyone:
        if r.judge != judge and r.route != "endpoint":
            others.setdefault(r.item_id, {})[r.judge] = r.verdict_raw
    checklist = checklist_items(store, rows, judge, task.id)
    events = {e.id: e for e in store.trials.events(trajectory_id)}
    runs = {(r.judge, r.label): r for r in store.judging.labels()}
    other_runs: dict[str, list[RunVerdict]] = {}
    for r in store.judging.judgments(trajectory_id=trajectory_id, judge=judge, all_labels=True):
        if r.label != label and r.route != "endpoint":
            run = runs.get((judge, r.label))
            other_runs.setdefault(r.item_id, []).append(RunVerdict(
                label=r.label, model=r.model, simulated=bool(run and run.simulated), verdict_raw=r.verdict_raw,
                reason_raw=r.reason_raw, rationale=r.rationale or "",
                citations=tuple(_citation_view(c, events) for c in r.citations or [])))
    problems: dict[str, list[str]] = {}
    for reply in store.judging.replies(trajectory_id=trajectory_id, judge=judge, labels=chosen):
        for line in reply.problems or []:
            item_id, sep, rest = str(line).partition(": ")
            if sep:
                problems.setdefault(item_id, []).append(rest)
    views = []
    for r in sorted(rows, key=lambda r: (r.route == "endpoint", r.position or 0)):
        item = checklist.get(r.item_id)
        if r.item_id == ENDPOINT_ITEM_ID:
            text = f"Official outcome: the verifier reported {traj.outcome} (virtual endpoint item)."
        else:
            text = item.text if item else "(item text not found: its checklist is not stored)"
        quote = None
        if item is not None and item.task_quote:
            span = locate(item.task_quote, task.instruction)
            quote = QuoteView(item.task_quote, span, excerpt(task.instruction, span, context=2))
        views.append(ItemView(
            item_id=r.item_id, route=r.route, text=text, quote=quote,
            refs=tuple(_ref_view(ref, task, traj) for ref in (item.verifier_refs if item else [])),
            verdict_raw=r.verdict_raw, reason_raw=r.reason_raw, verdict=r.verdict, reason=r.reason,
            rationale=r.rationale or "",
            citations=tuple(_citation_view(c, events) for c in r.citations or []),
            other_judges=others.get(r.item_id, {}), problems=tuple(problems.get(r.item_id, [])),
            other_runs=tuple(other_runs.get(r.item_id, [])),
        ))
    return views


# ---------------------------------------------------------------- audits of those items


ITEM_SHOW = ("all", "not audited", "judges disagree", "auditors disagree", "Abstain", "changed by postprocessing")
"""Which items of a trajectory the audit page lists."""


def item_flags(view: ItemView, audits: Sequence[AnnotationRow]) -> dict[str, bool]:
    """What is notable about an item given the current audits of this trajectory and judge."""
    mine = [a for a in audits if a.item_id == view.item_id]
    return {
        "audited": bool(mine),
        "auditors disagree": any(not a.value["agree"] for a in mine),
        "judges disagree": view.judges_disagree,
        "Abstain": view.verdict_raw == "Abstain",
        "changed by postprocessing": view.overwritten,
    }


def item_label(view: ItemView, audits: Sequence[AnnotationRow]) -> str:
    """One line for the item chooser: id, route, raw verdict (→ the scored one when postprocessing
    changed it) and what else is notable, each said once: the verdict already says Abstain and a
    change, and the endpoint item's id already names its route."""
    verdict = view.verdict_raw + (f" → scored {view.verdict}" if view.overwritten else "")
    flags = [name for name, on in item_flags(view, audits).items()
             if on and name not in ("Abstain", "changed by postprocessing")]
    parts: list[str] = []
    for part in (view.item_id, view.route, verdict, *flags):
        if part.lower() not in {p.lower() for p in parts}:
            parts.append(part)
    return " · ".join(parts)


def correction_options(view: ItemView) -> list[str]:
    """The verdicts an auditor who disagrees may record instead of the judge's raw one."""
    return [v for v in VERDICTS if v != view.verdict_raw]


def filter_items(views: Sequence[ItemView], audits: Sequence[AnnotationRow], show: str) -> list[ItemView]:
    """The items `show` (one of `ITEM_SHOW`) keeps."""
    if show not in ITEM_SHOW:
        raise ValueError(f"unknown item filter {show!r}; one of {ITEM_SHOW}")
    if show == "all":
        return list(views)
    if show == "not audited":
        return [v for v in views if v.auditable and not item_flags(v, audits)["audited"]]
    return [v for v in views if item_flags(v, audits)[show]]


def record_audit(
    store: Store, view: ItemView, *, trajectory_id: str, judge: str, reviewer: str, agree: bool,
    corrected_verdict: str | None = None, note: str | None = None, client_token: str | None = None,
    label: str | None = None, selection: str | None = None,
) -> tuple[dict, bool]:
    """Append one audit of `view`'s raw verdict in `judge`'s run `label` (default: its default run), with how the
    verdict was selected (`AuditContext.selection`); (row, whether a row was written).

    Raises ValueError for a missing reviewer, the endpoint item, or a "correction" equal to the
    verdict being disagreed with.
    """
    if not reviewer.strip():
        raise ValueError("set your reviewer name in the sidebar first")
    if not view.auditable:
        raise ValueError("the endpoint item is the official outcome: it cannot be audited")
    if not agree and corrected_verdict == view.verdict_raw:
        raise ValueError(f"a disagreement needs a verdict other than the judge's {view.verdict_raw}")
    if not agree and corrected_verdict not in VERDICTS:
        raise ValueError(f"choose the corrected verdict: one of {', '.join(VERDICTS)}")
    return record_item_audit(store, trajectory_id=trajectory_id, item_id=view.item_id, judge=judge,
                             reviewer=reviewer.strip(), agree=agree, corrected_verdict=None if agree else corrected_verdict,
                             note=note, client_token=client_token, label=label, selection=selection)


def history_lines(history: Sequence[AnnotationRow]) -> list[str]:
    """One plain line per audit version, oldest first, marking superseded versions."""
    superseded = {h.supersedes for h in history if h.supersedes is not None}
    lines = []
    for h in history:
        what = "agree" if h.value["agree"] else f"disagree → {h.value['verdict']}"
        old = " (superseded)" if h.id in superseded else ""
        note = f" — {h.note}" if h.note else ""
        lines.append(f"{h.created_at} · {h.rater}: {what}{old}{note}")
    return lines
