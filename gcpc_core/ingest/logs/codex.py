"""Codex CLI `codex exec --json` logs (Harbor writes them to `agent/codex.txt`).

JSON lines, one thread event each: `thread.started` (`thread_id`), `turn.started`,
`turn.completed` (`usage`), `turn.failed` (`error.message`), `error` (`message`), and
`item.started` / `item.updated` / `item.completed` carrying an `item` with an `id` and a `type`:
`agent_message`, `reasoning`, `command_execution` (`command`, `aggregated_output`, `exit_code`,
`status`), `file_change` (`changes[{path, kind}]`, `status`), `mcp_tool_call` (`server`, `tool`,
`arguments`, `result.content`, `error`), `web_search` (`query`), `todo_list` (`items`) and
`error` (`message`).

An item is one step however many times it is reported: a command reported started, updated and
completed is one tool call (placed where it started) and one output (its final aggregated output).
Harbor pipes the CLI's stderr into the same file, so a line that is not JSON is kept as a `system`
event with a warning rather than failing the log.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._builder import EventBuilder
from ._io import loads, type_name
from ._render import join_parts, render_args, to_text
from .base import LogError, ParsedLog

__all__ = ["EVENT_TYPES", "is_record", "parse"]

EVENT_TYPES = frozenset({
    "thread.started", "turn.started", "turn.completed", "turn.failed", "item.started", "item.updated",
    "item.completed", "error",
})
_ITEM_EVENTS = ("item.started", "item.updated", "item.completed")
_TOOL_ITEMS = frozenset({"command_execution", "file_change", "mcp_tool_call", "web_search"})
_FAILED = frozenset({"failed", "declined", "error"})


def is_record(obj: Any) -> bool:
    """Whether a parsed line is a Codex thread event (the first one decides the format)."""
    kind = obj.get("type") if isinstance(obj, dict) else None
    return isinstance(kind, str) and kind in EVENT_TYPES and (kind != "error" or isinstance(obj.get("message"), str))


@dataclass
class _Item:
    """What is known of one item so far: its latest state and whether its call was emitted."""

    data: dict[str, Any]
    source: str
    call_key: str | None = None
    done: bool = False
    seen: list[str] = field(default_factory=list)


def _item_type(item: dict[str, Any]) -> str:
    kind = item.get("type", item.get("item_type"))  # early CLI versions said item_type
    return "agent_message" if kind == "assistant_message" else str(kind)


def _call(b: EventBuilder, item: dict[str, Any], kind: str, src: str, key: str) -> None:
    if kind == "command_execution":
        b.tool_call("shell", {"command": to_text(item.get("command") or "")}, src, key=key)
    elif kind == "file_change":
        changes = item.get("changes") if isinstance(item.get("changes"), list) else []
        lines = [f"{c.get('kind', 'change')}: {c.get('path')}" for c in changes if isinstance(c, dict)]
        b.tool_call("apply_patch", "\n".join(lines) or render_args(item.get("changes")), src, key=key)
    elif kind == "mcp_tool_call":
        name = str(item.get("tool") or "unknown")
        b.tool_call(name, item.get("arguments") if item.get("arguments") is not None else {}, src, key=key,
                    args_label="arguments")
    else:  # web_search
        b.tool_call("web_search", {"query": to_text(item.get("query") or "")}, src, key=key)


def _mcp_output(item: dict[str, Any]) -> tuple[str, bool]:
    error = item.get("error")
    if isinstance(error, dict) and error.get("message") is not None:
        return to_text(error["message"]), True
    if error:
        return to_text(error), True
    result = item.get("result") if isinstance(item.get("result"), dict) else {}
    content = result.get("content")
    if content:
        return join_parts(content), False
    if result.get("structured_content") is not None:
        return render_args(result["structured_content"]), False
    return "", item.get("status") in _FAILED


def _output(b: EventBuilder, item: dict[str, Any], kind: str, src: str, key: str) -> None:
    status = item.get("status")
    if kind == "command_execution":
        code = item.get("exit_code")
        failed = status in _FAILED or (isinstance(code, int) and not isinstance(code, bool) and code != 0)
        b.tool_result(key, to_text(item.get("aggregated_output") or ""), src, is_error=failed)
    elif kind == "file_change":
        b.tool_result(key, f"patch {status or 'applied'}", src, is_error=status in _FAILED)
    elif kind == "mcp_tool_call":
        text, failed = _mcp_output(item)
        b.tool_result(key, text, src, is_error=failed)
    # web_search items carry the query only: the results reach the model, not the log


def _todo(item: dict[str, Any]) -> str:
    entries = item.get("items") if isinstance(item.get("items"), list) else []
    return "\n".join(f"[{'x' if isinstance(e, dict) and e.get('completed') else ' '}] "
                     f"{to_text(e.get('text')) if isinstance(e, dict) else to_text(e)}" for e in entries)


def _finish_item(b: EventBuilder, state: _Item, src: str) -> None:
    """Emit a completed item: narration and thinking whole, a tool's call (if not yet) and output."""
    item = state.data
    kind = _item_type(item)
    if kind in _TOOL_ITEMS:
        if state.call_key is None:
            state.call_key = f"{src}:{item.get('id')}"
            _call(b, item, kind, state.source, state.call_key)
        _output(b, item, kind, src, state.call_key)
    elif kind == "agent_message":
        if to_text(item.get("text") or "").strip():
            b.emit("agent_message", to_text(item["text"]), src)
    elif kind == "reasoning":
        if to_text(item.get("text") or "").strip():
            b.emit("agent_thinking", to_text(item["text"]), src)
    elif kind == "todo_list":
        b.emit("agent_message", _todo(item), src)
    elif kind == "error":
        b.emit("system", to_text(item.get("message") or render_args(item)), src, is_error=True)
    else:
        b.warn(f"{src}: unknown item type {kind!r}, kept as system")
        b.emit("system", render_args(item), src)
    state.done = True


def _usage(meta: dict[str, Any], usage: Any) -> None:
    if not isinstance(usage, dict):
        return
    total = meta.setdefault("usage", {})
    for key, value in usage.items():
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            total[key] = total.get(key, 0) + value


def _lines(path: Path, text: str) -> list[tuple[int, Any]]:
    """(line number, decoded JSON or the raw line when it is not JSON) for every non-blank line."""
    out: list[tuple[int, Any]] = []
    for i, line in enumerate(text.split("\n"), 1):
        if not line or line.isspace():
            continue
        try:
            out.append((i, loads(line)))
        except ValueError:
            out.append((i, line))
        except RecursionError:
            raise LogError(f"{path} line {i}: JSON nested too deeply") from None
    return out


def parse(path: Path, text: str, doc: Any = None) -> ParsedLog:
    """Parse a `codex exec --json` log; `doc` is unused (the format is line-based)."""
    b = EventBuilder("codex", path)
    meta: dict[str, Any] = {"agent": "codex"}
    items: dict[str, _Item] = {}
    seen = 0
    for lineno, rec in _lines(path, text):
        src = f"line {lineno}"
        if isinstance(rec, str):
            b.warn(f"{src}: not JSON (harness output), kept as system")
            b.emit("system", rec, src)
            continue
        if not isinstance(rec, dict):
            raise LogError(f"{path} line {lineno}: expected a JSON object, got {type_name(rec)}")
        kind = rec.get("type")
        if not isinstance(kind, str) or kind not in EVENT_TYPES:
            b.warn(f"{src}: skipped event of unknown type {kind!r}")
            continue
        seen += 1
        if kind == "thread.started":
            if rec.get("thread_id") is not None:
                meta["session_id"] = to_text(rec["thread_id"])
        elif kind == "turn.completed":
            _usage(meta, rec.get("usage"))
            meta["turns"] = meta.get("turns", 0) + 1
        elif kind == "turn.failed":
            error = rec.get("error")
            message = error.get("message") if isinstance(error, dict) else error
            b.emit("system", f"turn failed: {to_text(message)}", src, is_error=True)
        elif kind == "error":
            b.emit("system", to_text(rec.get("message")), src, is_error=True)
        elif kind in _ITEM_EVENTS:
            item = rec.get("item")
            if not isinstance(item, dict):
                raise LogError(f"{path} line {lineno}: {kind} without an item object (got {type_name(item)})")
            item_id = to_text(item.get("id")) if item.get("id") is not None else src
            state = items.get(item_id)
            if state is None or state.done:  # a reused id after completion is a new step
                state = items[item_id] = _Item(dict(item), src)
            else:
                state.data.update(item)
            state.seen.append(kind)
            item_kind = _item_type(state.data)
            if kind == "item.completed":
                _finish_item(b, state, src)
            elif kind == "item.started" and item_kind in _TOOL_ITEMS and state.call_key is None:
                state.call_key = f"{src}:{item_id}"
                _call(b, state.data, item_kind, src, state.call_key)
    if not seen:
        raise LogError(f"{path}: no Codex events (no line has type thread.started/turn.*/item.*/error)")
    for item_id, state in items.items():
        if not state.done:
            b.warn(f"item {item_id!r} ({_item_type(state.data)}) never completed; its last reported state is kept")
            _finish_item(b, state, f"{state.source} (last state, never completed)")
    return b.finish(skills_offered=None, metadata=meta)
