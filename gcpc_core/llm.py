"""The one LLM layer: every LLM call in GCPC goes through `LLM.complete`.

Why one layer: synthesis and every judge need the same guarantees, and they are
easy to get subtly wrong twice —

* any OpenAI-compatible endpoint through the real `openai` client
  (`OPENAI_BASE_URL`, `OPENAI_API_KEY`, model from the caller or `GCPC_MODEL`);
* structured output validated by pydantic. `structured_mode` picks how the schema
  is sent: `parse` (`chat.completions.parse`, strict JSON schema — OpenAI),
  `json_schema` (a plain JSON-schema `response_format` — vLLM, llama.cpp's
  `llama-server`, recent Ollama) or `json_object` (JSON mode with the schema both in
  the `schema` extension field, which llama-cpp-python's server constrains decoding
  to, and in a system message — anything else). The default, `auto`, negotiates:
  the first call to an endpoint and model tries the strongest mode and falls back
  on a rejection of the response format (a 4xx, or a 5xx whose body names
  `response_format`; such a 5xx is not retried by the client), and the mode that
  works is stored in the project DB per (base URL, model) so later runs start with
  it. The reply is always validated here with `model_validate_json`, from the raw
  body, so a bad reply can be reported with its text and a good one cached as is;
* a content-addressed response cache in the project DB: an identical request
  (model, messages, schema, temperature, prompt version) makes no HTTP call, and
  identical requests in flight at once share one call;
* HTTP retries, backoff and timeouts are the `openai` client's own (`max_retries`,
  `timeout`; it honours Retry-After) — there is no hand-written retry loop here;
* a reply that is malformed, fails the schema, is truncated or is a refusal is never
  cached and raises `LLMReplyError` (or `LLMRefusal`) carrying the raw text, so the
  caller can do one repair round and record the reason;
* bounded concurrency (an asyncio semaphore) for many calls (`complete_many`);
* token accounting (prompt, cached, completion) per call and per run, with a cost
  estimate from `llm_prices.yaml`; every call is recorded in the DB.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import hashlib
import json
import os
import ssl
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ValidationError

from .local_llm import LOCAL_MODEL_ALIAS, TINY_LOCAL_MODEL_NOTE
from .store import utcnow

if TYPE_CHECKING:
    import httpx2
    import openai
    from openai import AsyncOpenAI, DefaultAioHttpClient

    from .store import Store

# `openai` (and its `httpx2`) are imported where a client is built or its errors are caught, never at
# module level: loading the SDK takes ~1.4 s (over 500 modules), which every stage that only names
# this layer (types, errors, `llm_status`) and every CLI verb would otherwise pay on start.

__all__ = [
    "BATCH_ENDPOINT",
    "BATCH_PRICE_FACTOR",
    "DEFAULT_PRICES_PATH",
    "ENV_MODEL",
    "HeldWrites",
    "JSON_OBJECT_PROMPT",
    "LLM",
    "LLMCallError",
    "LLMConfig",
    "LLMError",
    "LLMNotConfigured",
    "LLMRefusal",
    "LLMReplyError",
    "LLMRequest",
    "LLMResult",
    "MODE_SETTINGS",
    "ModeSetting",
    "Price",
    "RunTotals",
    "STRUCTURED_MODES",
    "StructuredMode",
    "Usage",
    "call_error",
    "chat_request_body",
    "estimate_cost",
    "interpret_reply",
    "llm_status",
    "load_prices",
    "normalized_endpoint",
    "price_for",
    "request_key",
]

T = TypeVar("T", bound=BaseModel)

StructuredMode = Literal["parse", "json_schema", "json_object"]
STRUCTURED_MODES: tuple[str, ...] = StructuredMode.__args__  # type: ignore[attr-defined]
"""The structured modes, strongest first: the order `auto` tries them in."""
ModeSetting = Literal["auto", "parse", "json_schema", "json_object"]
UNSETTLED_MODE = "auto"
"""The mode stored for an endpoint and model when negotiation rejected modes but no request was
accepted yet (the request after the rejections failed otherwise): the rejections are kept and
shown, and the next layer negotiates again."""
MODE_SETTINGS: tuple[str, ...] = ModeSetting.__args__  # type: ignore[attr-defined]

ENV_MODEL = "GCPC_MODEL"
ENV_BASE_URL = "OPENAI_BASE_URL"
ENV_API_KEY = "OPENAI_API_KEY"
ENV_STRUCTURED_MODE = "GCPC_STRUCTURED_MODE"
ENV_TIMEOUT = "GCPC_LLM_TIMEOUT"
ENV_MAX_RETRIES = "GCPC_LLM_MAX_RETRIES"
ENV_CONCURRENCY = "GCPC_LLM_CONCURRENCY"
ENV_PRICES = "GCPC_PRICES"
ENV_CONTEXT_WINDOW = "GCPC_CONTEXT_WINDOW"
ENV_MAX_COMPLETION_TOKENS = "GCPC_MAX_COMPLETION_TOKENS"

OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1"

DEFAULT_PRICES_PATH = Path(__file__).with_name("llm_prices.yaml")

PLACEHOLDER_API_KEY = "not-needed"
"""Sent to a self-hosted endpoint (OPENAI_BASE_URL set) when no key is configured:
vLLM and Ollama ignore it, but the client refuses to start without one."""

JSON_OBJECT_PROMPT = (
    "Reply with exactly one JSON object and nothing else (no prose, no code fences). "
    "It must validate against this JSON Schema, named {name}:\n{schema}"
)
"""System message prepended in `json_object` mode, for a server that ignores the `schema` field."""

RAW_REPLY_LIMIT = 200_000
"""Raw reply text kept on errors and in call records; longer replies are cut (and say so)."""

REJECTION_QUOTE_CHARS = 300
"""Characters of a server's rejection kept per mode (enough to name the field; tracebacks are cut)."""

MAX_ERRORS_SHOWN = 20
"""Validation errors named in an LLMReplyError message (enough for a repair prompt)."""

BATCH_ENDPOINT = "/v1/chat/completions"
BATCH_PRICE_FACTOR = 0.5
"""Batch-API tokens are billed at half the list price (OpenAI); applied to batch cost estimates."""


# ---- configuration -----------------------------------------------------------


_SSL_BUILDER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gcpc-ssl-context")


@functools.cache
def _ssl_context() -> Future[ssl.SSLContext]:
    """The client's default SSL context (httpx2's: CA bundle, SSL_CERT_FILE honoured), built once per
    process in a background thread. Reading the CA bundle takes ~0.1 s with the GIL released, so
    starting it when an LLM is made overlaps run planning instead of delaying the first request."""
    import httpx2

    return _SSL_BUILDER.submit(httpx2.create_ssl_context)


def _plain_http(base_url: str | None) -> bool:
    """Whether the endpoint is plain HTTP (a local vLLM, llama.cpp or Ollama server): no TLS is ever
    negotiated with it, so it needs no CA bundle. No base URL means OpenAI's, over HTTPS."""
    return base_url is not None and base_url.lower().startswith("http://")


def _no_ca_context() -> ssl.SSLContext:
    """A verifying SSL context that trusts no certificate authority, for plain-HTTP endpoints: building
    it reads no CA bundle, and should a server ever redirect to HTTPS, the connection fails its
    certificate check instead of going unverified."""
    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)


def _http_client(base_url: str | None) -> DefaultAioHttpClient | None:
    """The aiohttp transport (`openai[aiohttp]`), which openai recommends for high concurrency;
    None falls back to the client's default httpx2 transport. GCPC_HTTP_BACKEND=httpx forces it."""
    if os.environ.get("GCPC_HTTP_BACKEND", "aiohttp") != "aiohttp":
        return None
    try:
        import aiohttp  # noqa: F401  (only probing that the extra is installed)
    except ImportError:
        return None
    from openai import DefaultAioHttpClient

    return DefaultAioHttpClient(verify=_no_ca_context() if _plain_http(base_url) else _ssl_context().result())


@dataclass(frozen=True)
class LLMConfig:
    """Where and how to call the model. `from_env` reads the documented variables."""

    model: str | None = None
    base_url: str | None = None
    api_key: str | None = None
    structured_mode: ModeSetting = "auto"
    """`auto` negotiates the strongest mode the endpoint accepts; a named mode is used as is."""
    timeout: float = 120.0
    """Seconds per HTTP attempt; the client retries a timed-out attempt."""
    max_retries: int = 4
    """The client's own retries for 408/409/429/5xx, timeouts and connection errors."""
    concurrency: int = 8
    """At most this many HTTP requests in flight from one `LLM`."""
    temperature: float | None = 0.0
    """None omits the parameter (some reasoning models accept only their default)."""
    max_completion_tokens: int | None = None
    context_window: int | None = None
    """Tokens the model can attend to (prompt + reply); None: the server's figure when it reports
    one (`llm_server.context_window`), else no budget is applied before sending."""

    @property
    def endpoint(self) -> str:
        """The base URL calls go to, normalized: the key the negotiated mode is stored under."""
        return normalized_endpoint(self.base_url)

    @classmethod
    def from_env(
        cls, model: str | None = None, *, env: Mapping[str, str] | None = None, **overrides: Any
    ) -> LLMConfig:
        """Config from `GCPC_MODEL`, `OPENAI_BASE_URL`, `OPENAI_API_KEY` and the `GCPC_LLM_*` knobs;
        an explicit `model` and `overrides` win."""
        env = os.environ if env is None else env
        values: dict[str, Any] = {
            "model": model or env.get(ENV_MODEL) or None,
            "base_url": env.get(ENV_BASE_URL) or None,
            "api_key": env.get(ENV_API_KEY) or None,
        }
        if env.get(ENV_STRUCTURED_MODE):
            values["structured_mode"] = env[ENV_STRUCTURED_MODE]
        for name, var, kind in (
            ("timeout", ENV_TIMEOUT, float),
            ("max_retries", ENV_MAX_RETRIES, int),
            ("concurrency", ENV_CONCURRENCY, int),
            ("context_window", ENV_CONTEXT_WINDOW, int),
            ("max_completion_tokens", ENV_MAX_COMPLETION_TOKENS, int),
        ):
            if env.get(var):
                values[name] = kind(env[var])
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)

    def problems(self) -> list[str]:
        """Why this config cannot make calls; empty when it can."""
        found = []
        if not self.model:
            found.append(f"no model: pass --model or set {ENV_MODEL}")
        if not self.api_key and not self.base_url:
            found.append(
                f"no endpoint: set {ENV_API_KEY} (and {ENV_BASE_URL} for a server other than OpenAI)"
            )
        if self.structured_mode not in MODE_SETTINGS:
            found.append(
                f"structured mode {self.structured_mode!r} ({ENV_STRUCTURED_MODE}) is not one of "
                f"{', '.join(MODE_SETTINGS)}"
            )
        if self.concurrency < 1:
            found.append("concurrency must be at least 1")
        return found


def normalized_endpoint(base_url: str | None) -> str:
    return (base_url or OPENAI_DEFAULT_BASE_URL).rstrip("/")


def mode_summary(config: LLMConfig, store: Store | None) -> str:
    """How requests ask for structured output: the explicit setting, or what `auto` negotiated."""
    if config.structured_mode != "auto":
        return f"structured mode {config.structured_mode} (set, not negotiated)"
    row = store.runs.llm_mode(config.endpoint, config.model or "") if store is not None else None
    if row is None:
        return "structured mode auto (negotiated on the first call)"
    tried = row.rejected or {}
    order = [mode for mode in STRUCTURED_MODES if mode in tried]  # stored sorted; shown in the order tried
    rejected = "; ".join(f"{mode}: {tried[mode]}" for mode in order)
    if row.mode not in STRUCTURED_MODES:
        return (f"structured mode auto: none accepted yet — the endpoint rejected {rejected} and the next request "
                f"failed otherwise ({row.negotiated_at}); negotiated again on the next call")
    names = ", ".join(order)
    return f"structured mode auto: {row.mode} (negotiated {row.negotiated_at}" + (
        f"; rejected first: {names})" if names else ")")


def llm_status(
    model: str | None = None, *, env: Mapping[str, str] | None = None, store: Store | None = None
) -> tuple[bool, str]:
    """(usable, one-line reason) for the app and CLI to show before starting LLM work; with the
    project DB it names the structured mode negotiated for this endpoint and model."""
    config = LLMConfig.from_env(model, env=env)
    problems = config.problems()
    if problems:
        return False, "LLM not configured: " + "; ".join(problems)
    where = config.base_url or "api.openai.com (default)"
    tiny = f" — {TINY_LOCAL_MODEL_NOTE}" if config.model == LOCAL_MODEL_ALIAS else ""
    return True, f"model {config.model} at {where}, {mode_summary(config, store)}{tiny}"


# ---- prices and usage ------------------------------------------------------------


@dataclass(frozen=True)
class Price:
    """USD per 1M tokens."""

    input: float
    output: float
    cached_input: float | None = None


def load_prices(path: str | Path | None = None) -> dict[str, Price]:
    """The price table: `llm_prices.yaml`, then the file named by `GCPC_PRICES` (or `path`) on top."""
    import yaml

    table: dict[str, Price] = {}
    extra = path or os.environ.get(ENV_PRICES)
    for source in (DEFAULT_PRICES_PATH, Path(extra) if extra else None):
        if source is None:
            continue
        data = yaml.safe_load(Path(source).read_text(encoding="utf-8")) or {}
        for name, row in data.items():
            table[str(name)] = Price(**row)
    return table


def price_for(model: str, prices: Mapping[str, Price]) -> Price | None:
    """Longest price-table key that the model name starts with (a `provider/` prefix is dropped)."""
    name = model.rsplit("/", 1)[-1]
    matches = [key for key in prices if name == key or name.startswith(key)]
    return prices[max(matches, key=len)] if matches else None


@dataclass(frozen=True)
class Usage:
    """Tokens of one call, or summed over many."""

    prompt_tokens: int = 0
    cached_tokens: int = 0
    """Part of `prompt_tokens` the provider served from its prompt cache."""
    completion_tokens: int = 0

    @classmethod
    def from_body(cls, body: Mapping[str, Any]) -> Usage:
        usage = body.get("usage") or {}
        details = usage.get("prompt_tokens_details") or {}
        return cls(
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            cached_tokens=int(details.get("cached_tokens") or 0),
            completion_tokens=int(usage.get("completion_tokens") or 0),
        )

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.cached_tokens + other.cached_tokens,
            self.completion_tokens + other.completion_tokens,
        )


def estimate_cost(usage: Usage, price: Price | None) -> float | None:
    """USD for `usage` at `price`; None when the price is unknown (never a misleading 0)."""
    if price is None:
        return None
    cached_price = price.input if price.cached_input is None else price.cached_input
    uncached = max(usage.prompt_tokens - usage.cached_tokens, 0)
    return (
        uncached * price.input + usage.cached_tokens * cached_price + usage.completion_tokens * price.output
    ) / 1_000_000


@dataclass
class RunTotals:
    """What one run spent so far; `runs.run_stage` writes it to the `runs` row at the end."""

    run_id: str | None = None
    calls: int = 0
    http_calls: int = 0
    cache_hits: int = 0
    errors: int = 0
    usage: Usage = field(default_factory=Usage)
    cost_usd: float = 0.0
    unpriced_calls: int = 0
    """Calls with tokens but no price: `cost_usd` then understates the run and says so."""
    structured_mode: str | None = None
    """The structured mode the run's requests used (negotiated or set); None: no LLM call."""

    def add(self, *, usage: Usage, cost: float | None, cache_hit: bool, error: bool) -> None:
        self.calls += 1
        self.cache_hits += int(cache_hit)
        self.http_calls += int(not cache_hit)
        self.errors += int(error)
        self.usage = self.usage + usage
        if cost is None:
            self.unpriced_calls += int(usage != Usage())
        else:
            self.cost_usd += cost

    @property
    def cost_or_none(self) -> float | None:
        """The run's cost, or None when no call could be priced."""
        return None if self.unpriced_calls and not self.cost_usd else self.cost_usd

    def summary(self, *, http: bool = True) -> str:
        """Calls, tokens and cost, worded alike in every run report."""
        cost = "unknown" if self.cost_or_none is None else f"${self.cost_or_none:.4f}"
        calls = f"{self.http_calls} HTTP, {self.cache_hits} cached" if http else f"{self.cache_hits} cached"
        mode = f", structured mode {self.structured_mode}" if self.structured_mode else ""
        return (
            f"{self.calls} calls ({calls}), tokens {self.usage.prompt_tokens} prompt ({self.usage.cached_tokens} "
            f"cached) + {self.usage.completion_tokens} completion, cost {cost}{mode}"
        )

    def as_row(self) -> dict[str, Any]:
        return {
            "calls": self.calls,
            "http_calls": self.http_calls,
            "cache_hits": self.cache_hits,
            "errors": self.errors,
            "prompt_tokens": self.usage.prompt_tokens,
            "cached_tokens": self.usage.cached_tokens,
            "completion_tokens": self.usage.completion_tokens,
            "cost_usd": self.cost_or_none,
            "unpriced_calls": self.unpriced_calls,
            "structured_mode": self.structured_mode,
        }


# ---- errors -----------------------------------------------------------------------


class LLMError(RuntimeError):
    """Base of every error this layer raises; `reason` is a short machine-readable code."""

    reason: str = "error"

    def __init__(self, message: str, *, reason: str | None = None):
        super().__init__(message)
        if reason is not None:
            self.reason = reason


class LLMNotConfigured(LLMError):
    """No model or endpoint configured: the message says which variable to set."""

    reason = "not_configured"


class LLMCallError(LLMError):
    """The HTTP call failed after the client's own retries (or was not retryable, e.g. 400)."""

    def __init__(self, message: str, *, reason: str, status: int | None = None):
        super().__init__(message, reason=reason)
        self.status = status


class LLMReplyError(LLMError):
    """The model answered, but not with a valid instance of the schema. Never cached.

    `raw` is the reply text (or the whole body when there was no text), for a repair
    prompt and for the audit trail; `usage` is what the bad reply cost.
    """

    def __init__(self, message: str, *, reason: str, raw: str, usage: Usage | None = None):
        super().__init__(message, reason=reason)
        self.raw = raw
        self.usage = usage or Usage()


class LLMRefusal(LLMReplyError):
    """The model refused (`message.refusal` or a content-filter stop)."""


# ---- requests and results ----------------------------------------------------------


Message = Mapping[str, str]


@dataclass(frozen=True)
class LLMRequest(Generic[T]):
    """One structured call, for `complete_many`."""

    messages: Sequence[Message]
    response_model: type[T]
    prompt_version: str
    tag: str = ""
    """Free label recorded with the call, e.g. the task or trajectory id."""
    temperature: float | None = None
    """None: the config's temperature."""


@dataclass(frozen=True)
class LLMResult(Generic[T]):
    """A validated reply and what it cost."""

    parsed: T
    text: str
    model: str
    key: str
    usage: Usage
    """Tokens this call spent: zero for a cache hit."""
    cost_usd: float | None
    cache_hit: bool
    latency_s: float
    retries: int = 0


_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)
"""Encodes the canonical text of cache keys (`json.dumps` would build an encoder on every call)."""


def _canonical(value: Any) -> str:
    return _CANONICAL.encode(value)


@functools.lru_cache(maxsize=256)
def _json_schema(response_model: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON schema, computed once per class: it is needed on every call (cache key,
    response_format) and pydantic rebuilds it from scratch each time (~1 ms)."""
    return response_model.model_json_schema()


@functools.lru_cache(maxsize=256)
def _decoding_schema(response_model: type[BaseModel]) -> dict[str, Any]:
    """The schema `json_object` mode sends (extension field and prompt): the model's own
    `decoding_schema()` when it declares grammar bounds (`gcpc_core.decoding`), else its JSON schema."""
    bounded = getattr(response_model, "decoding_schema", None)
    return bounded() if callable(bounded) else _json_schema(response_model)


@functools.lru_cache(maxsize=256)
def _response_format(response_model: type[BaseModel], mode: StructuredMode) -> dict[str, Any]:
    """The `response_format` parameter of a structured mode. `parse` sends exactly what
    `completions.parse` would: the SDK's strict JSON schema, built once per class instead of on
    every request. `json_object` carries the schema in `schema`, the extension field through which
    llama-cpp-python's server (and Anyscale-style endpoints) constrain decoding to it; servers that
    do not know the field ignore it, and the schema travels in a system message as well."""
    if mode == "parse":
        from openai.lib._parsing._completions import type_to_response_format_param

        return dict(type_to_response_format_param(response_model))  # type: ignore[arg-type]
    if mode == "json_schema":
        return {
            "type": "json_schema",
            "json_schema": {"name": response_model.__name__, "schema": _json_schema(response_model), "strict": False},
        }
    return {"type": "json_object", "schema": _decoding_schema(response_model)}


def chat_request_body(
    *,
    model: str,
    messages: Sequence[Message],
    response_model: type[BaseModel],
    mode: StructuredMode,
    temperature: float | None,
    max_completion_tokens: int | None = None,
) -> dict[str, Any]:
    """The chat-completion request body for a structured call: one builder for live calls and
    Batch-API lines, so a batched request is byte-for-byte the request a live call would send."""
    body: dict[str, Any] = {"model": model, "messages": [dict(m) for m in messages]}
    if mode == "json_object":
        schema_prompt = JSON_OBJECT_PROMPT.format(
            name=response_model.__name__, schema=_canonical(_decoding_schema(response_model))
        )
        body["messages"] = [{"role": "system", "content": schema_prompt}, *body["messages"]]
    body["response_format"] = _response_format(response_model, mode)
    if temperature is not None:
        body["temperature"] = temperature
    if max_completion_tokens is not None:
        body["max_completion_tokens"] = max_completion_tokens
        if mode != "parse":
            # the legacy name too: llama-cpp-python reads only `max_tokens` (and ignores the other, so a
            # reply would run to the context window); OpenAI, the only `parse` server that refuses
            # `max_tokens` for some models, never sees it
            body["max_tokens"] = max_completion_tokens
    return body


def request_key(
    *,
    model: str,
    messages: Sequence[Message],
    response_model: type[BaseModel],
    temperature: float | None,
    prompt_version: str,
) -> str:
    """Cache key: sha256 of the canonical request — `_canonical` of {model, messages, schema,
    temperature, prompt_version}. The structured mode is deliberately not part of it: a reply that
    validates against the schema is equally good whichever way it was asked.

    The canonical text is assembled from its parts in sorted-key order, byte for byte what
    `_canonical` of the whole mapping gives, with the schema's part encoded once per class: it is
    the largest constant of every request."""
    text = (
        f'{{"messages":{_canonical([dict(m) for m in messages])},"model":{_canonical(model)},'
        f'"prompt_version":{_canonical(prompt_version)},"schema":{_canonical_schema(response_model)},'
        f'"temperature":{_canonical(temperature)}}}'
    )
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@functools.lru_cache(maxsize=256)
def _canonical_schema(response_model: type[BaseModel]) -> str:
    """The `schema` part of a cache key, encoded once per class."""
    return _canonical({"name": response_model.__name__, "json_schema": _json_schema(response_model)})


def _clip(text: str) -> str:
    if len(text) <= RAW_REPLY_LIMIT:
        return text
    return text[:RAW_REPLY_LIMIT] + f"\n[… cut: {len(text) - RAW_REPLY_LIMIT} more characters]"


def _strip_fences(text: str) -> str:
    """Drop one ```json … ``` wrapper, which JSON-mode servers sometimes add."""
    stripped = text.strip()
    if stripped.startswith("```") and stripped.endswith("```"):
        stripped = stripped[3:-3]
        first_newline = stripped.find("\n")
        if first_newline != -1 and stripped[:first_newline].strip().isalpha():
            stripped = stripped[first_newline + 1 :]
    return stripped.strip()


def _validate_text(text: str, response_model: type[T]) -> T:
    """The reply text as a `response_model`. JSON forbids raw control characters inside strings, but a
    server decoding under a grammar may write them (llama-cpp-python with Gemma 3 270M wrote newlines
    inside a quote): such text is unambiguous, so it is read as Python's non-strict parser reads it,
    then validated the same way. Any other broken JSON stays an error."""
    try:
        return response_model.model_validate_json(text)
    except ValidationError as exc:
        if not any(err["type"] == "json_invalid" for err in exc.errors(include_url=False)):
            raise
        try:
            data = json.loads(text, strict=False)
        except ValueError:
            raise exc from None
        return response_model.model_validate(data)


def interpret_reply(body: Mapping[str, Any], response_model: type[T]) -> tuple[T, str]:
    """Validate a chat-completion body against `response_model`: (instance, reply text).

    The single validation path for fresh replies (any structured mode) and cache hits.
    """
    usage = Usage.from_body(body)
    choices = body.get("choices") or []
    if not choices:
        raise LLMReplyError("reply has no choices", reason="no_choices", raw=_clip(_canonical(body)), usage=usage)
    choice = choices[0]
    message = choice.get("message") or {}
    text = message.get("content") or ""
    if message.get("refusal"):
        raise LLMRefusal(f"model refused: {message['refusal']}", reason="refusal", raw=_clip(message["refusal"]), usage=usage)
    finish = choice.get("finish_reason")
    if finish == "content_filter":
        raise LLMRefusal("reply stopped by the content filter", reason="content_filter", raw=_clip(text), usage=usage)
    if finish == "length":
        raise LLMReplyError(
            "reply was cut at the token limit", reason="truncated", raw=_clip(text), usage=usage
        )
    if not text.strip():
        raise LLMReplyError("reply is empty", reason="empty", raw=_clip(_canonical(body)), usage=usage)
    try:
        return _validate_text(_strip_fences(text), response_model), text
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        json_broken = any(err["type"] == "json_invalid" for err in errors)
        detail = "; ".join(
            f"{'.'.join(map(str, err['loc'])) or '(root)'}: {err['msg']}" for err in errors[:MAX_ERRORS_SHOWN]
        )
        if len(errors) > MAX_ERRORS_SHOWN:
            detail += f"; and {len(errors) - MAX_ERRORS_SHOWN} more"
        raise LLMReplyError(
            f"reply is {'not valid JSON' if json_broken else f'not a valid {response_model.__name__}'}: {detail}",
            reason="invalid_json" if json_broken else "schema",
            raw=_clip(text),
            usage=usage,
        ) from exc


# ---- the layer ------------------------------------------------------------------------


@dataclass
class HeldWrites:
    """Response-cache rows and call records an `LLM` holds back inside `LLM.holding_writes`, for a
    caller that stores its own results to write together with them, in one transaction
    (`write`, then `clear` once it committed): a judging run commits once per group of finished
    trajectories instead of once per call. A held reply still answers an identical request."""

    cache: dict[str, tuple[str, dict[str, Any], str]] = field(default_factory=dict)
    """Request key → (model, validated reply body, when it was received)."""
    calls: list[dict[str, Any]] = field(default_factory=list)
    """`llm_calls` rows, their time fixed when the call ended."""

    def __bool__(self) -> bool:
        return bool(self.cache or self.calls)

    def write(self, store: Store) -> None:
        """Store what is held, inside the caller's transaction when one is open. Kept until `clear`,
        so a transaction that rolls back loses nothing."""
        if self.cache:
            store.runs.cache_put_many((key, model, body, at) for key, (model, body, at) in self.cache.items())
        if self.calls:
            store.runs.record_llm_calls(self.calls)

    def clear(self) -> None:
        self.cache.clear()
        self.calls.clear()



@dataclass
class _LoopState:
    """Things bound to one event loop: the HTTP client's pool, the semaphore, in-flight calls."""

    loop: asyncio.AbstractEventLoop
    client: AsyncOpenAI
    semaphore: asyncio.Semaphore
    inflight: dict[str, asyncio.Future[dict[str, Any] | None]] = field(default_factory=dict)
    in_flight_now: int = 0
    max_in_flight: int = 0


class LLM:
    """A configured model endpoint with cache, accounting and a concurrency bound.

    Use one instance per run: `runs.run_stage(store, kind, units, work_one, llm=llm, ...)` records
    the run; calls made outside a run are recorded with no run id.
    """

    def __init__(
        self,
        config: LLMConfig,
        *,
        store: Store | None = None,
        prices: Mapping[str, Price] | None = None,
    ):
        problems = config.problems()
        if problems:
            raise LLMNotConfigured("LLM not configured: " + "; ".join(problems))
        self.config = config
        self.model: str = config.model  # type: ignore[assignment]  # problems() guarantees it
        self.store = store
        self.prices = load_prices() if prices is None else dict(prices)
        self.price = price_for(self.model, self.prices)
        self.totals = RunTotals()
        self._state: _LoopState | None = None
        self._mode: StructuredMode | None = None if config.structured_mode == "auto" else config.structured_mode
        """The mode requests are sent in; None while `auto` has not found one yet."""
        self._stored_mode: str | None = None
        self._rejected: dict[str, str] = {}
        """Modes the endpoint rejected during negotiation → the server's message."""
        self._held: HeldWrites | None = None
        """Set inside `holding_writes`: cache rows and call records wait there instead of being written."""
        row = store.runs.llm_mode(config.endpoint, self.model) if store is not None else None
        self.context_window: int | None = config.context_window or (row.context_window if row else None)
        """Tokens of context for a budget before sending: the setting, else what `llm check` found
        the server reporting; None when neither says (no budget is applied)."""
        if self._mode is None and row is not None and row.mode in STRUCTURED_MODES:
            self._mode = self._stored_mode = row.mode
        if not _plain_http(config.base_url):
            _ssl_context()  # start building it now (see _ssl_context)

    @classmethod
    def from_env(cls, model: str | None = None, *, store: Store | None = None, **overrides: Any) -> LLM:
        """The usual way in: config from the environment, `model` from `--model` when given."""
        return cls(LLMConfig.from_env(model, **overrides), store=store)

    @property
    def structured_mode(self) -> StructuredMode | None:
        """The structured mode requests use now: the setting, or what `auto` negotiated or found
        stored; None before an `auto` layer's first successful call."""
        return self._mode

    @property
    def rejected_modes(self) -> dict[str, str]:
        """Modes the endpoint rejected while negotiating, with the server's message."""
        return dict(self._rejected)

    @property
    def max_in_flight(self) -> int:
        """Most HTTP requests this instance had in flight at once (on its current event loop)."""
        return self._state.max_in_flight if self._state else 0

    # -- runs --

    def new_run_totals(self) -> RunTotals:
        """Fresh totals for a run that starts (`runs.run_stage` records it): this instance's calls are
        summed into them and tagged with their `run_id`."""
        self.totals = RunTotals(structured_mode=self._mode)
        return self.totals

    @contextmanager
    def holding_writes(self) -> Iterator[HeldWrites]:
        """Hold cache rows and call records back (see `HeldWrites`) for the caller to write with its
        own results. Whatever is still held when the block ends is written then, in its own
        transaction, so nothing is lost if the caller does not write it."""
        held = self._held = HeldWrites()
        try:
            yield held
        finally:
            self._held = None
            if held and self.store is not None:
                with self.store.atomic():
                    held.write(self.store)
                held.clear()

    # -- calls --

    def _loop_state(self) -> _LoopState:
        loop = asyncio.get_running_loop()
        if self._state is None or self._state.loop is not loop:
            client = _client_class()(
                api_key=self.config.api_key or PLACEHOLDER_API_KEY,
                base_url=self.config.base_url,
                timeout=self.config.timeout,
                max_retries=self.config.max_retries,
                http_client=_http_client(self.config.base_url),
            )
            self._state = _LoopState(loop, client, asyncio.Semaphore(self.config.concurrency))
        return self._state

    async def aclose(self) -> None:
        """Close the HTTP client of the current event loop."""
        if self._state is not None:
            state, self._state = self._state, None
            await state.client.close()

    def _key(
        self,
        messages: Sequence[Message],
        response_model: type[BaseModel],
        temperature: float | None,
        prompt_version: str,
    ) -> str:
        return request_key(
            model=self.model,
            messages=messages,
            response_model=response_model,
            temperature=temperature,
            prompt_version=prompt_version,
        )

    def client(self) -> AsyncOpenAI:
        """The HTTP client of the running event loop (probes of other server routes reuse its pool)."""
        return self._loop_state().client

    def request_body(
        self, messages: Sequence[Message], response_model: type[BaseModel], *, mode: StructuredMode | None = None
    ) -> dict[str, Any]:
        """The body a call would send now (or in `mode`): what a context budget must count."""
        return self._body(messages, response_model, self.config.temperature, mode)

    def _body(
        self,
        messages: Sequence[Message],
        response_model: type[BaseModel],
        temperature: float | None,
        mode: StructuredMode | None = None,
        max_completion_tokens: int | None = None,
    ) -> dict[str, Any]:
        """The request exactly as sent, so a Batch-API line is the body a live call would send.
        Without a mode: the current one, or `parse` (the Batch API is OpenAI's, which takes it);
        without a reply bound: the configured one."""
        return chat_request_body(
            model=self.model,
            messages=messages,
            response_model=response_model,
            mode=mode or self._mode or "parse",
            temperature=temperature,
            max_completion_tokens=max_completion_tokens or self.config.max_completion_tokens,
        )

    async def complete(
        self,
        messages: Sequence[Message],
        response_model: type[T],
        *,
        prompt_version: str,
        tag: str = "",
        temperature: float | None = None,
        max_completion_tokens: int | None = None,
    ) -> LLMResult[T]:
        """One structured call: cached reply, or one HTTP request (with the client's retries).
        `max_completion_tokens` bounds this reply instead of the configured bound (a repair of a
        reply cut at the bound gets more room, see `judge.budget.repair_room`).

        Raises LLMReplyError / LLMRefusal for a bad reply and LLMCallError for a failed call;
        both are recorded before they are raised.
        """
        temp = self.config.temperature if temperature is None else temperature
        key = self._key(messages, response_model, temp, prompt_version)
        state = self._loop_state()
        body = self._cached(key)
        while body is None and key in state.inflight:
            body = await asyncio.shield(state.inflight[key])  # an identical call is on its way
        if body is not None:
            parsed, text = interpret_reply(body, response_model)
            return self._finish(
                LLMResult(parsed, text, self.model, key, Usage(), 0.0, True, 0.0),
                prompt_version=prompt_version,
                tag=tag,
            )
        future: asyncio.Future[dict[str, Any] | None] = state.loop.create_future()
        state.inflight[key] = future
        try:
            result, body = await self._call(state, key, messages, response_model, temp, prompt_version, tag,
                                            max_completion_tokens)
            future.set_result(body)
            return result
        finally:
            if not future.done():
                future.set_result(None)  # the call failed: waiters make their own
            state.inflight.pop(key, None)

    def _cached(self, key: str) -> dict[str, Any] | None:
        """The stored (or held) reply of an identical request, if any."""
        if self._held is not None and key in self._held.cache:
            return self._held.cache[key][1]
        return self.store.runs.cache_get(key) if self.store is not None else None

    async def _call(
        self,
        state: _LoopState,
        key: str,
        messages: Sequence[Message],
        response_model: type[T],
        temperature: float | None,
        prompt_version: str,
        tag: str,
        max_completion_tokens: int | None = None,
    ) -> tuple[LLMResult[T], dict[str, Any]]:
        import openai

        record = {"prompt_version": prompt_version, "tag": tag, "key": key}
        async with state.semaphore:
            state.in_flight_now += 1
            state.max_in_flight = max(state.max_in_flight, state.in_flight_now)
            started = time.monotonic()
            try:
                body, retries = await self._send(state.client, messages, response_model, temperature,
                                                 max_completion_tokens)
            except openai.APIError as exc:
                error = call_error(exc, endpoint=self.config.endpoint, model=self.model,
                                    mode_set=self.config.structured_mode != "auto")
                self._record_failure(error, Usage(), time.monotonic() - started, record, raw=None)
                raise error from exc
            except LLMCallError as error:  # no structured mode is accepted
                self._record_failure(error, Usage(), time.monotonic() - started, record, raw=None)
                raise
            except LLMReplyError as error:
                self._record_failure(error, error.usage, time.monotonic() - started, record, raw=error.raw)
                raise
            finally:
                state.in_flight_now -= 1
            latency = time.monotonic() - started
        result = self._accept(
            body, response_model, key=key, prompt_version=prompt_version, tag=tag, latency=latency, retries=retries
        )
        return result, body

    def _accept(
        self,
        body: Mapping[str, Any],
        response_model: type[T],
        *,
        key: str,
        prompt_version: str,
        tag: str,
        latency: float = 0.0,
        retries: int = 0,
        cost_factor: float = 1.0,
    ) -> LLMResult[T]:
        """Validate a reply body, record it and cache it when valid; live and batch replies alike,
        so a batched request is held to exactly the rules of a live one. Raises LLMReplyError."""
        usage = Usage.from_body(body)
        cost = estimate_cost(usage, self.price)
        cost = None if cost is None else cost * cost_factor
        try:
            parsed, text = interpret_reply(body, response_model)
        except LLMReplyError as error:
            record = {"prompt_version": prompt_version, "tag": tag, "key": key}
            self._record_failure(error, usage, latency, record, raw=error.raw, cost=cost, retries=retries)
            raise
        result = LLMResult(parsed, text, self.model, key, usage, cost, False, latency, retries)
        if self.store is None:
            return self._finish(result, prompt_version=prompt_version, tag=tag)
        if self._held is not None:
            self._held.cache.setdefault(key, (self.model, dict(body), utcnow()))
            return self._finish(result, prompt_version=prompt_version, tag=tag)
        with self.store.atomic():  # the cached reply and its call record: one commit per call
            self.store.runs.cache_put(key, model=self.model, response=dict(body))
            return self._finish(result, prompt_version=prompt_version, tag=tag)

    async def _send(
        self,
        client: AsyncOpenAI,
        messages: Sequence[Message],
        response_model: type[BaseModel],
        temperature: float | None,
        max_completion_tokens: int | None = None,
    ) -> tuple[dict[str, Any], int]:
        """One logical request (the client retries inside): the raw JSON body and retries taken.

        The raw body rather than the SDK's parsed object: it is what the cache stores and what
        a bad reply is reported with. A reply bound above the configured one gets a timeout
        scaled alike: a slow server writes the longer reply in proportionally longer time.
        """
        import httpx2
        import openai

        options: dict[str, Any] = {}
        configured = self.config.max_completion_tokens
        if max_completion_tokens and configured and max_completion_tokens > configured:
            options["timeout"] = self.config.timeout * max_completion_tokens / configured
        while True:
            try:
                mode = self._next_mode()
            except LLMCallError:
                self._keep_rejections()
                raise
            body = self._body(messages, response_model, temperature, mode, max_completion_tokens)
            # `post` (the SDK's documented route for raw requests) rather than `chat.completions.create`:
            # the body is already complete and validated, and create's recursive param transform cost
            # ~1.5 ms of CPU per call (bench/judge_bench.py); retries, timeouts and errors are the same.
            try:
                response = await client.post("/chat/completions", cast_to=httpx2.Response, body=body,
                                             options=options)  # type: ignore[arg-type]
            except openai.APIStatusError as exc:
                if self._fall_back(mode, exc):
                    continue
                self._keep_rejections()
                raise
            except openai.APIError:
                self._keep_rejections()
                raise
            self._settle(mode)
            break
        try:
            body = response.json()
        except ValueError as exc:
            raise LLMReplyError("reply body is not JSON", reason="invalid_body", raw=_clip(response.text)) from exc
        if not isinstance(body, dict):
            raise LLMReplyError("reply body is not a JSON object", reason="invalid_body", raw=_clip(_canonical(body)))
        return body, int(response.request.headers.get("x-stainless-retry-count", 0))

    # -- structured-mode negotiation --

    def _next_mode(self) -> StructuredMode:
        """The mode to send the next request in; raises LLMCallError when every mode was rejected."""
        if self._mode is not None:
            return self._mode
        for mode in STRUCTURED_MODES:
            if mode not in self._rejected:
                return mode  # type: ignore[return-value]
        tried = "; ".join(f"{mode}: {message}" for mode, message in self._rejected.items())
        raise LLMCallError(
            f"{self.config.endpoint} rejected every structured-output mode for model {self.model} (tried "
            f"{', '.join(self._rejected)}) — {tried}. Use a server or model that supports JSON output, or set "
            f"{ENV_STRUCTURED_MODE} to a mode it documents",
            reason="structured_output_unsupported",
        )

    def _fall_back(self, mode: StructuredMode, exc: openai.APIStatusError) -> bool:
        """Whether a failed request should be sent again in the next mode (negotiating only)."""
        if self.config.structured_mode != "auto" or not _rejects_format(exc, settled=mode == self._mode):
            return False
        self._rejected[mode] = f"HTTP {exc.status_code}: {_server_message(exc)[:REJECTION_QUOTE_CHARS]}"
        if self._mode == mode:
            self._mode = None  # a stored mode the server no longer takes: negotiate again
        return True

    def _settle(self, mode: StructuredMode) -> None:
        """A request in `mode` was accepted: use it from now on and store it for this endpoint and model."""
        self._mode = self.totals.structured_mode = mode
        if self.config.structured_mode == "auto" and self._stored_mode != mode:
            self._stored_mode = mode
            if self.store is not None:
                self.store.runs.set_llm_mode(self.config.endpoint, self.model, mode, rejected=self._rejected)

    def _keep_rejections(self) -> None:
        """A request failed after negotiation rejected modes, none accepted: store the rejections
        (under `UNSETTLED_MODE`), so `llm check` and `llm_status` show what the endpoint refused."""
        if self.store is None or self._mode is not None or not self._rejected:
            return
        self._stored_mode = None
        self.store.runs.set_llm_mode(self.config.endpoint, self.model, UNSETTLED_MODE, rejected=self._rejected)

    def _finish(self, result: LLMResult[T], *, prompt_version: str, tag: str) -> LLMResult[T]:
        self.totals.add(usage=result.usage, cost=result.cost_usd, cache_hit=result.cache_hit, error=False)
        self._record(
            key=result.key,
            prompt_version=prompt_version,
            tag=tag,
            cache_hit=result.cache_hit,
            usage=result.usage,
            cost=result.cost_usd,
            latency=result.latency_s,
            retries=result.retries,
            status="ok",
        )
        return result

    def _record_failure(
        self,
        error: LLMError,
        usage: Usage,
        latency: float,
        record: Mapping[str, str],
        *,
        raw: str | None,
        cost: float | None = None,
        retries: int = 0,
    ) -> None:
        self.totals.add(usage=usage, cost=cost, cache_hit=False, error=True)
        self._record(
            **record,
            cache_hit=False,
            usage=usage,
            cost=cost,
            latency=latency,
            retries=retries,
            status=error.reason,
            error=str(error),
            raw_reply=raw,
        )

    def _record(self, *, usage: Usage, latency: float, cost: float | None, **fields: Any) -> None:
        if self.store is None:
            return
        row = {
            "run_id": self.totals.run_id,
            "created_at": utcnow(),
            "model": self.model,
            "prompt_tokens": usage.prompt_tokens,
            "cached_tokens": usage.cached_tokens,
            "completion_tokens": usage.completion_tokens,
            "cost_usd": cost,
            "latency_s": round(latency, 4),
            **fields,
        }
        if self._held is not None:
            self._held.calls.append(row)
        else:
            self.store.runs.record_llm_call(row)

    async def complete_many(
        self,
        requests: Iterable[LLMRequest[Any]],
        *,
        on_done: Callable[[int, LLMResult[Any] | LLMError], None] | None = None,
    ) -> list[LLMResult[Any] | LLMError]:
        """Run many calls concurrently (bounded by `config.concurrency`), results in request order.

        An LLMError is returned in its request's slot rather than raised, so one bad reply does not
        sink a thousand; `on_done(index, outcome)` fires as each finishes (progress bars).
        """

        async def one(index: int, request: LLMRequest[Any]) -> LLMResult[Any] | LLMError:
            try:
                outcome: LLMResult[Any] | LLMError = await self.complete(
                    request.messages,
                    request.response_model,
                    prompt_version=request.prompt_version,
                    tag=request.tag,
                    temperature=request.temperature,
                )
            except LLMError as error:
                outcome = error
            if on_done is not None:
                on_done(index, outcome)
            return outcome

        return list(await asyncio.gather(*(one(i, r) for i, r in enumerate(requests))))

    def run_sync(self, work: Callable[[], Awaitable[Any]]) -> Any:
        """Run async work to completion from sync code, closing the HTTP client afterwards."""

        async def main() -> Any:
            try:
                return await work()
            finally:
                await self.aclose()

        with _gc_frozen():
            return asyncio.run(main())

    # -- Batch API (large runs: submit now, collect within 24 h, typically at half price) --

    def batch_line(
        self,
        custom_id: str,
        messages: Sequence[Message],
        response_model: type[BaseModel],
        *,
        prompt_version: str,
        temperature: float | None = None,
    ) -> tuple[dict[str, Any], str]:
        """One Batch-API JSONL line — exactly the body a live call would send — and its cache key."""
        temp = self.config.temperature if temperature is None else temperature
        line = {"custom_id": custom_id, "method": "POST", "url": BATCH_ENDPOINT,
                "body": self._body(messages, response_model, temp)}
        return line, self._key(messages, response_model, temp, prompt_version)

    async def submit_batch(
        self, lines: Sequence[Mapping[str, Any]], *, path: Path, metadata: Mapping[str, str] | None = None
    ) -> dict[str, Any]:
        """Write `lines` as JSONL to `path` (kept for audit), upload it and create the batch.

        Returns the provider's batch object as a dict; raises LLMCallError when the endpoint fails.
        """
        import openai

        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8")
        client = self._loop_state().client
        extra: dict[str, Any] = {"metadata": dict(metadata)} if metadata else {}
        try:
            uploaded = await client.files.create(file=(path.name, path.read_bytes()), purpose="batch")
            batch = await client.batches.create(
                input_file_id=uploaded.id, endpoint=BATCH_ENDPOINT, completion_window="24h", **extra
            )
        except openai.APIError as exc:
            raise call_error(exc) from exc
        return batch.model_dump()

    async def retrieve_batch(self, batch_id: str) -> dict[str, Any]:
        """The provider's current batch object (status, output and error file ids, counts)."""
        import openai

        try:
            return (await self._loop_state().client.batches.retrieve(batch_id)).model_dump()
        except openai.APIError as exc:
            raise call_error(exc) from exc

    async def batch_results(self, batch: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
        """custom_id → result row (`response: {status_code, body}` and/or `error`) from a finished
        batch's output and error files."""
        import openai

        client = self._loop_state().client
        rows: dict[str, dict[str, Any]] = {}
        for file_key in ("output_file_id", "error_file_id"):
            file_id = batch.get(file_key)
            if not file_id:
                continue
            try:
                content = (await client.files.content(file_id)).read()
            except openai.APIError as exc:
                raise call_error(exc) from exc
            for line in content.decode("utf-8").splitlines():
                if line.strip():
                    row = json.loads(line)
                    rows.setdefault(row["custom_id"], row)
        return rows

    def accept_batch_reply(
        self,
        body: Mapping[str, Any],
        response_model: type[T],
        *,
        key: str,
        prompt_version: str,
        tag: str = "",
    ) -> LLMResult[T]:
        """Validate one batch reply exactly like a live one, record it in the run, and cache it when
        valid (so a later live run of the same request makes no call). Raises LLMReplyError."""
        return self._accept(
            body, response_model, key=key, prompt_version=prompt_version, tag=tag, cost_factor=BATCH_PRICE_FACTOR
        )


@contextmanager
def _gc_frozen() -> Iterator[None]:
    """Exempt the objects that exist before a run (imported libraries, the run's plan) from the
    cyclic garbage collector while it runs: a run allocates fast enough to trigger full collections,
    each of which would otherwise rescan that whole heap (~15% of a 1,000-trajectory judge run's CPU
    time, bench/judge_bench.py). Objects the run creates are collected as usual; afterwards the
    exempted ones are collectable again."""
    gc.freeze()
    thresholds = gc.get_threshold()
    gc.set_threshold(20_000, *thresholds[1:])
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        gc.unfreeze()


@functools.cache
def _client_class() -> type[AsyncOpenAI]:
    """The client class, made on first use (so that importing this module does not load `openai`)."""
    from openai import AsyncOpenAI

    class _Client(AsyncOpenAI):
        """The `openai` client, except that a 5xx whose body names `response_format` is not retried: it
        is the server's deterministic rejection of a structured mode (llama-cpp-python answers an unknown
        `response_format.type` with HTTP 500), so retrying only delays the fallback by the backoff."""

        def _should_retry(self, response: httpx2.Response) -> bool:
            if response.status_code >= 500 and _names_response_format(_response_text(response)):
                return False
            return super()._should_retry(response)

    return _Client


def _response_text(response: httpx2.Response) -> str:
    import httpx2

    try:
        return response.text
    except httpx2.ResponseNotRead:  # a streamed body: no rejection to see, the client decides
        return ""


def _names_response_format(text: str) -> bool:
    return "response_format" in text


CONTEXT_OVERFLOW_MARKERS = (
    "context_length_exceeded",
    "maximum context length",
    "exceed context window",
    "exceeds the available context size",
    "exceed_context_size",
)
"""How OpenAI, vLLM, llama-cpp-python and llama.cpp's server say a prompt does not fit."""


def _server_message(exc: openai.APIStatusError) -> str:
    """The server's own words: its error message (and code), else its whole body."""
    body = exc.body
    if isinstance(body, dict) and isinstance(body.get("message"), str) and body["message"]:
        said = body["message"] + (f" [{body['code']}]" if body.get("code") not in (None, "", exc.status_code) else "")
    elif isinstance(body, str) and body:
        said = body
    elif body is not None:
        said = _canonical(body)
    else:
        said = str(exc.message)
    return " ".join(said.split())[:2000]


def _is_overflow(exc: openai.APIStatusError) -> bool:
    text = _server_message(exc).lower()
    return any(marker in text for marker in CONTEXT_OVERFLOW_MARKERS)


def _rejects_format(exc: openai.APIStatusError, *, settled: bool) -> bool:
    """Does this failure reject the structured mode (so another mode may work)?

    While negotiating, any 400/415/422 does (servers word it in many ways), and a 5xx that names
    `response_format`; for a mode already in use only an error naming `response_format` does, so a
    bad request of another kind is reported, not negotiated away. A prompt too long never does.
    """
    if _is_overflow(exc):
        return False
    names = _names_response_format(_server_message(exc))
    if exc.status_code >= 500 or settled:
        return names
    return exc.status_code in (400, 415, 422) or names


def _refused(exc: BaseException) -> bool:
    """A connection refused (nothing listens there), which the aiohttp transport reports as a
    connect *timeout*: told apart so that "server down" is not worded as "server slow"."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, ConnectionError):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def call_error(exc: openai.APIError, *, endpoint: str = "", model: str = "", mode_set: bool = False) -> LLMCallError:
    """The failure as one clear message a user can act on, with a stable reason code."""
    import openai

    where = endpoint or "the endpoint"
    if isinstance(exc, openai.APITimeoutError) and not _refused(exc):
        return LLMCallError(f"request to {where} timed out after retries ({ENV_TIMEOUT} sets the seconds per try)",
                            reason="timeout")
    if isinstance(exc, openai.APIConnectionError):  # APITimeoutError is one too
        return LLMCallError(
            f"cannot reach {where}: {exc} — is the server running and {ENV_BASE_URL} right? "
            "(`python -m gcpc_core llm check` probes it)",
            reason="connection",
        )
    if not isinstance(exc, openai.APIStatusError):
        return LLMCallError(str(exc), reason="api_error")
    status, said = exc.status_code, _server_message(exc)
    if _is_overflow(exc):
        return LLMCallError(f"the prompt does not fit the model's context window (HTTP {status}: {said})",
                            reason="context_overflow", status=status)
    if status in (401, 403):
        return LLMCallError(f"{where} refused the API key (HTTP {status}: {said}); check {ENV_API_KEY}",
                            reason="auth", status=status)
    if status == 404:
        if "model" in said.lower():
            return LLMCallError(f"{where} does not serve model {model!r} (HTTP 404: {said}); check --model or "
                                f"{ENV_MODEL} (`python -m gcpc_core llm check` lists the served models)",
                                reason="model_not_found", status=status)
        return LLMCallError(f"{where} has no chat-completions route (HTTP 404: {said}); {ENV_BASE_URL} usually "
                            "ends in /v1", reason="not_found", status=status)
    hint = ""
    if mode_set and (status in (400, 415, 422) or _names_response_format(said)):
        hint = (f" (if the server does not support this response_format, unset {ENV_STRUCTURED_MODE} to "
                "negotiate a mode, or set it to json_schema or json_object)")
    return LLMCallError(f"HTTP {status}: {said}{hint}", reason=f"http_{status}", status=status)
