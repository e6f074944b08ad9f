"""Where and how to call the model: the environment variables, `LLMConfig`, and `llm_status`, the
one-line answer to "can GCPC call an LLM now?" that the app and the CLI show before LLM work.

The structured-output mode names live here too: the config names one (or `auto`), and the request
builder, the negotiation and the stored mode rows all speak of them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from ..defaults import DEFAULT_CONCURRENCY, ENV_CONCURRENCY
from ..local_llm import LOCAL_MODEL_ALIAS, TINY_LOCAL_MODEL_NOTE

if TYPE_CHECKING:
    from ..store import Store

__all__ = [
    "ENV_API_KEY",
    "ENV_BASE_URL",
    "ENV_CONCURRENCY",
    "ENV_CONTEXT_WINDOW",
    "ENV_MAX_COMPLETION_TOKENS",
    "ENV_MAX_RETRIES",
    "ENV_MODEL",
    "ENV_PRICES",
    "ENV_STRUCTURED_MODE",
    "ENV_TIMEOUT",
    "DEFAULT_CONCURRENCY",
    "MODE_SETTINGS",
    "OPENAI_DEFAULT_BASE_URL",
    "STRUCTURED_MODES",
    "InvalidSetting",
    "LLMConfig",
    "ModeSetting",
    "StructuredMode",
    "llm_status",
    "mode_summary",
    "normalized_endpoint",
]

StructuredMode = Literal["parse", "json_schema", "json_object"]
STRUCTURED_MODES: tuple[str, ...] = StructuredMode.__args__  # type: ignore[attr-defined]
"""The structured modes, strongest first: the order `auto` tries them in."""
ModeSetting = Literal["auto", "parse", "json_schema", "json_object"]
MODE_SETTINGS: tuple[str, ...] = ModeSetting.__args__  # type: ignore[attr-defined]

ENV_MODEL = "GCPC_MODEL"
ENV_BASE_URL = "OPENAI_BASE_URL"
ENV_API_KEY = "OPENAI_API_KEY"
ENV_STRUCTURED_MODE = "GCPC_STRUCTURED_MODE"
ENV_TIMEOUT = "GCPC_LLM_TIMEOUT"
ENV_MAX_RETRIES = "GCPC_LLM_MAX_RETRIES"
ENV_PRICES = "GCPC_PRICES"
ENV_CONTEXT_WINDOW = "GCPC_CONTEXT_WINDOW"
ENV_MAX_COMPLETION_TOKENS = "GCPC_MAX_COMPLETION_TOKENS"

OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1"



class InvalidSetting(ValueError):
    """An environment variable holds a value its knob cannot take; the message names the variable."""


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
    concurrency: int = DEFAULT_CONCURRENCY
    """At most this many HTTP requests in flight from one `LLM`: an explicit value (`--concurrency`,
    the Runs page's field) wins, else `GCPC_LLM_CONCURRENCY`, else `DEFAULT_CONCURRENCY`."""
    temperature: float | None = 0.0
    """None omits the parameter (some reasoning models accept only their default)."""
    max_completion_tokens: int | None = None
    context_window: int | None = None
    """Tokens the model can attend to (prompt + reply); None: the server's figure when it reports
    one (`server.server_info`), else no budget is applied before sending."""

    @property
    def endpoint(self) -> str:
        """The base URL calls go to, normalized: the key the negotiated mode is stored under."""
        return normalized_endpoint(self.base_url)

    @classmethod
    def from_env(
        cls, model: str | None = None, *, env: Mapping[str, str] | None = None, **overrides: Any
    ) -> LLMConfig:
        """Config from `GCPC_MODEL`, `OPENAI_BASE_URL`, `OPENAI_API_KEY` and the `GCPC_LLM_*` knobs;
        an explicit `model` and `overrides` win; an override given as None (a flag left unset) leaves
        the environment's value, else the default. Raises InvalidSetting, naming the variable, for a
        value that is not a number of the right kind (or a count below 1)."""
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
            raw = env.get(var, "").strip()
            if raw:
                values[name] = _parsed(var, raw, kind)
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
            found.append(f"concurrency must be at least 1 (--concurrency or {ENV_CONCURRENCY})")
        return found


def _parsed(var: str, raw: str, kind: type) -> Any:
    """`raw` as `kind`, or InvalidSetting naming `var` and what it holds."""
    what = "a whole number" if kind is int else "a number"
    try:
        value = kind(raw)
    except ValueError:
        raise InvalidSetting(f"{var}={raw!r} is not {what}; set it to {what} or unset it") from None
    if kind is int and var == ENV_CONCURRENCY and value < 1:
        raise InvalidSetting(f"{var}={raw!r}: concurrency must be at least 1; set it higher or unset it")
    return value


def normalized_endpoint(base_url: str | None) -> str:
    """The base URL as a stable key (OpenAI's when unset, no trailing slash): negotiated modes are
    stored under it, so `…/v1` and `…/v1/` share one row."""
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
    try:
        config = LLMConfig.from_env(model, env=env)
    except InvalidSetting as exc:
        return False, f"LLM not configured: {exc}"
    problems = config.problems()
    if problems:
        return False, "LLM not configured: " + "; ".join(problems)
    where = config.base_url or "api.openai.com (default)"
    tiny = f" — {TINY_LOCAL_MODEL_NOTE}" if config.model == LOCAL_MODEL_ALIAS else ""
    return True, f"model {config.model} at {where}, {mode_summary(config, store)}{tiny}"
