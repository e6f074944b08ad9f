"""Fixtures for judging tests: a demo project with frozen checklists as the LLM layer's store, and
scripted judge replies computed from each request (so they cite the request's real event ids).

The demo project is built once per session (tests/conftest.py: import + demo checklists + probe
judgments) and copied per test, which keeps every test fast and independent. The fake OpenAI
server and `make_llm` are shared with the LLM-layer tests (tests/conftest.py).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache
from typing import Any

import pytest

from fake_openai import Reply

from gcpc_core.checklist import Rules, load_rules, quoted_literals
from gcpc_core.store import Store

ITEM_IDS = re.compile(r"each exactly once: ([^\n]*?)\. Reply with one JSON object")
PER_ITEM_ID = re.compile(r"## The checklist item to judge\n- id: (\S+) ")
EVENT_HEAD = re.compile(r"^### (E\d+) · (tool_call|tool_output|file_content)([^\n]*)\n`{3,}\n([^\n]*)", re.M)
"""An event of a rendered evidence view: id, kind, the rest of its header, the first line of its text."""


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
    """A real citation: the first tool output or file content shown in the request (not an agent's
    claim) and a verbatim prefix of it long enough to ground (8+ non-space characters)."""
    for match in EVENT_HEAD.finditer(user_text(request)):
        line = match.group(4).strip()
        if (match.group(2) != "tool_call" and "agent's claim" not in match.group(3)
                and len(line.replace(" ", "")) >= 8 and "⟦gcpc" not in line):
            return {"event_id": match.group(1), "quote": line[:60]}
    return None


EVENT = re.compile(r"^### (E\d+) · (tool_call|tool_output|file_content)([^\n]*)\n(`{3,})\n(.*?)\n\4$", re.M | re.S)
ITEM_TEXT = re.compile(r"^- id: (\S+) · route: \S+\n  requirement: ([^\n]*)$", re.M)


def item_citation(request: dict[str, Any], item_id: str) -> dict[str, str] | None:
    """A citation that grounds a Yes on the item: a line of a tool output or file content holding one
    of the values the item names in backticks or quotes; else `first_citation`."""
    text = user_text(request)
    requirement = dict(ITEM_TEXT.findall(text)).get(item_id, "")
    values = quoted_literals(requirement, _rules())
    for m in EVENT.finditer(text):
        if m.group(2) == "tool_call" or "agent's claim" in m.group(3):
            continue
        for line in m.group(5).splitlines():
            if "⟦gcpc" not in line and any(v in line.lower() for v in values):
                return {"event_id": m.group(1), "quote": line.strip()[:200]}
    return first_citation(request)


@cache
def _rules() -> Rules:
    return load_rules()


def items_reply(verdict: str = "Yes", *, ids: list[str] | None = None, cite: bool = True) -> Callable[[dict], Reply]:
    """A reply function judging every requested item (or `ids`) with `verdict`, citing real evidence
    (`item_citation`)."""

    def reply(request: dict[str, Any]) -> Reply:
        items = []
        for i in ids if ids is not None else item_ids(request):
            citation = item_citation(request, i) if cite else None
            items.append({"item_id": i, "citations": [citation] if citation else [], "rationale": f"scripted {verdict}",
                          "verdict": verdict})
        return Reply.json({"items": items})

    return reply


def single_item_reply(verdict: str = "Yes") -> Callable[[dict], Reply]:
    def reply(request: dict[str, Any]) -> Reply:
        match = PER_ITEM_ID.search(user_text(request))
        citation = item_citation(request, match.group(1)) if match else first_citation(request)
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
