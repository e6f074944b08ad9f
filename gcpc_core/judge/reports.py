"""What a judging run reports: the per-run tally that live runs (`runner`) and Batch-API
collection (`batch`) both fill, one judged trajectory at a time."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from ..llm import RunTotals
from .registry import get_judge
from .results import TrajectoryJudgment

__all__ = ["JudgeReport", "account_result"]


@dataclass
class JudgeReport:
    """What one `judge_project` call did."""

    judge: str
    judged: list[str] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)
    """trajectory id → endpoint failure (not stored; a rerun tries again)."""
    skipped: dict[str, str] = field(default_factory=dict)
    run_id: str | None = None
    model: str | None = None
    prompt_version: str = ""
    totals: RunTotals = field(default_factory=RunTotals)
    wall_s: float = 0.0
    verdicts: Counter = field(default_factory=Counter)
    """Raw verdicts and abstain reasons over the judged items, e.g. `Yes`, `Abstain:ungrounded`."""
    batch_id: str | None = None
    """Set when the run submitted a Batch-API job instead of judging live."""

    @property
    def ok(self) -> bool:
        return not self.errors

    def counts(self) -> dict[str, int]:
        """What the run ledger records this run counted."""
        return {"judged": len(self.judged), "errors": len(self.errors), "skipped": len(self.skipped)}

    def lines(self) -> list[str]:
        """Human-readable summary for the CLI."""
        skipped = Counter(self.skipped.values())
        out = [f"{tid} error {why}" for tid, why in sorted(self.errors.items())]
        out += [f"skipped {n}: {why}" for why, n in sorted(skipped.items())]
        if self.verdicts:
            out.append("verdicts: " + ", ".join(f"{k} {v}" for k, v in sorted(self.verdicts.items())))
        out.append(
            f"judge {self.judge}: judged {len(self.judged)}, errors {len(self.errors)}, skipped {len(self.skipped)}; "
            f"{self.totals.summary()}, wall {self.wall_s:.1f}s" + (f", run {self.run_id}" if self.run_id else "")
        )
        return out


def account_result(report: JudgeReport, result: TrajectoryJudgment) -> None:
    """Tally one judged trajectory: an error, or its verdicts (or rating) by kind."""
    if result.status == "error":
        report.errors[result.trajectory_id] = result.reason or "error"
        return
    report.judged.append(result.trajectory_id)
    for item in result.items:
        report.verdicts[item.verdict_raw if item.verdict_raw != "Abstain" else f"Abstain:{item.reason}"] += 1
    if not get_judge(result.judge).has_items:
        report.verdicts["rated" if result.progress is not None else f"unrated:{result.reason}"] += 1
