"""Batch-API scale-out: submit one request per trajectory now, collect the results later.

`submit_batch` writes the OpenAI Batch-API JSONL (custom_id = trajectory id; each body exactly
what a live run would send first), uploads it, creates the batch and records it in the project
DB. `collect_batches` fetches finished batches and feeds every reply through the live path:
the LLM layer's validation (valid replies are cached and accounted), then `judge_unit` with the
reply injected as the first outcome — the same grounding, the same one repair round (made live),
the same storage. A trajectory waiting in a batch is not judged live meanwhile; one whose batch
reply is missing or failed is left unjudged, so a later live run picks it up.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..checklist import Rules, load_rules
from ..llm import (
    LLM,
    LLMReplyError,
    accept_batch_reply,
    batch_line,
    batch_results,
    create_batch,
    retrieve_batch,
)
from ..runs import Progress, RunKind, StageRun, run_stage
from ..store import JudgeBatchRow, Store, utcnow
from .calls import Outcome
from .registry import LLM_JUDGES, get_judge
from .reports import JudgeReport, account_result
from .units import evidence_of, initial_request, judge_unit, plan_units, store_judgment, unit_for

__all__ = ["BATCH_DONE_STATUSES", "CollectReport", "batched_trajectories", "collect_batches", "submit_batch"]

BATCH_DONE_STATUSES = ("completed", "expired", "cancelled")
"""Provider statuses after which no more results arrive (expired/cancelled may hold some)."""
FINAL_ROW_STATUSES = ("collected", "failed", "expired", "cancelled")


def batch_dir(store: Store) -> Path:
    """Where submitted JSONL files are kept: beside the project DB."""
    return store.path.parent / f"{store.path.stem}_batches"


def batched_trajectories(store: Store, judge: str) -> set[str]:
    """Trajectories sitting in a submitted, not yet collected batch of this judge."""
    return {
        request["trajectory_id"]
        for row in store.judging.batches()
        if row.judge == judge and row.status not in FINAL_ROW_STATUSES
        for request in (row.requests or {}).values()
    }


def submit_batch(
    store: Store,
    *,
    judge: str,
    model: str | None = None,
    limit: int | None = None,
    per_item: bool = False,
    force: bool = False,
    llm: LLM | None = None,
    rules: Rules | None = None,
    out_dir: Path | None = None,
) -> JudgeReport:
    """Submit every trajectory not judged yet (at most `limit`) as one Batch-API job."""
    spec = get_judge(judge)
    if not spec.calls_llm:
        raise ValueError(f"--batch is for the LLM judges ({', '.join(LLM_JUDGES)}); {judge} runs offline")
    if per_item:
        raise ValueError("--batch sends one request per trajectory: it does not combine with --per-item")
    rules = rules or load_rules()
    llm = llm or LLM.from_env(model, store=store)
    prompt_version = spec.version()
    plan = plan_units(store, judge, rules=rules, model=llm.model, limit=limit, force=force,
                      exclude=batched_trajectories(store, judge))
    report = JudgeReport(judge=judge, skipped=plan.skipped, model=llm.model, prompt_version=prompt_version)
    if not plan.todo:
        return report
    lines: list[dict[str, Any]] = []
    requests: dict[str, dict[str, Any]] = {}
    for unit in plan.todo:
        view = evidence_of(store, unit, rules)
        messages, reply_model, version = initial_request(unit, judge, view, rules)
        line, key = batch_line(llm, unit.trajectory.id, messages, reply_model, prompt_version=version)
        lines.append(line)
        requests[unit.trajectory.id] = {"trajectory_id": unit.trajectory.id, "task": unit.trajectory.task,
                                        "checklist_sha": unit.checklist_sha, "content_hash": unit.trajectory.content_hash,
                                        "key": key}
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%f")
    path = Path(out_dir or batch_dir(store)) / f"{judge}-{stamp}.jsonl"
    params = {"judge": judge, "trajectories": len(lines), "checklists": plan.checklists, "input_path": str(path)}

    async def submit(_: Path, run: StageRun[dict[str, Any]]) -> dict[str, Any]:
        return await create_batch(llm, lines, path=path, metadata={"gcpc_judge": judge})

    run = run_stage(store, RunKind("batch-submit", judge), [path], submit, llm=llm, prompt_version=prompt_version,
                    rules_version=rules.version, params=params)
    report.run_id, report.totals, [batch] = run.run_id, run.totals, run.results
    store.judging.add_batch(JudgeBatchRow(
        id=batch["id"], judge=judge, model=llm.model, prompt_version=prompt_version,
        rules_version=rules.version, status=batch.get("status") or "submitted", input_path=str(path),
        input_file_id=batch.get("input_file_id"), output_file_id=batch.get("output_file_id"),
        error_file_id=batch.get("error_file_id"), n_requests=len(lines), requests=requests,
        run_id=report.run_id, created_at=utcnow(), collected_at=None, note=None,
    ))
    report.batch_id = batch["id"]
    return report


@dataclass
class CollectReport:
    """What `collect_batches` did, per batch."""

    batches: dict[str, str] = field(default_factory=dict)
    """batch id → its status after this call (`collected`, or the provider's, e.g. `in_progress`)."""
    reports: list[JudgeReport] = field(default_factory=list)
    not_ingested: dict[str, str] = field(default_factory=dict)
    """trajectory id → why its batch result was not stored (left for a live run)."""

    def lines(self) -> list[str]:
        out: list[str] = []
        for report in self.reports:
            out += report.lines()
        out += [f"{tid} not ingested: {why}" for tid, why in sorted(self.not_ingested.items())]
        out += [f"batch {bid}: {status}" for bid, status in self.batches.items()]
        if not self.batches:
            out.append("no batch waiting to be collected")
        return out


def _result_outcome(llm: LLM, row: dict[str, Any] | None, request: dict[str, Any], reply_model: type,
                    prompt_version: str) -> Outcome | str:
    """A batch result row as the first outcome of the judge path, or why it is unusable (str)."""
    if row is None:
        return "no result in the batch output"
    response = row.get("response") or {}
    if row.get("error") or response.get("status_code") != 200:
        error = row.get("error") or {}
        return f"batch request failed: HTTP {response.get('status_code')} {error.get('message') or ''}".strip()
    try:
        return accept_batch_reply(llm, response.get("body") or {}, reply_model, key=request["key"],
                                  prompt_version=prompt_version, tag=request["trajectory_id"])
    except LLMReplyError as error:
        return error


def collect_batches(
    store: Store,
    *,
    batch_id: str | None = None,
    llm: LLM | None = None,
    rules: Rules | None = None,
    concurrency: int | None = None,
    progress: Progress = True,
) -> CollectReport:
    """Fetch submitted batches (or just `batch_id`) and ingest every finished one."""
    rules = rules or load_rules()
    if batch_id is not None:
        row = store.judging.get_batch(batch_id)
        if row is None:
            raise KeyError(f"no batch {batch_id!r} in this project")
        rows = [row]
    else:
        rows = [r for r in store.judging.batches() if r.status not in FINAL_ROW_STATUSES]
    report = CollectReport()
    for row in rows:
        batch_llm = llm or LLM.from_env(row.model, store=store, concurrency=concurrency)
        status = _collect_one(store, row, batch_llm, rules, report, progress=progress)
        report.batches[row.id] = status
    return report


def _collect_one(store: Store, row: JudgeBatchRow, llm: LLM, rules: Rules, report: CollectReport, *, progress: Progress) -> str:
    judge = row.judge
    batch = llm.run_sync(lambda: retrieve_batch(llm, row.id))
    status = batch.get("status") or "unknown"
    if status not in BATCH_DONE_STATUSES:
        store.judging.update_batch(row.replaced(status=status))
        return status
    judged = JudgeReport(judge=judge, model=llm.model, prompt_version=row.prompt_version)
    params = {"judge": judge, "batch_id": row.id, "trajectories": row.n_requests}
    requests: dict[str, dict[str, Any]] = row.requests or {}
    results = llm.run_sync(lambda: batch_results(llm, batch))

    async def one(item: tuple[str, dict[str, Any]], run: StageRun[None]) -> None:
        custom_id, request = item
        unit = unit_for(store, judge, request["trajectory_id"], request["checklist_sha"], rules)
        if isinstance(unit, str):
            report.not_ingested[request["trajectory_id"]] = unit
            return
        if unit.trajectory.content_hash != request["content_hash"]:
            report.not_ingested[request["trajectory_id"]] = "trajectory re-imported with other content"
            return
        view = evidence_of(store, unit, rules)
        _, reply_model, version = initial_request(unit, judge, view, rules)
        first = _result_outcome(llm, results.get(custom_id), request, reply_model, version)
        if isinstance(first, str):
            report.not_ingested[request["trajectory_id"]] = first
            return
        result = await judge_unit(unit, judge, store=store, rules=rules, llm=llm, first=first)
        if result.status == "judged":
            store_judgment(store, result, run_id=run.run_id)
        account_result(judged, result)

    run = run_stage(store, RunKind("batch-collect", judge), list(requests.items()), one, llm=llm,
                    prompt_version=row.prompt_version, rules_version=rules.version, params=params,
                    counts=lambda _: judged.counts(), progress=progress, desc=f"collect {row.id}", unit="traj")
    judged.run_id, judged.totals = run.run_id, run.totals
    report.reports.append(judged)
    store.judging.update_batch(row.replaced(status="collected", collected_at=utcnow(),
                                            output_file_id=batch.get("output_file_id"),
                                            error_file_id=batch.get("error_file_id"),
                                            note=f"provider status {status}; {len(judged.judged)} judged"))
    return "collected"

