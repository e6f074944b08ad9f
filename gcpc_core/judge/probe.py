"""The `probe` judge: deterministic verdicts from item probes, offline, no LLM.

A probe is a regular expression over the evidence view with the verdict a match supports
(`yes` or `no`). Each probe is searched in the full text of every evidence event the item may
cite (`grounding.may_cite`: never an output that only echoes its own command, and for an item
about an artifact or value never a tool call's text, which shows only what was attempted); the match in
the latest event decides the item (the run's final state counts, as for any judge), and on a tie
within one event `no` wins. The matched span is cited verbatim, so probe verdicts pass the same
grounding check as an LLM's. An item without probes, or whose probes match nothing, is Abstain.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..checklist import Checklist, ChecklistItem
from ..evidence import EvidenceView
from ..models import Citation, ItemJudgment
from .grounding import abstain, item_judgment, may_cite
from .prompts import PROBE_VERSION
from .registry import JudgeCall, JudgeSpec, Verdicts, register_judge

__all__ = ["MAX_PROBE_QUOTE", "PROBE", "REASON_NO_MATCH", "REASON_NO_PROBE", "probe_item", "probe_judge"]

MAX_PROBE_QUOTE = 300
"""A longer match is cited by its first characters: still a verbatim span, and readable."""
REASON_NO_PROBE = "no_probe"
REASON_NO_MATCH = "no_probe_match"


@dataclass(frozen=True)
class _Hit:
    position: int
    """Index of the event in the evidence view."""
    polarity: str
    event_id: str
    quote: str
    pattern: str


def _first_nonempty_match(pattern: re.Pattern[str], text: str) -> str | None:
    for m in pattern.finditer(text):
        span = m.group(0)
        if span.strip():
            return span[:MAX_PROBE_QUOTE]
    return None


def probe_item(item: ChecklistItem, view: EvidenceView) -> ItemJudgment:
    """One item's probe verdict, grounded like any other judge's."""
    if not item.probes:
        return abstain(item, REASON_NO_PROBE, "The item has no probe.")
    compiled = [(p, p.compile()) for p in item.probes]
    decisive: _Hit | None = None
    for position, entry in enumerate(view.entries):
        event = entry.event
        if not may_cite(view, event, item):
            continue
        for probe, pattern in compiled:
            quote = _first_nonempty_match(pattern, event.text)
            if quote is None:
                continue
            hit = _Hit(position, probe.polarity, event.id, quote, probe.pattern)
            later = decisive is None or position > decisive.position
            if later or (position == decisive.position and hit.polarity == "no"):
                decisive = hit
    if decisive is None:
        return abstain(item, REASON_NO_MATCH, "No probe of the item matched the evidence.")
    verdict = "Yes" if decisive.polarity == "yes" else "No"
    rationale = f"Probe /{decisive.pattern}/ ({decisive.polarity}) matched in {decisive.event_id}, the latest matching event."
    return item_judgment(item, verdict, [Citation(event_id=decisive.event_id, quote=decisive.quote)], rationale, view)


def probe_judge(checklist: Checklist, view: EvidenceView) -> list[ItemJudgment]:
    """Probe verdicts for every item of `checklist`, in checklist order."""
    return [probe_item(item, view) for item in checklist.items]


async def _judge(call: JudgeCall) -> Verdicts:
    assert call.checklist is not None
    return Verdicts(items=probe_judge(call.checklist, call.view))


PROBE = register_judge(JudgeSpec(
    name="probe",
    order=2,
    calls_llm=False,
    checklist="task",
    prompt_version=PROBE_VERSION,
    judge=_judge,
))
