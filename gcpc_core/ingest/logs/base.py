"""The parse result and the one error type every log parser raises."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from ...models import Event, LogFormat

__all__ = ["LogError", "ParsedLog"]


class LogError(ValueError):
    """A log that cannot be parsed whole; the message names the file, the place and the problem.

    Parsers never return partial output: a log either parses completely or raises this,
    so an importer can skip the trial with a precise reason.
    """


class ParsedLog(BaseModel):
    """One agent log, normalized: the events plus what the log says about skills and the run."""

    format: LogFormat
    """Which log format the file was parsed as."""
    path: Path
    """The log file that was parsed."""
    events: list[Event] = Field(default_factory=list)
    """Normalized events in log order, ids `E1`..`En` without gaps."""
    skills_offered: list[str] | None = None
    """Skills the harness made available (e.g. the claude-code init line's `skills`);
    None when the log says nothing about it (not the same as an empty list)."""
    skills_used: list[str] = Field(default_factory=list)
    """Skills the agent activated, in first-use order: `Skill` / `activate_skill` / `load_skill`
    calls and reads of `.../skills/<name>/SKILL.md`."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """What the log records about the run, under common keys where known (`agent`,
    `agent_version`, `model`, `session_id`) plus format-specific ones (`final_metrics`,
    `result`, ...); `warnings` lists every lenient repair so nothing is dropped silently."""
