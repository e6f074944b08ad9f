"""Fixtures for judging tests: the fake OpenAI server, a demo project with frozen checklists, and
scripted judge replies computed from each request (so they cite the request's real event ids).

The demo project is built once per session (import + demo checklists + probe judgments) and
copied per test, which keeps every test fast and independent.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

TESTS_DIR = Path(__file__).resolve().parents[1]
if str(TESTS_DIR) not in sys.path:  # `fake_openai` lives in tests/, shared with the LLM-layer tests
    sys.path.insert(0, str(TESTS_DIR))

from fake_openai import FAKE_MODEL, FakeOpenAI, Reply  # noqa: E402

from gcpc_core.demo import build_demo_project  # noqa: E402
from gcpc_core.llm import LLM, LLMConfig, Price  # noqa: E402
from gcpc_core.store import Store  # noqa: E402

TEST_PRICES = {FAKE_MODEL: Price(input=1.0, cached_input=0.5, output=2.0)}

ITEM_IDS = re.compile(r"each exactly once: ([^\n]*?)\. Reply with one JSON object")
PER_ITEM_ID = re.compile(r"## The checklist item to judge\n- id: (\S+) ")
EVENT_HEAD = re.compile(r"^### (E\d+) · (?:tool_call|tool_output|file_content)[^\n]*\n([^\n]*)", re.M)


def user_text(request: dict[str, Any]) -> str:
    """The first user message of a chat request: the judge prompt proper (a repair turn follows it)."""
    return next(m["content"] for m in request["messages"] if m["role"] == "user")


def is_items_request(request: dict[str, Any]) -> bool:
    """An all-items judge request, initial or repair."""
    return bool(ITEM_IDS.search(user_text(request)))


def item_ids(request: dict[str, Any]) -> list[str]:
    """Checklist item ids an all-items request asks for (from its first user message)."""
    return ITEM_IDS.search(user_text(request)).group(1).split(", ")  # type: ignore[union-attr]


def first_citation(request: dict[str, Any]) -> dict[str, str] | None:
    """A real citation: the first evidence event shown in the request and a verbatim prefix of it."""
    for match in EVENT_HEAD.finditer(user_text(request)):
        line = match.group(2).strip()
        if len(line) >= 3 and "⟦gcpc" not in line:
            return {"event_id": match.group(1), "quote": line[:60]}
    return None


def items_reply(verdict: str = "Yes", *, ids: list[str] | None = None, cite: bool = True) -> Callable[[dict], Reply]:
    """A reply function judging every requested item (or `ids`) with `verdict`, citing real evidence."""

    def reply(request: dict[str, Any]) -> Reply:
        citation = first_citation(request) if cite else None
        items = [
            {"item_id": i, "citations": [citation] if citation else [], "rationale": f"scripted {verdict}", "verdict": verdict}
            for i in (ids if ids is not None else item_ids(request))
        ]
        return Reply.json({"items": items})

    return reply


def single_item_reply(verdict: str = "Yes") -> Callable[[dict], Reply]:
    def reply(request: dict[str, Any]) -> Reply:
        citation = first_citation(request)
        return Reply.json({"citations": [citation] if citation else [], "rationale": "scripted", "verdict": verdict})

    return reply


def holistic_reply(progress: float = 0.5) -> Callable[[dict], Reply]:
    def reply(request: dict[str, Any]) -> Reply:
        citation = first_citation(request)
        return Reply.json({"citations": [citation] if citation else [], "rationale": "scripted", "progress": progress})

    return reply


def is_repair(request: dict[str, Any]) -> bool:
    return any(m["role"] == "assistant" for m in request["messages"])


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


@pytest.fixture(scope="session")
def demo_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A demo project DB built once: 36 trials, frozen demo checklists, probe judgments and scores."""
    db = tmp_path_factory.mktemp("demo") / "demo.db"
    build_demo_project(db)
    Store(db).close()
    return db


@pytest.fixture
def project(demo_template: Path, tmp_path: Path) -> Iterator[Store]:
    """A private copy of the demo project."""
    db = tmp_path / "project.db"
    shutil.copy(demo_template, db)
    for suffix in ("-wal", "-shm"):
        if Path(str(demo_template) + suffix).exists():
            shutil.copy(str(demo_template) + suffix, str(db) + suffix)
    store = Store(db)
    yield store
    store.close()


@pytest.fixture
def make_llm(fake_openai: FakeOpenAI, project: Store) -> Callable[..., LLM]:
    """An LLM layer against the fake server, storing into `project`; keywords override the config."""

    def make(**overrides: Any) -> LLM:
        settings = {"model": FAKE_MODEL, "base_url": fake_openai.url, "api_key": "sk-test", "timeout": 2.0,
                    "max_retries": 2, **overrides}
        return LLM(LLMConfig(**settings), store=project, prices=TEST_PRICES)

    return make


@pytest.fixture
def llm_env(fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch) -> FakeOpenAI:
    monkeypatch.setenv("OPENAI_BASE_URL", fake_openai.url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("GCPC_MODEL", FAKE_MODEL)
    return fake_openai


def dumps(value: Any) -> str:
    return json.dumps(value)
