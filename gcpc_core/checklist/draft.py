"""An offline checklist draft from the task alone: a starting point a person edits, never a frozen checklist.

The draft reads only what a checklist may be built from (instruction.md and the verifier source) and needs
no LLM, so a project without an endpoint still has a way forward. It reads the verifier's AST
(`verifier_reader`) and holds

- `assertion` items: one per independent assertion group of a test (the checks about one subject — a
  file's existence, one key's value, one list's members — with their guards), all sharing the test's ref;
  one per parameter group of a parametrized test whose cases name distinct requirements (each case its own
  value or its own branch of the body). The text states the requirement with the literal it checks
  (`check_text`): the path, the expected value, the range or tolerance, the count — never a failure
  message, an expression of code or the test's name; a group that cannot be put into words takes the
  test's docstring. Where the check names a literal in an output file or a command's output, the item
  carries probes (`probes`) that decide it from the evidence. When the budget is short, groups of a test
  are merged (then cases, then tests by class);
- `generated` items for the output files the instruction asks for (a path an output verb governs: "save
  the result to `X`") that no assertion item names, written declaratively ("`X` exists");
- `judge` items for the instruction's constraints ("Do not modify", "must not", "unchanged", "only …"),
  written as statements about the run;
- only when that is still under the minimum: the inputs the instruction names, then its requirement
  sentences (never a background sentence).

Each item's quote is the instruction sentence chosen for it: the one naming its literals (the checked key or
value before the file), by TF-IDF over the item's words otherwise; a sentence already quoted and a hint
("The repo is in /app/repo") count less.

By construction every quote is a verbatim span of instruction.md (G1), every ref a parsed test node (G2),
every test covered (G5) and the schema met (G6). G3 and G4 are tried: of an item's candidate texts the first
that G3 accepts and G4 would not call a duplicate of an earlier item is taken, else the first.
The source is `draft:<rules version>`, which the registry never freezes: a person reviews the draft and
saves it under their own name.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from functools import lru_cache
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

import yaml

from ..models import Task, VerifierTest
from .check_text import group_text, literal, subject_literals
from .gates import (
    GateFailure,
    first_requirement,
    item_cap,
    literals,
    normalize_whitespace,
    requirement_problems,
    run_gates,
    similarity,
)
from .probes import file_anchors, group_probes, read_keys, refused
from .rules import Rules
from .schema import Checklist, ChecklistItem, Probe
from .verifier_reader import Case, Group, TestReading, read_tests

__all__ = ["DRAFT_SOURCE_PREFIX", "Draft", "Sentence", "assertion_item", "draft_checklist", "draft_yaml",
           "instruction_sentences", "requirement_text"]

DRAFT_SOURCE_PREFIX = "draft"
ARTIFACT_KINDS = ("path", "file_name")
"""Literal kinds in `rules.contract.literals.patterns` that name an artifact."""
_OUTPUT_VERB = re.compile(
    r"(?<![\w-])(?:write|writes|writing|written|save|saves|saving|saved|output|outputs|outputting|create|creates|"
    r"creating|produce|produces|producing|generate|generates|generating|export|exports|exporting|store|stores|"
    r"storing|emit|emits|dump|dumps|put|place|return|returns)(?![\w-])", re.IGNORECASE)
_INPUT_VERB = re.compile(
    r"\b(?:given|provided|located|read\w*|load\w*|inputs?|referenc\w*|us(?:e|es|ing)|found|open\w*|pars\w*|"
    r"contain\w*|lives?|sits?|available|from|in|at|under|modify|edit|update|fix|change)\b", re.IGNORECASE)
_LEAD = re.compile(r"^(?:please\s+|you\s+(?:should|must|need\s+to|will\s+need\s+to|will|have\s+to)\s+|"
                   r"make\s+sure\s+(?:to\s+)?|be\s+sure\s+to\s+)+", re.IGNORECASE)
_NEGATION = re.compile(r"\b(?:not|never|don't|do\s+\*\*not\*\*|must\s+not|without)\b", re.IGNORECASE)
_FENCE = re.compile(r"^\s*(```|~~~)")
_LIST_MARKER = re.compile(r"^\s*(?:[-*+]|\d+[.)]|#+)\s+")
_SENTENCE_END = re.compile(r"(?<!\be\.g\.)(?<!\bi\.e\.)(?<=[.!?])\s+(?=\S)")
_DOC_PREFIX = re.compile(r"^(?:tests?|verif(?:y|ies)|checks?|ensures?|asserts?|validates?|confirms?)\s+"
                         r"(?:that\s+|whether\s+|if\s+)?", re.IGNORECASE)
_TRAILING = ".:;, "
_HINT = re.compile(r"\b(?:is|are)\s+(?:located|available|provided|given|stored|found|in|at|under|inside)\b|"
                   r"\bcan be found\b|\byou(?:'re| are| will be)? (?:given|provided)\b|\bwe have\b|\bI have\b|"
                   r"\bhere is\b|\bthere (?:is|are)\b|\bfor (?:example|reference)\b|\bfor context\b", re.IGNORECASE)
_REQUIREMENT = re.compile(r"\b(?:must|should|need(?:s)? to|required?|ensure|make sure|save|write|output|return|"
                          r"create|generate|produce|report|compute|calculate|find|identify|fill|implement|fix|"
                          r"sort|list|include|determine|detect|extract|convert|replace|remove|update|add)\b",
                          re.IGNORECASE)
_STOP = frozenset("""a an the and or of to in on for with by at from as is are be been was were it its this that these
those you your we our i not no do does did should must will would can could may might shall which what when where
who how into than then there their them they he she his her if else also such each any all some via per using use""".split())
_TOKEN = re.compile(r"[a-z0-9]+")


@dataclass(frozen=True)
class Sentence:
    """One sentence (or list entry) of instruction.md: a verbatim span, list markers left out."""

    text: str
    start: int
    end: int

    def is_constraint(self, artifact: str) -> bool:
        """Whether the sentence forbids something about `artifact` ("Do not modify X")."""
        return bool(_NEGATION.search(self.text[:max(self.text.find(artifact), 0)])) or bool(
            re.search(r"\(\s*(?:\*\*)?do\s+not\s+\w+", self.text[self.text.find(artifact):], re.IGNORECASE))

    def is_output(self, artifact: str) -> bool:
        """Whether the sentence asks for `artifact` to be written, saved or produced: an output verb governs
        it (the verb nearest before its first mention, within the clause, is an output verb — "save the result
        to X" — not an input one: "the input (X)", "reference it with X", "load X"), or a passive one follows
        it ("X should be written")."""
        at = self.text.find(artifact)
        if at < 0:
            return False
        before = self.text[:at]
        clause = re.split(r"[;.!?]\s|\band then\b|\bthen\b|,\s+and\b", before)[-1]
        out = [m for m in _OUTPUT_VERB.finditer(clause) if not _is_noun_use(clause, m)]
        inp = [m.end() for m in _INPUT_VERB.finditer(clause)]
        if out and (not inp or out[-1].end() > inp[-1] or _to_target(clause[out[-1].end():])):
            gap = clause[out[-1].end():]
            return len(gap.split()) <= 12 and not re.search(r"`[^`]+`", gap)
        after = self.text[at + len(artifact):at + len(artifact) + 60]
        return bool(re.match(r"[`'\"]?\s*(?:\([^)]*\)\s*)?(?:should|must|will|needs? to)\s+be\s+"
                             r"(?:written|saved|created|generated|produced|exported|stored)", after, re.IGNORECASE))


def _is_noun_use(text: str, match: re.Match[str]) -> bool:
    """An output verb used as part of a name ("WAL (Write-Ahead Logging)", "the Output column")."""
    word = match.group(0)
    before = text[:match.start()]
    if word[:1].isupper() and before.strip() and not re.search(r"(?:^|[.:!?]\s*|\d[.)]\s*)$", before.strip()[-3:] + " "):
        return not re.search(r"(?:^|[\n:]|[-*]\s)\s*$", before)
    return bool(re.match(r"[-_]", text[match.end():match.end() + 1]))


def _to_target(gap: str) -> bool:
    return bool(re.search(r"\b(?:to|into|as|in|at)\s*$", gap.strip() + " ", re.IGNORECASE))


def instruction_sentences(instruction: str, min_chars: int = 8) -> list[Sentence]:
    """Prose sentences and list entries of `instruction`, outside fenced code blocks, in order.

    Consecutive prose lines form one paragraph (a sentence may wrap); each list entry, heading or
    numbered step is a paragraph of its own. Every `text` equals `instruction[start:end]`.
    """
    paragraphs: list[tuple[int, int]] = []
    in_fence = False
    current: list[int] | None = None
    offset = 0
    for line in instruction.splitlines(keepends=True):
        start, body = offset, line.rstrip("\r\n")
        offset += len(line)
        if _FENCE.match(body):
            in_fence = not in_fence
            current = None
            continue
        if in_fence or not body.strip():
            current = None
            continue
        marker = _LIST_MARKER.match(body)
        lead = marker.end() if marker else len(body) - len(body.lstrip())
        if marker or current is None:
            current = [start + lead, start + len(body)]
            paragraphs.append((current[0], current[1]))
        else:
            current[1] = start + len(body)
            paragraphs[-1] = (current[0], current[1])
    sentences: list[Sentence] = []
    for p_start, p_end in paragraphs:
        chunk = instruction[p_start:p_end]
        cuts = [0, *(m.end() for m in _SENTENCE_END.finditer(chunk)), len(chunk)]
        for a, b in zip(cuts, cuts[1:]):
            raw = chunk[a:b]
            text = raw.strip()
            if len(text) >= min_chars:
                s = p_start + a + (len(raw) - len(raw.lstrip()))
                sentences.append(Sentence(text, s, s + len(text)))
    return sentences


# ---------------------------------------------------------------- words and quotes


def _split_name(name: str) -> str:
    """`test_answer_file_valid_json` → `answer file valid json`; `TestOutputs` → `outputs`."""
    name = re.sub(r"^test_?", "", name, flags=re.IGNORECASE)
    name = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name)
    return " ".join(name.replace("_", " ").split()).lower()


@lru_cache(maxsize=8192)
def _stem(word: str) -> str:
    """A light stem, so that "covering" meets "cover" and "cities" meets "city"."""
    for suffix, repl in (("ies", "y"), ("ing", ""), ("ed", ""), ("es", ""), ("s", "")):
        if len(word) >= len(suffix) + 3 and word.endswith(suffix):
            return word[:-len(suffix)] + repl
    return word


def _tokens(text: str) -> list[str]:
    text = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", text)
    return [_stem(t) for t in _TOKEN.findall(re.sub(r"[_./\\-]+", " ", text).lower()) if t not in _STOP and len(t) > 1]


class _QuoteFinder:
    """The instruction sentence to quote for an item: literal matches first (the item's checked key or value
    outweighs its file), then TF-IDF cosine over the item's words; a sentence already quoted, and a hint
    sentence (where something is, what is given), count less."""

    LITERAL_WEIGHTS = (1.2, 0.9, 0.7, 0.6)
    PATH_WEIGHT = 0.5
    """A path (or its file name) the sentence names counts once and less than a key or value: most sentences
    of a task name its output file, few name the key an item checks."""
    REUSE_PENALTY = 0.35
    HINT_PENALTY = 0.45
    REQUIREMENT_BONUS = 0.1

    def __init__(self, sentences: list[Sentence]) -> None:
        self.sentences = sentences
        self.lower = [s.text.lower() for s in sentences]
        counts = [Counter(_tokens(s.text)) for s in sentences]
        n = len(sentences)
        df: Counter[str] = Counter(t for c in counts for t in c)
        self.idf = {t: math.log((1 + n) / (1 + d)) + 1 for t, d in df.items()}
        self.vectors = [self._vector(c) for c in counts]
        self.hint = [bool(_HINT.search(s.text)) and not _REQUIREMENT.search(s.text) for s in sentences]
        self.requirement = [bool(_REQUIREMENT.search(s.text)) for s in sentences]
        self.uses: Counter[int] = Counter()

    def _vector(self, counts: Counter[str]) -> dict[str, float]:
        v = {t: (1 + math.log(c)) * self.idf.get(t, 1.0) for t, c in counts.items()}
        norm = math.sqrt(sum(x * x for x in v.values())) or 1.0
        return {t: x / norm for t, x in v.items()}

    def relevant(self, words: str, named: Sequence[str]) -> bool:
        """Whether some sentence shares a literal or a weighted word with the item (so a quote says something about it)."""
        query = {t for t in _tokens(words) if t in self.idf and self.idf[t] > 1.2}
        lits = [n.lower() for n in named if len(n.strip()) >= 3][:6]
        return any(query & set(vec) for vec in self.vectors) or any(_names(low, lit) for low in self.lower for lit in lits)

    def best(self, words: str, named: Sequence[str], fallback: Sentence | None = None, *,
             requirement: bool = False) -> Sentence:
        """The sentence to quote; `requirement`: the quote becomes the item's text, so a sentence that states a
        requirement is strongly preferred."""
        query = self._vector(Counter(t for t in _tokens(words) if t in self.idf))
        best_k, best_score = -1, -math.inf
        lits = [n.lower() for n in named if len(n.strip()) >= 2][:8]
        values = [x for x in lits if not _is_path(x)]
        paths = [x for x in lits if _is_path(x)]
        for k, vec in enumerate(self.vectors):
            score = sum(x * vec.get(t, 0.0) for t, x in query.items())
            for rank, lit in enumerate(values):
                if _names(self.lower[k], lit):
                    score += self.LITERAL_WEIGHTS[min(rank, len(self.LITERAL_WEIGHTS) - 1)]
            if any(_names(self.lower[k], p) for p in paths):
                score += self.PATH_WEIGHT
            score -= self.REUSE_PENALTY * self.uses[k]
            score -= self.HINT_PENALTY * self.hint[k]
            score += (1.0 if requirement else self.REQUIREMENT_BONUS) * self.requirement[k]
            if score > best_score:
                best_k, best_score = k, score
        if best_k < 0 or (best_score <= 0 and fallback is not None):
            chosen = fallback if fallback is not None else self.sentences[0]
            if chosen in self.sentences:
                self.uses[self.sentences.index(chosen)] += 1
            return chosen
        self.uses[best_k] += 1
        return self.sentences[best_k]


def _is_path(text: str) -> bool:
    return "/" in text or bool(re.search(r"\.[a-z][a-z0-9]{0,4}$", text))


def _names(sentence: str, lit: str) -> bool:
    """Whether a (lower-cased) sentence names a literal: as a whole token for short ones."""
    if len(lit) <= 3 or lit.replace(".", "").isdigit():
        return re.search(rf"(?<![\w.]){re.escape(lit)}(?![\w])", sentence) is not None
    return lit in sentence


# ---------------------------------------------------------------- the draft


@dataclass
class Draft:
    """A drafted checklist with its gate results (failures are what the author still has to fix)."""

    checklist: Checklist
    failures: list[GateFailure] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """How the draft was built where it differs from one item per assertion group (merging, fill-ins)."""

    @property
    def ok(self) -> bool:
        return not self.failures


_LITERALS: dict[tuple[str, str], frozenset[str]] = {}


def _literals(text: str, rules: Rules) -> frozenset[str]:
    """`gates.literals`, remembered: a draft compares every candidate with every item taken."""
    key = (rules.version, text)
    found = _LITERALS.get(key)
    if found is None:
        if len(_LITERALS) > 50_000:
            _LITERALS.clear()
        found = _LITERALS[key] = literals(text, rules)
    return found


def _pick(candidates: Iterable[str], route: str, taken: Sequence[ChecklistItem], rules: Rules) -> str | None:
    """The first candidate G3 accepts on `route` and G4 would not call a duplicate of a taken item;
    else the first non-empty candidate (the author fixes it)."""
    threshold = rules.contract.duplicates.threshold
    first: str | None = None
    for text in candidates:
        text = " ".join(text.split()).rstrip(_TRAILING)
        if not text:
            continue
        first = first or text
        lits = _literals(text, rules)
        dup = any(lits == _literals(t.text, rules) and similarity(text, t.text) >= threshold for t in taken)
        if not dup and not requirement_problems(text, rules, route):
            return text
    return first


def _first_sentence(text: str) -> str:
    text = " ".join(text.split("\n\n", 1)[0].split())
    return _SENTENCE_END.split(text, 1)[0].strip(_TRAILING) if text else ""


def _capitalized(text: str) -> str:
    """First letter upper-cased, unless the first word is a literal (`fake_citations`, `report.json`)."""
    head = text.split(" ", 1)[0]
    return text[:1].upper() + text[1:] if head.isalpha() else text


def _name_text(reading: TestReading, primary: str | None) -> str:
    """The last resort for a test with no docstring and no check the reader can put into words: the checked file
    and what the test's name says it checks ("`/app/solution.json` satisfies the verifier's precedence
    constraints checks")."""
    words = re.sub(r"^(?:l\d+|t\d+|step\d+)\s+", "", _split_name(reading.test.name)) or "output"
    subject = literal(primary) if primary else "The output"
    return f"{subject} satisfies the verifier's {words} checks"


def _docstring_text(test: VerifierTest) -> str | None:
    """The test's docstring as a requirement ("Verify that X is Y." → "X is Y"); None when it is no statement."""
    doc = _first_sentence(test.docstring or "")
    doc = re.sub(r"(?i)^(?:step|part|test|check|level|l)\s*\d+[a-z]?\s*[:.)-]\s*", "", doc)
    if not doc or doc.endswith("?"):
        return None
    text = _capitalized(_DOC_PREFIX.sub("", doc).strip(_TRAILING))
    words = set(_tokens(text))
    if not text or words <= set(_tokens(_split_name(test.name))) | {"test", "check"}:
        return None  # the docstring only repeats the test's name
    return text


@dataclass
class _Unit:
    """One assertion item to be: the groups (of one test, possibly several cases) it states."""

    reading: TestReading
    groups: list[Group]
    cases: list[Case]


def _signature(groups: list[Group], params: frozenset[str]) -> tuple:
    """The form of a case's checks, the case's own values left out (bools kept: they name different
    requirements; keys kept unless they are the case's parameter values)."""
    out = []
    for g in groups:
        for c in g.main:
            e = c.expected
            shape = tuple(k if isinstance(k, str) and (k == "*" or k not in params) else type(k).__name__
                          for k in c.subject.keys)
            out.append((c.op, shape, e.value if e is not None and e.is_lit and isinstance(e.value, bool) else None))
    return tuple(out)


def _levels(reading: TestReading) -> list[list[_Unit]]:
    """The ways one test can become items, coarsest first: one item; cases by form; one per case; one per
    group of each case (only the distinct ones)."""
    cases = reading.cases
    per_case = {c.id: reading.groups(c) for c in cases}
    one = [_Unit(reading, [g for c in cases for g in per_case[c.id]], list(cases))]
    levels = [one]
    checked = any(g.describable for c in cases for g in per_case[c.id])
    if len(cases) > 1 and all(c.known for c in cases) and checked:
        by_form: dict[tuple, list[Case]] = {}
        for c in cases:
            params = frozenset(str(v) for _, v in c.params if isinstance(v, (str, int, float)))
            by_form.setdefault(_signature(per_case[c.id], params), []).append(c)
        if 1 < len(by_form) < len(cases):
            levels.append([_Unit(reading, [g for c in cs for g in per_case[c.id]], cs) for cs in by_form.values()])
        levels.append([_Unit(reading, per_case[c.id], [c]) for c in cases])
    finest = [_Unit(reading, [g], [c]) for c in cases for g in per_case[c.id] if g.describable]
    if len(finest) > len(levels[-1]) and all(g.describable for c in cases for g in per_case[c.id]):
        levels.append(finest)
    elif len(finest) > len(levels[-1]):
        # keep undescribable groups with their case's first group
        merged: list[_Unit] = []
        for c in cases:
            groups = per_case[c.id]
            lead = [g for g in groups if g.describable] or groups[:1]
            units = [_Unit(reading, [g], [c]) for g in lead]
            rest = [g for g in groups if g not in lead]
            if units:
                units[0].groups.extend(rest)
            merged.extend(units)
        if len(merged) > len(levels[-1]):
            levels.append(merged)
    return levels


def _allocate(readings: list[TestReading], budget: int) -> list[_Unit]:
    """Refine tests into more items while the budget allows: every test gets at least one item; each round
    moves one test to its next level, the test whose next level adds fewest items first (ties: source order)."""
    levels = [_levels(r) for r in readings]
    at = [0] * len(readings)
    used = len(readings)
    while True:
        best = None
        for k, lv in enumerate(levels):
            if at[k] + 1 < len(lv):
                extra = len(lv[at[k] + 1]) - len(lv[at[k]])
                if used + extra <= budget and (best is None or extra < best[0]):
                    best = (extra, k)
        if best is None:
            break
        used += best[0]
        at[best[1]] += 1
    return [u for k, lv in enumerate(levels) for u in lv[at[k]]]


def _refs(unit: _Unit) -> list[str]:
    test = unit.reading.test
    if not test.parametrized or len(unit.cases) == len(unit.reading.cases) or any(c.id is None for c in unit.cases):
        return [test.node_id]
    return [f"{test.node_id}[{c.id}]" for c in unit.cases]


def _unit_texts(unit: _Unit, primary: str | None) -> Iterator[str]:
    """Candidate texts for a unit, best first: what its checks state (the docstring first when the test's last
    assertion is one the reader could not put into words), then the docstring, then each group alone."""
    groups = unit.groups
    doc = _docstring_text(unit.reading.test)
    partial = any(g.ends_opaque for g in groups)
    own: list[str] = []
    if len(groups) == 1:
        text = group_text(groups[0], primary)
        if text:
            own.append(text)
    else:
        union = Group([c for g in groups for c in g.main], unit.cases)
        text = group_text(union, primary)
        if text and _covers(text, groups, primary):
            own.append(text)
    docs: list[str] = []
    if not doc and unit.reading.class_doc and not re.match(
            r"(?i)^(?:unit\s+|integration\s+)?tests?(?:\s+(?:cases?|suite))?\s+(?:for|of)\b", unit.reading.class_doc):
        doc = unit.reading.class_doc
    if doc:
        if len(unit.cases) < len(unit.reading.cases) and unit.cases and unit.cases[0].id:
            values = [v for c in unit.cases[:4] for _, v in c.params
                      if isinstance(v, (str, int, float)) and not isinstance(v, bool) and str(v).strip()]
            shown = ", ".join(literal(v) for v in dict.fromkeys(values)) if values else \
                ", ".join(literal(c.id) for c in unit.cases[:4])
            docs.append(f"{doc} for {shown}")
        docs.append(doc)
    yield from (docs + own) if partial and docs else (own + docs)
    for g in groups:
        text = group_text(g, primary)
        if text:
            yield text


def _covers(text: str, groups: list[Group], primary: str | None) -> bool:
    """Whether a merged text names a literal of every group (so it states all of them)."""
    low = text.lower()
    for g in groups:
        names = [x.lower() for x in subject_literals(g)[:3]]
        if names and not any(n in low for n in names):
            return False
    return True


def _unit_words(unit: _Unit, text: str) -> str:
    test = unit.reading.test
    parts = [text, _split_name(test.name), _split_name(test.cls or ""), test.docstring or ""]
    for c in unit.cases:
        parts += [str(v) for _, v in c.params if isinstance(v, (str, int, float))]
    return " ".join(parts)


def _unit_literals(unit: _Unit) -> list[str]:
    out: list[str] = []
    for g in unit.groups:
        for x in subject_literals(g):
            if x not in out:
                out.append(x)
    for c in unit.cases:
        for _, v in c.params:
            if isinstance(v, str) and v not in out:
                out.append(v)
    return out


def _assertion_items(task: Task, units: list[_Unit], rules: Rules, finder: _QuoteFinder, taken: list[ChecklistItem],
                     start: int, file_keys: dict[str, list[str]],
                     anchors: dict[str, list[str]] | None = None,
                     outputs: Sequence[str] = ()) -> list[ChecklistItem]:
    """One item per unit (text, quote, refs, probes); a unit whose every text would duplicate an earlier item of
    the same test joins that item instead (its refs and probes added)."""
    items: list[ChecklistItem] = []
    threshold = rules.contract.duplicates.threshold
    for unit in units:
        primary = next((f for f in unit.reading.files if not f.startswith("/tests/")), None)
        probes: list[Probe] = []
        for g in unit.groups:
            for p in group_probes(g, unit.reading, task.instruction, file_keys, anchors, outputs):
                if p not in probes:
                    probes.append(p)
        candidates = []
        for raw in _unit_texts(unit, primary):
            text = " ".join(raw.split()).rstrip(_TRAILING)
            for option in (text, _sanitized(text, rules) if text and requirement_problems(text, rules, "assertion")
                           else None):
                if option and option not in candidates:
                    candidates.append(option)
        name_words = set(_tokens(_split_name(unit.reading.test.name))) | {"test", "check", "checks"}
        candidates = [c for c in candidates if not set(_tokens(c)) <= name_words]
        quote = None
        passing = [c for c in candidates if not requirement_problems(c, rules, "assertion")]
        if not passing and finder.relevant(_unit_words(unit, " ".join(candidates[:1])), _unit_literals(unit)):
            quote = finder.best(_unit_words(unit, " ".join(candidates[:1])), _unit_literals(unit), requirement=True)
            statement = _as_statement(quote.text) or requirement_text(quote.text)
            statements = [statement, *([_sanitized(statement, rules)] if _sanitized(statement, rules) else [])]
            passing = [t for t in statements if not requirement_problems(t, rules, "assertion")]
            candidates = [*candidates, *statements]
        if not passing:  # no text and no instruction sentence states the check: the test's name as a last resort
            last = _name_text(unit.reading, primary)
            passing = [last] if not requirement_problems(last, rules, "assertion") else []
            candidates = candidates or [last]
        text = _pick(passing, "assertion", [*taken, *items], rules) if passing else None
        text = text or (passing[0] if passing else candidates[0])
        dup = next((k for k in range(len(items)) if _literals(text, rules) == _literals(items[k].text, rules)
                    and similarity(text, items[k].text) >= threshold), None)
        if dup is not None:
            earlier = items[dup]
            refs = [*earlier.verifier_refs, *(r for r in _refs(unit) if r not in earlier.verifier_refs)]
            if unit.reading.test.node_id in refs or len(refs) == len(unit.reading.cases) and \
                    unit.reading.test.parametrized and all("[" in r for r in refs):
                refs = [r for r in refs if "[" not in r] or refs
            merged = [*earlier.probes, *(p for p in probes if p not in earlier.probes)]
            items[dup] = earlier.model_copy(update={"verifier_refs": refs, "probes": merged[:24]})
            continue
        if quote is None:
            quote = finder.best(_unit_words(unit, text), [*_unit_literals(unit), *literal_spans(text)])
        items.append(ChecklistItem(id=f"C{start + len(items)}", route="assertion", text=text, task_quote=quote.text,
                                   verifier_refs=_refs(unit), probes=probes[:24]))
    return items


_VAGUE_WORDS = re.compile(r"(?i)\s*\b(?:correctly|properly|appropriately|as expected|as required|sufficiently|"
                          r"reasonably|adequately|satisfactorily|successfully|and so on|etc\.?)(?=\W|$)")
_RUN_SUBJECT = re.compile(r"(?i)^(?:the\s+)?(?:agent|model|assistant)(?:'s\s+|\s+)")
"""An item about an artifact written as what the agent does ("The agent computes X"): the solution is its subject."""
_RUN_POSSESSIVE = re.compile(r"(?i)\b(?:the\s+)?(?:agent|model|assistant)'s\s+")
"""The agent's artifact anywhere in a text ("is found in agent's output"): the artifact is the output itself."""
_DANGLING_AND = re.compile(r"(?i)\b(is|are|was|were|be)\s+(?:and|or)\s+")
"""A copula left before "and" once a vague adjective is dropped ("are reasonable and derived" → "are derived")."""
_INVERTED = ((re.compile(r"(?i)\b(does|do) not exist\b"), lambda m: "exists" if m[1].lower() == "does" else "exist"),
             (re.compile(r"(?i)\bis missing\b"), lambda m: "is present"))
"""A failure message the verifier prints ("X does not exist") turned into what the check requires ("X exists")."""


def _sanitized(text: str, rules: Rules) -> str | None:
    """A candidate text with vague words dropped ("is correctly replaced" → "is replaced", "the expected files" →
    "the files"), the agent as subject replaced by the solution, a failure message inverted ("does not exist" →
    "exists") and cut before a second requirement ("exists and is valid" → "exists", `gates.first_requirement`);
    None when nothing is left."""
    out = _VAGUE_WORDS.sub("", text)
    out = re.sub(r"(?i)\b(?:reasonable|sufficient|appropriate|adequate|satisfactory|correct|expected|proper)\s+",
                 "", out)
    out = _DANGLING_AND.sub(r"\1 ", out)
    out = _RUN_SUBJECT.sub(lambda m: "The " if "'" in m[0] else "The solution ", out)
    out = _RUN_POSSESSIVE.sub("the ", out)
    for pattern, replacement in _INVERTED:
        out = pattern.sub(replacement, out)
    out = first_requirement(out, rules)
    out = " ".join(out.split()).strip(_TRAILING + "(")
    return _balanced(out) if out and out != text else None


def literal_spans(text: str) -> list[str]:
    """The backticked literals of an item text, in order."""
    return [m.strip() for m in re.findall(r"`([^`]+)`", text)]


def assertion_item(task: Task, test: VerifierTest, rules: Rules, *, item_id: str,
                   taken: Sequence[ChecklistItem] = ()) -> ChecklistItem:
    """One assertion item for `test` (its groups merged), built as the draft builds it, for an editor's click
    on a test: text from what it checks (else its docstring), the instruction sentence naming its literals as
    quote, probes where it checks a literal."""
    sentences = _sentences_or_error(task, rules)
    readings = read_tests(task)
    reading = readings.get(test.node_id) or TestReading(test, [Case(None)])
    unit = _levels(reading)[0][0]
    [item] = _assertion_items(task, [unit], rules, _QuoteFinder(sentences), list(taken), 1, read_keys(readings.values()),
                              file_anchors(readings.values(), task.instruction))
    return item.model_copy(update={"id": item_id})


def _sentences_or_error(task: Task, rules: Rules) -> list[Sentence]:
    """The instruction's sentences (the whole text when it has no sentence); ValueError when nothing can be quoted."""
    sentences = instruction_sentences(task.instruction, rules.contract.quote.min_chars)
    whole = task.instruction.strip()
    if not sentences and len(" ".join(whole.split())) >= rules.contract.quote.min_chars:
        start = task.instruction.find(whole)
        sentences = [Sentence(whole, start, start + len(whole))]
    if not sentences:
        raise ValueError(f"task {task.id}: instruction.md has no sentence of {rules.contract.quote.min_chars}+ "
                         "characters to quote; a draft cannot be grounded")
    return sentences


def _class_groups(tests: list[VerifierTest], cap: int) -> list[list[VerifierTest]]:
    """Tests as items when there are more tests than the budget: one per class, else neighbours merged."""
    groups = [[t] for t in tests]
    if len(groups) > cap:
        by_class: dict[str, list[VerifierTest]] = {}
        for t in tests:
            by_class.setdefault(f"{t.file}::{t.cls}" if t.cls else t.node_id, []).append(t)
        groups = list(by_class.values())
    if len(groups) > cap:
        size = math.ceil(len(groups) / cap)
        groups = [[t for g in groups[i:i + size] for t in g] for i in range(0, len(groups), size)]
    return groups


_FRAGMENT = re.compile(r"^[_.\-/]|[*{}<>$]|^/?\d+$|^\W*$")


def _artifacts(sentence: Sentence, rules: Rules) -> list[str]:
    """Paths and file names a sentence names, whole ones only (no fragments such as `/2` or `_pb2.py`)."""
    found: list[str] = []
    for kind in ARTIFACT_KINDS:
        pattern = rules.contract.literals.patterns.get(kind)
        if pattern:
            found += [m[0].rstrip(_TRAILING) for m in re.finditer(pattern, sentence.text)]
    seen: list[str] = []
    for a in sorted(found, key=sentence.text.find):
        if not a or a in seen or any(a in s for s in seen):
            continue
        base = a.rstrip("/").rsplit("/", 1)[-1]
        if _FRAGMENT.search(base) or len(base) < 3 or not re.search(r"[A-Za-z]{2}", base):
            continue
        if a.startswith("/") and a.rstrip("/").count("/") < 2 and "." not in base:
            continue  # `/root`, `/app`: where things are, not an artifact
        if "/" not in a and not re.search(rf"[`'\"“‘]{re.escape(a)}", sentence.text):
            continue  # a bare name outside quotes (`Three.js`, `Node.js`) is rarely a file of the task
        seen.append(a)
    return seen


SENTENCE_ITEM_MAX_WORDS = 30
"""Longest instruction sentence taken as an item's text (rewritten as a statement)."""


def requirement_text(quote: str) -> str:
    """An instruction span as a first item text: imperative lead-ins ("You should", "Please") and the
    closing punctuation removed; the author rewrites it into an observable requirement."""
    text = " ".join(quote.split())
    return _capitalized(_LEAD.sub("", text).strip(_TRAILING)) or text


_IMPERATIVE = re.compile(r"^(?P<verb>[A-Za-z]+)\b(?P<rest>.*)$", re.DOTALL)
_IRREGULAR = {"do": "does", "be": "is", "have": "has", "go": "goes"}
_VERBS = frozenset("""keep leave preserve use modify change edit fill write save make ensure avoid retain maintain return
output include sort remove replace add update fix implement compute calculate create generate produce report list identify
find detect extract convert set put store follow apply run delete place copy link populate select read load parse rename
move organize merge format round print submit answer translate count compare check verify""".split())
_SUBJECT_NOT = re.compile(r"(?i)^(?P<subj>.+?)\s+(?:must|should)\s*n[o']t\s+(?P<rest>.+)$|"
                          r"^(?P<subj2>.+?)\s+(?:mustn't|shouldn't)\s+(?P<rest2>.+)$")


def _third_person(verb: str) -> str:
    v = verb.lower()
    if v in _IRREGULAR:
        return _IRREGULAR[v]
    if re.search(r"(?:s|sh|ch|x|z|o)$", v):
        return v + "es"
    if re.search(r"[^aeiou]y$", v):
        return v[:-1] + "ies"
    return v + "s"


def _balanced(text: str) -> str:
    """Unmatched brackets and closing punctuation trimmed from a clause."""
    text = text.strip().strip(_TRAILING + "—-–")
    for quote in ('"', "“", "”"):
        if text.count(quote) % 2 and (text.endswith(quote) or text.startswith(quote)):
            text = text.strip(quote).strip()
    for open_, close in (("(", ")"), ("[", "]")):
        while text.count(close) > text.count(open_) and close in text:
            at = text.rfind(close)
            text = (text[:at] + text[at + 1:]).strip()
        while text.count(open_) > text.count(close):
            text = text[:text.rfind(open_)].strip()
    return text.strip().strip(_TRAILING + "—-–")


def _plural(subject: str) -> bool:
    last = subject.split()[-1].strip("`*") if subject.split() else ""
    return bool(re.search(r"(?<!s)s$", last)) and not last.endswith("ss")


def _as_statement(clause: str) -> str | None:
    """An instruction clause as a statement: "Do not modify X" → "The agent does not modify X", "Only fill in
    the value column" → "The agent only fills in the value column", "X must not be changed" → "X is not
    changed", "You should sort the keys" → "The agent sorts the keys"; None when it is no requirement."""
    text = _balanced(" ".join(clause.replace("**", "").split()))
    for _ in range(2):
        text = re.sub(r"(?i)^(?:note|notes|important|constraints?|warning|hint|please)(?:\s+that)?\s*[:,]?\s*", "", text)
    text = text[:1].upper() + text[1:]
    text = re.sub(r"(?i)^(?:additionally|also|finally|then|however),?\s+", "", text)
    m = re.match(r"(?i)^you\s+(?:also\s+)?(?:must|should|need\s+to|have\s+to|will\s+need\s+to|are\s+to)\s+"
                 r"(?P<neg>not\s+)?(?P<rest>.+)$", text)
    if m:
        text = ("Do not " if m["neg"] else "") + m["rest"]
        if not m["neg"]:
            text = text[:1].upper() + text[1:]
    text = re.sub(r"(?i)^(?:please|make\s+sure\s+(?:to\s+)?|be\s+sure\s+to)\s+", "", text)
    text = re.sub(r",?\s*(?:etc\.?|and so on)$", "", text).strip()
    inner = re.match(r"(?i)^(?P<pre>(?:for|in|after|before|when|once|using)\b[^:]{3,80}?),\s*you\s+(?:need|have|must|should|"
                     r"will need)\s+(?:to\s+)?:?\s*(?:first,?\s*)?(?P<rest>[A-Za-z].+)$", text)
    if inner:
        verb, _, tail = inner["rest"].partition(" ")
        if verb.lower() in _VERBS:
            return f"{inner['pre']}, the agent {_third_person(verb)} {tail}".strip()
    if not text or len(text.split()) < 2:
        return None
    m = re.match(r"(?i)^(?:do\s+not|don'?t)\s+forget\s+to\s+(?P<verb>[a-z]+)\b(?P<rest>.*)$", text)
    if m:
        return f"The agent {_third_person(m['verb'])}{m['rest']}"
    m = re.match(r"(?i)^(?:do\s+not|don'?t|never)\s+(?P<rest>.+)$", text)
    if m:
        verb, _, tail = m["rest"].partition(" ")
        if text.lower().startswith("never"):
            return f"The agent never {_third_person(verb)} {tail}".strip()
        return f"The agent does not {m['rest']}"
    m = re.match(r"(?i)^no\s+need\s+to\s+(?:change|modify|alter|edit)\s+(?P<rest>.+)$", text)
    if m:
        return f"The agent leaves {m['rest']} unchanged"
    m = re.match(r"(?i)^only\s+(?P<verb>[a-z]+)\s+(?P<rest>.+)$", text)
    if m and m["verb"].lower() in _VERBS:
        return f"The agent only {_third_person(m['verb'])} {m['rest']}"
    m = _IMPERATIVE.match(text)
    if m and m["verb"].lower() in _VERBS:
        return f"The agent {_third_person(m['verb'])}{m['rest']}"
    m = _SUBJECT_NOT.match(text)
    if m:
        subject = m["subj"] or m["subj2"]
        rest = m["rest"] or m["rest2"]
        if subject.lower() in ("you", "you also"):
            subject = "The agent"
        plural = _plural(subject)
        if rest.lower().startswith("be able to "):
            return f"{_capitalized(subject)} cannot {rest[11:]}"
        if rest.lower().startswith("be "):
            return f"{_capitalized(subject)} {'are' if plural else 'is'} not {rest[3:]}"
        return f"{_capitalized(subject)} {'do' if plural else 'does'} not {rest}"
    m = re.match(r"(?i)^(?P<subj>(?!you\b)[A-Za-z`\"'][^,;:]{2,80}?)\s+(?:must|should|needs?\s+to|has\s+to|have\s+to)\s+"
                 r"(?P<rest>[a-z]+\b.*)$", text)
    if m:
        subject, rest = m["subj"], m["rest"]
        head = re.split(r"\s+(?:in|of|for|from|with|at|on|under|inside|within)\s+", subject, maxsplit=1)[0]
        plural = not re.match(r"(?i)(?:each|every|the\s+\w+\s+of)\b", head) and (
            " and " in head or _plural(head))
        verb, _, tail = rest.partition(" ")
        adverb = ""
        if verb.lower() in ("only", "also", "always", "still", "just") and tail:
            adverb, (verb, _, tail) = verb + " ", tail.partition(" ")
        if verb.lower() == "be":
            return f"{_capitalized(subject)} {'are' if plural else 'is'} {adverb}{tail}".strip()
        if verb.lower() == "not":
            return None
        if adverb:
            return f"{_capitalized(subject)} {adverb}{verb if plural else _third_person(verb)} {tail}".strip()
        return f"{_capitalized(subject)} {verb if plural else _third_person(verb)} {tail}".strip()
    return None


_CONSTRAINT = re.compile(
    r"(?<![\w-])(?:do\s+(?:\*\*)?not(?:\*\*)?|don'?t|never|must\s+not|mustn't|should\s+not|shouldn't|"
    r"no\s+need\s+to\s+(?:change|modify|alter|edit)|without\s+(?:modifying|changing|altering|editing|touching)|"
    r"(?:keep\w*|leav\w*|remain\w*|stay\w*|preserv\w*)\s+(?:[^.;]{0,60}\s)?(?:unchanged|untouched|intact|as[- ]is)|"
    r"only\s+(?:modify|change|edit|fill|use|touch|write|update|output|return|include|fill\s+in)\b|"
    r"(?:modify|change|edit|fill\s+in|touch|update)\s+only\b)|[—–]\s*leave\s+(?:them|it)\b|\s-\s+leave\s+(?:them|it)\b",
    re.IGNORECASE)
_NOT_A_CONSTRAINT = re.compile(r"(?i)\b(?:do\s+not|don'?t)\s+(?:have|need|know|exist|contain|worry)\b|"
                               r"\b(?:that|which|who|if|when|unless|whether|may)\s+(?:\w+\s+){0,2}?"
                               r"(?:do\s+not|don'?t|never|must\s+not|should\s+not)\b")


def _constraint_clause(sentence: Sentence) -> str | None:
    """The clause of a sentence that states a constraint ("Do not change X", "… (DO NOT MODIFY)",
    "keeping the sheet name unchanged", "fill in only the `value` column"), or None."""
    text = sentence.text
    if re.match(r"(?i)^(?:assume|suppose|if|when|for example|e\.g\.)\b", text):
        return None
    if _INLINE_DO_NOT.search(text):
        return text
    m = _CONSTRAINT.search(text)
    if m is None or _NOT_A_CONSTRAINT.search(text[max(0, m.start() - 30):m.end() + 12]):
        return None
    bounds = [0, *(b.end() for b in re.finditer(r"[;:]\s+|\s+[—–]\s+|,\s+(?=(?:and\s+)?(?:do|don'?t|never|keep|only)\b)|"
                                               r"\.\s+", text)), len(text)]
    for a, b in zip(bounds, bounds[1:]):
        if a <= m.start() < b:
            return _balanced(text[a:b])
    return _balanced(text)


_INLINE_DO_NOT = re.compile(r"(`[^`]+`|[\w./-]+\.\w+)\s*\(\s*(?:\*\*)?(?:DO\s+NOT|do\s+not)\s+(\w+)\W*\)")


def _constraint_text(clause: str) -> str | None:
    inline = _INLINE_DO_NOT.search(clause)
    if inline:
        return f"The agent does not {inline[2].lower()} {inline[1]}"
    leave = re.search(r"(?i)^(?P<what>.+?)\s+(?:are|is)\s+[\w\s]+?\s*[—–-]+\s*leave\s+(?:them|it)\b", clause)
    if leave:
        return f"The agent leaves {leave['what'][:1].lower() + leave['what'][1:]} unchanged"
    keeping = re.search(r"(?i)\bkeep(?:ing|s)?\s+(?P<what>.+?)\s+(?P<how>unchanged|untouched|intact|as[- ]is)\b", clause)
    if keeping:
        return f"The agent keeps {keeping['what']} {keeping['how']}"
    m = re.search(r"(?i)\b(?:do\s+not|don'?t|never|no\s+need\s+to|only\s+\w+|(?:modify|change|edit|fill\s+in|touch|"
                  r"update)\s+only)\b.*", clause)
    if m and m.start() > 0 and not re.search(r"(?i)\b(?:must|should)\s*n[o']t\b", clause[:m.start()]):
        head = clause[:m.start()].strip(" ,;:")
        if not head or len(head.split()) <= 2 or head.lower().endswith(("and", "please", "you")):
            tail = m.group(0)
            return _as_statement(tail[:1].upper() + tail[1:])
    return _as_statement(clause[:1].upper() + clause[1:])


def _output_items(sentences: list[Sentence], rules: Rules, named: set[str]) -> list[tuple[Sentence, str]]:
    """(sentence, artifact) for each output file an output verb governs that no assertion item names."""
    out: list[tuple[Sentence, str]] = []
    seen: set[str] = set()
    for s in sentences:
        for a in _artifacts(s, rules):
            key = a.lower()
            base = key.rstrip("/").rsplit("/", 1)[-1]
            if key in seen or base in seen or key in named or base in named:
                continue
            if s.is_output(a) and not s.is_constraint(a):
                seen.update({key, base})
                out.append((s, a))
    return out


def _output_paths(sentences: list[Sentence], rules: Rules, readings: Sequence[TestReading]) -> list[str]:
    """The files the verifier reads that the instruction asks the agent to write (full paths as the tests name them)."""
    asked = {a.strip("`").rstrip("/") for s, a in _output_items(sentences, rules, set())}
    names = {a.rsplit("/", 1)[-1] for a in asked}
    out: list[str] = []
    for reading in readings:
        for f in reading.files:
            if (f in asked or f.rsplit("/", 1)[-1] in names) and f not in out:
                out.append(f)
    return out


def _input_items(sentences: list[Sentence], rules: Rules, named: set[str]) -> list[tuple[Sentence, str]]:
    out = []
    seen: set[str] = set()
    for s in sentences:
        for a in _artifacts(s, rules):
            key = a.lower()
            if key in seen or key in named or s.is_output(a) or s.is_constraint(a):
                continue
            seen.add(key)
            out.append((s, a))
    return out


def _named_literals(items: Iterable[ChecklistItem]) -> set[str]:
    out: set[str] = set()
    for item in items:
        for span in literal_spans(item.text):
            low = span.lower().rstrip("/")
            out.add(low)
            out.add(low.rsplit("/", 1)[-1])
    return out


def draft_checklist(task: Task, rules: Rules) -> Draft:
    """Draft a checklist for `task` from its instruction and verifier (see the module docstring)."""
    budget = rules.contract.budget
    cap = item_cap(task, rules)
    sentences = _sentences_or_error(task, rules)
    notes: list[str] = []
    readings_by_id = read_tests(task)
    readings = [readings_by_id[t.node_id] for t in task.tests]
    file_keys = read_keys(readings)
    anchors = file_anchors(readings, task.instruction)
    finder = _QuoteFinder(sentences)
    outputs = _output_paths(sentences, rules, readings)

    constraints = [(s, c) for s in sentences if (c := _constraint_clause(s)) is not None]
    reserve = min(len(constraints), 3)
    # outputs that no test reads or checks get a generated item: reserve room for a few
    tested = {f.lower() for r in readings for f in r.files} | {
        c.subject.path.lower() for r in readings for c in r.all_checks if c.subject.path}
    tested |= {p.rsplit("/", 1)[-1] for p in tested}
    maybe_outputs = _output_items(sentences, rules, tested)
    reserve += min(len(maybe_outputs), 2)
    reserve = max(0, min(reserve, cap - len(task.tests)))

    items: list[ChecklistItem] = []
    if len(task.tests) > cap - reserve:
        groups = _class_groups(task.tests, cap - reserve)
        notes.append(f"{len(task.tests)} verifier tests grouped into {len(groups)} assertion items "
                     f"(the budget is {cap} items)")
        for group in groups:
            units = [_levels(readings_by_id[t.node_id])[0][0] for t in group]
            merged = _Unit(units[0].reading, [g for u in units for g in u.groups], units[0].cases)
            [item] = _assertion_items(task, [merged], rules, finder, items, len(items) + 1, file_keys, anchors,
                                      outputs)
            names = ", ".join(f"`{t.name}`" for t in group[1:])
            text = _pick([f"{item.text} (also {names})" if names else item.text, item.text], "assertion", items, rules)
            items.append(item.model_copy(update={"text": text or item.text,
                                                 "verifier_refs": [t.node_id for t in group]}))
    else:
        units = _allocate(readings, cap - reserve)
        items = _assertion_items(task, units, rules, finder, [], 1, file_keys, anchors, outputs)
        if len(units) > len(task.tests):
            notes.append(f"{len(task.tests)} verifier tests drafted as {len(units)} assertion items "
                         "(one per assertion group or parameter group)")

    def add(route: str, texts: list[str], sentence: Sentence, probes: Sequence[Probe] = ()) -> bool:
        texts = [t for t in texts if t and not requirement_problems(t, rules, route)]
        text = _pick(texts, route, items, rules)
        if text is None or any(i.text == text or (literals(text, rules) == literals(i.text, rules) and
                                                  similarity(text, i.text) >= rules.contract.duplicates.threshold)
                               for i in items):
            return False
        items.append(ChecklistItem(id=f"C{len(items) + 1}", route=route, text=text, task_quote=sentence.text,
                                   probes=[p for p in probes if not refused(p, task.instruction)]))
        if sentence in sentences:
            finder.uses[sentences.index(sentence)] += 1
        return True

    named = _named_literals(items)
    for sentence, artifact in _output_items(sentences, rules, named):
        if len(items) >= cap:
            break
        noun = artifact.strip("`")
        text = f"{literal(noun.rstrip('/'))} exists and is a directory" if noun.endswith("/") else f"{literal(noun)} exists"
        add("generated", [text], sentence)
    done_constraints: set[int] = set()
    for sentence, clause in constraints:
        if len(items) >= cap:
            break
        text = _constraint_text(clause)
        if text and add("judge", [text], sentence):
            done_constraints.add(sentence.start)
    if len(items) < budget.min_items:
        for sentence, artifact in _output_items(sentences, rules, set()):
            if len(items) >= budget.min_items:
                break
            noun = artifact.strip("`")
            if not noun.endswith("/"):
                add("generated", [f"{literal(noun)} exists"], sentence)
    if len(items) < budget.min_items:
        for sentence, artifact in _input_items(sentences, rules, _named_literals(items)):
            if len(items) >= budget.min_items:
                break
            if re.search(r"\.[A-Za-z]\w{0,7}$", artifact.strip("`")):
                add("judge", [f"The agent reads the provided {literal(artifact)}"], sentence)
    if len(items) < budget.min_items:
        for sentence in sentences:
            if len(items) >= budget.min_items:
                break
            if sentence.start in done_constraints or not _REQUIREMENT.search(sentence.text) or \
                    (_HINT.search(sentence.text) and not _OUTPUT_VERB.search(sentence.text)):
                continue
            if len(sentence.text.split()) > SENTENCE_ITEM_MAX_WORDS or \
                    any(normalize_whitespace(i.task_quote) == normalize_whitespace(sentence.text) for i in items):
                continue
            text = _as_statement(sentence.text)
            if text and add("judge" if text.startswith("The agent") else "generated", [text], sentence):
                notes.append("few tests and artifacts: requirement sentences of the instruction added as judge items")
    checklist = Checklist(task=task.id, source=f"{DRAFT_SOURCE_PREFIX}:{rules.version}", items=items)
    return Draft(checklist, run_gates(checklist, task, rules), notes)


def draft_yaml(draft: Draft) -> str:
    """The draft as an editable YAML checklist file, with a header saying what is left to do."""
    lines = [f"# DRAFT checklist for {draft.checklist.task}, built offline from instruction.md and the verifier.",
             "# Review every item (text, route, quote, probes); it is frozen only when a person saves it under",
             "# 'source: human:<name>'."]
    lines += [f"# note: {n}" for n in draft.notes]
    if draft.failures:
        lines.append(f"# {len(draft.failures)} gate failure(s) to fix:")
        lines += [f"#   {f.line()}" for f in draft.failures]
    else:
        lines.append("# every gate passes")
    data = draft.checklist.model_dump(mode="json")
    for item in data["items"]:
        if not item["probes"]:
            del item["probes"]
        else:
            item["probes"] = [{k: v for k, v in p.items() if v != "" or k != "flags"} for p in item["probes"]]
    body = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)
    return "\n".join(lines) + "\n" + body
