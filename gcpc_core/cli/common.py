"""What every verb shares: its options, opening the project DB, checking the endpoint, failing.

A check that fails prints `VERB: message` on stderr and raises `Exit`, which `main` turns into
the exit code, so a verb body reads straight through instead of testing for None at each step.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NoReturn, overload

if TYPE_CHECKING:
    from ..store import Store

__all__ = [
    "DEFAULT_SEED",
    "ENDPOINT_FROM",
    "FORMATS",
    "ITEM_JUDGE_CHOICES",
    "JUDGE_CHOICES",
    "Deferred",
    "Exit",
    "add_concurrency",
    "add_db",
    "add_deprecated",
    "add_force",
    "add_format",
    "add_limit",
    "add_model",
    "add_quiet",
    "add_seed",
    "add_verb",
    "count",
    "fail",
    "open_db",
    "reported",
    "require_llm",
]

MODEL_HELP = "model name (default: $GCPC_MODEL)"
ENDPOINT_FROM = "Endpoint from OPENAI_BASE_URL / OPENAI_API_KEY, model from --model or GCPC_MODEL."
"""How every LLM verb's description says where the endpoint and model come from."""
DEFAULT_SEED = 0
"""The seed of every verb whose seed has a default (the demo corpus has its own, `demo.DEMO_SEED`)."""
FORMATS = ("jsonl", "csv")
"""Row formats the exporting verbs write."""


class Exit(Exception):
    """Ends a verb with `code`; its message is already on stderr."""

    def __init__(self, code: int):
        super().__init__(code)
        self.code = code


def fail(verb: str, message: object, *, code: int = 2) -> NoReturn:
    """Say why the verb stops; 2 is an unusable setup or input (docs/design.md#exit-codes)."""
    print(f"{verb}: {message}", file=sys.stderr)
    raise Exit(code)


@contextmanager
def reported(verb: str, *errors: type[Exception], finished: str | None = None) -> Iterator[None]:
    """Expected failures of the work inside become `verb: message` and exit 2.

    With `finished` (what a resumable run stores as it goes), Ctrl-C exits 130 and says a rerun resumes.
    """
    try:
        yield
    except errors as exc:
        fail(verb, exc)
    except KeyboardInterrupt:
        if finished is None:
            raise
        fail(verb, f"interrupted; finished {finished} are stored, rerun the same command to resume", code=130)


def open_db(verb: str, db: Path, *, create: bool = False) -> Store:
    """The existing project DB (a mistyped path must not silently create an empty project), or with
    `create` a new one if missing. A DB that a newer GCPC wrote is refused, naming it and both versions."""
    from ..store import SchemaTooNew, Store

    if not create and not Path(db).is_file():
        fail(verb, f"{db}: no such project DB")
    try:
        return Store(db)
    except SchemaTooNew as exc:
        fail(verb, exc)


class Deferred(Sequence[str]):
    """Choices that a stage defines (the registered judges, the export tables), read from it only when
    argparse checks a value or lists them — parsing that verb, or its `--help` — so that building the
    whole parser imports no stage (see `gcpc_core.defaults`). Give the option a `metavar` (argparse
    lists the choices of one without it while the parser is built) and `%(choices)s` in its help."""

    def __init__(self, read: Callable[[], Sequence[str]]) -> None:
        self._read = read

    @property
    def _names(self) -> tuple[str, ...]:
        return tuple(self._read())  # read on every use: the judge registry is live

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[str, ...]: ...

    def __getitem__(self, index: int | slice) -> str | tuple[str, ...]:
        return self._names[index]

    def __len__(self) -> int:
        return len(self._names)


def _judges() -> Sequence[str]:
    from ..judge.registry import JUDGES

    return JUDGES


def _item_judges() -> Sequence[str]:
    from ..judge.registry import ITEM_JUDGES

    return ITEM_JUDGES


JUDGE_CHOICES = Deferred(_judges)
"""`--judge` of a verb that takes any registered judge."""
ITEM_JUDGE_CHOICES = Deferred(_item_judges)
"""`--judge` of a verb that reads item verdicts."""


def require_llm(verb: str, model: str | None) -> None:
    """Stop before any work when the endpoint or model is not configured, naming what to set."""
    from ..llm import llm_status

    ok, reason = llm_status(model)
    if not ok:
        fail(verb, reason)


class HelpFormatter(argparse.HelpFormatter):
    """argparse's formatter, except that a paragraph with an indented line (the `Example:` block of
    every verb) is kept as written: a command line rewrapped to the terminal would no longer paste."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        return "\n\n".join(
            "\n".join(indent + line for line in paragraph.splitlines())
            if any(line.startswith(" ") for line in paragraph.splitlines())
            else super(HelpFormatter, self)._fill_text(paragraph, width, indent)
            for paragraph in text.split("\n\n"))


EXAMPLE_HEADING = "Example:"
"""The line that opens every verb's example in its `--help` (the CLI test finds the example by it)."""


def add_verb(sub: argparse._SubParsersAction, name: str, *, help: str, description: str, example: str,
             **kwargs: Any) -> argparse.ArgumentParser:
    """A verb's parser, its `--help` ending with an example command line (as sqlite-utils' commands do):
    `example` is what follows the verb, e.g. `--db project.db --judge probe`; the test parses it."""
    return sub.add_parser(name, help=help, description=description, formatter_class=HelpFormatter,
                          epilog=f"{EXAMPLE_HEADING}\n  %(prog)s {example}", **kwargs)


def count(text: str) -> int:
    """An option's count: a whole number, 0 included (0 items is a meaningful request), never negative."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, not {value}")
    return value


LIMIT_MEANING = "(default: all; 0: none)"
"""What every `--limit` says about its default and 0: absent is everything, 0 is nothing (never "all")."""


def add_limit(p: argparse.ArgumentParser, what: str) -> None:
    """`--limit N`: `what` names the N things done or shown (`judge at most N trajectories now`)."""
    p.add_argument("--limit", type=count, metavar="N", help=f"{what} {LIMIT_MEANING}")


def add_db(p: argparse.ArgumentParser, help: str = "project DB file", *, required: bool = True) -> None:
    p.add_argument("--db", type=Path, required=required, help=help)


def add_model(p: argparse.ArgumentParser, help: str = MODEL_HELP) -> None:
    p.add_argument("--model", help=help)


def add_concurrency(p: argparse.ArgumentParser, what: str = "requests") -> None:
    """`--concurrency`, default None: the LLM config then takes GCPC_LLM_CONCURRENCY, else its default."""
    from ..defaults import DEFAULT_CONCURRENCY, ENV_CONCURRENCY

    p.add_argument("--concurrency", type=int, metavar="N", default=None,
                   help=f"parallel {what} (default: {ENV_CONCURRENCY}, else {DEFAULT_CONCURRENCY})")


def add_force(p: argparse.ArgumentParser, help: str) -> None:
    p.add_argument("--force", action="store_true", help=help)


def add_quiet(p: argparse.ArgumentParser) -> None:
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def add_seed(p: argparse.ArgumentParser, help: str, *, default: int | None = DEFAULT_SEED) -> None:
    """`--seed`; with `default=None` it must be given (a design frozen with its seed)."""
    if default is None:
        p.add_argument("--seed", type=int, required=True, help=help)
    else:
        p.add_argument("--seed", type=int, default=default, help=f"{help} (default %(default)s)")


def add_n_boot(p: argparse.ArgumentParser) -> None:
    p.add_argument("--n-boot", type=int, default=10_000, help="bootstrap draws (default %(default)s)")


def add_format(p: argparse.ArgumentParser) -> None:
    p.add_argument("--format", default=FORMATS[0], choices=FORMATS, help="output format (default %(default)s)")


class _Deprecated(argparse.Action):
    """An old spelling of an option: still accepted, hidden from `--help`, and warned about on stderr."""

    def __init__(self, option_strings: Sequence[str], dest: str, *, use: str,
                 kind: Literal["value", "flag", "comma list"], **kwargs: Any):
        super().__init__(option_strings, dest, nargs=0 if kind == "flag" else None, help=argparse.SUPPRESS,
                         default=argparse.SUPPRESS, **kwargs)
        self.use, self.kind = use, kind

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        print(f"{parser.prog}: {option_string} is deprecated; use {self.use}", file=sys.stderr)
        if self.kind == "flag":
            setattr(namespace, self.dest, True)
        elif self.kind == "comma list":
            given = [v.strip() for v in values.split(",") if v.strip()]
            setattr(namespace, self.dest, [*(getattr(namespace, self.dest, None) or []), *given])
        else:
            setattr(namespace, self.dest, values)


def add_deprecated(p: argparse.ArgumentParser, old: str, *, use: str, dest: str,
                   kind: Literal["value", "flag", "comma list"] = "value", type: Any = None) -> None:
    """Keep accepting `old` for the option now spelled `use` (same `dest`): a `value`, a `flag`, or a
    `comma list` whose items extend the repeatable new option."""
    p.add_argument(old, action=_Deprecated, dest=dest, use=use, kind=kind, type=type)
