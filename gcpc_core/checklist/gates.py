"""Deterministic validation gates G1–G6 for one checklist against one task (no LLM).

The gates run identically on LLM output and on hand-written files, so a checklist is accepted
for what it says, not for who wrote it. Every threshold and word list comes from `Rules`
(`rules/checklist_contract.yaml`); this module only holds the procedures. Failures are data
(`GateFailure`), so synthesis can feed them back into a repair round and the CLI can print them.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

from ..models import Task, VerifierTest
from .grammar import Predicate, predicates
from .rules import Rules
from .schema import ROUTES, Checklist, ChecklistFileError, parse_checklist

__all__ = [
    "GATES",
    "GateFailure",
    "check_checklist_data",
    "failure_lines",
    "first_requirement",
    "gate_coverage",
    "gate_duplicates",
    "gate_quotes",
    "gate_refs",
    "gate_requirements",
    "gate_schema",
    "item_cap",
    "length_rule",
    "literals",
    "mask_literals",
    "normalize_whitespace",
    "prose_text",
    "quoted_literals",
    "requirement_problems",
    "run_gates",
    "schema_failures",
    "similarity",
    "split_ref",
    "verifier_checks",
]

GATES: dict[str, str] = {
    "G1": "verbatim quote",
    "G2": "verifier refs",
    "G3": "requirement level",
    "G4": "duplicates",
    "G5": "coverage",
    "G6": "schema and budget",
}
"""Gate ids and their short names, in the order they run and report."""

CHECKLIST_LEVEL = "-"
"""Item id used for failures that belong to the checklist as a whole."""


class GateFailure(BaseModel):
    """One gate's objection to one item (or to the checklist, item id `-`)."""

    model_config = ConfigDict(frozen=True)

    item_id: str
    """Item id, a waiver's verifier ref, or `-` for the checklist as a whole."""
    gate: str
    """`G1` … `G6`."""
    message: str
    """What is wrong, on one line; written to be fed back to an author or a repair prompt."""

    def line(self) -> str:
        """The CLI form `<item id> <gate id> <message>`; whitespace in an id (a malformed id, a
        parametrized waiver ref) becomes `_` so the first two fields always split cleanly."""
        item_id = "_".join(self.item_id.split()) or CHECKLIST_LEVEL
        return f"{item_id} {self.gate} {' '.join(self.message.split())}"


# ---------------------------------------------------------------- text helpers


def normalize_whitespace(text: str) -> str:
    """Every whitespace run (newlines, tabs, NBSP included) becomes one space; ends stripped."""
    return " ".join(text.split())


_PARAM = re.compile(r"^(?P<base>[^\[]+)\[(?P<param>.*)\]$", re.DOTALL)


def split_ref(ref: str) -> tuple[str, str | None]:
    """`file::Class::test[param]` → (`file::Class::test`, `param`); no suffix → (ref, None). A ref
    as pytest writes it from the task folder (a `tests/` prefix, a case id with spaces) names the same node:
    the `tests/` prefix is dropped and the param is kept as written, spaces included."""
    ref = ref.strip()
    if ref.startswith("tests/") and "::" in ref:
        ref = ref[len("tests/"):]
    match = _PARAM.match(ref)
    return (match["base"], match["param"]) if match else (ref, None)


def _similarity_text(text: str) -> str:
    return " ".join(re.sub(r"[^0-9a-z]+", " ", text.lower()).split())


def similarity(a: str, b: str) -> float:
    """G4's measure: SequenceMatcher ratio of lower-cased, punctuation-free, space-normalized text."""
    return difflib.SequenceMatcher(None, _similarity_text(a), _similarity_text(b), autojunk=False).ratio()


_LITERAL_MASK = "LITERAL"
_QUOTES = "`'\"“”‘’"


def _placeholder(literal: str, rules: Rules) -> str:
    """The word a literal is masked with: its kind's (`literals.kinds`: `CODE`, `TEST`) or `LITERAL`."""
    inner = literal.strip(_QUOTES)
    return next((word for word, regex in rules.contract.literals.kind_regexes if regex.search(inner)), _LITERAL_MASK)


def mask_literals(text: str, rules: Rules) -> str:
    """Replace every literal (quoted value, path, file name, identifier; `rules.contract.literals`)
    with a placeholder word (`LITERAL`, or its kind: `CODE`, `TEST`): task data is not phrasing."""
    return rules.contract.literals.regex.sub(lambda m: _placeholder(m[0], rules), text)


def literals(text: str, rules: Rules) -> frozenset[str]:
    """The literals an item names, numbers included, normalized (quotes stripped, lower case): its
    distinct content for G4."""
    rule = rules.contract.literals
    found = [m[0] for m in rule.regex.finditer(text)]
    found += rule.number_regex.findall(rule.regex.sub(" ", text))
    return frozenset(f.strip("`'\"“”‘’ ").rstrip(".,;:").lower() for f in found if f.strip("`'\"“”‘’ "))


def quoted_literals(text: str, rules: Rules) -> frozenset[str]:
    """The values an item names in backticks or quotes (the contract's `quoted` literal pattern),
    normalized like `literals`: what a Yes on the item must show (judge grounding)."""
    pattern = rules.contract.literals.patterns.get("quoted")
    if pattern is None:
        return frozenset()
    found = (m[0].strip("`'\"“”‘’ ").rstrip(".,;:").lower() for m in re.finditer(pattern, text))
    return frozenset(" ".join(f.split()) for f in found if f.strip())


# ---------------------------------------------------------------- G3 core


_AND = re.compile(r"(?<![\w/])and(?![\w/])")
_SENTENCE_BREAK = re.compile(r"(?<!\be\.g)(?<!\bi\.e)(?<!\bvs)[.!?]\s+[A-Z]")


def _same_object(before: str, after: str, rules: Rules) -> bool:
    """Whether the predicate `after` an "and" is another aspect of the object of the predicate
    `before` it, not a second requirement (`compound.same_object` in the rules)."""
    rule = rules.contract.compound.same_object
    after = " ".join(after.split()).rstrip(".")
    if rule.complement_regex.search(after):
        return True
    return _ends_in_existence(before, rules) and bool(rule.kind_regex.match(after))


def _ends_in_existence(before: str, rules: Rules) -> bool:
    """Whether the clause `before` an "and" ends in an existence predicate ("exists", "is present"): after one,
    only the object's kind is the same requirement (`same_object`)."""
    existence = rules.contract.compound.same_object.existence
    return any(re.search(rf"(?<!\w){re.escape(w)}\s*,?\s*$", before) for w in existence)


def _requirement_predicates(text: str, rules: Rules, found: Sequence[Predicate] | None = None) -> list[Predicate]:
    """The predicates of `text` (`grammar.predicates`) that each state a requirement of their own: main-clause
    predicates joined to the one before by a coordinator ("and", "plus", ", then", "; "), unless `same_object`
    excuses the pair ("exists and is a directory"), or all of them state the same check over a list of named
    subjects ("`A` contains "x", `B` contains "y" and `C` contains "z"", one requirement like a list of literals;
    a pronoun restating the subject, "… and they contain …", is a second requirement)."""
    found = [p for p in (predicates(text, rules) if found is None else found) if p.main]
    kept: list[Predicate] = []
    for k, pred in enumerate(found):
        if kept and not pred.coordinated:
            continue  # two finite verbs without a coordinator: a relative clause ("the file the agent wrote has …")
        if kept:
            end = next((q.join_start for q in found[k + 1:] if q.coordinated), len(text))
            before, after = text[kept[-1].clause_start:pred.join_start], text[pred.clause_start:end]
            if _same_object(mask_literals(before, rules).lower(), mask_literals(after, rules).lower(), rules):
                continue
        kept.append(pred)
    if len(kept) > 1 and len({p.words for p in kept}) == 1 and not any(p.subject_pronoun for p in kept):
        return kept[:1]
    return kept


def first_requirement(text: str, rules: Rules) -> str:
    """`text` cut before the coordinator of its second requirement's predicate (`_requirement_predicates`; literals
    are never cut), so the rest is one requirement for G3's clause rule ("X exists, is valid JSON, and has keys" →
    "X exists"); `text` itself when it states at most one."""
    found = _requirement_predicates(text, rules)
    return text[:found[1].join_start].rstrip(" ,;") if len(found) > 1 else text


def _and_spelled(text: str, rules: Rules) -> str:
    """`text` with every other spelling of a standalone "and" (`compound.and_spellings`: "&") written "and"."""
    for spelling in rules.contract.compound.and_spellings:
        text = re.sub(rf"(?<=\s){re.escape(spelling)}(?=\s)", "and", text)
    return text


def _compound_signal(text: str, masked: str, rules: Rules, found: Sequence[Predicate]) -> str | None:
    """Why `text` (literal-masked: `masked`; its predicates: `found`) states more than one requirement (`compound`
    in the rules), or None."""
    rule = rules.contract.compound
    low = " " + _and_spelled(masked, rules).lower() + " "
    for sep in rule.separators:
        if sep.lower() in low:
            return f"separator {sep.strip() or sep!r} joins two requirements"
    count = len(_AND.findall(low))
    if count > rule.max_and:
        return f"{count} standalone 'and's (at most {rule.max_and})"
    if rule.sentence_boundary and _SENTENCE_BREAK.search(masked):
        return "more than one sentence"
    found = _requirement_predicates(text, rules, found)
    if len(found) > 1:
        words = mask_literals(text[found[1].join_start:].lstrip(",; "), rules).split()[:2]
        joined = " ".join("<literal>" if w.strip(",;.") in (_LITERAL_MASK, *rules.contract.literals.kinds)
                          else w.rstrip(",;.") for w in words)
        return f"{joined!r} starts a second requirement ({len(found)} predicates joined)"
    return None


_NUMBER = re.compile(r"[-+]?\d")
"""A word starting with a number: like a literal, it says what a word such as "expected" means."""


def _excused(after: list[str], placeholders: frozenset[str], blockers: frozenset[str]) -> bool:
    """Whether a literal (a masked word of `placeholders`) or a number among the words `after` a hit says what the
    hit means: one reached before any word of `blockers` ("for", "of": after them the literal names the subject,
    not the meaning)."""
    for word in after:
        if _NUMBER.match(word) or any(word.startswith(p) for p in placeholders):
            return True
        if word.lower().strip(",;:") in blockers:
            return False
    return False


def _first_hit(matchers: Iterable[tuple[str, re.Pattern[str]]], text: str, excused_within: int = 0,
               placeholders: Iterable[str] = (_LITERAL_MASK,), blockers: Iterable[str] = ()) -> str | None:
    """The text matched by the first matcher (in rule-file order) that matches, space-normalized; with
    `excused_within`, a match followed within that many words by a literal (a word of `placeholders`) or a number,
    not across a word of `blockers`, is no hit."""
    masks = frozenset(placeholders)
    blocking = frozenset(w.lower() for w in blockers)
    for _, regex in matchers:
        for match in regex.finditer(text):
            if excused_within and _excused(text[match.end():].split()[:excused_within], masks, blocking):
                continue
            return " ".join(match[0].split())
    return None


def prose_text(text: str, rules: Rules) -> str:
    """`text` stripped, with every literal taken out: what G3 counts words and characters on (the
    `item` rule). Unlike `mask_literals`, no placeholder is left in a literal's place."""
    return rules.contract.literals.regex.sub("", text.strip())


def length_rule(rules: Rules) -> str:
    """The length rule of an item's text, with its numbers (`item` in the rules), as the synthesis
    prompt states it; `_length_problems` applies the same fields."""
    rule = rules.contract.item
    return (f"{rule.min_words}-{rule.max_words} words and {rule.min_chars}-{rule.max_chars} characters of prose "
            f"(the text with its literals taken out: each literal counts as one word and none of its characters "
            f"count; an item naming a literal needs only {rule.min_words_with_literal} words and no minimum of "
            f"characters), and at most {rule.max_raw_chars} characters as written, literals included")


def _length_problems(text: str, rules: Rules) -> list[str]:
    """The length rule (`length_rule`): bounds on the prose, literals not counted against them, and a
    cap on the raw text, literals included, measured as written (the grammar's `maxLength`)."""
    rule = rules.contract.item
    stripped = text.strip()
    masked = mask_literals(stripped, rules)
    has_literal = masked != stripped
    words = len(stripped.split())
    measured_words = len(masked.split())
    prose = prose_text(stripped, rules)
    measured_chars = len(prose)
    problems: list[str] = []
    min_words = rule.min_words_with_literal if has_literal else rule.min_words
    if words < min_words or (has_literal and not prose.split()):
        # literals alone ("`/root/answer.json` `fake_citations`") state no requirement, however many they are
        problems.append(f"text has {words} words; allowed {min_words}-{rule.max_words}"
                        + (" (an item naming a literal needs a predicate too)" if has_literal else ""))
    elif measured_words > rule.max_words:
        problems.append(f"text has {measured_words} words besides literals; allowed {min_words}-{rule.max_words}")
    if not has_literal and len(stripped) < rule.min_chars:
        problems.append(f"text has {len(stripped)} characters; allowed {rule.min_chars}-{rule.max_chars}")
    elif measured_chars > rule.max_chars:
        problems.append(f"text has {measured_chars} characters besides literals; allowed at most {rule.max_chars}")
    if len(text) > rule.max_raw_chars:
        problems.append(f"text has {len(text)} characters as written, literals included; allowed at most "
                        f"{rule.max_raw_chars}")
    return problems


def requirement_problems(text: str, rules: Rules, route: str | None = None) -> list[str]:
    """G3's findings for one item text on `route`, as messages; empty when the text is requirement-level.

    Phrase and compound checks run on the text with literals masked (see `mask_literals`); a phrase
    family may be allowed on some routes (run phrasing on `judge`); `route` None applies every family.
    """
    stripped = text.strip()
    problems = _length_problems(text, rules)
    masked = mask_literals(stripped, rules)
    placeholders = (_LITERAL_MASK, *rules.contract.literals.kinds)
    predicate = rules.contract.item.predicate_regex
    prose = prose_text(stripped, rules)
    found = predicates(stripped, rules)
    if predicate is not None and prose.split() and (not predicate.search(prose) or not found):
        problems.append("no predicate: the text names no verb stating what must hold (write the requirement, not a "
                        "test's name or description)")
    for family in rules.contract.banned.values():
        if route is not None and route in family.allowed_routes:
            continue
        hit = _first_hit(family.matchers, masked, family.excused_by_literal, placeholders, family.not_excused_across)
        if hit is not None:
            problems.append(f"{family.label} {hit!r}")
    signal = _compound_signal(stripped, masked, rules, found)
    if signal:
        problems.append(f"compound item: {signal}; split it into one item per requirement")
    return problems


# ---------------------------------------------------------------- the item budget


def verifier_checks(task: Task) -> int:
    """How many checks the task's verifier runs: one per test node, or one per case of a
    parametrized test whose cases are listed literally (`VerifierTest.checks`)."""
    return sum(test.checks for test in task.tests)


def item_cap(task: Task, rules: Rules) -> int:
    """The most items `task`'s checklist may hold (G6, the synthesis prompt and its grammar): the
    contract's `max_items`, or one item per verifier check plus `items_beyond_checks` when that is
    more, never above `max_items_ceiling`. A verifier of 35 parametrized cases gets 37 items."""
    budget = rules.contract.budget
    return min(budget.ceiling, max(budget.max_items, verifier_checks(task) + budget.items_beyond_checks))


# ---------------------------------------------------------------- the gates


def gate_quotes(checklist: Checklist, task: Task, rules: Rules) -> list[GateFailure]:
    """G1: each task quote is a whitespace-normalized substring of instruction.md."""
    instruction = normalize_whitespace(task.instruction)
    min_chars = rules.contract.quote.min_chars
    failures: list[GateFailure] = []
    for item in checklist.items:
        quote = normalize_whitespace(item.task_quote)
        if not quote:
            message = "task quote is empty"
        elif len(quote) < min_chars:
            message = f"task quote {quote!r} is shorter than {min_chars} characters"
        elif quote not in instruction:
            message = f"task quote not found verbatim in instruction.md{_mismatch_hint(quote, instruction)}"
        else:
            continue
        failures.append(GateFailure(item_id=item.id, gate="G1", message=message))
    return failures


def _mismatch_hint(quote: str, instruction: str) -> str:
    """Where the quote stops matching: the longest prefix found in the instruction (monotone)."""
    lo, hi = 0, len(quote)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if quote[:mid] in instruction:
            lo = mid
        else:
            hi = mid - 1
    if lo == 0:
        return ""
    return f" (matches up to {quote[max(0, lo - 30):lo]!r}, then differs at {quote[lo:lo + 20]!r})"


def gate_refs(checklist: Checklist, task: Task, rules: Rules) -> list[GateFailure]:
    """G2: refs resolve to this task's parsed test nodes; routes that need refs have them."""
    failures = [
        GateFailure(item_id=CHECKLIST_LEVEL, gate="G2", message=f"verifier could not be parsed: {err}")
        for err in task.parse_errors
    ]
    tests = {t.node_id: t for t in task.tests}
    for item in checklist.items:
        route = rules.contract.routes.get(item.route)
        if route is not None and route.requires_refs and not item.verifier_refs:
            message = (
                f"{item.route} item has no verifier refs"
                if tests
                else f"{item.route} item needs a verifier ref but this task's verifier has no pytest test nodes "
                     "and no script"
            )
            failures.append(GateFailure(item_id=item.id, gate="G2", message=message))
        for ref in item.verifier_refs:
            problem = _ref_problem(ref, tests)
            if problem:
                failures.append(GateFailure(item_id=item.id, gate="G2", message=problem))
    return failures


def _ref_problem(ref: str, tests: dict[str, VerifierTest]) -> str | None:
    base, param = split_ref(ref)
    test = tests.get(base)
    if test is None:
        close = difflib.get_close_matches(base, list(tests), n=1, cutoff=0.6)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        return f"unknown verifier ref {ref!r}: not a test node of this task{hint}"
    if param is not None and not test.parametrized:
        return f"verifier ref {ref!r} has a [param] suffix but {base!r} is not parametrized"
    return None


def gate_requirements(checklist: Checklist, task: Task, rules: Rules) -> list[GateFailure]:
    """G3: one observable requirement per item; not vague, not outcome, not run-specific."""
    return [
        GateFailure(item_id=item.id, gate="G3", message=problem)
        for item in checklist.items
        for problem in requirement_problems(item.text, rules, item.route)
    ]


def gate_duplicates(checklist: Checklist, task: Task, rules: Rules) -> list[GateFailure]:
    """G4: no item names the same literals as an earlier item with text as similar as the threshold.

    Items naming different literals (two output files, two titles) are distinct content whatever
    their wording; the similarity is taken over the text with literals masked, so shared phrasing
    around equal literals still counts.
    """
    threshold = rules.contract.duplicates.threshold
    failures: list[GateFailure] = []
    keys = [(literals(item.text, rules), mask_literals(item.text, rules)) for item in checklist.items]
    for i, item in enumerate(checklist.items):
        for j, earlier in enumerate(checklist.items[:i]):
            if keys[i][0] != keys[j][0]:
                continue
            score = similarity(keys[i][1], keys[j][1])
            if score >= threshold:
                failures.append(
                    GateFailure(
                        item_id=item.id,
                        gate="G4",
                        message=f"duplicates {earlier.id} (similarity {score:.2f} >= {threshold:.2f})",
                    )
                )
                break
    return failures


def gate_coverage(checklist: Checklist, task: Task, rules: Rules) -> list[GateFailure]:
    """G5: every test node is covered by a covering route's refs or waived with a reason."""
    node_ids = set(task.test_ids)
    covered = {
        split_ref(ref)[0]
        for item in checklist.items
        if (route := rules.contract.routes.get(item.route)) is not None and route.covers_tests
        for ref in item.verifier_refs
    }
    failures: list[GateFailure] = []
    waived: set[str] = set()
    for waiver in checklist.waivers:
        base = split_ref(waiver.verifier_ref)[0]
        owner = waiver.verifier_ref.strip() or CHECKLIST_LEVEL
        if base not in node_ids:
            failures.append(GateFailure(item_id=owner, gate="G5", message="waiver names an unknown verifier test node"))
            continue
        if base in waived:
            failures.append(GateFailure(item_id=owner, gate="G5", message="test node is waived more than once"))
        if not waiver.reason.strip():
            failures.append(GateFailure(item_id=owner, gate="G5", message="waiver has no reason"))
        waived.add(base)
    for node_id in task.test_ids:
        if node_id not in covered and node_id not in waived:
            failures.append(
                GateFailure(
                    item_id=CHECKLIST_LEVEL,
                    gate="G5",
                    message=f"verifier test {node_id} is neither covered by an assertion item nor waived",
                )
            )
    return failures


def gate_schema(checklist: Checklist, task: Task, rules: Rules) -> list[GateFailure]:
    """G6: right task, known source, well-formed unique ids, valid routes, budget, compilable probes.

    Type-level schema errors are caught when a file is parsed (`schema_failures`); this re-checks
    what a model built in code could still get wrong.
    """
    contract = rules.contract
    failures: list[GateFailure] = []

    def fail(item_id: str, message: str) -> None:
        failures.append(GateFailure(item_id=item_id, gate="G6", message=message))

    if checklist.task != task.id:
        fail(CHECKLIST_LEVEL, f"checklist is for task {checklist.task!r}, not {task.id!r}")
    prefix, _, who = checklist.source.partition(":")
    if prefix not in contract.sources or not who.strip():
        allowed = " or ".join(f"'{p}:<name>'" for p in contract.sources)
        fail(CHECKLIST_LEVEL, f"source {checklist.source!r} must look like {allowed}")
    n, cap = len(checklist.items), item_cap(task, rules)
    if not contract.budget.min_items <= n <= cap:
        fail(CHECKLIST_LEVEL, f"{n} items; the budget is {contract.budget.min_items}-{cap} for this task "
                              f"({verifier_checks(task)} verifier checks)")
    id_pattern = re.compile(contract.item.id_pattern)
    seen: set[str] = set()
    for item in checklist.items:
        if not id_pattern.fullmatch(item.id):
            fail(item.id or CHECKLIST_LEVEL, f"item id {item.id!r} does not match {contract.item.id_pattern}")
        if item.id in seen:
            fail(item.id, f"duplicate item id {item.id!r}")
        seen.add(item.id)
        if item.route not in ROUTES or item.route not in contract.routes:
            fail(item.id, f"route {item.route!r} is not one of {', '.join(ROUTES)}")
        for k, probe in enumerate(item.probes):
            try:
                probe.compile()
            except (re.error, ValueError) as exc:
                fail(item.id, f"probes[{k}] pattern {probe.pattern!r} does not compile: {exc}")
    return failures


_GATE_FUNCTIONS: tuple[Callable[[Checklist, Task, Rules], list[GateFailure]], ...] = (
    gate_quotes,
    gate_refs,
    gate_requirements,
    gate_duplicates,
    gate_coverage,
    gate_schema,
)


def run_gates(checklist: Checklist, task: Task, rules: Rules) -> list[GateFailure]:
    """All gate failures of `checklist` against `task`, G1 to G6; empty means it may be frozen."""
    return [failure for gate in _GATE_FUNCTIONS for failure in gate(checklist, task, rules)]


def schema_failures(error: ChecklistFileError) -> list[GateFailure]:
    """G6 failures for a file or reply that is not a valid checklist (syntax or schema)."""
    return [
        GateFailure(item_id=p.item_id, gate="G6", message=f"{p.field}: {p.message}" if p.field else p.message)
        for p in error.problems
    ]


def check_checklist_data(
    data: Any, task: Task, rules: Rules, origin: str = "<data>"
) -> tuple[Checklist | None, list[GateFailure]]:
    """Parse plain data (a loaded file or an LLM reply) and gate it: the path both take.

    Returns (None, G6 failures) when the data is not a checklist at all, else the checklist and
    every gate failure.
    """
    try:
        checklist = parse_checklist(data, origin)
    except ChecklistFileError as exc:
        return None, schema_failures(exc)
    return checklist, run_gates(checklist, task, rules)


def failure_lines(failures: Iterable[GateFailure]) -> list[str]:
    """CLI lines for failures, in the order given."""
    return [f.line() for f in failures]
