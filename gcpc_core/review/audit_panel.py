"""What the item audit page's item panel works on and says: its context (one trajectory's verdicts from one
judge's run, audited by one reviewer), its widget keys, and the plain lines it shows. The page lays them out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..models import Task
from ..store import Store
from .audit import ItemView, RefView, RunVerdict, explain_reason
from .excerpts import Span, line_range

__all__ = [
    "COLLAPSED_CHARS",
    "AuditContext",
    "audit_flash",
    "correction_prompt",
    "item_text",
    "no_quote_text",
    "other_judges_line",
    "other_run_line",
    "quote_location",
    "reason_lines",
    "ref_line",
]

COLLAPSED_CHARS = 160
"""Characters of an item's text a closed panel shows."""


@dataclass(frozen=True)
class AuditContext:
    """What every item panel of the audit page needs: the trajectory, the judge's run whose verdicts are
    audited, the task, the reviewer, and the readable names of the judge's runs."""

    store: Store
    trajectory_id: str
    judge: str
    label: str | None
    """The run audited (the judge's label)."""
    default_label: str | None
    """The judge's default run: its items' widget keys carry no label."""
    task: Task | None
    """The trajectory's task (None when it is not imported)."""
    reviewer: str
    """Who audits ("" when no name is set: the controls are disabled)."""
    run_names: Mapping[str, str]
    """Label → readable name (judge · model · prompt · date) of each of the judge's runs."""
    drawn: tuple[str, str, str] | None = None
    """``(trajectory, judge, item)`` of the verdict a proposal link (drawn at random) opened, if any."""

    def selection(self, item_id: str) -> str:
        """How item `item_id`'s verdict came to be audited (`models.AuditSelection`): ``random`` only for the
        verdict a proposal link opened; everything reached otherwise was chosen."""
        return "random" if self.drawn == (self.trajectory_id, self.judge, item_id) else "chosen"

    def key(self, item_id: str) -> str:
        """The widget-key prefix of item `item_id`'s panel: `audit:{trajectory}:{judge}:{item}`, with
        `:{label}` after it for a run other than the default."""
        base = f"audit:{self.trajectory_id}:{self.judge}:{item_id}"
        return base if self.label == self.default_label else f"{base}:{self.label}"

    def run_name(self, label: str) -> str:
        """The readable name of run `label` (the label itself when it has none)."""
        return self.run_names.get(label, label)


def item_text(view: ItemView, focused: bool) -> str:
    """The item's text: whole in the open panel, its first `COLLAPSED_CHARS` characters in a closed one."""
    if focused or len(view.text) <= COLLAPSED_CHARS:
        return view.text
    return view.text[:COLLAPSED_CHARS] + "…"


def reason_lines(view: ItemView) -> list[str]:
    """"Why: …" for the raw and the postprocessed reason, each once."""
    return ["Why: " + explain_reason(r) for r in dict.fromkeys(r for r in (view.reason_raw, view.reason) if r)]


def other_judges_line(view: ItemView) -> str | None:
    """The other judges' raw verdicts of the item on one line, or None when no other judge has one."""
    if not view.other_judges:
        return None
    return "Other judges (raw): " + ", ".join(f"{j} {v}" for j, v in view.other_judges.items())


def other_run_line(run: RunVerdict, view: ItemView) -> str:
    """What one of the judge's other runs is, and whether its raw verdict is the audited run's."""
    return (f"run {run.label} · model {run.model or 'offline'}"
            + (" · SIMULATED verdicts (demo), not a judge run" if run.simulated else "")
            + (" · same verdict" if run.verdict_raw == view.verdict_raw else " · DIFFERENT verdict"))


def no_quote_text(view: ItemView) -> str:
    """Why an item has no task quote."""
    return "(no task quote: " + ("the endpoint item is the official outcome)" if view.route == "endpoint"
                                 else "a task-agnostic item)")


def quote_location(span: Span, task: Task | None) -> str:
    """Where a located task quote is in the instruction: its lines (0–0 without the task) and characters."""
    first, last = line_range(task.instruction, span) if task else (0, 0)
    return f"instruction.md lines {first}–{last}, characters {span.start:,}–{span.end:,}"


def ref_line(ref: RefView) -> str:
    """A verifier ref with its line in the test file, or why it has none."""
    return ref.ref + (f" (line {ref.lineno})" if ref.lineno else " — not a parsed test of this task")


def correction_prompt(view: ItemView, options: Sequence[str]) -> str:
    """The question asked after Disagree without a corrected verdict, numbering the verdicts to choose."""
    return (f"You disagree with the judge's {view.verdict_raw}. Which verdict is right? "
            + " · ".join(f"{k} = {v}" for k, v in enumerate(options, 1)))


def audit_flash(agree: bool, corrected: str | None, written: bool) -> str:
    """The message shown after an audit is saved (or found identical to the reviewer's current one)."""
    if not written:
        return "Same as your current audit: nothing new stored."
    return "Audit saved: " + ("agree" if agree else f"disagree → {corrected}")
