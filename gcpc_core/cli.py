"""`python -m gcpc_core VERB …`: the command line over the pipeline stages.

Each verb is a thin wrapper: parse arguments, call one public function of a
stage module, print a summary. Exit codes follow DESIGN.md.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TextIO

from . import demo, export
from .checklist import ChecklistFileError, load_checklist_file, validate_files
from .checklist.registry import register_checklist
from .ingest import import_project, load_condition_map
from .ingest.trials import DEFAULT_MAX_LOG_BYTES, DEFAULT_PASS_THRESHOLD, TrialError
from .store import Store

__all__ = ["build_parser", "main"]


def _cmd_import(args: argparse.Namespace) -> int:
    if args.tasks is None and args.trials is None:
        print("import: give --tasks and/or --trials", file=sys.stderr)
        return 2
    for flag, folder in (("--tasks", args.tasks), ("--trials", args.trials)):
        if folder is not None and not Path(folder).is_dir():
            print(f"import: {flag} {folder}: not a folder", file=sys.stderr)
            return 2
    try:
        mapping = load_condition_map(args.conditions) if args.conditions else None
    except (TrialError, OSError) as exc:
        print(f"import: {exc}", file=sys.stderr)
        return 2
    store = Store(args.db)
    report = import_project(
        store,
        tasks_dir=args.tasks,
        trials_dir=args.trials,
        condition_map=mapping,
        pass_threshold=args.pass_threshold,
        max_log_bytes=int(args.max_log_mb * 2**20),
        progress=not args.quiet,
    )
    for line in report.summary_lines():
        print(line)
    return 0


def _cmd_info(args: argparse.Namespace) -> int:
    if not Path(args.db).is_file():
        print(f"info: {args.db}: no such project DB", file=sys.stderr)
        return 2
    store = Store(args.db)
    info = {"db": str(args.db), "schema_version": store.schema_version, **store.counts()}
    info["demo"] = store.get_meta("is_demo") == "1"
    if args.json:
        print(json.dumps(info, sort_keys=True))
    else:
        for key, value in info.items():
            print(f"{key}: {value}")
    return 0


def _write_rows(rows: Iterable[dict], fmt: str, out: TextIO) -> int:
    count = 0
    if fmt == "jsonl":
        for row in rows:
            out.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")
            count += 1
        return count
    writer: csv.DictWriter | None = None
    for row in rows:
        flat = {k: json.dumps(v, ensure_ascii=False) if isinstance(v, (list, dict)) else v for k, v in row.items()}
        if writer is None:
            writer = csv.DictWriter(out, fieldnames=list(flat))
            writer.writeheader()
        writer.writerow(flat)
        count += 1
    return count


def _cmd_export(args: argparse.Namespace) -> int:
    exporters: dict[str, Callable[[Store], Iterable[dict]]] = export.EXPORTERS
    if args.what not in exporters:
        print(f"export: --what {args.what} is not available yet (have: {', '.join(exporters)})", file=sys.stderr)
        return 2
    store = Store(args.db)
    rows = exporters[args.what](store)
    if args.out:
        with open(args.out, "w", encoding="utf-8", newline="") as fh:
            n = _write_rows(rows, args.format, fh)
        print(f"exported {n} {args.what} rows to {args.out}", file=sys.stderr)
    else:
        _write_rows(rows, args.format, sys.stdout)
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    if args.out is None and args.db is None:
        print("demo: give --out DIR and/or --db FILE", file=sys.stderr)
        return 2
    if args.out is not None:
        tasks_dir, trials_dir = demo.write_demo_corpus(Path(args.out), seed=args.seed)
        print(f"demo corpus (simulated data) written: {tasks_dir} and {trials_dir}")
    if args.db is not None:
        report = demo.build_demo_project(Path(args.db), seed=args.seed)
        for line in report.summary_lines():
            print(line)
        counts = Store(args.db).counts()
        print(f"demo checklists: {counts['checklists']} frozen; probe judge (offline, DEMO): "
              f"{counts['judgments']} item judgments, scored")
        print(f"demo project DB (simulated data): {args.db}")
        print(f"demo study with SIMULATED raters; try the rater page with a link from: "
              f"python -m gcpc_core study link --db {args.db} --rater demo-you")
    return 0


def _cmd_validate(args: argparse.Namespace) -> int:
    code, lines = validate_files(args.task_dir, args.checklist, args.rules)
    for line in lines:
        print(line)
    if code == 0:
        print(f"ok: {args.checklist} passes every gate", file=sys.stderr)
    return code


def _cmd_checklist_add(args: argparse.Namespace) -> int:
    store = Store(args.db)
    status = 0
    for path in args.files:
        try:
            checklist = load_checklist_file(path)
            row, failures = register_checklist(store, checklist, created_by=args.by)
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
        print(f"{path}: frozen {row['task']} v{row['version']} sha {row['sha'][:12]}")
    return status


def _cmd_synthesize(args: argparse.Namespace) -> int:
    from .llm import LLMNotConfigured, llm_status
    from .synthesis import synthesize_project

    ok, reason = llm_status(args.model)
    if not ok:
        print(f"synthesize: {reason}", file=sys.stderr)
        return 2
    try:
        report = synthesize_project(
            Store(args.db), task=args.task, model=args.model, concurrency=args.concurrency,
            force=args.force, progress=not args.quiet,
        )
    except (LLMNotConfigured, KeyError) as exc:
        print(f"synthesize: {exc}", file=sys.stderr)
        return 2
    for line in report.lines():
        print(line)
    return 0 if report.ok else 1


def _db_or_exit(verb: str, db: Path) -> Store | None:
    """The project DB, or None (with a message) when the file does not exist."""
    if not Path(db).is_file():
        print(f"{verb}: {db}: no such project DB", file=sys.stderr)
        return None
    return Store(db)


def _cmd_judge(args: argparse.Namespace) -> int:
    from .judge import judge_project
    from .judge.units import LLM_JUDGES
    from .llm import LLMError, llm_status

    store = _db_or_exit("judge", args.db)
    if store is None:
        return 2
    if args.judge in LLM_JUDGES:
        ok, reason = llm_status(args.model)
        if not ok:
            print(f"judge: {reason}", file=sys.stderr)
            return 2
    try:
        report = judge_project(
            store, judge=args.judge, model=args.model, concurrency=args.concurrency, limit=args.limit,
            per_item=args.per_item, batch=args.batch, force=args.force, progress=not args.quiet,
        )
    except (LLMError, ValueError) as exc:
        print(f"judge: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("judge: interrupted; finished trajectories are stored, rerun the same command to resume",
              file=sys.stderr)
        return 130
    for line in report.lines():
        print(line)
    if report.batch_id:
        print(f"submitted batch {report.batch_id}; collect it with: python -m gcpc_core batch collect --db {args.db}")
    elif report.judged:
        print(f"next: python -m gcpc_core score --db {args.db}")
    return 0 if report.ok else 1


def _cmd_score(args: argparse.Namespace) -> int:
    from .judge import score_project

    store = _db_or_exit("score", args.db)
    if store is None:
        return 2
    for line in score_project(store, judge=args.judge).lines():
        print(line)
    return 0


def _judge_list(text: str | None) -> list[str] | None:
    return [j.strip() for j in text.split(",") if j.strip()] if text else None


def _cmd_report(args: argparse.Namespace) -> int:
    from .analysis import build_report
    from .analysis.loader import frames_from_store

    store = _db_or_exit("report", args.db)
    if store is None:
        return 2
    frames = frames_from_store(store, include_simulated=not args.exclude_simulated)
    judges = _judge_list(args.judges)
    present = set(frames["scores"]["judge"])
    if judges is not None and (unknown := [j for j in judges if j not in present]):
        print(f"report: no scores for judge(s) {', '.join(unknown)} (scored: {', '.join(sorted(present)) or 'none'})",
              file=sys.stderr)
        return 2
    title = f"GCPC analysis report: {Path(args.db).name}"
    if store.get_meta("is_demo") == "1":
        title += " (DEMO project, simulated data)"
    try:
        result = build_report(frames, args.out, n_boot=args.n_boot, seed=args.seed, judges=judges,
                              figures=not args.no_figures, title=title)
    except ValueError as exc:  # a frame violating its contract (FrameContractError) or a bad setting
        print(f"report: {exc}", file=sys.stderr)
        return 2
    print(f"report: {result.markdown}")
    print(f"report: {result.html} ({len(result.figures)} figures)")
    print(f"tables: {len(result.csv)} CSV files in {result.out_dir}")
    for line in result.missing:
        print(f"not computed: {line}")
    return 0


def _cmd_perturb(args: argparse.Namespace) -> int:
    from .analysis.sensitivity import run_perturbations
    from .judge.units import LLM_JUDGES
    from .llm import LLMError, llm_status

    store = _db_or_exit("perturb", args.db)
    if store is None:
        return 2
    if args.judge in LLM_JUDGES:
        ok, reason = llm_status(args.model)
        if not ok:
            print(f"perturb: {reason}", file=sys.stderr)
            return 2
    try:
        report = run_perturbations(
            store, judge=args.judge, model=args.model, seed=args.seed, scope=args.scope, limit=args.limit,
            per_item=args.per_item, concurrency=args.concurrency, force=args.force, progress=not args.quiet,
        )
    except (LLMError, ValueError) as exc:
        print(f"perturb: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("perturb: interrupted; finished items are stored, rerun the same command to resume", file=sys.stderr)
        return 130
    for line in report.lines():
        print(line)
    if report.done:
        print(f"next: python -m gcpc_core report --db {args.db} --out DIR")
    return 0 if report.ok else 1


def _cmd_batch_collect(args: argparse.Namespace) -> int:
    from .judge import collect_batches
    from .llm import LLMError, llm_status

    store = _db_or_exit("batch collect", args.db)
    if store is None:
        return 2
    waiting = [store.get_judge_batch(args.batch_id)] if args.batch_id else store.judge_batches()
    for row in waiting:
        if row is not None:
            ok, reason = llm_status(row["model"])
            if not ok:
                print(f"batch collect: {reason}", file=sys.stderr)
                return 2
    try:
        report = collect_batches(store, batch_id=args.batch_id, concurrency=args.concurrency,
                                 progress=not args.quiet)
    except (LLMError, KeyError) as exc:
        print(f"batch collect: {exc}", file=sys.stderr)
        return 2
    for line in report.lines():
        print(line)
    return 0


def _cmd_batch_list(args: argparse.Namespace) -> int:
    store = _db_or_exit("batch list", args.db)
    if store is None:
        return 2
    for row in store.judge_batches():
        print(f"{row['id']} {row['judge']} {row['model']} {row['status']} {row['n_requests']} requests "
              f"created {row['created_at']}" + (f" collected {row['collected_at']}" if row["collected_at"] else ""))
    return 0


def _study_store(args: argparse.Namespace) -> Store | None:
    if not Path(args.db).is_file():
        print(f"study: {args.db}: no such project DB", file=sys.stderr)
        return None
    return Store(args.db)


def _study_id(store: Store, given: str | None) -> str | None:
    """The study named, or the only study of the project; None (with a message) otherwise."""
    ids = [s["id"] for s in store.studies()]
    if given is not None and given not in ids:
        print(f"study: no study {given!r} (have: {', '.join(ids) or 'none'})", file=sys.stderr)
        return None
    if given is None and len(ids) != 1:
        print(f"study: give --study (have: {', '.join(ids) or 'none'})", file=sys.stderr)
        return None
    return given or ids[0]


def _cmd_study_create(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from annotations import DesignError, DesignParams, create_study

    store = _study_store(args)
    if store is None:
        return 2
    raters = tuple(r.strip() for r in args.raters.split(",")) if args.raters else tuple(
        f"rater-{i + 1:02d}" for i in range(args.n_raters or args.raters_per_unit))
    try:
        params = DesignParams(tasks=args.tasks, per_task=args.per_task, raters_per_unit=args.raters_per_unit,
                              seed=args.seed, raters=raters, pairs_per_task=args.pairs_per_task,
                              task_ids=tuple(args.task) if args.task else None)
        created = create_study(store, params, study_id=args.id, name=args.name, created_by=args.by)
    except (ValidationError, DesignError, ValueError) as exc:
        print(f"study create: {exc}", file=sys.stderr)
        return 2
    print(f"study {created.study_id} created and frozen")
    for line in created.design.summary_lines():
        print(line)
    print("rater links (shown once: only their hashes are stored; `study link` issues a new one):")
    for rater, link in created.links(args.base_url).items():
        print(f"  {rater}: {link}")
    return 0


def _cmd_study_status(args: argparse.Namespace) -> int:
    from annotations import agreement, disagreements, rater_progress, status_lines

    store = _study_store(args)
    if store is None:
        return 2
    if args.study is None and len(store.studies()) != 1:
        for s in store.studies():
            tag = " (SIMULATED raters)" if s["is_simulated"] else ""
            print(f"{s['id']}: {s['name']}, {s['status']}, created {s['created_at']}{tag}")
        return 0
    study_id = _study_id(store, args.study)
    if study_id is None:
        return 2
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

    store = _study_store(args)
    study_id = None if store is None else _study_id(store, args.study)
    if store is None or study_id is None:
        return 2
    text = (export_csv if args.format == "csv" else export_jsonl)(store, study_id, history=not args.current_only)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
        print(f"exported study {study_id} to {args.out}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


def _cmd_study_import(args: argparse.Namespace) -> int:
    from annotations import import_responses

    store = _study_store(args)
    if store is None:
        return 2
    report = import_responses(store, Path(args.file).read_text(encoding="utf-8"), study_id=args.study,
                              allow_unassigned=args.allow_unassigned)
    for line in report.lines():
        print(line)
    return 0 if report.ok else 1


def _cmd_study_link(args: argparse.Namespace) -> int:
    from annotations import add_rater, invite_link, issue_link

    store = _study_store(args)
    study_id = None if store is None else _study_id(store, args.study)
    if store is None or study_id is None:
        return 2
    try:
        token = (add_rater if args.new else issue_link)(store, study_id, args.rater)
    except (KeyError, ValueError) as exc:
        print(f"study link: {exc}", file=sys.stderr)
        return 2
    print(f"{args.rater}: {invite_link(token, args.base_url)}")
    return 0


def _cmd_study_reassign(args: argparse.Namespace) -> int:
    from annotations import reassign

    store = _study_store(args)
    study_id = None if store is None else _study_id(store, args.study)
    if store is None or study_id is None:
        return 2
    try:
        report = reassign(store, study_id, args.from_rater, args.to_rater)
    except (KeyError, ValueError) as exc:
        print(f"study reassign: {exc}", file=sys.stderr)
        return 2
    print(f"moved {len(report.moved)} unanswered items from {args.from_rater} to {args.to_rater}")
    for kind, target, reason in report.skipped:
        print(f"  skipped {kind} {target}: {reason}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m gcpc_core",
        description="GCPC: grounded checklist partial credit for agent trajectories.",
    )
    sub = parser.add_subparsers(dest="verb", required=True, metavar="VERB")

    p = sub.add_parser("import", help="import Harbor task and trial folders into a project DB",
                       description="Recursively import Harbor task folders and trial folders. "
                       "Idempotent; bad trials are reported with path and reason and skipped.")
    p.add_argument("--tasks", type=Path, help="folder holding task folders (instruction.md, tests/)")
    p.add_argument("--trials", type=Path, help="folder holding trial folders (result.json, agent/)")
    p.add_argument("--db", type=Path, required=True, help="project DB file (created if missing)")
    p.add_argument("--conditions", type=Path, help="CSV/TSV/JSON mapping trial name → with-skills/without-skills")
    p.add_argument("--pass-threshold", type=float, default=DEFAULT_PASS_THRESHOLD,
                   help="reward at or above which a trial is PASS (default %(default)s)")
    p.add_argument("--max-log-mb", type=float, default=DEFAULT_MAX_LOG_BYTES / 2**20,
                   help="skip agent logs larger than this (default %(default)s MB)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=_cmd_import)

    p = sub.add_parser("info", help="counts of what a project DB holds",
                       description="Print what a project DB holds: tasks, trials, PASS/FAIL, events, …")
    p.add_argument("--db", type=Path, required=True, help="project DB file")
    p.add_argument("--json", action="store_true", help="one JSON object instead of lines")
    p.set_defaults(func=_cmd_info)

    p = sub.add_parser("export", help="export trials, checklists, judgments, scores or annotations",
                       description="Export one table of a project DB as JSONL or CSV.")
    p.add_argument("--db", type=Path, required=True, help="project DB file")
    p.add_argument("--what", required=True, choices=["trials", "checklists", "judgments", "scores", "annotations"])
    p.add_argument("--format", default="jsonl", choices=["jsonl", "csv"])
    p.add_argument("--out", type=Path, help="output file (default: standard output)")
    p.set_defaults(func=_cmd_export)

    p = sub.add_parser("validate", help="run the checklist gates on a task folder and a checklist file",
                       description="Run gates G1–G6 (no LLM). Exit 0 when every gate passes, 1 otherwise, "
                       "with one line '<item id> <gate id> <message>' per failure; 2 when the files are unusable.")
    p.add_argument("--task-dir", type=Path, required=True, help="Harbor task folder (instruction.md, tests/)")
    p.add_argument("--checklist", type=Path, required=True, help="checklist file, JSON or YAML")
    p.add_argument("--rules", type=Path, help="rules folder (default: the repository's rules/)")
    p.set_defaults(func=_cmd_validate)

    p = sub.add_parser("checklist", help="store hand-written checklists in a project DB",
                       description="Gate, freeze and store checklist files (JSON or YAML) as their task's "
                       "next version. A file failing a gate is reported and not stored.")
    checklist_sub = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    add = checklist_sub.add_parser("add", help="gate, freeze and store checklist files",
                                   description="Gate, freeze and store checklist files in a project DB.")
    add.add_argument("--db", type=Path, required=True, help="project DB file (its tasks must be imported)")
    add.add_argument("files", type=Path, nargs="+", help="checklist files")
    add.add_argument("--by", default="human", help="author recorded as created_by (default %(default)s)")
    add.set_defaults(func=_cmd_checklist_add)

    p = sub.add_parser("synthesize", help="LLM checklist synthesis from instruction + verifier",
                       description="One structured LLM call per task lacking a frozen checklist; gate failures "
                       "get one repair round; a task still failing is stored as failed with reasons. "
                       "Endpoint from OPENAI_BASE_URL / OPENAI_API_KEY, model from --model or GCPC_MODEL.")
    p.add_argument("--db", type=Path, required=True, help="project DB file")
    p.add_argument("--task", help="only this task")
    p.add_argument("--model", help="model name (default: $GCPC_MODEL)")
    p.add_argument("--concurrency", type=int, default=4, help="parallel requests (default %(default)s)")
    p.add_argument("--force", action="store_true", help="synthesize again even where a frozen checklist exists")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=_cmd_synthesize)

    p = sub.add_parser("judge", help="judge trajectories: gcpc, holistic, fixed or probe",
                       description="Judge every trajectory not yet judged by the chosen judge and store each at "
                       "once (resumable: rerun after Ctrl-C or a crash; finished trajectories are skipped and "
                       "repeated requests come from the response cache). gcpc: the LLM item judge over each task's "
                       "latest frozen checklist; fixed: the same over rules/fixed_checklist.yaml; holistic: one LLM "
                       "progress rating; probe: offline regex probes (no LLM). Endpoint from OPENAI_BASE_URL / "
                       "OPENAI_API_KEY, model from --model or GCPC_MODEL. Exit 0 ok, 1 some trajectories failed "
                       "(endpoint errors; rerun), 2 unusable setup.")
    p.add_argument("--db", type=Path, required=True, help="project DB file")
    p.add_argument("--judge", required=True, choices=["gcpc", "holistic", "fixed", "probe"], help="which judge")
    p.add_argument("--model", help="model name (default: $GCPC_MODEL)")
    p.add_argument("--concurrency", type=int, default=8, help="parallel requests (default %(default)s)")
    p.add_argument("--limit", type=int, help="judge at most this many trajectories now")
    p.add_argument("--per-item", action="store_true", help="one call per checklist item instead of one per trajectory")
    p.add_argument("--batch", action="store_true",
                   help="submit an OpenAI Batch-API job instead of calling live; then run `batch collect`")
    p.add_argument("--force", action="store_true", help="judge finished trajectories again (cached requests are free)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=_cmd_judge)

    p = sub.add_parser("score", help="postprocess verdicts with the official outcome and write scores",
                       description="For every judged trajectory and judge: official PASS sets assertion items to "
                       "Yes, official FAIL adds an endpoint item judged No (raw verdicts are kept), then partial "
                       "credit, evidence coverage, Perfect and counts are written. Idempotent.")
    p.add_argument("--db", type=Path, required=True, help="project DB file")
    p.add_argument("--judge", choices=["gcpc", "holistic", "fixed", "probe"], help="only this judge")
    p.set_defaults(func=_cmd_score)

    p = sub.add_parser("report", help="analysis report: report.md, report.html and CSV tables",
                       description="Load scores, item verdicts, CTRF results, human ratings and preferences and "
                       "evidence-perturbation results from the project DB and write report.md, a standalone "
                       "report.html with figures, and one CSV per table: AUC vs official PASS with task-clustered "
                       "bootstrap CIs, human agreement, skill effects, evidence sensitivity, ablations, verifier-"
                       "grounded item accuracy. What the data does not allow yet is stated plainly in the report "
                       "and printed here. No LLM calls. Exit 0 written, 2 unusable input.")
    p.add_argument("--db", type=Path, required=True, help="project DB file")
    p.add_argument("--out", type=Path, required=True, help="folder to write the report into (created if missing)")
    p.add_argument("--n-boot", type=int, default=10_000, help="bootstrap draws (default %(default)s)")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed (default %(default)s)")
    p.add_argument("--judges", help="comma-separated judges to compare (default: every scored judge)")
    p.add_argument("--exclude-simulated", action="store_true",
                   help="leave out human answers from simulated raters (the demo study)")
    p.add_argument("--no-figures", action="store_true", help="tables only (faster)")
    p.set_defaults(func=_cmd_report)

    p = sub.add_parser("perturb", help="evidence sensitivity: perturb cited evidence of Yes items and re-judge",
                       description="For every Yes item of the judge with grounded citations, replace each cited "
                       "span by a plausible wrong value (numbers shifted, paths altered, strings swapped; the recipe "
                       "is stored), rebuild the evidence view and judge the item again through the same judge path "
                       "and LLM layer, with the model and prompt of the original verdict (items judged otherwise "
                       "are skipped). Stores one row per item (resumable: done items are skipped) and prints the "
                       "shares flipping to No and to No-or-Abstain per judge; `report` shows them. probe runs "
                       "offline. Endpoint from OPENAI_BASE_URL / OPENAI_API_KEY, model from --model or GCPC_MODEL. "
                       "Exit 0 ok, 1 some items failed (endpoint errors; rerun), 2 unusable setup.")
    p.add_argument("--db", type=Path, required=True, help="project DB file")
    p.add_argument("--judge", required=True, choices=["gcpc", "fixed", "probe"], help="which judge's Yes items")
    p.add_argument("--model", help="model name (default: $GCPC_MODEL); must be the model the items were judged with")
    p.add_argument("--limit", type=int, help="perturb at most this many items now (a seeded sample across tasks)")
    p.add_argument("--seed", type=int, default=0, help="perturbation seed (default %(default)s)")
    p.add_argument("--scope", choices=["cited", "log"], default="cited",
                   help="replace the span in the cited event only, or in every evidence event holding it "
                   "(default %(default)s)")
    p.add_argument("--per-item", action="store_true", help="the items were judged with `judge --per-item`")
    p.add_argument("--concurrency", type=int, default=8, help="parallel requests (default %(default)s)")
    p.add_argument("--force", action="store_true", help="perturb items done with this setting again")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=_cmd_perturb)

    p = sub.add_parser("batch", help="Batch-API judging jobs: collect results, list jobs",
                       description="Jobs submitted by `judge --batch`. `collect` ingests finished jobs through "
                       "the same validation and grounding as live judging; `list` shows every job.")
    batch_sub = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    b = batch_sub.add_parser("collect", help="fetch finished batch jobs and store their judgments",
                             description="Fetch every submitted job (or --batch-id) and ingest the finished ones; "
                             "a job still running is reported with its status. Invalid replies get one live repair "
                             "call, so the endpoint must be configured (OPENAI_BASE_URL / OPENAI_API_KEY).")
    b.add_argument("--db", type=Path, required=True, help="project DB file")
    b.add_argument("--batch-id", help="only this job")
    b.add_argument("--concurrency", type=int, default=8, help="parallel repair requests (default %(default)s)")
    b.add_argument("--quiet", action="store_true", help="no progress bar")
    b.set_defaults(func=_cmd_batch_collect)
    b = batch_sub.add_parser("list", help="list Batch-API jobs of a project",
                             description="One line per job: id, judge, model, status, requests, times.")
    b.add_argument("--db", type=Path, required=True, help="project DB file")
    b.set_defaults(func=_cmd_batch_list)

    p = sub.add_parser("demo", help="write the embedded demo corpus or a ready demo project DB",
                       description="The demo corpus is simulated data written by GCPC itself, "
                       "labelled DEMO everywhere. --out writes Harbor tasks/ and trials/; --db builds a project DB.")
    p.add_argument("--out", type=Path, help="folder to write tasks/ and trials/ into")
    p.add_argument("--db", type=Path, help="project DB to build from the demo corpus")
    p.add_argument("--seed", type=int, default=7, help="seed of the simulated variation (default %(default)s)")
    p.set_defaults(func=_cmd_demo)

    p = sub.add_parser("study", help="blinded human study: create, status, export, import, links",
                       description="Design and run a blinded human study of progress ratings and pairwise "
                       "preferences: `create` samples and freezes a design and prints rater links; `status`, "
                       "`export`, `import`, `link` and `reassign` manage it.")
    study_sub = p.add_subparsers(dest="action", required=True, metavar="ACTION")

    s = study_sub.add_parser("create", help="sample a design, freeze it and print rater links",
                             description="Sample trajectories per task stratified by outcome × condition, build "
                             "balanced within-task pairs with random left/right, assign each unit and pair to k "
                             "raters with balanced load and per-rater random order, and freeze it with its seed. "
                             "Prints the design (with every stratum shortfall) and each rater's invitation link.")
    s.add_argument("--db", type=Path, required=True, help="project DB file (trajectories imported)")
    s.add_argument("--tasks", type=int, default=12, help="tasks to sample (default %(default)s)")
    s.add_argument("--per-task", type=int, default=8, help="trajectories rated per task (default %(default)s)")
    s.add_argument("--raters-per-unit", type=int, default=3, help="k raters per unit and per pair (default %(default)s)")
    s.add_argument("--seed", type=int, required=True, help="seed of every random choice of the design")
    s.add_argument("--raters", help="comma-separated rater names (default: rater-01 … rater-N)")
    s.add_argument("--n-raters", type=int, help="number of generated rater names when --raters is not given "
                   "(default: --raters-per-unit)")
    s.add_argument("--pairs-per-task", type=int, help="pairs per task (default: every within-task pair; 0: none)")
    s.add_argument("--task", action="append", help="only this task (repeatable)")
    s.add_argument("--name", help="human-readable study name")
    s.add_argument("--id", help="study id (default: study-<design sha prefix>)")
    s.add_argument("--by", help="creator recorded with the study")
    s.add_argument("--base-url", help="app URL for the links (default http://localhost:8501)")
    s.set_defaults(func=_cmd_study_create)

    s = study_sub.add_parser("status", help="progress per rater, live α, disagreements",
                             description="Without --study (and several studies): list studies. Otherwise the "
                             "design, progress per rater, Krippendorff's α (ordinal ratings, nominal preferences) "
                             "and the number of units with high disagreement.")
    s.add_argument("--db", type=Path, required=True, help="project DB file")
    s.add_argument("--study", help="study id (default: the only study)")
    s.add_argument("--json", action="store_true", help="one JSON object: raters, alpha, disagreements")
    s.set_defaults(func=_cmd_study_status)

    s = study_sub.add_parser("export", help="export every response with the design (CSV or JSONL)",
                             description="CSV: one row per answer version with its design columns. JSONL: a "
                             "design record (params, units, pairs, guidelines, assignments) then one record per "
                             "answer version. `is_current` marks live answers.")
    s.add_argument("--db", type=Path, required=True, help="project DB file")
    s.add_argument("--study", help="study id (default: the only study)")
    s.add_argument("--format", default="jsonl", choices=["jsonl", "csv"])
    s.add_argument("--current-only", action="store_true", help="only current answers, no edit history")
    s.add_argument("--out", type=Path, help="output file (default: standard output)")
    s.set_defaults(func=_cmd_study_export)

    s = study_sub.add_parser("import", help="import responses collected elsewhere (CSV or JSONL)",
                             description="Validate and add responses in the export's shape. Idempotent: importing "
                             "the same file twice adds nothing. A JSONL export recreates its study when missing. "
                             "Exit 0 when every row was accepted, 1 when some were rejected (listed with reason).")
    s.add_argument("--db", type=Path, required=True, help="project DB file")
    s.add_argument("file", type=Path, help="CSV or JSONL file")
    s.add_argument("--study", help="study of rows that do not name one")
    s.add_argument("--allow-unassigned", action="store_true", help="accept answers on items never assigned to the rater")
    s.set_defaults(func=_cmd_study_import)

    s = study_sub.add_parser("link", help="issue a new invitation link for a rater",
                             description="Print a fresh invitation link for a rater; their old link stops working. "
                             "With --new, add the rater to the study first (empty queue: use `reassign`).")
    s.add_argument("--db", type=Path, required=True, help="project DB file")
    s.add_argument("--study", help="study id (default: the only study)")
    s.add_argument("--rater", required=True, help="rater name")
    s.add_argument("--new", action="store_true", help="add this rater to the study")
    s.add_argument("--base-url", help="app URL for the link (default http://localhost:8501)")
    s.set_defaults(func=_cmd_study_link)

    s = study_sub.add_parser("reassign", help="move a rater's unanswered items to another rater",
                             description="Move every unanswered item of one rater's queue to the end of another's "
                             "(answers already given stay); items the other rater holds are skipped.")
    s.add_argument("--db", type=Path, required=True, help="project DB file")
    s.add_argument("--study", help="study id (default: the only study)")
    s.add_argument("--from", dest="from_rater", required=True, help="rater giving up items")
    s.add_argument("--to", dest="to_rater", required=True, help="rater taking them")
    s.set_defaults(func=_cmd_study_reassign)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    return int(args.func(args))
