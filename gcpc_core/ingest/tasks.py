"""Harbor task folders: instruction, task.toml and the verifier's test nodes.

Verifier test ids are parsed statically with `ast` (the verifier is never
imported or run) into the `file::Class::test` form that pytest and CTRF use,
so checklist items can cite them and CTRF results can be mapped back to them.

A verifier with no pytest test node — a plain Python script (asserts or `sys.exit` at module level,
or a `main()` under `if __name__ == "__main__":`) or a shell script only — gets one node for the
script itself (`script_node`), so its checks still have an assertion route.
"""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

from ..models import SCRIPT_REF_PREFIX, Task, VerifierTest
from .bounded import is_regular
from .confine import first_escape, refusal
from .files import read_utf8, resolved_folder
from .logs._io import lone_surrogate

__all__ = ["TaskError", "find_task_dirs", "load_task", "parse_verifier_source", "script_checks", "script_node"]

MAX_TASK_FILE_BYTES = 2 * 2**20
"""Verifier sources and instructions larger than this are refused: they are not hand-written."""


class TaskError(ValueError):
    """A task folder that cannot be imported; the message names the path and the problem."""


def find_task_dirs(root: Path) -> list[Path]:
    """Every folder under `root` (itself included) that holds an `instruction.md`."""
    root = Path(root)
    return sorted(p.parent for p in root.rglob("instruction.md") if is_regular(p))


def _parametrize_calls(node: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.expr]:
    found = []
    for dec in node.decorator_list:
        target = dec.func if isinstance(dec, ast.Call) else dec
        if isinstance(target, ast.Attribute) and target.attr == "parametrize":
            found.append(dec)
    return found


def _is_parametrized(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return bool(_parametrize_calls(node))


_ID_SCALARS = (str, int, float, bool, type(None))


def _scalar_id(value: object) -> str | None:
    """pytest's id for one literal argument value, when it is the plain `str()` (printable ASCII)."""
    if not isinstance(value, _ID_SCALARS):
        return None
    text = value if isinstance(value, str) else str(value)
    return text if text.isascii() and text.isprintable() else None


def _case_id(case: ast.expr, n_names: int) -> str | None:
    """pytest's id of one `argvalues` entry (`"a"` → `a`, `("x", 1)` → `x-1`), or None when it is not
    a plain literal (pytest would write `name0`, `name1`, … or call `repr`-like rules)."""
    if isinstance(case, ast.Call) and getattr(case.func, "attr", getattr(case.func, "id", None)) == "param":
        for kw in case.keywords:
            if kw.arg == "id" and isinstance(kw.value, ast.Constant) and isinstance(kw.value.value, str):
                return kw.value.value
        values: list[ast.expr] = list(case.args)
    elif n_names > 1 and isinstance(case, (ast.Tuple, ast.List)):
        values = list(case.elts)
    else:
        values = [case]
    ids = [_scalar_id(v.value) if isinstance(v, ast.Constant) else None for v in values]
    return "-".join(i for i in ids if i is not None) if ids and None not in ids else None


def _argnames_count(call: ast.Call) -> int:
    names = call.args[0] if call.args else None
    if isinstance(names, ast.Constant) and isinstance(names.value, str):
        return len([n for n in names.value.split(",") if n.strip()])
    if isinstance(names, (ast.Tuple, ast.List)):
        return len(names.elts)
    return 1


def _cases(call: ast.expr) -> tuple[int, list[str] | None] | None:
    """(how many cases, their pytest ids or None) of one `parametrize` decorator with a literal
    `argvalues` list; None when the cases are computed (a name, a comprehension, a call)."""
    if not isinstance(call, ast.Call) or len(call.args) < 2 or not isinstance(call.args[1], (ast.List, ast.Tuple)):
        return None
    cases = call.args[1].elts
    ids: list[str | None] = [_case_id(c, _argnames_count(call)) for c in cases]
    explicit = next((kw.value for kw in call.keywords if kw.arg == "ids"), None)
    if explicit is not None:
        ids = ([e.value if isinstance(e, ast.Constant) and isinstance(e.value, str) else None for e in explicit.elts]
               if isinstance(explicit, (ast.List, ast.Tuple)) and len(explicit.elts) == len(cases) else [None])
    known = None if None in ids or len(set(ids)) != len(ids) else [i for i in ids if i is not None]
    return len(cases), known


def _param_cases(node: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[int, tuple[str, ...]]:
    """How many cases pytest collects from a test's `parametrize` decorators (their product), and
    their ids when every decorator lists literal cases and there is one decorator; (0, ()) when the
    test is not parametrized or a decorator's cases are computed."""
    calls = _parametrize_calls(node)
    parsed = [_cases(c) for c in calls]
    if not calls or None in parsed:
        return 0, ()
    total = 1
    for count, _ in parsed:  # type: ignore[misc]
        total *= count
    ids = parsed[0][1] if len(parsed) == 1 else None  # type: ignore[index]
    return total, tuple(ids or ())


def _test(file: str, cls: str | None, node: ast.FunctionDef | ast.AsyncFunctionDef) -> VerifierTest:
    node_id = f"{file}::{cls}::{node.name}" if cls else f"{file}::{node.name}"
    cases, ids = _param_cases(node)
    return VerifierTest(
        node_id=node_id,
        file=file,
        cls=cls,
        name=node.name,
        lineno=node.lineno,
        end_lineno=node.end_lineno or node.lineno,
        parametrized=_is_parametrized(node),
        param_cases=cases,
        param_ids=ids,
        docstring=ast.get_docstring(node),
    )


def _class_tests(file: str, node: ast.ClassDef, prefix: str | None = None) -> list[VerifierTest]:
    """Test methods of a `Test*` class, following pytest's collection of nested classes."""
    name = f"{prefix}::{node.name}" if prefix else node.name
    if any(isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and s.name == "__init__" for s in node.body):
        return []  # pytest refuses to collect classes with an __init__
    found: list[VerifierTest] = []
    for stmt in node.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name.startswith("test"):
            found.append(_test(file, name, stmt))
        elif isinstance(stmt, ast.ClassDef) and stmt.name.startswith("Test"):
            found.extend(_class_tests(file, stmt, name))
    return found


def parse_verifier_source(file: str, source: str) -> list[VerifierTest]:
    """Test nodes of one verifier file, in source order; raises SyntaxError on invalid Python,
    RecursionError or MemoryError on source nested too deeply to parse."""
    tree = ast.parse(source, filename=file)
    found: list[VerifierTest] = []
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name.startswith("test"):
            found.append(_test(file, None, stmt))
        elif isinstance(stmt, ast.ClassDef) and stmt.name.startswith("Test"):
            found.extend(_class_tests(file, stmt))
    return found


# ---------------------------------------------------------------- a verifier that is a plain script

_EXIT_CALLS = {("sys", "exit"), ("os", "_exit"), (None, "exit"), (None, "quit")}
_SUCCESS_CODES = (0, None, False)


def _exits_with_failure(node: ast.AST) -> bool:
    """`sys.exit(1)`, `exit("message")`, `sys.exit(0 if ok else 1)`, `raise SystemExit(2)`: a call that
    may end the script with a failure (an exit with no argument, 0 or None is a success)."""
    if isinstance(node, ast.Raise) and node.exc is not None:
        exc = node.exc
        if isinstance(exc, ast.Call) and isinstance(exc.func, ast.Name) and exc.func.id == "SystemExit":
            args = exc.args
        else:
            return False
    elif isinstance(node, ast.Call):
        func = node.func
        owner = func.value.id if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) else None
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
        if (owner, name) not in _EXIT_CALLS:
            return False
        args = node.args
    else:
        return False
    return bool(args) and not (isinstance(args[0], ast.Constant) and args[0].value in _SUCCESS_CODES)


_SHELL_FAILURE_EXIT = re.compile(r"(?<![\w$-])exit(?:\s+(?!0\b)[^\s;&|)#]+|(?=\s*(?:[;&|)#]|$)))", re.M)


def script_checks(file: str, source: str) -> int:
    """How many checks a verifier script makes: `assert` statements and calls that exit with a failure
    (Python), or `exit` with a non-zero or computed status (shell); at least the script itself."""
    if file.endswith(".py"):
        tree = ast.parse(source, filename=file)
        found = sum(isinstance(n, ast.Assert) or _exits_with_failure(n) for n in ast.walk(tree))
    else:
        code = "\n".join(line.split("#", 1)[0] if not line.lstrip().startswith("#!") else "" for line in source.splitlines())
        found = len(_SHELL_FAILURE_EXIT.findall(code))
    return max(1, found)


def _is_main_guard(stmt: ast.stmt) -> bool:
    test = stmt.test if isinstance(stmt, ast.If) else None
    return (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == "__name__"
            and any(isinstance(c, ast.Constant) and c.value == "__main__" for c in test.comparators))


_DEFINITIONS = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Assign,
                ast.AnnAssign, ast.AugAssign, ast.Pass)


def _runs_as_script(tree: ast.Module) -> bool:
    """Whether a module does something when run: a `__main__` guard, or module-level statements beyond
    imports, definitions, assignments and its docstring (a helper module only defines)."""
    for k, stmt in enumerate(tree.body):
        if _is_main_guard(stmt):
            return True
        if k == 0 and isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            continue  # the docstring
        if not isinstance(stmt, _DEFINITIONS):
            return True
    return False


def _imported_modules(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module.split(".")[0])
    return names


def _names_file(script: str, file: str) -> bool:
    """Whether shell text `script` names verifier file `file` (python3 /tests/verify.py, tests/verify.py)."""
    return re.search(rf"(?<![\w.-]){re.escape(Path(file).name)}(?![\w.-])", script) is not None


def _leading_comment(source: str) -> str | None:
    lines = [line for line in source.splitlines() if not line.startswith("#!")]
    comment = []
    for line in lines:
        if not line.strip().startswith("#"):
            break
        comment.append(line.strip().lstrip("#").strip())
    return " ".join(c for c in comment if c) or None


def script_node(verifier_files: dict[str, str], test_script: str | None) -> VerifierTest | None:
    """The one node standing for a verifier with no pytest test node, or None when there is no script.

    The entry point is, in this order: the one Python script `test.sh` names; else the one Python script
    under `tests/`; else `test.sh` itself (a shell-only verifier, or one running several scripts); else,
    lacking a `test.sh`, the first of several Python scripts (test-named files first). A Python file is a
    script when it runs something at module level (see `_runs_as_script`) and no other verifier file
    imports it (a helper); `conftest.py` never is. Its node id is its path, `tests/<file>`; its checks
    are counted by `script_checks` (for `test.sh`, with those of the scripts it names). Raises
    SyntaxError for a candidate that is not valid Python.
    """
    trees = {f: ast.parse(src, filename=f) for f, src in sorted(verifier_files.items())
             if Path(f).name != "conftest.py"}
    imported = set().union(*(_imported_modules(t) for t in trees.values())) if trees else set()
    scripts = [f for f, t in trees.items() if _runs_as_script(t) and Path(f).stem not in imported]
    named = [f for f in scripts if test_script and _names_file(test_script, f)]
    chosen = named or scripts
    if len(chosen) == 1:
        file, source = chosen[0], verifier_files[chosen[0]]
        checks, docstring = script_checks(file, source), ast.get_docstring(trees[file])
    elif test_script is not None:
        file, source = "test.sh", test_script
        checks = script_checks(file, source) + sum(script_checks(f, verifier_files[f]) for f in named)
        docstring = _leading_comment(source)
    elif chosen:
        file = sorted(chosen, key=lambda f: (not _is_test_file(Path(f)), f))[0]
        source = verifier_files[file]
        checks, docstring = script_checks(file, source), ast.get_docstring(trees[file])
    else:
        return None
    return VerifierTest(node_id=SCRIPT_REF_PREFIX + file, file=file, name=Path(file).name, lineno=1,
                        end_lineno=max(1, len(source.splitlines())), kind="script", script_checks=checks,
                        docstring=docstring)


def _read_text(path: Path) -> str:
    return read_utf8(path, max_bytes=MAX_TASK_FILE_BYTES, error=TaskError, what="a task file")


def _is_test_file(path: Path) -> bool:
    return path.name.startswith("test_") or path.name.endswith("_test.py")


def _check_confined(task_dir: Path, root: Path) -> None:
    """TaskError when the task folder, or a file import reads in it, leads outside `root` (resolved)."""
    tests = task_dir / "tests"
    paths = [task_dir, *(task_dir / n for n in ("instruction.md", "task.toml", "tests", "tests/test.sh"))]
    escaped = first_escape(paths, root)
    if escaped is None and tests.is_dir():
        escaped = first_escape(tests.rglob("*.py"), root)
    if escaped is not None:
        raise TaskError(refusal(escaped, root))


def load_task(task_dir: Path, *, root: Path | None = None) -> Task:
    """Read one Harbor task folder; raises TaskError naming the file at fault.

    With `root` (a resolved folder), nothing is read through a link leading outside it (see `confine`).
    """
    if root is not None:
        _check_confined(Path(task_dir), root)
    task_dir = resolved_folder(task_dir, TaskError)
    instruction_path = task_dir / "instruction.md"
    if not instruction_path.is_file():
        raise TaskError(f"{task_dir}: no instruction.md")
    instruction = _read_text(instruction_path)
    metadata: dict = {}
    toml_path = task_dir / "task.toml"
    if toml_path.exists():
        try:
            metadata = tomllib.loads(_read_text(toml_path))
        except tomllib.TOMLDecodeError as exc:
            raise TaskError(f"{toml_path}: invalid TOML ({exc})") from exc
        except RecursionError:
            raise TaskError(f"{toml_path}: TOML nested too deeply to read") from None
    tests_dir = task_dir / "tests"
    verifier_files: dict[str, str] = {}
    tests: list[VerifierTest] = []
    parse_errors: list[str] = []
    if tests_dir.is_dir():
        for path in sorted(tests_dir.rglob("*.py")):
            rel = path.relative_to(tests_dir).as_posix()
            if lone_surrogate(rel):
                parse_errors.append(f"{path!r}: file name is not valid UTF-8, skipped")
                continue
            if not is_regular(path):  # a folder, pipe or device named like a verifier: never opened
                kind = "a folder" if path.is_dir() else "not a regular file"
                raise TaskError(f"{path}: {kind} where a verifier file is expected")
            try:
                source = _read_text(path)
            except TaskError as exc:
                parse_errors.append(str(exc))
                continue
            verifier_files[rel] = source
            if not _is_test_file(path):
                continue  # helpers such as conftest.py or testing_utils.py hold no test nodes
            try:
                tests.extend(parse_verifier_source(rel, source))
            except SyntaxError as exc:
                parse_errors.append(f"{path}: line {exc.lineno}: {exc.msg}")
            except (RecursionError, MemoryError):  # valid Python, but beyond a static parse
                raise TaskError(f"{path}: verifier nested too deeply to parse its tests statically") from None
    test_sh = tests_dir / "test.sh"
    test_script = _read_text(test_sh) if test_sh.exists() else None
    if not tests and not parse_errors:
        try:
            script = script_node(verifier_files, test_script)
        except SyntaxError as exc:
            parse_errors.append(f"{tests_dir / (exc.filename or '')}: line {exc.lineno}: {exc.msg}")
        except (RecursionError, MemoryError):
            raise TaskError(f"{tests_dir}: verifier script nested too deeply to parse statically") from None
        else:
            tests = [script] if script is not None else []
    return Task(
        id=task_dir.name,
        instruction=instruction,
        verifier_files=verifier_files,
        test_script=test_script,
        tests=tests,
        parse_errors=parse_errors,
        metadata=metadata,
        source_path=str(task_dir),
    )
