"""Recorded runs of the stages that do not open a ledger row themselves: import, score and report.

Synthesis, judging and perturbation open their own `runs` row through the harness
(`gcpc_core.runs`), because their LLM calls and stored rows carry its id. The three stages here
run without an LLM and write nothing tagged by a run, so they are wrapped from outside — once,
here, for the command line and the app's Runs page alike.

A new stage verb follows one of the two ways: a stage with LLM calls opens its row itself with
`LLM.run(kind, …, counts=report.counts)` and shows progress with `runs.ProgressBar`; one without
gets a `recorded_<stage>` function here, which its CLI verb and its Runs-page job both call.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import pandas as pd

from .analysis import ReportResult, build_report
from .checklist import load_rules
from .ingest import ImportReport, import_project
from .judge import ScoreReport, score_project
from .judge.runner import offline_run
from .store import Store

__all__ = ["recorded_import", "recorded_report", "recorded_score"]

Result = TypeVar("Result")


def _run(
    store: Store, kind: str, work: Callable[[], Result], *, counts: Callable[[Result], Mapping[str, int]],
    rules_version: str | None, params: Mapping[str, Any],
) -> Result:
    """`work()` inside one recorded offline run whose counts are read from its result."""
    done: list[Result] = []
    with offline_run(store, kind, prompt_version="-", rules_version=rules_version, params=dict(params),
                     counts=lambda: counts(done[0]) if done else {}):
        done.append(work())
    return done[0]


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
    return _run(store, "import", lambda: import_project(store, tasks_dir=tasks_dir, trials_dir=trials_dir, **options),
                counts=_import_counts, rules_version="-", params=recorded)


def recorded_score(store: Store, *, judge: str | None = None) -> ScoreReport:
    """`judge.score_project` as a `score` run, under the current rules version."""
    return _run(store, "score", lambda: score_project(store, judge=judge),
                counts=ScoreReport.counts,
                rules_version=load_rules().version, params={"judge": judge} if judge else {})


def recorded_report(store: Store, frames: Mapping[str, pd.DataFrame], out: Path, **options: Any) -> ReportResult:
    """`analysis.build_report` over `frames` as a `report` run (options go to it unchanged)."""
    return _run(store, "report", lambda: build_report(frames, out, **options),
                counts=lambda r: {"tables": len(r.csv), "figures": len(r.figures), "not_computed": len(r.missing)},
                rules_version=None, params={"out": str(out), **options})
