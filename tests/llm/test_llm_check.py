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


# ---- a rejection is quoted in one line, without server paths -----------------------------------------

LLAMA_CPP_TRACEBACK = """\
Exception: 1 validation error for CreateChatCompletionRequest
Traceback (most recent call last):
  File "/usr/lib/python3/site-packages/llama_cpp/server/errors.py", line 173, in custom_route_handler
    response = await original_route_handler(request)
               ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "/usr/lib/python3/site-packages/fastapi/routing.py", line 301, in app
    raw_response = await run_endpoint_function(
  File "/usr/lib/python3/site-packages/llama_cpp/server/app.py", line 123, in create_chat_completion
    body = CreateChatCompletionRequest(**payload)
pydantic_core._pydantic_core.ValidationError: 1 validation error for CreateChatCompletionRequest
response_format.type
  Input should be 'text' or 'json_object' [type=literal_error, input_value='json_schema', input_type=str]
    For further information visit https://errors.pydantic.dev/2.11/v/literal_error
"""
"""A llama-cpp-python-like HTTP 500 for a `json_schema` response format, its stack in the message."""

WINDOWS_TRACEBACK = """\
Internal Server Error
Traceback (most recent call last):
  File "C:\\Program Files\\Python311\\Lib\\site-packages\\uvicorn\\protocols\\http\\h11_impl.py", line 403, in run_asgi
    result = await app(self.scope, self.receive, self.send)
  File "C:\\Users\\alice\\llm\\server.py", line 88, in chat
    model = load(r"C:\\Users\\alice\\models\\gemma-3-270m.gguf")
RuntimeError: CUDA out of memory while loading C:\\Users\\alice\\models\\gemma-3-270m.gguf (""" + "x" * 400 + ")\n"
"""A plain-text HTTP 500 of a server on Windows: a stack, user paths and a long last line."""

CHECK_PREFIXES = ("endpoint: ", "model: ", "context window: ", "tokenizer: ", "structured mode: ", "round trip: ",
                  "verdict: ")


def _assert_quoted(text: str) -> None:
    """No trace of the server's stack or file system in what `llm check` printed or stored."""
    for leak in ("Traceback", "File \"", "site-packages", "/usr/lib", "line 123", "C:\\", "\\Users", "alice", "^^^"):
        assert leak not in text, (leak, text)


def test_cli_check_quotes_each_rejection_in_one_line_without_paths(llm_env: FakeOpenAI, store,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    from gcpc_core.llm.errors import SERVER_QUOTE_CHARS

    llm_env.accept_formats({"text", "json_object"}, rejection=Reply.error(500, LLAMA_CPP_TRACEBACK))
    llm_env.on("pong", PONG)
    assert main(["llm", "check", "--db", str(store.path)]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert all(line.startswith(CHECK_PREFIXES) for line in lines), lines  # nothing spills onto a line of its own
    _assert_quoted(out)
    [mode_line] = [line for line in lines if line.startswith("structured mode: ")]
    rejected = mode_line.split("rejected first — ", 1)[1].removesuffix(")").split("; ")
    assert [r.split(": ", 1)[0] for r in rejected] == ["parse", "json_schema"]
    for rejection in rejected:
        quote = rejection.split(": HTTP 500: ", 1)[1]
        assert len(quote) <= SERVER_QUOTE_CHARS, quote
        assert quote.startswith("Exception: 1 validation error")  # the text before the stack is kept
        assert "ValidationError: 1 validation error for CreateChatCompletionRequest response_format.type Input " \
               "should be 'text' or 'json_object'" in quote  # the final exception, on one line
    stored = store.runs.llm_mode(llm_env.url, FAKE_MODEL)
    assert stored.mode == "json_object" and set(stored.rejected) == {"parse", "json_schema"}
    for why in stored.rejected.values():  # what negotiation stores is the same quote
        assert "\n" not in why and len(why) <= len("HTTP 500: ") + SERVER_QUOTE_CHARS
        _assert_quoted(why)


def test_cli_check_quotes_a_failed_round_trip_without_windows_paths(llm_env: FakeOpenAI, monkeypatch,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    from gcpc_core.llm.errors import SERVER_QUOTE_CHARS

    monkeypatch.setenv("GCPC_LLM_MAX_RETRIES", "0")
    llm_env.on("pong", Reply(status=500, body=WINDOWS_TRACEBACK.encode(), headers={"content-type": "text/plain"}))
    assert main(["llm", "check", "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    _assert_quoted("\n".join(report["lines"]))
    for line in report["lines"]:
        assert "\n" not in line
    failed = next(line for line in report["lines"] if line.startswith("round trip: failed"))
    quote = failed.split("HTTP 500: ", 1)[1]
    assert quote.startswith("Internal Server Error RuntimeError: CUDA out of memory while loading …/gemma-3-270m.gguf")
    assert len(quote) == SERVER_QUOTE_CHARS and quote.endswith("…")
    assert report["lines"][-1] == f"verdict: NOT READY — HTTP 500: {quote}"
