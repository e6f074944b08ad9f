"""The `holistic` judge, a baseline: one call per trajectory, overall progress in [0, 1], no checklist.

Its citations go through the same grounding check; ungrounded ones are dropped and noted (a
progress number has no Yes/No to turn into Abstain). An unusable reply after the repair round
leaves progress None with the reason, which scores as "not decided".
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..checklist import Checklist, Rules
from ..evidence import EvidenceView
from ..llm import REASON_CONTEXT_OVERFLOW, LLM
from ..models import Citation, Task
from .budget import Fit, fit_evidence
from .calls import Assessed, Outcome, with_one_repair
from .grounding import ground_citations
from .prompts import HOLISTIC_PROMPT_VERSION, Messages, holistic_messages
from .registry import JudgeCall, JudgeSpec, Verdicts, register_judge
from .replies import HolisticReply
from .results import ReplyRecord

__all__ = ["HOLISTIC", "HolisticResult", "judge_holistic"]


@dataclass
class HolisticResult:
    progress: float | None
    rationale: str = ""
    citations: list[Citation] = field(default_factory=list)
    reason: str | None = None
    records: list[ReplyRecord] = field(default_factory=list)


async def judge_holistic(
    llm: LLM | None, task: Task, view: EvidenceView, rules: Rules, *, tag: str = "", first: Outcome | None = None
) -> HolisticResult:
    """Rate one trajectory; raises LLMCallError when the endpoint fails before a usable reply."""

    def build(candidate: EvidenceView) -> list[dict[str, str]]:
        return holistic_messages(task, candidate)

    fit = Fit(view) if first is not None else await fit_evidence(llm, view, build, HolisticReply)
    if fit.overflow:
        record = ReplyRecord(attempt="initial", status=REASON_CONTEXT_OVERFLOW, problems=[fit.overflow])
        return HolisticResult(None, rationale=fit.overflow, reason=REASON_CONTEXT_OVERFLOW, records=[record])
    view = fit.view

    def assess(reply: HolisticReply) -> Assessed[HolisticResult]:
        kept, problems = ground_citations(view, reply.citations)
        return Assessed(HolisticResult(reply.progress, reply.rationale.strip(), kept), problems=problems)

    result = await with_one_repair(
        llm,
        build(view),
        HolisticReply,
        assess,
        prompt_version=HOLISTIC_PROMPT_VERSION,
        tag=tag,
        first=first,
    )
    note = fit.recorded_note(result.prompt_tokens)
    if note and result.records:
        result.records[0].problems.insert(0, note)
    if result.value is None:
        return HolisticResult(None, reason=result.reason or "no_reply", records=result.records)
    result.value.records = result.records
    return result.value


async def _judge(call: JudgeCall) -> Verdicts:
    rated = await judge_holistic(call.llm, call.task, call.view, call.rules, tag=call.tag, first=call.first)
    return Verdicts(replies=rated.records, progress=rated.progress, rationale=rated.rationale,
                    citations=rated.citations, reason=rated.reason)


def _first_request(
    task: Task, checklist: Checklist | None, view: EvidenceView, rules: Rules
) -> tuple[Messages, type[HolisticReply], str]:
    return holistic_messages(task, view), HolisticReply, HOLISTIC_PROMPT_VERSION


HOLISTIC = register_judge(JudgeSpec(
    name="holistic",
    order=3,
    calls_llm=True,
    checklist="none",
    prompt_version=HOLISTIC_PROMPT_VERSION,
    judge=_judge,
    first_request=_first_request,
))
