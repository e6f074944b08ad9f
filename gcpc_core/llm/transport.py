"""The HTTP side of the client: the `openai` client class GCPC uses, its aiohttp transport and the
SSL context it verifies with.

`openai` (and its `httpx2`) are imported where a client is built, never at module level: loading the
SDK takes ~1.4 s (over 500 modules), which every stage that only names the LLM layer (types, errors,
`llm_status`) and every CLI verb would otherwise pay on start.
"""

from __future__ import annotations

import functools
import os
import ssl
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING

from .errors import names_response_format

if TYPE_CHECKING:
    import httpx2
    from openai import AsyncOpenAI, DefaultAioHttpClient

__all__ = ["PLACEHOLDER_API_KEY", "client_class", "http_client", "plain_http", "ssl_context"]

PLACEHOLDER_API_KEY = "not-needed"
"""Sent to a self-hosted endpoint (OPENAI_BASE_URL set) when no key is configured:
vLLM and Ollama ignore it, but the client refuses to start without one."""

_SSL_BUILDER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gcpc-ssl-context")


@functools.cache
def ssl_context() -> Future[ssl.SSLContext]:
    """The client's default SSL context (httpx2's: CA bundle, SSL_CERT_FILE honoured), built once per
    process in a background thread. Reading the CA bundle takes ~0.1 s with the GIL released, so
    starting it when an LLM is made overlaps run planning instead of delaying the first request."""
    import httpx2

    return _SSL_BUILDER.submit(httpx2.create_ssl_context)


def plain_http(base_url: str | None) -> bool:
    """Whether the endpoint is plain HTTP (a local vLLM, llama.cpp or Ollama server): no TLS is ever
    negotiated with it, so it needs no CA bundle. No base URL means OpenAI's, over HTTPS."""
    return base_url is not None and base_url.lower().startswith("http://")


def _no_ca_context() -> ssl.SSLContext:
    """A verifying SSL context that trusts no certificate authority, for plain-HTTP endpoints: building
    it reads no CA bundle, and should a server ever redirect to HTTPS, the connection fails its
    certificate check instead of going unverified."""
    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)


def http_client(base_url: str | None) -> DefaultAioHttpClient | None:
    """The aiohttp transport (`openai[aiohttp]`), which openai recommends for high concurrency;
    None falls back to the client's default httpx2 transport. GCPC_HTTP_BACKEND=httpx forces it."""
    if os.environ.get("GCPC_HTTP_BACKEND", "aiohttp") != "aiohttp":
        return None
    try:
        import aiohttp  # noqa: F401  (only probing that the extra is installed)
    except ImportError:
        return None
    from openai import DefaultAioHttpClient

    return DefaultAioHttpClient(verify=_no_ca_context() if plain_http(base_url) else ssl_context().result())


@functools.cache
def client_class() -> type[AsyncOpenAI]:
    """The client class, made on first use (so that importing this module does not load `openai`)."""
    from openai import AsyncOpenAI

    class _Client(AsyncOpenAI):
        """The `openai` client, except that a 5xx whose body names `response_format` is not retried: it
        is the server's deterministic rejection of a structured mode (llama-cpp-python answers an unknown
        `response_format.type` with HTTP 500), so retrying only delays the fallback by the backoff."""

        def _should_retry(self, response: httpx2.Response) -> bool:
            if response.status_code >= 500 and names_response_format(_response_text(response)):
                return False
            return super()._should_retry(response)

    return _Client


def _response_text(response: httpx2.Response) -> str:
    """The body of a failed response, read only to see whether it names `response_format`."""
    import httpx2

    try:
        return response.text
    except httpx2.ResponseNotRead:  # a streamed body: no rejection to see, the client decides
        return ""
