"""What issue 26 counts on a draft, computed from the verifier's source independently of the draft's own reader:
assertion texts taken from a failure message, a code expression or a bare test name; items per multi-assert
test; the share of assertion items carrying a probe."""

from __future__ import annotations

import ast
import difflib
import re
from dataclasses import dataclass, field

from gcpc_core.checklist import Checklist, split_ref
from gcpc_core.models import Task

_CODE_NODES = (ast.Compare, ast.BoolOp, ast.BinOp, ast.Call, ast.Subscript, ast.UnaryOp)


def _norm(text: str) -> str:
    return " ".join(re.sub(r"[^0-9a-z]+", " ", text.lower()).split())


@dataclass
class VerifierSource:
    """What a test's own source says: its messages, the code of its assertions, its name and docstrings."""

    name: str
    docstrings: list[str]
    messages: list[str] = field(default_factory=list)
    code: set[str] = field(default_factory=set)
    asserts: int = 0


def verifier_sources(task: Task) -> dict[str, VerifierSource]:
    """Per test node: assertion messages (constant text of `assert …, msg`, `pytest.fail(msg)` and unittest
    `msg=`), the source of every assertion's sub-expressions, and how many assertion statements it holds."""
    trees = {f: ast.parse(s) for f, s in task.verifier_files.items()}
    out: dict[str, VerifierSource] = {}
    for test in task.tests:
        if test.kind == "script" and test.file not in trees:
            continue  # a shell-only verifier: no Python source to read
        tree = trees[test.file]
        # a plain-script verifier's node stands for its whole module
        fn = tree if test.kind == "script" else next(
            n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.lineno == test.lineno)
        docs = [test.docstring or ""]
        if test.cls:
            cls = next((n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == test.cls.split("::")[-1]),
                       None)
            docs.append((ast.get_docstring(cls) or "") if cls is not None else "")
        source = VerifierSource(test.name, [d for d in docs if d])
        for sub in ast.walk(fn):
            checked, texts = None, []
            if isinstance(sub, ast.Assert):
                checked, texts = sub.test, [sub.msg] if sub.msg is not None else []
            elif isinstance(sub, ast.Call):
                name = ast.unparse(sub.func)
                if name.endswith("fail") or (isinstance(sub.func, ast.Attribute) and sub.func.attr.startswith("assert")):
                    checked, texts = sub, [*sub.args, *(k.value for k in sub.keywords if k.arg == "msg")]
            if checked is None:
                continue
            source.asserts += 1
            for node in texts:
                if isinstance(node, ast.Constant) and isinstance(node.value, str):
                    source.messages.append(node.value)
                elif isinstance(node, ast.JoinedStr):
                    source.messages.append("{}".join(v.value for v in node.values if isinstance(v, ast.Constant)))
            for node in ast.walk(checked):
                if isinstance(node, _CODE_NODES):
                    source.code.add(" ".join(ast.unparse(node).split()))
        out[test.node_id] = source
    return out


def bad_text(text: str, refs: list[str], sources: dict[str, VerifierSource]) -> str | None:
    """Why an assertion item's text is not a requirement the draft wrote: `message`, `code` or `name`; None if fine.

    - message: the text is a failure message (similarity ≥ 0.8, or it contains a message of four or more
      words), and not the test's docstring (a docstring is the author's own statement of the requirement);
    - code: a backticked span is the source of an assertion's expression, or the text ends in "holds";
    - name: the text names the test function, or says nothing but the words of its name."""
    normalized = _norm(text)
    for ref in refs:
        source = sources[split_ref(ref)[0]]
        from_doc = any(difflib.SequenceMatcher(None, normalized, _norm(d)).ratio() >= 0.8 or normalized in _norm(d)
                       for d in source.docstrings)
        for message in source.messages:
            words = len(message.split())
            m = _norm(message)
            if words >= 3 and m and not from_doc and (
                    difflib.SequenceMatcher(None, normalized, m).ratio() >= 0.8 or (words >= 4 and m in normalized)):
                return f"message {message!r}"
        for span in re.findall(r"`([^`]+)`", text):
            if " ".join(span.split()) in source.code:
                return f"code {span!r}"
        name_words = set(_norm(re.sub(r"^test_?", "", source.name)).split()) | {"test", "check"}
        if source.name in text or set(normalized.split()) <= name_words:
            return f"name {source.name!r}"
    if re.search(r"`\s*holds\W*$", text):
        return "code (… holds)"
    return None


@dataclass
class Figures:
    assertion_items: int = 0
    with_probes: int = 0
    multi_assert_tests: int = 0
    items_on_multi_assert_tests: int = 0
    bad: list[tuple[str, str, str, str]] = field(default_factory=list)

    @property
    def probe_share(self) -> float:
        return self.with_probes / max(1, self.assertion_items)

    @property
    def items_per_multi_assert_test(self) -> float:
        return self.items_on_multi_assert_tests / max(1, self.multi_assert_tests)

    def add(self, task: Task, checklist: Checklist) -> None:
        sources = verifier_sources(task)
        items = [i for i in checklist.items if i.route == "assertion"]
        self.assertion_items += len(items)
        self.with_probes += sum(bool(i.probes) for i in items)
        for item in items:
            why = bad_text(item.text, item.verifier_refs, sources)
            if why:
                self.bad.append((task.id, item.id, item.text, why))
        for node_id, source in sources.items():
            if source.asserts >= 2:
                self.multi_assert_tests += 1
                self.items_on_multi_assert_tests += sum(
                    any(split_ref(r)[0] == node_id for r in i.verifier_refs) for i in items)

    def line(self) -> str:
        return (f"assertion items {self.assertion_items}, with a probe {self.with_probes} ({self.probe_share:.1%}); "
                f"multi-assert tests {self.multi_assert_tests}, items per test {self.items_per_multi_assert_test:.2f}; "
                f"texts from a message, code or a test name: {len(self.bad)}")
