"""Agent Client Protocol session logs (opencode and others; `trajectory/acp_trajectory.jsonl`).

One JSON object per line, each a session update, in one of three envelopes:

- flattened, as ACP runners write them: `{"type": "agent_thought", "text": …}`,
  `{"type": "tool_call", "tool_call_id", "kind", "title", "status", "content": […]}`;
- the protocol's own update objects: `{"sessionUpdate": "agent_message_chunk", "content": {…}}`,
  `{"sessionUpdate": "tool_call_update", "toolCallId", …}`;
- whole `session/update` notifications: `{"method": "session/update", "params": {"update": {…}}}`.

Updates: `user_message`, `agent_message`, `agent_thought` (each optionally `_chunk`: consecutive
chunks of one kind are joined into one event), `tool_call` and `tool_call_update` (one tool call per
`tool_call_id` however many updates it gets), `plan`; anything else is kept as `system`.

A tool call's `content` blocks: `content` (a text or image content block) becomes its output —
file content for a successful `read`; `diff` (`path`, `oldText`, `newText`) becomes a
`file_content` event holding `newText` — unless the call failed: then the call is marked
`is_error` and shows the new text it tried to write, and no file content is made; `terminal` a
placeholder. The call text is its raw input
when the log has one, else its title and the locations it touched (opencode does not log the
command of an `execute` call). Identical repeated content blocks of one call are kept once, with
a warning.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._builder import EventBuilder
from ._io import iter_json_lines, type_name
from ._render import join_parts, render_args, to_text
from .base import LogError, ParsedLog

__all__ = ["UPDATE_TYPES", "is_record", "parse"]

_MESSAGE_KINDS = {"user_message": "user", "agent_message": "agent_message", "agent_thought": "agent_thinking"}
UPDATE_TYPES = frozenset({
    *_MESSAGE_KINDS, *(f"{k}_chunk" for k in _MESSAGE_KINDS), "tool_call", "tool_call_update", "plan",
})
_DONE = frozenset({"completed", "failed"})
_TOOL_NAME = re.compile(r"^[A-Za-z_][\w.-]{0,63}$")
_KIND_TOOLS = {"execute": "bash", "read": "read", "edit": "edit", "delete": "delete", "move": "move",
               "search": "search", "fetch": "fetch", "think": "think"}
_OPENCODE_PATH = re.compile(r"\A<path>(.*?)</path>")
_PATH_KEYS = ("filePath", "file_path", "path", "absolute_path")


def _update(rec: Any) -> tuple[str | None, dict[str, Any]]:
    """(update kind, update object) whatever the envelope."""
    if not isinstance(rec, dict):
        return None, {}
    params = rec.get("params")
    if rec.get("method") == "session/update" and isinstance(params, dict) and isinstance(params.get("update"), dict):
        rec = params["update"]
    kind = rec.get("sessionUpdate", rec.get("type"))
    return (kind if isinstance(kind, str) else None), rec


def is_record(obj: Any) -> bool:
    """Whether a parsed line is an ACP session update (the first one decides the format)."""
    kind, rec = _update(obj)
    if kind not in UPDATE_TYPES:
        return False
    if kind.startswith("tool_call"):
        return any(k in rec for k in ("tool_call_id", "toolCallId"))
    return "sessionUpdate" in rec or "text" in rec or "content" in rec or "entries" in rec


def _get(rec: dict[str, Any], snake: str, camel: str) -> Any:
    return rec.get(snake, rec.get(camel))


@dataclass
class _Call:
    """One tool call across its updates."""

    fields: dict[str, Any]
    source: str
    key: str | None = None
    outputs: list[tuple[str, str]] = field(default_factory=list)
    emitted: set[tuple[str, str]] = field(default_factory=set)


def _message_text(rec: dict[str, Any]) -> str:
    if isinstance(rec.get("text"), str):
        return rec["text"]
    return join_parts(rec.get("content"))


def _path_of(call: dict[str, Any]) -> str | None:
    raw = _get(call, "raw_input", "rawInput")
    if isinstance(raw, dict):
        for key in _PATH_KEYS:
            if isinstance(raw.get(key), str):
                return raw[key]
    locations = call.get("locations")
    if isinstance(locations, list):
        for loc in locations:
            if isinstance(loc, dict) and isinstance(loc.get("path"), str):
                return loc["path"]
    return None


def _tool_name(call: dict[str, Any]) -> str:
    title = call.get("title")
    if isinstance(title, str) and _TOOL_NAME.match(title):
        return title
    kind = call.get("kind")
    return _KIND_TOOLS.get(kind, str(kind or "tool")) if isinstance(kind, str) or kind is None else "tool"


def _call_args(call: dict[str, Any]) -> Any:
    """What the call text shows: the raw input when logged, else the title and the touched paths."""
    raw = _get(call, "raw_input", "rawInput")
    if isinstance(raw, (dict, str)) and raw:
        if isinstance(raw, dict) and call.get("kind") == "execute" and isinstance(raw.get("command"), str):
            return {"command": raw["command"], **raw}
        return raw
    shown: dict[str, Any] = {}
    if isinstance(call.get("title"), str):
        shown["title"] = call["title"]
    locations = call.get("locations")
    if isinstance(locations, list):
        paths = [loc["path"] for loc in locations if isinstance(loc, dict) and isinstance(loc.get("path"), str)]
        if paths:
            shown["paths"] = paths
    return shown


class _Parser:
    def __init__(self, path: Path) -> None:
        self.b = EventBuilder("acp", path)
        self.path = path
        self.calls: dict[str, _Call] = {}
        self.chunk: tuple[str, list[str], str] | None = None  # (kind, pieces, source of the first chunk)

    def flush(self) -> None:
        if self.chunk is not None:
            kind, pieces, src = self.chunk
            text = "".join(pieces)
            if text.strip():
                self.b.emit(_MESSAGE_KINDS[kind], text, src)  # type: ignore[arg-type]
            self.chunk = None

    def message(self, kind: str, rec: dict[str, Any], src: str) -> None:
        text = _message_text(rec)
        if kind.endswith("_chunk"):
            base = kind[: -len("_chunk")]
            if self.chunk is not None and self.chunk[0] == base:
                self.chunk[1].append(text)
                return
            self.flush()
            self.chunk = (base, [text], src)
            return
        self.flush()
        if text.strip():
            self.b.emit(_MESSAGE_KINDS[kind], text, src)  # type: ignore[arg-type]

    def tool(self, rec: dict[str, Any], src: str) -> None:
        self.flush()
        call_id = _get(rec, "tool_call_id", "toolCallId")
        call_id = to_text(call_id) if call_id is not None else src
        state = self.calls.get(call_id)
        if state is None:
            state = self.calls[call_id] = _Call({}, src)
        updates = {k: v for k, v in rec.items() if v is not None and k not in ("type", "sessionUpdate")}
        state.fields.update(updates)
        if "content" in updates:  # an update's content replaces the call's content
            state.outputs = self._blocks(updates["content"], src)
        if state.fields.get("status") in _DONE or state.key is not None:
            self.emit(state, src)

    def _blocks(self, content: Any, src: str) -> list[tuple[str, str]]:
        """(kind, text) of a call's content blocks; `diff` blocks as ("diff:<path>", newText)."""
        if not isinstance(content, list):
            content = [content]
        out: list[tuple[str, str]] = []
        repeated = 0
        for i, block in enumerate(content):
            where = f"{src}.content[{i}]"
            if not isinstance(block, dict):
                out.append(("text", to_text(block)))
                continue
            kind = block.get("type")
            if kind == "diff":
                out.append((f"diff:{to_text(block.get('path'))}", to_text(block.get("newText") or "")))
            elif kind == "content":
                entry = ("text", join_parts(block.get("content")))
                if out and out[-1] == entry:
                    repeated += 1
                    continue
                out.append(entry)
            elif kind == "terminal":
                out.append(("text", f"[terminal {to_text(_get(block, 'terminal_id', 'terminalId'))}]"))
            else:
                self.b.warn(f"{where}: unknown content block type {kind!r}, kept rendered")
                out.append(("text", render_args(block)))
        if repeated:
            self.b.warn(f"{src}: {repeated} repeated identical content block(s) kept once")
        return out

    def emit(self, state: _Call, src: str) -> None:
        """The call (once) and the outputs not yet emitted (an update may repeat earlier content)."""
        b, call = self.b, state.fields
        if state.key is None:
            state.key = f"acp:{state.source}"
            b.tool_call(_tool_name(call), _call_args(call), state.source, key=state.key, args_label="rawInput")
        failed = call.get("status") == "failed"
        is_read = call.get("kind") == "read" and not failed
        outputs = list(state.outputs)
        raw_out = _get(call, "raw_output", "rawOutput")
        if not outputs and raw_out is not None and call.get("status") in _DONE:
            outputs = [("text", render_args(raw_out))]
        for kind, text in outputs:
            if (kind, text) in state.emitted:
                continue
            state.emitted.add((kind, text))
            if kind.startswith("diff:") and failed:
                b.failed_write(state.key, text, f"newText of {kind[len('diff:'):]} (not written: the call failed)")
            elif kind.startswith("diff:"):
                b.tool_result(state.key, text, f"{src} diff", as_file=True, path=kind[len("diff:"):] or None)
            elif is_read:
                m = _OPENCODE_PATH.match(text)
                b.tool_result(state.key, text, src, as_file=True, path=_path_of(call) or (m.group(1) if m else None))
            else:
                b.tool_result(state.key, text, src, is_error=failed)
        if call.get("status") in _DONE:
            b.settle(state.key, failed=failed)

    def finish(self) -> None:
        self.flush()
        for call_id, state in self.calls.items():
            if state.key is None:
                self.b.warn(f"tool call {call_id!r} never completed; its last reported state is kept")
                self.emit(state, f"{state.source} (last state, never completed)")


def parse(path: Path, text: str, doc: Any = None) -> ParsedLog:
    """Parse an ACP session log; `doc` is unused (the format is line-based)."""
    p = _Parser(path)
    meta: dict[str, Any] = {}
    seen = 0
    for lineno, rec in iter_json_lines(path, text):
        src = f"line {lineno}"
        if not isinstance(rec, dict):
            raise LogError(f"{path} line {lineno}: expected a JSON object, got {type_name(rec)}")
        kind, update = _update(rec)
        if kind is None:
            p.b.warn(f"{src}: line without an update type, skipped")
            continue
        seen += 1
        if kind in _MESSAGE_KINDS or kind.removesuffix("_chunk") in _MESSAGE_KINDS:
            p.message(kind, update, src)
        elif kind in ("tool_call", "tool_call_update"):
            p.tool(update, src)
        elif kind == "plan":
            p.flush()
            entries = update.get("entries") if isinstance(update.get("entries"), list) else []
            lines = [f"[{e.get('status', '')}] {to_text(e.get('content'))}" for e in entries if isinstance(e, dict)]
            p.b.emit("agent_message", "\n".join(lines), src)
        else:
            p.flush()
            p.b.warn(f"{src}: update {kind!r} kept as system")
            p.b.emit("system", render_args({k: v for k, v in update.items() if k not in ("sessionUpdate", "type")}),
                     src)
        session = rec.get("params", {}).get("sessionId") if isinstance(rec.get("params"), dict) else None
        if session is not None:
            meta.setdefault("session_id", to_text(session))
    if not seen:
        raise LogError(f"{path}: no ACP session updates")
    p.finish()
    return p.b.finish(skills_offered=None, metadata=meta)
