"""The human-study verb: `study create|status|export|import|link|reassign`."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from .common import add_db, add_deprecated, add_format, add_seed, add_verb, fail, open_db, reported

if TYPE_CHECKING:
    from ..store import Store

__all__ = ["add_study"]


def _study_id(store: Store, given: str | None) -> str:
    """The study named, or the only study of the project."""
    ids = [s.id for s in store.studies.list()]
    if given is not None and given not in ids:
        fail("study", f"no study {given!r} (have: {', '.join(ids) or 'none'})")
    if given is None and len(ids) != 1:
        fail("study", f"give --study (have: {', '.join(ids) or 'none'})")
    return given or ids[0]


def _open_study(args: argparse.Namespace) -> tuple[Store, str]:
    store = open_db("study", args.db)
    return store, _study_id(store, args.study)


def _cmd_study_create(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from annotations import DesignError, DesignParams, create_study

    base_url = _links_base_url("study create", args.base_url)
    store = open_db("study", args.db)
    raters = tuple(args.rater) if args.rater else tuple(
        f"rater-{i + 1:02d}" for i in range(args.n_raters or args.raters_per_unit))
    with reported("study create", ValidationError, DesignError, ValueError):
        params = DesignParams(tasks=args.n_tasks, per_task=args.per_task, raters_per_unit=args.raters_per_unit,
                              seed=args.seed, raters=raters, pairs_per_task=args.pairs_per_task,
                              task_ids=tuple(args.task) if args.task else None)
        created = create_study(store, params, study_id=args.id, name=args.name, created_by=args.by)
    print(f"study {created.study_id} created and frozen")
    for line in created.design.summary_lines():
        print(line)
    print("rater links (`study link --show` shows one again, `study link` issues a new one):")
    for rater, link in created.links(base_url).items():
        print(f"  {rater}: {link}")
    return 0


def _cmd_study_status(args: argparse.Namespace) -> int:
    from annotations import agreement, disagreements, rater_progress, status_lines

    store = open_db("study", args.db)
    if args.study is None and len(store.studies.list()) != 1:
        for s in store.studies.list():
            tag = " (SIMULATED raters)" if s.is_simulated else ""
            print(f"{s.id}: {s.name}, {s.status}, created {s.created_at}{tag}")
        return 0
    study_id = _study_id(store, args.study)
    if args.json:
        alpha = [{**a.__dict__, "alpha": None if a.alpha != a.alpha else a.alpha} for a in agreement(store, study_id)]
        print(json.dumps({"study_id": study_id, "raters": rater_progress(store, study_id), "alpha": alpha,
                          "disagreements": disagreements(store, study_id)}, sort_keys=True))
    else:
        for line in status_lines(store, study_id):
            print(line)
    return 0


def _cmd_study_export(args: argparse.Namespace) -> int:
    from annotations import export_csv, export_jsonl

    store, study_id = _open_study(args)
    with reported("study export", ValueError):  # an answer over the free-text limit: named, nothing written
        text = (export_csv if args.format == "csv" else export_jsonl)(store, study_id, history=not args.current_only)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
        print(f"exported study {study_id} to {args.out}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


def _cmd_study_import(args: argparse.Namespace) -> int:
    from annotations import import_responses
    from annotations.exchange import DesignRecordError

    store = open_db("study", args.db)
    with reported("study import", OSError, UnicodeDecodeError):
        text = Path(args.file).read_text(encoding="utf-8")
    with reported("study import", DesignRecordError):  # names the file, the line and the problem; exit 2
        report = import_responses(store, text, study_id=args.study, allow_unassigned=args.allow_unassigned,
                                  source=str(args.file))
    for line in report.lines():
        print(line)
    return 0 if report.ok else 1


def _links_base_url(verb: str, given: str | None) -> str:
    """The base URL of rater links, refused (exit 2) while anyone reaching it would be admin."""
    from annotations import LinkRefused, check_links_allowed, default_base_url
    from annotations.tokens import ADMIN_TOKEN_ENV

    base_url = given or default_base_url()
    with reported(verb, LinkRefused):
        check_links_allowed(base_url, os.environ.get(ADMIN_TOKEN_ENV))
    return base_url


def _cmd_study_link(args: argparse.Namespace) -> int:
    from annotations import add_rater, invite_link, issue_link, rater_link

    base_url = _links_base_url("study link", args.base_url)
    store, study_id = _open_study(args)
    if args.show:
        with reported("study link", ValueError):  # an unusable link key (LinkKeyError), named
            link = rater_link(store, study_id, args.rater, base_url)
        if link is None:
            fail("study link", f"no link of {args.rater!r} can be shown again (none issued here, or the link key "
                 "changed): issue a new one with `study link` without --show")
        print(f"{args.rater}: {link}")
        return 0
    with reported("study link", KeyError, ValueError):
        token = (add_rater if args.new else issue_link)(store, study_id, args.rater)
    print(f"{args.rater}: {invite_link(token, base_url)}")
    return 0


def _cmd_study_reassign(args: argparse.Namespace) -> int:
    from annotations import reassign

    store, study_id = _open_study(args)
    with reported("study reassign", KeyError, ValueError):
        report = reassign(store, study_id, args.from_rater, args.to_rater)
    print(f"moved {len(report.moved)} unanswered items from {args.from_rater} to {args.to_rater}")
    for kind, target, reason in report.skipped:
        print(f"  skipped {kind} {target}: {reason}")
    return 0


def _add_db_and_study(s: argparse.ArgumentParser, study_help: str = "study id (default: the only study)") -> None:
    add_db(s)
    s.add_argument("--study", help=study_help)


def add_study(sub: argparse._SubParsersAction) -> None:
    p = add_verb(sub, "study", help="blinded human study: create, status, export, import, links",
                 example="create --db project.db --seed 7 --n-tasks 6 --rater ana --rater ben",
                 description="Design and run a blinded human study of progress ratings and pairwise "
                 "preferences: `create` samples and freezes a design and prints rater links; `status`, "
                 "`export`, `import`, `link` and `reassign` manage it.")
    study_sub = p.add_subparsers(dest="action", required=True, metavar="ACTION")

    s = add_verb(study_sub, "create", help="sample a design, freeze it and print rater links",
                 example="--db project.db --seed 7 --n-tasks 6 --per-task 4 --rater ana --rater ben --rater eve",
                 description="Sample trajectories per task stratified by outcome × condition, build "
                 "balanced within-task pairs with random left/right, assign each unit and pair to k "
                 "raters with balanced load and per-rater random order, and freeze it with its seed. "
                 "Prints the design (with every stratum shortfall) and each rater's invitation link.")
    add_db(s, "project DB file (trajectories imported)")
    s.add_argument("--n-tasks", type=int, default=12, help="tasks to sample (default %(default)s)")
    s.add_argument("--per-task", type=int, default=8, help="trajectories rated per task (default %(default)s)")
    s.add_argument("--raters-per-unit", type=int, default=3, help="k raters per unit and per pair (default %(default)s)")
    add_seed(s, "seed of every random choice of the design", default=None)
    s.add_argument("--rater", action="append", help="a rater name (repeat for several; default: rater-01 … rater-N)")
    add_deprecated(s, "--raters", use="--rater (repeated)", dest="rater", kind="comma list")
    s.add_argument("--n-raters", type=int, help="number of generated rater names when --rater is not given "
                   "(default: --raters-per-unit)")
    s.add_argument("--pairs-per-task", type=int, help="pairs per task (default: every within-task pair; 0: none)")
    s.add_argument("--task", action="append", help="only this task (repeatable)")
    s.add_argument("--name", help="human-readable study name")
    s.add_argument("--id", help="study id (default: study-<design sha prefix>)")
    s.add_argument("--by", help="creator recorded with the study")
    s.add_argument("--base-url", help="app URL for rater links (default: $GCPC_PUBLIC_URL, else the address of "
                   ".streamlit/config.toml, http://127.0.0.1:8501); a non-loopback URL needs $GCPC_ADMIN_TOKEN")
    s.set_defaults(func=_cmd_study_create)

    s = add_verb(study_sub, "status", help="progress per rater, live α, disagreements",
                 example="--db project.db --study study-1a2b3c --json",
                 description="Without --study (and several studies): list studies. Otherwise the "
                 "design, progress per rater, Krippendorff's α (ordinal ratings, nominal preferences) "
                 "and the number of units with high disagreement.")
    _add_db_and_study(s)
    s.add_argument("--json", action="store_true", help="one JSON object: raters, alpha, disagreements")
    s.set_defaults(func=_cmd_study_status)

    s = add_verb(study_sub, "export", help="export every response with the design (CSV or JSONL)",
                 example="--db project.db --format jsonl --out responses.jsonl",
                 description="CSV: one row per answer version with its design columns. JSONL: a "
                 "design record (params, units, pairs, guidelines, assignments) then one record per "
                 "answer version. `is_current` marks live answers.")
    _add_db_and_study(s)
    add_format(s)
    s.add_argument("--current-only", action="store_true", help="only current answers, no edit history")
    s.add_argument("--out", type=Path, help="output file (default: standard output)")
    s.set_defaults(func=_cmd_study_export)

    s = add_verb(study_sub, "import", help="import responses collected elsewhere (CSV or JSONL)",
                 example="--db project.db responses.jsonl",
                 description="Validate and add responses in the export's shape. Idempotent: importing "
                 "the same file twice adds nothing. A JSONL export recreates its study when missing. "
                 "Exit 0 when every row was accepted, 1 when some were rejected (listed with reason), 2 when a "
                 "design record is refused (checked against this project: units, raters, assignments, "
                 "guidelines; its blinding terms are added to the project's own): then nothing is "
                 "imported.")
    _add_db_and_study(s, "study of rows that do not name one")
    s.add_argument("file", type=Path, help="CSV or JSONL file")
    s.add_argument("--allow-unassigned", action="store_true", help="accept answers on items never assigned to the rater")
    s.set_defaults(func=_cmd_study_import)

    s = add_verb(study_sub, "link", help="issue a new invitation link for a rater",
                 example="--db project.db --rater ana --show",
                 description="Print a fresh invitation link for a rater; their old link stops working. "
                 "With --new, add the rater to the study first (empty queue: use `reassign`); with "
                 "--show, print their current link again. Links to a non-loopback address are refused "
                 "unless $GCPC_ADMIN_TOKEN is set.")
    _add_db_and_study(s)
    s.add_argument("--rater", required=True, help="rater name")
    s.add_argument("--new", action="store_true", help="add this rater to the study")
    s.add_argument("--show", action="store_true", help="show the rater's current link again (nothing changes)")
    s.add_argument("--base-url", help="app URL for rater links (default: $GCPC_PUBLIC_URL, else the address of "
                   ".streamlit/config.toml, http://127.0.0.1:8501); a non-loopback URL needs $GCPC_ADMIN_TOKEN")
    s.set_defaults(func=_cmd_study_link)

    s = add_verb(study_sub, "reassign", help="move a rater's unanswered items to another rater",
                 example="--db project.db --from ana --to ben",
                 description="Move every unanswered item of one rater's queue to the end of another's "
                 "(answers already given stay); items the other rater holds are skipped.")
    _add_db_and_study(s)
    s.add_argument("--from", dest="from_rater", required=True, help="rater giving up items")
    s.add_argument("--to", dest="to_rater", required=True, help="rater taking them")
    s.set_defaults(func=_cmd_study_reassign)
