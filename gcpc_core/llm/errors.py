"""What can go wrong with a call, as errors with a stable `reason` code: the HTTP call failed
(`LLMCallError`, worded by `call_error` so a user can act on it), or the model answered with
something unusable (`LLMReplyError`, carrying the raw text for one repair round).

The reasons that judges and checklist synthesis both act on are named here too: a prompt that does
not fit the context window and a request that ran out of time are deterministic, so no repair can
cure them (`UNREPAIRABLE_CALL_ERRORS`), and a reply cut at its token bound is repaired with more room.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from .config import ENV_API_KEY, ENV_BASE_URL, ENV_MODEL, ENV_STRUCTURED_MODE, ENV_TIMEOUT
from .pricing import Usage
from .request import canonical_json

if TYPE_CHECKING:
    import openai

__all__ = [
    "CONTEXT_OVERFLOW_MARKERS",
    "REASON_CONTEXT_OVERFLOW",
    "REASON_TIMEOUT",
    "REASON_TRUNCATED",
    "SERVER_QUOTE_CHARS",
    "UNREPAIRABLE_CALL_ERRORS",
    "LLMCallError",
    "LLMError",
    "LLMNotConfigured",
    "LLMRefusal",
    "LLMReplyError",
    "call_error",
    "is_overflow",
    "names_response_format",
    "quote_server",
    "server_message",
    "server_words",
]

REASON_CONTEXT_OVERFLOW = "context_overflow"
"""The prompt does not fit the model's context window (counted before sending, or the server said so)."""
REASON_TIMEOUT = "timeout"
"""The request ran out of its time bound after the client's own retries."""
REASON_TRUNCATED = "truncated"
"""The reply was cut at its token bound."""
UNREPAIRABLE_CALL_ERRORS = frozenset({REASON_CONTEXT_OVERFLOW, REASON_TIMEOUT})
"""Endpoint failures stored as the items' Abstain reason (or the task's failure) instead of failing
the whole run: the same request, or a longer repair, would fail the same way."""

CONTEXT_OVERFLOW_MARKERS = (
    "context_length_exceeded",
    "maximum context length",
    "exceed context window",
    "exceeds the available context size",
    "exceed_context_size",
)
"""How OpenAI, vLLM, llama-cpp-python and llama.cpp's server say a prompt does not fit."""

SERVER_QUOTE_CHARS = 300
"""A server's words quoted in a message, a stored rejection or a line of `llm check` are at most this
many characters, on one line (`quote_server`): enough to name the field or the exception."""

_TRACEBACK = "Traceback (most recent call last):"
_PATH_PART = r"[^\s\\/\"'`<>|:*?,;()\[\]{}]+"
_PATH = re.compile(
    r"(?<![\w.:/\\~-])"  # not inside a URL, a word or another path
    rf"(?:(?:[A-Za-z]:[\\/]|\\\\)(?:{_PATH_PART}[\\/])*({_PATH_PART})"  # C:\dir\name, C:/dir/name, \\host\share
    rf"|/(?!v\d+/)(?:{_PATH_PART}/)+({_PATH_PART}))"  # /dir/name: two parts at least; an API route /v1/… is kept
)
_QUOTED_PATH = re.compile(r"""(?<=["'])(?:[A-Za-z]:[\\/]|\\\\|/)[^"'\n]*[\\/]([^"'\n\\/]+)(?=["'])""")
"""A file-system path in a server's words, POSIX or Windows (quoted, it may hold spaces:
`"C:\\Program Files\\…"`); the group is its last part."""


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


def names_response_format(text: str) -> bool:
    """Whether a server's words name the `response_format` parameter (a rejection of a structured mode)."""
    return "response_format" in text


def server_words(exc: openai.APIStatusError) -> str:
    """The server's own words, whole: its error message (and code), else its whole body. Read to tell
    what the server means (`is_overflow`, `names_response_format`); quoted through `server_message`."""
    body = exc.body
    if isinstance(body, dict) and isinstance(body.get("message"), str) and body["message"]:
        return body["message"] + (f" [{body['code']}]" if body.get("code") not in (None, "", exc.status_code) else "")
    if isinstance(body, str) and body:
        return body
    if body is not None:
        return canonical_json(body)
    return str(exc.message)


def _final_exception(text: str) -> str:
    """A Python traceback in `text` reduced to its final exception (the text before it is kept): a
    server's 500 may carry its whole stack, file paths and source lines of the server's code."""
    head, found, _ = text.partition(_TRACEBACK)
    if not found:
        return text
    lines = text.rsplit(_TRACEBACK, 1)[1].splitlines()
    start = next((n for n, line in enumerate(lines) if line.strip() and not line[:1].isspace()), None)
    last = " ".join(lines[start:]) if start is not None else next((x for x in reversed(lines) if x.strip()), "")
    return f"{head} {last}"


def quote_server(text: str, limit: int = SERVER_QUOTE_CHARS) -> str:
    """A server's words as one line to quote: a Python traceback reduced to its final exception,
    file-system paths shortened to `…/name`, whitespace collapsed, at most `limit` characters (cut
    with `…`). The one shortener of server text: every message and stored rejection quotes through it."""
    said = _QUOTED_PATH.sub(lambda m: "…/" + m.group(1), _final_exception(text))
    said = _PATH.sub(lambda m: "…/" + (m.group(1) or m.group(2)), said)
    said = " ".join(said.split())
    return said if len(said) <= limit else said[: limit - 1].rstrip() + "…"


def server_message(exc: openai.APIStatusError) -> str:
    """The server's own words, quoted (`quote_server`): one line, no paths, at most `SERVER_QUOTE_CHARS`."""
    return quote_server(server_words(exc))


def is_overflow(exc: openai.APIStatusError) -> bool:
    """Whether the server refused the request because the prompt does not fit its context window."""
    text = server_words(exc).lower()
    return any(marker in text for marker in CONTEXT_OVERFLOW_MARKERS)


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
                            reason=REASON_TIMEOUT)
    if isinstance(exc, openai.APIConnectionError):  # APITimeoutError is one too
        return LLMCallError(
            f"cannot reach {where}: {exc} — is the server running and {ENV_BASE_URL} right? "
            "(`python -m gcpc_core llm check` probes it)",
            reason="connection",
        )
    if not isinstance(exc, openai.APIStatusError):
        return LLMCallError(str(exc), reason="api_error")
    status, said = exc.status_code, server_message(exc)
    means_format = names_response_format(server_words(exc))
    if is_overflow(exc):
        return LLMCallError(f"the prompt does not fit the model's context window (HTTP {status}: {said})",
                            reason=REASON_CONTEXT_OVERFLOW, status=status)
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
    if mode_set and (status in (400, 415, 422) or means_format):
        hint = (f" (if the server does not support this response_format, unset {ENV_STRUCTURED_MODE} to "
                "negotiate a mode, or set it to json_schema or json_object)")
    return LLMCallError(f"HTTP {status}: {said}{hint}", reason=f"http_{status}", status=status)
