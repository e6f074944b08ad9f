"""`python -m gcpc_core VERB …`: the command line over the pipeline stages.

Each verb is a thin wrapper: parse arguments, call one public function of a
stage module, print a summary. Exit codes follow DESIGN.md. The verbs live by
area (`project`, `checklists`, `judging`, `study`, `llm`); their shared options and
checks in `common`.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from . import checklists, judging, llm, project, study
from .common import Exit

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m gcpc_core",
        description="GCPC: grounded checklist partial credit for agent trajectories.",
    )
    sub = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
    for add_verb in (
        project.add_import, project.add_info, project.add_export,
        checklists.add_validate, checklists.add_checklist, checklists.add_synthesize,
        judging.add_judge, judging.add_score, judging.add_report, judging.add_perturb, judging.add_batch,
        project.add_demo, study.add_study, llm.add_llm,
    ):  # in the order `--help` lists them
        add_verb(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except Exit as stop:
        return stop.code
