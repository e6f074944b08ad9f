"""Harbor ATIF trajectories (`agent/trajectory.json`, e.g. written for gemini-cli runs).

A JSON object `{schema_version: "ATIF-v1.x", session_id, agent, steps, final_metrics}`; each
step has `source` (user|agent|system), `message` (string or content parts), optional
`reasoning_content`, `tool_calls` and `observation.results` (linked by `source_call_id`).
Real files deviate from the spec (string step ids, JSON-string arguments, null content),
so everything but the overall shape is read leniently.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ._builder import EventBuilder
from ._io import load_json_doc, type_name
from ._render import join_parts
from .base import LogError, ParsedLog

__all__ = ["is_doc", "parse"]

_ROLE_KINDS = {"user": "user", "system": "system", "agent": "agent_message"}


def is_doc(obj: Any) -> bool:
    """Whether a parsed document looks like an ATIF trajectory."""
    if not isinstance(obj, dict):
        return False
    version = obj.get("schema_version")
    return (isinstance(version, str) and version.upper().startswith("ATIF")) or isinstance(obj.get("steps"), list)


def _obj(path: Path, value: Any, where: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise LogError(f"{path} {where}: expected an object, got {type_name(value)}")
    return value


def _list(path: Path, value: Any, where: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise LogError(f"{path} {where}: expected an array, got {type_name(value)}")
    return value


def _step(b: EventBuilder, path: Path, step: dict[str, Any], at: str) -> None:
    role = step.get("source")
    kind = _ROLE_KINDS.get(role) if isinstance(role, str) else None
    if kind is None:
        b.warn(f"{at}: unknown step source {role!r}, message kept as system")
        kind = "system"
    reasoning = join_parts(step.get("reasoning_content"))
    if reasoning.strip():
        b.emit("agent_thinking", reasoning, f"{at}.reasoning_content")
    message = join_parts(step.get("message"))
    if message.strip():
        b.emit(kind, message, f"{at}.message")  # type: ignore[arg-type]
    calls = _list(path, step.get("tool_calls"), f"{at}.tool_calls")
    keys: list[str | None] = []
    for j, call in enumerate(calls):
        call = _obj(path, call, f"{at}.tool_calls[{j}]")
        key = call.get("tool_call_id")
        key = str(key) if key is not None else f"{at}.tool_calls[{j}]"
        keys.append(key)
        b.tool_call(call.get("function_name"), call.get("arguments"), f"{at}.tool_calls[{j}]",
                    key=key, args_label="arguments")
    observation = _obj(path, step.get("observation"), f"{at}.observation")
    for k, result in enumerate(_list(path, observation.get("results"), f"{at}.observation.results")):
        rat = f"{at}.observation.results[{k}]"
        result = _obj(path, result, rat)
        key = result.get("source_call_id")
        if key is None and k < len(keys):  # no id: pair with the step's call at the same position
            key = keys[k]
            b.warn(f"{rat}: no source_call_id, linked to {at}.tool_calls[{k}] by position")
        b.tool_result(str(key) if key is not None else None, join_parts(result.get("content")), rat)


def parse(path: Path, text: str, doc: Any = None) -> ParsedLog:
    """Parse an ATIF trajectory; pass `doc` when the JSON was already decoded during detection."""
    if doc is None:
        doc = load_json_doc(path, text)
    if not is_doc(doc):
        seen = f"object with keys {sorted(doc)[:8]}" if isinstance(doc, dict) else type_name(doc)
        raise LogError(f"{path}: not an ATIF trajectory (expected an object with schema_version/steps, got {seen})")
    b = EventBuilder("atif", path)
    agent = _obj(path, doc.get("agent"), "agent")
    meta: dict[str, Any] = {
        "agent": agent.get("name"), "agent_version": agent.get("version"), "model": agent.get("model_name"),
        "session_id": doc.get("session_id"), "schema_version": doc.get("schema_version"),
        "final_metrics": doc.get("final_metrics"), "notes": doc.get("notes"),
    }
    meta = {k: v for k, v in meta.items() if v is not None}
    if "steps" not in doc:
        b.warn("no steps array: the trajectory has no events")
    steps = _list(path, doc.get("steps"), "steps")
    for i, step in enumerate(steps):
        _step(b, path, _obj(path, step, f"steps[{i}]"), f"steps[{i}]")
    meta["steps"] = len(steps)
    return b.finish(skills_offered=None, metadata=meta)
