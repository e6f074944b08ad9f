"""Harbor ATIF trajectories, v1.0 to v1.7 (`agent/trajectory.json`: gemini-cli, terminus-2, …).

A JSON object `{schema_version: "ATIF-v1.x", session_id, trajectory_id, agent, steps, notes,
final_metrics, continued_trajectory_ref, subagent_trajectories}`; each step has `source`
(user|agent|system), `message` (a string or, from v1.6, content parts: text, and images that
become placeholders naming their file), optional `reasoning_content`, `tool_calls`
(`tool_call_id`, `function_name`, `arguments`) and `observation.results` (`source_call_id`,
`content`, `subagent_trajectory_ref`).

A run split by context summarization continues in `trajectory.cont-1.json`, `-2`, … (named by
`continued_trajectory_ref`, else found by number): they are joined in order into one run, each
seam marked by a `system` event, and the steps a continuation copies from the one before
(`is_copied_context`) are not repeated. A reference to a subagent's trajectory is marked by a
`system` event naming it; the subagent's own steps are not part of this run's events.
Real files deviate from the spec (string step ids, JSON-string arguments, null content),
so everything but the overall shape is read leniently.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ._builder import EventBuilder
from ._io import load_json_doc, read_text, type_name
from ._render import join_parts, to_text
from .base import LogError, ParsedLog

__all__ = ["continuation_files", "is_doc", "parse", "run_files"]

_CONT = re.compile(r"^trajectory\.cont-(\d+)\.json$")
_MAX_CONTINUATIONS = 1000

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


def _refs(value: Any) -> list[dict[str, Any]]:
    if isinstance(value, dict):
        return [value]
    return [r for r in value if isinstance(r, dict)] if isinstance(value, list) else []


def _subagents(b: EventBuilder, refs: list[dict[str, Any]], at: str, meta: dict[str, Any]) -> None:
    for ref in refs:
        name = ref.get("trajectory_path") or ref.get("trajectory_id") or ref.get("session_id")
        meta.setdefault("subagent_trajectories", []).append(to_text(name))
        b.emit("system", f"subagent trajectory: {to_text(name)} (its steps are not part of this run)",
               f"{at}.subagent_trajectory_ref")


def _step(b: EventBuilder, path: Path, step: dict[str, Any], at: str, meta: dict[str, Any], ns: str = "") -> None:
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
        key = f"{ns}{key}" if key is not None else f"{at}.tool_calls[{j}]"
        keys.append(key)
        b.tool_call(call.get("function_name"), call.get("arguments"), f"{at}.tool_calls[{j}]",
                    key=key, args_label="arguments")
    observation = _obj(path, step.get("observation"), f"{at}.observation")
    for k, result in enumerate(_list(path, observation.get("results"), f"{at}.observation.results")):
        rat = f"{at}.observation.results[{k}]"
        result = _obj(path, result, rat)
        key = result.get("source_call_id")
        if key is not None:
            key = f"{ns}{key}"
        elif k < len(keys):  # no id: pair with the step's call at the same position
            key = keys[k]
            b.warn(f"{rat}: no source_call_id, linked to {at}.tool_calls[{k}] by position")
        refs = _refs(result.get("subagent_trajectory_ref"))
        text = join_parts(result.get("content"))
        if refs and not text.strip():
            text = "[result in subagent trajectory]"
        if key is not None or text.strip() or not refs:
            b.tool_result(key, text, rat)
        _subagents(b, refs, rat, meta)


def run_files(path: Path) -> list[Path]:
    """Every file an ATIF run at `path` may read: itself plus its `trajectory*.json` siblings
    (continuations, summarization sub-trajectories), for fingerprints and confinement checks."""
    siblings = sorted(p for p in path.parent.glob("trajectory*.json") if p != path)
    return [path, *siblings]


def continuation_files(path: Path, doc: dict[str, Any]) -> list[Path]:
    """`trajectory.cont-N.json` files in numeric order, for a run whose files name no successor."""
    numbered = [(int(m.group(1)), p) for p in path.parent.iterdir() if (m := _CONT.match(p.name))]
    return [p for _, p in sorted(numbered)]


def _next_ref(path: Path, doc: dict[str, Any]) -> Path | None:
    ref = doc.get("continued_trajectory_ref")
    if ref is None:
        return None
    if isinstance(ref, dict):
        ref = ref.get("trajectory_path") or ref.get("path")
    if not isinstance(ref, str) or not ref or "/" in ref or "\\" in ref or ref in (".", ".."):
        raise LogError(f"{path}: continued_trajectory_ref {ref!r} is not a file name beside it")
    return path.parent / ref


def _segment(b: EventBuilder, path: Path, doc: dict[str, Any], meta: dict[str, Any], label: str) -> None:
    steps = _list(path, doc.get("steps"), f"{label}steps")
    copied = 0
    ns = label
    for i, step in enumerate(steps):
        step = _obj(path, step, f"{label}steps[{i}]")
        if label and step.get("is_copied_context") is True:  # repeated from the segment before
            copied += 1
            continue
        _step(b, path, step, f"{label}steps[{i}]", meta, ns)
    meta["steps"] = meta.get("steps", 0) + len(steps) - copied
    if copied:
        meta.setdefault("copied_context_steps", {})[path.name] = copied


def parse(path: Path, text: str, doc: Any = None, max_bytes: int | None = None) -> ParsedLog:
    """Parse an ATIF run (with its continuation files); pass `doc` when the JSON was already
    decoded during detection. `max_bytes` bounds the whole run, continuations included."""
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
    _segment(b, path, doc, meta, "")
    if isinstance(doc.get("subagent_trajectories"), list):
        meta["embedded_subagent_trajectories"] = len(doc["subagent_trajectories"])
    chained = _next_ref(path, doc)
    pending = continuation_files(path, doc)
    seen_files = {path.name}
    limit = max_bytes if max_bytes is not None else 25 * 2**20
    total = len(text.encode("utf-8", "surrogatepass"))
    current = doc
    while (chained is not None or pending) and len(seen_files) <= _MAX_CONTINUATIONS:
        nxt = chained if chained is not None else pending[0]
        if nxt.name in seen_files:
            raise LogError(f"{path}: continuation {nxt.name} is reached twice (a cycle of continued_trajectory_ref)")
        seen_files.add(nxt.name)
        pending = [p for p in pending if p.name != nxt.name]
        cont_text = read_text(nxt, max(limit - total, 1))
        total += len(cont_text.encode("utf-8", "surrogatepass"))
        current = load_json_doc(nxt, cont_text)
        if not is_doc(current):
            raise LogError(f"{nxt}: continuation is not an ATIF trajectory ({type_name(current)})")
        session = current.get("session_id")
        b.emit("system", f"continued in {nxt.name}" + (f" (session {to_text(session)})" if session else "")
               + ": the agent's context was summarized here", f"{nxt.name}")
        meta.setdefault("continuations", []).append(nxt.name)
        _segment(b, nxt, current, meta, f"{nxt.name} ")
        if isinstance(current.get("final_metrics"), dict):
            meta["final_metrics"] = current["final_metrics"]
        chained = _next_ref(nxt, current)
    return b.finish(skills_offered=None, metadata=meta)
