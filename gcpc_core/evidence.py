"""Evidence view: what a judge (and an auditor) may see and cite of a trajectory.

Only tool calls, tool outputs and file contents are evidence — an agent's
narration or thinking is a claim, not evidence. Long outputs stay whole in the
DB and are windowed here with an explicit marker saying what was cut; repeated
identical reads are collapsed to a pointer. Citations are checked against the
full stored text, so nothing windowed is lost to grounding.

Two things in the view are not what they seem and are marked so:
- a tool output that only echoes text of its own command (`echo '… PASSED'`, a `cat <<EOF`
  heredoc, a constant `print`) is the agent's claim, not evidence (`EvidenceEntry.claim`,
  `echoes_command`); judges are told, probes skip it and grounding refuses citations of it;
- a tool call marked `is_error` is a failed attempt (a write whose result was an error).

`render` frames every event so that no text of the log can pass for framing: a header line,
then the body in a fence of backticks longer than any backtick run in the body. A line of the
body that looks like a header, a fence or an end of the evidence is inside the fence, and the
fence cannot be closed from inside it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from .models import Event

__all__ = [
    "CITABLE_KINDS",
    "EVIDENCE_KINDS",
    "EvidenceEntry",
    "EvidenceView",
    "build_evidence_view",
    "echoes_command",
    "fence",
    "heredoc_written",
    "evidence_share",
    "normalize_ws",
    "quote_occurs",
]

EVIDENCE_KINDS = frozenset({"tool_call", "tool_output", "file_content"})
CITABLE_KINDS = frozenset({"tool_output", "file_content"})
"""Kinds whose text shows what happened; a tool call's text shows only what was attempted."""
MIN_ECHO_CHARS = 8
"""An output shorter than this (non-space characters) is an echo only of a bare `echo`/`printf`:
short lines ("1", "ok") occur in commands by chance."""
DEFAULT_WINDOW_CHARS = 6000
"""Outputs longer than this are shown as head + marker + tail."""
MIN_COLLAPSE_CHARS = 80
"""Identical texts shorter than this are cheap to repeat and clearer left in place."""

_WS = re.compile(r"\s+")


def normalize_ws(text: str) -> str:
    """Collapse every run of whitespace to one space: quotes are compared modulo layout."""
    return _WS.sub(" ", text).strip()


def quote_occurs(quote: str, text: str) -> bool:
    """The grounding primitive: is `quote` a verbatim (whitespace-normalized) span of `text`?"""
    q = normalize_ws(quote)
    return bool(q) and q in normalize_ws(text)


_HEREDOC = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_]\w*)\1")
_TO_FILE = re.compile(r"(?<![<>&\d])>>?\s*(?!&)[^\s|;&]|\btee\b")
"""A heredoc line that sends the body to a file (`cat > f <<EOF`, `tee f <<EOF`): the body is file
content, so an output that shows it later (a read-back) is not an echo of the command."""
_PRINTS = re.compile(r"\b(?:echo|printf|print|puts|cat|console\.log|Write-Output)\b|<<")
_BARE_ECHO = re.compile(r"\A\s*(?:echo|printf)\b[^|;&<>`$\n]*\Z")


def _heredocs(command: str) -> tuple[str, str]:
    """(the command's text that it could print verbatim, the heredoc bodies it sends to files)."""
    printed: list[str] = []
    written: list[str] = []
    lines = command.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        printed.append(line)
        i += 1
        for m in _HEREDOC.finditer(line):
            body_start = i
            while i < len(lines) and lines[i].strip() != m.group(2):
                i += 1
            (written if _TO_FILE.search(line) else printed).extend(lines[body_start:i])
            i += 1  # the delimiter line
    return "\n".join(printed), "\n".join(written)


def heredoc_written(command: str) -> str:
    """The text a shell command writes to files through heredocs (`cat > f <<EOF … EOF`): file
    content in a command, citable as what was written when the command did not fail."""
    return _heredocs(command)[1]


def echoes_command(output: str, command: str) -> bool:
    """Whether a tool output is only text of its own command (the agent's claim, not evidence).

    True when every non-blank output line appears verbatim in the command (heredoc bodies sent to
    a file excepted) and the command prints text it carries (`echo`, `printf`, `print`, `cat <<`,
    …); an output under `MIN_ECHO_CHARS` counts only for a bare `echo`/`printf` command. So
    `ls /root/a.txt` printing `/root/a.txt`, or `cat a.txt` whose content shares words with the
    command, is real output.
    """
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    if not lines or not _PRINTS.search(command):
        return False
    source = _heredocs(command)[0]
    if not all(line in source for line in lines):
        return False
    return sum(len(line.replace(" ", "")) for line in lines) >= MIN_ECHO_CHARS or bool(_BARE_ECHO.match(command))


def fence(text: str) -> str:
    """A run of backticks longer than any in `text` (at least three): a fence `text` cannot close."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)


def _cut_at_newline(text: str, limit: int, *, from_end: bool = False) -> str:
    """Up to `limit` chars of the head (or tail), ending on a line boundary when one is near."""
    if from_end:
        piece = text[-limit:]
        nl = piece.find("\n")
        return piece[nl + 1 :] if 0 <= nl < limit // 4 else piece
    piece = text[:limit]
    nl = piece.rfind("\n")
    return piece[: nl + 1] if nl > limit * 3 // 4 else piece


def _window(event: Event, window_chars: int) -> tuple[str, int]:
    """The shown text and how many characters it leaves out."""
    text = event.text
    if len(text) <= window_chars:
        return text, 0
    head = _cut_at_newline(text, window_chars * 2 // 3)
    tail = _cut_at_newline(text, window_chars // 3, from_end=True)
    cut_start, cut_end = len(head), len(text) - len(tail)
    first_line = text.count("\n", 0, cut_start) + 1
    last_line = text.count("\n", 0, cut_end) + 1
    total_lines = text.count("\n") + 1
    marker = (
        f"\n⟦gcpc: {cut_end - cut_start:,} chars elided here (lines {first_line:,}–{last_line:,} "
        f"of {total_lines:,}); the full text of {event.id} is stored and citable⟧\n"
    )
    return head + marker + tail, cut_end - cut_start


@dataclass(frozen=True)
class EvidenceEntry:
    """One evidence event as shown: possibly windowed, possibly a pointer to an identical earlier one."""

    event: Event
    shown: str
    elided_chars: int = 0
    duplicate_of: str | None = None
    claim: bool = False
    """A tool output that only echoes its own command's text: the agent's claim, not evidence."""

    @property
    def header(self) -> str:
        """The event's header line: id, kind, tool, path, the call it answers, its error flag and
        body length, and what it is when it is not evidence."""
        e = self.event
        label = " · ".join(x for x in (e.id, e.kind, e.tool_name, e.path) if x)
        if e.call_id:
            label += f" (output of {e.call_id})"
        label += f" · is_error: {'true' if e.is_error else 'false'}"
        if e.kind == "tool_call" and e.is_error:
            label += " (failed attempt: its result was an error; what it would write was not written)"
        if self.claim:
            label += " · agent's claim: only echoes its own command's text, not evidence"
        return f"### {label} · {len(self.shown):,} chars"

    def framed(self) -> str:
        """Header, then the body in a fence it cannot close."""
        mark = fence(self.shown)
        return f"{self.header}\n{mark}\n{self.shown}\n{mark}"


@dataclass
class EvidenceView:
    """The ordered evidence of one trajectory, with the lookups grounding needs."""

    entries: list[EvidenceEntry]
    _by_id: dict[str, Event] = field(default_factory=dict, repr=False)
    _normalized: dict[str, str] = field(default_factory=dict, repr=False)
    _claims: frozenset[str] = field(default_factory=frozenset, repr=False)
    _failed: frozenset[str] = field(default_factory=frozenset, repr=False)

    def __post_init__(self) -> None:
        self._by_id = {e.event.id: e.event for e in self.entries}
        self._claims = frozenset(e.event.id for e in self.entries if e.claim)
        self._failed = frozenset(
            (e.event.call_id if e.event.kind != "tool_call" else e.event.id) or ""
            for e in self.entries if e.event.is_error
        )

    def call_failed(self, call_id: str) -> bool:
        """Whether the tool call `call_id` failed: it is marked `is_error`, or an output of it is."""
        return call_id in self._failed

    def get(self, event_id: str) -> Event | None:
        """The full event behind an id, if it is part of the evidence view."""
        return self._by_id.get(event_id)

    def is_claim(self, event_id: str) -> bool:
        """Whether the event is a tool output that only echoes its own command (see `echoes_command`)."""
        return event_id in self._claims

    def call_text(self, event: Event) -> str:
        """The text of the tool call that produced `event` ("" when it has none in the view)."""
        call = self._by_id.get(event.call_id) if event.call_id else None
        return call.text if call is not None else ""

    def _norm(self, event_id: str) -> str:
        cached = self._normalized.get(event_id)
        if cached is None:
            cached = self._normalized[event_id] = normalize_ws(self._by_id[event_id].text)
        return cached

    def quote_in_event(self, event_id: str, quote: str) -> bool:
        """True when `quote` is a verbatim span of evidence event `event_id` (narration never is)."""
        if event_id not in self._by_id:
            return False
        q = normalize_ws(quote)
        return bool(q) and q in self._norm(event_id)

    def render(self) -> str:
        """The view as plain text for a judge prompt: each event framed (`EvidenceEntry.framed`)."""
        return "\n\n".join(entry.framed() for entry in self.entries)

    @property
    def shown_chars(self) -> int:
        return sum(len(e.shown) for e in self.entries)


def build_evidence_view(
    events: Iterable[Event], *, window_chars: int = DEFAULT_WINDOW_CHARS
) -> EvidenceView:
    """Keep tool I/O and file contents in order, window long texts, collapse repeated reads, mark
    outputs that only echo their command."""
    entries: list[EvidenceEntry] = []
    seen: dict[tuple[str, str | None, str], str] = {}
    calls: dict[str, str] = {}
    for event in events:
        if event.kind not in EVIDENCE_KINDS:
            continue
        if event.kind == "tool_call":
            calls[event.id] = event.text
        claim = (event.kind == "tool_output" and event.call_id in calls
                 and echoes_command(event.text, calls[event.call_id]))
        key = (event.kind, event.path, event.text)
        earlier = seen.get(key) if len(event.text) >= MIN_COLLAPSE_CHARS else None
        if earlier is not None and event.kind != "tool_call":
            entries.append(
                EvidenceEntry(event, f"⟦gcpc: identical to {earlier}; not repeated⟧", duplicate_of=earlier,
                              claim=claim)
            )
            continue
        seen.setdefault(key, event.id)
        shown, elided = _window(event, window_chars)
        entries.append(EvidenceEntry(event, shown, elided_chars=elided, claim=claim))
    return EvidenceView(entries)


def evidence_share(events: Sequence[Event], raw_chars: int) -> float:
    """Characters a judge sees, relative to the raw log: the evidence view's compression."""
    return build_evidence_view(events).shown_chars / raw_chars if raw_chars else 0.0
