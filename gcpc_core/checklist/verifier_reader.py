"""What a verifier test checks, read from its source without running it: the offline draft's view of a test.

`read_tests(task)` parses each verifier file once and, for every test node, walks the test body with a
small abstract evaluator: module and class constants, `parametrize` cases, fixtures and helper functions
are resolved as far as they are literal, so an assertion such as

    assert approx_equal(results[metric], EXPECTED_VALUES[metric], metric)

with `metric = "protocol_udp"` and `results = load_results()` (a helper reading `/root/network_stats.csv`)
becomes a `Check`: op `approx`, subject *the `protocol_udp` entry of `/root/network_stats.csv`*, expected
value `26092`. Checks are gathered per parametrize case (a body that branches on a parameter checks
different things per case) and cut into *assertion groups* (`Group`): the checks about one subject, a
file's existence, key and type guards folded into the check they guard.

Nothing here writes item text; `draft` and `probes` do, from the structure. Failure messages are kept
only so that tests can show no item text comes from one (`Check.messages`).
"""

from __future__ import annotations

import ast
import builtins
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from itertools import product
from typing import Any

from ..models import Task, VerifierTest

__all__ = ["ANY", "Case", "Check", "Group", "TestReading", "V", "read_tests"]

ANY = "*"
"""A key standing for every element of a collection (a loop or comprehension variable's position)."""

MAX_DEPTH = 4
"""How deep fixtures and helper functions are followed (a helper calling a helper calling …)."""
MAX_CASES = 64
"""More parametrize cases than this are read as one case with unknown parameters."""


@dataclass(frozen=True)
class V:
    """An abstract value: what the evaluator knows about an expression.

    kinds: `lit` (a Python literal, `value`), `path` (a filesystem path), `handle` (an open file),
    `data` (something read from `path`, then subscripted by `keys`), `len` (the length of `inner`),
    `output` (a command the verifier runs, `name`), `returncode` (its exit status), `each` (every
    element of the literal list `value`), `unknown`.
    """

    kind: str
    value: Any = None
    path: str | None = None
    keys: tuple = ()
    fmt: str | None = None
    name: str | None = None
    inner: V | None = None
    where: tuple = ()
    """Filters of a comprehension (`[e for e in edges if e["from"] == "X"]`): (field, value) pairs."""

    @property
    def is_lit(self) -> bool:
        return self.kind == "lit"

    @property
    def from_data(self) -> bool:
        return self.kind in ("data", "len", "output", "returncode", "occurrences") or (self.inner is not None and self.inner.from_data)

    def key(self, k: Any) -> V:
        return replace(self, keys=(*self.keys, k))

    def element(self) -> V:
        """An element of this collection (iterating a collection's elements again adds nothing)."""
        return self if self.keys[-1:] == (ANY,) else self.key(ANY)


UNKNOWN = V("unknown")


def lit(value: Any) -> V:
    return V("lit", value)


@dataclass(frozen=True)
class Check:
    """One assertion of a test, as structure. `op` is one of

    `exists`, `not_exists`, `isdir`, `has_key`, `lacks_key`, `eq`, `ne`, `contains`, `not_contains`,
    `one_of`, `gt`, `ge`, `lt`, `le`, `range`, `approx`, `type`, `present`, `matches`, `valid_json`,
    `returncode`, `nonempty`, `empty`, `truthy`, `opaque`.

    `subject` is what is checked, `expected` the literal (or computed) value it is compared with;
    `extra` holds `tol` / `rel` (approx), `lo` / `hi` (range), `type` (type name), `pattern` (matches).
    """

    op: str
    subject: V
    expected: V | None = None
    extra: tuple[tuple[str, Any], ...] = ()
    line: int = 0
    messages: tuple[str, ...] = ()
    conditional: bool = False
    """Inside a branch the evaluator could not decide (the check may not run for every case)."""

    def get(self, name: str, default: Any = None) -> Any:
        return dict(self.extra).get(name, default)

    @property
    def guard(self) -> bool:
        """A check that only makes the next one possible: existence, presence, a type or key check."""
        return self.op in ("exists", "present", "type", "has_key", "nonempty", "valid_json", "has_row")

    @property
    def subject_key(self) -> tuple:
        """What the check is about, for grouping: the file and the first string key of the subject."""
        s = self.subject
        if s.kind == "len" and s.inner is not None:
            s = s.inner
        if self.op in ("exists", "not_exists", "isdir"):
            return ("file", s.path or s.value)
        keys = [k for k in s.keys if isinstance(k, str) and k != ANY]
        if self.op in ("has_key", "lacks_key") and self.expected is not None and self.expected.is_lit:
            return ("data", s.path, *(keys[:1] or [_key_name(self.expected.value)]))
        if s.where:
            return ("data", s.path or s.name, *keys[:1], s.where)
        if not keys and self.op in ("contains", "not_contains", "matches"):
            # a whole text: what it must contain and what it must not are two requirements
            return ("data", s.path or s.name, self.op == "not_contains")
        return ("data", s.path or s.name, *keys[:1])


def _key_name(value: Any) -> Any:
    if isinstance(value, (list, tuple)) and value:
        return value[0]
    return value


_SETUP_METHODS = ("setUpClass", "setUp", "setup_class", "setup_method", "setup")
_GUARD_RANK = {"valid_json": 0, "has_key": 1, "has_row": 1, "type": 2, "nonempty": 3, "present": 4, "exists": 5}
"""Which guard states most when a group holds only guards (a JSON file that parses says more than one that exists)."""


@dataclass(frozen=True)
class Case:
    """One parametrize case (or the only case of a plain test): its id and its parameter values."""

    id: str | None
    params: tuple[tuple[str, Any], ...] = ()
    known: bool = True
    """Whether every parameter value is a literal the reader resolved."""


@dataclass
class Group:
    """An assertion group: the checks of one case (or several cases with the same checks) about one subject."""

    checks: list[Check]
    cases: list[Case]

    @property
    def main(self) -> list[Check]:
        """The checks that state the requirement (guards only when nothing else is there)."""
        strong = [c for c in self.checks if not c.guard and c.op != "opaque"]
        if strong:
            return strong
        guards = [c for c in self.checks if c.op != "opaque"]
        return sorted(guards, key=lambda c: _GUARD_RANK.get(c.op, 9)) or self.checks

    @property
    def ends_opaque(self) -> bool:
        """Whether the last real assertion of the group is one the reader could not put into words."""
        real = [c for c in self.checks if not c.guard]
        if not real:
            return False
        last = real[-1]
        return last.op == "opaque" or (last.op == "truthy" and not any(
            isinstance(k, str) and k != ANY for k in last.subject.keys))

    @property
    def describable(self) -> bool:
        return any(c.op != "opaque" for c in self.checks)


@dataclass
class TestReading:
    """What one verifier test checks: per case, its checks in source order and their groups."""

    test: VerifierTest
    cases: list[Case]
    checks: dict[str | None, list[Check]] = field(default_factory=dict)
    """Checks per case id (`None` for a plain test)."""
    files: list[str] = field(default_factory=list)
    """Paths the test (its fixtures and helpers included) reads, in order of first use."""
    strings: list[str] = field(default_factory=list)
    """String constants of the test body (for matching it to instruction sentences)."""
    class_doc: str | None = None
    """The first sentence of the enclosing test class's docstring, when the class has one."""

    def groups(self, case: Case) -> list[Group]:
        return _groups(self.checks.get(case.id, []), case)

    @property
    def all_checks(self) -> list[Check]:
        return [c for checks in self.checks.values() for c in checks]

    @property
    def n_asserts(self) -> int:
        """Distinct assertion statements over every case."""
        return len({c.line for c in self.all_checks})


# ---------------------------------------------------------------- the evaluator


_READERS_TEXT = {"read_text", "read", "readlines", "read_bytes", "splitlines", "readline"}
_LOADERS = {
    "json.load": "json", "json.loads": "json", "yaml.safe_load": "yaml", "yaml.load": "yaml", "toml.load": "toml",
    "tomllib.load": "toml", "pd.read_csv": "csv", "pandas.read_csv": "csv", "pd.read_excel": "xlsx",
    "pandas.read_excel": "xlsx", "pd.read_json": "json", "pd.read_parquet": "parquet", "pd.read_table": "csv",
    "openpyxl.load_workbook": "xlsx", "load_workbook": "xlsx", "Document": "docx", "docx.Document": "docx",
    "Presentation": "pptx", "csv.DictReader": "csv", "csv.reader": "csv", "np.load": "npy", "np.loadtxt": "text",
    "Image.open": "image", "PdfReader": "pdf", "fitz.open": "pdf", "sqlite3.connect": "sqlite", "ET.parse": "xml",
    "etree.parse": "xml", "ElementTree.parse": "xml", "wave.open": "audio", "sf.read": "audio",
}
_PASS_THROUGH = {"str", "int", "float", "bool", "list", "set", "sorted", "tuple", "frozenset", "dict", "abs", "round",
                 "lower", "upper", "strip", "rstrip", "lstrip", "casefold", "keys", "copy", "to_dict", "tolist",
                 "unique", "dropna", "astype", "iter", "reversed", "normalize", "title", "items"}
_PATH_ATTRS = {"exists", "is_file", "is_dir"}
_FILE_TYPES = {"list": "a list", "dict": "an object", "str": "a string", "int": "an integer", "float": "a number",
               "bool": "a boolean", "tuple": "a list", "Number": "a number", "numbers.Number": "a number",
               "set": "a set"}


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else node.attr
    return ""


def _is_fixture(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any("fixture" in _dotted(d.func if isinstance(d, ast.Call) else d) for d in fn.decorator_list)


class _Module:
    """One verifier file: its constants, functions, classes and fixtures."""

    def __init__(self, tree: ast.Module, shared: dict[str, ast.FunctionDef | ast.AsyncFunctionDef]) -> None:
        self.tree = tree
        self.functions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = dict(shared)
        self.classes: dict[str, ast.ClassDef] = {}
        self.env: dict[str, V] = {}
        self.class_envs: dict[str, dict[str, V]] = {}
        self.class_methods: dict[str, dict[str, ast.FunctionDef | ast.AsyncFunctionDef]] = {}
        for stmt in tree.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.functions[stmt.name] = stmt
            elif isinstance(stmt, ast.ClassDef):
                self.classes[stmt.name] = stmt
        ev = _Evaluator(self, None)
        for stmt in tree.body:
            ev.assign_stmt(stmt, self.env)

    def class_env(self, cls: str | None) -> dict[str, V]:
        if not cls:
            return {}
        if cls not in self.class_envs:
            env: dict[str, V] = {}
            methods: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
            node = self._class_node(cls)
            if node is not None:
                ev = _Evaluator(self, None)
                for stmt in node.body:
                    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        methods[stmt.name] = stmt
                    else:
                        ev.assign_stmt(stmt, env, extra=self.env)
            self.class_envs[cls] = env
            self.class_methods[cls] = methods
            for name in _SETUP_METHODS:
                fn = methods.get(name)
                if fn is not None:
                    self._setup(cls, fn, env)
            for fn in methods.values():
                if _is_fixture(fn) and any(k.arg == "autouse" for d in fn.decorator_list if isinstance(d, ast.Call)
                                           for k in d.keywords):
                    self._setup(cls, fn, env)
        return self.class_envs[cls]

    def _setup(self, cls: str, fn: ast.FunctionDef | ast.AsyncFunctionDef, env: dict[str, V]) -> None:
        """Attributes a set-up method gives the class (`self.result = json.load(f)` in `setUpClass`)."""
        ev = _Evaluator(self, cls, depth=1)
        ev.collect = False
        local: dict[str, V] = {}
        for stmt in ast.walk(ast.Module(body=list(fn.body), type_ignores=[])):
            if isinstance(stmt, ast.Assign):
                for target in stmt.targets:
                    if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and \
                            target.value.id in ("self", "cls"):
                        env.setdefault(target.attr, ev.ev(stmt.value, local))
                    elif isinstance(target, ast.Name):
                        local[target.id] = ev.ev(stmt.value, local)
            elif isinstance(stmt, (ast.With, ast.AsyncWith)):
                for item in stmt.items:
                    if item.optional_vars is not None:
                        ev._bind(item.optional_vars, ev.ev(item.context_expr, local), local)

    def _class_node(self, cls: str) -> ast.ClassDef | None:
        """The class named by a node id's class part (`Outer::Inner` for nested test classes)."""
        parts = cls.split("::")
        node = self.classes.get(parts[0])
        for part in parts[1:]:
            if node is None:
                return None
            node = next((s for s in node.body if isinstance(s, ast.ClassDef) and s.name == part), None)
        return node

    def method(self, cls: str | None, name: str) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        if cls:
            self.class_env(cls)
            found = self.class_methods.get(cls, {}).get(name)
            if found is not None:
                return found
        return None


class _Evaluator:
    """Walks statements of one function with an environment, collecting checks."""

    def __init__(self, module: _Module, cls: str | None, depth: int = 0, params: Iterable[str] = ()) -> None:
        self.module = module
        self.cls = cls
        self.depth = depth
        self.params = set(params)
        self.checks: list[Check] = []
        self.returns: list[V] = []
        self.files: list[str] = []
        self.collect = True
        self._conditional = 0

    # ---- names

    def lookup(self, name: str, env: dict[str, V]) -> V:
        if name in env:
            return env[name]
        cenv = self.module.class_env(self.cls)
        if name in cenv:
            return cenv[name]
        if name in self.module.env:
            return self.module.env[name]
        fixture = self.module.functions.get(name)
        if fixture is not None and _is_fixture(fixture):
            return self.call_function(fixture, [], {}, name)
        return V("unknown", name=name)

    # ---- expressions

    def ev(self, node: ast.AST | None, env: dict[str, V]) -> V:
        try:
            return self._ev(node, env)
        except RecursionError:  # pragma: no cover - pathological nesting
            return UNKNOWN

    def _ev(self, node: ast.AST | None, env: dict[str, V]) -> V:
        if node is None:
            return lit(None)
        if isinstance(node, ast.Constant):
            if isinstance(node.value, bytes):
                return lit(node.value.decode("latin-1"))
            return lit(node.value)
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            items = [self._ev(e, env) for e in node.elts]
            if all(i.is_lit for i in items):
                values = [i.value for i in items]
                return lit(tuple(values) if isinstance(node, ast.Tuple) else values)
            data = next((i for i in items if i.from_data), None)
            return data or V("unknown", name="collection")
        if isinstance(node, ast.Dict):
            keys = [self._ev(k, env) if k is not None else UNKNOWN for k in node.keys]
            values = [self._ev(v, env) for v in node.values]
            if all(k.is_lit for k in keys) and all(v.is_lit for v in values):
                try:
                    return lit({k.value: v.value for k, v in zip(keys, values)})
                except TypeError:
                    return UNKNOWN
            return V("unknown", name="dict")
        if isinstance(node, ast.Name):
            return self.lookup(node.id, env)
        if isinstance(node, ast.JoinedStr):
            parts = []
            for value in node.values:
                if isinstance(value, ast.Constant):
                    parts.append(str(value.value))
                elif isinstance(value, ast.FormattedValue):
                    v = self._ev(value.value, env)
                    if not v.is_lit or value.format_spec is not None:
                        return V("unknown", name="fstring")
                    parts.append(str(v.value))
            return lit("".join(parts))
        if isinstance(node, ast.BinOp):
            return self._binop(node, env)
        if isinstance(node, ast.UnaryOp):
            operand = self._ev(node.operand, env)
            if operand.is_lit and isinstance(node.op, ast.USub) and isinstance(operand.value, (int, float)):
                return lit(-operand.value)
            if operand.is_lit and isinstance(node.op, ast.Not):
                return lit(not operand.value)
            return operand if operand.from_data else UNKNOWN
        if isinstance(node, ast.Attribute):
            return self._attribute(node, env)
        if isinstance(node, ast.Subscript):
            return self._subscript(node, env)
        if isinstance(node, ast.Call):
            return self._call(node, env)
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            return self._comprehension(node, env)
        if isinstance(node, ast.Compare):
            return self._compare_value(node, env)
        if isinstance(node, ast.BoolOp):
            values = [self._ev(v, env) for v in node.values]
            if all(v.is_lit for v in values):
                result = values[0].value
                for v in values[1:]:
                    result = (result and v.value) if isinstance(node.op, ast.And) else (result or v.value)
                return lit(result)
            return next((v for v in values if v.from_data), UNKNOWN)
        if isinstance(node, ast.IfExp):
            test = self._ev(node.test, env)
            if test.is_lit:
                return self._ev(node.body if test.value else node.orelse, env)
            body = self._ev(node.body, env)
            return body if body.kind != "unknown" else self._ev(node.orelse, env)
        return UNKNOWN

    def _compare_value(self, node: ast.Compare, env: dict[str, V]) -> V:
        """A comparison used as a value (`if check == "header":`): decided when both sides are literals."""
        if len(node.ops) != 1:
            return UNKNOWN
        left, right = self._ev(node.left, env), self._ev(node.comparators[0], env)
        if not (left.is_lit and right.is_lit):
            return UNKNOWN
        op = node.ops[0]
        try:
            if isinstance(op, ast.Eq):
                return lit(left.value == right.value)
            if isinstance(op, ast.NotEq):
                return lit(left.value != right.value)
            if isinstance(op, ast.In):
                return lit(left.value in right.value)
            if isinstance(op, ast.NotIn):
                return lit(left.value not in right.value)
            if isinstance(op, ast.Is):
                return lit(left.value is right.value)
            if isinstance(op, ast.IsNot):
                return lit(left.value is not right.value)
        except TypeError:
            return UNKNOWN
        return UNKNOWN

    def _binop(self, node: ast.BinOp, env: dict[str, V]) -> V:
        left, right = self._ev(node.left, env), self._ev(node.right, env)
        if isinstance(node.op, ast.Div) and left.kind in ("path", "lit") and right.is_lit and isinstance(right.value, str):
            base = left.path if left.kind == "path" else left.value
            if isinstance(base, str):
                return V("path", path=_join(base, right.value))
        if left.is_lit and right.is_lit:
            try:
                if isinstance(node.op, ast.Add):
                    return lit(left.value + right.value)
                if isinstance(node.op, ast.Sub):
                    return lit(left.value - right.value)
                if isinstance(node.op, ast.Mult):
                    return lit(left.value * right.value)
                if isinstance(node.op, ast.Div):
                    return lit(left.value / right.value)
            except (TypeError, ZeroDivisionError, ValueError, OverflowError):
                return UNKNOWN
        if left.from_data:
            return V("data", path=left.path, keys=left.keys, fmt=left.fmt, name="expression")
        if right.from_data:
            return V("data", path=right.path, keys=right.keys, fmt=right.fmt, name="expression")
        return UNKNOWN

    def _attribute(self, node: ast.Attribute, env: dict[str, V]) -> V:
        if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
            cenv = self.module.class_env(self.cls)
            if node.attr in cenv:
                return cenv[node.attr]
            return V("unknown", name=node.attr)
        base = self._ev(node.value, env)
        if base.kind == "output":
            if node.attr == "returncode":
                return V("returncode", name=base.name)
            if node.attr in ("stdout", "stderr", "output"):
                return V("data", fmt="output", name=base.name, keys=())
        if base.kind == "path" and node.attr in ("name", "stem", "suffix", "parent"):
            return UNKNOWN
        if base.kind == "data":
            return replace(base, name=node.attr)
        if base.is_lit and isinstance(base.value, dict) and node.attr in base.value:
            return lit(base.value[node.attr])
        return V("unknown", name=node.attr)

    def _subscript(self, node: ast.Subscript, env: dict[str, V]) -> V:
        base = self._ev(node.value, env)
        index = self._ev(node.slice, env) if not isinstance(node.slice, ast.Slice) else lit(None)
        if base.is_lit and index.is_lit:
            try:
                return lit(base.value[index.value])
            except (KeyError, IndexError, TypeError):
                return UNKNOWN
        if base.kind == "data":
            if isinstance(node.slice, ast.Slice):
                return base
            if base.name == "mapping" and base.inner is not None and base.inner.keys and index.is_lit:
                field = base.inner.keys[-1]
                return replace(base, name=None, inner=None, where=(*base.where, (field, index.value)))
            return replace(base.key(index.value if index.is_lit else ANY), name=None, inner=None)
        if base.kind == "each":
            return UNKNOWN
        return V("unknown", name=base.name)

    def _comprehension(self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp,
                       env: dict[str, V]) -> V:
        local = dict(env)
        source: V | None = None
        for gen in node.generators:
            it = self._ev(gen.iter, local)
            if it.kind == "data":
                source = source or it
                self._bind(gen.target, it.element(), local)
            else:
                self._bind(gen.target, UNKNOWN, local)
        where: list[tuple] = []
        for gen in node.generators:
            for cond in gen.ifs:
                if isinstance(cond, ast.Compare) and len(cond.ops) == 1 and isinstance(cond.ops[0], ast.Eq):
                    a, b = self._ev(cond.left, local), self._ev(cond.comparators[0], local)
                    field, value = (a, b) if b.is_lit else (b, a)
                    if field.kind == "data" and value.is_lit and field.keys and isinstance(field.keys[-1], str):
                        where.append((field.keys[-1], value.value))
        if isinstance(node, ast.DictComp):
            key = self._ev(node.key, local)
            value = self._ev(node.value, local)
            if value.kind == "data":
                return replace(value, name="mapping", inner=key if key.kind == "data" else None, where=tuple(where))
        element = self._ev(node.key if isinstance(node, ast.DictComp) else node.elt, local)
        if element.kind == "data":
            return replace(element, name="collection", where=tuple(where))
        if source is not None:
            return replace(source, name="collection", where=tuple(where))
        return UNKNOWN

    def _call(self, node: ast.Call, env: dict[str, V]) -> V:
        name = _dotted(node.func)
        short = name.rsplit(".", 1)[-1]
        args = [self._ev(a, env) for a in node.args]
        kwargs = {kw.arg: self._ev(kw.value, env) for kw in node.keywords if kw.arg}
        receiver = self._ev(node.func.value, env) if isinstance(node.func, ast.Attribute) else None
        if name in ("Path", "pathlib.Path", "PurePath", "os.path.join", "os.path.abspath", "os.path.expanduser"):
            parts = [a.path if a.kind == "path" else a.value for a in args]
            if parts and all(isinstance(p, str) for p in parts):
                path = parts[0]
                for part in parts[1:]:
                    path = _join(path, part)
                return V("path", path=path)
            return UNKNOWN
        if short == "joinpath" and receiver is not None and receiver.kind == "path" and args and args[0].is_lit:
            return V("path", path=_join(receiver.path or "", str(args[0].value)))
        if name == "open" or (short == "open" and receiver is not None and receiver.kind == "path"):
            target = receiver if receiver is not None and receiver.kind == "path" else (args[0] if args else UNKNOWN)
            path = _path_of(target)
            if path:
                mode = args[1].value if len(args) > 1 and args[1].is_lit else (kwargs.get("mode") or lit("r")).value
                if isinstance(mode, str) and any(m in mode for m in "wa"):
                    return UNKNOWN
                self._file(path)
                return V("handle", path=path, fmt=_fmt_of(path))
            return UNKNOWN
        if name in _LOADERS or short in ("load_workbook", "Document", "Presentation", "DictReader"):
            fmt = _LOADERS.get(name) or _LOADERS.get(short) or short.lower()
            target = args[0] if args else UNKNOWN
            path = _path_of(target) or target.path
            if path:
                self._file(path)
            if target.kind in ("data", "handle", "path") or path:
                return V("data", path=path, fmt=fmt if fmt != "json" or not target.fmt else "json", keys=(),
                         name=target.name)
            return UNKNOWN
        if receiver is not None and receiver.kind == "path":
            if short in _READERS_TEXT:
                self._file(receiver.path or "")
                return V("data", path=receiver.path, fmt=_fmt_of(receiver.path or "") or "text", keys=())
            if short in _PATH_ATTRS:
                return V("unknown", name=short)
            if short in ("iterdir", "glob", "rglob"):
                return V("data", path=receiver.path, fmt="listing", keys=())
        if receiver is not None and receiver.kind == "handle" and short in _READERS_TEXT:
            return V("data", path=receiver.path, fmt=receiver.fmt or "text", keys=())
        if short == "spec_from_file_location" and len(args) >= 2:
            path = _path_of(args[1])
            if path:
                self._file(path)
                return V("data", path=path, fmt="python", keys=(), name="module")
        if name in ("importlib.import_module", "import_module") and args and args[0].is_lit:
            return V("data", path=None, fmt="python", keys=(), name=str(args[0].value))
        if name in ("subprocess.run", "subprocess.check_output", "subprocess.Popen", "run", "check_output"):
            command = args[0] if args else kwargs.get("args", UNKNOWN)
            text = _command_text(command)
            if name.endswith("check_output"):
                return V("data", fmt="output", name=text, keys=())
            return V("output", name=text)
        if short == "get" and receiver is not None and receiver.kind == "data" and args:
            if receiver.name == "mapping" and receiver.inner is not None and receiver.inner.keys and args[0].is_lit:
                return replace(receiver, name=None, inner=None,
                               where=(*receiver.where, (receiver.inner.keys[-1], args[0].value)))
            return replace(receiver.key(args[0].value if args[0].is_lit else ANY), name=None, inner=None)
        if short == "count" and receiver is not None and receiver.kind == "data" and args and args[0].is_lit and \
                isinstance(args[0].value, str):
            return V("occurrences", value=args[0].value, inner=receiver, path=receiver.path)
        if short == "get" and receiver is not None and receiver.is_lit and isinstance(receiver.value, dict) and args:
            if args[0].is_lit:
                try:
                    return lit(receiver.value.get(args[0].value, args[1].value if len(args) > 1 and args[1].is_lit
                                                  else None))
                except TypeError:
                    return UNKNOWN
        if name == "len" and args:
            return V("len", inner=args[0])
        if name == "next" and node.args and isinstance(node.args[0], ast.GeneratorExp):
            gen = node.args[0]
            first = gen.generators[0]
            it = self._ev(first.iter, env)
            if it.is_lit and isinstance(it.value, (list, tuple)) and it.value:
                local = dict(env)
                self._bind(first.target, lit(it.value[0]), local)
                return self._ev(gen.elt, local)
        if short in _PASS_THROUGH and receiver is not None and receiver.kind == "data":
            return receiver
        if name in _PASS_THROUGH and args:
            if args[0].is_lit:
                try:
                    return lit(getattr(builtins, name)(args[0].value))
                except Exception:  # noqa: BLE001 - any failure: not a literal
                    return UNKNOWN
            return args[0] if args[0].kind == "data" else UNKNOWN
        if receiver is not None and receiver.is_lit and isinstance(receiver.value, str) and short in (
                "lower", "upper", "strip", "rstrip", "lstrip", "casefold"):
            return lit(getattr(receiver.value, short)())
        # local helpers and fixtures called directly
        fn = None
        if isinstance(node.func, ast.Name):
            fn = self.module.functions.get(node.func.id)
        elif isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name) and \
                node.func.value.id in ("self", "cls"):
            fn = self.module.method(self.cls, node.func.attr) or self.module.functions.get(node.func.attr)
        if fn is not None:
            return self.call_function(fn, args, kwargs, short, bound=isinstance(node.func, ast.Attribute))
        data = next((a for a in [receiver, *args, *kwargs.values()] if a is not None and a.kind == "data"), None)
        if data is not None:
            return replace(data, name=short)
        return V("unknown", name=short)

    def _file(self, path: str) -> None:
        if path and path not in self.files:
            self.files.append(path)

    def call_function(self, fn: ast.FunctionDef | ast.AsyncFunctionDef, args: Sequence[V], kwargs: dict[str, V],
                      name: str, *, bound: bool = False) -> V:
        """The value a helper or fixture returns, walking its body with its parameters bound."""
        if self.depth >= MAX_DEPTH:
            return V("unknown", name=name)
        sub = _Evaluator(self.module, self.cls, self.depth + 1)
        sub.collect = False
        env: dict[str, V] = {}
        params = [a.arg for a in fn.args.args]
        if params and params[0] in ("self", "cls"):
            params = params[1:]
        defaults = fn.args.defaults
        for k, p in enumerate(params):
            if k < len(args):
                env[p] = args[k]
            elif p in kwargs:
                env[p] = kwargs[p]
            else:
                d = len(params) - len(defaults)
                if k >= d:
                    env[p] = self.ev(defaults[k - d], {})
                else:
                    env[p] = self.lookup(p, {}) if _is_fixture(fn) else V("unknown", name=p)
        sub.walk(fn.body, env)
        for f in sub.files:
            self._file(f)
        data = [r for r in sub.returns if r.kind not in ("unknown",) and not (r.is_lit and r.value is None)]
        result = next((r for r in data if r.kind == "data"), None) or next(iter(data), None)
        if result is None:
            literal_args = [a for a in args if a.is_lit and isinstance(a.value, str)]
            if literal_args and not sub.files:
                return literal_args[0]  # a normalizer: _normalize_title("A Title")
            data_args = [a for a in args if a.kind == "data"]
            if data_args:
                return replace(data_args[0], name=name)
            if sub.files:
                return V("data", path=sub.files[0], fmt=_fmt_of(sub.files[0]), keys=(), name=name)
            return V("unknown", name=name)
        if result.kind == "data" and result.name is None:
            result = replace(result, name=name)
        return result

    # ---- statements

    def _bind(self, target: ast.AST, value: V, env: dict[str, V]) -> None:
        if isinstance(target, ast.Name):
            env[target.id] = value
        elif isinstance(target, (ast.Tuple, ast.List)):
            if value.is_lit and isinstance(value.value, (list, tuple)) and len(value.value) == len(target.elts):
                for t, v in zip(target.elts, value.value):
                    self._bind(t, lit(v), env)
            else:
                for k, t in enumerate(target.elts):
                    self._bind(t, value.key(k) if value.kind == "data" else UNKNOWN, env)

    def assign_stmt(self, stmt: ast.stmt, env: dict[str, V], extra: dict[str, V] | None = None) -> None:
        """Module- or class-level assignment (constants)."""
        scope = {**(extra or {}), **env}
        if isinstance(stmt, ast.Assign):
            value = self.ev(stmt.value, scope)
            for target in stmt.targets:
                self._bind(target, value, env)
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            self._bind(stmt.target, self.ev(stmt.value, scope), env)

    def walk(self, stmts: Sequence[ast.stmt], env: dict[str, V]) -> None:
        for stmt in stmts:
            self.stmt(stmt, env)

    def stmt(self, stmt: ast.stmt, env: dict[str, V]) -> None:
        if isinstance(stmt, ast.Assign):
            value = self.ev(stmt.value, env)
            for target in stmt.targets:
                if isinstance(target, ast.Subscript):
                    base = target.value
                    if isinstance(base, ast.Name) and value.from_data:
                        current = env.get(base.id)
                        if current is None or current.kind != "data" or current.path is None:
                            env[base.id] = V("data", path=value.path, fmt=value.fmt, keys=(), name=base.id)
                    continue
                self._bind(target, value, env)
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            self._bind(stmt.target, self.ev(stmt.value, env), env)
        elif isinstance(stmt, ast.AugAssign):
            if isinstance(stmt.target, ast.Name):
                value = self.ev(stmt.value, env)
                if value.from_data:
                    env[stmt.target.id] = V("data", path=value.path, fmt=value.fmt, keys=(), name=stmt.target.id)
                else:
                    env.pop(stmt.target.id, None)
        elif isinstance(stmt, ast.Assert):
            self.assertion(stmt.test, env, stmt, stmt.msg)
        elif isinstance(stmt, ast.Expr):
            self.expr_stmt(stmt, env)
        elif isinstance(stmt, ast.If):
            self.branch(stmt, env)
        elif isinstance(stmt, (ast.For, ast.AsyncFor)):
            it = self.ev(stmt.iter, env)
            if it.is_lit and isinstance(it.value, (list, tuple, set, dict)) and it.value:
                values = list(it.value)
                first = values[0]
                if all(not isinstance(v, (list, tuple)) for v in values):
                    self._bind(stmt.target, V("each", value=tuple(values)), env)
                else:
                    self._bind(stmt.target, lit(first), env)
            elif it.kind == "data":
                self._bind(stmt.target, it.element(), env)
            else:
                self._bind(stmt.target, UNKNOWN, env)
            self.walk(stmt.body, env)
            self.walk(stmt.orelse, env)
        elif isinstance(stmt, (ast.While,)):
            self._conditional += 1
            self.walk(stmt.body, env)
            self._conditional -= 1
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            for item in stmt.items:
                value = self.ev(item.context_expr, env)
                if item.optional_vars is not None:
                    self._bind(item.optional_vars, value, env)
            self.walk(stmt.body, env)
        elif isinstance(stmt, ast.Try) or type(stmt).__name__ == "TryStar":
            self.try_stmt(stmt, env)  # type: ignore[arg-type]
        elif isinstance(stmt, ast.Return):
            self.returns.append(self.ev(stmt.value, env) if stmt.value is not None else lit(None))
        elif isinstance(stmt, ast.Match):
            self._conditional += 1
            for case in stmt.cases:
                self.walk(case.body, env)
            self._conditional -= 1

    def expr_stmt(self, stmt: ast.Expr, env: dict[str, V]) -> None:
        node = stmt.value
        if isinstance(node, ast.Yield):
            self.returns.append(self.ev(node.value, env))
            return
        if not isinstance(node, ast.Call):
            return
        name = _dotted(node.func)
        short = name.rsplit(".", 1)[-1]
        if short.startswith("assert") and short != "assert_called":
            self.call_assertion(node, short, env, stmt)
        elif name in ("pytest.fail", "fail"):
            self._add(Check("opaque", UNKNOWN, line=stmt.lineno, messages=_messages(node.args[:1])))
        else:
            self.ev(node, env)  # helper calls may read files

    def branch(self, stmt: ast.If, env: dict[str, V]) -> None:
        test = self.ev(stmt.test, env)
        if test.is_lit:
            self.walk(stmt.body if test.value else stmt.orelse, env)
            return
        failing = _fails(stmt.body)
        if failing is not None and not stmt.orelse:
            # `if not cond: pytest.fail(msg)` is `assert cond, msg`
            self.assertion(ast.UnaryOp(op=ast.Not(), operand=stmt.test), env, stmt, failing)
            return
        self._conditional += 1
        self.walk(stmt.body, env)
        self.walk(stmt.orelse, env)
        self._conditional -= 1

    def try_stmt(self, stmt: ast.Try, env: dict[str, V]) -> None:
        self.walk(stmt.body, env)
        for handler in stmt.handlers:
            caught = _dotted(handler.type) if handler.type is not None else ""
            fails = _fails(handler.body) is not None or any(isinstance(s, ast.Raise) for s in handler.body)
            if fails and "JSONDecodeError" in caught:
                source = next((v for v in env.values() if v.kind in ("handle", "data") and v.path), None)
                if source is None:
                    source = next((V("data", path=f, fmt="json") for f in self.files), UNKNOWN)
                self._add(Check("valid_json", V("data", path=source.path, fmt="json"), line=handler.lineno,
                                messages=_messages_of(handler.body)))
        self.walk(stmt.orelse, env)
        self.walk(stmt.finalbody, env)

    # ---- assertions

    def _add(self, check: Check) -> None:
        if not self.collect:
            return
        if self._conditional and not check.conditional:
            check = replace(check, conditional=True)
        self.checks.append(check)

    def assertion(self, test: ast.expr, env: dict[str, V], stmt: ast.AST, msg: ast.AST | str | None,
                  negate: bool = False) -> None:
        messages = (msg,) if isinstance(msg, str) else _messages([msg] if msg is not None else [])
        line = getattr(stmt, "lineno", 0)
        for check in self.checks_of(test, env, negate):
            self._add(replace(check, line=line, messages=messages))

    def checks_of(self, test: ast.expr, env: dict[str, V], negate: bool = False) -> list[Check]:
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            return self.checks_of(test.operand, env, not negate)
        if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) and not negate:
            return [c for v in test.values for c in self.checks_of(v, env)]
        if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or) and not negate:
            options = [self.checks_of(v, env) for v in test.values]
            first = [c for c in options[0] if c.op != "opaque"]
            if len(first) == 1 and all(len(o) == 1 for o in options):
                alts = [o[0] for o in options]
                if all(a.op == first[0].op and a.subject.path == first[0].subject.path for a in alts):
                    return [replace(first[0], extra=(*first[0].extra, ("alternatives", tuple(alts[1:]))))]
            return [Check("opaque", _first_data(options))]
        if isinstance(test, ast.Compare):
            return self._compare(test, env, negate)
        if isinstance(test, ast.Call) and _dotted(test.func) in ("all", "any") and len(test.args) == 1 and \
                isinstance(test.args[0], (ast.GeneratorExp, ast.ListComp)) and not negate and \
                len(test.args[0].generators) == 1 and not test.args[0].generators[0].ifs:
            gen = test.args[0]
            it = self.ev(gen.generators[0].iter, env)
            local = dict(env)
            if it.is_lit and isinstance(it.value, (list, tuple, set)) and it.value and \
                    all(not isinstance(v, (list, tuple, dict)) for v in it.value) and _dotted(test.func) == "all":
                self._bind(gen.generators[0].target, V("each", value=tuple(it.value)), local)
                return self.checks_of(gen.elt, local)
            if it.kind == "data" and _dotted(test.func) == "all":
                self._bind(gen.generators[0].target, it.element(), local)
                return self.checks_of(gen.elt, local)
        if isinstance(test, ast.Call):
            return self._call_check(test, env, negate)
        value = self.ev(test, env)
        if value.kind == "len":
            return [Check("empty" if negate else "nonempty", value.inner or UNKNOWN)]
        if value.kind == "data" or value.kind == "unknown":
            if value.kind == "data" and not value.keys and value.name in (None, "collection") and negate:
                return [Check("empty", value)]
            return [Check("opaque" if value.kind == "unknown" or negate else "truthy", value)]
        return [Check("opaque", value)]

    def _compare(self, test: ast.Compare, env: dict[str, V], negate: bool) -> list[Check]:
        operands = [test.left, *test.comparators]
        values = [self.ev(o, env) for o in operands]
        ops = test.ops
        if len(ops) == 2 and all(isinstance(o, (ast.Lt, ast.LtE)) for o in ops) and not negate:
            lo, mid, hi = values
            if lo.is_lit and hi.is_lit and not mid.is_lit:
                return [Check("range", mid, extra=(("lo", lo.value), ("hi", hi.value),
                                                   ("strict", isinstance(ops[0], ast.Lt))))]
        if len(ops) == 2 and all(isinstance(o, (ast.Gt, ast.GtE)) for o in ops) and not negate:
            hi, mid, lo = values
            if lo.is_lit and hi.is_lit and not mid.is_lit:
                return [Check("range", mid, extra=(("lo", lo.value), ("hi", hi.value)))]
        if len(ops) != 1:
            return [Check("opaque", _first_data([[Check("opaque", v)] for v in values]))]
        op = ops[0]
        left, right = values
        if negate:
            op = _NEGATED.get(type(op), op)
            if op is ops[0]:
                return [Check("opaque", left if left.from_data else right)]
            op = op()
        # abs(x - e) < tol
        if isinstance(op, (ast.Lt, ast.LtE)) and right.is_lit and isinstance(test.left, ast.Call) and \
                _dotted(test.left.func) in ("abs", "math.fabs", "np.abs", "numpy.abs") and test.left.args and \
                isinstance(test.left.args[0], ast.BinOp) and isinstance(test.left.args[0].op, ast.Sub):
            a = self.ev(test.left.args[0].left, env)
            b = self.ev(test.left.args[0].right, env)
            subject, expected = (a, b) if not a.is_lit else (b, a)
            if subject.kind == "len":
                return [Check("approx", subject, expected, extra=(("tol", right.value),))]
            return [Check("approx", subject, expected, extra=(("tol", right.value),))]
        if isinstance(op, (ast.Eq, ast.NotEq)) and isinstance(test.comparators[0], ast.Call) and \
                _dotted(test.comparators[0].func) in ("pytest.approx", "approx"):
            call = test.comparators[0]
            expected = self.ev(call.args[0], env) if call.args else UNKNOWN
            extra = tuple((kw.arg, self.ev(kw.value, env).value) for kw in call.keywords
                          if kw.arg in ("rel", "abs") and self.ev(kw.value, env).is_lit)
            extra = tuple(("rel" if k == "rel" else "tol", v) for k, v in extra) or (("rel", 1e-6),)
            return [Check("approx", left, expected, extra=extra)]
        if isinstance(op, (ast.In, ast.NotIn)):
            inside = isinstance(op, ast.In)
            if left.kind == "each":
                return [_membership(lit(list(left.value)), right, inside)]
            if left.is_lit and not right.is_lit:
                return [_membership(left, right, inside)]
            if right.is_lit and not left.is_lit:
                return [Check("one_of" if inside else "ne", left, right)]
            if left.kind == "data" and left.path and any(isinstance(k, str) and k != ANY for k in left.keys) and \
                    right.kind == "data" and right.path and right.path != left.path and not right.keys:
                # `employee_data["DATE"] in document_text`: a value of one file found in another
                return [Check("contains" if inside else "not_contains", right, left)]
            return [Check("opaque", left if left.from_data else right)]
        subject, expected, flipped = left, right, False
        if left.is_lit and not right.is_lit or (_ground_truth(left) and not _ground_truth(right) and
                                                right.kind in ("data", "len")):
            subject, expected, flipped = right, left, True
        if isinstance(op, ast.Is) or isinstance(op, ast.Eq):
            if expected.is_lit and expected.value is None:
                return [Check("opaque" if isinstance(op, ast.Eq) else "absent", subject)]
            return [Check("eq", subject, expected)]
        if isinstance(op, (ast.IsNot, ast.NotEq)):
            if expected.is_lit and expected.value is None:
                return [Check("present", subject)]
            if subject.kind == "len" and expected.is_lit and expected.value == 0:
                return [Check("nonempty", subject.inner or UNKNOWN)]
            return [Check("ne", subject, expected)]
        order = {ast.Gt: "gt", ast.GtE: "ge", ast.Lt: "lt", ast.LtE: "le"}
        name = order.get(type(op))
        if name is None:
            return [Check("opaque", subject)]
        if flipped:
            name = {"gt": "lt", "ge": "le", "lt": "gt", "le": "ge"}[name]
        if subject.kind == "occurrences" and subject.inner is not None and expected.is_lit and (
                (name == "gt" and expected.value == 0) or (name == "ge" and expected.value == 1)):
            return [Check("contains", subject.inner, lit(subject.value))]
        if subject.kind == "len" and expected.is_lit and ((name == "gt" and expected.value == 0) or
                                                          (name == "ge" and expected.value == 1)):
            return [Check("nonempty", subject.inner or UNKNOWN)]
        return [Check(name, subject, expected)]

    def _call_check(self, test: ast.Call, env: dict[str, V], negate: bool) -> list[Check]:
        name = _dotted(test.func)
        short = name.rsplit(".", 1)[-1]
        args = [self.ev(a, env) for a in test.args]
        receiver = self.ev(test.func.value, env) if isinstance(test.func, ast.Attribute) else None
        kw = {k.arg: self.ev(k.value, env) for k in test.keywords if k.arg}
        if name in ("os.path.exists", "os.path.isfile", "os.path.isdir", "os.path.lexists", "exists") and args or (
                short in _PATH_ATTRS and receiver is not None and receiver.kind == "path"):
            target = args[0] if args and (name.startswith("os.path") or name == "exists") else receiver
            path = _path_of(target) if target is not None else None
            if path:
                if negate:
                    return [Check("not_exists", V("path", path=path))]
                return [Check("isdir" if short in ("isdir", "is_dir") else "exists", V("path", path=path))]
            return [Check("opaque", UNKNOWN)]
        if negate:
            return [Check("opaque", next((a for a in args if a.from_data), UNKNOWN))]
        if name == "isinstance" and len(args) == 2:
            types = test.args[1]
            names = [_dotted(e) for e in types.elts] if isinstance(types, ast.Tuple) else [_dotted(types)]
            label = next((_FILE_TYPES[n] for n in names if n in _FILE_TYPES), None)
            if label:
                return [Check("type", args[0], extra=(("type", label),))]
            return [Check("opaque", args[0])]
        if name in ("math.isclose", "np.isclose", "numpy.isclose", "np.allclose", "numpy.allclose", "isclose",
                    "torch.allclose") and len(args) >= 2:
            subject, expected = (args[0], args[1]) if not args[0].is_lit else (args[1], args[0])
            extra = []
            for key, label in (("rel_tol", "rel"), ("rtol", "rel"), ("abs_tol", "tol"), ("atol", "tol")):
                if key in kw and kw[key].is_lit and kw[key].value:
                    extra.append((label, kw[key].value))
            return [Check("approx", subject, expected, extra=tuple(extra))]
        if name in ("re.search", "re.match", "re.fullmatch") and len(args) >= 2 and args[0].is_lit:
            return [Check("matches", args[1], extra=(("pattern", args[0].value),))]
        if name == "hasattr" and len(args) == 2 and args[1].is_lit and isinstance(args[1].value, str):
            return [Check("defines", args[0], args[1])]
        if short in ("startswith", "endswith") and receiver is not None and args and args[0].is_lit:
            return [Check("contains", receiver, args[0], extra=(("where", short),))]
        if short == "issubset" and receiver is not None and receiver.is_lit and args:
            return [Check("has_key", args[0], lit(list(receiver.value)))]
        if short == "issuperset" and receiver is not None and args and args[0].is_lit:
            return [Check("has_key", receiver, lit(list(args[0].value)))]
        fn = self.module.functions.get(name) if isinstance(test.func, ast.Name) else None
        if fn is not None and re.search(r"approx|close|equal|match|within", name, re.I) and len(args) >= 2:
            subject, expected = (args[0], args[1]) if not args[0].is_lit else (args[1], args[0])
            return [Check("approx", subject, expected, extra=(("tol", None),))]
        value = self.ev(test, env)
        return [Check("truthy" if value.kind == "data" and value.keys else "opaque", value)]

    def call_assertion(self, node: ast.Call, short: str, env: dict[str, V], stmt: ast.AST) -> None:
        """unittest `self.assertX(...)` and numpy / pandas `assert_*` helpers."""
        args = [self.ev(a, env) for a in node.args]
        kw = {k.arg: self.ev(k.value, env) for k in node.keywords if k.arg}
        message_nodes = [k.value for k in node.keywords if k.arg == "msg"]
        n_args = {"assertTrue": 1, "assertFalse": 1, "assertIsNone": 1, "assertIsNotNone": 1}.get(short, 2)
        message_nodes += node.args[n_args:n_args + 1]
        messages = _messages(message_nodes)
        line = getattr(stmt, "lineno", 0)
        checks: list[Check] = []
        a = args[0] if args else UNKNOWN
        b = args[1] if len(args) > 1 else UNKNOWN
        subject, expected = (a, b) if not a.is_lit else (b, a)
        if short in ("assertEqual", "assertEquals", "assert_equal", "assert_array_equal", "assert_frame_equal",
                     "assert_series_equal"):
            checks = [Check("eq", subject, expected)]
        elif short in ("assertAlmostEqual", "assert_allclose", "assert_almost_equal", "assert_array_almost_equal"):
            extra = []
            for key, label in (("delta", "tol"), ("atol", "tol"), ("rtol", "rel")):
                if key in kw and kw[key].is_lit:
                    extra.append((label, kw[key].value))
            if "places" in kw and kw["places"].is_lit:
                extra.append(("tol", 10 ** -kw["places"].value))
            checks = [Check("approx", subject, expected, extra=tuple(extra))]
        elif short == "assertNotEqual":
            checks = [Check("ne", subject, expected)]
        elif short in ("assertIn", "assertNotIn"):
            inside = short == "assertIn"
            if a.is_lit and not b.is_lit:
                checks = [_membership(a, b, inside)]
            elif a.kind == "each":
                checks = [Check("has_key" if inside else "lacks_key", b, lit(list(a.value)))]
            elif b.is_lit:
                checks = [Check("one_of" if inside else "ne", a, b)]
        elif short in ("assertTrue", "assertFalse"):
            expr = node.args[0] if node.args else None
            if expr is not None:
                checks = self.checks_of(expr, env, short == "assertFalse")
        elif short == "assertIsNotNone":
            checks = [Check("present", a)]
        elif short == "assertIsInstance" and node.args[1:]:
            types = node.args[1]
            names = [_dotted(e) for e in types.elts] if isinstance(types, ast.Tuple) else [_dotted(types)]
            label = next((_FILE_TYPES[n] for n in names if n in _FILE_TYPES), None)
            checks = [Check("type", a, extra=(("type", label),))] if label else []
        elif short in ("assertGreater", "assertGreaterEqual", "assertLess", "assertLessEqual"):
            op = {"assertGreater": "gt", "assertGreaterEqual": "ge", "assertLess": "lt", "assertLessEqual": "le"}[short]
            checks = [Check(op, a, b)]
        elif short in ("assertRegex",) and b.is_lit:
            checks = [Check("matches", a, extra=(("pattern", b.value),))]
        if not checks:
            checks = [Check("opaque", subject)]
        for check in checks:
            self._add(replace(check, line=line, messages=messages or check.messages))


_NEGATED: dict[type, type] = {ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.In: ast.NotIn, ast.NotIn: ast.In,
                              ast.Is: ast.IsNot, ast.IsNot: ast.Is, ast.Lt: ast.GtE, ast.GtE: ast.Lt,
                              ast.Gt: ast.LtE, ast.LtE: ast.Gt}


def _ground_truth(v: V) -> bool:
    """A value read from the verifier's own files (`/tests/expected_output.json`): what an output is compared
    with, never the output."""
    inner = v.inner if v.kind == "len" and v.inner is not None else v
    return bool(inner.path and inner.path.startswith("/tests/"))


def _membership(value: V, container: V, inside: bool) -> Check:
    """`value in container`: a key of an object, an element of a collection, or a substring of a text."""
    if container.name == "mapping" and container.inner is not None:
        return Check("includes" if inside else "excludes", container.inner, value)
    if container.kind == "data" and container.fmt in ("text", "output", "docx", "pdf", "pptx", "listing") and \
            ANY not in container.keys:
        return Check("contains" if inside else "not_contains", container, value)
    if container.kind == "data" and isinstance(value.value, str) and container.keys and \
            container.keys[-1] != ANY and (re.search(r"\s", value.value) or len(value.value) > 40) and \
            container.name not in ("collection",):
        return Check("contains" if inside else "not_contains", container, value)  # a fragment of a text field
    if container.kind == "data" and container.keys and container.keys[-1] == ANY and container.name != "collection" \
            and isinstance(value.value, str) and container.fmt in ("json", "yaml", None):
        return Check("has_key" if inside else "lacks_key", container, value)  # `"id" in node` for each node
    if container.kind == "data" and container.keys and container.keys[-1] == ANY or (
            container.kind == "data" and ANY in container.keys and isinstance(container.keys[-1], str)
            and container.name == "collection"):
        return Check("includes" if inside else "excludes", container, value)
    if container.kind == "data" and container.keys and isinstance(value.value, (int, float)) and \
            not isinstance(value.value, bool):
        return Check("includes" if inside else "excludes", container, value)  # `65002 in cycle`
    if container.kind != "data" and isinstance(value.value, str) and (" " in value.value or len(value.value) > 40):
        return Check("contains" if inside else "not_contains", container, value)
    return Check("has_key" if inside else "lacks_key", container, value)


def _first_data(options: Sequence[Sequence[Check]]) -> V:
    for option in options:
        for check in option:
            if check.subject.from_data:
                return check.subject
    return UNKNOWN


def _fails(body: Sequence[ast.stmt]) -> ast.AST | str | None:
    """The message of a block that fails the test (`pytest.fail(msg)`, `raise AssertionError(msg)`); None otherwise."""
    for stmt in body:
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and \
                _dotted(stmt.value.func) in ("pytest.fail", "fail"):
            return stmt.value.args[0] if stmt.value.args else ""
        if isinstance(stmt, ast.Raise) and stmt.exc is not None and "Error" in _dotted(
                stmt.exc.func if isinstance(stmt.exc, ast.Call) else stmt.exc):
            call = stmt.exc
            return call.args[0] if isinstance(call, ast.Call) and call.args else ""
    return None


def _messages(nodes: Iterable[ast.AST | None]) -> tuple[str, ...]:
    """The constant text of assertion messages (f-strings: their literal parts joined by `…`)."""
    out = []
    for node in nodes:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            out.append(node.value)
        elif isinstance(node, ast.JoinedStr):
            parts = [v.value for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str)]
            if parts:
                out.append("…".join(p for p in parts))
        elif isinstance(node, ast.BinOp):
            out.extend(_messages([node.left, node.right]))
    return tuple(m for m in out if m.strip())


def _messages_of(body: Sequence[ast.stmt]) -> tuple[str, ...]:
    failing = _fails(body)
    if isinstance(failing, str):
        return (failing,) if failing else ()
    return _messages([failing]) if failing is not None else ()


def _join(base: str, part: str) -> str:
    if part.startswith("/"):
        return part
    return base.rstrip("/") + "/" + part if base else part


def _path_of(value: V | None) -> str | None:
    if value is None:
        return None
    if value.kind in ("path", "handle"):
        return value.path
    if value.kind == "each" and value.value:
        return _path_of(lit(value.value[0]))
    if value.is_lit and isinstance(value.value, str) and ("/" in value.value or re.search(r"\.\w{1,5}$", value.value)) \
            and "\n" not in value.value and len(value.value) < 200:
        return value.value
    return None


def _fmt_of(path: str) -> str | None:
    ext = path.rsplit(".", 1)[-1].lower() if "." in path.rsplit("/", 1)[-1] else ""
    return {"json": "json", "jsonl": "json", "csv": "csv", "tsv": "csv", "txt": "text", "md": "text", "log": "text",
            "yaml": "yaml", "yml": "yaml", "xlsx": "xlsx", "xls": "xlsx", "docx": "docx", "pptx": "pptx", "pdf": "pdf",
            "dot": "text", "py": "text", "html": "text", "xml": "xml", "toml": "toml", "lean": "text", "rules": "text",
            "sh": "text", "js": "text", "ts": "text", "tsx": "text", "scala": "text", "java": "text",
            "srt": "text", "vtt": "text", "sql": "text"}.get(ext)


def _command_text(command: V) -> str | None:
    if command.is_lit:
        if isinstance(command.value, str):
            return " ".join(command.value.split())
        if isinstance(command.value, (list, tuple)) and all(isinstance(c, str) for c in command.value):
            parts = list(command.value)
            if len(parts) >= 3 and parts[0] in ("bash", "sh") and parts[1] in ("-c", "-lc"):
                parts = parts[2:]
            return " ".join(" ".join(parts).split())
    return None


# ---------------------------------------------------------------- cases and groups


def _argnames(call: ast.Call, ev: _Evaluator) -> list[str]:
    names = ev.ev(call.args[0], {}) if call.args else UNKNOWN
    if names.is_lit and isinstance(names.value, str):
        return [n.strip() for n in names.value.split(",") if n.strip()]
    if names.is_lit and isinstance(names.value, (list, tuple)):
        return [str(n) for n in names.value]
    return []


def _case_values(call: ast.Call, ev: _Evaluator, n_names: int) -> list[tuple[str | None, tuple, bool]] | None:
    """(explicit id, values, known) per case of one parametrize decorator; None when not listed."""
    if len(call.args) < 2:
        return None
    node = call.args[1]
    entries: list[ast.AST] | None = None
    if isinstance(node, (ast.List, ast.Tuple)):
        entries = list(node.elts)
    out: list[tuple[str | None, tuple, bool]] = []
    if entries is None:
        value = ev.ev(node, {})
        if not value.is_lit or not isinstance(value.value, (list, tuple)):
            return None
        for v in value.value:
            vals = tuple(v) if n_names > 1 and isinstance(v, (list, tuple)) else (v,)
            out.append((None, vals, True))
    else:
        for entry in entries:
            explicit = None
            if isinstance(entry, ast.Call) and _dotted(entry.func).endswith("param"):
                for kw in entry.keywords:
                    if kw.arg == "id" and isinstance(kw.value, ast.Constant):
                        explicit = str(kw.value.value)
                elements = list(entry.args)
            elif n_names > 1 and isinstance(entry, (ast.Tuple, ast.List)):
                elements = list(entry.elts)
            else:
                value = ev.ev(entry, {})
                if n_names > 1 and value.is_lit and isinstance(value.value, (list, tuple)):
                    out.append((None, tuple(value.value), True))
                    continue
                elements = [entry]
            values = [ev.ev(e, {}) for e in elements]
            out.append((explicit, tuple(v.value if v.is_lit else None for v in values), all(v.is_lit for v in values)))
    explicit_ids = next((kw.value for kw in call.keywords if kw.arg == "ids"), None)
    if explicit_ids is not None:
        ids = ev.ev(explicit_ids, {})
        if ids.is_lit and isinstance(ids.value, (list, tuple)) and len(ids.value) == len(out):
            out = [(str(i), vals, known) for i, (_, vals, known) in zip(ids.value, out)]
    return out


def _scalar_id(value: Any, name: str, index: int) -> str:
    if isinstance(value, (str, int, float, bool)) or value is None:
        text = value if isinstance(value, str) else str(value)
        if text.isascii() and text.isprintable():
            return text
    return f"{name}{index}"


def _cases(fn: ast.FunctionDef | ast.AsyncFunctionDef, test: VerifierTest, ev: _Evaluator) -> list[Case]:
    calls = [d for d in fn.decorator_list if isinstance(d, ast.Call) and _dotted(d.func).endswith("parametrize")]
    if not calls:
        return [Case(None)]
    per_call: list[list[tuple[str, tuple[tuple[str, Any], ...], bool]]] = []
    for call in calls:
        names = _argnames(call, ev)
        values = _case_values(call, ev, len(names)) if names else None
        if not values:
            return [Case(None, known=False)]
        cases = []
        for k, (explicit, vals, known) in enumerate(values):
            if len(vals) != len(names):
                known = False
                vals = (*vals, *([None] * (len(names) - len(vals))))[:len(names)]
            case_id = explicit if explicit is not None else "-".join(
                _scalar_id(v, n, k) for n, v in zip(names, vals))
            cases.append((case_id, tuple(zip(names, vals)), known))
        per_call.append(cases)
    total = math.prod(len(c) for c in per_call)
    if total > MAX_CASES:
        return [Case(None, known=False)]
    out = []
    for combo in product(*reversed(per_call)):  # pytest: the decorator nearest the def varies first... ids join
        combo = tuple(reversed(combo))
        case_id = "-".join(c[0] for c in reversed(combo))
        params = tuple(p for c in combo for p in c[1])
        out.append(Case(case_id, params, all(c[2] for c in combo)))
    if test.param_ids and len(test.param_ids) == len(out):
        out = [replace(c, id=i) for c, i in zip(out, test.param_ids)]
    return out


def _function_index(tree: ast.Module) -> dict[int, ast.FunctionDef | ast.AsyncFunctionDef]:
    return {n.lineno: n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}


def _groups(checks: list[Check], case: Case) -> list[Group]:
    """Cut the checks of one case into assertion groups: consecutive checks about one subject form a
    group; a guard (existence, presence, type, a key) joins the next group about the same subject,
    or the group it follows; opaque checks join the group before them (or the next one)."""
    groups: list[list[Check]] = []
    keys: list[tuple] = []
    pending: list[Check] = []
    row_guards = _row_guards(checks)
    for check in checks:
        if id(check) in row_guards:
            # `"x" in rows` before a check of the row whose key is "x": a guard of that check's group
            key = row_guards[id(check)]
            check = replace(check, op="has_row")
            match = next((k for k in range(len(groups)) if keys[k] == key), None)
            if match is None:
                groups.append([check])
                keys.append(key)
            else:
                groups[match].append(check)
            continue
        if check.op == "opaque":
            if groups:
                groups[-1].append(check)
            else:
                pending.append(check)
            continue
        key = check.subject_key
        match = next((k for k in range(len(groups)) if _same_subject(keys[k], key)), None)
        if match is None and groups and check.guard and all(c.guard for c in groups[-1]) and \
                _related(keys[-1], key):
            match = len(groups) - 1
        if match is None:
            groups.append([*pending, check])
            keys.append(key)
            pending = []
        else:
            groups[match].append(check)
            if not check.guard and all(c.guard for c in groups[match][:-1]):
                keys[match] = key
    if pending:
        if groups:
            groups[0][:0] = pending
        else:
            groups.append(pending)
    groups, keys = _fold_directory_guards(groups, keys)
    merged: list[list[Check]] = []
    merged_keys: list[tuple] = []
    for group, key in zip(groups, keys or [()] * len(groups)):
        if merged and all(c.guard for c in group) and _related(merged_keys[-1], key):
            merged[-1].extend(group)
            continue
        if merged and all(c.guard for c in merged[-1]) and _related(merged_keys[-1], key):
            merged[-1].extend(group)
            merged_keys[-1] = key
            continue
        merged.append(group)
        merged_keys.append(key)
    return [Group(g, [case]) for g in merged]


def _fold_directory_guards(groups: list[list[Check]], keys: list[tuple]) -> tuple[list[list[Check]], list[tuple]]:
    """A group that only checks a directory exists (`assert base.exists()` before a loop over it) joins the group
    after it (the last one joins the one before): the directory is where the checked files are, not a
    requirement of its own."""
    def directory_only(group: list[Check]) -> bool:
        return all(c.op in ("exists", "isdir") and c.subject.path and
                   not re.search(r"\.\w{1,8}$", c.subject.path.rstrip("/")) for c in group)

    if len(groups) < 2:
        return groups, keys
    out: list[list[Check]] = []
    out_keys: list[tuple] = []
    carry: list[Check] = []
    for group, key in zip(groups, keys):
        if directory_only(group):
            carry.extend(group)
            continue
        out.append([*carry, *group])
        out_keys.append(key)
        carry = []
    if carry:
        if out:
            out[-1].extend(carry)
        else:
            out, out_keys = [carry], [keys[0]]
    return out, out_keys


def _row_guards(checks: list[Check]) -> dict[int, tuple]:
    """Membership checks on a table's keys (`metric in results`) that guard a later check of that row
    (`results[metric] == 26092`), mapped to the row check's subject."""
    out: dict[int, tuple] = {}
    for k, check in enumerate(checks):
        if check.op != "includes" or check.expected is None or not check.expected.is_lit or not check.subject.keys:
            continue
        field_name = check.subject.keys[-1]
        for later in checks[k + 1:]:
            if (field_name, check.expected.value) in later.subject.where:
                out[id(check)] = later.subject_key
                break
    return out


def _same_subject(a: tuple, b: tuple) -> bool:
    return a == b


def _related(a: tuple, b: tuple) -> bool:
    """Whether two subjects concern the same file (a guard on the file and a check on its content)."""
    if not a or not b:
        return True
    pa = a[1] if len(a) > 1 else None
    pb = b[1] if len(b) > 1 else None
    if pa is None or pb is None:
        return len(a) <= 2 or len(b) <= 2
    return pa == pb and (len(a) <= 2 or len(b) <= 2)


# ---------------------------------------------------------------- entry point


def read_tests(task: Task) -> dict[str, TestReading]:
    """Every test node of `task` read as checks, keyed by node id (a file that does not parse reads as no checks)."""
    readings: dict[str, TestReading] = {}
    trees: dict[str, ast.Module | None] = {}
    for file, source in task.verifier_files.items():
        try:
            trees[file] = ast.parse(source)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            trees[file] = None
    shared: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
    for file, tree in trees.items():
        if tree is not None and file.rsplit("/", 1)[-1] == "conftest.py":
            shared.update({s.name: s for s in tree.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))})
    modules: dict[str, _Module] = {}
    indexes: dict[str, dict[int, ast.FunctionDef | ast.AsyncFunctionDef]] = {}
    for test in task.tests:
        tree = trees.get(test.file)
        if tree is None:
            readings[test.node_id] = TestReading(test, [Case(None)])
            continue
        if test.file not in modules:
            try:
                modules[test.file] = _Module(tree, shared)
            except RecursionError:  # pragma: no cover
                readings[test.node_id] = TestReading(test, [Case(None)])
                continue
            indexes[test.file] = _function_index(tree)
        module = modules[test.file]
        fn = indexes[test.file].get(test.lineno)
        if fn is None:
            readings[test.node_id] = TestReading(test, [Case(None)])
            continue
        readings[test.node_id] = _read_one(module, fn, test)
    return readings


def _read_one(module: _Module, fn: ast.FunctionDef | ast.AsyncFunctionDef, test: VerifierTest) -> TestReading:
    ev = _Evaluator(module, test.cls)
    cases = _cases(fn, test, ev)
    reading = TestReading(test, cases)
    names = [a.arg for a in fn.args.args if a.arg not in ("self", "cls")]
    body = list(fn.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    for case in cases:
        ev = _Evaluator(module, test.cls, params=dict(case.params))
        env: dict[str, V] = {}
        params = dict(case.params)
        for name in names:
            if name in params:
                env[name] = lit(params[name]) if case.known else V("unknown", name=name)
            else:
                env[name] = ev.lookup(name, {})
        ev.walk(body, env)
        reading.checks[case.id] = ev.checks
        for f in ev.files:
            if f not in reading.files:
                reading.files.append(f)
    reading.strings = [n.value for n in ast.walk(fn) if isinstance(n, ast.Constant) and isinstance(n.value, str)
                       and n.value != test.docstring][:200]
    node = module._class_node(test.cls) if test.cls else None
    doc = ast.get_docstring(node) if node is not None else None
    if doc:
        first = " ".join(doc.split("\n\n", 1)[0].split())
        reading.class_doc = re.split(r"(?<=[.!?])\s", first, maxsplit=1)[0].strip(" .:")
    return reading
