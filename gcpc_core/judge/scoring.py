"""`score_project`: postprocess stored raw verdicts with the official outcome, then score.

Pure functions from `outcome` do the work; this module only reads raw verdicts and writes
postprocessed verdicts (the endpoint item included) and one score row per (trajectory, judge).
Always recomputed from the raw verdicts, so scoring is idempotent and safe to rerun at any time.
A rating judge (`holistic`) has no items: its progress is stored as its `partial_credit`. A judge
name not registered (one since removed) is scored as an item judge, from its stored verdicts.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from ..models import ENDPOINT_ITEM_ID, Citation, ItemJudgment
from ..outcome import postprocess, score_items
from ..store import JudgmentRow, ScoreRow, Store, utcnow
from .registry import find_judge

__all__ = ["ScoreReport", "score_project"]


@dataclass
class ScoreReport:
    scored: Counter = field(default_factory=Counter)
    """(judge, label) → trajectories scored in that labelled run."""
    missing_trajectories: list[str] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        """What the run ledger records: trajectories scored per `judge=label` run, and those missing."""
        return {**{f"{judge}={label}": n for (judge, label), n in sorted(self.scored.items())},
                "missing_trajectories": len(self.missing_trajectories)}

    def lines(self) -> list[str]:
        out = [f"scored {n} trajectories for judge {judge} (run {label})"
               for (judge, label), n in sorted(self.scored.items())]
        if not self.scored:
            out.append("nothing to score: run `judge` first")
        return out


def _item(row: JudgmentRow) -> ItemJudgment:
    return ItemJudgment(
        item_id=row.item_id,
        route=row.route,
        verdict_raw=row.verdict_raw,
        verdict=row.verdict_raw,
        citations=[Citation(**c) for c in row.citations or []],
        rationale=row.rationale or "",
        reason=row.reason_raw,
    )


def score_project(store: Store, *, judge: str | None = None) -> ScoreReport:
    """Postprocess and score every judged (trajectory, judge) of every labelled run — or only `judge`'s;
    one transaction."""
    report = ScoreReport()
    trajectories = {t.id: t for t in store.trials.trajectories()}
    now = utcnow()
    writes: list[tuple[ScoreRow, list[JudgmentRow]]] = []
    for run in store.judging.labels():
        if judge is None or run.judge == judge:
            writes += _score_run(store, report, trajectories, run.judge, run.label, now)
    store.judging.save_scores(writes)
    return report


def _score_run(
    store: Store, report: ScoreReport, trajectories: dict, judge: str, label: str, now: str
) -> list[tuple[ScoreRow, list[JudgmentRow]]]:
    """Score rows and postprocessed verdicts of one labelled run of `judge`."""
    selected = {judge: label}
    rows_by_unit: dict[tuple[str, str], list[JudgmentRow]] = {}
    for row in store.judging.judgments(judge=judge, labels=selected):
        if row.route != "endpoint":
            rows_by_unit.setdefault((row.trajectory_id, row.judge), []).append(row)
    writes: list[tuple[ScoreRow, list[JudgmentRow]]] = []
    for (traj_id, judge_name), unit in store.judging.units(judge, labels=selected).items():
        traj = trajectories.get(traj_id)
        if traj is None:
            report.missing_trajectories.append(traj_id)
            continue
        provenance = unit.model_dump(include={"label", "checklist_sha", "model", "prompt_version", "rules_version",
                                              "run_id"})
        ident = {"trajectory_id": traj_id, "judge": judge_name, "task": traj.task, "scored_at": now, **provenance}
        base = {**ident, "outcome": traj.outcome, "condition": traj.condition}
        raw_rows = rows_by_unit.get((traj_id, judge_name), [])
        spec = find_judge(judge_name)
        if spec is not None and not spec.has_items:
            score = ScoreRow(**base, partial_credit=unit.progress, evidence_coverage=None, perfect=None,
                             perfect_with_endpoint=None, n_items=0, n_yes=0, n_no=0, n_abstain=0)
            writes.append((score, []))
        else:
            items = postprocess([_item(r) for r in raw_rows], traj.outcome)
            s = score_items(items)
            by_id = {r.item_id: r for r in raw_rows}
            rows = []
            for position, item in enumerate(items):
                if item.item_id == ENDPOINT_ITEM_ID:
                    rows.append(JudgmentRow(**ident, item_id=item.item_id, position=position, route=item.route,
                                            verdict_raw=item.verdict_raw, reason_raw=item.reason, verdict=item.verdict,
                                            reason=item.reason, citations=[], rationale=item.rationale,
                                            created_at=now))
                else:
                    rows.append(by_id[item.item_id].replaced(verdict=item.verdict, reason=item.reason, scored_at=now))
            writes.append((ScoreRow(**base, **s.model_dump()), rows))
        report.scored[judge_name, label] += 1
    return writes
