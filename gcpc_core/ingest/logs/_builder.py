"""The one place that numbers events, links outputs to their calls and spots skill use.

Every format parser feeds harness records through `EventBuilder`, so ids (`E1`..`En`),
call linking (harness call id -> event id of the tool call), the read/write tool rules and
skill detection behave identically across formats.

A write is file content only once its result says it happened: the text a `Write` / `Edit`
call carries becomes a `file_content` event when the call is answered without an error. A write
answered with an error (EACCES, "String to replace not found") stays a tool call, marked
`is_error`, with the text it tried to write back in its call text, and no `file_content` is
made; a write never answered is kept the same way, unmarked, with a warning. The event ids of
a log are numbered after this, so they stay dense and stable.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from operator import attrgetter
from pathlib import Path
from typing import Any

from ...models import EVENT_KINDS, EventKind, LogFormat
from ._io import loads
from ._render import render_args
from .base import EVENT_FIELDS, EventFieldValues, ParsedLog, validate_events

__all__ = ["READ_TOOLS", "SHELL_TOOLS", "EventBuilder"]

SHELL_TOOLS = frozenset(
    {"Bash", "bash", "shell", "run_shell_command", "execute_bash", "execute_command", "run_command", "terminal",
     "bash_command"}
)
"""Tools whose call text is just the command (`command`, or terminus-2's `keystrokes`)."""
_COMMAND_KEYS = ("command", "keystrokes")
READ_TOOLS = frozenset({"Read", "read_file", "NotebookRead"})
"""Tools whose (non-error) results are file contents rather than tool output."""
_PATH_KEYS = ("file_path", "absolute_path", "notebook_path", "path")
_PATH_KEY_SET = frozenset(_PATH_KEYS)
_WRITES: dict[str, tuple[str, bool]] = {
    "Write": ("content", True),
    "write_file": ("content", True),
    "Edit": ("new_string", False),
    "replace": ("new_string", False),
    "NotebookEdit": ("new_source", False),
}
"""Tool -> (argument holding written text, whether that text moves out of the call text)."""
_SKILL_TOOLS = {
    "Skill": ("skill", "command"),
    "activate_skill": ("name", "skill"),
    "load_skill": ("load_skill", "name", "skill"),
    "skill": ("name", "skill"),
}
"""Skill-activating tools -> argument keys that may hold the skill name, in preference order."""
_SKILL_MD = re.compile(r"/skills?/([^/\s'\"`]+)/SKILL\.md")
_SKILL_DIR = re.compile(r"/skills?/([A-Za-z0-9][\w.-]*)/")


_ID, _SEQ, _KIND, _TEXT, _TOOL, _CALL, _PATH, _ERROR, _SOURCE = range(len(EVENT_FIELDS))
"""Positions in an event's values (`EVENT_FIELDS`): the order `emit` appends them in."""
_NONE = type(None)
_TYPES = ((_ID, {str}), (_SEQ, {int}), (_TEXT, {str}), (_TOOL, {str, _NONE}), (_CALL, {str, _NONE}),
          (_PATH, {str, _NONE}), (_ERROR, {bool}), (_SOURCE, {str}))
"""Position -> the types `Event` holds there. A value of exactly one of these types is one that
validating an `Event` keeps as it is (`kind` is checked against `EVENT_KINDS` instead)."""
_KINDS = frozenset(EVENT_KINDS)
_VALUES = attrgetter(*EVENT_FIELDS)


def _validated(events: list[list[Any]]) -> list[EventFieldValues]:
    """The events' values as validating an `Event` of each would give them, checked a column at a
    time: a set of types per column instead of a model per event, which cost more than decoding the
    log's JSON (bench/import_bench.py). Only when a parser let through a value of another type (a
    tool name that is a number) does pydantic validate them, to raise its own error or coerce the value
    as the models did."""
    values = list(map(tuple, events))
    if not values:
        return values
    columns = list(zip(*values))
    if set(columns[_KIND]) <= _KINDS and all(set(map(type, columns[i])) <= types for i, types in _TYPES):
        return values
    return [_VALUES(e) for e in validate_events(values)]


@dataclass(slots=True)
class _Call:
    event_id: str
    tool_name: str
    path: str | None
    index: int
    """Position of the call's event in the builder's list."""
    writes: list[int] = field(default_factory=list)
    """Positions of the `file_content` events made from the text the call writes, until it is answered."""
    attempted_text: str | None = None
    """The call text with the written text left in: what it shows when the write did not happen."""


def _first_str(args: dict[str, Any], keys: tuple[str, ...]) -> str | None:
    """The first of `keys` whose argument is a string."""
    for k in keys:
        value = args.get(k)
        if isinstance(value, str):
            return value
    return None


def _add_unique(items: list[str], value: str) -> None:
    if value and value not in items:
        items.append(value)


class EventBuilder:
    """Accumulates events for one log; `finish` turns them into a `ParsedLog`."""

    def __init__(self, fmt: LogFormat, path: Path) -> None:
        self.format: LogFormat = fmt
        self.path = path
        self._events: list[list[Any]] = []
        """Each event's values in `EVENT_FIELDS` order (lists: a settled call changes its own),
        checked all at once by `finish`."""
        self.skills_used: list[str] = []
        self.skills_referenced: list[str] = []
        self.warnings: list[str] = []
        self._calls: dict[str, _Call] = {}
        self._dropped: set[int] = set()
        """Positions of file contents of writes that did not happen, left out by `finish`."""
        self.last_call: str | None = None
        """Event id of the latest tool call, for formats that link outputs by position."""

    def warn(self, message: str) -> None:
        """Record a lenient repair, so nothing is changed or dropped silently."""
        self.warnings.append(message)

    def emit(
        self,
        kind: EventKind,
        text: str,
        source: str,
        *,
        tool_name: str | None = None,
        call_id: str | None = None,
        path: str | None = None,
        is_error: bool = False,
    ) -> str:
        """Append one event and return its id."""
        seq = len(self._events) + 1
        eid = f"E{seq}"
        self._events.append([eid, seq, kind, text, tool_name, call_id, path, is_error, source])
        return eid

    def has_call(self, key: str) -> bool:
        """Whether a tool call with this harness id was already emitted."""
        return key in self._calls

    def tool_call(self, tool_name: str | None, args: Any, source: str, *, key: str | None = None,
                  args_label: str = "input") -> str:
        """Emit a tool call (plus `file_content` for text it writes); register it under `key`.

        `args` may be a dict or a JSON string (decoded when it is a JSON object, else kept
        verbatim). Returns the call's event id.
        """
        name = tool_name or "unknown"
        # only text that starts with "{" (after whitespace) can decode to an object: a shell
        # command, most of what arrives as a string, is not handed to the decoder to fail
        if isinstance(args, str) and args.lstrip()[:1] == "{":
            try:
                decoded = loads(args)
            except ValueError:
                decoded = None
            if isinstance(decoded, dict):
                args = decoded
        argd = args if isinstance(args, dict) else {}
        has_path = not _PATH_KEY_SET.isdisjoint(argd)
        if has_path:  # path first: reads like "which file, then what"
            args = argd = {**{k: argd[k] for k in _PATH_KEYS if k in argd}, **argd}
        write = _WRITES.get(name)
        command = _first_str(argd, _COMMAND_KEYS) if name in SHELL_TOOLS else None
        if command is not None:
            text = command
        elif write and write[1] and isinstance(argd.get(write[0]), str):
            text = render_args({k: v for k, v in argd.items() if k != write[0]})
        else:
            text = render_args(args)
        eid = self.last_call = self.emit("tool_call", text, source, tool_name=name)
        path = _first_str(argd, _PATH_KEYS) if has_path else None
        call = self._calls[key if key is not None else eid] = _Call(eid, name, path, len(self._events) - 1)
        if write and isinstance(argd.get(write[0]), str):
            self._write(call, argd[write[0]], f"{source}, {args_label}.{write[0]}")
            if write[1]:
                call.attempted_text = render_args(args)
        elif name == "MultiEdit" and isinstance(argd.get("edits"), list):
            for i, edit in enumerate(argd["edits"]):
                if isinstance(edit, dict) and isinstance(edit.get("new_string"), str):
                    self._write(call, edit["new_string"], f"{source}, {args_label}.edits[{i}].new_string")
        self.note_skills(name, argd, text)
        return eid

    def _write(self, call: _Call, text: str, source: str) -> None:
        """The file content a write call carries, pending its answer (see `settle`)."""
        self.emit("file_content", text, source, tool_name=call.tool_name, call_id=call.event_id, path=call.path)
        call.writes.append(len(self._events) - 1)

    def settle(self, key: Any, *, failed: bool) -> None:
        """The call under `key` was answered: its writes happened, or (`failed`) they did not.

        `tool_result` settles a call itself; a format whose calls can finish without an output
        (an ACP call that only reports its status) calls this directly.
        """
        call = self._calls.get(key) if isinstance(key, str) else None
        if call is None or not call.writes:
            return
        if failed:
            self._void_writes(call)
            self._events[call.index][_ERROR] = True
        call.writes = []

    def failed_write(self, key: str, text: str, label: str) -> None:
        """A write the harness reports as failed (an ACP diff of a failed call): never file content;
        the call is marked `is_error` and shows the text it tried to write, under `label`."""
        call = self._calls[key]
        event = self._events[call.index]
        event[_ERROR] = True
        if text and text not in event[_TEXT]:
            event[_TEXT] = f"{event[_TEXT]}\n{label}: {text}" if event[_TEXT] else f"{label}: {text}"

    def _void_writes(self, call: _Call) -> None:
        """Leave out the file contents of a write that did not happen; the call shows what it tried."""
        self._dropped.update(call.writes)
        if call.attempted_text is not None:
            self._events[call.index][_TEXT] = call.attempted_text
        call.writes = []

    def tool_result(self, key: Any, text: str, source: str, *, is_error: bool = False, as_file: bool = False,
                    path: str | None = None) -> str:
        """Emit the output of the call registered under `key` (a harness id or an event id).

        Successful reads (or any output with `as_file`, e.g. a diff's new text) become
        `file_content` with the read path (`path`, else the call's); an error result of a write
        voids its file contents (`settle`); an unknown key still yields a `tool_output`
        (unlinked) plus a warning rather than losing the output.
        """
        call = self._calls.get(key) if isinstance(key, str) else None
        if call is None:
            self.warn(f"{source}: output for unknown tool call {key!r}, kept unlinked")
            return self.emit("tool_output", text, source, is_error=is_error)
        self.settle(key, failed=is_error)
        if (as_file or call.tool_name in READ_TOOLS) and not is_error:
            return self.emit("file_content", text, source, tool_name=call.tool_name,
                             call_id=call.event_id, path=path or call.path)
        return self.emit("tool_output", text, source, tool_name=call.tool_name,
                         call_id=call.event_id, is_error=is_error)

    def note_skill(self, name: str) -> None:
        """Record that the agent activated skill `name` (first use wins the order)."""
        words = name.strip().lstrip("/").split()
        if words:
            _add_unique(self.skills_used, words[0])

    def note_skills(self, name: str, args: dict[str, Any], text: str) -> None:
        """Skills a tool call activates (skill tools, SKILL.md reads) or refers to (skill dirs)."""
        for key in _SKILL_TOOLS.get(name, ()):
            value = args.get(key)
            if isinstance(value, str) and value.strip():
                self.note_skill(value)
                break
        if "/skill" not in text:  # what both patterns start with: most calls skip the regexes
            return
        if name in READ_TOOLS or name in SHELL_TOOLS:
            for m in _SKILL_MD.finditer(text):
                _add_unique(self.skills_used, m.group(1))
        for m in _SKILL_DIR.finditer(text):
            _add_unique(self.skills_referenced, m.group(1))

    def _renumber(self) -> None:
        kept = [e for i, e in enumerate(self._events) if i not in self._dropped]
        new_ids = {e[_ID]: f"E{n}" for n, e in enumerate(kept, 1)}
        for n, e in enumerate(kept, 1):
            e[_ID], e[_SEQ] = f"E{n}", n
            if e[_CALL] is not None:
                e[_CALL] = new_ids.get(e[_CALL], e[_CALL])
        self._events, self._dropped = kept, set()

    def finish(self, *, skills_offered: list[str] | None, metadata: dict[str, Any]) -> ParsedLog:
        """The parse result; adds `skills_referenced` and `warnings` to the metadata when non-empty.

        Writes never answered are kept as attempts (see the module docstring), and ids are
        renumbered when file contents of writes that did not happen were left out.
        """
        for call in self._calls.values():
            if call.writes:
                self.warn(f"{self._events[call.index][_SOURCE]}: {call.tool_name} call {call.event_id} was never "
                          f"answered; what it would write is kept in the call, not as file content")
                self._void_writes(call)
        if self._dropped:
            self._renumber()
        meta = dict(metadata)
        if self.skills_referenced:
            meta["skills_referenced"] = list(self.skills_referenced)
        if self.warnings:
            meta["warnings"] = list(self.warnings)
        return ParsedLog(
            format=self.format, path=self.path, event_values=_validated(self._events),
            skills_offered=skills_offered, skills_used=list(self.skills_used), metadata=meta,
        )
