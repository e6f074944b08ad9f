"""The LLM layer against the fake server with the real `openai` client: parsing, faults,
cache, accounting, concurrency."""

from __future__ import annotations

import asyncio
import json
import ssl
import time
from typing import Literal

import openai
import pytest
from fake_openai import (
    FAKE_MODEL,
    FakeOpenAI,
    Reply,
    fault_429,
    fault_500,
    fault_malformed,
    fault_refusal,
    fault_timeout,
    iter_jsonl,
)
from local_helpers import LLMRequest, complete_many
from pydantic import BaseModel

from gcpc_core.llm import (
    LLM,
    JSON_OBJECT_PROMPT,
    LLMCallError,
    LLMNotConfigured,
    LLMRefusal,
    LLMReplyError,
    Price,
    Usage,
    estimate_cost,
    llm_status,
    load_prices,
    price_for,
)
from gcpc_core.runs import RunKind, StageRun, run_stage
from store.helpers import llm_calls


class Answer(BaseModel):
    verdict: Literal["Yes", "No"]
    reason: str


OK = {"verdict": "Yes", "reason": "the file exists"}


def ask_async(llm: LLM, question: str = "question one", *, prompt_version: str = "v1", **kwargs):
    messages = [{"role": "system", "content": "You judge."}, {"role": "user", "content": question}]
    return llm.complete(messages, Answer, prompt_version=prompt_version, **kwargs)


def ask(llm: LLM, question: str = "question one", *, prompt_version: str = "v1", **kwargs):
    return llm.run_sync(lambda: ask_async(llm, question, prompt_version=prompt_version, **kwargs))


def in_run(store, llm: LLM, work, **options) -> StageRun:
    """`work()` (async) as the one unit of a recorded LLM run."""
    async def one(_: None, run: StageRun):
        return await work()
    return run_stage(store, RunKind("synthesize"), [None], one, llm=llm, prompt_version="v1", **options)


# ---- structured output -------------------------------------------------------------


def test_parse_happy_path(fake_openai: FakeOpenAI, make_llm, store) -> None:
    fake_openai.on("question one", Reply.json(OK))
    result = ask(make_llm())
    assert result.parsed == Answer(**OK)
    assert not result.cache_hit and result.retries == 0
    sent = fake_openai.requests[0]
    assert sent["model"] == FAKE_MODEL and sent["temperature"] == 0.0
    assert sent["response_format"]["type"] == "json_schema"
    assert sent["response_format"]["json_schema"]["name"] == "Answer"
    assert sent["response_format"]["json_schema"]["strict"] is True
    [call] = llm_calls(store)
    assert call.status == "ok" and call.cache_hit == 0 and call.key == result.key


@pytest.mark.parametrize("mode", ["json_schema", "json_object"])
def test_fallback_structured_modes(mode: str, fake_openai: FakeOpenAI, make_llm) -> None:
    fake_openai.on("question one", Reply.json(OK))
    result = ask(make_llm(structured_mode=mode))
    assert result.parsed.verdict == "Yes"
    sent = fake_openai.requests[0]
    assert sent["response_format"]["type"] == mode
    if mode == "json_object":
        assert sent["messages"][0]["content"].startswith(JSON_OBJECT_PROMPT.split("{")[0])
        assert '"verdict"' in sent["messages"][0]["content"]
    else:
        assert sent["response_format"]["json_schema"]["strict"] is False


def test_code_fenced_json_is_accepted(fake_openai: FakeOpenAI, make_llm) -> None:
    fake_openai.on("question one", Reply.text("```json\n" + json.dumps(OK) + "\n```"))
    assert ask(make_llm(structured_mode="json_object")).parsed == Answer(**OK)


# ---- faults: the client's own retries ------------------------------------------------


@pytest.mark.parametrize("fault", [fault_429(), fault_500()], ids=["429", "500"])
def test_retryable_status_then_success(fault: Reply, fake_openai: FakeOpenAI, make_llm) -> None:
    fake_openai.on("question one", fault, Reply.json(OK))
    result = ask(make_llm())
    assert result.parsed == Answer(**OK)
    assert fake_openai.request_count == 2
    assert result.retries == 1


def test_timeout_then_success(fake_openai: FakeOpenAI, make_llm) -> None:
    fake_openai.on("question one", fault_timeout(2.0), Reply.json(OK))
    started = time.monotonic()
    result = ask(make_llm(timeout=0.3, max_retries=2))
    assert result.parsed == Answer(**OK)
    assert fake_openai.request_count == 2
    assert time.monotonic() - started < 2.0  # did not wait for the slow answer


def test_timeouts_exhaust_retries(fake_openai: FakeOpenAI, make_llm, store) -> None:
    fake_openai.on("question one", fault_timeout(2.0))
    with pytest.raises(LLMCallError) as caught:
        ask(make_llm(timeout=0.2, max_retries=1))
    assert caught.value.reason == "timeout"
    assert fake_openai.request_count == 2
    assert llm_calls(store)[0].status == "timeout"


def test_bad_request_is_not_retried(fake_openai: FakeOpenAI, make_llm) -> None:
    fake_openai.on("question one", Reply.error(400, "response_format not supported"))
    with pytest.raises(LLMCallError) as caught:
        ask(make_llm(structured_mode="parse"))
    assert caught.value.status == 400 and "GCPC_STRUCTURED_MODE" in str(caught.value)
    assert "response_format not supported" in str(caught.value)
    assert fake_openai.request_count == 1


# ---- bad replies: typed errors, never cached ------------------------------------------


def test_malformed_json_raises_and_is_not_cached(fake_openai: FakeOpenAI, make_llm, store) -> None:
    fake_openai.on("question one", fault_malformed('{"verdict": "Yes", '), Reply.json(OK))
    llm = make_llm()
    with pytest.raises(LLMReplyError) as caught:
        ask(llm)
    assert caught.value.reason == "invalid_json"
    assert caught.value.raw == '{"verdict": "Yes", '
    assert caught.value.usage.completion_tokens > 0
    [call] = llm_calls(store)
    assert call.status == "invalid_json" and call.raw_reply == '{"verdict": "Yes", '
    # not cached: the same request goes to the server again, and now succeeds
    assert ask(llm).parsed == Answer(**OK)
    assert fake_openai.request_count == 2


def test_raw_control_characters_inside_strings_are_read_and_other_broken_json_is_not(
    fake_openai: FakeOpenAI, make_llm, store
) -> None:
    """A grammar-constrained server wrote a raw newline inside a string (invalid JSON, unambiguous):
    the reply is read; the same text cut short is still `invalid_json`."""
    fake_openai.on("question one", fault_malformed('{"verdict": "Yes",\n "reason": "line one\nline two"}'))
    assert ask(make_llm()).parsed.reason == "line one\nline two"
    fake_openai.on("question two", fault_malformed('{"verdict": "Yes", "reason": "line one\nline'))
    with pytest.raises(LLMReplyError) as caught:
        ask(make_llm(), "question two")
    assert caught.value.reason == "invalid_json"


def test_schema_violation_raises(fake_openai: FakeOpenAI, make_llm) -> None:
    fake_openai.on("question one", Reply.json({"verdict": "Maybe", "reason": "?"}))
    with pytest.raises(LLMReplyError) as caught:
        ask(make_llm())
    assert caught.value.reason == "schema"
    assert "Maybe" in caught.value.raw


def test_refusal_raises(fake_openai: FakeOpenAI, make_llm, store) -> None:
    fake_openai.on("question one", fault_refusal("I won't judge that."))
    with pytest.raises(LLMRefusal) as caught:
        ask(make_llm())
    assert caught.value.reason == "refusal" and caught.value.raw == "I won't judge that."
    assert llm_calls(store)[0].status == "refusal"
    assert store.runs.cache_get(llm_calls(store)[0].key) is None


def test_truncated_reply_raises(fake_openai: FakeOpenAI, make_llm) -> None:
    fake_openai.on("question one", Reply(content='{"verdict": "Ye', finish_reason="length"))
    with pytest.raises(LLMReplyError) as caught:
        ask(make_llm())
    assert caught.value.reason == "truncated"


# ---- cache ----------------------------------------------------------------------------------


def test_identical_request_makes_zero_http_calls(fake_openai: FakeOpenAI, make_llm, store) -> None:
    fake_openai.on("question one", Reply.json(OK))
    first = ask(make_llm())
    assert fake_openai.request_count == 1
    again = ask(make_llm())  # a new layer (as in a rerun) over the same project DB
    assert fake_openai.request_count == 1
    assert again.cache_hit and again.parsed == first.parsed and again.usage == Usage()
    assert [c.cache_hit for c in llm_calls(store)] == [0, 1]


@pytest.mark.parametrize(
    "change",
    [
        {"prompt_version": "v2"},
        {"temperature": 0.7},
        {"question": "question one, reworded"},
    ],
)
def test_cache_key_covers_request(change: dict, fake_openai: FakeOpenAI, make_llm) -> None:
    fake_openai.on("question one", Reply.json(OK))
    llm = make_llm()
    ask(llm)
    ask(llm, **change)
    assert fake_openai.request_count == 2


def test_cache_key_covers_model(fake_openai: FakeOpenAI, make_llm) -> None:
    fake_openai.on("question one", Reply.json(OK))
    ask(make_llm())
    ask(make_llm(model="other-model"))
    assert [r["model"] for r in fake_openai.requests] == [FAKE_MODEL, "other-model"]


def test_without_store_nothing_is_cached(fake_openai: FakeOpenAI, make_llm) -> None:
    fake_openai.on("question one", Reply.json(OK))
    llm = make_llm(use_store=False)
    ask(llm)
    ask(llm)
    assert fake_openai.request_count == 2


# ---- accounting ---------------------------------------------------------------------------


USAGE = {"prompt_tokens": 1000, "completion_tokens": 500, "total_tokens": 1500, "prompt_tokens_details": {"cached_tokens": 400}}
USAGE_COST = (600 * 1.0 + 400 * 0.5 + 500 * 2.0) / 1_000_000


def test_tokens_and_cost_per_call_and_run(fake_openai: FakeOpenAI, make_llm, store) -> None:
    fake_openai.on("question", Reply.json(OK, usage=USAGE))
    fake_openai.on("bad", fault_malformed())
    llm = make_llm()
    async def work():
        result = await ask_async(llm, "question one")
        await ask_async(llm, "question one")  # cache hit: costs nothing
        with pytest.raises(LLMReplyError):
            await ask_async(llm, "bad one")
        return result

    run = in_run(store, llm, work, rules_version="r1", params={"k": 1})
    [result], totals = run.results, run.totals
    assert result.usage == Usage(prompt_tokens=1000, cached_tokens=400, completion_tokens=500)
    assert result.cost_usd == pytest.approx(USAGE_COST)
    assert totals.calls == 3 and totals.cache_hits == 1 and totals.http_calls == 2 and totals.errors == 1
    [run] = store.runs.list()
    assert run.status == "done" and run.kind == "synthesize" and run.params == {"k": 1}
    assert run.rules_version == "r1" and run.prompt_version == "v1" and run.model == FAKE_MODEL
    assert run.prompt_tokens == totals.usage.prompt_tokens > 1000  # the bad reply's tokens count too
    assert run.cached_tokens == 400 and run.calls == 3 and run.cache_hits == 1
    assert run.cost_usd == pytest.approx(totals.cost_usd) and run.cost_usd > USAGE_COST
    assert run.wall_s >= 0
    calls = llm_calls(store, run_id=run.id)
    assert [c.status for c in calls] == ["ok", "ok", "invalid_json"]
    assert calls[0].prompt_tokens == 1000 and calls[0].cost_usd == pytest.approx(USAGE_COST)


def test_unknown_model_costs_none(fake_openai: FakeOpenAI, make_llm, store) -> None:
    fake_openai.on("question one", Reply.json(OK, usage=USAGE))
    llm = make_llm(model="mystery-model")
    run = in_run(store, llm, lambda: ask_async(llm))
    [result], totals = run.results, run.totals
    assert result.cost_usd is None
    assert totals.unpriced_calls == 1 and totals.cost_or_none is None
    assert store.runs.list()[0].cost_usd is None


def test_run_marked_failed_or_interrupted(make_llm, store) -> None:
    llm = make_llm()
    async def fail(error: BaseException):
        raise error

    with pytest.raises(RuntimeError):
        in_run(store, llm, lambda: fail(RuntimeError("boom")))
    with pytest.raises(KeyboardInterrupt):
        in_run(store, llm, lambda: fail(KeyboardInterrupt()))
    assert [r.status for r in store.runs.list()] == ["failed", "interrupted"]


def test_price_table() -> None:
    prices = load_prices()
    assert price_for("gpt-4o-mini-2024-07-18", prices) == prices["gpt-4o-mini"]
    assert price_for("openai/gpt-4.1-mini", prices) == prices["gpt-4.1-mini"]
    assert price_for("llama3:8b", prices) is None
    assert estimate_cost(Usage(1_000_000, 0, 0), Price(input=2.0, output=8.0)) == pytest.approx(2.0)
    assert estimate_cost(Usage(1_000_000, 1_000_000, 0), Price(input=2.0, output=8.0)) == pytest.approx(2.0)
    assert estimate_cost(Usage(10, 0, 0), None) is None


# ---- concurrency ---------------------------------------------------------------------------------


def test_concurrency_bound_respected(make_llm) -> None:
    with FakeOpenAI(latency=0.1) as server:
        server.on("question", Reply.json(OK))
        llm = make_llm(concurrency=3, base_url=server.url)
        requests = [
            LLMRequest([{"role": "user", "content": f"question {i}"}], Answer, prompt_version="v1", tag=str(i))
            for i in range(12)
        ]
        done: list[int] = []
        started = time.monotonic()
        results = llm.run_sync(lambda: complete_many(llm, requests, on_done=lambda i, r: done.append(i)))
        elapsed = time.monotonic() - started
    assert all(r.parsed == Answer(**OK) for r in results)
    assert sorted(done) == list(range(12))
    assert server.request_count == 12
    assert server.max_in_flight == 3
    assert elapsed >= 0.4  # 12 calls, 3 at a time, 0.1 s each


def test_identical_requests_in_flight_share_one_call(make_llm) -> None:
    with FakeOpenAI(latency=0.1) as server:
        server.on("question", Reply.json(OK))
        llm = make_llm(base_url=server.url)
        same = LLMRequest([{"role": "user", "content": "question same"}], Answer, prompt_version="v1")
        results = llm.run_sync(lambda: complete_many(llm, [same] * 5))
    assert server.request_count == 1
    assert sum(not r.cache_hit for r in results) == 1


def test_layer_survives_several_event_loops(fake_openai: FakeOpenAI, make_llm) -> None:
    fake_openai.on("question", Reply.json(OK))
    llm = make_llm(use_store=False)
    for i in range(3):
        messages = [{"role": "user", "content": f"question {i}"}]
        asyncio.run(llm.complete(messages, Answer, prompt_version="v1"))
    assert fake_openai.request_count == 3


# ---- configuration --------------------------------------------------------------------------------


def test_status_and_not_configured(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("GCPC_MODEL", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    ok, reason = llm_status()
    assert not ok and "GCPC_MODEL" in reason and "OPENAI_API_KEY" in reason
    with pytest.raises(LLMNotConfigured, match="GCPC_MODEL"):
        LLM.from_env()
    monkeypatch.setenv("GCPC_MODEL", "m")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
    ok, reason = llm_status()
    assert ok and "127.0.0.1" in reason  # a self-hosted endpoint needs no key
    assert llm_status("other")[1].startswith("model other")


def test_from_env_reaches_the_fake_server(llm_env: FakeOpenAI, store) -> None:
    llm_env.on("question one", Reply.json(OK))
    llm = LLM.from_env(store=store)
    assert llm.model == FAKE_MODEL
    assert ask(llm).parsed == Answer(**OK)


# ---- the fake server's Batch API endpoints (for judging's --batch mode) --------------------------


def test_fake_batch_endpoints_with_real_client(fake_openai: FakeOpenAI) -> None:
    fake_openai.on("question one", Reply.json(OK))
    client = openai.OpenAI(base_url=fake_openai.url, api_key="sk-test", max_retries=0)
    line = {
        "custom_id": "traj-1",
        "method": "POST",
        "url": "/v1/chat/completions",
        "body": {"model": FAKE_MODEL, "messages": [{"role": "user", "content": "question one"}]},
    }
    uploaded = client.files.create(file=("in.jsonl", (json.dumps(line) + "\n").encode()), purpose="batch")
    batch = client.batches.create(
        input_file_id=uploaded.id, endpoint="/v1/chat/completions", completion_window="24h"
    )
    batch = client.batches.retrieve(batch.id)
    assert batch.status == "completed" and batch.output_file_id
    [row] = list(iter_jsonl(client.files.content(batch.output_file_id).read()))
    assert row["custom_id"] == "traj-1"
    assert json.loads(row["response"]["body"]["choices"][0]["message"]["content"]) == OK
    client.close()


def test_cache_key_is_the_canonical_request(make_llm) -> None:
    """The key's text is assembled from parts; it must stay byte for byte the canonical JSON of the
    whole request, or every reply cached by an earlier version would be missed."""
    import hashlib

    from gcpc_core.llm import request_key
    from gcpc_core.llm.request import canonical_json, schema_of

    messages = [{"role": "system", "content": "Ünïcode ⟦gcpc⟧ \"quoted\"\n"}, {"content": "q", "role": "user"}]
    for temperature in (0.0, None, 0.7):
        whole = canonical_json({"model": "m/x", "messages": messages, "temperature": temperature,
                                "prompt_version": "v9", "schema": {"name": "Answer", "json_schema": schema_of(Answer)}})
        assert request_key(model="m/x", messages=messages, response_model=Answer, temperature=temperature,
                           prompt_version="v9") == hashlib.sha256(whole.encode("utf-8")).hexdigest()


def test_a_reply_is_cached_and_recorded_in_one_transaction(fake_openai: FakeOpenAI, make_llm, store,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """The cached reply and its call record commit together: one commit per call on the hot path,
    and never a cached reply without its record (or the reverse)."""
    fake_openai.on("question one", Reply.json(OK))
    commits: list[str] = []
    original = store.atomic

    def counting_atomic():
        if not store.db.conn.in_transaction:
            commits.append("transaction")
        return original()

    monkeypatch.setattr(store, "atomic", counting_atomic)
    llm = make_llm()
    ask(llm, "question one, first")  # the first call also stores the negotiated mode
    commits.clear()
    ask(llm, "question one, second")
    assert commits == ["transaction"]
    call = llm_calls(store)[-1]
    assert store.runs.cache_get(call.key) is not None and call.status == "ok"


def test_held_writes_wait_for_the_caller_and_still_answer_identical_requests(fake_openai: FakeOpenAI, make_llm,
                                                                            store) -> None:
    """Inside `holding_writes` nothing is written until the caller writes what is held (in its own
    transaction); a held reply answers an identical request without HTTP; what the caller leaves
    held is written when the block ends."""
    fake_openai.on("question one", Reply.json(OK))
    fake_openai.on("question two", fault_malformed())
    llm = make_llm()

    def count(table: str) -> int:
        return store.db.conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]

    with llm.holding_writes() as held:
        first, again = ask(llm), ask(llm)
        with pytest.raises(LLMReplyError):
            ask(llm, "question two")
        assert (count("llm_cache"), count("llm_calls")) == (0, 0) and fake_openai.request_count == 2
        assert not first.cache_hit and again.cache_hit and again.parsed == first.parsed
        with store.atomic():
            held.write(store)
        held.clear()
        assert (count("llm_cache"), count("llm_calls")) == (1, 3)
        assert ask(llm).cache_hit  # from the DB now
    assert count("llm_calls") == 4  # written when the block ended
    calls = llm_calls(store)
    assert [(c.cache_hit, c.status) for c in calls] == [(0, "ok"), (1, "ok"), (0, "invalid_json"), (1, "ok")]
    assert all(c.created_at for c in calls) and calls[0].prompt_tokens > 0
    assert store.runs.cache_get(calls[0].key) == store.runs.cache_get(calls[1].key) is not None


def test_a_failed_record_leaves_no_cached_reply(fake_openai: FakeOpenAI, make_llm, store,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    fake_openai.on("question one", Reply.json(OK))

    def broken(row: dict) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(store.runs, "record_llm_call", broken)
    with pytest.raises(OSError):
        ask(make_llm())
    assert store.db.conn.execute("SELECT COUNT(*) FROM llm_cache").fetchone()[0] == 0


def test_run_sync_restores_the_garbage_collector(fake_openai: FakeOpenAI, make_llm) -> None:
    """A run exempts the existing heap from collection and collects less often; both are undone after."""
    import gc

    fake_openai.on("question one", Reply.json(OK))
    before = gc.get_threshold()
    ask(make_llm())
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0


def test_a_plain_http_endpoint_gets_no_ca_bundle_and_an_https_one_the_verifying_default() -> None:
    """A local server over HTTP needs no CA bundle (reading it delays the first request); the context
    it gets still verifies, so a redirect to HTTPS fails its certificate check rather than going through."""
    from gcpc_core.llm.transport import http_client

    plain = http_client("http://127.0.0.1:8000/v1")._transport.ssl_context  # type: ignore[union-attr]
    assert plain.verify_mode == ssl.CERT_REQUIRED and plain.check_hostname and plain.cert_store_stats()["x509_ca"] == 0
    tls = http_client("https://api.openai.com/v1")._transport.ssl_context  # type: ignore[union-attr]
    assert tls.verify_mode == ssl.CERT_REQUIRED and tls.cert_store_stats()["x509_ca"] > 0
    assert http_client(None)._transport.ssl_context.cert_store_stats()["x509_ca"] > 0  # type: ignore[union-attr]
