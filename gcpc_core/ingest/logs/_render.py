"""Turning harness JSON (tool arguments, content parts) into plain, quotable text.

Judges cite verbatim spans of event text, so tool input must read as the input itself:
no JSON envelope, no escaped newlines. Multi-line values stay verbatim.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["join_parts", "render_args", "to_text"]

_IMAGE_PARTS = frozenset({"image", "image_url", "input_image"})


def to_text(value: Any) -> str:
    """A scalar as text: strings verbatim, anything else as compact JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def _inline(value: Any) -> bool:
    return not isinstance(value, (dict, list)) and not (isinstance(value, str) and "\n" in value)


def _flatten(prefix: str, value: Any, out: list[str]) -> None:
    if isinstance(value, dict) and value:
        for key, sub in value.items():
            _flatten(f"{prefix}.{key}" if prefix else str(key), sub, out)
    elif isinstance(value, list) and value and not all(_inline(x) for x in value):
        for i, sub in enumerate(value):
            _flatten(f"{prefix}[{i}]", sub, out)
    else:
        out.append(f"{prefix}: {to_text(value)}" if prefix else to_text(value))


def render_args(args: Any) -> str:
    """Tool arguments as `key: value` lines; nested values get dotted / indexed keys
    (`edits[0].new_string: ...`) so long strings are never JSON-escaped."""
    if args is None:
        return ""
    if isinstance(args, str):
        return args
    if isinstance(args, dict) and not args:
        return ""
    out: list[str] = []
    _flatten("", args, out)
    return "\n".join(out)


def _image(part: dict[str, Any]) -> str:
    """A placeholder for an image part, naming its file when the log stores one (ATIF v1.6+ `source.path`)."""
    source = part.get("source")
    path = source.get("path") if isinstance(source, dict) else None
    return f"[image {path} omitted]" if isinstance(path, str) and path else "[image omitted]"


def join_parts(content: Any) -> str:
    """Message or tool-result content as text: a string, or a list of parts whose text parts are
    joined with newlines; images and other non-text parts become a visible placeholder."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        content = [content]
    if not isinstance(content, list):
        return to_text(content)
    pieces: list[str] = []
    for part in content:
        if isinstance(part, str):
            pieces.append(part)
        elif isinstance(part, dict):
            kind = part.get("type")
            text = part.get("text")
            if (kind == "text" or kind is None) and isinstance(text, str):
                pieces.append(text)
            elif kind in _IMAGE_PARTS:
                pieces.append(_image(part))
            else:
                pieces.append(f"[{kind or 'non-text'} part omitted]")
        else:
            pieces.append(to_text(part))
    return "\n".join(pieces)
