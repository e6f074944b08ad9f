"""Structured-output negotiation (`auto`) against the fake server playing servers that take
different `response_format`s: fallback order, no retries spent on a deterministic rejection, the
mode stored per (endpoint, model) and shown in `llm_status` and the run record, an explicit mode
winning, and one clear error when no mode is accepted."""

from __future__ import annotations

import json
from typing import Literal

import pytest
from fake_openai import FAKE_MODEL, LLAMA_CPP_PYTHON_REJECTION, FakeOpenAI, Reply, format_type, overflow_error
from local_helpers import LLMRequest, complete_many
from pydantic import BaseModel

from gcpc_core.llm import LLM, UNSETTLED_MODE, LLMCallError, LLMConfig, batch_line, llm_status
from gcpc_core.runs import RunKind, StageRun, run_stage
from gcpc_core.store import LLMModeRow
from store.helpers import llm_calls


class Answer(BaseModel):
    verdict: Literal["Yes", "No"]
    reason: str


OK = {"verdict": "Yes", "reason": "the file exists"}


def ask(llm: LLM, question: str = "question one"):
    messages = [{"role": "user", "content": question}]
    return llm.run_sync(lambda: llm.complete(messages, Answer, prompt_version="v1"))


def test_llama_cpp_python_like_server_negotiates_json_object(fake_openai: FakeOpenAI, make_llm, store) -> None:
    fake_openai.accept_formats({"text", "json_object"})
    fake_openai.on("question", Reply.json(OK))
    llm = make_llm(max_retries=3)

    async def one(_: None, run: StageRun) -> object:
        return await llm.complete([{"role": "user", "content": "question one"}], Answer, prompt_version="v1")

    [result] = run_stage(store, RunKind("synthesize"), [None], one, llm=llm, prompt_version="v1").results
    assert result.parsed == Answer(**OK)
    # one request per mode: the 500s naming response_format were not retried by the client
    assert [format_type(r) for r in fake_openai.requests] == ["json_schema", "json_schema", "json_object"]
    assert fake_openai.requests[0]["response_format"]["json_schema"]["strict"] is True  # parse
    assert fake_openai.requests[1]["response_format"]["json_schema"]["strict"] is False  # json_schema
    sent = fake_openai.requests[2]
    assert sent["response_format"]["schema"] == Answer.model_json_schema()  # the server's extension field
    assert '"verdict"' in sent["messages"][0]["content"]  # and the schema in the prompt
    row = store.runs.llm_mode(fake_openai.url, FAKE_MODEL)
    assert row.mode == "json_object"
    assert set(row.rejected) == {"parse", "json_schema"}
    assert LLAMA_CPP_PYTHON_REJECTION in row.rejected["parse"] and "HTTP 500" in row.rejected["parse"]
    assert store.runs.list()[0].structured_mode == "json_object"
    assert llm.structured_mode == "json_object"


def test_stored_mode_is_used_by_the_next_layer(fake_openai: FakeOpenAI, make_llm, store, monkeypatch) -> None:
    fake_openai.accept_formats({"json_object"})
    fake_openai.on("question", Reply.json(OK))
    ask(make_llm(), "question one")
    fake_openai.reset()
    fake_openai.on("question", Reply.json(OK))
    llm = make_llm()
    assert llm.structured_mode == "json_object"
    ask(llm, "question two")
    assert [format_type(r) for r in fake_openai.requests] == ["json_object"]
    monkeypatch.setenv("OPENAI_BASE_URL", fake_openai.url)
    monkeypatch.setenv("GCPC_MODEL", FAKE_MODEL)
    monkeypatch.delenv("GCPC_STRUCTURED_MODE", raising=False)
    ok, status = llm_status(store=store)
    assert ok and "auto: json_object (negotiated" in status
    other = make_llm(model="other-model")  # the mode is per (endpoint, model)
    assert other.structured_mode is None


def test_vllm_like_400_falls_back_to_json_schema(fake_openai: FakeOpenAI, make_llm, store) -> None:
    strict_rejected = Reply.error(400, "strict mode is not supported")
    fake_openai.on(lambda r: (r.get("response_format") or {}).get("json_schema", {}).get("strict") is True,
                   strict_rejected)
    fake_openai.on("question", Reply.json(OK))
    assert ask(make_llm()).parsed == Answer(**OK)
    assert fake_openai.request_count == 2
    assert store.runs.llm_mode(fake_openai.url, FAKE_MODEL).mode == "json_schema"


def test_explicit_mode_wins_over_stored_and_is_not_negotiated(fake_openai: FakeOpenAI, make_llm, store) -> None:
    store.runs.set_llm_mode(LLMModeRow(endpoint=fake_openai.url, model=FAKE_MODEL, mode="json_object"))
    fake_openai.accept_formats({"json_object"}, rejection=Reply.error(400, "response_format json_schema unknown"))
    llm = make_llm(structured_mode="json_schema")
    assert llm.structured_mode == "json_schema"
    with pytest.raises(LLMCallError) as caught:
        ask(llm)
    assert fake_openai.request_count == 1
    assert "response_format json_schema unknown" in str(caught.value)
    assert "unset GCPC_STRUCTURED_MODE" in str(caught.value)
    assert store.runs.llm_mode(fake_openai.url, FAKE_MODEL).mode == "json_object"  # untouched


def test_explicit_mode_from_env(fake_openai: FakeOpenAI) -> None:
    config = LLMConfig.from_env(env={"GCPC_MODEL": "m", "OPENAI_BASE_URL": fake_openai.url,
                                     "GCPC_STRUCTURED_MODE": "json_object"})
    assert config.structured_mode == "json_object"
    assert LLMConfig.from_env(env={"GCPC_MODEL": "m", "OPENAI_BASE_URL": "x"}).structured_mode == "auto"
    bad = LLMConfig.from_env(env={"GCPC_MODEL": "m", "OPENAI_BASE_URL": "x", "GCPC_STRUCTURED_MODE": "jsonish"})
    assert any("GCPC_STRUCTURED_MODE" in p and "auto" in p for p in bad.problems())


def test_no_mode_accepted_is_one_clear_error(fake_openai: FakeOpenAI, make_llm, store) -> None:
    fake_openai.accept_formats({"text"})
    llm = make_llm(max_retries=3)
    with pytest.raises(LLMCallError) as caught:
        ask(llm)
    message = str(caught.value)
    assert caught.value.reason == "structured_output_unsupported"
    assert "tried parse, json_schema, json_object" in message and LLAMA_CPP_PYTHON_REJECTION in message
    assert fake_openai.request_count == 3  # one per mode, no retries
    with pytest.raises(LLMCallError, match="rejected every structured-output mode"):
        ask(llm, "question two")
    assert fake_openai.request_count == 3  # known already: no request
    row = store.runs.llm_mode(fake_openai.url, FAKE_MODEL)  # the rejections are stored, no mode settled
    assert row.mode == UNSETTLED_MODE and set(row.rejected) == {"parse", "json_schema", "json_object"}
    assert [c.status for c in llm_calls(store)] == ["structured_output_unsupported"] * 2


def test_500_not_naming_the_format_is_still_retried(fake_openai: FakeOpenAI, make_llm) -> None:
    fake_openai.on("question", Reply.error(500, "out of memory"), Reply.json(OK))
    result = ask(make_llm())
    assert result.parsed == Answer(**OK) and result.retries == 1
    assert [format_type(r) for r in fake_openai.requests] == ["json_schema", "json_schema"]


def test_context_overflow_is_not_a_format_rejection(fake_openai: FakeOpenAI, make_llm, store) -> None:
    fake_openai.on("question", overflow_error())
    with pytest.raises(LLMCallError) as caught:
        ask(make_llm())
    assert caught.value.reason == "context_overflow" and "maximum context length is 2048" in str(caught.value)
    assert fake_openai.request_count == 1
    assert store.runs.llm_mode(fake_openai.url, FAKE_MODEL) is None


def test_stored_mode_rejected_later_negotiates_again(fake_openai: FakeOpenAI, make_llm, store) -> None:
    store.runs.set_llm_mode(LLMModeRow(endpoint=fake_openai.url, model=FAKE_MODEL, mode="parse"))
    fake_openai.accept_formats({"json_object"})
    fake_openai.on("question", Reply.json(OK))
    assert ask(make_llm()).parsed == Answer(**OK)
    assert [format_type(r) for r in fake_openai.requests] == ["json_schema", "json_schema", "json_object"]
    assert store.runs.llm_mode(fake_openai.url, FAKE_MODEL).mode == "json_object"


def test_concurrent_first_calls_negotiate_once_each(make_llm, store) -> None:
    with FakeOpenAI(latency=0.05) as server:
        server.accept_formats({"json_object"})
        server.on("question", Reply.json(OK))
        llm = make_llm(base_url=server.url, concurrency=4)
        requests = [LLMRequest([{"role": "user", "content": f"question {i}"}], Answer, prompt_version="v1")
                    for i in range(8)]
        results = llm.run_sync(lambda: complete_many(llm, requests))
        assert all(r.parsed == Answer(**OK) for r in results)
        # at most the first wave (4 in flight) probed the rejected modes; everything later went straight in
        assert server.request_count <= 8 + 2 * 4
        assert sum(format_type(r) == "json_object" for r in server.requests) == 8
        assert store.runs.llm_mode(server.url, FAKE_MODEL).mode == "json_object"


def test_batch_line_uses_parse_or_the_negotiated_mode(fake_openai: FakeOpenAI, make_llm) -> None:
    llm = make_llm()
    line, _ = batch_line(llm, "c1", [{"role": "user", "content": "q"}], Answer, prompt_version="v1")
    assert line["body"]["response_format"]["json_schema"]["strict"] is True
    fake_openai.accept_formats({"json_object"})
    fake_openai.on("question", Reply.json(OK))
    ask(llm)
    line, _ = batch_line(llm, "c2", [{"role": "user", "content": "q"}], Answer, prompt_version="v1")
    assert json.dumps(line["body"]["response_format"]).startswith('{"type": "json_object"')


def test_reply_bound_is_sent_under_both_names_outside_parse(fake_openai: FakeOpenAI, make_llm) -> None:
    fake_openai.accept_formats({"json_object"})
    fake_openai.on("question", Reply.json(OK))
    ask(make_llm(max_completion_tokens=64))
    parse_body, _, json_object_body = fake_openai.requests
    assert parse_body["max_completion_tokens"] == 64 and "max_tokens" not in parse_body  # OpenAI: the new name only
    assert json_object_body["max_completion_tokens"] == json_object_body["max_tokens"] == 64  # llama-cpp-python


def test_first_request_failing_after_rejections_stores_them(fake_openai: FakeOpenAI, make_llm, store,
                                                            monkeypatch) -> None:
    fake_openai.accept_formats({"text", "json_object"})  # parse and json_schema rejected (llama-cpp-python's 500)
    fake_openai.on("question", Reply.error(503, "server overloaded"))  # json_object accepted, but the call fails
    with pytest.raises(LLMCallError):
        ask(make_llm(max_retries=0))
    assert [format_type(r) for r in fake_openai.requests] == ["json_schema", "json_schema", "json_object"]
    row = store.runs.llm_mode(fake_openai.url, FAKE_MODEL)
    assert row.mode == UNSETTLED_MODE and set(row.rejected) == {"parse", "json_schema"}
    assert LLAMA_CPP_PYTHON_REJECTION in row.rejected["parse"]
    monkeypatch.setenv("OPENAI_BASE_URL", fake_openai.url)
    monkeypatch.setenv("GCPC_MODEL", FAKE_MODEL)
    monkeypatch.delenv("GCPC_STRUCTURED_MODE", raising=False)
    ok, status = llm_status(store=store)
    assert ok and "none accepted yet" in status and "parse: HTTP 500" in status and "json_schema: HTTP 500" in status
    fake_openai.reset()
    fake_openai.accept_formats({"text", "json_object"})
    fake_openai.on("question", Reply.json(OK))
    llm = make_llm()
    assert llm.structured_mode is None  # nothing settled: the next layer negotiates again
    assert ask(llm).parsed == Answer(**OK)
    row = store.runs.llm_mode(fake_openai.url, FAKE_MODEL)
    assert row.mode == "json_object" and set(row.rejected) == {"parse", "json_schema"}
    ok, status = llm_status(store=store)
    assert "auto: json_object (negotiated" in status and "rejected first: parse, json_schema" in status
