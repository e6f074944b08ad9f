"""Finding a trial's agent log, recognizing its format by content, and parsing it.

Detection sniffs content rather than trusting file names, because the same name
(`agent/trajectory.json`) holds different formats depending on the harness.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ...models import LogFormat
from . import acp, atif, claude_code, codex, gcpc_jsonl, terminus2
from ._io import has_surrogate_escape, load_json_doc, loads, lone_surrogate, read_head, read_text, type_name
from ..bounded import is_regular
from .base import EVENT_FIELDS, LogError, ParsedLog

__all__ = ["DEFAULT_MAX_BYTES", "LOG_PLACES", "PARSERS", "classify", "find_log", "log_files", "parse_log",
           "sniff_format"]

DEFAULT_MAX_BYTES = 25 * 2**20
PARSERS: dict[LogFormat, Callable[[Path, str, Any], ParsedLog]] = {
    "claude-code": claude_code.parse,
    "atif": atif.parse,
    "terminus-2": terminus2.parse,
    "codex": codex.parse,
    "acp": acp.parse,
    "gcpc-jsonl": gcpc_jsonl.parse,
}
"""Format -> parser(path, text, already-decoded JSON document or None)."""
_ATIF_HINT = re.compile(r'"schema_version"\s*:\s*"ATIF|"steps"\s*:\s*\[')
_TERMINUS_HINT = re.compile(r'\[\s*\{\s*"(?:episode|prompt|response)"\s*:')
_NOTHING = object()
LOG_PLACES = ("agent/claude-code.txt", "agent/trajectory.json", "agent/codex.txt", "trajectory/acp_trajectory.jsonl",
              "trajectory/trajectory.json")
"""Where harnesses write their logs, in order of preference: Claude Code's stream-json wins over the
lossy ATIF conversion Harbor writes beside it."""
_LOG_GLOBS = ("agent/*.jsonl", "trajectory/*.jsonl", "agent/*.txt", "trajectory/*.json")
"""Then the first file of these (sorted by name, in this order) whose content is a known format."""
_NO_LOG = f"no agent log found (looked for {', '.join(LOG_PLACES)}, {', '.join(_LOG_GLOBS)})"
_SNIFF_LINES = 50
"""How many leading lines may be harness output before a Codex log's first JSON event."""


def _first_line(text: str) -> tuple[str, bool]:
    """The first non-blank line and whether it is complete (ends with a newline)."""
    start = 0
    while True:
        end = text.find("\n", start)
        line = text[start:] if end < 0 else text[start:end]
        if end < 0 or line.strip():
            return line, end >= 0
        start = end + 1


def _describe(value: Any) -> str:
    if isinstance(value, dict):
        return f"a JSON object with keys {sorted(map(str, value))[:8]}"
    if isinstance(value, list):
        first = f", first item {_describe(value[0])}" if value else ""
        return f"a JSON array of {len(value)} items{first}"
    return f"a JSON {type_name(value)}"


def _loads(line: str) -> Any:
    try:
        return loads(line)
    except (ValueError, RecursionError):
        return _NOTHING


def _line_format(first: Any) -> LogFormat | None:
    if gcpc_jsonl.is_header(first):
        return "gcpc-jsonl"
    if claude_code.is_record(first):
        return "claude-code"
    if codex.is_record(first):
        return "codex"
    if acp.is_record(first):
        return "acp"
    return None


def _codex_after_noise(text: str) -> bool:
    """Whether a Codex event follows a few non-JSON lines (Harbor tees the CLI's stderr into its log)."""
    for line in text.split("\n")[:_SNIFF_LINES]:
        if line.lstrip().startswith("{"):
            return codex.is_record(_loads(line))
    return False


def _doc_format(doc: Any) -> LogFormat | None:
    if atif.is_doc(doc):
        return "atif"
    if terminus2.is_doc(doc):
        return "terminus-2"
    return None


def classify(path: Path, text: str) -> tuple[LogFormat, Any]:
    """(format, decoded JSON document or None) for a log's full text.

    JSON-lines formats are recognized from their first line; document formats are decoded
    here once and the document handed to the parser, so nothing is parsed twice.
    """
    line, _ = _first_line(text)
    first = _loads(line)
    fmt = _line_format(first)
    if fmt is not None:
        return fmt, None
    if first is _NOTHING and _codex_after_noise(text):
        return "codex", None
    if first is not _NOTHING and line.strip() != text.strip():
        raise LogError(f"{path}: unknown log format (JSON lines whose first line is {_describe(first)})")
    doc = first if first is not _NOTHING else load_json_doc(path, text)
    fmt = _doc_format(doc)
    if fmt is None:
        raise LogError(f"{path}: unknown log format ({_describe(doc)})")
    return fmt, doc


def sniff_format(path: Path) -> LogFormat:
    """The log's format from its first 64 KiB when that suffices, else from the whole file."""
    head, complete = read_head(path)
    if complete:
        return classify(path, head)[0]
    line, whole_line = _first_line(head)
    if whole_line:
        fmt = _line_format(_loads(line))
        if fmt is not None:
            return fmt
        if _loads(line) is _NOTHING and _codex_after_noise(head):
            return "codex"
    start = head.lstrip()[:1]
    if start == "{" and _ATIF_HINT.search(head):
        return "atif"
    if start == "[" and _TERMINUS_HINT.match(head.lstrip()):
        return "terminus-2"
    return classify(path, read_text(path, DEFAULT_MAX_BYTES))[0]


def find_log(trial_dir: Path) -> tuple[Path, LogFormat]:
    """The agent log of a trial folder and its format.

    Order: the files of `LOG_PLACES` (Claude Code's `agent/claude-code.txt` first: the ATIF file
    beside it is a lossy conversion), then the first file of `_LOG_GLOBS` whose content is a known
    format. Only regular files are considered; a log that exists but cannot be read is reported.
    """
    trial_dir = Path(trial_dir)
    if not trial_dir.is_dir():
        raise LogError(f"{trial_dir}: not a directory")
    for name in LOG_PLACES:
        path = trial_dir / name
        if path.is_symlink() or path.exists():
            return path, sniff_format(path)
    problems: list[str] = []
    tried = {trial_dir / name for name in LOG_PLACES}
    for pattern in _LOG_GLOBS:
        folder = trial_dir / pattern.split("/")[0]
        for path in sorted(folder.glob(pattern.split("/")[1])) if folder.is_dir() else []:
            if path in tried or not is_regular(path):
                continue
            try:
                return path, sniff_format(path)
            except LogError as exc:
                if pattern.endswith(".jsonl"):  # a .txt or .json beside the log may be anything
                    problems.append(str(exc))
    if problems:
        raise LogError(f"{trial_dir}: no readable agent log; " + "; ".join(problems))
    raise LogError(f"{trial_dir}: {_NO_LOG}")


def log_files(path: Path, fmt: LogFormat) -> list[Path]:
    """The files one log comprises: itself, plus an ATIF run's continuation files."""
    return atif.run_files(Path(path)) if fmt == "atif" else [Path(path)]


def parse_log(path: Path, fmt: LogFormat | None = None, *, max_bytes: int = DEFAULT_MAX_BYTES) -> ParsedLog:
    """Parse one agent log whole, or raise `LogError`; never returns partial output.

    `fmt` None means detect from content. Unexpected structure that slips past a parser's
    own checks is still reported as `LogError` (naming the file), never as a crash.
    """
    path = Path(path)
    if fmt is not None and fmt not in PARSERS:
        raise LogError(f"{path}: unsupported log format {fmt!r} (known: {', '.join(PARSERS)})")
    text = read_text(path, max_bytes)
    doc = None
    if fmt is None:
        fmt, doc = classify(path, text)
    try:
        log = atif.parse(path, text, doc, max_bytes) if fmt == "atif" else PARSERS[fmt](path, text, doc)
    except LogError:
        raise
    except (TypeError, AttributeError, KeyError, IndexError, ValueError, RecursionError) as exc:
        raise LogError(f"{path}: malformed {fmt} log ({type(exc).__name__}: {exc})") from exc
    if has_surrogate_escape(text) or log.metadata.get("continuations"):
        _refuse_lone_surrogates(path, log)  # rare: only such an escape can leave a lone surrogate in the events
    return log


_TEXT_FIELDS = tuple(EVENT_FIELDS.index(f) for f in ("text", "tool_name", "call_id", "path"))
_SOURCE = EVENT_FIELDS.index("source")


def _refuse_lone_surrogates(path: Path, log: ParsedLog) -> None:
    """LogError, naming the place, when parsed text holds a lone surrogate (see `_io.lone_surrogate`).

    The events' strings are checked joined, in one pass; only a log that holds one is searched
    event by event, for the place to name."""
    columns = list(zip(*log.event_values)) or [()] * len(EVENT_FIELDS)
    if lone_surrogate("".join("".join(filter(None, columns[i])) for i in _TEXT_FIELDS)):
        for values in log.event_values:
            for i in _TEXT_FIELDS:
                bad = lone_surrogate(values[i])
                if bad:
                    raise LogError(f"{path} ({values[_SOURCE]}): lone surrogate {bad} from a \\u escape: "
                                   f"not valid Unicode text")
    meta = [log.metadata, log.skills_offered, log.skills_used]
    bad = lone_surrogate(json.dumps(meta, ensure_ascii=False, default=str))
    if bad:
        raise LogError(f"{path}: lone surrogate {bad} from a \\u escape in the log's metadata: not valid Unicode text")
