"""The run ledger, the LLM calls of each run, the content-addressed response cache and the
structured-output modes negotiated per endpoint (gcpc_core.llm, gcpc_core.runs)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar

from .common import Repository, Row, decode, dumps, utcnow


class LlmCallRow(Row):
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
    cache_hit: int | None = None
    """1 when the reply came from the response cache (no HTTP request)."""
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


_INSERT_LLM_CALL = LlmCallRow.insert_sql()
_INSERT_CACHE = "INSERT OR IGNORE INTO llm_cache (key, model, response, created_at) VALUES (?, ?, ?, ?)"
"""One row per LLM call is on the judging hot path: fixed statements, executemany for many."""


class RunRepository(Repository):
    """Runs (one row per stage run), their LLM calls, the response cache and negotiated modes."""

    # ---- LLM response cache ----------------------------------------------

    def cache_get(self, key: str) -> dict | None:
        """The cached chat-completion body for a request key, or None."""
        row = self.db.conn.execute("SELECT response FROM llm_cache WHERE key = ?", [key]).fetchone()
        return json.loads(row[0]) if row else None

    def cache_put(self, key: str, *, model: str, response: Mapping[str, Any], created_at: str | None = None) -> None:
        """Cache a validated reply; the first one stored for a key wins."""
        self.cache_put_many([(key, model, response, created_at or utcnow())])

    def cache_put_many(self, rows: Iterable[tuple[str, str, Mapping[str, Any], str]]) -> None:
        """Cache validated replies, each (key, model, response body, created at), in one transaction;
        the first one stored for a key wins."""
        with self.atomic() as db:
            db.conn.executemany(_INSERT_CACHE, [(key, model, dumps(body), at) for key, model, body, at in rows])

    # ---- runs and LLM calls -------------------------------------------------

    def start(
        self,
        *,
        kind: str,
        model: str | None,
        prompt_version: str | None,
        rules_version: str | None,
        params: dict | None = None,
        pid: int | None = None,
        host: str | None = None,
    ) -> str:
        """Open a `runs` row (status `running`) owned by process `pid` on `host`, and return its id."""
        started = utcnow()
        run_id = f"{kind}-{started.replace(':', '').replace('-', '')[:15]}-{uuid.uuid4().hex[:8]}"
        with self.atomic() as db:
            db["runs"].insert(
                {
                    "id": run_id,
                    "kind": kind,
                    "model": model,
                    "prompt_version": prompt_version,
                    "rules_version": rules_version,
                    "params": dumps(params or {}),
                    "status": "running",
                    "started_at": started,
                    "pid": pid,
                    "host": host,
                },
                pk="id",
            )
        return run_id

    def running(self, *, host: str) -> list[dict]:
        """Id and owning process of every `running` row started on `host`."""
        return list(self.db["runs"].rows_where("status = 'running' AND host = ?", [host], select="id, pid"))

    def interrupt(self, run_ids: Iterable[str]) -> None:
        """Close rows whose process is gone as `interrupted`."""
        with self.atomic() as db:
            for run_id in run_ids:
                db["runs"].update(run_id, {"status": "interrupted", "finished_at": utcnow()})

    def finish(
        self, run_id: str, *, status: str, wall_s: float, totals: dict, counts: dict[str, int] | None = None
    ) -> None:
        """Close a run with its status, wall time, totals (calls, tokens, cost) and what it counted."""
        row = {"status": status, "finished_at": utcnow(), "wall_s": wall_s, **totals}
        if counts is not None:
            row["counts"] = dumps(counts)
        with self.atomic() as db:
            db["runs"].update(run_id, row)

    def get(self, run_id: str) -> dict | None:
        rows = list(self.db["runs"].rows_where("id = ?", [run_id]))
        return decode(rows[0], "params", "counts") if rows else None

    def list(self, *, kind: str | None = None) -> list[dict]:
        where, args = ("kind = ?", [kind]) if kind else (None, [])
        return [decode(r, "params", "counts")
                for r in self.db["runs"].rows_where(where, args, order_by="started_at, id")]

    def record_llm_call(self, row: Mapping[str, Any]) -> None:
        """One LLM call: run id, cache hit, tokens, cost, latency, status and error (raw reply on errors)."""
        self.record_llm_calls([row])

    def record_llm_calls(self, rows: Iterable[Mapping[str, Any]]) -> None:
        """Several LLM calls (`LlmCallRow` columns; `created_at` defaults to now), in one transaction."""
        now = utcnow()
        values = [LlmCallRow.values_of({**row, "created_at": row.get("created_at") or now}) for row in rows]
        with self.atomic() as db:
            db.conn.executemany(_INSERT_LLM_CALL, values)

    def llm_calls(self, *, run_id: str | None = None) -> list[dict]:
        """The recorded calls (of one run), oldest first."""
        where, args = ("run_id = ?", [run_id]) if run_id else (None, [])
        return list(self.db["llm_calls"].rows_where(where, args, order_by="id"))

    # ---- negotiated structured-output modes ---------------------------------------

    def llm_mode(self, endpoint: str, model: str) -> dict | None:
        """The structured mode negotiated for this endpoint and model (with the modes it rejected), or None."""
        rows = list(self.db["llm_modes"].rows_where("endpoint = ? AND model = ?", [endpoint, model]))
        return decode(rows[0], "rejected") if rows else None

    def set_llm_mode(
        self,
        endpoint: str,
        model: str,
        mode: str,
        *,
        rejected: dict[str, str] | None = None,
        context_window: int | None = None,
    ) -> None:
        """Store the mode that worked; `rejected`: modes the endpoint refused first, with its message;
        `context_window`: the server's figure when known (None keeps the one stored)."""
        row = {"endpoint": endpoint, "model": model, "mode": mode, "rejected": dumps(rejected or {}),
               "negotiated_at": utcnow()}
        if context_window is not None:
            row["context_window"] = context_window
        with self.atomic() as db:
            db["llm_modes"].upsert(row, pk=("endpoint", "model"))

    def llm_modes(self) -> list[dict]:
        return [decode(r, "rejected") for r in self.db["llm_modes"].rows_where(order_by="endpoint, model")]
    def progress(self, run_id: str) -> dict[str, Any]:
        """What run `run_id` has stored so far: judged trajectories, checklists, and its LLM calls
        with tokens and cost (the `runs` row itself is only totalled when the run ends)."""
        db = self.db
        units = db.execute("SELECT count(*) FROM judge_units WHERE run_id = ?", [run_id]).fetchone()[0]
        checklists = db.execute("SELECT count(*) FROM checklists WHERE run_id = ?", [run_id]).fetchone()[0]
        calls = db.execute(
            "SELECT count(*), coalesce(sum(cache_hit = 0), 0), coalesce(sum(cache_hit), 0),"
            " coalesce(sum(status != 'ok'), 0), coalesce(sum(prompt_tokens), 0), coalesce(sum(cached_tokens), 0),"
            " coalesce(sum(completion_tokens), 0), coalesce(sum(cost_usd), 0.0) FROM llm_calls WHERE run_id = ?",
            [run_id],
        ).fetchone()
        keys = ("calls", "http_calls", "cache_hits", "errors", "prompt_tokens", "cached_tokens",
                "completion_tokens", "cost_usd")
        return {"judged": units, "checklists": checklists, **dict(zip(keys, calls))}

