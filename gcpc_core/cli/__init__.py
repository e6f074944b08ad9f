"""`python -m gcpc_core VERB …`: the command line over the pipeline stages.

Each verb is a thin wrapper: parse arguments, call one public function of a
stage module, print a summary. Exit codes follow docs/design.md#exit-codes. The verbs live by
area (`project`, `checklists`, `judging`, `study`, `llm`, `app`); their shared options and
checks in `common`. The parser is built from the standard library alone, so `--help` and every
verb start at once; a verb imports the stages it calls when it runs.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Sequence

from . import app, checklists, compare, judging, llm, project, study, triage
from .common import Exit

__all__ = ["EXIT_BROKEN_PIPE", "build_parser", "gcpc", "main", "parse_args"]

EXIT_BROKEN_PIPE = 128 + signal.SIGPIPE
"""Exit code when the reader closed stdout early (`export … | head`): a shell's code for a command
ended by SIGPIPE, so a pipeline can still tell that the output was cut short."""


def build_parser(prog: str = "python -m gcpc_core") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog,
        description="GCPC: grounded checklist partial credit for agent trajectories.",
    )
    sub = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
    for add_verb in (
        project.add_import, project.add_info, project.add_export,
        checklists.add_validate, checklists.add_checklist, checklists.add_synthesize,
        judging.add_judge, judging.add_score, judging.add_report, judging.add_perturb, judging.add_batch,
        compare.add_compare, compare.add_labels,
        project.add_demo, study.add_study, triage.add_triage, llm.add_llm, app.add_app,
    ):  # in the order `--help` lists them
        add_verb(sub)
    return parser


def parse_args(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace:
    """The verb's arguments; options it does not know are an error, except that `app` passes them on to
    streamlit (so the CLI test parses every verb's help example exactly as `main` would)."""
    args, extra = parser.parse_known_args(argv)
    if extra and not hasattr(args, "streamlit_args"):
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    if extra:
        args.streamlit_args = extra
    return args


def main(argv: Sequence[str] | None = None, *, prog: str = "python -m gcpc_core") -> int:
    args = parse_args(build_parser(prog), argv)
    try:
        code = int(args.func(args))
        sys.stdout.flush()  # here, not at interpreter exit, so a closed pipe is caught below
        return code
    except Exit as stop:
        return stop.code
    except ValueError as exc:
        from ..store import StoredRowError  # here: the store is imported only by the verbs that open one

        if not isinstance(exc, StoredRowError):
            raise
        print(f"{args.verb}: {getattr(args, 'db', None) or 'the project DB'}: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # The reader stopped reading (`… | head`): end quietly. Python would flush stdout again at exit
        # and report that failure too, so stdout is pointed at /dev/null first.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE


def gcpc() -> int:
    """The `gcpc` command that `pip install -e .` installs: `main`, with usage lines naming it."""
    return main(prog="gcpc")
