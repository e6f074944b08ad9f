"""The grounding check: deterministic, and the only path from a judge's reply to verdicts.

Every judge's verdicts pass through here: LLM replies, batch results and probes. A citation is
grounded when it passes every rule below, in order; the first rule it fails is recorded (in the
reply's problems and in the verdict's rationale) by its name:

- `not_evidence`: the cited id is an event of the evidence view (so a quote of the agent's own
  narration, which the view leaves out, never grounds anything);
- `not_verbatim`: the quote is a verbatim span of that event's full text (modulo whitespace);
- `quote_too_short`: the quote identifies what it proves — it holds at least `MIN_QUOTE_CHARS`
  non-space characters, or a literal the item names (`42` for an item about the value `42`), or
  the whole text of an event shorter than that. `{"event_id": "E2", "quote": "4"}` grounds nothing;
- `agent_claim`: the event is not a tool output that only echoes its own command's text
  (`echo '… PASSED'`: the agent's claim, see `evidence.echoes_command`);
- `command_text`: for an item about an artifact or a value (routes `assertion` and `generated`)
  the quote lies in what happened — a tool output or file content — not in the text of a tool
  call, which shows only what was attempted. Items about the approach (route `judge`) and the
  holistic judge may cite the commands run. One exception: a quote of a heredoc body the command
  sends to a file (`cat > f <<EOF … EOF`) is what was written, and grounds when the command did
  not fail (no `is_error` on it or its output), like the content of a successful `Write`.

A Yes/No left with no grounded citation becomes Abstain `ungrounded`. One more rule holds for a
verdict rather than a citation:

- `value_not_cited`: a Yes on an `assertion` or `generated` item whose text names literals in
  backticks or quotes (values, not forms with `<placeholders>`) must cite at least one event
  holding one of them (in its text, as its path, or in the command that produced it). The item
  says which value decides it; a Yes whose evidence never shows that value is Abstain `ungrounded`.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache, lru_cache

from ..checklist import ChecklistItem, Rules, literals, load_rules, quoted_literals
from ..evidence import CITABLE_KINDS, EvidenceView, heredoc_written, normalize_ws
from ..models import Citation, Event, ItemJudgment, Verdict

__all__ = [
    "GroundedItems",
    "abstain",
    "ground_citations",
    "ground_items",
    "item_judgment",
    "may_cite",
    "named_values",
    "REASON_JUDGE_ABSTAIN",
    "REASON_NOT_JUDGED",
    "REASON_UNGROUNDED",
    "REASON_UNKNOWN_ITEM",
]

REASON_UNGROUNDED = "ungrounded"
REASON_NOT_JUDGED = "not_judged"
REASON_UNKNOWN_ITEM = "unknown_item_id"
REASON_JUDGE_ABSTAIN = "judge_abstain"

MIN_QUOTE_CHARS = 8
"""Non-space characters a quote needs unless it holds a literal of the item or is a whole event:
enough to name a value with its context (`answer: 42`, `4 passed`), not a lone digit."""
_VALUE_ROUTES = frozenset({"assertion", "generated"})
"""Routes of items about an artifact or a value: their evidence is what happened, not what was run."""


_PLACEHOLDER = re.compile(r"<[^<>]+>|\.\.\.|…")
"""A quoted literal with a placeholder (`- <section>.<key>: <old> -> <new>`) names a form, not a value."""


def named_values(item: ChecklistItem, rules: Rules) -> frozenset[str]:
    """The values a Yes on `item` must show (`value_not_cited`): its quoted literals that are not forms."""
    return _named_in(item.text, rules)


def _named_in(text: str, rules: Rules) -> frozenset[str]:
    return frozenset(v for v in quoted_literals(text, rules) if not _PLACEHOLDER.search(v))


@cache
def _default_rules() -> Rules:
    return load_rules()


@lru_cache(maxsize=4096)
def _item_values(text: str) -> tuple[frozenset[str], frozenset[str]]:
    """(literals, `named_values`) of an item's text under the default rules: the same for every
    trajectory judged on the item, so worked out once per item, not once per reply (they were half of
    grounding a reply)."""
    rules = _default_rules()
    return literals(text, rules), _named_in(text, rules)


def _citation_problem(view: EvidenceView, c: Citation, item: ChecklistItem | None, named: frozenset[str]) -> str | None:
    """(rule name): detail, for the first rule `c` fails; None when it is grounded (`named`: the item's literals)."""
    event = view.get(c.event_id)
    if event is None:
        return "not_evidence: not an evidence event"
    if not view.quote_in_event(c.event_id, c.quote):
        return f"not_verbatim: quote is not verbatim in that event: {c.quote[:80]!r}"
    quote = normalize_ws(c.quote)
    long_enough = (len(quote.replace(" ", "")) >= MIN_QUOTE_CHARS or quote == view.normalized(event.id)
                   or any(lit in quote.lower() for lit in named))
    if not long_enough:
        return (f"quote_too_short: {quote!r} has fewer than {MIN_QUOTE_CHARS} non-space characters, "
                "holds no literal of the item and is not the whole event")
    if event.kind == "tool_call" and item is not None and item.route in _VALUE_ROUTES:
        written = heredoc_written(event.text)
        if written and quote in normalize_ws(written) and not view.call_failed(event.id):
            return None  # what a shell heredoc wrote to a file, and the command did not fail
    return _source_problem(view, event, item)


def _source_problem(view: EvidenceView, event: Event, item: ChecklistItem | None) -> str | None:
    """The rules on what an event is (`agent_claim`, `command_text`), whatever is quoted of it."""
    if view.is_claim(event.id):
        return "agent_claim: the output only echoes its own command's text"
    if item is not None and item.route in _VALUE_ROUTES and event.kind not in CITABLE_KINDS:
        return "command_text: the quote is in a tool call's text (what was attempted), not in an output or file content"
    return None


def may_cite(view: EvidenceView, event: Event, item: ChecklistItem | None) -> bool:
    """Whether any quote of `event` can ground a verdict on `item`: the probe judge searches only these."""
    return _source_problem(view, event, item) is None


def ground_citations(
    view: EvidenceView, citations: Iterable[Citation], item: ChecklistItem | None = None, *, rules: Rules | None = None
) -> tuple[list[Citation], list[str]]:
    """(grounded citations, one problem line per rejected one, naming the rule it failed).

    `item` is the checklist item the citations are for (None for the holistic judge)."""
    rules = rules or _default_rules()
    named = literals(item.text, rules) if item is not None else frozenset()  # once for all the item's citations
    return _ground(view, citations, item, named)


def _ground(
    view: EvidenceView, citations: Iterable[Citation], item: ChecklistItem | None, named: frozenset[str]
) -> tuple[list[Citation], list[str]]:
    """`ground_citations` with the item's literals (`named`) worked out by the caller."""
    kept: list[Citation] = []
    problems: list[str] = []
    for c in citations:
        problem = _citation_problem(view, c, item, named)
        if problem is None:
            kept.append(c)
        else:
            problems.append(f"citation of {c.event_id}: {problem}")
    return kept, problems


def _holds_value(view: EvidenceView, citations: Sequence[Citation], values: frozenset[str]) -> bool:
    """Whether a cited event shows one of `values` (lower-cased): in its text, as its path, or in the
    command that produced it (the path a `cat` read)."""
    for c in citations:
        event = view.get(c.event_id)
        if event is None:
            continue
        where = " ".join((view.normalized(event.id), event.path or "", normalize_ws(view.call_text(event)))).lower()
        if any(v in where for v in values):
            return True
    return False


def item_judgment(
    item: ChecklistItem,
    verdict: Verdict,
    citations: Iterable[Citation],
    rationale: str,
    view: EvidenceView,
    *,
    problems: list[str] | None = None,
) -> ItemJudgment:
    """One item's grounded verdict: a Yes/No left without a grounded citation, or a Yes that never
    cites the value its item names, becomes Abstain `ungrounded`; the rationale then says which
    rule failed."""
    named, values = _item_values(item.text)
    kept, rejected = _ground(view, citations, item, named)
    if verdict == "Yes" and kept and item.route in _VALUE_ROUTES and values and not _holds_value(view, kept, values):
        rejected.append(f"value_not_cited: no cited event shows any of {', '.join(sorted(values))}")
        kept = []
    if problems is not None:
        problems.extend(f"{item.id}: {p}" for p in rejected)
    reason = None
    rationale = rationale.strip()
    if verdict == "Abstain":
        reason = REASON_JUDGE_ABSTAIN
    elif not kept:
        failed = "; ".join(rejected) or "no citation"
        verdict, reason = "Abstain", REASON_UNGROUNDED
        rationale = f"{rationale} [ungrounded: {failed}]".strip()
    return ItemJudgment(
        item_id=item.id,
        route=item.route,
        verdict_raw=verdict,
        verdict=verdict,
        citations=kept,
        rationale=rationale,
        reason=reason,
    )


def abstain(item: ChecklistItem, reason: str, rationale: str = "") -> ItemJudgment:
    """An item the judge gave no usable verdict for."""
    return ItemJudgment(
        item_id=item.id, route=item.route, verdict_raw="Abstain", verdict="Abstain", rationale=rationale, reason=reason
    )


@dataclass
class GroundedItems:
    """Verdicts for every checklist item, in checklist order, plus what was wrong with the reply."""

    items: list[ItemJudgment]
    unknown_ids: list[str] = field(default_factory=list)
    duplicate_ids: list[str] = field(default_factory=list)
    missing_ids: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def ids_wrong(self) -> bool:
        """Unknown or duplicated ids: the reply is mislabelled, worth one repair round."""
        return bool(self.unknown_ids or self.duplicate_ids)


def ground_items(checklist_items: Sequence[ChecklistItem], reply_items: Sequence, view: EvidenceView) -> GroundedItems:
    """Map a reply's entries (anything with item_id, verdict, citations, rationale) onto the
    checklist: the first entry per id counts, a missing item is Abstain `not_judged` (or
    `unknown_item_id` when the reply used ids the checklist does not have)."""
    known = {i.id for i in checklist_items}
    counts = Counter(r.item_id for r in reply_items)
    out = GroundedItems(
        items=[],
        unknown_ids=sorted({r.item_id for r in reply_items if r.item_id not in known}),
        duplicate_ids=sorted(i for i, n in counts.items() if n > 1 and i in known),
    )
    first: dict[str, object] = {}
    for r in reply_items:
        first.setdefault(r.item_id, r)
    missing_reason = REASON_UNKNOWN_ITEM if out.unknown_ids else REASON_NOT_JUDGED
    for item in checklist_items:
        r = first.get(item.id)
        if r is None:
            out.missing_ids.append(item.id)
            out.items.append(abstain(item, missing_reason))
        else:
            out.items.append(item_judgment(item, r.verdict, r.citations, r.rationale, view, problems=out.problems))  # type: ignore[attr-defined]
    if out.unknown_ids:
        out.problems.append(f"unknown item ids: {', '.join(out.unknown_ids)}")
    if out.duplicate_ids:
        out.problems.append(f"items judged more than once (first kept): {', '.join(out.duplicate_ids)}")
    if out.missing_ids:
        out.problems.append(f"items not judged: {', '.join(out.missing_ids)}")
    return out
