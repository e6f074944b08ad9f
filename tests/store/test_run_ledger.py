"""The run ledger and the negotiated structured-output modes as the runs repository writes and reads them
back: typed rows, JSON columns round-tripped, unknown ids and rows edited outside GCPC."""

from __future__ import annotations

import pytest

from gcpc_core.store import LLMCallRow, LLMModeRow, RunProgress, RunRow, Store, StoredRowError, utcnow

from .helpers import llm_modes

VERSIONS = {"model": "m", "prompt_version": "p1", "rules_version": "r1"}


def test_a_started_run_reads_back_as_a_running_row(store: Store) -> None:
    params = {"judge": "probe", "limit": 3, "note": "café"}
    run_id = store.runs.start(RunRow(kind="judge-probe", params=params, pid=41, host="h1", **VERSIONS)).id
    run = store.runs.get(run_id)
    assert isinstance(run, RunRow) and run.id == run_id and run_id.startswith("judge-probe-")
    assert (run.kind, run.status, run.params, run.pid, run.host) == ("judge-probe", "running", params, 41, "h1")
    assert (run.model, run.prompt_version, run.rules_version) == ("m", "p1", "r1")
    assert run.started_at and run.finished_at is None and run.counts is None and run.calls is None
    assert store.db["runs"].get(run_id)["params"] == '{"judge": "probe", "limit": 3, "note": "café"}'  # JSON text


def test_a_run_without_params_stores_an_empty_mapping(store: Store) -> None:
    run = store.runs.get(store.runs.start(RunRow(kind="score")).id)
    assert run is not None and run.params == {} and run.pid is None and run.host is None


def test_an_unknown_run_is_none_and_an_empty_ledger_lists_nothing(store: Store) -> None:
    assert store.runs.get("judge-20260101T000000-deadbeef") is None
    assert store.runs.list() == [] and store.runs.list(kind="score") == []
    assert store.runs.running(host="h1") == []


def test_list_is_oldest_first_and_filters_by_kind(store: Store) -> None:
    ids = [store.runs.start(RunRow(kind=kind, **VERSIONS)).id for kind in ("score", "import", "score")]
    with store.atomic() as db:  # started in this order, a second apart
        for n, run_id in enumerate(ids):
            db["runs"].update(run_id, {"started_at": f"2026-01-01T00:00:0{n}+00:00"})
    assert [r.id for r in store.runs.list()] == ids
    assert [r.id for r in store.runs.list(kind="score")] == [ids[0], ids[2]]
    assert [r.kind for r in store.runs.list(kind="import")] == ["import"]


def test_finish_stores_status_totals_and_counts(store: Store) -> None:
    started = store.runs.start(RunRow(kind="judge-gcpc", **VERSIONS))
    totals = {"calls": 3, "http_calls": 2, "cache_hits": 1, "errors": 0, "prompt_tokens": 120, "cached_tokens": 40,
              "completion_tokens": 30, "cost_usd": 0.25, "unpriced_calls": 0, "structured_mode": "json_object"}
    store.runs.finish(started.replaced(status="done", wall_s=1.5, **totals, counts={"judged": 2, "failed": 0}))
    run = store.runs.get(started.id)
    assert run is not None and run.status == "done" and run.finished_at and run.wall_s == 1.5
    assert run.model_dump(include=set(totals)) == totals
    assert run.counts == {"judged": 2, "failed": 0}


def test_finish_without_counts_leaves_them_unset(store: Store) -> None:
    started = store.runs.start(RunRow(kind="report", **VERSIONS))
    assert store.runs.get(started.id) == started  # the row `start` returns is the row stored
    store.runs.finish(started.replaced(status="failed", wall_s=0.1))
    run = store.runs.get(started.id)
    assert run is not None and (run.status, run.counts, run.calls) == ("failed", None, None) and run.finished_at


def test_a_total_that_is_no_column_and_a_run_not_ended_are_refused_and_leave_the_run_open(store: Store) -> None:
    started = store.runs.start(RunRow(kind="score", **VERSIONS))
    with pytest.raises(ValueError, match="tokens"):
        store.runs.finish(started.replaced(status="done", wall_s=1.0, tokens=5))
    with pytest.raises(ValueError, match="not running"):
        store.runs.finish(started.replaced(wall_s=1.0))
    assert store.runs.get(started.id).status == "running"


def test_a_new_run_is_running_without_an_id_and_an_unknown_run_cannot_finish(store: Store) -> None:
    for given in ({"id": "score-1"}, {"status": "done"}, {"finished_at": utcnow()}):
        with pytest.raises(ValueError, match="new run"):
            store.runs.start(RunRow(kind="score", **given))
    with pytest.raises(KeyError, match="no run 'nope' to finish"):
        store.runs.finish(RunRow(id="nope", kind="score", status="done", wall_s=0.0))
    assert store.runs.list() == []


def test_running_sees_only_open_rows_of_its_host_and_interrupt_closes_them(store: Store) -> None:
    mine = store.runs.start(RunRow(kind="judge-probe", pid=10, host="h1", **VERSIONS)).id
    other_host = store.runs.start(RunRow(kind="judge-probe", pid=11, host="h2", **VERSIONS)).id
    closed = store.runs.start(RunRow(kind="score", pid=12, host="h1", **VERSIONS)).id
    store.runs.finish(store.runs.get(closed).replaced(status="done", wall_s=0.0))
    [row] = store.runs.running(host="h1")
    assert (row.id, row.pid) == (mine, 10)
    store.runs.interrupt([row.id])
    run = store.runs.get(mine)
    assert run is not None and run.status == "interrupted" and run.finished_at
    assert store.runs.running(host="h1") == [] and [r.id for r in store.runs.running(host="h2")] == [other_host]


def test_progress_sums_what_the_run_stored_so_far(store: Store) -> None:
    run_id = store.runs.start(RunRow(kind="judge-gcpc", **VERSIONS)).id
    assert store.runs.progress(run_id) == RunProgress(judged=0, checklists=0, calls=0, http_calls=0, cache_hits=0,
                                                      errors=0, prompt_tokens=0, cached_tokens=0,
                                                      completion_tokens=0, cost_usd=0.0)
    store.runs.record_llm_call(LLMCallRow(run_id=run_id, status="ok", cache_hit=0, prompt_tokens=100,
                                cached_tokens=10, completion_tokens=20, cost_usd=0.5, created_at=utcnow()))
    store.runs.record_llm_call(LLMCallRow(run_id=run_id, status="timeout", cache_hit=0, created_at=utcnow()))
    store.runs.record_llm_call(LLMCallRow(run_id=run_id, status="ok", cache_hit=1, prompt_tokens=100, created_at=utcnow()))
    other = store.runs.start(RunRow(kind="judge-gcpc", **VERSIONS)).id
    store.runs.record_llm_call(LLMCallRow(run_id=other, status="ok", cache_hit=0, prompt_tokens=999, created_at=utcnow()))
    live = store.runs.progress(run_id)
    assert (live.calls, live.http_calls, live.cache_hits, live.errors) == (3, 2, 1, 1)
    assert (live.prompt_tokens, live.cached_tokens, live.completion_tokens) == (200, 10, 20)
    assert live.cost_usd == pytest.approx(0.5) and (live.judged, live.checklists) == (0, 0)


def test_a_run_row_edited_outside_gcpc_is_refused_when_read(store: Store) -> None:
    run_id = store.runs.start(RunRow(kind="score", **VERSIONS)).id
    with store.atomic() as db:
        db["runs"].update(run_id, {"status": "paused"})
    with pytest.raises(StoredRowError, match="status"):
        store.runs.get(run_id)
    with pytest.raises(StoredRowError, match="status"):
        store.runs.list()


def test_run_counts_that_are_not_a_mapping_of_numbers_are_refused(store: Store) -> None:
    run_id = store.runs.start(RunRow(kind="score", **VERSIONS)).id
    with store.atomic() as db:
        db["runs"].update(run_id, {"counts": '{"judged": "many"}'})
    with pytest.raises(StoredRowError, match="counts"):
        store.runs.get(run_id)


def test_run_params_that_are_no_json_are_refused(store: Store) -> None:
    run_id = store.runs.start(RunRow(kind="score", **VERSIONS)).id
    with store.atomic() as db:
        db["runs"].update(run_id, {"params": "{judge: probe"})
    with pytest.raises(ValueError):
        store.runs.get(run_id)


# ---------------------------------------------------------------- negotiated structured-output modes


def test_an_unknown_endpoint_has_no_mode(store: Store) -> None:
    assert store.runs.llm_mode("http://127.0.0.1:1/v1", "m") is None and llm_modes(store) == []


def test_a_negotiated_mode_round_trips_with_its_rejections(store: Store) -> None:
    rejected = {"parse": "HTTP 400: response_format not supported", "json_schema": "HTTP 500: 'type' — no"}
    store.runs.set_llm_mode(LLMModeRow(endpoint="http://e/v1", model="m", mode="json_object", rejected=rejected,
                                       context_window=4096))
    row = store.runs.llm_mode("http://e/v1", "m")
    assert isinstance(row, LLMModeRow) and (row.endpoint, row.model, row.mode) == ("http://e/v1", "m", "json_object")
    assert row.rejected == rejected and row.context_window == 4096 and row.negotiated_at
    assert store.runs.llm_mode("http://e/v1", "other") is None


def test_setting_a_mode_again_replaces_it_but_keeps_a_known_context_window(store: Store) -> None:
    store.runs.set_llm_mode(LLMModeRow(endpoint="http://e/v1", model="m", mode="json_schema", context_window=8192))
    store.runs.set_llm_mode(LLMModeRow(endpoint="http://e/v1", model="m", mode="json_object"))
    row = store.runs.llm_mode("http://e/v1", "m")
    assert row is not None and (row.mode, row.rejected, row.context_window) == ("json_object", {}, 8192)
    store.runs.set_llm_mode(LLMModeRow(endpoint="http://e/v1", model="m", mode="json_object", context_window=2048))
    assert store.runs.llm_mode("http://e/v1", "m").context_window == 2048


def test_llm_modes_lists_every_pair_by_endpoint_and_model(store: Store) -> None:
    for endpoint, model in (("http://b/v1", "m"), ("http://a/v1", "z"), ("http://a/v1", "m")):
        store.runs.set_llm_mode(LLMModeRow(endpoint=endpoint, model=model, mode="parse"))
    assert [(r.endpoint, r.model) for r in llm_modes(store)] == [
        ("http://a/v1", "m"), ("http://a/v1", "z"), ("http://b/v1", "m")]


def test_a_mode_row_with_rejections_that_are_no_mapping_is_refused(store: Store) -> None:
    store.runs.set_llm_mode(LLMModeRow(endpoint="http://e/v1", model="m", mode="json_object"))
    with store.atomic() as db:
        db["llm_modes"].update(("http://e/v1", "m"), {"rejected": '["parse"]'})
    with pytest.raises(StoredRowError, match="rejected"):
        store.runs.llm_mode("http://e/v1", "m")
