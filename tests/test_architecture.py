"""Module structure: no module of `gcpc_core` or `annotations` imports one that imports it back, and no
package (`annotations`, each subpackage and top-level module of `gcpc_core`) one that imports it back.

The import graph is read from the source with `ast`, every import statement counted wherever it
stands — at module level, inside a function (a late import hides a circle, it does not remove it)
or under `if TYPE_CHECKING:`. Relative imports are resolved against the importing module;
`from pkg import name` is an edge to `pkg.name` when that is a module, else to `pkg`.

The rule that keeps package `__init__` re-exports from closing false circles: a module never
imports its own package or an ancestor package (`from . import X`, `from .. import Y` where the
name is not a module); it imports the sibling module that defines the name. A package `__init__`
may then re-export whatever its submodules define.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import numpy as np
import pytest
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components, shortest_path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("gcpc_core", "annotations")


def module_files(root: Path = ROOT, packages: tuple[str, ...] = PACKAGES) -> dict[str, Path]:
    """Dotted module name → source file, for every module of `packages` under `root`."""
    modules: dict[str, Path] = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join(parts)] = path
    return modules


def _resolve(target: str, modules: dict[str, Path]) -> str | None:
    """The module of ours `target` names: itself, else its longest importable prefix; None if foreign."""
    parts = target.split(".")
    while parts:
        name = ".".join(parts)
        if name in modules:
            return name
        parts.pop()
    return None


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """Every module of ours that module `name` (at `path`) imports, wherever the import stands."""
    is_package = path.name == "__init__.py"
    package = name if is_package else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base_parts = package.split(".")
                if node.level > 1:
                    base_parts = base_parts[: len(base_parts) - (node.level - 1)]
                base = ".".join(p for p in [*base_parts, node.module or ""] if p)
            else:
                base = node.module or ""
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]
        else:
            continue
        for target in targets:
            resolved = _resolve(target, modules)
            if resolved is not None:
                found.add(resolved)
    return found


def import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One concrete circle per strongly connected component of more than one module (or a self
    import), as the module path `a → b → … → a`."""
    names = sorted(graph)
    index = {n: i for i, n in enumerate(names)}
    rows = [index[a] for a in names for b in graph[a] if b in index]
    cols = [index[b] for a in names for b in graph[a] if b in index]
    matrix = csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(names), len(names)))
    _, labels = connected_components(matrix, directed=True, connection="strong")
    found: list[list[str]] = [[n, n] for n in names if n in graph[n]]
    for label in sorted(set(labels)):
        members = [i for i in range(len(names)) if labels[i] == label]
        if len(members) < 2:
            continue
        sub = matrix[members][:, members]
        _, pred = shortest_path(sub, directed=True, unweighted=True, indices=0, return_predecessors=True)
        back = next(j for j in range(len(members)) if sub[j, 0] and j != 0)
        path = [back]
        while path[-1] != 0:
            path.append(int(pred[path[-1]]))
        found.append([names[members[0]], *(names[members[j]] for j in reversed(path[:-1])), names[members[0]]])
    return found


@pytest.fixture(scope="module")
def tree() -> tuple[dict[str, Path], dict[str, set[str]]]:
    modules = module_files()
    return modules, import_graph(modules)


def test_no_import_cycles(tree: tuple[dict[str, Path], dict[str, set[str]]]) -> None:
    found = cycles(tree[1])
    assert not found, "modules that import each other back:\n" + "\n".join(" → ".join(c) for c in found)


def own_package_imports(modules: dict[str, Path], graph: dict[str, set[str]]) -> list[str]:
    """`a.b.c imports a.b` for every module that imports its own package or an ancestor's `__init__`."""
    return sorted(
        f"{name} imports {target}"
        for name, targets in graph.items()
        for target in targets
        if modules[target].name == "__init__.py" and name.startswith(target + ".")
    )


def test_no_module_imports_its_own_package(tree: tuple[dict[str, Path], dict[str, set[str]]]) -> None:
    offenders = own_package_imports(*tree)
    assert not offenders, "import the sibling module instead of the package:\n" + "\n".join(offenders)


# Packages: no package imports another that imports it back. A unit is a top-level package, except that
# the packages in `LAYERED` count each subpackage and top-level module as a unit of its own (gcpc_core's
# `store`, `judge`, `analysis`, `text.py`, …). The edges are the module edges above, late and
# TYPE_CHECKING imports included, so two packages can circle without any module doing so.

LAYERED = ("gcpc_core",)


def unit_of(module: str, layered: tuple[str, ...] = LAYERED) -> str:
    """The package unit `module` belongs to: `gcpc_core.judge.units` → `gcpc_core.judge`, `annotations.x` →
    `annotations`."""
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] in layered else parts[0]


def package_graph(graph: dict[str, set[str]], layered: tuple[str, ...] = LAYERED) -> dict[str, set[str]]:
    """Unit → the other units its modules import."""
    units: dict[str, set[str]] = {}
    for name, targets in graph.items():
        unit = unit_of(name, layered)
        units.setdefault(unit, set()).update(t for t in map(lambda t: unit_of(t, layered), targets) if t != unit)
    return units


def test_no_package_imports_one_that_imports_it_back(tree: tuple[dict[str, Path], dict[str, set[str]]]) -> None:
    graph = tree[1]
    found = cycles(package_graph(graph))
    why = [" → ".join(c) + ":  " + "; ".join(f"{a} imports {b}" for a, b in _edges_along(c, graph)) for c in found]
    assert not found, "packages that import each other back:\n" + "\n".join(why)


def _edges_along(circle: list[str], graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    """For each step of a package circle, one module edge that makes it (for the failure message)."""
    return [next((a, b) for a in sorted(graph) if unit_of(a) == src for b in sorted(graph[a]) if unit_of(b) == dst)
            for src, dst in zip(circle, circle[1:])]


def test_the_package_check_finds_a_circle_no_module_closes(tmp_path: Path) -> None:
    graph = _tree(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/top.py": "",
        "pkg/a/__init__.py": "",
        "pkg/a/x.py": "def f():\n    from pkg.b.y import Y\n    return Y\n",
        "pkg/a/z.py": "from pkg.top import *\n",
        "pkg/b/__init__.py": "",
        "pkg/b/y.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.a.z import Z\nY = 1\n",
    })
    assert cycles(graph) == []  # no module imports one that imports it back ...
    units = package_graph(graph, ("pkg",))
    assert units["pkg.a"] == {"pkg.b", "pkg.top"} and units["pkg.b"] == {"pkg.a"} and units["pkg.top"] == set()
    assert cycles(units) == [["pkg.a", "pkg.b", "pkg.a"]]  # ... but the packages circle
    assert unit_of("annotations.frames") == "annotations" and unit_of("gcpc_core.judge.units") == "gcpc_core.judge"


# The walker itself, on small trees whose answer is known.


def _tree(tmp_path: Path, files: dict[str, str]) -> dict[str, set[str]]:
    for rel, text in files.items():
        target = tmp_path / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    return import_graph(module_files(tmp_path, ("pkg",)))


def test_walker_finds_a_circle_hidden_in_a_function(tmp_path: Path) -> None:
    graph = _tree(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/a.py": "from .b import thing\n",
        "pkg/b.py": "def f():\n    from pkg.a import other\n    return other\nthing = 1\n",
    })
    assert graph["pkg.a"] == {"pkg.b"} and graph["pkg.b"] == {"pkg.a"}
    assert cycles(graph) == [["pkg.a", "pkg.b", "pkg.a"]]


def test_walker_resolves_relative_and_from_imports(tmp_path: Path) -> None:
    graph = _tree(tmp_path, {
        "pkg/__init__.py": "from .sub import x\n",
        "pkg/sub/__init__.py": "from . import leaf\nfrom .leaf import x\nfrom .. import top\n",
        "pkg/sub/leaf.py": "import os\nfrom ..top import VALUE\nimport pkg.sub.leaf\nx = VALUE\n",
        "pkg/top.py": "VALUE = 1\nfrom . import NAME_NOT_A_MODULE\n",
    })
    assert graph["pkg"] == {"pkg.sub"}
    assert graph["pkg.sub"] == {"pkg.sub.leaf", "pkg.top"}
    assert graph["pkg.sub.leaf"] == {"pkg.top", "pkg.sub.leaf"}
    assert graph["pkg.top"] == {"pkg"}
    found = cycles(graph)
    assert ["pkg.sub.leaf", "pkg.sub.leaf"] in found
    assert ["pkg", "pkg.sub", "pkg.top", "pkg"] in found


def test_an_import_of_the_own_package_is_named(tmp_path: Path) -> None:
    graph = _tree(tmp_path, {
        "pkg/__init__.py": "from .a import A\n",
        "pkg/a.py": "A = 1\n",
        "pkg/b.py": "from . import a\nfrom . import A\n",
        "pkg/sub/__init__.py": "",
        "pkg/sub/c.py": "from .. import A\nfrom ..a import A as B\n",
    })
    modules = module_files(tmp_path, ("pkg",))
    assert own_package_imports(modules, graph) == ["pkg.b imports pkg", "pkg.sub.c imports pkg"]


def test_walker_passes_an_acyclic_tree(tmp_path: Path) -> None:
    graph = _tree(tmp_path, {
        "pkg/__init__.py": "from .a import A\nfrom .b import B\n",
        "pkg/a.py": "A = 1\n",
        "pkg/b.py": "from .a import A\nB = A\n",
    })
    assert cycles(graph) == []


def test_the_walker_sees_the_real_tree(tree: tuple[dict[str, Path], dict[str, set[str]]]) -> None:
    """Guards the main test against walking nothing: known edges of the tree are present."""
    graph = tree[1]
    assert len(graph) > 50
    assert "gcpc_core.store" in graph["gcpc_core.judge.scoring"]
    assert "gcpc_core.judge.units" in graph["gcpc_core.judge.batch"]


# All SQL lives under gcpc_core/store/: no other module of the shipped tree runs a statement or
# holds one in a string. Tests are left out: they build DBs of older schemas and corrupt rows on
# purpose, which takes SQL.

SQL_STATEMENT = re.compile(
    r"\b(SELECT\b[\s\S]+?\bFROM|INSERT\s+(?:OR\s+\w+\s+)?INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM"
    r"|CREATE\s+(?:TEMP\s+|UNIQUE\s+)?(?:TABLE|INDEX|TRIGGER|VIEW))\b"
)
SQL_CALLS = frozenset({"execute", "executemany", "executescript", "rows_where", "count_where", "delete_where"})
"""Methods that take SQL text: the sqlite3 cursor's, and sqlite-utils' that take a WHERE clause."""
SHIPPED = ("gcpc_core", "annotations", "pages", "bench")


def sql_outside_the_store(root: Path = ROOT) -> list[str]:
    """`path:line what` for every SQL call or SQL statement string outside `gcpc_core/store/`."""
    files = [p for d in SHIPPED for p in sorted((root / d).rglob("*.py"))] + [root / "app.py"]
    found = []
    for path in files:
        rel = path.relative_to(root)
        if rel.parts[:2] == ("gcpc_core", "store") or not path.is_file():
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in SQL_CALLS:
                found.append(f"{rel}:{node.lineno} .{node.func.attr}()")
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and SQL_STATEMENT.search(node.value):
                found.append(f"{rel}:{node.lineno} {SQL_STATEMENT.search(node.value).group(0)[:40]!r}")  # type: ignore[union-attr]
    return found


def test_no_sql_outside_the_store() -> None:
    offenders = sql_outside_the_store()
    assert not offenders, "SQL belongs in a repository of gcpc_core/store/:\n" + "\n".join(offenders)


def test_the_sql_check_finds_planted_sql(tmp_path: Path) -> None:
    files = {
        "gcpc_core/store/db.py": 'db.execute("SELECT * FROM trials")\n',
        "gcpc_core/review/page.py": "def f(store):\n    return store.db.execute('SELECT 1')\n",
        "annotations/x.py": 'Q = f"DELETE FROM annotations WHERE id = {1}"\n',
        "pages/p.py": 'rows = db["t"].rows_where("a = ?", [1])\n',
        "bench/b.py": 'S = """\n  INSERT OR REPLACE INTO scores (a) VALUES (?)\n"""\n',
        "app.py": 'TEXT = "select what you want from the list; update the set"\n',
    }
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text, encoding="utf-8")
    found = sql_outside_the_store(tmp_path)
    assert sorted(f.split(" ")[0] for f in found) == [
        "annotations/x.py:1", "bench/b.py:1", "gcpc_core/review/page.py:2", "pages/p.py:1"]
    assert "gcpc_core/review/page.py:2 .execute()" in found and "pages/p.py:1 .rows_where()" in found


def shared_test_basenames(root: Path) -> dict[str, list[str]]:
    """Test file names that occur in more than one folder under `root`, with those files: pytest imports
    test files without `__init__.py` by their base name, so a second file of one name either fails the
    collection or shadows the first one's helpers."""
    seen: dict[str, list[str]] = {}
    for path in sorted(root.rglob("test_*.py")):
        seen.setdefault(path.name, []).append(str(path.relative_to(root)))
    return {name: paths for name, paths in seen.items() if len(paths) > 1}


def test_test_file_names_are_unique_across_tests() -> None:
    assert len(list((ROOT / "tests").rglob("test_*.py"))) > 20  # the walk reaches the suite
    assert shared_test_basenames(ROOT / "tests") == {}


def test_the_name_check_finds_a_planted_twin(tmp_path: Path) -> None:
    for folder in ("a", "b/c"):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "test_same.py").write_text("")
    (tmp_path / "a" / "test_other.py").write_text("")
    assert shared_test_basenames(tmp_path) == {"test_same.py": ["a/test_same.py", "b/c/test_same.py"]}
