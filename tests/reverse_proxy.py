"""A small reverse proxy for tests: a real process in front of a Streamlit server that forwards HTTP and
WebSocket traffic and appends the client's address to `X-Forwarded-For` on both, as nginx's
`proxy_add_x_forwarded_for` does. No test depends on a browser sending extra headers (Chromium does not
send Playwright's `extra_http_headers` on the WebSocket upgrade).

`--client ADDRESS` names the address the proxy reports for its client (a test cannot connect from
203.0.113.7); `--client random` reports a fresh address on every request, as a client forging the header
anew on every guess would. The browser's `Host`, `Origin` and cookies are passed on unchanged.

Run: `python tests/reverse_proxy.py --listen PORT --upstream http://127.0.0.1:8501 --client 203.0.113.7`;
tests start it with `running_proxy(...)`.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import aiohttp
from aiohttp import web

HOP_BY_HOP = {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer",
              "transfer-encoding", "upgrade", "content-length", "host"}
WEBSOCKET_HEADERS = {"sec-websocket-key", "sec-websocket-version", "sec-websocket-extensions",
                     "sec-websocket-protocol"}
"""Negotiated anew by the proxy's own WebSocket client (the subprotocols are passed on)."""


def client_address(setting: str) -> str:
    """The address this proxy reports for its client: `setting`, or a fresh one per request for `random`."""
    if setting == "random":
        return f"198.18.{random.randrange(256)}.{random.randrange(1, 255)}"
    return setting


def upstream_headers(request: web.Request, setting: str) -> dict[str, str]:
    """The request's end-to-end headers with this hop appended to `X-Forwarded-For`; the browser's Host kept."""
    headers = {k: v for k, v in request.headers.items()
               if k.lower() not in HOP_BY_HOP | WEBSOCKET_HEADERS | {"x-forwarded-for"}}
    headers["X-Forwarded-For"] = ", ".join(filter(None, [request.headers.get("X-Forwarded-For"),
                                                         client_address(setting)]))
    return headers


async def relay(source: web.WebSocketResponse | aiohttp.ClientWebSocketResponse,
                target: web.WebSocketResponse | aiohttp.ClientWebSocketResponse) -> None:
    """Pass every message from `source` to `target`; close `target` when `source` closes."""
    async for message in source:
        if message.type == aiohttp.WSMsgType.BINARY:
            await target.send_bytes(message.data)
        elif message.type == aiohttp.WSMsgType.TEXT:
            await target.send_str(message.data)
        else:
            break
    await target.close()


def make_app(upstream: str, setting: str) -> web.Application:
    """The proxy: every path of `upstream`, HTTP and WebSocket."""
    async def open_session(app: web.Application):  # noqa: ANN202 - aiohttp's cleanup context
        app["session"] = aiohttp.ClientSession(auto_decompress=False)
        yield
        await app["session"].close()

    async def handle(request: web.Request) -> web.StreamResponse:
        session: aiohttp.ClientSession = request.app["session"]
        url = upstream.rstrip("/") + request.path_qs
        headers = upstream_headers(request, setting)
        headers["Host"] = request.host  # as nginx's `proxy_set_header Host $host`
        if request.headers.get("Upgrade", "").lower() == "websocket":
            protocols = [p.strip() for p in request.headers.get("Sec-WebSocket-Protocol", "").split(",") if p.strip()]
            try:
                upstream_ws = await session.ws_connect(url.replace("http", "ws", 1), headers=headers,
                                                       protocols=protocols)
            except aiohttp.WSServerHandshakeError as exc:  # the server refused: so does the proxy
                return web.Response(status=exc.status, text=f"upstream refused the WebSocket: {exc.message}")
            browser_ws = web.WebSocketResponse(protocols=[upstream_ws.protocol] if upstream_ws.protocol else ())
            await browser_ws.prepare(request)
            await asyncio.gather(relay(browser_ws, upstream_ws), relay(upstream_ws, browser_ws))
            return browser_ws
        async with session.request(request.method, url, headers=headers, data=await request.read(),
                                   allow_redirects=False) as response:
            body = await response.read()
            kept = {k: v for k, v in response.headers.items() if k.lower() not in HOP_BY_HOP}
            return web.Response(status=response.status, headers=kept, body=body)

    app = web.Application()
    app.cleanup_ctx.append(open_session)
    app.router.add_route("*", "/{tail:.*}", handle)
    return app


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--listen", type=int, required=True, help="port on 127.0.0.1")
    parser.add_argument("--upstream", required=True, help="the server's base URL, e.g. http://127.0.0.1:8501")
    parser.add_argument("--client", required=True, help="the client address to report, or `random`")
    args = parser.parse_args()
    web.run_app(make_app(args.upstream, args.client), host="127.0.0.1", port=args.listen, print=None)


# ---------------------------------------------------------------- starting it from a test


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _die_with_parent() -> None:
    """In the proxy's process: be sent SIGTERM when the test process dies (Linux)."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


@contextmanager
def running_proxy(upstream: str, client: str, log: Path, timeout_s: float = 30.0) -> Iterator[str]:
    """Start the proxy in front of `upstream` (a process of its own); yield its base URL; always stop it."""
    port = _free_port()
    with open(log, "ab") as out:
        proc = subprocess.Popen([sys.executable, __file__, "--listen", str(port), "--upstream", upstream,
                                 "--client", client], stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, preexec_fn=_die_with_parent)
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"reverse proxy exited with {proc.returncode}; log {log}:\n{log.read_text()}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"reverse proxy did not listen on {port} within {timeout_s:.0f} s") from None
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


if __name__ == "__main__":
    main()
