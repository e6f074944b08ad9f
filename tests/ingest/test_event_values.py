"""Parsers hand import their events as value tuples checked a column at a time (`EventBuilder.finish`),
not as a validated `Event` each: these tests hold that what import stores is exactly what the models
gave, on real logs of every format there is a sample of and on small logs of the others."""

from __future__ import annotations

import json
from operator import attrgetter
from pathlib import Path

import pytest

from gcpc_core.ingest import find_trial_dirs
from gcpc_core.ingest.logs import LogError, find_log, parse_log
from gcpc_core.ingest.logs.base import EVENT_FIELDS, validate_events
from gcpc_core.models import Event
from gcpc_core.store import pack_event_values, pack_events

SHARED = Path(__file__).resolve().parents[2].parent / "shared"
SAMPLE_ROOTS = (SHARED / "harness-samples", SHARED / "skillsbench" / "trials")


def _sample_trials() -> list[Path]:
    return [d for root in SAMPLE_ROOTS if root.is_dir() for d in find_trial_dirs(root)]


def assert_values_are_the_models(values: list[tuple]) -> None:
    """The values equal, type for type, what validating an `Event` of each gives (the old path)."""
    modelled = [attrgetter(*EVENT_FIELDS)(e) for e in validate_events(values)]
    assert values == modelled
    assert [tuple(map(type, v)) for v in values] == [tuple(map(type, v)) for v in modelled]
    assert pack_event_values(values) == pack_events(validate_events(values))  # what import stores, byte for byte


def test_event_fields_are_the_event_models_fields_in_order() -> None:
    assert EVENT_FIELDS == tuple(Event.model_fields)


@pytest.mark.skipif(not _sample_trials(), reason=f"no real trial samples under {', '.join(map(str, SAMPLE_ROOTS))}")
@pytest.mark.parametrize("trial", _sample_trials(), ids=lambda d: f"{d.parent.name}/{d.name}")
def test_real_logs_give_the_values_the_models_give(trial: Path) -> None:
    try:
        path, fmt = find_log(trial)
    except LogError:
        pytest.skip(f"{trial}: no agent log")
    log = parse_log(path, fmt)
    assert log.event_values
    assert_values_are_the_models(log.event_values)
    assert log.events == validate_events(log.event_values)


def _jl(*records: object) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


SMALL_LOGS = {
    "claude-code": ("agent/claude-code.txt", _jl(
        {"type": "system", "subtype": "init", "model": "m", "skills": ["a"]},
        {"type": "assistant", "message": {"content": [
            {"type": "tool_use", "id": "w", "name": "Write", "input": {"file_path": "/x", "content": "hi"}},
            {"type": "tool_use", "id": "r", "name": "Read", "input": {"file_path": "/skills/a/SKILL.md"}}]}},
        {"type": "user", "message": {"content": [
            {"type": "tool_result", "tool_use_id": "w", "content": "EACCES", "is_error": True},
            {"type": "tool_result", "tool_use_id": "r", "content": "skill text"}]}},
        {"type": "result", "subtype": "success", "result": "done"})),
    "codex": ("agent/codex.txt", _jl(
        {"type": "thread.started", "thread_id": "t"},
        {"type": "item.started", "item": {"id": "c", "type": "command_execution", "command": "ls"}},
        {"type": "item.completed", "item": {"id": "c", "type": "command_execution", "command": "ls",
                                            "aggregated_output": "a\n", "exit_code": 1, "status": "failed"}},
        {"type": "item.completed", "item": {"id": "m", "type": "agent_message", "text": "done"}})),
    "gcpc-jsonl": ("agent/run.jsonl", _jl(
        {"gcpc_log": 1, "agent": "a", "model": "m"},
        {"kind": "tool_call", "text": "ls", "tool_name": "shell", "call": "c"},
        {"kind": "tool_output", "text": "boom", "call_ref": "c", "is_error": True})),
    "terminus-2": ("agent/trajectory.json", json.dumps([
        {"episode": 0, "prompt": "do it", "response": json.dumps(
            {"analysis": "a", "plan": "p", "commands": [{"keystrokes": "ls\n"}], "task_complete": False})},
        {"episode": 1, "prompt": "out\n", "response": "prose {\"commands\": [{\"keystrokes\": \"{\\\"x\\\": 1}\"}]}"}])),
}


@pytest.mark.parametrize("fmt", sorted(SMALL_LOGS))
def test_small_logs_give_the_values_the_models_give(tmp_path: Path, fmt: str) -> None:
    rel, text = SMALL_LOGS[fmt]
    (tmp_path / rel).parent.mkdir(parents=True)
    (tmp_path / rel).write_text(text)
    log = parse_log(tmp_path / rel)
    assert log.format == fmt
    assert_values_are_the_models(log.event_values)


def test_a_value_the_checks_refuse_is_validated_by_pydantic_as_before(tmp_path: Path) -> None:
    """A tool name that is a number gets past the parser; the models refuse it, and so does the log."""
    log = tmp_path / "claude-code.txt"
    log.write_text(_jl({"type": "assistant", "message": {"content": [
        {"type": "tool_use", "id": "x", "name": 5, "input": {"command": "ls"}}]}}))
    with pytest.raises(LogError, match=r"(?s)malformed claude-code log \(ValidationError: .*tool_name"):
        parse_log(log, "claude-code")
