"""What every verb shares: its options, opening the project DB, checking the endpoint, failing.

A check that fails prints `VERB: message` on stderr and raises `Exit`, which `main` turns into
the exit code, so a verb body reads straight through instead of testing for None at each step.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NoReturn

from ..store import Store

__all__ = [
    "ENDPOINT_FROM",
    "Exit",
    "add_concurrency",
    "add_db",
    "add_force",
    "add_model",
    "add_quiet",
    "fail",
    "open_db",
    "reported",
    "require_llm",
]

MODEL_HELP = "model name (default: $GCPC_MODEL)"
ENDPOINT_FROM = "Endpoint from OPENAI_BASE_URL / OPENAI_API_KEY, model from --model or GCPC_MODEL."
"""How every LLM verb's description says where the endpoint and model come from."""


class Exit(Exception):
    """Ends a verb with `code`; its message is already on stderr."""

    def __init__(self, code: int):
        super().__init__(code)
        self.code = code


def fail(verb: str, message: object, *, code: int = 2) -> NoReturn:
    """Say why the verb stops; 2 (DESIGN.md) is an unusable setup or input."""
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


def open_db(verb: str, db: Path) -> Store:
    """The existing project DB: a mistyped path must not silently create an empty project."""
    if not Path(db).is_file():
        fail(verb, f"{db}: no such project DB")
    return Store(db)


def require_llm(verb: str, model: str | None) -> None:
    """Stop before any work when the endpoint or model is not configured, naming what to set."""
    from ..llm import llm_status  # the LLM layer loads the openai client: only verbs that call it pay

    ok, reason = llm_status(model)
    if not ok:
        fail(verb, reason)


def add_db(p: argparse.ArgumentParser, help: str = "project DB file", *, required: bool = True) -> None:
    p.add_argument("--db", type=Path, required=required, help=help)


def add_model(p: argparse.ArgumentParser, help: str = MODEL_HELP) -> None:
    p.add_argument("--model", help=help)


def add_concurrency(p: argparse.ArgumentParser, default: int, what: str = "requests") -> None:
    p.add_argument("--concurrency", type=int, default=default, help=f"parallel {what} (default %(default)s)")


def add_force(p: argparse.ArgumentParser, help: str) -> None:
    p.add_argument("--force", action="store_true", help=help)


def add_quiet(p: argparse.ArgumentParser) -> None:
    p.add_argument("--quiet", action="store_true", help="no progress bar")
