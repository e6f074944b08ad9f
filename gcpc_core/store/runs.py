"""The run ledger, the LLM calls of each run, the content-addressed response cache and the
structured-output modes negotiated per endpoint (gcpc_core.llm, gcpc_core.runs)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from .common import JSON, Repository, Row, utcnow


class LLMCallRow(Row):
    """One LLM call of a run: what it cost, how it ended, and the reply when it was unusable."""

    TABLE: ClassVar[str] = "llm_calls"

    id: int | None = None
    """Row id (assigned on insert)."""
    run_id: str | None = None
    """The `runs` row the call belongs to (None outside a run)."""
    created_at: str
    """When the call finished."""
    key: str | None = None
    """Response-cache key of the request."""
    model: str | None = None
    """The model asked."""
    prompt_version: str | None = None
    """Version of the prompt sent."""
    tag: str | None = None
    """Free label of the call, e.g. the trajectory or task id."""
    cache_hit: bool | None = None
    """True when the reply came from the response cache (no HTTP request)."""
    status: str
    """`ok`, or the error reason (`timeout`, `schema`, `refusal`, …)."""
    prompt_tokens: int | None = None
    """Prompt tokens the server reported."""
    cached_tokens: int | None = None
    """Part of the prompt tokens the provider served from its prompt cache."""
    completion_tokens: int | None = None
    """Completion tokens the server reported."""
    cost_usd: float | None = None
    """Estimated cost (None when the model has no price)."""
    latency_s: float | None = None
    """Seconds the request took, retries included."""
    retries: int | None = None
    """Retries the client made."""
    error: str | None = None
    """The error message of a failed call."""
    raw_reply: str | None = None
    """The reply text of an unusable reply."""


class LLMCacheRow(Row):
    """One validated reply in the content-addressed response cache."""

    TABLE: ClassVar[str] = "llm_cache"

    key: str
    """The request key (a hash of everything that decides the reply)."""
    model: str
    """The model that replied."""
    response: Annotated[dict[str, Any], JSON]
    """The chat-completion body as received."""
    created_at: str
    """When it was received."""


_INSERT_LLM_CALL = LLMCallRow.insert_sql()
_INSERT_CACHE = LLMCacheRow.insert_sql("INSERT OR IGNORE")
"""One row per LLM call is on the judging hot path: fixed statements, executemany for many."""


RunStatus = Literal["running", "done", "interrupted", "failed"]


class RunRow(Row):
    """One stage run in the ledger: what ran with which versions, how it ended, what it cost."""

    TABLE: ClassVar[str] = "runs"

    id: str = ""
    """`<kind>-<start time>-<random>`: sorts by kind, then start (`RunRepository.start` sets it; "" before)."""
    kind: str
    """What ran: `import`, `synthesize`, `judge-<judge>`, `score`, `perturb-<judge>`, `report`, …"""
    model: str | None = None
    """The LLM model (None for runs without one)."""
    prompt_version: str | None = None
    """Version of the stage's prompt."""
    rules_version: str | None = None
    """Hash of `rules/` the run used."""
    params: Annotated[dict[str, Any] | None, JSON] = None
    """The run's parameters (options given, planned totals such as `trajectories`)."""
    status: RunStatus = "running"
    """`running` until it ends `done`, `interrupted` (Ctrl-C, or its process died) or `failed`."""
    started_at: str = Field(default_factory=utcnow)
    """When the run started."""
    finished_at: str | None = None
    """When it ended (None while running)."""
    wall_s: float | None = None
    """Wall time in seconds, once ended."""
    calls: int | None = None
    """LLM calls made, cache hits included (totalled when the run ends)."""
    http_calls: int | None = None
    """LLM calls that reached the endpoint."""
    cache_hits: int | None = None
    """LLM calls answered from the response cache."""
    errors: int | None = None
    """LLM calls that failed."""
    prompt_tokens: int | None = None
    """Prompt tokens of all calls."""
    cached_tokens: int | None = None
    """Prompt tokens the endpoint served from its prompt cache."""
    completion_tokens: int | None = None
    """Completion tokens of all calls."""
    cost_usd: float | None = None
    """Cost in USD; None when no call could be priced, or the stage keeps no LLM totals."""
    unpriced_calls: int | None = None
    """Calls whose model has no price, so `cost_usd` leaves them out."""
    pid: int | None = None
    """The process that runs it, so a run killed with SIGKILL can be told from a live one."""
    host: str | None = None
    """The host of that process."""
    structured_mode: str | None = None
    """The structured-output mode its LLM requests used."""
    counts: Annotated[dict[str, int] | None, JSON] = None
    """What it counted when it ended (imported, judged, frozen, …); None if it failed before counting."""


class LLMModeRow(Row):
    """The structured-output mode negotiated for one (endpoint, model)."""

    TABLE: ClassVar[str] = "llm_modes"

    endpoint: str
    """The endpoint's base URL, normalized."""
    model: str
    """The model asked for."""
    mode: str
    """The mode that worked, or the marker that none has yet."""
    rejected: Annotated[dict[str, str] | None, JSON] = None
    """Modes the endpoint refused first → its message."""
    context_window: int | None = None
    """Tokens of context the server reported (None when unknown)."""
    negotiated_at: str = Field(default_factory=utcnow)
    """When the mode was stored."""


class RunProgress(BaseModel):
    """What one run has stored so far, summed from its own rows (the `runs` row is totalled at the end)."""

    model_config = ConfigDict(use_attribute_docstrings=True, frozen=True)

    judged: int
    """Judge units (trajectories judged) written under the run."""
    checklists: int
    """Checklists stored under the run."""
    calls: int
    """LLM calls recorded, cache hits included."""
    http_calls: int
    """Calls that reached the endpoint."""
    cache_hits: int
    """Calls answered from the response cache."""
    errors: int
    """Calls whose status is not `ok`."""
    prompt_tokens: int
    """Prompt tokens so far."""
    cached_tokens: int
    """Prompt tokens served from the endpoint's prompt cache."""
    completion_tokens: int
    """Completion tokens so far."""
    cost_usd: float
    """Cost in USD so far (unpriced calls count 0)."""


_INSERT_RUN = RunRow.insert_sql()
_UPDATE_RUN = RunRow.update_sql("id")


class RunRepository(Repository):
    """Runs (one row per stage run), their LLM calls, the response cache and negotiated modes."""

    # ---- LLM response cache ----------------------------------------------

    def cache_get(self, key: str) -> dict | None:
        """The cached chat-completion body for a request key, or None."""
        row = self.db.conn.execute("SELECT response FROM llm_cache WHERE key = ?", [key]).fetchone()
        return json.loads(row[0]) if row else None

    def cache_put(self, row: LLMCacheRow) -> None:
        """Cache a validated reply; the first one stored for a key wins."""
        self.cache_put_many([row])

    def cache_put_many(self, rows: Iterable[LLMCacheRow]) -> None:
        """Cache validated replies in one transaction; the first one stored for a key wins."""
        with self.atomic() as db:
            db.conn.executemany(_INSERT_CACHE, [row.db_values() for row in rows])

    # ---- runs and LLM calls -------------------------------------------------

    def start(self, run: RunRow) -> RunRow:
        """Open a `runs` row and return it as stored: the run is new (`running`, not ended), and its id is
        the store's to set (ValueError otherwise); parameters not given are stored as an empty mapping.
        Its `pid` and `host` say which process owns it."""
        if run.id or run.status != "running" or run.finished_at is not None:
            raise ValueError("a new run is running and has no id or end yet; the store sets its id")
        started = run.started_at.replace(":", "").replace("-", "")[:15]
        run = run.replaced(id=f"{run.kind}-{started}-{uuid.uuid4().hex[:8]}", params=run.params or {})
        with self.atomic() as db:
            db.conn.execute(_INSERT_RUN, run.db_values())
        return run

    def running(self, *, host: str) -> list[RunRow]:
        """Every `running` row started on `host` (its `pid` says which process owns it)."""
        rows = self.db["runs"].rows_where("status = 'running' AND host = ?", [host], order_by="started_at, rowid")
        return [RunRow.from_db(r) for r in rows]

    def interrupt(self, run_ids: Iterable[str]) -> None:
        """Close rows whose process is gone as `interrupted`."""
        with self.atomic() as db:
            for run_id in run_ids:
                db["runs"].update(run_id, {"status": "interrupted", "finished_at": utcnow()})

    def finish(self, run: RunRow) -> None:
        """Close a run: rewrite its row (`run.replaced(...)` of the row `start` returned) with how it ended,
        its wall time, totals (calls, tokens, cost) and what it counted, stamped `finished_at` now unless
        given. ValueError for a row still `running`, KeyError for a run never started."""
        if run.status == "running":
            raise ValueError(f"run {run.id!r} is finished as done, interrupted or failed, not running")
        run = run if run.finished_at is not None else run.replaced(finished_at=utcnow())
        with self.atomic() as db:
            if not db.conn.execute(_UPDATE_RUN, run.update_values("id")).rowcount:
                raise KeyError(f"no run {run.id!r} to finish")

    def get(self, run_id: str) -> RunRow | None:
        """The run's row, or None for an id never started."""
        rows = list(self.db["runs"].rows_where("id = ?", [run_id]))
        return RunRow.from_db(rows[0]) if rows else None

    def list(self, *, kind: str | None = None) -> list[RunRow]:
        """Every run (of `kind`), oldest first (runs started within one second in the order they started)."""
        where, args = ("kind = ?", [kind]) if kind else (None, [])
        return [RunRow.from_db(r) for r in self.db["runs"].rows_where(where, args, order_by="started_at, rowid")]

    def record_llm_call(self, row: LLMCallRow) -> None:
        """One LLM call: run id, cache hit, tokens, cost, latency, status and error (raw reply on errors)."""
        self.record_llm_calls([row])

    def record_llm_calls(self, rows: Iterable[LLMCallRow]) -> None:
        """Several LLM calls, in one transaction (their ids are assigned here)."""
        with self.atomic() as db:
            db.conn.executemany(_INSERT_LLM_CALL, [row.db_values() for row in rows])

    # ---- negotiated structured-output modes ---------------------------------------

    def llm_mode(self, endpoint: str, model: str) -> LLMModeRow | None:
        """The structured mode negotiated for this endpoint and model (with the modes it rejected), or None."""
        rows = list(self.db["llm_modes"].rows_where("endpoint = ? AND model = ?", [endpoint, model]))
        return LLMModeRow.from_db(rows[0]) if rows else None

    def set_llm_mode(self, row: LLMModeRow) -> None:
        """Store the mode that worked for (endpoint, model); `rejected`: modes the endpoint refused first,
        with its message (none given is stored as an empty mapping); `context_window`: the server's figure
        when known (None keeps the one stored)."""
        values = dict(zip(LLMModeRow.columns(), row.replaced(rejected=row.rejected or {}).db_values()))
        if row.context_window is None:
            del values["context_window"]
        with self.atomic() as db:
            db["llm_modes"].upsert(values, pk=("endpoint", "model"))

    def progress(self, run_id: str) -> RunProgress:
        """What run `run_id` has stored so far: judged trajectories, checklists, and its LLM calls
        with tokens and cost (the `runs` row itself is only totalled when the run ends)."""
        db = self.db
        units = db.execute("SELECT count(*) FROM judge_units WHERE run_id = ?", [run_id]).fetchone()[0]
        checklists = db.execute("SELECT count(*) FROM checklists WHERE run_id = ?", [run_id]).fetchone()[0]
        calls = next(iter(db.query(  # each sum named as its RunProgress field
            "SELECT count(*) AS calls, coalesce(sum(cache_hit = 0), 0) AS http_calls,"
            " coalesce(sum(cache_hit), 0) AS cache_hits, coalesce(sum(status != 'ok'), 0) AS errors,"
            " coalesce(sum(prompt_tokens), 0) AS prompt_tokens, coalesce(sum(cached_tokens), 0) AS cached_tokens,"
            " coalesce(sum(completion_tokens), 0) AS completion_tokens, coalesce(sum(cost_usd), 0.0) AS cost_usd"
            " FROM llm_calls WHERE run_id = ?", [run_id])))
        return RunProgress(judged=units, checklists=checklists, **calls)

