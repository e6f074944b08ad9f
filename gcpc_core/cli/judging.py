"""Judging and analysis verbs: `judge`, `score`, `report`, `perturb`, `batch collect|list`."""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path

from ..defaults import PERTURB_SCOPES
from .compare import add_run_choice, add_run_label, chosen_labels
from .common import (
    ENDPOINT_FROM,
    ITEM_JUDGE_CHOICES,
    JUDGE_CHOICES,
    add_concurrency,
    add_db,
    add_deprecated,
    add_force,
    add_limit,
    add_model,
    add_n_boot,
    add_quiet,
    add_seed,
    add_verb,
    fail,
    open_db,
    reported,
    require_llm,
)

__all__ = ["add_batch", "add_judge", "add_perturb", "add_report", "add_score"]


def _require_llm_judge(verb: str, judge: str, model: str | None) -> None:
    """Only LLM judges need an endpoint: probe runs offline."""
    from ..judge import get_judge

    if get_judge(judge).calls_llm:
        require_llm(verb, model)


def _cmd_judge(args: argparse.Namespace) -> int:
    from ..judge import judge_project
    from ..llm import LLMError

    store = open_db("judge", args.db)
    _require_llm_judge("judge", args.judge, args.model)
    with reported("judge", LLMError, ValueError, finished="trajectories"):
        report = judge_project(
            store, judge=args.judge, model=args.model, concurrency=args.concurrency, limit=args.limit,
            per_item=args.per_item, batch=args.batch, force=args.force, progress=not args.quiet, label=args.label,
        )
    for line in report.lines():
        print(line)
    if report.batch_id:
        print(f"submitted batch {report.batch_id}; collect it with: python -m gcpc_core batch collect --db {args.db}")
    elif report.judged:
        print(f"next: python -m gcpc_core score --db {args.db}")
    return 0 if report.ok else 1


def _cmd_score(args: argparse.Namespace) -> int:
    from ..stages import recorded_score

    for line in recorded_score(open_db("score", args.db), judge=args.judge).lines():
        print(line)
    return 0


def _cmd_report(args: argparse.Namespace) -> int:
    from ..project_frames import frames_from_store
    from ..stages import recorded_report

    store = open_db("report", args.db)
    frames = frames_from_store(store, include_simulated=not args.exclude_simulated,
                               labels=chosen_labels("report", store, args.run))
    judges = args.judge or None
    present = set(frames["scores"]["judge"])
    if judges is not None and (unknown := [j for j in judges if j not in present]):
        fail("report", f"no scores for judge(s) {', '.join(unknown)} (scored: {', '.join(sorted(present)) or 'none'})")
    title = f"GCPC analysis report: {Path(args.db).name}"
    if store.project.get_meta("is_demo") == "1":
        title += " (DEMO project, simulated data)"
    with reported("report", ValueError):  # a frame violating its contract (FrameContractError) or a bad setting
        result = recorded_report(store, frames, args.out, n_boot=args.n_boot, seed=args.seed, judges=judges,
                              figures=not args.no_figures, title=title)
    print(f"report: {result.markdown}")
    print(f"report: {result.html} ({len(result.figures)} figures)")
    print(f"tables: {len(result.csv)} CSV files in {result.out_dir}")
    for line in result.missing:
        print(f"not computed: {line}")
    for line in result.warnings:
        print(f"warning: {line}")
    return 0


def _cmd_perturb(args: argparse.Namespace) -> int:
    from ..perturb import run_perturbations
    from ..llm import LLMError

    store = open_db("perturb", args.db)
    label = None
    if args.run is not None:
        chosen = chosen_labels("perturb", store, [args.run]) or {}
        if args.judge not in chosen:
            fail("perturb", f"{store.path}: label {args.run!r} is a run of {', '.join(chosen)}, not of "
                 f"judge {args.judge!r} (`python -m gcpc_core labels --db {args.db}` lists the runs)")
        label = chosen[args.judge]
    _require_llm_judge("perturb", args.judge, args.model)
    with reported("perturb", LLMError, ValueError, finished="items"):
        report = run_perturbations(
            store, judge=args.judge, label=label, model=args.model, seed=args.seed, scope=args.scope, limit=args.limit,
            per_item=args.per_item, concurrency=args.concurrency, force=args.force, progress=not args.quiet,
        )
    for line in report.lines():
        print(line)
    if report.done:
        print(f"next: python -m gcpc_core report --db {args.db} --out DIR"
              + (f" --run {shlex.quote(label)}" if label is not None else ""))
    return 0 if report.ok else 1


def _cmd_batch_collect(args: argparse.Namespace) -> int:
    from ..judge import collect_batches
    from ..llm import LLMError

    store = open_db("batch collect", args.db)
    waiting = [store.judging.get_batch(args.batch_id)] if args.batch_id else store.judging.batches()
    for row in waiting:
        if row is not None:
            require_llm("batch collect", row.model)
    with reported("batch collect", LLMError, KeyError):
        report = collect_batches(store, batch_id=args.batch_id, concurrency=args.concurrency,
                                 progress=not args.quiet)
    for line in report.lines():
        print(line)
    return 0


def _cmd_batch_list(args: argparse.Namespace) -> int:
    for row in open_db("batch list", args.db).judging.batches():
        print(f"{row.id} {row.judge} {row.model} {row.status} {row.n_requests} requests "
              f"created {row.created_at}" + (f" collected {row.collected_at}" if row.collected_at else ""))
    return 0


def add_judge(sub: argparse._SubParsersAction) -> None:
    p = add_verb(sub, "judge", help="judge trajectories: gcpc, holistic, fixed or probe",
                 example="--db project.db --judge gcpc --model gpt-4o-mini --label first-pass --limit 20",
                 description="Judge every trajectory not yet judged by the chosen judge and store each at "
                 "once (resumable: rerun after Ctrl-C or a crash; finished trajectories are skipped and "
                 "repeated requests come from the response cache). gcpc: the LLM item judge over each task's "
                 "latest frozen checklist; fixed: the same over rules/fixed_checklist.yaml; holistic: one LLM "
                       f"progress rating; probe: offline regex probes (no LLM). {ENDPOINT_FROM} Exit 0 ok, 1 some "
                 "trajectories failed (endpoint errors; rerun), 2 unusable setup.")
    add_db(p)
    p.add_argument("--judge", required=True, choices=JUDGE_CHOICES, metavar="JUDGE",
                   help="which judge: %(choices)s")
    add_model(p)
    add_concurrency(p)
    add_limit(p, "judge at most N trajectories now")
    p.add_argument("--per-item", action="store_true", help="one call per checklist item instead of one per trajectory")
    p.add_argument("--batch", action="store_true",
                   help="submit an OpenAI Batch-API job instead of calling live; then run `batch collect`")
    add_run_label(p)
    add_force(p, "judge finished trajectories again (cached requests are free)")
    add_quiet(p)
    p.set_defaults(func=_cmd_judge)


def add_score(sub: argparse._SubParsersAction) -> None:
    p = add_verb(sub, "score", help="postprocess verdicts with the official outcome and write scores",
                 example="--db project.db --judge gcpc",
                 description="For every judged trajectory and judge: official PASS sets assertion items to "
                 "Yes, official FAIL adds an endpoint item judged No (raw verdicts are kept), then partial "
                 "credit, evidence coverage, Perfect and counts are written. Idempotent.")
    add_db(p)
    p.add_argument("--judge", choices=JUDGE_CHOICES, metavar="JUDGE",
                   help="only this judge: %(choices)s")
    p.set_defaults(func=_cmd_score)


def add_report(sub: argparse._SubParsersAction) -> None:
    p = add_verb(sub, "report", help="analysis report: report.md, report.html and CSV tables",
                 example="--db project.db --out report --judge gcpc --judge probe --run gcpc:model-b",
                 description="Load scores, item verdicts, CTRF results, human ratings and preferences and "
                 "evidence-perturbation results from the project DB and write report.md, a standalone "
                 "report.html with figures, and one CSV per table: AUC vs official PASS with task-clustered "
                 "bootstrap CIs, human agreement, skill effects, evidence sensitivity, ablations, verifier-"
                 "grounded item accuracy. What the data does not allow yet is stated plainly in the report "
                 "and printed here. No LLM calls. Exit 0 written, 2 unusable input.")
    add_db(p)
    p.add_argument("--out", type=Path, required=True, help="folder to write the report into (created if missing)")
    add_n_boot(p)
    add_seed(p, "bootstrap seed")
    p.add_argument("--judge", action="append",
                   help="a judge to compare (repeat for several; default: every scored judge)")
    add_deprecated(p, "--judges", use="--judge (repeated)", dest="judge", kind="comma list")
    p.add_argument("--exclude-simulated", action="store_true",
                   help="leave out human answers from simulated raters (the demo study)")
    p.add_argument("--no-figures", action="store_true", help="tables only (faster)")
    add_run_choice(p, repeat=True)
    p.set_defaults(func=_cmd_report)


def add_perturb(sub: argparse._SubParsersAction) -> None:
    p = add_verb(sub, "perturb", help="evidence sensitivity: perturb cited evidence of Yes items and re-judge",
                 example="--db project.db --judge gcpc --run first-pass --limit 200 --seed 0",
                 description="For every Yes item of the judge's default run (or --run) with grounded citations, "
                 "replace each cited "
                 "span by a plausible wrong value (numbers shifted, paths altered, strings swapped; the recipe "
                 "is stored), rebuild the evidence view and judge the item again through the same judge path "
                 "and LLM layer, with the model and prompt of the original verdict (items judged otherwise "
                 "are skipped). Stores one row per item (resumable: done items are skipped) and prints the "
                 "shares flipping to No and to No-or-Abstain per judge run; `report` shows them. probe runs "
                       f"offline. {ENDPOINT_FROM} Exit 0 ok, 1 some items failed (endpoint errors; rerun), "
                 "2 unusable setup.")
    add_db(p)
    p.add_argument("--judge", required=True, choices=ITEM_JUDGE_CHOICES, metavar="JUDGE",
                   help="which judge's Yes items: %(choices)s")
    add_run_choice(p, repeat=False, note="; each run keeps its own results")
    add_model(p, "model name (default: $GCPC_MODEL); must be the model the items were judged with")
    add_limit(p, "perturb at most N items now, a seeded sample across tasks")
    add_seed(p, "perturbation seed")
    p.add_argument("--scope", choices=PERTURB_SCOPES, default=PERTURB_SCOPES[0],
                   help="replace the span in the cited event only, or in every evidence event holding it "
                   "(default %(default)s)")
    p.add_argument("--per-item", action="store_true", help="the items were judged with `judge --per-item`")
    add_concurrency(p)
    add_force(p, "perturb items done with this setting again")
    add_quiet(p)
    p.set_defaults(func=_cmd_perturb)


def add_batch(sub: argparse._SubParsersAction) -> None:
    p = add_verb(sub, "batch", help="Batch-API judging jobs: collect results, list jobs",
                 example="collect --db project.db",
                 description="Jobs submitted by `judge --batch`. `collect` ingests finished jobs through "
                 "the same validation and grounding as live judging; `list` shows every job.")
    batch_sub = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    b = add_verb(batch_sub, "collect", help="fetch finished batch jobs and store their judgments",
                 example="--db project.db --batch-id batch_abc123",
                 description="Fetch every submitted job (or --batch-id) and ingest the finished ones; "
                 "a job still running is reported with its status. Invalid replies get one live repair "
                 "call, so the endpoint must be configured (OPENAI_BASE_URL / OPENAI_API_KEY).")
    add_db(b)
    b.add_argument("--batch-id", help="only this job")
    add_concurrency(b, "repair requests")
    add_quiet(b)
    b.set_defaults(func=_cmd_batch_collect)
    b = add_verb(batch_sub, "list", help="list Batch-API jobs of a project", example="--db project.db",
                 description="One line per job: id, judge, model, status, requests, times.")
    add_db(b)
    b.set_defaults(func=_cmd_batch_list)
