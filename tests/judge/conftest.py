"""Fixtures for judging tests: a demo project with frozen checklists as the LLM layer's store, and
scripted judge replies computed from each request (so they cite the request's real event ids).

The demo project is built once per session (tests/conftest.py: import + demo checklists + probe
judgments) and copied per test, which keeps every test fast and independent. The fake OpenAI
server and `make_llm` are shared with the LLM-layer tests (tests/conftest.py).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from fake_openai import Reply

from gcpc_core.store import Store

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
def llm_store(project: Store) -> Store:
    """`make_llm` layers store into the demo project."""
    return project
