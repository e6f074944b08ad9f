"""The parse result and the one error type every log parser raises."""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, SkipValidation, TypeAdapter

from ...models import Event, LogFormat

__all__ = ["EVENT_FIELDS", "EventFieldValues", "LogError", "ParsedLog", "validate_events"]

EVENT_FIELDS = ("id", "seq", "kind", "text", "tool_name", "call_id", "path", "is_error", "source")
"""`Event`'s fields in declaration order: the order of an `EventFieldValues` tuple."""
EventFieldValues = tuple
"""One event as the values of its `EVENT_FIELDS`, in that order, already of the types `Event` holds."""
_EVENTS = TypeAdapter(list[Event])


def validate_events(values: list[EventFieldValues]) -> list[Event]:
    """`Event` models of events' values, validated in one call (cheaper than an `Event(...)` each)."""
    return _EVENTS.validate_python([dict(zip(EVENT_FIELDS, v)) for v in values])


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
    event_values: SkipValidation[list[EventFieldValues]] = Field(default_factory=list)
    """Normalized events in log order, ids `E1`..`En` without gaps, as `EventFieldValues`. Checked once
    for the whole log by the parser (`EventBuilder.finish`) to be what validating an `Event` of each
    would give, and not validated again here: import stores these values, and a model per event
    cost more than parsing the JSON (bench/import_bench.py)."""
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

    @cached_property
    def events(self) -> list[Event]:
        """The events as `Event` models, built on first use (import never asks for them)."""
        return validate_events(self.event_values)
