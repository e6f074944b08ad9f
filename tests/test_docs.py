"""The docs and docstrings name only what exists: every backticked `Store.x` and `store.<repo>.<method>`, every
relative Markdown link (and its `#anchor`), every `*.md` path a docstring or comment mentions and every
backticked path into the repository's folders and dotted name of our packages; and the layer table of
docs/design.md is the real import graph.

Why: the store moved from one class to a repository per stage, and a design note the repository never held
was cited by a dozen modules; names in prose are not checked by any import, so they rot silently. The
checkers are small pure functions over text (planted-text tests below show each can fail); the scans feed
them every Markdown file of `docs/` plus `README.md`, and every docstring and comment of `gcpc_core/`,
`annotations/`, `pages/` and `app.py`.
"""

from __future__ import annotations

import ast
import importlib
import io
import re
import tokenize
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from gcpc_core.store import Store
from gcpc_core.store.common import Repository

ROOT = Path(__file__).resolve().parent.parent
CODE_DIRS = ("gcpc_core", "annotations", "pages")

CODE_SPAN = re.compile(r"`([^`\n]+)`")
STORE_REF = re.compile(r"(?<![\w./-])(Store|store)\.([A-Za-z_]\w*)(?:\.([A-Za-z_]\w*))?")
"""`Store.x`, `store.x` and `store.x.y` inside a code span; `gcpc_core.store.…` and `…/store.py` are
module paths, not attributes (the look-behind leaves them out)."""
MD_LINK = re.compile(r"!?\[[^\]\n]*\]\(([^)\s]+)\)")
MD_PATH = re.compile(r"(?<![\w./<>*-])((?:[\w.-]+/)*[\w-]+\.md)\b(?:#([\w-]+))?")
"""A `*.md` path in prose, with its `#anchor` if one follows."""
NOT_OURS = frozenset({"instruction.md", "report.md", "SKILL.md", "skill.md", "CHANGES.md"})
"""`*.md` names docstrings mention that are no file of this repository: a task's `instruction.md`, the
report the `report` verb writes, a Skill's `SKILL.md`, the demo corpus's `CHANGES.md`."""
DOTTED = re.compile(r"(?<![\w./-])((?:gcpc_core|annotations)(?:\.[A-Za-z_]\w*)+)(?![\w/-])")
"""A dotted name in a code span that starts at one of our packages: `gcpc_core.project_frames.frames_from_store`."""
FILE_SUFFIXES = ("py", "md", "yaml", "json", "toml", "txt")
"""`annotations.py` in a code span is a file name, not a dotted name."""
REPO_PATH = re.compile(r"(?<![\w./-])((?:gcpc_core|annotations|pages|tests|rules|docs|bench)/[\w./-]*)")
"""A path into one of the repository's folders, inside a code span."""
TASK_PATHS = frozenset({"tests/test.sh", "tests/test_outputs.py"})
"""Paths inside a benchmark task's folder (its verifier), not this repository's `tests/`."""
MD_HOMES = ("", "docs", "rules")
"""Where a bare `name.md` in a docstring may live: the repository root, `docs/`, `rules/`."""


# ---- the checkers: pure functions over text -----------------------------------------------------------


def store_refs(text: str) -> list[str]:
    """Every `Store.x` / `store.x[.y]` written inside a backticked code span of `text`."""
    return [m.group(0) for span in CODE_SPAN.findall(text) for m in STORE_REF.finditer(span)]


def store_ref_problem(ref: str, store: Any) -> str | None:
    """Why `ref` names nothing on `store` (a real `Store`: its repositories are set in `__init__`), or None.

    `Store.x` and `store.x` need an attribute `x` of the store; `store.x.y` with `x` a repository needs `y`
    on that repository (past a non-repository attribute, such as `store.db`, nothing more is checked).
    """
    _, attr, member = STORE_REF.fullmatch(ref).groups()  # type: ignore[union-attr]
    if not hasattr(store, attr):
        return f"{ref}: Store has no attribute {attr!r} (repositories: {', '.join(repositories(store))})"
    target = getattr(store, attr)
    if member is not None and isinstance(target, Repository) and not hasattr(target, member):
        return f"{ref}: store.{attr} ({type(target).__name__}) has no attribute {member!r}"
    return None


def repositories(store: Any) -> list[str]:
    """The names of the store's repository attributes (`trials`, `judging`, …)."""
    return [name for name, value in vars(store).items() if isinstance(value, Repository)]


def slug(heading: str) -> str:
    """GitHub's anchor of a Markdown heading: lower case, punctuation but `-` and `_` dropped, spaces → `-`."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(markdown: str) -> set[str]:
    """The `#anchors` of a Markdown text's headings (outside fenced code)."""
    return {slug(m.group(1)) for m in re.finditer(r"^#{1,6}\s+(.+?)\s*#*\s*$", strip_fences(markdown), re.M)}


def strip_fences(markdown: str) -> str:
    """`markdown` without its fenced code blocks (a `# comment` in a shell block is no heading)."""
    return re.sub(r"^(```|~~~).*?^\1[^\n]*$", "", markdown, flags=re.M | re.S)


def link_problems(markdown: str, here: Path, read: Callable[[Path], str | None]) -> list[str]:
    """Each relative link of `markdown` (a file in folder `here`) whose target or `#anchor` does not exist.

    `read(path)` is the text of a Markdown file, or None when no such file or folder exists (a folder
    reads as ""). Links to web addresses and `mailto:` are left alone; `#anchor` alone is this file's.
    """
    problems = []
    for target in MD_LINK.findall(strip_fences(markdown)):
        if re.match(r"[a-z][a-z0-9+.-]*:", target, re.I):
            continue
        path, _, anchor = target.partition("#")
        text = markdown if not path else read(here / path)
        if text is None:
            problems.append(f"({target}): no file {path}")
        elif anchor and (not path or path.endswith(".md")) and anchor not in anchors(text):
            problems.append(f"({target}): {path or 'this file'} has no heading #{anchor}")
    return problems


def md_path_problems(text: str, bases: Sequence[Path], read: Callable[[Path], str | None]) -> list[str]:
    """Each `*.md` path `text` mentions that is no file under any of `bases` (the repository root; for a
    Markdown file also its folder), or whose `#anchor` is no heading of it (globs and the names of
    `NOT_OURS` excepted; a bare name may live in any of `MD_HOMES`). `read` is as for `link_problems`."""
    problems = []
    for path, anchor in MD_PATH.findall(text):
        if Path(path).name in NOT_OURS:
            continue
        homes = [base / home / path for base in bases for home in ([""] if "/" in path else MD_HOMES)]
        found = next((t for t in map(read, homes) if t is not None), None)
        if found is None:
            problems.append(f"{path}: no such file")
        elif anchor and anchor not in anchors(found):
            problems.append(f"{path}#{anchor}: no such heading")
    return problems


def repo_path_problems(text: str, root: Path, exists: Callable[[Path], bool]) -> list[str]:
    """Each backticked path into a folder of the repository at `root` (`gcpc_core/store/db.py`, `docs/`)
    that does not exist; a glob or `<placeholder>` (`rules/*.md`, `pages/<page>.py`) and `TASK_PATHS`
    are left alone."""
    problems = []
    for span in CODE_SPAN.findall(text):
        for m in REPO_PATH.finditer(span):
            path = m.group(1).rstrip(".")
            if span[m.end():m.end() + 1] in ("*", "<", "{") or path in TASK_PATHS:
                continue
            if not exists(root / path):
                problems.append(f"{path}: no such file or folder")
    return problems


def dotted_names(text: str) -> list[str]:
    """Every dotted name of our packages written in a code span of `text` (file names left out)."""
    return [m.group(1) for span in CODE_SPAN.findall(text) for m in DOTTED.finditer(span)
            if m.group(1).rpartition(".")[2] not in FILE_SUFFIXES]


def dotted_problem(name: str) -> str | None:
    """Why `name` (`package.module.attribute…`) names nothing importable, or None: its longest importable
    module prefix, then attributes (or submodules) one by one."""
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for j, attr in enumerate(parts[i:], start=i):
            if hasattr(obj, attr):
                obj = getattr(obj, attr)
                continue
            try:
                obj = importlib.import_module(".".join(parts[:j + 1]))
            except ImportError:
                return f"{name}: {'.'.join(parts[:j])} has no {attr!r}"
        return None
    return f"{name}: no such module"


# ---- the texts scanned ------------------------------------------------------------------------------


def doc_files(root: Path = ROOT) -> list[Path]:
    return [*sorted((root / "docs").rglob("*.md")), root / "README.md"]


def code_files(root: Path = ROOT) -> list[Path]:
    return [p for d in CODE_DIRS for p in sorted((root / d).rglob("*.py"))] + [root / "app.py"]


def prose_of(source: str) -> Iterator[tuple[int, str]]:
    """(line, text) of every docstring — a string standing alone as a statement: modules', classes',
    functions' and the attribute docstrings after an assignment — and every comment of Python `source`."""
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, str)):
            yield node.lineno, node.value.value
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            yield tok.start[0], tok.string


def texts(root: Path = ROOT) -> Iterator[tuple[str, str, bool]]:
    """(where, text, is Markdown) of every doc file and every docstring and comment of the code."""
    for path in doc_files(root):
        yield str(path.relative_to(root)), path.read_text(encoding="utf-8"), True
    for path in code_files(root):
        for line, text in prose_of(path.read_text(encoding="utf-8")):
            yield f"{path.relative_to(root)}:{line}", text, False


def read_md(path: Path) -> str | None:
    if path.is_dir():
        return ""
    if not path.is_file():
        return None
    return path.read_text(encoding="utf-8") if path.suffix == ".md" else ""


Scanned = list[tuple[str, str, bool]]


@pytest.fixture(scope="module")
def scanned() -> Scanned:
    """`texts()`, read once for all the checks of this module."""
    return list(texts())


@pytest.fixture(scope="module")
def real_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    """A real `Store` on an empty file: its repositories are instance attributes, set in `__init__`."""
    store = Store(tmp_path_factory.mktemp("docs") / "project.db")
    yield store
    store.close()


# ---- the checks -------------------------------------------------------------------------------------


def test_every_store_reference_names_a_real_attribute(real_store: Store, scanned: Scanned) -> None:
    refs = [(where, ref) for where, text, _ in scanned for ref in store_refs(text)]
    problems = [f"{where}: {p}" for where, ref in refs if (p := store_ref_problem(ref, real_store))]
    assert len(refs) >= 10, f"the scan found only {refs}: it cannot be checking the docs"
    assert not problems, "\n".join(problems)


def test_every_relative_markdown_link_resolves() -> None:
    docs = {p: p.read_text(encoding="utf-8") for p in doc_files()}
    bad = [f"{p.relative_to(ROOT)}: {problem}" for p, text in docs.items()
           for problem in link_problems(text, p.parent, read_md)]
    n_links = sum(len(MD_LINK.findall(text)) for text in docs.values())
    assert len(docs) >= 5 and n_links >= 10, f"{len(docs)} files, {n_links} links: the scan is not seeing the docs"
    assert not bad, "\n".join(bad)


def test_every_md_path_in_a_docstring_or_comment_exists(scanned: Scanned) -> None:
    prose = [(where, text) for where, text, markdown in scanned if not markdown]
    mentions = [path for _, text in prose for path, _ in MD_PATH.findall(text)]
    bad = [f"{where}: {p}" for where, text in prose for p in md_path_problems(text, [ROOT], read_md)]
    assert any(m.startswith("docs/") for m in mentions), f"no docs/*.md mentioned in any docstring: {mentions}"
    assert not bad, "\n".join(bad)


def test_every_md_path_a_doc_names_exists() -> None:
    """Not only links: a `rules/judge.md` in backticks, or `docs/scores.md` in prose, names a file too."""
    bad = [f"{p.relative_to(ROOT)}: {problem}" for p in doc_files()
           for problem in md_path_problems(p.read_text(encoding="utf-8"), [p.parent, ROOT], read_md)]
    assert not bad, "\n".join(bad)


def test_every_backticked_repository_path_exists(scanned: Scanned) -> None:
    """`gcpc_core/store.py` stayed in the README after the store became a package: paths rot like names."""
    n = sum(len(REPO_PATH.findall(" ".join(CODE_SPAN.findall(text)))) for _, text, _ in scanned)
    bad = [f"{where}: {p}" for where, text, _ in scanned for p in repo_path_problems(text, ROOT, Path.exists)]
    assert n >= 50, f"only {n} repository paths found: the scan is not seeing the docs"
    assert not bad, "\n".join(bad)


def test_every_backticked_dotted_name_of_ours_imports(scanned: Scanned) -> None:
    names = [(where, name) for where, text, _ in scanned for name in dotted_names(text)]
    bad = [f"{where}: {p}" for where, name in names if (p := dotted_problem(name)) is not None]
    assert len(names) >= 20, f"only {names}: the scan is not seeing the docs"
    assert not bad, "\n".join(bad)


def test_design_doc_is_linked_from_the_readme() -> None:
    """docs/design.md is where code references to the design point: the README, the way in, links it."""
    assert "(docs/design.md)" in (ROOT / "README.md").read_text(encoding="utf-8")


# ---- the checkers can fail: planted texts -----------------------------------------------------------


PLANTED = """
See `Store.no_such_method` and `store.trials.no_such_read`, and `store.nowhere`; `store.trials.tasks`,
`store.db.execute`, `Store.atomic`, `gcpc_core.store.Store` and `gcpc_core/store.py` are fine.
Read [the design](design.md#the-pipeline), [gone](nope.md), [no heading](design.md#no-such-heading),
[here](#a-heading), [web](https://example.org/x.md) and [missing folder](nowhere/).
Names: `gcpc_core.project_frames.frames_from_store`, `annotations.frames.frames_from_store`, `gcpc_core.nope`,
`annotations.py`, `gcpc_core.store.Store.atomic`.
Paths: `gcpc_core/store.py`, `gcpc_core/store/db.py`, `pages/<page>.py`, `rules/*.md`, `tests/test.sh`, `docs/`.
Code: DESIGN.md, docs/nope.md, docs/design.md#the-pipeline, docs/design.md#gone, instruction.md, `rules/*.md`,
rules/judge.md.

# A heading

```bash
[in a fence](fenced-nope.md)
```
"""


def test_the_checkers_report_what_is_planted(real_store: Store, tmp_path: Path) -> None:
    refs = store_refs(PLANTED)
    assert refs == ["Store.no_such_method", "store.trials.no_such_read", "store.nowhere", "store.trials.tasks",
                    "store.db.execute", "Store.atomic"]
    problems = [p for r in refs if (p := store_ref_problem(r, real_store))]
    assert [p.split(":")[0] for p in problems] == ["Store.no_such_method", "store.trials.no_such_read",
                                                   "store.nowhere"]

    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "design.md").write_text("# Design\n\n## The pipeline\n", encoding="utf-8")
    (tmp_path / "rules").mkdir()
    (tmp_path / "rules" / "judge.md").write_text("x", encoding="utf-8")
    links = link_problems(PLANTED, tmp_path / "docs", read_md)
    assert links == ["(nope.md): no file nope.md", "(design.md#no-such-heading): design.md has no heading "
                     "#no-such-heading", "(nowhere/): no file nowhere/"]

    assert [dotted_problem(n) for n in dotted_names(PLANTED)] == [
        None, None, "annotations.frames.frames_from_store: annotations.frames has no 'frames_from_store'",
        "gcpc_core.nope: gcpc_core has no 'nope'", None]
    assert repo_path_problems(PLANTED, ROOT, Path.exists) == ["gcpc_core/store.py: no such file or folder"] * 2

    paths = md_path_problems(PLANTED, [tmp_path], read_md)
    assert paths == ["nope.md: no such file", "design.md#no-such-heading: no such heading", "DESIGN.md: no such file",
                     "docs/nope.md: no such file", "docs/design.md#gone: no such heading",
                     "fenced-nope.md: no such file"]


def test_slugs_are_githubs() -> None:
    assert slug("How to add a judge") == "how-to-add-a-judge"
    assert slug("Packages and what each may import") == "packages-and-what-each-may-import"
    assert slug("`gcpc-jsonl` (version 1): GCPC's own format") == "gcpc-jsonl-version-1-gcpcs-own-format"
    assert anchors("# A\n```\n# not a heading\n```\n## B c\n") == {"a", "b-c"}


# ---- the layer table of docs/design.md is the real import graph -----------------------------------------

LAYER_HEADER = "| layer | unit | imports (of ours) |"
APP = "app"
"""The unit `app.py` and `pages/` form in the table (above every package)."""


def unit_name(short: str) -> str:
    """The architecture test's unit of a name in the table: `store` → `gcpc_core.store`; `app.py` and
    `pages/` → the app."""
    if short in ("app.py", "pages/"):
        return APP
    return short if short == "annotations" else f"gcpc_core.{short}"


def parse_layers(markdown: str) -> dict[str, tuple[float, set[str]]]:
    """unit → (layer, the units its row lists as imports) from the layer table of `markdown` (the rows after
    `LAYER_HEADER` up to the first line that is no table row). The app's layer is above every number."""
    lines = markdown[markdown.index(LAYER_HEADER):].splitlines()[2:]
    table: dict[str, tuple[float, set[str]]] = {}
    for line in lines:
        if not line.startswith("|"):
            break
        layer, units, imports = (cell.strip() for cell in line.strip("|").split("|"))
        level = float("inf") if layer == APP else float(layer)
        allowed = {unit_name(n) for n in CODE_SPAN.findall(imports)}
        for name in CODE_SPAN.findall(units):
            table[unit_name(name)] = (level, allowed)
    return table


def layer_problems(table: dict[str, tuple[float, set[str]]], graph: dict[str, set[str]]) -> list[str]:
    """What in `graph` (unit → units it imports) the table does not allow, and rows that are no layering:
    a unit missing from the table, an import its row does not list, a listed unit of the same layer or
    above, a listed name that is no unit."""
    problems = [f"{unit}: not in the table" for unit in sorted(graph) if unit not in table]
    for unit, (level, allowed) in sorted(table.items()):
        if unit not in graph:
            problems.append(f"{unit}: in the table but no unit of the code")
            continue
        problems += [f"{unit} imports {dep}, which its row does not list" for dep in sorted(graph[unit] - allowed)]
        for dep in sorted(allowed):
            if dep not in table:
                problems.append(f"{unit}: lists {dep}, which is no unit")
            elif table[dep][0] >= level:
                problems.append(f"{unit} (layer {level:g}) lists {dep} of layer {table[dep][0]:g}: not a lower layer")
    return problems


def real_units(root: Path = ROOT) -> dict[str, set[str]]:
    """The package graph `tests/test_architecture.py` checks, plus the app (`app.py` and `pages/`). The
    package `__init__` of `gcpc_core` (empty) is no unit of the table."""
    from test_architecture import import_graph, imports_of, module_files, package_graph, unit_of

    modules = module_files(root)
    graph = package_graph(import_graph(modules))
    graph.pop("gcpc_core", None)
    graph[APP] = {unit_of(t) for p in [root / "app.py", *sorted((root / "pages").glob("*.py"))]
                  for t in imports_of("pages.page", p, modules)}
    return graph


def test_the_layer_table_is_the_real_import_graph() -> None:
    table = parse_layers((ROOT / "docs" / "design.md").read_text(encoding="utf-8"))
    graph = real_units()
    assert len(table) > 20 and len(graph) > 20 and "gcpc_core.store" in graph["gcpc_core.judge"]
    problems = layer_problems(table, graph)
    assert not problems, "docs/design.md's layer table and the imports disagree:\n" + "\n".join(problems)


def test_the_layer_check_reports_what_is_planted() -> None:
    table = parse_layers(f"""
{LAYER_HEADER}
| --- | --- | --- |
| 0 | `models` | nothing |
| 1 | `store` | `models` |
| 2 | `judge` | `store`, `ghost` |
| 2 | `llm` | `judge` |

after the table: `cli` is not read
""")
    graph = {"gcpc_core.models": set(), "gcpc_core.store": {"gcpc_core.models", "gcpc_core.llm"},
             "gcpc_core.judge": {"gcpc_core.store"}, "gcpc_core.llm": {"gcpc_core.judge"}, "gcpc_core.cli": set()}
    assert layer_problems(table, graph) == [
        "gcpc_core.cli: not in the table",
        "gcpc_core.judge: lists gcpc_core.ghost, which is no unit",
        "gcpc_core.llm (layer 2) lists gcpc_core.judge of layer 2: not a lower layer",
        "gcpc_core.store imports gcpc_core.llm, which its row does not list",
    ]
