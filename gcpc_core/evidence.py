"""Evidence view: what a judge (and an auditor) may see and cite of a trajectory.

Only tool calls, tool outputs and file contents are evidence — an agent's
narration or thinking is a claim, not evidence. Long outputs stay whole in the
DB and are windowed here; repeated identical reads are collapsed to a pointer.
Citations are checked against the full stored text, so nothing windowed is lost
to grounding.

Windowing is item-aware: given the `Focus` of the items being judged (their literals, the
literals of the verifier tests they cite, their probes), a long text keeps every probe match,
a little head and tail, then the lines naming focus terms (each term's latest occurrences
first, with context), then more head and tail. Boilerplate (a skill's text, web search results,
an install's output) that names nothing in focus gets a short window. Every cut is one marker
of one form, `⟦gcpc cut: lines a–b of n (c chars) of E12 (/path); …⟧` (`cut_marker`); a
harness's own truncation notice in a text is flagged in its header, since the log holds no more.

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
from bisect import bisect_right
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property, lru_cache

from .models import Event

__all__ = [
    "CITABLE_KINDS",
    "CUT_OPEN",
    "EVIDENCE_KINDS",
    "EvidenceEntry",
    "EvidenceView",
    "Focus",
    "Gap",
    "build_evidence_view",
    "cut_marker",
    "echoes_command",
    "fence",
    "harness_cut",
    "is_boilerplate",
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
"""Outputs longer than this are windowed (`_window`): probe matches, head, tail and the lines
naming what the items name are kept; each cut is one `cut_marker`."""
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
    if "`" not in text:  # most texts: no scan for runs
        return "```"
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)


CUT_OPEN = "⟦gcpc cut: "
"""How every marker of text GCPC left out of a judge's view begins (inside an event's text, or
between events): one form, explained in the judge's prompt (`judge.prompts.EVIDENCE_BLOCK`)."""


def cut_marker(what: str) -> str:
    """The one truncation marker: `⟦gcpc cut: <what was cut>⟧`."""
    return f"{CUT_OPEN}{what}⟧"


def _alternation(terms: Sequence[str]) -> str:
    """A regex matching any of `terms` literally, the first listed winning where several match."""
    return "|".join(re.escape(t) for t in terms)


@lru_cache(maxsize=4096)
def _terms_pattern(terms: tuple[str, ...]) -> re.Pattern[str]:
    """The compiled alternation of `terms` (lower-cased, in `Focus` order): the texts of a run name
    few distinct sets of terms, so each is compiled once."""
    return re.compile(_alternation(terms))


@dataclass(frozen=True)
class Focus:
    """What the items being judged name: the text a windowed view keeps first.

    `terms` are literals (paths, file names, values, identifiers; from the items and from the
    verifier tests they cite), matched case-insensitively; `patterns` are the items' probes, whose
    matches are never cut. Built by `judge.focus.focus_for`; empty means plain head-and-tail windows.
    """

    terms: tuple[str, ...] = ()
    patterns: tuple[re.Pattern[str], ...] = ()
    items: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = ()
    """Per item: (its own literals, the literals of the tests it cites), for `deciding`."""

    def __bool__(self) -> bool:
        return bool(self.terms or self.patterns)

    @cached_property
    def _item_focus(self) -> list[tuple[Focus, Focus]]:
        return [(Focus(terms=own), Focus(terms=cited)) for own, cited in self.items]

    def deciding(self, texts: Sequence[str]) -> list[tuple[int, Focus] | None]:
        """Per item, the text that decides it and the terms it names there: the latest text naming
        one of the item's own literals, else the latest naming a literal of a test it cites (None:
        no text names either)."""
        out: list[tuple[int, Focus] | None] = []
        for own, cited in self._item_focus:
            found = None
            for group in (own, cited):
                if group.terms:
                    index = next((i for i in range(len(texts) - 1, -1, -1) if group.term_hits(texts[i])), None)
                    found = None if index is None else (index, group)
                if found is not None:
                    break
            out.append(found)
        return out

    @cached_property
    def _ordered_terms(self) -> tuple[str, ...]:
        """The terms lower-cased, longest first: the order of the alternation, so that of two terms
        matching at one place the longer wins."""
        return tuple(sorted({t.lower() for t in self.terms}, key=len, reverse=True))

    @cached_property
    def _ignorecase_regex(self) -> re.Pattern[str]:
        """Every term, case-insensitively: for texts whose lower-casing changes their length (offsets
        would shift, so the lower-cased text cannot be searched)."""
        return re.compile(_alternation(self._ordered_terms), re.IGNORECASE)

    def term_hits(self, text: str) -> list[tuple[int, int, str]]:
        """(start, end, term lower-cased) of every occurrence of a term in `text`, case-insensitively.

        Over lower-cased text, only the terms that occur in it are searched for: a substring test per
        term is a fast scan, while an alternation of every term is tried at every position (it was
        most of the cost of building a view, and most texts name none of the terms). Leaving out
        terms that occur nowhere in the text, in their order, finds exactly the same matches."""
        if not self.terms:
            return []
        lower = text.lower()
        if len(lower) == len(text):
            present = tuple(t for t in self._ordered_terms if t in lower)
            if not present:
                return []
            return [(m.start(), m.end(), m[0]) for m in _terms_pattern(present).finditer(lower)]
        return [(m.start(), m.end(), m[0].lower()) for m in self._ignorecase_regex.finditer(text)]

    def pinned(self, text: str) -> list[tuple[int, int]]:
        """Spans of `text` a probe matches (non-empty matches): never cut from the view."""
        spans = []
        for pattern in self.patterns:
            spans.extend(m.span() for m in pattern.finditer(text) if m.end() > m.start())
        return spans

    def pins(self, text: str) -> bool:
        """Whether a probe matches `text` (non-empty): `pinned(text)` is not empty, found without
        scanning on past the first match."""
        return any(m.end() > m.start() for pattern in self.patterns for m in pattern.finditer(text))


BOILERPLATE_WINDOW_CHARS = 1500
"""A boilerplate output (a skill's text, web search results, a package install) that names nothing
the items name is cut to this many characters: its room goes to the decisive files first."""
_SEARCH_TOOLS = re.compile(r"(?i)\A(?:web_?search|google_web_search|web_?fetch|websearch|webfetch|fetch|browse|search_web)\Z")
_INSTALL = re.compile(r"\b(?:pip3?|uv pip|apt(?:-get)?|npm|yarn|pnpm|conda|mamba|cargo|gem|brew|apk)\s+(?:-\S+\s+)*(?:install|add)\b")
_SKILL = re.compile(r"<activated_skill\b|(?:^|/)SKILL\.md\b")


def is_boilerplate(event: Event, call_text: str = "") -> bool:
    """Whether an evidence event is bulk the verdicts rarely rest on: a skill's instructions, web
    search or fetch results, or a package install's output (by its tool, path or producing command)."""
    if event.kind == "tool_call":
        return False
    if event.tool_name and _SEARCH_TOOLS.match(event.tool_name):
        return True
    if (event.tool_name or "").lower() in {"skill", "activate_skill"}:
        return True
    if any(_SKILL.search(text) for text in (event.path or "", event.text[:400], call_text)):
        return True
    return bool(call_text and _INSTALL.search(call_text))


_HARNESS_CUT = re.compile(
    r"(?i)(?:the file content has been truncated|<\s*truncated \d[\d,]* lines\s*>|\[\.\.\.\s*\d[\d,]* (?:lines|characters|chars) truncated|"
    r"output (?:was |has been )?truncated|showing lines \d+-\d+ of \d+|\[output limited to \d+)")
"""Notices by which a harness says it cut a tool's output before the agent (and the log) saw it."""


_HARNESS_CUT_LOWER = re.compile(_HARNESS_CUT.pattern.removeprefix("(?i)"))
"""The same notices over lower-cased text: several times faster than matching case-insensitively,
and the same matches on ASCII text (every event's header asks, of the event's whole text)."""


_HARNESS_CUT_WORDS = ("truncated", "showing lines", "output limited to")
"""Every notice of `_HARNESS_CUT` holds one of these (lower-cased): a text holding none is not
searched (substring tests are a fast scan; the regex is tried at every position of every text)."""


def harness_cut(text: str) -> bool:
    """Whether the text carries a harness's own truncation notice (not GCPC's: the log holds no more)."""
    if text.isascii():
        lower = text.lower()
        return any(word in lower for word in _HARNESS_CUT_WORDS) and bool(_HARNESS_CUT_LOWER.search(lower))
    return bool(_HARNESS_CUT.search(text))


_PIECE = 400
"""A line longer than this is windowed in pieces of this many characters (fewer for a window under
eight pieces, so that a short window still holds several)."""
_MIN_PIECE = 40
_CONTEXT_PIECES = 1
"""Pieces kept on each side of one that holds a focus term."""


def _pieces(text: str, size: int) -> list[tuple[int, int]]:
    """(start, end) of the text's lines, lines longer than `size` split into pieces of `size` characters."""
    out: list[tuple[int, int]] = []
    start = 0
    for line in text.splitlines(keepends=True):
        end = start + len(line)
        for s in range(start, end, size):
            out.append((s, min(end, s + size)))
        start = end
    return out


def _piece_of(starts: list[int], offset: int) -> int:
    return max(0, bisect_right(starts, offset) - 1)


def _choose(text: str, pieces: list[tuple[int, int]], budget: int, focus: Focus,
            hits: list[tuple[int, int, str]]) -> set[int]:
    """Which pieces a window of `budget` characters keeps: probe matches always; a little head and
    tail; then, round-robin over the focus terms (`hits`: `focus.term_hits(text)`), each term's
    occurrences latest first with context; then more head (2/3) and tail (1/3) while room is left."""
    starts = [s for s, _ in pieces]
    chosen: set[int] = set()
    used = 0

    def take(index: int, *, force: bool = False) -> bool:
        nonlocal used
        if index in chosen or not 0 <= index < len(pieces):
            return True
        size = pieces[index][1] - pieces[index][0]
        if not force and used + size > budget:
            return False
        chosen.add(index)
        used += size
        return True

    for start, end in focus.pinned(text):
        for index in range(_piece_of(starts, start), _piece_of(starts, max(start, end - 1)) + 1):
            take(index, force=True)
    head, tail = 0, len(pieces) - 1
    while head <= tail and used < budget // 6 and take(head):
        head += 1
    while tail >= head and used < budget // 3 and take(tail):
        tail -= 1
    by_term: dict[str, list[int]] = {}
    for start, _, term in hits:
        by_term.setdefault(term, []).append(_piece_of(starts, start))
    queues = [sorted(set(found), reverse=True) for found in by_term.values()]
    while any(queues) and used < budget:
        for queue in queues:
            if queue:
                at = queue.pop(0)
                if take(at):
                    for d in range(1, _CONTEXT_PIECES + 1):
                        take(at - d)
                        take(at + d)
    head_room = used + (budget - used) * 2 // 3
    while head <= tail and used < head_room and take(head):
        head += 1
    while tail >= head and take(tail):
        tail -= 1
    while head <= tail and take(head):
        head += 1
    return chosen


def _window(event: Event, window_chars: int, focus: Focus, hits: list[tuple[int, int, str]]) -> tuple[str, int]:
    """The shown text and how many characters it leaves out: kept pieces in order, each run of cut
    pieces replaced by one marker naming its lines, its size and the event (`hits`: the focus terms
    in its text, found once for the view: a long text is the costliest to scan)."""
    text = event.text
    if len(text) <= window_chars:
        return text, 0
    pieces = _pieces(text, max(_MIN_PIECE, min(_PIECE, window_chars // 8)))
    chosen = _choose(text, pieces, window_chars, focus, hits)
    total_lines = text.count("\n") + 1
    where = f"{event.id}" + (f" ({event.path})" if event.path else "")
    out: list[str] = []
    cut = 0
    index = 0
    while index < len(pieces):
        if index in chosen:
            out.append(text[pieces[index][0]:pieces[index][1]])
            index += 1
            continue
        gap_start = pieces[index][0]
        while index < len(pieces) and index not in chosen:
            index += 1
        gap_end = pieces[index - 1][1]
        first, last = text.count("\n", 0, gap_start) + 1, text.count("\n", 0, gap_end - 1) + 1
        lines = f"line {first:,}" if first == last else f"lines {first:,}–{last:,}"
        cut += gap_end - gap_start
        lead = "" if not out or out[-1].endswith("\n") else "\n"
        out.append(f"{lead}{cut_marker(f'{lines} of {total_lines:,} ({gap_end - gap_start:,} chars) of {where}; stored in full and citable')}\n")
    return "".join(out), cut


@dataclass(frozen=True)
class EvidenceEntry:
    """One evidence event as shown: possibly windowed, possibly a pointer to an identical earlier one."""

    event: Event
    shown: str
    elided_chars: int = 0
    duplicate_of: str | None = None
    claim: bool = False
    """A tool output that only echoes its own command's text: the agent's claim, not evidence."""
    boilerplate: bool = False
    """A skill's text, web search results or an install's output (`is_boilerplate`): cut first."""
    focus_hits: int = 0
    """How many times the text names what the judged items name (`Focus.term_hits`)."""
    focus: Focus = field(default_factory=Focus, repr=False, compare=False)
    """The probes `pinned` is decided by (none for a repeated event, which is never pinned)."""

    @cached_property
    def pinned(self) -> bool:
        """A probe matches the text: the event is never left out of the view. Decided when first
        asked (only a view cut to fit a context budget asks): scanning every event with every probe
        was a third of building a view."""
        return self.focus.pins(self.event.text)

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
        if e.kind != "tool_call" and harness_cut(e.text):
            label += " · cut by the harness: the log holds only what is shown"
        return f"### {label} · {len(self.shown):,} chars"

    def framed(self) -> str:
        """Header, then the body in a fence it cannot close."""
        mark = fence(self.shown)
        return f"{self.header}\n{mark}\n{self.shown}\n{mark}"


@dataclass(frozen=True)
class Gap:
    """Whole evidence events left out of a view to fit a context window, shown as one marker line
    between the events around them (outside every fence, so no log text can pass for one)."""

    before: int
    """Index in `EvidenceView.entries` of the first event shown after the gap (len: at the end)."""
    ids: tuple[str, ...]
    chars: int
    why: str

    @property
    def marker(self) -> str:
        ids = f"{self.ids[0]}–{self.ids[-1]}" if len(self.ids) > 1 else self.ids[0]
        return cut_marker(f"{len(self.ids):,} evidence events ({ids}, {self.chars:,} chars) {self.why}; "
                          f"stored in full, not shown to this judge and not citable")


@dataclass
class EvidenceView:
    """The ordered evidence of one trajectory, with the lookups grounding needs."""

    entries: list[EvidenceEntry]
    gaps: tuple[Gap, ...] = ()
    """Events left out (judge.budget), each run as one marker; they are not in `entries`, so not citable."""
    focus: Focus = field(default_factory=Focus)
    """What the view was windowed for: a shorter window of the same events keeps it."""
    _by_id: dict[str, Event] = field(default_factory=dict, repr=False)
    _normalized: dict[str, str] = field(default_factory=dict, repr=False)
    _claims: frozenset[str] = field(default_factory=frozenset, repr=False)
    _failed: frozenset[str] = field(default_factory=frozenset, repr=False)
    text: str | None = field(default=None, repr=False, compare=False)
    """`render()`'s text when whoever built the view rendered it already (`judge.prepare`'s worker
    sends it with the view); None: rendered when asked."""

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

    def normalized(self, event_id: str) -> str:
        """The text of evidence event `event_id`, whitespace-normalized (`normalize_ws`), worked out once
        per view: grounding compares every citation of every item with it."""
        cached = self._normalized.get(event_id)
        if cached is None:
            cached = self._normalized[event_id] = normalize_ws(self._by_id[event_id].text)
        return cached

    def quote_in_event(self, event_id: str, quote: str) -> bool:
        """True when `quote` is a verbatim span of evidence event `event_id` (narration never is)."""
        if event_id not in self._by_id:
            return False
        q = normalize_ws(quote)
        return bool(q) and q in self.normalized(event_id)

    def render(self) -> str:
        """The view as plain text for a judge prompt: each event framed (`EvidenceEntry.framed`), each
        gap one marker line between them."""
        if self.text is not None:
            return self.text
        parts: list[str] = []
        gaps = {gap.before: gap for gap in self.gaps}
        for index, entry in enumerate(self.entries):
            if index in gaps:
                parts.append(gaps[index].marker)
            parts.append(entry.framed())
        if len(self.entries) in gaps:
            parts.append(gaps[len(self.entries)].marker)
        return "\n\n".join(parts)

    @property
    def shown_chars(self) -> int:
        return sum(len(e.shown) for e in self.entries)


def build_evidence_view(
    events: Iterable[Event], *, window_chars: int = DEFAULT_WINDOW_CHARS, focus: Focus | None = None,
    windows: Mapping[str, int] | None = None,
) -> EvidenceView:
    """Keep tool I/O and file contents in order, window long texts (keeping what `focus` names;
    boilerplate that names none of it to `BOILERPLATE_WINDOW_CHARS`), collapse repeated reads, mark
    outputs that only echo their command. `windows` gives some events (by id) a window of their own."""
    focus = focus or Focus()
    windows = windows or {}
    entries: list[EvidenceEntry] = []
    seen: dict[tuple[str, str | None, str], str] = {}
    calls: dict[str, str] = {}
    for event in events:
        if event.kind not in EVIDENCE_KINDS:
            continue
        if event.kind == "tool_call":
            calls[event.id] = event.text
        call_text = calls.get(event.call_id or "", "")
        claim = event.kind == "tool_output" and bool(call_text) and echoes_command(event.text, call_text)
        key = (event.kind, event.path, event.text)
        earlier = seen.get(key) if len(event.text) >= MIN_COLLAPSE_CHARS else None
        if earlier is not None and event.kind != "tool_call":
            entries.append(EvidenceEntry(event, cut_marker(f"identical to {earlier}, not repeated"), duplicate_of=earlier,
                                         claim=claim))
            continue
        seen.setdefault(key, event.id)
        hits = focus.term_hits(event.text)
        boilerplate = is_boilerplate(event, call_text)
        window = windows.get(event.id, window_chars)
        if boilerplate and not hits and not focus.pins(event.text):
            window = min(window, BOILERPLATE_WINDOW_CHARS)
        shown, elided = _window(event, window, focus, hits)
        entries.append(EvidenceEntry(event, shown, elided_chars=elided, claim=claim, boilerplate=boilerplate,
                                     focus_hits=len(hits), focus=focus))
    return EvidenceView(entries, focus=focus)


def evidence_share(events: Sequence[Event], raw_chars: int) -> float:
    """Characters a judge sees, relative to the raw log: the evidence view's compression."""
    return build_evidence_view(events).shown_chars / raw_chars if raw_chars else 0.0
