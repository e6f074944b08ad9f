"""Recorded runs of the stages that work on the whole project at once: import, score and report.

Every stage runs through `runs.run_stage`. Synthesis, judging and perturbation call it themselves,
one unit per task, trajectory or item, because their LLM calls and stored rows carry the run's id.
The three stages here run without an LLM and write nothing tagged by a run: each is one unit (the
project) of a `run_stage` call, made here once for the command line and the app's Runs page alike.

A new stage verb calls `run_stage` with its units and a `RunKind` of its stage (added to
`runs.Stage`); a stage over the whole project gets a `recorded_<stage>` function here, which its
CLI verb and its Runs-page job both call.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from .analysis import ReportResult, build_report
from .checklist import load_rules
from .ingest import ImportReport, import_project
from .judge import ScoreReport, score_project
from .runs import RunKind, counts_of_one, run_stage
from .store import Store

__all__ = ["recorded_import", "recorded_report", "recorded_score"]

def _import_counts(report: ImportReport) -> dict[str, int]:
    return {"tasks_imported": report.tasks_imported, "tasks_unchanged": report.tasks_unchanged,
            "trials_imported": report.trials_imported, "trials_updated": report.trials_updated,
            "trials_unchanged": report.trials_unchanged, "skipped": len(report.skipped)}


def recorded_import(
    store: Store,
    *,
    tasks_dir: Path | None,
    trials_dir: Path | None,
    params: Mapping[str, Any] | None = None,
    **options: Any,
) -> ImportReport:
    """`ingest.import_project` as an `import` run. `params` adds to what the ledger records (the
    Runs page gives the number of trial folders, `trials`, so it can show progress); `options` go to
    the importer unchanged."""
    recorded = {"tasks_dir": str(tasks_dir) if tasks_dir else None, "trials_dir": str(trials_dir) if trials_dir else None,
                **{k: v for k, v in options.items() if k in ("pass_threshold", "max_log_bytes", "derive_outcome")},
                "conditions": bool(options.get("condition_map")), **(params or {})}
    run = run_stage(store, RunKind("import"), [store],
                    lambda project, _: import_project(project, tasks_dir=tasks_dir, trials_dir=trials_dir, **options),
                    prompt_version="-", rules_version="-", params=recorded, counts=counts_of_one(_import_counts))
    return run.results[0]


def recorded_score(store: Store, *, judge: str | None = None) -> ScoreReport:
    """`judge.score_project` as a `score` run, under the current rules version."""
    run = run_stage(store, RunKind("score"), [store], lambda project, _: score_project(project, judge=judge),
                    prompt_version="-", rules_version=load_rules().version, params={"judge": judge} if judge else {},
                    counts=counts_of_one(ScoreReport.counts))
    return run.results[0]


def recorded_report(store: Store, frames: Mapping[str, pd.DataFrame], out: Path, **options: Any) -> ReportResult:
    """`analysis.build_report` over `frames` as a `report` run (options go to it unchanged)."""
    run = run_stage(store, RunKind("report"), [frames], lambda chosen, _: build_report(chosen, out, **options),
                    prompt_version="-", params={"out": str(out), **options},
                    counts=counts_of_one(lambda r: {"tables": len(r.csv), "figures": len(r.figures),
                                                     "not_computed": len(r.missing)}))
    return run.results[0]
