"""Checklist verbs: `validate`, `checklist add`, `checklist draft`, `synthesize`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .common import (
    ENDPOINT_FROM,
    add_concurrency,
    add_db,
    add_force,
    add_model,
    add_quiet,
    add_verb,
    fail,
    open_db,
    reported,
    require_llm,
)

__all__ = ["add_checklist", "add_synthesize", "add_validate"]


def _cmd_validate(args: argparse.Namespace) -> int:
    from ..checklist import validate_files

    code, lines = validate_files(args.task_dir, args.checklist, args.rules)
    for line in lines:
        print(line)
    if code == 0:
        print(f"ok: {args.checklist} passes every gate", file=sys.stderr)
    return code


def _cmd_checklist_add(args: argparse.Namespace) -> int:
    from ..checklist import ChecklistFileError, RulesError, load_checklist_file, load_rules
    from ..checklist.registry import register_checklist, reviewed

    store = open_db("checklist add", args.db)
    with reported("checklist add", RulesError):
        rules = load_rules()
    status = 0
    for path in args.files:
        try:
            checklist = load_checklist_file(path)
            created_by = args.by
            if args.review:
                signed = reviewed(checklist, args.review, rules)
                if signed.source != checklist.source:
                    created_by = f"{args.by}, review of {checklist.source} by {args.review}"
                checklist = signed
            row, failures = register_checklist(store, checklist, created_by=created_by, rules=rules)
        except (ChecklistFileError, KeyError) as exc:
            print(f"{path}: {exc}", file=sys.stderr)
            status = 1
            continue
        if failures:
            status = 1
            print(f"{path}: not frozen, {len(failures)} gate failure(s):", file=sys.stderr)
            for f in failures:
                print(f"{f.item_id} {f.gate} {f.message}")
            continue
        assert row is not None
        print(f"{path}: frozen {row.task} v{row.version} sha {row.sha[:12]} (source {row.source})")
    return status


def _cmd_checklist_draft(args: argparse.Namespace) -> int:
    from ..checklist import RulesError, load_rules
    from ..checklist.draft import draft_checklist, draft_yaml
    from ..ingest.tasks import TaskError, load_task

    verb = "checklist draft"
    if (args.task_dir is None) == (args.db is None):
        fail(verb, "give either --task-dir DIR or --db FILE --task T")
    with reported(verb, RulesError, TaskError, ValueError):
        rules = load_rules(args.rules)
        if args.task_dir is not None:
            task = load_task(args.task_dir)
        else:
            if not args.task:
                fail(verb, "--db needs --task T")
            task = open_db(verb, args.db).trials.get_task(args.task)
            if task is None:
                fail(verb, f"{args.db}: no task {args.task!r} (import its task folder first)")
        draft = draft_checklist(task, rules)
    text = draft_yaml(draft)
    if args.out is None:
        sys.stdout.write(text)
    else:
        try:
            Path(args.out).write_text(text, encoding="utf-8")
        except OSError as exc:
            fail(verb, f"{args.out}: cannot write: {exc}")
    counts = {route: sum(i.route == route for i in draft.checklist.items) for route in ("assertion", "generated", "judge")}
    where = f" to {args.out}" if args.out else ""
    print(f"drafted {task.id}{where}: {len(draft.checklist.items)} items ("
          + ", ".join(f"{n} {r}" for r, n in counts.items() if n) + f"), {len(draft.failures)} gate failure(s); "
          "review it, then `checklist add --review <your name>`", file=sys.stderr)
    for f in draft.failures:
        print(f.line(), file=sys.stderr)
    return 0


def _cmd_synthesize(args: argparse.Namespace) -> int:
    from ..llm import LLMNotConfigured
    from ..checklist.synthesis import synthesize_project

    require_llm("synthesize", args.model)
    with reported("synthesize", LLMNotConfigured, KeyError):
        report = synthesize_project(
            open_db("synthesize", args.db), task=args.task, model=args.model, concurrency=args.concurrency,
            force=args.force, progress=not args.quiet,
        )
    for line in report.lines():
        print(line)
    return 0 if report.ok else 1


def add_validate(sub: argparse._SubParsersAction) -> None:
    p = add_verb(sub, "validate", help="run the checklist gates on a task folder and a checklist file",
                 example="--task-dir tasks/citation-check --checklist citation-check.yaml",
                 description="Run gates G1–G6 (no LLM). Exit 0 when every gate passes, 1 otherwise, "
                 "with one line '<item id> <gate id> <message>' per failure; 2 when the files are unusable.")
    p.add_argument("--task-dir", type=Path, required=True, help="Harbor task folder (instruction.md, tests/)")
    p.add_argument("--checklist", type=Path, required=True, help="checklist file, JSON or YAML")
    p.add_argument("--rules", type=Path, help="rules folder (default: the repository's rules/)")
    p.set_defaults(func=_cmd_validate)


def add_checklist(sub: argparse._SubParsersAction) -> None:
    p = add_verb(sub, "checklist", help="draft checklists offline, or store hand-written ones in a project DB",
                 example="draft --task-dir tasks/citation-check --out citation-check.yaml",
                 description="`add`: gate, freeze and store checklist files (JSON or YAML) as their task's "
                 "next version; a file failing a gate is reported and not stored. `draft`: an offline draft "
                 "to edit.")
    checklist_sub = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    add = add_verb(checklist_sub, "add", help="gate, freeze and store checklist files",
                   example="--db project.db --review ana citation-check.yaml",
                   description="Gate, freeze and store checklist files in a project DB.")
    add_db(add, "project DB file (its tasks must be imported)")
    add.add_argument("files", type=Path, nargs="+", help="checklist files")
    add.add_argument("--by", default="human", help="who stores it, recorded as created_by (default %(default)s)")
    add.add_argument("--review", metavar="NAME",
                     help="NAME has reviewed these files: a draft (source draft:…, never frozen as such) is stored "
                     "under source human:NAME, and created_by records the review (`--by`, review of draft:… by "
                     "NAME); other sources are kept")
    add.set_defaults(func=_cmd_checklist_add)
    draft = add_verb(
        checklist_sub, "draft", help="draft a checklist offline from a task's instruction and verifier (no LLM)",
        example="--db project.db --task citation-check --out citation-check.yaml",
        description="Write an editable draft checklist from the verifier's source: one assertion item per assertion "
        "group of a test (or parameter group of a parametrized one), its text the requirement with the literal it "
        "checks, its verifier ref set, probes where it checks a literal in an output; generated items for output "
        "files no test names; judge items for the instruction's constraints; each with a verbatim quote of "
        "instruction.md. The draft passes G1, G2, G5 and G6 by construction; its source is draft:<rules version>, "
        "which is never frozen: review it and store it with `checklist add --review <your name>` (which records "
        "your review). Gate failures left to fix go to stderr.")
    draft.add_argument("--task-dir", type=Path, help="Harbor task folder (instruction.md, tests/)")
    add_db(draft, "project DB holding the task (with --task)", required=False)
    draft.add_argument("--task", help="task id in --db")
    draft.add_argument("--out", type=Path, help="write the YAML here (default: standard output)")
    draft.add_argument("--rules", type=Path, help="rules folder (default: the repository's rules/)")
    draft.set_defaults(func=_cmd_checklist_draft)


def add_synthesize(sub: argparse._SubParsersAction) -> None:
    p = add_verb(sub, "synthesize", help="LLM checklist synthesis from instruction + verifier",
                 example="--db project.db --model gpt-4o-mini --concurrency 4",
                 description="One structured LLM call per task lacking a frozen checklist; gate failures "
                 "get one repair round; a task still failing is stored as failed with reasons. " + ENDPOINT_FROM)
    add_db(p)
    p.add_argument("--task", help="only this task")
    add_model(p)
    add_concurrency(p)
    add_force(p, "synthesize again even where a frozen checklist exists")
    add_quiet(p)
    p.set_defaults(func=_cmd_synthesize)
