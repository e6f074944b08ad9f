"""Agent-log parsers: trial logs in any supported format -> normalized `Event`s.

Formats (`LogFormat`): `claude-code` (stream-json `agent/claude-code.txt`), `atif` (Harbor
ATIF `agent/trajectory.json` v1.0-1.7 with its continuation files: gemini-cli, terminus-2, …),
`terminus-2` (episode-list `agent/trajectory.json`), `codex` (`codex exec --json`,
`agent/codex.txt`), `acp` (Agent Client Protocol session logs, `trajectory/acp_trajectory.jsonl`:
opencode) and `gcpc-jsonl` (GCPC's own format for other harnesses, see `gcpc_jsonl` and
docs/log-format.md). Use `find_log` on a trial folder, then `parse_log`.
"""

from .api import DEFAULT_MAX_BYTES, classify, find_log, log_files, parse_log, sniff_format
from .base import LogError, ParsedLog

__all__ = ["DEFAULT_MAX_BYTES", "LogError", "ParsedLog", "classify", "find_log", "log_files", "parse_log",
           "sniff_format"]
