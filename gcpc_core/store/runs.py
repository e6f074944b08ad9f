"""The run ledger, the LLM calls of each run, the content-addressed response cache and the
structured-output modes negotiated per endpoint (gcpc_core.llm, gcpc_core.runs)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable
from typing import Any

from .common import Repository, decode, dumps, utcnow

_LLM_CALL_COLUMNS = (
    "run_id", "created_at", "key", "model", "prompt_version", "tag", "cache_hit", "status", "prompt_tokens",
    "cached_tokens", "completion_tokens", "cost_usd", "latency_s", "retries", "error", "raw_reply",
)
_INSERT_LLM_CALL = (
    f"INSERT INTO llm_calls ({', '.join(_LLM_CALL_COLUMNS)}) VALUES ({', '.join('?' * len(_LLM_CALL_COLUMNS))})"
)


class RunRepository(Repository):
    """Runs (one row per stage run), their LLM calls, the response cache and negotiated modes."""

    # ---- LLM response cache ----------------------------------------------

    def cache_get(self, key: str) -> dict | None:
        """The cached chat-completion body for a request key, or None."""
        row = self.db.conn.execute("SELECT response FROM llm_cache WHERE key = ?", [key]).fetchone()
        return json.loads(row[0]) if row else None

    def cache_put(self, key: str, *, model: str, response: dict) -> None:
        """Cache a validated reply; the first one stored for a key wins."""
        with self.atomic() as db:  # plain SQL: one row per LLM call is on the judging hot path
            db.conn.execute(
                "INSERT OR IGNORE INTO llm_cache (key, model, response, created_at) VALUES (?, ?, ?, ?)",
                (key, model, dumps(response), utcnow()),
            )

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

    def record_llm_call(self, row: dict) -> None:
        """One LLM call: run id, cache hit, tokens, cost, latency, status and error (raw reply on errors)."""
        unknown = set(row) - set(_LLM_CALL_COLUMNS)
        if unknown:
            raise ValueError(f"llm_calls has no column(s) {sorted(unknown)}")
        row = {**row, "created_at": row.get("created_at") or utcnow()}
        with self.atomic() as db:  # one fixed prepared statement: one row per LLM call is on the judging hot path
            db.conn.execute(_INSERT_LLM_CALL, tuple(row.get(c) for c in _LLM_CALL_COLUMNS))

    def llm_calls(self, *, run_id: str | None = None) -> list[dict]:
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

