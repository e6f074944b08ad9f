"""Reading log files safely: size, binary, encoding and JSON checks with precise locations.

Every check raises `LogError` naming the file and where the problem is (byte offset, line),
because importers report these messages to users verbatim.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from ..bounded import FileRefused, read_regular
from .base import LogError

__all__ = ["has_surrogate_escape", "iter_json_lines", "load_json_doc", "loads", "lone_surrogate", "read_head",
           "read_text", "type_name"]

_MB = 2**20
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_BEYOND_INT64 = 2.0**63
_DEEP = 200
"""Nesting beyond which the standard decoder decides (it refuses what Python code could not recurse into)."""


_CHECKED = frozenset({dict, list, float})


def _unlike_json(value: Any, depth: int = 0) -> bool:
    """Whether orjson's value may differ from the standard decoder's: a float that may be an integer
    literal beyond 64 bits (orjson rounds it), or nesting deeper than `_DEEP` (orjson accepts
    depths that later recursive code cannot handle, where the standard decoder refuses them).
    Strings, the bulk of a log, are skipped without a call."""
    t = type(value)
    if t is float:
        return abs(value) >= _BEYOND_INT64 and value.is_integer()
    if depth >= _DEEP:
        return True
    for v in value.values() if t is dict else value:
        if type(v) in _CHECKED and _unlike_json(v, depth + 1):
            return True
    return False


def loads(text: str) -> Any:
    """`json.loads`, decoded by orjson (several times faster on large logs) when it gives the same value.

    Anything orjson refuses (NaN, a lone surrogate escape, deep nesting, …) goes to the standard
    decoder, which accepts what it accepted before and raises its own, precise errors; so does a
    document orjson would decode differently (`_unlike_json`).
    """
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)
    return json.loads(text) if type(value) in _CHECKED and _unlike_json(value) else value


def has_surrogate_escape(text: str) -> bool:
    """Whether JSON text holds a `\\ud800`-style escape: only then can a decoded string hold a lone surrogate."""
    return _SURROGATE_ESCAPE.search(text) is not None


def lone_surrogate(text: str | None) -> str | None:
    """`U+DC80`-style name of the first lone UTF-16 surrogate in a decoded string, or None.

    JSON's `\\udc80` escapes allow one; UTF-8, and so the project DB, cannot hold it (the write would
    fail). Paired escapes decode to one character, so any surrogate left in a string is lone.
    """
    if not text or text.isascii():  # O(1): Python knows whether a string is ASCII
        return None
    try:
        text.encode("utf-8")  # refuses any surrogate, several times faster than the search below
        return None
    except UnicodeEncodeError:
        found = _LONE_SURROGATE.search(text)
    return f"U+{ord(found.group()):04X}" if found else None


def _size(n: int) -> str:
    return f"{n / _MB:.1f} MiB ({n} bytes)" if n >= _MB else f"{n} bytes"


def type_name(value: Any) -> str:
    """JSON-ish name of a value's type, for wrong-shape messages."""
    if value is None:
        return "null"
    names = {dict: "object", list: "array", str: "string", bool: "boolean", int: "number", float: "number"}
    return names.get(type(value), type(value).__name__)


def _check_bytes(path: Path, data: bytes, *, empty_ok: bool = False) -> str:
    if not empty_ok and (not data or data.isspace()):
        raise LogError(f"{path}: empty file")
    nul = data.find(b"\x00")
    if nul >= 0:
        raise LogError(f"{path}: binary file (NUL byte at byte offset {nul})")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        bad = data[exc.start : exc.start + 1].hex()
        raise LogError(f"{path}: not UTF-8 (invalid byte 0x{bad} at byte offset {exc.start})") from None
    return text[1:] if text.startswith("\ufeff") else text


def read_text(path: Path, max_bytes: int) -> str:
    """The whole file as text, after the regular-file, size, emptiness, NUL-byte and UTF-8 checks."""
    try:
        data = read_regular(path, max_bytes, what="an agent log")
    except FileRefused as exc:
        raise LogError(str(exc)) from None
    return _check_bytes(path, data)


def read_head(path: Path, n: int = 1 << 16) -> tuple[str, bool]:
    """The first `n` bytes as text and whether that is the whole file.

    Used for cheap format sniffing, so a 20 MB log is not read twice just to pick a parser.
    """
    try:
        data = read_regular(path, None, head=n + 1)
    except FileRefused as exc:
        raise LogError(str(exc)) from None
    complete = len(data) <= n
    if complete:
        return _check_bytes(path, data), True
    data = data[:n]
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:  # a multi-byte character cut at the boundary is not bad UTF-8
        if exc.reason == "unexpected end of data":
            data = data[: exc.start]
    return _check_bytes(path, data, empty_ok=True), False


def _json_error(exc: json.JSONDecodeError, doc: str) -> str:
    truncated = exc.pos >= len(doc.rstrip()) or exc.msg.startswith("Unterminated")
    what = "truncated JSON" if truncated else "invalid JSON"
    return f"{what} ({exc.msg}: column {exc.colno})"


def iter_json_lines(path: Path, text: str) -> Iterator[tuple[int, Any]]:
    """(1-based line number, parsed value) for every non-blank line of a JSON-lines text.

    Splits on "\\n" only: `str.splitlines` would also split on U+2028 and friends, which may
    legally appear raw inside JSON strings.
    """
    for i, line in enumerate(text.split("\n"), 1):
        if not line or line.isspace():
            continue
        try:
            yield i, loads(line)
        except json.JSONDecodeError as exc:
            raise LogError(f"{path} line {i}: {_json_error(exc, line)}") from None
        except RecursionError:
            raise LogError(f"{path} line {i}: JSON nested too deeply") from None


def load_json_doc(path: Path, text: str) -> Any:
    """The file parsed as one JSON document; errors give line and column."""
    try:
        return loads(text)
    except json.JSONDecodeError as exc:
        raise LogError(f"{path} line {exc.lineno}: {_json_error(exc, text)}") from None
    except RecursionError:
        raise LogError(f"{path}: JSON nested too deeply") from None
