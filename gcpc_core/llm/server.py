"""What an OpenAI-compatible server can tell about itself: the models it serves, its context
window, a tokenizer endpoint — and `check_endpoint`, the probe behind `llm check` and the Runs page.

Servers differ in what they expose beyond chat completions, so each fact is probed where the
common servers keep it and reported as unknown otherwise:

* models: `GET /models` (OpenAI, vLLM, llama.cpp, llama-cpp-python, Ollama);
* context window: `GCPC_CONTEXT_WINDOW` wins; else a `max_model_len` (vLLM), `context_length`
  or `context_window` field on the model's `/models` entry; llama-cpp-python reports none, which
  is why `llm serve-local` prints the variable to export;
* tokenizer: llama-cpp-python's `POST /extras/tokenize/count`, then vLLM's and llama.cpp's
  `POST /tokenize`, at the server root. Without one, prompt tokens are *estimated* at one token
  per `ESTIMATE_CHARS_PER_TOKEN` characters — deliberately pessimistic (English prose is ~4
  characters a token, code and logs nearer 3), so an estimated prompt errs on the side of fitting.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import time
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from pydantic import BaseModel

from ..store import LLMModeRow, Store
from .client import LLM
from .config import ENV_CONTEXT_WINDOW, LLMConfig
from .errors import LLMError, call_error
from .negotiation import UNSETTLED_MODE
from .request import Message

__all__ = [
    "ESTIMATE_CHARS_PER_TOKEN",
    "CheckReport",
    "ServerInfo",
    "check_endpoint",
    "count_prompt_tokens",
    "estimate_tokens",
    "server_info",
]

ESTIMATE_CHARS_PER_TOKEN = 3
MESSAGE_OVERHEAD_TOKENS = 8
"""Chat-template tokens around each message (role markers, separators), added to every count."""
PROBE_TIMEOUT_S = 10.0
CONTEXT_FIELDS = ("max_model_len", "context_length", "context_window", "n_ctx")

TokenizerKind = Literal["llama-cpp-python", "vLLM / llama.cpp"]
_TOKENIZERS: tuple[tuple[TokenizerKind, str], ...] = (
    ("llama-cpp-python", "/extras/tokenize/count"),
    ("vLLM / llama.cpp", "/tokenize"),
)


@dataclass
class ServerInfo:
    """What one probe of the server found (None: it does not say)."""

    models: list[str] | None = None
    models_error: str | None = None
    context_window: int | None = None
    context_source: str | None = None
    tokenizer: TokenizerKind | None = None
    tokenizer_path: str | None = None


def estimate_tokens(text: str) -> int:
    """The documented fallback count when the server has no tokenizer endpoint."""
    return math.ceil(len(text) / ESTIMATE_CHARS_PER_TOKEN)


def _root(base_url: str) -> str:
    """The server root that tokenizer routes hang off (`…/v1` stripped)."""
    url = base_url.rstrip("/")
    return url[: -len("/v1")] if url.endswith("/v1") else url


async def _get_json(llm: LLM, path: str) -> Any:
    import httpx2  # here, not at module level: the SDK's transport loads with `openai` (see `transport`)

    response = await llm.client().get(path, cast_to=httpx2.Response,
                                      options={"max_retries": 0, "timeout": PROBE_TIMEOUT_S})
    return response.json()


async def _post_json(llm: LLM, url: str, body: dict[str, Any]) -> Any:
    import httpx2

    response = await llm.client().post(url, cast_to=httpx2.Response, body=body,
                                       options={"max_retries": 0, "timeout": PROBE_TIMEOUT_S})
    return response.json()


def _token_count(reply: Any) -> int | None:
    """llama-cpp-python's and vLLM's `count`, or the length of llama.cpp's `tokens`."""
    if not isinstance(reply, dict):
        return None
    if isinstance(reply.get("count"), int):
        return int(reply["count"])
    if isinstance(reply.get("tokens"), list):
        return len(reply["tokens"])
    return None


async def _tokenize(llm: LLM, kind: TokenizerKind, path: str, text: str) -> int | None:
    url = _root(llm.config.endpoint) + path
    body: dict[str, Any] = {"model": llm.model, "input": text} if kind == "llama-cpp-python" else {
        "model": llm.model, "prompt": text, "content": text}  # vLLM reads `prompt`, llama.cpp `content`
    return _token_count(await _post_json(llm, url, body))


async def _probe(llm: LLM) -> ServerInfo:
    import openai

    info = ServerInfo()
    entry: dict[str, Any] = {}
    try:
        listing = await _get_json(llm, "/models")
        data = listing.get("data") if isinstance(listing, dict) else None
        info.models = [str(m.get("id")) for m in data or [] if isinstance(m, dict)]
        entry = next((m for m in data or [] if isinstance(m, dict) and m.get("id") == llm.model), {})
    except openai.APIError as exc:
        info.models_error = str(call_error(exc, endpoint=llm.config.endpoint, model=llm.model))
    except ValueError:
        info.models_error = "GET /models did not answer JSON"
    if llm.config.context_window:
        info.context_window, info.context_source = llm.config.context_window, f"the setting, {ENV_CONTEXT_WINDOW}"
    else:
        for name in CONTEXT_FIELDS:
            value = entry.get(name) if isinstance(entry.get(name), int) else (entry.get("meta") or {}).get(name)
            if isinstance(value, int) and value > 0:
                info.context_window, info.context_source = value, f"GET /models `{name}`"
                break
    if info.models_error is None or "cannot reach" not in info.models_error:
        for kind, path in _TOKENIZERS:
            try:
                if await _tokenize(llm, kind, path, "hello world") is not None:
                    info.tokenizer, info.tokenizer_path = kind, path
                    break
            except (openai.APIError, ValueError):
                continue
    return info


_FACTS: weakref.WeakKeyDictionary[LLM, ServerInfo] = weakref.WeakKeyDictionary()
_PROBES: weakref.WeakKeyDictionary[LLM, tuple[asyncio.AbstractEventLoop, asyncio.Future[ServerInfo]]] = (
    weakref.WeakKeyDictionary()
)


_COUNTS: weakref.WeakKeyDictionary[LLM, dict[bytes, int]] = weakref.WeakKeyDictionary()
"""Per layer: sha256 of a prompt's text → the server's token count, so a prompt is tokenized once
(windowing recounts candidates; a forced rerun sends the same prompts again)."""
COUNT_CACHE_SIZE = 4096


async def server_info(llm: LLM) -> ServerInfo:
    """The server's facts, probed once per layer (concurrent callers share one probe)."""
    if llm in _FACTS:
        return _FACTS[llm]
    loop = asyncio.get_running_loop()
    probe = _PROBES.get(llm)
    if probe is None or probe[0] is not loop:
        probe = _PROBES[llm] = (loop, asyncio.ensure_future(_probe(llm)))
    info = await asyncio.shield(probe[1])
    _FACTS[llm] = info
    return info


async def count_prompt_tokens(
    llm: LLM, messages: Sequence[Message], response_model: type[BaseModel]
) -> tuple[int, bool]:
    """(prompt tokens, exact?) of messages as the layer would send them now: the server's tokenizer
    when it has one, else the estimate. Before `auto` has negotiated, the count assumes `json_object`
    mode, whose schema prompt makes the request longest."""
    sent = llm.request_body(messages, response_model, mode=llm.structured_mode or "json_object")["messages"]
    text = "\n".join(str(m.get("content") or "") for m in sent)
    overhead = MESSAGE_OVERHEAD_TOKENS * len(sent)
    info = await server_info(llm)
    if info.tokenizer is None or info.tokenizer_path is None:
        return estimate_tokens(text) + overhead, False
    import openai

    counts = _COUNTS.setdefault(llm, {})
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    if digest not in counts:
        try:
            counted = await _tokenize(llm, info.tokenizer, info.tokenizer_path, text)
        except (openai.APIError, ValueError):
            counted = None
        if counted is None:
            return estimate_tokens(text) + overhead, False  # not remembered: the next prompt asks again
        if len(counts) >= COUNT_CACHE_SIZE:
            counts.pop(next(iter(counts)))
        counts[digest] = counted
    return counts[digest] + overhead, True


# ---- the check behind `llm check` and the Runs page ---------------------------------------------


class Ping(BaseModel):
    """The check's round trip: the smallest structured reply there is."""

    answer: Literal["pong"]


PING_MESSAGES = [{"role": "user", "content": 'Reply with exactly this JSON object: {"answer": "pong"}'}]
PING_MAX_TOKENS = 24


@dataclass
class CheckReport:
    """The verdict and every finding, one line each, in the order they were probed."""

    ok: bool = False
    endpoint: str = ""
    model: str | None = None
    structured_mode: str | None = None
    context_window: int | None = None
    tokenizer: str | None = None
    round_trip_s: float | None = None
    lines: list[str] = field(default_factory=list)

    @property
    def verdict(self) -> str:
        return self.lines[-1] if self.lines else ""

    def as_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "endpoint": self.endpoint, "model": self.model, "structured_mode": self.structured_mode,
                "context_window": self.context_window, "tokenizer": self.tokenizer,
                "round_trip_s": self.round_trip_s, "lines": self.lines}


def check_endpoint(config: LLMConfig, *, store: Store | None = None) -> CheckReport:
    """Probe the configured endpoint — reachable? model listed? which structured mode works? the
    context window? — with one tiny timed round trip (uncached), and end on a verdict a user can
    act on. With a project DB the negotiated mode is stored there, as a first real call would."""
    report = CheckReport(endpoint=config.endpoint, model=config.model)
    problems = config.problems()
    if problems:
        report.lines.append("verdict: NOT READY — LLM not configured: " + "; ".join(problems))
        return report
    # no store for the probe itself: the round trip must not come from the response cache, and the
    # mode is negotiated afresh (the server may have changed since it was stored)
    llm = LLM(replace(config, max_completion_tokens=PING_MAX_TOKENS), store=None)
    llm.run_sync(lambda: _check(llm, report))
    if store is not None and config.structured_mode == "auto" and (llm.structured_mode or llm.rejected_modes):
        reported = report.context_window if not config.context_window else None
        store.runs.set_llm_mode(LLMModeRow(endpoint=config.endpoint, model=llm.model,
                                           mode=llm.structured_mode or UNSETTLED_MODE, rejected=llm.rejected_modes,
                                           context_window=reported))
    return report


async def _check(llm: LLM, report: CheckReport) -> None:
    add = report.lines.append
    started = time.monotonic()
    info = await server_info(llm)
    if info.models_error is not None and "cannot reach" in info.models_error:
        add(f"endpoint: {info.models_error}")
        add("verdict: NOT READY — the server is down or OPENAI_BASE_URL is wrong (for a local model: "
            "`python -m gcpc_core llm serve-local`)")
        return
    add(f"endpoint: {llm.config.endpoint} reachable ({(time.monotonic() - started) * 1000:.0f} ms)")
    if info.models is not None:
        listed = llm.model in info.models
        add(f"model: {llm.model} {'listed' if listed else 'NOT listed'} (served: {', '.join(info.models) or 'none'})")
    else:
        add(f"model: {llm.model} (the server does not list models: {info.models_error})")
    report.context_window = info.context_window
    add(f"context window: {info.context_window} tokens (from {info.context_source})" if info.context_window else
        f"context window: unknown (set {ENV_CONTEXT_WINDOW}; until then prompts are sent unbudgeted and an "
        "overflow the server reports is stored as Abstain context_overflow)")
    report.tokenizer = info.tokenizer_path
    add(f"tokenizer: {info.tokenizer_path} ({info.tokenizer}): prompt tokens are counted exactly" if info.tokenizer
        else f"tokenizer: none; prompt tokens are estimated at {ESTIMATE_CHARS_PER_TOKEN} characters a token")
    started = time.monotonic()
    try:
        result = await llm.complete(PING_MESSAGES, Ping, prompt_version="llm-check-v1", tag="llm check")
    except LLMError as error:
        report.structured_mode = llm.structured_mode
        report.round_trip_s = round(time.monotonic() - started, 3)
        rejected = "; ".join(f"{m}: {why}" for m, why in llm.rejected_modes.items())
        add(f"round trip: failed after {report.round_trip_s:.2f} s ({error.reason}): {error}")
        if llm.structured_mode is not None:
            if rejected:
                add(f"structured mode: {llm.structured_mode} (rejected first — {rejected})")
            add(f"verdict: USABLE WITH CARE — requests in mode {llm.structured_mode} are accepted but the tiny "
                f"reply was unusable ({error.reason}); a small model may need repairs, bad replies become Abstain")
            report.ok = True
        else:
            if rejected:
                add(f"structured mode: none accepted (rejected — {rejected})")
            add(f"verdict: NOT READY — {error}")
        return
    report.round_trip_s = round(time.monotonic() - started, 3)
    report.structured_mode = llm.structured_mode
    rejected = "; ".join(f"{m}: {why}" for m, why in llm.rejected_modes.items())
    how = "set" if llm.config.structured_mode != "auto" else "negotiated"
    add(f"structured mode: {llm.structured_mode} ({how}" + (f"; rejected first — {rejected})" if rejected else ")"))
    add(f"round trip: {report.round_trip_s:.2f} s, {result.usage.prompt_tokens} prompt + "
        f"{result.usage.completion_tokens} completion tokens (server-reported), reply valid")
    if info.models and llm.model not in info.models:
        add(f"verdict: NOT READY — the server does not list model {llm.model} (it lists {', '.join(info.models)}) "
            "but answered anyway: it may have substituted its default model, and runs would be recorded under the "
            "wrong name; set GCPC_MODEL (or --model) to a listed model")
        return
    report.ok = True
    add(f"verdict: READY — synthesize, judge and perturb will use {llm.model} in mode {llm.structured_mode}")
