"""Rater guidelines: the ordinal scale and its anchors, read from `rules/study_guidelines.md`.

The file is human-written and versioned with the other rules; a study freezes the parsed anchors and
the full text when it is created, so later edits to the file never change a running study. Raters read
the whole file (the rate page's Guidelines dialog): it is written for them and names no code or file.

A study's guidelines can also come from elsewhere (a design record that `study import` read), so they are
shown only through `safe_markdown`: headings, list items, bold and inline code keep their look, and the
rest goes through `gcpc_core.text.md_escape` like every other data value the app shows as Markdown: a word
holding an address is shown as code (the browser's Markdown links an address even when its characters are
escaped) and every other character is escaped, so no link, image, HTML or colour directive in the text can make a
rater's browser fetch anything or show something to click.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from gcpc_core.text import md_escape, show_invisible

__all__ = ["GUIDELINES_MAX_CHARS", "GUIDELINES_PATH", "Anchor", "Guidelines", "GuidelinesError", "load_guidelines",
           "parse_guidelines", "safe_markdown"]

GUIDELINES_PATH = Path(__file__).resolve().parents[1] / "rules" / "study_guidelines.md"

_SECTION = re.compile(r"^##\s+(.+?)\s*$", re.M)
_ANCHOR = re.compile(r"^\s*[-*]\s+\*\*(\d+)\s*[·:.\-–—]\s*(.+?)\*\*\s*[-–—:]\s*(.+?)\s*$")
_HEADING = re.compile(r"^(#{1,6})\s+(.*)$")
_ITEM = re.compile(r"^(\s*)(?:[-*+]|(\d{1,4})[.)])\s+(.*)$")
_BOLD = re.compile(r"\\\*\\\*(.+?)\\\*\\\*")
"""`**bold**` as `md_escape` leaves it: `\\*\\*bold\\*\\*`."""
_CODE = re.compile(r"`([^`\n]+)`")
"""An inline code span of the text, shown as code."""
GUIDELINES_MAX_CHARS = 100_000
"""Longest guidelines text a study accepts (the repository's file has about 4,000 characters)."""


class GuidelinesError(ValueError):
    """The guidelines file lacks a section or an anchor the app needs."""


class Anchor(BaseModel):
    """One point of an ordinal scale: its value, short label and anchored description."""

    model_config = ConfigDict(frozen=True)

    value: int
    label: str
    description: str


class Guidelines(BaseModel):
    """What raters read and what their answers are validated against."""

    model_config = ConfigDict(frozen=True)

    text: str
    sha: str
    scale: tuple[Anchor, ...]
    confidence: tuple[Anchor, ...]

    @property
    def scale_values(self) -> tuple[int, ...]:
        return tuple(a.value for a in self.scale)

    @property
    def confidence_values(self) -> tuple[int, ...]:
        return tuple(a.value for a in self.confidence)


def _section(text: str, title: str) -> str:
    heads = list(_SECTION.finditer(text))
    for i, head in enumerate(heads):
        if head.group(1).strip().lower() == title.lower():
            end = heads[i + 1].start() if i + 1 < len(heads) else len(text)
            return text[head.end() : end]
    raise GuidelinesError(f"guidelines have no '## {title}' section")


def _anchors(section: str, title: str) -> tuple[Anchor, ...]:
    anchors = tuple(
        Anchor(value=int(m.group(1)), label=m.group(2).strip(), description=m.group(3).strip())
        for m in map(_ANCHOR.match, section.splitlines())
        if m
    )
    values = [a.value for a in anchors]
    if len(values) < 2 or values != list(range(values[0], values[0] + len(values))):
        raise GuidelinesError(f"'{title}' needs consecutive anchors like '- **1 · Label** — description'")
    return anchors


def parse_guidelines(text: str) -> Guidelines:
    """Parse the anchors of the progress scale and the confidence scale out of the markdown."""
    return Guidelines(
        text=text,
        sha=hashlib.sha256(text.encode()).hexdigest(),
        scale=_anchors(_section(text, "Progress scale"), "Progress scale"),
        confidence=_anchors(_section(text, "Confidence"), "Confidence"),
    )


def load_guidelines(path: str | Path | None = None) -> Guidelines:
    """The repository's `rules/study_guidelines.md`, or another guidelines file."""
    return parse_guidelines(Path(path or GUIDELINES_PATH).read_text(encoding="utf-8"))


def _escaped(part: str) -> str:
    """Text between literals, escaped with its bold let through; a space at either end is kept (`md_escape`
    collapses whitespace)."""
    if not part.strip():
        return " " if part else ""
    body = _BOLD.sub(r"**\1**", md_escape(part, limit=len(part) + 1))
    return (" " if part[0].isspace() else "") + body + (" " if part[-1].isspace() else "")


def _inline(text: str) -> str:
    """One line's text escaped with its bold let through, and its inline code shown as code. An address
    becomes a code span in `md_escape`: the browser's Markdown links it even when its characters are
    escaped, never in code."""
    out, at = [], 0
    for m in _CODE.finditer(text):
        out += [_escaped(text[at : m.start()]), f"`{show_invisible(m.group(1))}`"]
        at = m.end()
    out.append(_escaped(text[at:]))
    return "".join(out)


def safe_markdown(text: str) -> str:
    """Guidelines text as Markdown that shows its headings, lists, bold and inline code and nothing live:
    every other Markdown, HTML or directive character is escaped (`md_escape`), and `.` and `:` with them,
    and addresses are shown as code, so that none is autolinked. Blank lines keep paragraphs apart."""
    out = []
    for line in text.splitlines():
        if heading := _HEADING.match(line):
            out.append(f"{heading.group(1)} {_inline(heading.group(2))}")
        elif item := _ITEM.match(line):
            indent = "  " * (len(item.group(1).expandtabs(4)) // 2)
            out.append(f"{indent}{item.group(2) + '.' if item.group(2) else '-'} {_inline(item.group(3))}")
        else:
            out.append(_inline(line) if line.strip() else "")
    return "\n".join(out)
