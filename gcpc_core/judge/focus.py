"""What a judge's evidence view is windowed for: the literals the judged items name.

A long file or output is cut to fit a judge's prompt; cutting its middle blindly removed exactly the
lines that decide a verdict (the bib entries an item lists, the nodes a script adds). `focus_for`
collects what the items point at, so `evidence.build_evidence_view` keeps those lines first:
- each item's literals (paths, file names, identifiers, quoted values, numbers; the contract's
  `literals` patterns) and the base names of its paths, since a log often names a file relatively;
- the literals of the verifier tests the item cites (string and number constants of the test
  function, its parametrize cases, and module-level constants it reads), since an item often says
  "the expected value" where its test spells the value out; failure messages are not literals;
- the items' probes, whose matches are never cut (`Focus.patterns`).
Without a checklist (the holistic judge), the literals of every verifier test are the focus.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator
from functools import lru_cache

from ..checklist import Checklist, Rules
from ..checklist.gates import literals, split_ref
from ..evidence import Focus
from ..models import Task, VerifierTest

__all__ = ["MAX_FOCUS_TERMS", "MIN_TERM_CHARS", "focus_for", "item_terms", "literals_of_test"]

MIN_TERM_CHARS = 3
"""Shorter literals (`1`, `a`) occur everywhere by chance; they would steer nothing."""
MAX_TERM_CHARS = 120
"""Longer string constants are messages or data blobs, not values a log line repeats."""
MAX_FOCUS_TERMS = 400
"""Terms kept per view (items' own first): one alternation regex over the evidence stays fast."""
_NOT_VALUES = frozenset({"utf-8", "utf8", "ascii", "strict", "ignore", "replace", "true", "false", "none",
                         "null", "__main__", "r+", "rb", "wb", "w+", "a+", "self"})
_PROSE = re.compile(r"\s\S+\s\S+\s\S+\s")
"""Four or more words: a message or a sentence, not a value (`assert x, "expected …"`)."""


def _term(value: str) -> str | None:
    value = value.strip().strip("`'\"").rstrip(".,;:")
    if not MIN_TERM_CHARS <= len(value) <= MAX_TERM_CHARS or value.lower() in _NOT_VALUES or _PROSE.search(value):
        return None
    return value


def _number(value: float | int) -> str | None:
    """A number worth looking for: three or more digits, or a fraction other than .0 / .5."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value) if abs(value) >= 100 else None
    text = repr(value)
    return text if text not in {"0.0", "1.0", "0.5", "-1.0"} and len(text) >= MIN_TERM_CHARS else None


def _messages(tree: ast.AST) -> set[int]:
    """ids of the nodes that are assertion or exception messages (never values to look for)."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assert) and node.msg is not None:
            out.update(id(n) for n in ast.walk(node.msg))
        elif isinstance(node, ast.JoinedStr):
            out.update(id(n) for n in ast.walk(node))
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in {"fail", "skip"}:
            out.update(id(n) for arg in node.args for n in ast.walk(arg))
    return out


def _constants(tree: ast.AST) -> Iterator[str]:
    skip = _messages(tree)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Constant) or id(node) in skip:
            continue
        if isinstance(node.value, str):
            term = _term(node.value)
        elif isinstance(node.value, (int, float)):
            term = _number(node.value)
        else:
            term = None
        if term is not None:
            yield term


@lru_cache(maxsize=64)
def _parsed(source: str) -> ast.Module | None:
    """A verifier file's AST, parsed once for all its tests and every trajectory of its task."""
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError):
        return None


def literals_of_test(task: Task, test: VerifierTest) -> list[str]:
    """The values a verifier test checks: constants of its function (decorators included, messages
    and docstring not) and of the module-level assignments to names it reads. Empty when its file does
    not parse."""
    source = task.verifier_files.get(test.file)
    return list(_source_literals(source, test)) if source is not None else []


@lru_cache(maxsize=4096)
def _source_literals(source: str, test: VerifierTest) -> tuple[str, ...]:
    """`literals_of_test` for one verifier source, remembered: every trajectory of a task asks again."""
    module = _parsed(source)
    if module is None:
        return ()
    if test.kind == "script":  # a plain-script verifier: its node is the whole module
        return tuple(_constants(module))
    named = [node for node in ast.walk(module)
             if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == test.name]
    if not named:
        return ()
    function = next((node for node in named if node.lineno == test.lineno), named[0])
    body = function.body[1:] if ast.get_docstring(function) is not None else function.body
    found: list[str] = []
    for part in [*function.decorator_list, *body]:
        found.extend(_constants(part))
    read = {node.id for node in ast.walk(function) if isinstance(node, ast.Name)}
    for node in module.body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        if any(isinstance(t, ast.Name) and t.id in read for t in targets) and getattr(node, "value", None) is not None:
            found.extend(_constants(node.value))
    return tuple(found)


def item_terms(text: str, rules: Rules) -> Iterator[str]:
    """An item's literals as focus terms, with the base names of its paths."""
    for literal in literals(text, rules):
        term = _term(literal)
        if term is None:
            continue
        yield term
        if "/" in term.rstrip("/"):
            base = _term(term.rstrip("/").rsplit("/", 1)[1])
            if base is not None:
                yield base


def _unique(terms: Iterable[str]) -> tuple[str, ...]:
    seen: dict[str, str] = {}
    for term in terms:
        seen.setdefault(term.lower(), term)
        if len(seen) >= MAX_FOCUS_TERMS:
            break
    return tuple(seen.values())


def focus_for(task: Task, checklist: Checklist | None, rules: Rules) -> Focus:
    """The focus of a judge's view of a run of `task`: what `checklist`'s items name (every verifier
    test's literals when there is no checklist) and its probes."""
    tests = {t.node_id: t for t in task.tests}
    if checklist is None:
        return Focus(terms=_unique(term for test in task.tests for term in literals_of_test(task, test)))
    literals_of: dict[str, list[str]] = {}
    items = []
    for item in checklist.items:
        cited = dict.fromkeys(base for base, _ in map(split_ref, item.verifier_refs) if base in tests)
        for base in cited:
            if base not in literals_of:
                literals_of[base] = literals_of_test(task, tests[base])
        items.append((_unique(item_terms(item.text, rules)), _unique(t for base in cited for t in literals_of[base])))
    own = [term for terms, _ in items for term in terms]
    from_tests = [term for _, terms in items for term in terms]
    patterns = []
    for item in checklist.items:
        for probe in item.probes:
            try:
                patterns.append(probe.compile())
            except (ValueError, re.error):
                continue  # an invalid probe is the probe judge's finding, not the window's
    return Focus(terms=_unique([*own, *from_tests]), patterns=tuple(patterns), items=tuple(items))
