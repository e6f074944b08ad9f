"""Project verbs: `import`, `info`, `export`, `demo`."""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from collections.abc import Iterable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from ..defaults import DEFAULT_MAX_LOG_BYTES, DEFAULT_PASS_THRESHOLD, DEMO_SEED
from .common import Deferred, add_db, add_format, add_quiet, add_seed, add_verb, fail, open_db, reported
from .compare import add_run_choice, chosen_labels

if TYPE_CHECKING:
    from ..store import Store

__all__ = ["add_demo", "add_export", "add_import", "add_info"]


def _cmd_import(args: argparse.Namespace) -> int:
    from ..ingest import load_condition_map
    from ..ingest.archive import ArchiveError, unpack_for_import
    from ..ingest.trials import TrialError
    from ..stages import recorded_import

    if args.tasks is None and args.trials is None:
        fail("import", "give --tasks and/or --trials")
    folders = {}
    for flag, given in (("--tasks", args.tasks), ("--trials", args.trials)):
        if given is not None and Path(given).is_file():
            try:
                folders[flag] = unpack_for_import(given, args.db)
            except (ArchiveError, OSError) as exc:
                fail("import", f"{flag} {given}: archive refused: {exc}")
            print(f"{flag} {given}: unpacked to {folders[flag]}")
        elif given is not None and not Path(given).is_dir():
            fail("import", f"{flag} {given}: not a folder or an archive file")
        else:
            folders[flag] = given
    with reported("import", TrialError, OSError):
        mapping = load_condition_map(args.conditions) if args.conditions else None
    report = recorded_import(
        open_db("import", args.db, create=True),
        tasks_dir=folders["--tasks"],
        trials_dir=folders["--trials"],
        condition_map=mapping,
        pass_threshold=args.pass_threshold,
        max_log_bytes=int(args.max_log_mb * 2**20),
        derive_outcome=args.derive_outcome,
        progress=not args.quiet,
    )
    for line in report.summary_lines():
        print(line)
    return 0


def _cmd_info(args: argparse.Namespace) -> int:
    store = open_db("info", args.db)
    info = {"db": str(args.db), "schema_version": store.schema_version, **store.project.counts()}
    info["demo"] = store.project.get_meta("is_demo") == "1"
    statuses = _task_statuses(store) if args.task_status else None
    if args.json:
        if statuses is not None:
            info["task_status"] = [asdict(s) for s in statuses]
        print(json.dumps(info, sort_keys=True))
        return 0
    for key, value in info.items():
        print(f"{key}: {value}")
    if statuses is not None:
        _print_statuses(statuses)
    return 0


def _task_statuses(store: Store) -> list:
    """The guided path per task (`gcpc_core.review.overview.task_status`), with the endpoint's state."""
    from ..llm import llm_status
    from ..review.overview import task_status

    return task_status(store, llm_ready=llm_status()[0])


def _print_statuses(statuses: list) -> None:
    """One block per task with trajectories (what exists, the next step and its command); the rest summed up."""
    active = [s for s in statuses if s.trajectories]
    print(f"\nper task ({len(active)} with trajectories):")
    for s in active:
        checklist = f"v{s.checklist_version} ({s.checklist_items} items)" if s.checklist_version else "none"
        print(f"  {s.task}: {s.trajectories} trajectories, {s.verifier_tests} verifier tests; checklist {checklist}; "
              f"judged {s.counts(s.judged)}; scored {s.counts(s.scored)}; audited items {s.audited_items}")
        if s.stale:
            print(f"    judged against an older checklist: {s.counts(s.stale)} (judging again updates them)")
        print(f"    next: {s.next_step}" + (f": {s.command}" if s.command else ""))
        if s.then:
            print(f"    then: {s.then}")
    idle = len(statuses) - len(active)
    if idle:
        print(f"  {idle} more task(s) without trajectories (import their trials to judge them)")


def _write_rows(rows: Iterable[dict], fmt: str, out: TextIO) -> int:
    from ..csv_safe import write_csv_rows

    count = 0
    if fmt == "jsonl":
        for row in rows:
            out.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")
            count += 1
        return count
    flat = ({k: json.dumps(v, ensure_ascii=False) if isinstance(v, (list, dict)) else v for k, v in row.items()}
            for row in rows)
    first = next(flat, None)
    if first is None:
        return 0
    return write_csv_rows(out, itertools.chain([first], flat), list(first))


def _export_tables() -> Sequence[str]:
    from ..export import EXPORTERS

    return tuple(EXPORTERS)


def _cmd_export(args: argparse.Namespace) -> int:
    from .. import export

    store = open_db("export", args.db)
    if args.all_runs and args.run:
        fail("export", "give --run or --all-runs, not both")
    with reported("export", ValueError):
        rows = export.export_rows(store, args.what, labels=chosen_labels("export", store, args.run),
                                  all_labels=args.all_runs)
    if args.out:
        with open(args.out, "w", encoding="utf-8", newline="") as fh:
            n = _write_rows(rows, args.format, fh)
        print(f"exported {n} {args.what} rows to {args.out}", file=sys.stderr)
    else:
        _write_rows(rows, args.format, sys.stdout)
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    from .. import demo
    from ..store import SchemaTooNew, Store

    if args.out is None and args.db is None:
        fail("demo", "give --out DIR and/or --db FILE")
    if args.out is not None:
        tasks_dir, trials_dir = demo.write_demo_corpus(Path(args.out), seed=args.seed)
        print(f"demo corpus (simulated data) written: {tasks_dir} and {trials_dir}")
    if args.db is not None:
        with reported("demo", SchemaTooNew):  # --db a newer GCPC wrote: named, left unchanged
            report = demo.build_demo_project(Path(args.db), seed=args.seed)
        for line in report.summary_lines():
            print(line)
        counts = Store(args.db).project.counts()
        print(f"demo checklists: {counts['checklists']} frozen; probe judge (offline, DEMO): "
              f"{counts['judgments']} item judgments, scored")
        print(f"demo project DB (simulated data): {args.db}")
        print(f"demo study with SIMULATED raters; try the rater page with a link from: "
              f"python -m gcpc_core study link --db {args.db} --rater demo-you")
    return 0


def add_import(sub: argparse._SubParsersAction) -> None:
    p = add_verb(sub, "import", help="import Harbor task and trial folders into a project DB",
                 example="--tasks path/to/tasks --trials path/to/jobs --db project.db --conditions conditions.csv",
                 description="Recursively import Harbor task folders and trial folders. "
                 "Idempotent; bad trials are reported with path and reason and skipped. "
                 "A zip or tar archive may stand for either folder: it is checked member by member "
                 "(no absolute paths, '..', links or bombs: one bad member refuses it whole) and "
                 "unpacked beside the DB, in <db>.uploads/.")
    p.add_argument("--tasks", type=Path,
                   help="folder (or zip/tar archive) holding task folders (instruction.md, tests/)")
    p.add_argument("--trials", type=Path,
                   help="folder (or zip/tar archive) holding trial folders (result.json, agent/)")
    add_db(p, "project DB file (created if missing)")
    p.add_argument("--conditions", type=Path, help="CSV/TSV/JSON mapping trial name → with-skills/without-skills")
    p.add_argument("--pass-threshold", type=float, default=DEFAULT_PASS_THRESHOLD,
                   help="reward at or above which a trial is PASS (default %(default)s)")
    p.add_argument("--max-log-mb", type=float, default=DEFAULT_MAX_LOG_BYTES / 2**20,
                   help="skip agent logs larger than this (default %(default)s MB)")
    p.add_argument("--derive-outcome", action="store_true",
                   help="a trial with no recorded reward (an unfinished job) gets PASS when its verifier's CTRF "
                   "report has no failed test, else FAIL, with that basis recorded; without this flag it is "
                   "imported as 'unscored' and left out of outcome statistics")
    add_quiet(p)
    p.set_defaults(func=_cmd_import)


def add_info(sub: argparse._SubParsersAction) -> None:
    p = add_verb(sub, "info", help="counts of what a project DB holds", example="--db project.db --task-status",
                 description="Print what a project DB holds: tasks, trials, PASS/FAIL, unscored "
                 "(no recorded reward: left out of outcome statistics), events, …")
    add_db(p)
    p.add_argument("--json", action="store_true", help="one JSON object instead of lines")
    p.add_argument("--task-status", action="store_true",
                   help="also, per task: checklist, judgments per judge, scores, audits and the next step with its "
                   "command (with --json: a task_status list)")
    p.set_defaults(func=_cmd_info)


def add_export(sub: argparse._SubParsersAction) -> None:
    p = add_verb(sub, "export", help="export trials, checklists, judgments, scores, annotations or audits",
                 example="--db project.db --what judgments --run gcpc:model-b --format csv --out judgments.csv",
                 description="Export one table of a project DB as JSONL or CSV. Judgments, scores and "
                 "item audits are of each judge's default run (the most recent), with a label column; "
                 "`audits` is the current item audits, one flat row each (`annotations`: every version of "
                 "every answer); "
                 "--run chooses other runs, --all-runs exports every labelled run.")
    add_db(p)
    p.add_argument("--what", required=True, choices=Deferred(_export_tables), metavar="TABLE",
                   help="which table: %(choices)s")
    add_run_choice(p, repeat=True)
    p.add_argument("--all-runs", action="store_true",
                   help="every labelled judge run, the label column telling them apart (judgments, scores, "
                   "annotations, audits)")
    add_format(p)
    p.add_argument("--out", type=Path, help="output file (default: standard output)")
    p.set_defaults(func=_cmd_export)


def add_demo(sub: argparse._SubParsersAction) -> None:
    p = add_verb(sub, "demo", help="write the embedded demo corpus or a ready demo project DB",
                 example="--db demo.db --out demo-corpus",
                 description="The demo corpus is simulated data written by GCPC itself, "
                 "labelled DEMO everywhere. --out writes Harbor tasks/ and trials/; --db builds a project DB.")
    p.add_argument("--out", type=Path, help="folder to write tasks/ and trials/ into")
    add_db(p, "project DB to build from the demo corpus", required=False)
    add_seed(p, "seed of the simulated variation", default=DEMO_SEED)
    p.set_defaults(func=_cmd_demo)
