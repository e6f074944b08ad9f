"""Claude Code stream-json logs (`agent/claude-code.txt` from `claude -p --output-format stream-json`).

One JSON object per line: `system` (the `init` line names model, tools and skills), `assistant`
(content blocks: text, thinking, tool_use; one API message is often split over several lines,
one block per line), `user` (tool_result blocks or text) and a final `result` line.
The task prompt itself is not in these logs: it is passed on the command line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ._builder import EventBuilder
from ._io import iter_json_lines, type_name
from ._render import join_parts, render_args
from .base import LogError, ParsedLog

__all__ = ["RECORD_TYPES", "is_record", "parse"]

RECORD_TYPES = frozenset({"system", "assistant", "user", "result"})
_CALL_BLOCKS = frozenset({"tool_use", "server_tool_use", "mcp_tool_use"})
_INIT_META = {
    "model": "model", "session_id": "session_id", "claude_code_version": "agent_version", "cwd": "cwd",
    "tools": "tools", "slash_commands": "slash_commands", "permissionMode": "permission_mode",
    "mcp_servers": "mcp_servers", "agents": "agents", "plugins": "plugins",
}
_RESULT_META = ("subtype", "is_error", "duration_ms", "duration_api_ms", "num_turns", "total_cost_usd",
                "usage", "modelUsage", "permission_denials", "errors")


def is_record(obj: Any) -> bool:
    """Whether a parsed line looks like a Claude Code stream-json record."""
    return isinstance(obj, dict) and isinstance(obj.get("type"), str) and obj["type"] in RECORD_TYPES


def _names(items: list[Any]) -> list[str]:
    """Names from a list of strings or `{name: ...}` objects (init lists use both shapes)."""
    return [x if isinstance(x, str) else str(x.get("name")) for x in items if isinstance(x, (str, dict))]


def _init_summary(rec: dict[str, Any]) -> str:
    version = rec.get("claude_code_version")
    lines = [f"Claude Code {version} session start" if version else "Claude Code session start"]
    for key, label in (("model", "model"), ("cwd", "cwd"), ("permissionMode", "permission mode")):
        if rec.get(key) is not None:
            lines.append(f"{label}: {rec[key]}")
    for key, label in (("tools", "tools"), ("skills", "skills"), ("slash_commands", "slash commands")):
        if isinstance(rec.get(key), list):
            lines.append(f"{label}: {', '.join(_names(rec[key])) or '(none)'}")
    return "\n".join(lines)


def _system(b: EventBuilder, rec: dict[str, Any], src: str, meta: dict[str, Any]) -> list[str] | None:
    if rec.get("subtype") != "init":
        rest = {k: v for k, v in rec.items() if k not in ("type", "session_id", "uuid")}
        b.emit("system", render_args(rest), src)
        return None
    meta.update({dst: rec[k] for k, dst in _INIT_META.items() if rec.get(k) is not None})
    b.emit("system", _init_summary(rec), src)
    return _names(rec["skills"]) if isinstance(rec.get("skills"), list) else None


def _blocks(rec: dict[str, Any], src: str) -> list[tuple[Any, str]]:
    msg = rec.get("message")
    content = msg.get("content") if isinstance(msg, dict) else msg
    blocks = [blk for blk in (content if isinstance(content, list) else [content]) if blk is not None]
    if not blocks:
        return []
    if len(blocks) == 1:
        return [(blocks[0], src)]
    return [(blk, f"{src}, content[{i}]") for i, blk in enumerate(blocks)]


def _assistant(b: EventBuilder, rec: dict[str, Any], src: str) -> None:
    for blk, s in _blocks(rec, src):
        kind = blk.get("type") if isinstance(blk, dict) else None
        if isinstance(blk, str) or (kind == "text" and isinstance(blk.get("text"), str)):
            text = blk if isinstance(blk, str) else blk["text"]
            if text.strip():
                b.emit("agent_message", text, s)
        elif kind == "thinking":
            if str(blk.get("thinking") or "").strip():
                b.emit("agent_thinking", str(blk["thinking"]), s)
        elif kind == "redacted_thinking":
            b.emit("agent_thinking", "[redacted thinking]", s)
        elif kind in _CALL_BLOCKS:
            key = blk.get("id")
            if isinstance(key, str) and b.has_call(key):
                b.warn(f"{s}: repeated tool_use id {key!r}, duplicate skipped")
                continue
            b.tool_call(blk.get("name"), blk.get("input"), s, key=key if isinstance(key, str) else None)
        elif isinstance(kind, str) and kind.endswith("tool_result"):  # server-side tool results
            b.tool_result(blk.get("tool_use_id"), join_parts(blk.get("content")), s, is_error=bool(blk.get("is_error")))
        else:
            b.warn(f"{s}: unknown assistant block type {kind!r}, kept as agent_message")
            b.emit("agent_message", render_args(blk), s)


def _user(b: EventBuilder, rec: dict[str, Any], src: str) -> None:
    for blk, s in _blocks(rec, src):
        kind = blk.get("type") if isinstance(blk, dict) else None
        if kind == "tool_result":
            b.tool_result(blk.get("tool_use_id"), join_parts(blk.get("content")), s, is_error=bool(blk.get("is_error")))
        elif isinstance(blk, str) or kind in ("text", "image"):
            text = join_parts(blk)
            if text.strip():
                b.emit("user", text, s)
        else:
            b.warn(f"{s}: unknown user block type {kind!r}, kept as user")
            b.emit("user", render_args(blk), s)


def _result(b: EventBuilder, rec: dict[str, Any], src: str, meta: dict[str, Any]) -> None:
    summary = {k: rec[k] for k in _RESULT_META if k in rec}
    meta["result"] = summary
    text = rec.get("result")
    if not isinstance(text, str):
        text = render_args({k: summary[k] for k in ("subtype", "is_error", "num_turns", "errors") if k in summary})
    b.emit("system", text, src, is_error=bool(rec.get("is_error")))


def parse(path: Path, text: str, doc: Any = None) -> ParsedLog:
    """Parse a Claude Code stream-json log; `doc` is unused (the format is line-based)."""
    b = EventBuilder("claude-code", path)
    meta: dict[str, Any] = {"agent": "claude-code"}
    offered: list[str] | None = None
    seen = 0
    for lineno, rec in iter_json_lines(path, text):
        if not isinstance(rec, dict):
            raise LogError(f"{path} line {lineno}: expected a JSON object, got {type_name(rec)}")
        src = f"line {lineno}"
        kind = rec.get("type")
        if not is_record(rec):
            b.warn(f"{src}: skipped record of unknown type {kind!r}")
            continue
        seen += 1
        if kind == "system":
            skills = _system(b, rec, src, meta)
            if skills is not None:  # a resumed session may have several init lines
                offered = list(dict.fromkeys((offered or []) + skills))
        elif kind == "assistant":
            _assistant(b, rec, src)
        elif kind == "user":
            _user(b, rec, src)
        else:
            _result(b, rec, src, meta)
    if not seen:
        raise LogError(f"{path}: no Claude Code stream-json records (no line has type system/assistant/user/result)")
    return b.finish(skills_offered=offered, metadata=meta)
