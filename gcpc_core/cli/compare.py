"""Labelled judge runs on the command line: `compare` two runs, `labels` lists them, and the two options
about runs that other verbs share: `--label` names the run `judge` writes, `--run` chooses which run of a
judge kind a verb reads (default the most recent)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

from .common import add_db, add_limit, add_n_boot, add_seed, add_verb, fail, open_db, reported

if TYPE_CHECKING:
    from ..store import Store

__all__ = ["add_compare", "add_labels", "add_run_choice", "add_run_label", "chosen_labels"]

RUN_HELP = ("read this judge run (its label) instead of its judge's default (the most recent run); KIND=LABEL "
            "when a label names runs of two judges (`python -m gcpc_core labels --db …` lists them)")
"""What `--run` says wherever a verb reads judge runs."""


def add_run_label(p: argparse.ArgumentParser) -> None:
    """`judge --label NAME`: the name of the run being written (reading verbs choose runs with `--run`)."""
    p.add_argument("--label", help="name this judge run (default: derived from judge, model, prompt and rules "
                   "version); runs under other labels are kept side by side, rerunning a label resumes or "
                   "replaces it")


def add_run_choice(p: argparse.ArgumentParser, *, repeat: bool, note: str = "") -> None:
    """`--run LABEL`: which labelled run of a judge kind to read instead of its default; repeatable
    (one per judge) for a verb reading several judges, once for a verb working on one judge's run."""
    if repeat:
        p.add_argument("--run", action="append", default=[], metavar="LABEL",
                       help=f"{RUN_HELP}; repeat for several judges{note}")
    else:
        p.add_argument("--run", metavar="LABEL", help=f"{RUN_HELP}{note}")


def chosen_labels(verb: str, store: Store, names: Sequence[str]) -> dict[str, str] | None:
    """judge → label for the `--run` values of a verb; stops with the reason for an unknown one."""
    if not names:
        return None
    try:
        return store.judging.resolve_labels(names)
    except ValueError as exc:
        fail(verb, f"{store.path}: {exc}")


def _cmd_compare(args: argparse.Namespace) -> int:
    from ..project_frames import compare_project
    from ..analysis.frames import FrameContractError

    store = open_db("compare", args.db)
    with reported("compare", ValueError, FrameContractError):
        result = compare_project(store, args.a, args.b, n_boot=args.n_boot, seed=args.seed)
    if args.json:
        print(json.dumps(result.as_dict(), default=str))
        return 0
    print(result.headline())
    for note in result.notes:
        print(f"note: {note}")
    print("\nAUC vs official PASS (trajectories both runs scored)")
    print(result.auc[["judge", "n", "n_pass", "n_fail", "n_tasks", "auc", "ci_low", "ci_high", "note"]]
          .to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    print("\nraw verdicts on the items both judged (rows A, columns B)")
    print(result.confusion.to_string())
    print("\nevidence sensitivity of each run (perturbed Yes verdicts judged No / No or Abstain)")
    print(result.sensitivity[["judge", "label", "scope", "seed", "n", "share_no", "share_no_low", "share_no_high",
                              "share_no_or_abstain", "still_yes"]].to_string(index=False, float_format=lambda v: f"{v:.4f}")
          if len(result.sensitivity) else "(no perturbation results for either run: `perturb --run LABEL`)")
    shown = result.differing if args.limit is None else result.differing.head(args.limit)
    print(f"\n{len(result.differing)} items differ (showing {len(shown)})")
    print(shown.to_string(index=False) if len(shown) else "(none)")
    return 0


def _cmd_labels(args: argparse.Namespace) -> int:
    import pandas as pd

    store = open_db("labels", args.db)
    labelled = store.judging.labels()
    runs = pd.DataFrame([r.model_dump() for r in labelled])
    if args.json:
        defaults = store.judging.default_labels()
        print(json.dumps([{**r.model_dump(), "default": defaults.get(r.judge) == r.label} for r in labelled]))
        return 0
    if runs.empty:
        print("no judge runs yet: run `judge` first")
        return 0
    defaults = store.judging.default_labels()
    runs["default"] = [defaults.get(j) == lab for j, lab in zip(runs["judge"], runs["label"])]
    print(runs[["judge", "label", "model", "prompt_version", "n_trajectories", "last_at", "simulated", "default"]]
          .to_string(index=False))
    return 0


def add_compare(sub: argparse._SubParsersAction) -> None:
    p = add_verb(sub, "compare", help="two labelled judge runs side by side: AUC, agreement, differing items",
                 example="--db project.db --a gcpc:model-a --b gcpc:model-b --limit 10",
                 description="Compare judge run A with run B (two labels, e.g. two models of the same judge): "
                 "AUC vs official PASS of each on the trajectories both scored with the paired ΔAUC and its "
                 "task-clustered bootstrap interval; agreement of their raw item verdicts (share equal, "
                 "Cohen's κ) on the items both judged from the same checklist; the items where they differ. "
                 "No LLM calls. Exit 0 ok, 2 unknown label or unusable input.")
    add_db(p)
    p.add_argument("--a", required=True, metavar="LABEL", help="run A: its label (KIND=LABEL if ambiguous)")
    p.add_argument("--b", required=True, metavar="LABEL", help="run B: its label (KIND=LABEL if ambiguous)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    add_n_boot(p)
    add_seed(p, "bootstrap seed")
    add_limit(p, "print at most N differing items")
    p.set_defaults(func=_cmd_compare)


def add_labels(sub: argparse._SubParsersAction) -> None:
    p = add_verb(sub, "labels", help="list the labelled judge runs of a project", example="--db project.db --json",
                 description="One line per labelled judge run: judge, label, model, prompt version, "
                 "trajectories, last written, whether its verdicts are simulated, and whether it is its "
                 "judge's default (the most recent run not simulated). Exit 0.")
    add_db(p)
    p.add_argument("--json", action="store_true", help="print a JSON list")
    p.set_defaults(func=_cmd_labels)
