"""An offline checklist draft from the task alone: a starting point a person edits, never a frozen checklist.

The draft reads only what a checklist may be built from (instruction.md and the verifier source) and needs
no LLM, so a project without an endpoint still has a way forward. It holds

- one `assertion` item per verifier test node (tests grouped by class, then by neighbours, only when the
  item budget is smaller than the test count), its text taken from the test's docstring, its assertion
  messages or its name, its `verifier_refs` set, its task quote the instruction sentence that best matches
  the test (TF-IDF cosine over the test's words and string constants);
- one `generated` item per output artifact the instruction names (a path or file name in a sentence that
  asks to write, save or produce it), quoting that sentence;
- one `judge` item per sentence forbidding something about an artifact ("Do not modify X");
- when that is still under the item budget, `judge` items for the inputs the instruction names.

By construction every quote is a verbatim span of instruction.md (G1), every ref a parsed test node (G2),
every test covered (G5) and the schema met (G6); the budget is met whenever the instruction has at least
the minimum number of sentences (sentences become judge items when tests and files are too few). G3 and G4
are tried, not guaranteed: of an item's candidate texts the first that G3 accepts and G4 would not call a
duplicate of an earlier item is taken, else the first (the author fixes it).
The source is `draft:<rules version>`, which the registry never freezes: a person reviews the draft and
saves it under their own name.
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

import yaml
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.metrics.pairwise import cosine_similarity

from ..models import Task, VerifierTest
from .gates import GateFailure, item_cap, literals, requirement_problems, run_gates, similarity
from .rules import Rules
from .schema import Checklist, ChecklistItem

__all__ = ["DRAFT_SOURCE_PREFIX", "Draft", "Sentence", "assertion_item", "draft_checklist", "draft_yaml",
           "instruction_sentences", "requirement_text"]

DRAFT_SOURCE_PREFIX = "draft"
ARTIFACT_KINDS = ("path", "file_name")
"""Literal kinds in `rules.contract.literals.patterns` that name an artifact."""
_OUTPUT_VERB = re.compile(
    r"\b(?:writ\w*|wrote|sav\w*|output\w*|creat\w*|produc\w*|generat\w*|export\w*|stor\w*|emit\w*|dump\w*|"
    r"implement\w*|build\w*|updat\w*|modif\w*|fix\w*|edit\w*|put)\b", re.IGNORECASE)
_INPUT_VERB = re.compile(
    r"\b(?:given|provided|located|read\w*|load\w*|inputs?|referenc\w*|us(?:e|es|ing)|found|open\w*|pars\w*|"
    r"contain\w*|lives?|sits?|stored|available)\b", re.IGNORECASE)
_LEAD = re.compile(r"^(?:please\s+|you\s+(?:should|must|need\s+to|will\s+need\s+to|will|have\s+to)\s+|"
                   r"make\s+sure\s+(?:to\s+)?|be\s+sure\s+to\s+)+", re.IGNORECASE)
_NEGATION = re.compile(r"\b(?:not|never|don't|do\s+\*\*not\*\*|must\s+not|without)\b", re.IGNORECASE)
_FENCE = re.compile(r"^\s*(```|~~~)")
_LIST_MARKER = re.compile(r"^\s*(?:[-*+]|\d+[.)]|#+)\s+")
_SENTENCE_END = re.compile(r"(?<!\be\.g\.)(?<!\bi\.e\.)(?<=[.!?])\s+(?=\S)")
_DOC_PREFIX = re.compile(r"^(?:tests?|verif(?:y|ies)|checks?|ensures?|asserts?|validates?)\s+(?:that\s+)?",
                         re.IGNORECASE)
_TRAILING = ".:;, "


@dataclass(frozen=True)
class Sentence:
    """One sentence (or list entry) of instruction.md: a verbatim span, list markers left out."""

    text: str
    start: int
    end: int

    def is_constraint(self, artifact: str) -> bool:
        """Whether the sentence forbids something about `artifact` ("Do not modify X")."""
        return bool(_NEGATION.search(self.text[:max(self.text.find(artifact), 0)]))

    def is_output(self, artifact: str) -> bool:
        """Whether the sentence asks for `artifact` to be written, saved or produced: the verb nearest
        before its first mention is an output verb ("save the result to X"), not an input one ("the input
        (X)", "reference it with X", "load X")."""
        before = self.text[:max(self.text.find(artifact), 0)]
        out = [m.end() for m in _OUTPUT_VERB.finditer(before)]
        inp = [m.end() for m in _INPUT_VERB.finditer(before)]
        return bool(out) and (not inp or out[-1] > inp[-1])


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


# ---------------------------------------------------------------- verifier tests


@dataclass(frozen=True)
class _TestFacts:
    """What a verifier test says about itself: docstring, assertion messages and expressions, strings."""

    test: VerifierTest
    docstring: str
    messages: tuple[str, ...]
    expressions: tuple[str, ...]
    strings: tuple[str, ...]

    @property
    def words(self) -> str:
        """Everything for matching the test against instruction sentences."""
        parts = [_split_name(self.test.name), _split_name(self.test.cls or ""), self.docstring,
                 *self.messages, *self.strings]
        return " ".join(parts)


def _split_name(name: str) -> str:
    """`test_answer_file_valid_json` → `answer file valid json`; `TestOutputs` → `outputs`."""
    name = re.sub(r"^test_?", "", name, flags=re.IGNORECASE)
    name = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name)
    return " ".join(name.replace("_", " ").split()).lower()


def _function_node(source: str, test: VerifierTest) -> ast.AST | None:
    """The test's function, or the whole module of a verifier script (None for a shell script)."""
    try:
        tree = ast.parse(source) if test.kind != "script" or test.file.endswith(".py") else None
    except SyntaxError:
        return None
    if tree is None or test.kind == "script":
        return tree
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.lineno == test.lineno:
            return node
    return None


def _facts(task: Task, test: VerifierTest) -> _TestFacts:
    node = _function_node(task.verifier_files.get(test.file, ""), test)
    messages: list[str] = []
    expressions: list[str] = []
    strings: list[str] = []
    if node is not None:
        for sub in ast.walk(node):
            if isinstance(sub, ast.Assert):
                expressions.append(ast.unparse(sub.test))
                if isinstance(sub.msg, ast.Constant) and isinstance(sub.msg.value, str):
                    messages.append(sub.msg.value)
            elif isinstance(sub, ast.Constant) and isinstance(sub.value, str) and sub.value != test.docstring:
                strings.append(sub.value)
    return _TestFacts(test, (test.docstring or "").strip(), tuple(messages), tuple(expressions), tuple(strings))


def _first_sentence(text: str) -> str:
    text = " ".join(text.split("\n\n", 1)[0].split())
    return _SENTENCE_END.split(text, 1)[0].strip(_TRAILING) if text else ""


def _capitalized(text: str) -> str:
    """First letter upper-cased, unless the first word is a literal (`fake_citations`, `report.json`)."""
    head = text.split(" ", 1)[0]
    return text[:1].upper() + text[1:] if head.isalpha() else text


def _as_requirement(text: str) -> str:
    """A docstring or message as a requirement: "Verify that X is Y." → "X is Y"."""
    return _capitalized(_DOC_PREFIX.sub("", _first_sentence(text)).strip(_TRAILING))


def _candidates(facts: _TestFacts) -> Iterator[str]:
    """Item texts for one test, best first: its docstring, its assertion messages, its name."""
    if facts.docstring:
        yield _as_requirement(facts.docstring)
    for message in facts.messages:
        yield _as_requirement(message)
    for expression in facts.expressions[:1]:
        if len(expression) <= 100:
            yield f"`{expression}` holds"
    if facts.test.kind == "script":
        yield f"The checks of `{facts.test.node_id}` hold"
    else:
        yield f"{_split_name(facts.test.name).capitalize() or 'The check'} (`{facts.test.name}`)"


# ---------------------------------------------------------------- quotes


class _QuoteFinder:
    """The instruction sentence that best matches a text: TF-IDF cosine (identifiers split into words),
    plus `LITERAL_BONUS` per literal (path, file name, identifier, quoted value) the two share."""

    LITERAL_BONUS = 0.5

    def __init__(self, sentences: list[Sentence], rules: Rules) -> None:
        self.sentences = sentences
        self.rules = rules
        self.literals = [literals(s.text, rules) for s in sentences]
        self.vectorizer: TfidfVectorizer | None = None
        if sentences:
            self.vectorizer = TfidfVectorizer(preprocessor=self._prep, sublinear_tf=True, stop_words="english")
            try:
                self.matrix = self.vectorizer.fit_transform([s.text for s in sentences])
            except ValueError:  # only stop words: no vocabulary
                self.vectorizer = None

    @staticmethod
    def _prep(text: str) -> str:
        return re.sub(r"[_./\\-]+", " ", text).lower()

    def best(self, text: str, fallback: Sentence) -> Sentence:
        if self.vectorizer is None:
            return fallback
        scores = cosine_similarity(self.vectorizer.transform([text]), self.matrix)[0]
        named = literals(text, self.rules)
        scores = [score + self.LITERAL_BONUS * len(named & lits) for score, lits in zip(scores, self.literals)]
        k = max(range(len(scores)), key=scores.__getitem__)
        return self.sentences[k] if scores[k] > 0 else fallback


# ---------------------------------------------------------------- the draft


@dataclass
class Draft:
    """A drafted checklist with its gate results (failures are what the author still has to fix)."""

    checklist: Checklist
    failures: list[GateFailure] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """How the draft was built where it differs from one item per test (grouping, fill-ins)."""

    @property
    def ok(self) -> bool:
        return not self.failures


def _pick(candidates: Iterable[str], route: str, taken: Sequence[ChecklistItem], rules: Rules) -> str | None:
    """The first candidate G3 accepts on `route` and G4 would not call a duplicate of a taken item;
    else the first non-empty candidate (the author fixes it)."""
    threshold = rules.contract.duplicates.threshold
    first: str | None = None
    for text in candidates:
        text = " ".join(text.split())
        if not text:
            continue
        first = first or text
        dup = any(literals(text, rules) == literals(t.text, rules) and similarity(text, t.text) >= threshold
                  for t in taken)
        if not dup and not requirement_problems(text, rules, route):
            return text
    return first


def _assertion_item(task: Task, group: list[VerifierTest], rules: Rules, item_id: str, taken: Sequence[ChecklistItem],
                    finder: _QuoteFinder, default: Sentence) -> ChecklistItem:
    facts = [_facts(task, t) for t in group]
    names = ", ".join(f"`{t.name}`" for t in group[1:])
    texts = [c + (f" (also {names})" if names else "") for c in _candidates(facts[0])]
    text = _pick(texts, "assertion", taken, rules) or group[0].name
    quote = finder.best(" ".join(f.words for f in facts), default)
    return ChecklistItem(id=item_id, route="assertion", text=text, task_quote=quote.text,
                         verifier_refs=[t.node_id for t in group])


def assertion_item(task: Task, test: VerifierTest, rules: Rules, *, item_id: str,
                   taken: Sequence[ChecklistItem] = ()) -> ChecklistItem:
    """One assertion item for `test`, built as the draft builds it (text from its docstring, assertion
    messages or name; the best-matching instruction sentence as quote), for an editor's click on a test."""
    sentences = _sentences_or_error(task, rules)
    return _assertion_item(task, [test], rules, item_id, list(taken), _QuoteFinder(sentences, rules), sentences[0])


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


def _groups(tests: list[VerifierTest], cap: int) -> list[list[VerifierTest]]:
    """Tests as items: one each when they fit `cap`, else one per class, else neighbours merged."""
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


def _artifacts(sentence: Sentence, rules: Rules) -> list[str]:
    found: list[str] = []
    for kind in ARTIFACT_KINDS:
        pattern = rules.contract.literals.patterns.get(kind)
        if pattern:
            found += [m[0].rstrip(_TRAILING) for m in re.finditer(pattern, sentence.text)]
    seen: list[str] = []
    for a in sorted(found, key=sentence.text.find):
        if a and a not in seen and not any(a in s for s in seen):
            seen.append(a)
    return seen


SENTENCE_ITEM_MAX_WORDS = 30
"""Longest instruction sentence taken as an item's text as it stands (imperative lead-ins removed)."""


def requirement_text(quote: str) -> str:
    """An instruction span as a first item text: imperative lead-ins ("You should", "Please") and the
    closing punctuation removed; the author rewrites it into an observable requirement."""
    text = " ".join(quote.split())
    return _capitalized(_LEAD.sub("", text).strip(_TRAILING)) or text


def _sentence_item(sentence: Sentence, artifact: str, rules: Rules, used: set[int]) -> list[str]:
    """The sentence itself as an item text, when it is short, not yet used and names only `artifact`."""
    if sentence.start in used or len(sentence.text.split()) > SENTENCE_ITEM_MAX_WORDS:
        return []
    if _artifacts(sentence, rules) != [artifact]:
        return []
    return [requirement_text(sentence.text)]


def draft_checklist(task: Task, rules: Rules) -> Draft:
    """Draft a checklist for `task` from its instruction and verifier (see the module docstring)."""
    budget = rules.contract.budget
    cap = item_cap(task, rules)
    sentences = _sentences_or_error(task, rules)
    notes: list[str] = []
    named = [(s, a) for s in sentences for a in _artifacts(s, rules)]
    constraints = [(s, a) for s, a in named if s.is_constraint(a)]
    outputs = [(s, a) for s, a in named if s.is_output(a) and not s.is_constraint(a)]
    inputs = [(s, a) for s, a in named if not s.is_output(a) and not s.is_constraint(a)]
    finder = _QuoteFinder(sentences, rules)
    default = next((s for s, _ in outputs), sentences[0])

    items: list[ChecklistItem] = []
    reserve = min(len({a for _, a in outputs}), 3)
    groups = _groups(task.tests, cap - reserve)
    if len(groups) < len(task.tests):
        notes.append(f"{len(task.tests)} verifier tests grouped into {len(groups)} assertion items "
                     f"(the budget is {cap} items)")
    for group in groups:
        items.append(_assertion_item(task, group, rules, f"C{len(items) + 1}", items, finder, default))

    used_sentences: set[int] = set()
    used_artifacts: set[str] = set()
    pools = (("generated", outputs, "The file `{}` exists", cap),
             ("judge", constraints, None, cap),
             ("judge", inputs, "The agent read the provided `{}`", budget.min_items))
    for route, pool, fallback, until in pools:
        for sentence, artifact in pool:
            if len(items) >= until:
                break
            if artifact in used_artifacts:
                continue
            own = _sentence_item(sentence, artifact, rules, used_sentences)
            text = _pick([*own, *([fallback.format(artifact)] if fallback else [])], route, items, rules)
            if text is None:
                continue
            used_artifacts.add(artifact)
            used_sentences.add(sentence.start)
            items.append(ChecklistItem(id=f"C{len(items) + 1}", route=route, text=text.rstrip(_TRAILING) or text,
                                       task_quote=sentence.text))
    if len(items) < budget.min_items:
        for sentence in sentences:
            if len(items) >= budget.min_items:
                break
            if sentence.start in used_sentences:
                continue
            used_sentences.add(sentence.start)
            items.append(ChecklistItem(id=f"C{len(items) + 1}", route="judge",
                                       text=sentence.text.rstrip(_TRAILING) or sentence.text,
                                       task_quote=sentence.text))
        notes.append("few tests and artifacts: instruction sentences added as judge items to reach the budget")
    checklist = Checklist(task=task.id, source=f"{DRAFT_SOURCE_PREFIX}:{rules.version}", items=items)
    return Draft(checklist, run_gates(checklist, task, rules), notes)


def draft_yaml(draft: Draft) -> str:
    """The draft as an editable YAML checklist file, with a header saying what is left to do."""
    lines = [f"# DRAFT checklist for {draft.checklist.task}, built offline from instruction.md and the verifier.",
             "# Review every item (text, route, quote); it is frozen only when a person saves it under",
             "# 'source: human:<name>'."]
    lines += [f"# note: {n}" for n in draft.notes]
    if draft.failures:
        lines.append(f"# {len(draft.failures)} gate failure(s) to fix:")
        lines += [f"#   {f.line()}" for f in draft.failures]
    else:
        lines.append("# every gate passes")
    body = yaml.safe_dump(draft.checklist.model_dump(mode="json", exclude={"items": {"__all__": {"probes"}}}),
                          sort_keys=False, allow_unicode=True, width=100)
    return "\n".join(lines) + "\n" + body
