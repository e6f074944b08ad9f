"""Small helpers for the LLM tests."""

from __future__ import annotations

import socket


def closed_port_url() -> str:
    """A base URL on 127.0.0.1 where nothing listens (a server that is down)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"
