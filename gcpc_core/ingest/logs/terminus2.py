"""terminus-2 episode logs (`agent/trajectory.json` as a JSON array, not ATIF).

Each element is `{episode, prompt, response}`. Episode 0's prompt is the harness prompt with
the task; every later prompt is the terminal output produced by the previous episode's
keystrokes. The response is the model's JSON (`analysis`, `plan`, `commands[{keystrokes,
duration}]`, `task_complete`, or `{"load_skill": name}`), which real models wrap in prose or
```json fences or get wrong: it is decoded leniently and kept whole when it does not decode.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from ._builder import EventBuilder
from ._io import load_json_doc, loads, type_name
from ._render import join_parts, render_args, to_text
from .base import LogError, ParsedLog

__all__ = ["is_doc", "parse"]

_EPISODE_KEYS = frozenset({"episode", "prompt", "response"})
_RESPONSE_KEYS = frozenset({"analysis", "plan", "commands", "task_complete", "load_skill"})
_DECODER = json.JSONDecoder(strict=False)  # models put raw newlines/tabs inside strings
_MAX_TRIES = 64
_FENCE_OPEN = re.compile(r"```[A-Za-z]*\s*$")
_FENCE_CLOSE = re.compile(r"^\s*```")
_SKILL_CONTEXT = re.compile(r"Skill context:\n(.*?)\n---", re.S)


def is_doc(obj: Any) -> bool:
    """Whether a parsed document looks like a terminus-2 episode list."""
    return (
        isinstance(obj, list) and bool(obj) and isinstance(obj[0], dict) and bool(_EPISODE_KEYS & obj[0].keys())
    )


def _decode(text: str) -> Any:
    """`_DECODER.decode(text)`, by orjson (`loads`, several times faster) unless the strict decoders
    refuse it: only then may the lenient one still decode it (raw newlines inside strings)."""
    try:
        return loads(text)
    except ValueError:
        return _DECODER.decode(text)


def decode_response(text: str) -> tuple[dict[str, Any] | None, str, str]:
    """(decoded response object, text before it, text after it); (None, text, "") if none found.

    Tries the whole text, then each `{` in turn (bounded), so prose or fences around the JSON
    are tolerated; only objects with a known response key are accepted.
    """
    try:
        obj = _decode(text.strip())
        if isinstance(obj, dict):
            return obj, "", ""
    except ValueError:
        pass
    start = text.find("{")
    for _ in range(_MAX_TRIES):
        if start < 0:
            break
        try:
            obj, end = _DECODER.raw_decode(text, start)
        except ValueError:
            obj, end = None, start
        if isinstance(obj, dict) and _RESPONSE_KEYS & obj.keys():
            return obj, _FENCE_OPEN.sub("", text[:start]), _FENCE_CLOSE.sub("", text[end:])
        start = text.find("{", start + 1)
    return None, text, ""


def _commands(b: EventBuilder, value: Any, at: str) -> None:
    if not isinstance(value, list):
        b.warn(f"{at}: commands is {type_name(value)}, not an array; kept as agent_message")
        b.emit("agent_message", f"commands: {render_args(value)}", at)
        return
    for j, cmd in enumerate(value):
        keys = cmd.get("keystrokes") if isinstance(cmd, dict) else None
        if not isinstance(keys, str):
            b.warn(f"{at}[{j}]: command without keystrokes string, kept rendered")
            keys = render_args(cmd)
        b.tool_call("terminal", keys, f"{at}[{j}]")


def _response(b: EventBuilder, raw: Any, at: str) -> bool:
    """Emit one episode's response; returns the task_complete flag."""
    if isinstance(raw, dict):
        obj, before, after = raw, "", ""
    else:
        text = join_parts(raw)
        obj, before, after = decode_response(text)
        if obj is None:
            if text.strip():
                b.warn(f"{at}: response is not JSON, kept whole as agent_message")
                b.emit("agent_message", text, at)
            return False
    if before.strip():
        b.emit("agent_message", before.strip(), f"{at} (text before JSON)")
    complete = False
    for key, value in obj.items():
        where = f"{at}.{key}"
        if key == "analysis":
            if to_text(value).strip():
                b.emit("agent_thinking", to_text(value), where)
        elif key == "plan":
            if to_text(value).strip():
                b.emit("agent_message", to_text(value), where)
        elif key == "commands":
            _commands(b, value, where)
        elif key == "load_skill":
            b.tool_call("load_skill", {"load_skill": value}, where)
        elif key == "task_complete":
            complete = value is True or (isinstance(value, str) and value.lower() == "true")
            if complete:
                b.emit("agent_message", "task_complete: true", where)
        else:
            b.emit("agent_message", render_args({key: value}), where)
    if after.strip():
        b.emit("agent_message", after.strip(), f"{at} (text after JSON)")
    return complete


def parse(path: Path, text: str, doc: Any = None) -> ParsedLog:
    """Parse a terminus-2 episode list; pass `doc` when the JSON was already decoded."""
    if doc is None:
        doc = load_json_doc(path, text)
    if not is_doc(doc):
        raise LogError(f"{path}: not a terminus-2 log (expected an array of {{episode, prompt, response}} "
                       f"objects, got {type_name(doc)})")
    b = EventBuilder("terminus-2", path)
    meta: dict[str, Any] = {"agent": "terminus-2", "episodes": len(doc)}
    for i, episode in enumerate(doc):
        if not isinstance(episode, dict):
            raise LogError(f"{path} [{i}]: expected an episode object, got {type_name(episode)}")
        prompt = join_parts(episode.get("prompt"))
        if prompt.strip():
            if b.last_call is None:  # the task prompt, or harness text before any command ran
                b.emit("user", prompt, f"[{i}].prompt")
            else:  # terminal output produced by the latest keystrokes
                b.tool_result(b.last_call, prompt, f"[{i}].prompt")
        if i == 0 and (m := _SKILL_CONTEXT.search(prompt)):
            meta["skill_context"] = m.group(1).strip()
        if episode.get("response") is not None:
            meta["task_complete"] = _response(b, episode["response"], f"[{i}].response")
    return b.finish(skills_offered=None, metadata=meta)
