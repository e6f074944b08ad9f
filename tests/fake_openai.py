"""A fake OpenAI-compatible HTTP server for tests: real sockets, scripted replies, faults.

Tests never reach a real API. This server listens on 127.0.0.1 (a free port) in a
background thread and speaks enough of the OpenAI HTTP API for the real `openai`
client: `POST /v1/chat/completions`, plus `POST /v1/files`, `GET /v1/files/{id}/content`,
`POST /v1/batches` and `GET /v1/batches/{id}` for Batch-API mode. More endpoints:
`server.route("GET", "/v1/models", handler)`.

Replies are scripted by request content:

    server.on("citation-check", Reply.json(checklist))          # substring of the messages
    server.on(lambda req: req["model"] == "m2", Reply.text("…")) # any predicate on the body
    server.on("flaky", fault_429(), Reply.json(ok))              # 429 first, then ok forever
    server.on("dynamic", lambda req: Reply.json(build(req)))     # computed per request

A rule's replies are used in order and the last one repeats. The first matching
rule wins; `server.default` answers requests no rule matches (unset: HTTP 400, so an
unscripted request fails loudly and is not retried). Every request is recorded
(`requests`, `request_count`) and the server tracks `max_in_flight`.

Servers differ in which structured-output `response_format` they take; to play one,
`server.accept_formats({"json_object", "text"})` rejects every other type before any rule
is consulted (default rejection: llama-cpp-python's HTTP 500 naming `response_format`;
`LLAMA_CPP_PYTHON_REJECTION`, or pass `rejection=Reply.error(400, …)` for a vLLM-like 4xx).
`server.serve_models([...])` answers `GET /v1/models` and `server.serve_tokenizer()` answers
llama-cpp-python's `POST /extras/tokenize/count` (4 characters per token).
"""

from __future__ import annotations

import email.parser
import email.policy
import itertools
import json
import math
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = [
    "FAKE_MODEL",
    "LLAMA_CPP_PYTHON_REJECTION",
    "FakeOpenAI",
    "Reply",
    "fault_429",
    "fault_500",
    "fault_malformed",
    "fault_refusal",
    "fault_timeout",
    "format_type",
    "iter_jsonl",
    "overflow_error",
    "request_text",
]

FAKE_MODEL = "fake-model"
"""Model name tests send; the server answers for any name."""

RequestBody = dict[str, Any]
Handler = Callable[["FakeOpenAI", str, dict[str, str], bytes], "Reply"]


class _Server(ThreadingHTTPServer):
    request_queue_size = 128
    """Listen backlog. socketserver's default of 5 drops the SYNs of a client opening dozens of connections
    at once (a judge run at concurrency 32 does), and each dropped one stalls its request for the kernel's
    1 s SYN retransmit: p99 latency was 1.3 s at a configured 0.1 s."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Quiet when a client vanished mid-request (the kill -9 drills do that on purpose)."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


@dataclass
class Reply:
    """One scripted HTTP answer to a chat-completion request."""

    content: str | None = None
    """The assistant message text (usually JSON for structured calls)."""
    refusal: str | None = None
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes | None = None
    """Raw HTTP body: overrides everything above (errors, broken bodies)."""
    delay: float = 0.0
    """Seconds to wait before answering, on top of the server's latency (timeouts)."""
    finish_reason: str = "stop"
    usage: dict[str, Any] | None = None
    """`usage` object; default: ~4 characters per token of the request and reply."""

    @classmethod
    def json(cls, value: Any, **kwargs: Any) -> Reply:
        """A reply whose message content is `value` as JSON (pydantic models are dumped)."""
        if hasattr(value, "model_dump_json"):
            return cls(content=value.model_dump_json(), **kwargs)
        return cls(content=json.dumps(value), **kwargs)

    @classmethod
    def text(cls, content: str, **kwargs: Any) -> Reply:
        return cls(content=content, **kwargs)

    @classmethod
    def error(cls, status: int, message: str, *, headers: dict[str, str] | None = None, delay: float = 0.0) -> Reply:
        body = json.dumps({"error": {"message": message, "type": "fake_error", "code": status}}).encode()
        return cls(status=status, headers=headers or {}, body=body, delay=delay)


def fault_429(retry_after: float = 0.01) -> Reply:
    """Rate limited, with a (short) Retry-After the client honours."""
    return Reply.error(429, "rate limited (fake)", headers={"retry-after": f"{retry_after:g}"})


def fault_500(retry_after: float = 0.01) -> Reply:
    """Server error; `retry-after-ms` keeps the client's backoff short in tests."""
    return Reply.error(500, "internal error (fake)", headers={"retry-after-ms": f"{retry_after * 1000:g}"})


def fault_timeout(seconds: float, then: Reply | None = None) -> Reply:
    """Answer only after `seconds` (set it past the client's timeout); the answer, if it
    still arrives, is `then` (default: an error the client never sees)."""
    reply = then or Reply.error(504, "too late (fake)")
    return Reply(**{**reply.__dict__, "delay": seconds})


def fault_malformed(text: str = '{"items": [ this is not json') -> Reply:
    """A 200 whose message content is not valid JSON."""
    return Reply(content=text)


def fault_refusal(text: str = "I can't help with that.") -> Reply:
    return Reply(refusal=text)


LLAMA_CPP_PYTHON_REJECTION = "response_format.type: Input should be 'text' or 'json_object'"
"""What llama-cpp-python's server says (with HTTP 500) to a `json_schema` response format."""


def overflow_error(window: int = 2048, requested: int = 9000) -> Reply:
    """llama-cpp-python's answer to a prompt longer than its context window (HTTP 400)."""
    body = {"error": {"message": f"This model's maximum context length is {window} tokens. However, you requested "
                                 f"{requested} tokens ({requested} in the messages, 0 in the completion). Please reduce "
                                 "the length of the messages or completion.", "type": "invalid_request_error",
                      "param": "messages", "code": "context_length_exceeded"}}
    return Reply(status=400, body=json.dumps(body).encode())


def format_type(request: RequestBody) -> str:
    """The `response_format.type` of a chat request (`text` when absent)."""
    return str((request.get("response_format") or {}).get("type") or "text")


def request_text(request: RequestBody) -> str:
    """All message text of a chat request, joined: what substring rules search."""
    parts = []
    for message in request.get("messages") or []:
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):  # content parts
            parts.extend(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return "\n".join(parts)


@dataclass
class _Rule:
    match: Callable[[RequestBody], bool]
    replies: list[Any]
    used: int = 0

    def next(self, request: RequestBody) -> Reply:
        source = self.replies[min(self.used, len(self.replies) - 1)]
        self.used += 1
        return source(request) if callable(source) else source


class FakeOpenAI:
    """The server. Use as a context manager, or `start()` / `stop()`."""

    def __init__(self, *, latency: float = 0.0):
        self.latency = latency
        """Seconds every request waits before it is answered (simulated model time)."""
        self.default: Reply | Callable[[RequestBody], Reply] | None = None
        self.requests: list[RequestBody] = []
        """Bodies of chat-completion requests, in arrival order."""
        self.paths: list[str] = []
        """`METHOD path` of every HTTP request, in arrival order."""
        self.in_flight = 0
        self.max_in_flight = 0
        self.accepted_formats: set[str] | None = None
        """`response_format` types this server takes (None: all); others get `format_rejection`."""
        self.format_rejection: Reply = Reply.error(500, LLAMA_CPP_PYTHON_REJECTION)
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self._rules: list[_Rule] = []
        self._routes: list[tuple[str, str, Handler]] = [
            ("POST", "/v1/chat/completions", FakeOpenAI._chat_route),
            ("POST", "/v1/files", FakeOpenAI._files_create),
            ("GET", "/v1/files/", FakeOpenAI._files_get),
            ("POST", "/v1/batches", FakeOpenAI._batches_create),
            ("GET", "/v1/batches/", FakeOpenAI._batches_get),
        ]
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._ids = itertools.count(1)
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ---- lifecycle ----

    @property
    def url(self) -> str:
        """Base URL for the client (`OPENAI_BASE_URL`)."""
        assert self._server is not None, "server not started"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> FakeOpenAI:
        server = _Server(("127.0.0.1", 0), _make_handler(self))
        server.daemon_threads = True
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving; requests still sleeping wake up at once and their answers are dropped."""
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = self._thread = None

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---- scripting ----

    def on(self, match: str | Callable[[RequestBody], bool], *replies: Reply | Callable[[RequestBody], Reply]) -> FakeOpenAI:
        """Answer requests matching `match` (substring of the messages, or predicate) with
        `replies` in order, the last repeating."""
        if not replies:
            raise ValueError("give at least one reply")
        predicate = (lambda req, s=match: s in request_text(req)) if isinstance(match, str) else match
        with self._lock:
            self._rules.append(_Rule(predicate, list(replies)))
        return self

    def accept_formats(self, formats: set[str], *, rejection: Reply | None = None) -> FakeOpenAI:
        """Play a server that takes only these `response_format` types (see the module docstring)."""
        self.accepted_formats = set(formats)
        if rejection is not None:
            self.format_rejection = rejection
        return self

    def serve_models(self, models: list[str], **extra: Any) -> FakeOpenAI:
        """Answer `GET /v1/models` with these ids; `extra` fields go on each entry (e.g. `max_model_len`)."""
        data = [{"id": m, "object": "model", "owned_by": "fake", **extra} for m in models]
        self.route("GET", "/v1/models", lambda server, path, headers, raw: _json_reply({"object": "list", "data": data}))
        return self

    def serve_tokenizer(self, chars_per_token: int = 4) -> FakeOpenAI:
        """Answer llama-cpp-python's `POST /extras/tokenize/count` (a token per `chars_per_token` characters)."""

        def count(server: FakeOpenAI, path: str, headers: dict[str, str], raw: bytes) -> Reply:
            text = json.loads(raw or b"{}").get("input", "")
            return _json_reply({"count": math.ceil(len(text) / chars_per_token)})

        self.route("POST", "/extras/tokenize/count", count)
        return self

    def route(self, method: str, path_prefix: str, handler: Handler) -> None:
        """Serve another endpoint: `handler(server, path, headers, body) -> Reply`, the Reply's `body`
        sent as is (the query string is dropped from `path`; a prefix ending in `/` matches
        everything under it). Routes added later win over built-in ones."""
        self._routes.insert(0, (method, path_prefix, handler))

    def reset(self) -> None:
        """Forget rules and recorded requests (between phases of one test)."""
        with self._lock:
            self._rules.clear()
            self.requests.clear()
            self.paths.clear()
            self.max_in_flight = 0

    @property
    def request_count(self) -> int:
        """Chat-completion requests received (retries included)."""
        return len(self.requests)

    def requests_matching(self, substring: str) -> list[RequestBody]:
        return [r for r in self.requests if substring in request_text(r)]

    # ---- chat completions ----

    def _choose(self, request: RequestBody) -> Reply:
        with self._lock:
            for rule in self._rules:
                if rule.match(request):
                    return rule.next(request)
        if self.default is not None:
            return self.default(request) if callable(self.default) else self.default
        return Reply.error(400, "fake_openai: no scripted reply matches this request")

    def chat_reply(self, request: RequestBody) -> tuple[Reply, bytes]:
        """The scripted Reply for a request and its HTTP body (used by batches too)."""
        reply = self._choose(request)
        if reply.body is not None:
            return reply, reply.body
        prompt_chars = len(json.dumps(request.get("messages", [])))
        completion_chars = len(reply.content or reply.refusal or "")
        usage = reply.usage or {
            "prompt_tokens": math.ceil(prompt_chars / 4),
            "completion_tokens": math.ceil(completion_chars / 4),
            "total_tokens": math.ceil(prompt_chars / 4) + math.ceil(completion_chars / 4),
            "prompt_tokens_details": {"cached_tokens": 0},
        }
        body = {
            "id": f"chatcmpl-fake-{next(self._ids)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request.get("model", "fake"),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": reply.content, "refusal": reply.refusal},
                    "finish_reason": reply.finish_reason,
                    "logprobs": None,
                }
            ],
            "usage": usage,
        }
        return reply, json.dumps(body).encode()

    def _chat_route(self, path: str, headers: dict[str, str], raw: bytes) -> Reply:
        request = json.loads(raw or b"{}")
        with self._lock:
            self.requests.append(request)
        if self.accepted_formats is not None and format_type(request) not in self.accepted_formats:
            return self.format_rejection
        reply, body = self.chat_reply(request)
        return Reply(status=reply.status, headers=reply.headers, body=body, delay=reply.delay)

    # ---- files and batches (Batch API mode) ----

    def _files_create(self, path: str, headers: dict[str, str], raw: bytes) -> Reply:
        message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
            b"Content-Type: " + headers.get("content-type", "").encode() + b"\r\n\r\n" + raw
        )
        content, purpose, filename = b"", "batch", "upload.jsonl"
        for part in message.iter_parts():
            name = part.get_param("name", header="content-disposition")
            if name == "file":
                content = part.get_payload(decode=True) or b""
                filename = part.get_filename() or filename
            elif name == "purpose":
                purpose = (part.get_payload(decode=True) or b"").decode()
        file_id = f"file-fake-{next(self._ids)}"
        self.files[file_id] = content
        return _json_reply(_file_object(file_id, filename, purpose, len(content)))

    def _files_get(self, path: str, headers: dict[str, str], raw: bytes) -> Reply:
        file_id, _, tail = path.removeprefix("/v1/files/").partition("/")
        if file_id not in self.files:
            return Reply.error(404, f"no file {file_id}")
        if tail == "content":
            return Reply(body=self.files[file_id], headers={"content-type": "application/octet-stream"})
        return _json_reply(_file_object(file_id, "upload.jsonl", "batch", len(self.files[file_id])))

    def _batches_create(self, path: str, headers: dict[str, str], raw: bytes) -> Reply:
        """Run the whole batch at once through the chat script; it is `completed` immediately."""
        params = json.loads(raw or b"{}")
        input_id = params.get("input_file_id", "")
        if input_id not in self.files:
            return Reply.error(400, f"no input file {input_id}")
        lines_out = []
        for line in self.files[input_id].decode().splitlines():
            if not line.strip():
                continue
            item = json.loads(line)
            with self._lock:
                self.requests.append(item["body"])
            reply, body = self.chat_reply(item["body"])
            response = {"status_code": reply.status, "request_id": f"req-{next(self._ids)}", "body": json.loads(body)}
            lines_out.append({"id": f"batch-req-{next(self._ids)}", "custom_id": item["custom_id"], "response": response, "error": None})
        output_id = f"file-fake-{next(self._ids)}"
        self.files[output_id] = "".join(json.dumps(x) + "\n" for x in lines_out).encode()
        batch_id = f"batch-fake-{next(self._ids)}"
        now = int(time.time())
        self.batches[batch_id] = {
            "id": batch_id,
            "object": "batch",
            "endpoint": params.get("endpoint", "/v1/chat/completions"),
            "input_file_id": input_id,
            "completion_window": params.get("completion_window", "24h"),
            "status": "completed",
            "output_file_id": output_id,
            "error_file_id": None,
            "created_at": now,
            "completed_at": now,
            "request_counts": {"total": len(lines_out), "completed": len(lines_out), "failed": 0},
            "metadata": params.get("metadata"),
        }
        return _json_reply(self.batches[batch_id])

    def _batches_get(self, path: str, headers: dict[str, str], raw: bytes) -> Reply:
        batch_id = path.removeprefix("/v1/batches/")
        if batch_id not in self.batches:
            return Reply.error(404, f"no batch {batch_id}")
        return _json_reply(self.batches[batch_id])

    # ---- HTTP plumbing ----

    def _handle(self, method: str, path: str, headers: dict[str, str], raw: bytes) -> Reply:
        with self._lock:
            self.paths.append(f"{method} {path}")
        for route_method, prefix, handler in self._routes:
            if method == route_method and (path == prefix or (prefix.endswith("/") and path.startswith(prefix))):
                return handler(self, path, headers, raw)
        return Reply.error(404, f"fake_openai: no route for {method} {path}")

    def _enter(self) -> None:
        with self._lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def _leave(self) -> None:
        with self._lock:
            self.in_flight -= 1


def _json_reply(value: Any) -> Reply:
    return Reply(body=json.dumps(value).encode())


def _file_object(file_id: str, filename: str, purpose: str, size: int) -> dict[str, Any]:
    return {
        "id": file_id,
        "object": "file",
        "bytes": size,
        "created_at": int(time.time()),
        "filename": filename,
        "purpose": purpose,
        "status": "processed",
    }


def _make_handler(server: FakeOpenAI) -> type[BaseHTTPRequestHandler]:
    class _Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # headers and body go out as separate writes: no 40 ms delayed-ACK stall
        timeout = 10  # an idle keep-alive connection frees its thread after this many seconds

        def _serve(self, method: str) -> None:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            headers = {k.lower(): v for k, v in self.headers.items()}
            path = self.path.split("?", 1)[0]
            server._enter()
            try:
                try:
                    reply = server._handle(method, path, headers, raw)
                except Exception as exc:  # a broken script must show up as a failing request
                    reply = Reply.error(400, f"fake_openai: script error: {exc!r}")
                if server._stopping.wait(server.latency + reply.delay):
                    self.close_connection = True
                    return  # shutting down: drop the answer
                body = reply.body or b""
                self.send_response(reply.status)
                self.send_header("content-type", reply.headers.get("content-type", "application/json"))
                for name, value in reply.headers.items():
                    if name.lower() != "content-type":
                        self.send_header(name, value)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (its timeout): nothing to answer
            finally:
                server._leave()

        def do_POST(self) -> None:  # noqa: N802 (http.server naming)
            self._serve("POST")

        def do_GET(self) -> None:  # noqa: N802
            self._serve("GET")

        def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
            pass

    return _Handler


def iter_jsonl(data: bytes) -> Iterator[dict[str, Any]]:
    """Rows of a JSONL file (batch outputs)."""
    for line in data.decode().splitlines():
        if line.strip():
            yield json.loads(line)
