"""gcpc-jsonl: GCPC's own agent-log format, for harnesses without a parser here.

Convert any harness's log to this and GCPC imports it with no further code. UTF-8 JSON lines;
blank lines are ignored. The first line is a header, every further line one event, in order:

    {"gcpc_log": 1, "agent": "my-harness", "model": "org/model-x", "agent_version": "1.2",
     "session_id": "abc", "skills_offered": ["pdf"]}
    {"kind": "user", "text": "Fix the failing test in /app"}
    {"kind": "agent_message", "text": "Let me look at the test first."}
    {"kind": "tool_call", "text": "pytest -x /app/tests", "tool_name": "shell", "call": "c1"}
    {"kind": "tool_output", "text": "1 failed, 3 passed", "call_ref": "c1", "is_error": false}
    {"kind": "tool_call", "text": "file_path: /app/x.py", "tool_name": "read", "call": "c2"}
    {"kind": "file_content", "text": "def f(): ...", "call_ref": "c2", "path": "/app/x.py"}

Header: `gcpc_log` (required, must be 1); `skills_offered` (optional list of names, else
None); every other key is copied into `ParsedLog.metadata` (`agent`, `model`,
`agent_version`, `session_id` are the conventional ones).

Event keys (anything else is an error, so typos are caught):

- `kind` (required): system | user | agent_message | agent_thinking | tool_call | tool_output | file_content
- `text` (required string): the content, whole; for a tool call the input itself
  (the command, or `key: value` lines), not a JSON envelope
- `tool_name` (string): the tool; outputs inherit their call's when omitted
- `call` (string, tool_call only): your id for the call, unique in the file
- `call_ref` (string, tool_output / file_content only): the `call` this answers; must
  appear on an earlier line. GCPC stores it as the call's event id (`E…`)
- `path` (string): the file read or written (file_content)
- `is_error` (boolean): the tool reported an error; a `file_content` event with `is_error` true
  is no file content (a read or write that failed) and is stored as a `tool_output`, with a warning
- `skill` (string, tool_call only): the call activated this skill (fills `skills_used`)

Event ids are assigned in line order (`E1`, `E2`, …); `source` is `line N`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...models import EVENT_KINDS
from ._builder import EventBuilder
from ._io import iter_json_lines, type_name
from .base import LogError, ParsedLog

__all__ = ["VERSION", "is_header", "parse"]

VERSION = 1
_OPTIONAL: dict[str, type] = {
    "tool_name": str, "call": str, "call_ref": str, "path": str, "is_error": bool, "skill": str,
}
_OUTPUT_KINDS = ("tool_output", "file_content")


def is_header(obj: Any) -> bool:
    """Whether a parsed first line is a gcpc-jsonl header."""
    return isinstance(obj, dict) and "gcpc_log" in obj


def _header(path: Path, lineno: int, rec: Any) -> tuple[list[str] | None, dict[str, Any]]:
    if not is_header(rec):
        raise LogError(f"{path} line {lineno}: not a gcpc-jsonl log (first line has no \"gcpc_log\" header)")
    if rec["gcpc_log"] != VERSION:
        raise LogError(f"{path} line {lineno}: unsupported gcpc_log version {rec['gcpc_log']!r} (expected {VERSION})")
    offered = rec.get("skills_offered")
    if offered is not None and not (isinstance(offered, list) and all(isinstance(s, str) for s in offered)):
        raise LogError(f"{path} line {lineno}: skills_offered must be a list of strings")
    return offered, {k: v for k, v in rec.items() if k not in ("gcpc_log", "skills_offered")}


def _check(path: Path, lineno: int, rec: Any) -> None:
    where = f"{path} line {lineno}"
    if not isinstance(rec, dict):
        raise LogError(f"{where}: expected an event object, got {type_name(rec)}")
    kind = rec.get("kind")
    if kind not in EVENT_KINDS:
        raise LogError(f"{where}: unknown kind {kind!r} (expected one of {', '.join(EVENT_KINDS)})")
    if not isinstance(rec.get("text"), str):
        raise LogError(f"{where}: text must be a string, got {type_name(rec.get('text'))}")
    for key, value in rec.items():
        if key in ("kind", "text"):
            continue
        want = _OPTIONAL.get(key)
        if want is None:
            raise LogError(f"{where}: unknown key {key!r} (allowed: kind, text, {', '.join(_OPTIONAL)})")
        if value is not None and not isinstance(value, want):
            expected = "a boolean" if want is bool else "a string"
            raise LogError(f"{where}: {key} must be {expected}, got {type_name(value)}")
    if rec.get("call") is not None and kind != "tool_call":
        raise LogError(f"{where}: 'call' is only allowed on tool_call events")
    if rec.get("skill") is not None and kind != "tool_call":
        raise LogError(f"{where}: 'skill' is only allowed on tool_call events")
    if rec.get("call_ref") is not None and kind not in _OUTPUT_KINDS:
        raise LogError(f"{where}: 'call_ref' is only allowed on tool_output and file_content events")


def parse(path: Path, text: str, doc: Any = None) -> ParsedLog:
    """Parse a gcpc-jsonl log strictly; `doc` is unused (the format is line-based)."""
    b = EventBuilder("gcpc-jsonl", path)
    calls: dict[str, tuple[str, str | None]] = {}
    offered: list[str] | None = None
    meta: dict[str, Any] | None = None
    for lineno, rec in iter_json_lines(path, text):
        if meta is None:
            offered, meta = _header(path, lineno, rec)
            continue
        _check(path, lineno, rec)
        kind, body, src = rec["kind"], rec["text"], f"line {lineno}"
        tool, ref = rec.get("tool_name"), rec.get("call_ref")
        if kind == "tool_call":
            eid = b.emit("tool_call", body, src, tool_name=tool, path=rec.get("path"),
                         is_error=bool(rec.get("is_error")))
            call = rec.get("call")
            if call is not None:
                if call in calls:
                    raise LogError(f"{path} line {lineno}: call id {call!r} is used twice")
                calls[call] = (eid, tool)
            b.note_skills(tool or "", {}, body)
            if rec.get("skill"):
                b.note_skill(rec["skill"])
            continue
        call_id = None
        if ref is not None:
            if ref not in calls:
                raise LogError(f"{path} line {lineno}: call_ref {ref!r} names no earlier call")
            call_id, call_tool = calls[ref]
            tool = tool or call_tool
        if kind == "file_content" and rec.get("is_error"):
            b.warn(f"{src}: file_content with is_error true is a failed read or write, stored as tool_output")
            kind = "tool_output"
        b.emit(kind, body, src, tool_name=tool, call_id=call_id, path=rec.get("path"),
               is_error=bool(rec.get("is_error")))
    if meta is None:  # only blank lines: read_text already rejects that, but stay total
        raise LogError(f"{path}: empty file")
    return b.finish(skills_offered=offered, metadata=meta)
