"""`llm check` (and the Runs page's same probe) against the fake server playing real servers:
down, wrong model, wrong key, llama-cpp-python-like (json_object only, a tokenizer route); and
`llm serve-local`'s parts that need no model."""

from __future__ import annotations

import json

import pytest
from fake_openai import FAKE_MODEL, FakeOpenAI, Reply
from local_helpers import closed_port_url

from gcpc_core.cli import main
from gcpc_core.llm import UNSETTLED_MODE, LLMConfig, check_endpoint
from gcpc_core.local_llm import LocalServer
from gcpc_core.review.runs import endpoint_check

PONG = Reply.json({"answer": "pong"})


def config(url: str, **changes) -> LLMConfig:
    return LLMConfig(**{"model": FAKE_MODEL, "base_url": url, "api_key": "sk-test", "timeout": 2.0,
                        "max_retries": 0, **changes})


def test_llama_cpp_python_like_server_is_ready(fake_openai: FakeOpenAI, store) -> None:
    fake_openai.accept_formats({"text", "json_object"}).serve_models([FAKE_MODEL]).serve_tokenizer()
    fake_openai.on("pong", PONG)
    report = check_endpoint(config(fake_openai.url, context_window=4096), store=store)
    text = "\n".join(report.lines)
    assert report.ok and report.structured_mode == "json_object", text
    assert f"model: {FAKE_MODEL} listed" in text
    assert "context window: 4096 tokens" in text and "/extras/tokenize/count" in text
    assert "rejected first — parse: HTTP 500" in text
    assert report.verdict.startswith("verdict: READY")
    assert store.runs.llm_mode(fake_openai.url, FAKE_MODEL).mode == "json_object"
    assert fake_openai.requests[-1]["max_completion_tokens"] > 0  # a bounded round trip


def test_round_trip_is_never_served_from_the_cache(fake_openai: FakeOpenAI, store) -> None:
    fake_openai.on("pong", PONG)
    check_endpoint(config(fake_openai.url), store=store)
    check_endpoint(config(fake_openai.url), store=store)
    assert fake_openai.request_count == 2


def test_server_down() -> None:
    report = check_endpoint(config(closed_port_url()))
    assert not report.ok
    assert "cannot reach" in report.lines[0]
    assert "NOT READY" in report.verdict and "llm serve-local" in report.verdict


def test_model_not_served(fake_openai: FakeOpenAI) -> None:
    fake_openai.serve_models(["other-model"])
    fake_openai.on("pong", Reply.error(404, f"The model `{FAKE_MODEL}` does not exist"))
    report = check_endpoint(config(fake_openai.url))
    assert not report.ok
    assert f"model: {FAKE_MODEL} NOT listed (served: other-model)" in report.lines
    assert "does not serve model" in report.verdict and "NOT READY" in report.verdict


def test_wrong_key(fake_openai: FakeOpenAI) -> None:
    fake_openai.on("pong", Reply.error(401, "invalid api key"))
    report = check_endpoint(config(fake_openai.url))
    assert not report.ok and "refused the API key" in report.verdict and "OPENAI_API_KEY" in report.verdict


def test_unusable_tiny_reply_is_usable_with_care(fake_openai: FakeOpenAI) -> None:
    fake_openai.on("pong", Reply.text('{"answer": "ping"}'))
    report = check_endpoint(config(fake_openai.url))
    assert report.ok and "USABLE WITH CARE" in report.verdict and "schema" in report.verdict
    assert "context window: unknown" in "\n".join(report.lines)


def test_not_configured() -> None:
    report = check_endpoint(LLMConfig())
    assert not report.ok and "GCPC_MODEL" in report.verdict


def test_cli_check(llm_env: FakeOpenAI, store, capsys: pytest.CaptureFixture[str]) -> None:
    llm_env.accept_formats({"json_object"})
    llm_env.on("pong", PONG)
    assert main(["llm", "check", "--db", str(store.path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["ok"] and out["structured_mode"] == "json_object"
    assert store.runs.llm_mode(llm_env.url, FAKE_MODEL).mode == "json_object"
    assert main(["llm", "check", "--db", str(store.path.with_name("missing.db"))]) == 2


def test_cli_check_exit_1_when_down(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", closed_port_url())
    monkeypatch.setenv("GCPC_MODEL", "m")
    assert main(["llm", "check"]) == 1
    assert "NOT READY" in capsys.readouterr().out


def test_runs_page_check(llm_env: FakeOpenAI, store) -> None:
    llm_env.on("pong", PONG)
    lines = endpoint_check(store)
    assert lines[-1].startswith("verdict: READY")


def test_local_server_config_keeps_no_logits(tmp_path) -> None:
    server = LocalServer(port=1234, n_ctx=4096)
    [model] = server.config(tmp_path / "m.gguf")["models"]
    assert model["logits_all"] is False and model["n_ctx"] == 4096
    assert server.config(tmp_path / "m.gguf")["host"] == "127.0.0.1"
    assert server.env()["OPENAI_BASE_URL"] == "http://127.0.0.1:1234/v1"
    assert server.env()["GCPC_CONTEXT_WINDOW"] == "4096"
    env = server.env()
    assert (env["GCPC_LLM_CONCURRENCY"], env["GCPC_LLM_MAX_RETRIES"]) == ("1", "0")  # one-slot server: no queued copies
    assert LLMConfig.from_env(env=env).max_completion_tokens == int(env["GCPC_MAX_COMPLETION_TOKENS"])


def test_reported_context_window_is_stored_for_the_budget(fake_openai: FakeOpenAI, store, make_llm) -> None:
    fake_openai.serve_models([FAKE_MODEL], max_model_len=4096)
    fake_openai.on("pong", PONG)
    report = check_endpoint(config(fake_openai.url), store=store)
    assert report.context_window == 4096
    assert "context window: 4096 tokens (from GET /models `max_model_len`)" in report.lines
    assert store.runs.llm_mode(fake_openai.url, FAKE_MODEL).context_window == 4096
    assert make_llm().context_window == 4096  # a judge run over this project DB budgets with it
    assert make_llm(context_window=2048).context_window == 2048  # the setting wins


def test_vllm_tokenize_route_is_found(fake_openai: FakeOpenAI) -> None:
    def tokenize(server, path, headers, raw) -> Reply:
        body = json.loads(raw)
        return Reply(body=json.dumps({"count": len(body["prompt"].split()), "max_model_len": 32768}).encode())

    fake_openai.route("POST", "/tokenize", tokenize)
    fake_openai.on("pong", PONG)
    report = check_endpoint(config(fake_openai.url))
    assert report.tokenizer == "/tokenize"
    assert "POST /extras/tokenize/count" in fake_openai.paths  # llama-cpp-python's route was tried first


def test_local_model_is_labelled_tiny() -> None:
    from gcpc_core.llm import llm_status
    from gcpc_core.local_llm import LOCAL_MODEL_ALIAS

    ok, status = llm_status(env={"GCPC_MODEL": LOCAL_MODEL_ALIAS, "OPENAI_BASE_URL": "http://127.0.0.1:8765/v1"})
    assert ok and "TINY local model" in status and "far below a real judge" in status
    assert "TINY" not in llm_status(env={"GCPC_MODEL": "gpt-x", "OPENAI_API_KEY": "k"})[1]


def test_unlisted_model_that_answers_anyway_is_not_ready(fake_openai: FakeOpenAI) -> None:
    fake_openai.serve_models(["the-real-one"])  # llama-cpp-python serves its default model for any name
    fake_openai.on("pong", PONG)
    report = check_endpoint(config(fake_openai.url))
    assert not report.ok and "NOT READY" in report.verdict and "substituted its default model" in report.verdict


def test_round_trip_failing_after_rejections_shows_and_stores_them(fake_openai: FakeOpenAI, store) -> None:
    fake_openai.accept_formats({"text", "json_object"})
    fake_openai.on("pong", Reply.error(503, "server overloaded"))
    report = check_endpoint(config(fake_openai.url), store=store)
    text = "\n".join(report.lines)
    assert not report.ok and "NOT READY" in report.verdict
    assert "structured mode: none accepted (rejected — parse: HTTP 500" in text and "json_schema: HTTP 500" in text
    row = store.runs.llm_mode(fake_openai.url, FAKE_MODEL)
    assert row.mode == UNSETTLED_MODE and set(row.rejected) == {"parse", "json_schema"}
