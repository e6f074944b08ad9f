"""Structured-mode negotiation: which way of asking for JSON an endpoint and model accept.

`structured_mode` picks how the schema is sent (`request.chat_request_body`): `parse` (strict JSON
schema — OpenAI), `json_schema` (a plain JSON-schema `response_format` — vLLM, llama.cpp's
`llama-server`, recent Ollama) or `json_object` (JSON mode with the schema in the `schema` extension
field and in a system message — anything else). A named mode is used as is. `auto` starts from the
mode stored for the endpoint and model by an earlier run, else tries the modes strongest first and
falls back on a rejection of the response format (a 4xx, or a 5xx whose body names
`response_format`); the mode that is accepted is stored in the project DB so later runs start with it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..store import LLMModeRow
from .config import ENV_STRUCTURED_MODE, STRUCTURED_MODES, LLMConfig, StructuredMode
from .errors import LLMCallError, is_overflow, names_response_format, server_message, server_words

if TYPE_CHECKING:
    import openai

    from ..store import Store

__all__ = ["UNSETTLED_MODE", "Negotiation", "rejects_format"]

UNSETTLED_MODE = "auto"
"""The mode stored for an endpoint and model when negotiation rejected modes but no request was
accepted yet (the request after the rejections failed otherwise): the rejections are kept and
shown, and the next layer negotiates again."""


@dataclass
class Negotiation:
    """The structured mode of one `LLM`'s requests, and what the endpoint rejected on the way to it."""

    config: LLMConfig
    model: str
    store: Store | None = None
    """Where the accepted mode (and the rejections) are stored; None: kept in memory only."""
    mode: StructuredMode | None = None
    """The mode requests are sent in; None while `auto` has not found one yet."""
    stored: str | None = None
    """The mode last read from or written to the store, so an unchanged mode is not written again."""
    rejected: dict[str, str] = field(default_factory=dict)
    """Modes the endpoint rejected during negotiation → the server's message, quoted on one line
    (`errors.quote_server`: no traceback, no file paths, at most `SERVER_QUOTE_CHARS`)."""

    @classmethod
    def start(cls, config: LLMConfig, model: str, store: Store | None, stored: str | None) -> Negotiation:
        """The negotiation for a new layer: the set mode, else the `stored` one (from an earlier run),
        else none yet."""
        if config.structured_mode != "auto":
            return cls(config, model, store, mode=config.structured_mode)
        if stored in STRUCTURED_MODES:
            return cls(config, model, store, mode=stored, stored=stored)  # type: ignore[arg-type]
        return cls(config, model, store)

    def next_mode(self) -> StructuredMode:
        """The mode to send the next request in; raises LLMCallError when every mode was rejected."""
        if self.mode is not None:
            return self.mode
        for mode in STRUCTURED_MODES:
            if mode not in self.rejected:
                return mode  # type: ignore[return-value]
        tried = "; ".join(f"{mode}: {message}" for mode, message in self.rejected.items())
        raise LLMCallError(
            f"{self.config.endpoint} rejected every structured-output mode for model {self.model} (tried "
            f"{', '.join(self.rejected)}) — {tried}. Use a server or model that supports JSON output, or set "
            f"{ENV_STRUCTURED_MODE} to a mode it documents",
            reason="structured_output_unsupported",
        )

    def fall_back(self, mode: StructuredMode, exc: openai.APIStatusError) -> bool:
        """Whether a failed request should be sent again in the next mode (negotiating only)."""
        if self.config.structured_mode != "auto" or not rejects_format(exc, settled=mode == self.mode):
            return False
        self.rejected[mode] = f"HTTP {exc.status_code}: {server_message(exc)}"
        if self.mode == mode:
            self.mode = None  # a stored mode the server no longer takes: negotiate again
        return True

    def settle(self, mode: StructuredMode) -> None:
        """A request in `mode` was accepted: use it from now on and store it for this endpoint and model."""
        self.mode = mode
        if self.config.structured_mode == "auto" and self.stored != mode:
            self.stored = mode
            if self.store is not None:
                self.store.runs.set_llm_mode(LLMModeRow(endpoint=self.config.endpoint, model=self.model, mode=mode,
                                                        rejected=self.rejected))

    def keep_rejections(self) -> None:
        """A request failed after negotiation rejected modes, none accepted: store the rejections
        (under `UNSETTLED_MODE`), so `llm check` and `llm_status` show what the endpoint refused."""
        if self.store is None or self.mode is not None or not self.rejected:
            return
        self.stored = None
        self.store.runs.set_llm_mode(LLMModeRow(endpoint=self.config.endpoint, model=self.model, mode=UNSETTLED_MODE,
                                                rejected=self.rejected))


def rejects_format(exc: openai.APIStatusError, *, settled: bool) -> bool:
    """Does this failure reject the structured mode (so another mode may work)?

    While negotiating, any 400/415/422 does (servers word it in many ways), and a 5xx that names
    `response_format`; for a mode already in use only an error naming `response_format` does, so a
    bad request of another kind is reported, not negotiated away. A prompt too long never does.
    """
    if is_overflow(exc):
        return False
    names = names_response_format(server_words(exc))
    if exc.status_code >= 500 or settled:
        return names
    return exc.status_code in (400, 415, 422) or names
