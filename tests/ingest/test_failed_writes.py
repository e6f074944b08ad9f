"""A write is file content only when its result says it happened (issue 27, "events that do not lie").

A red-team trial with reward 0 whose every write failed got probe Yes on 4 of 4 items: the text of
a `Write` answered "EACCES: permission denied", of an `Edit` answered "String to replace not found"
and of a failed ACP edit were all stored as `file_content`. Every format that makes file content
from a write's input is tried here: Claude Code, ATIF (gemini-cli's `write_file` / `replace`), Codex
(an MCP write tool), ACP diffs, and gcpc-jsonl's explicit file contents.
"""

from __future__ import annotations

import json
from pathlib import Path

from gcpc_core.checklist import Checklist
from gcpc_core.evidence import build_evidence_view
from gcpc_core.ingest.logs import ParsedLog, parse_log
from gcpc_core.judge.probe import probe_judge

from .test_harness_logs import _update
from .test_logs import INIT, asst, cc, jl, res, use, write


def file_contents(log: ParsedLog) -> list[str]:
    return [e.text for e in log.events if e.kind == "file_content"]


def test_claude_code_write_answered_with_an_error_is_a_failed_attempt(tmp_path: Path) -> None:
    log = cc(tmp_path, INIT,
             asst(use("t1", "Write", file_path="/root/answer.txt", content="42")),
             res("t1", "EACCES: permission denied, open '/root/answer.txt'", is_error=True),
             asst(use("t2", "Bash", command="ls /root")))
    assert file_contents(log) == []
    call, output = log.events[1], log.events[2]
    assert call.kind == "tool_call" and call.is_error, "the write is stored as a failed attempt"
    assert "content: 42" in call.text and "file_path: /root/answer.txt" in call.text
    assert output.kind == "tool_output" and output.is_error and output.call_id == call.id
    assert [e.id for e in log.events] == [f"E{n}" for n in range(1, len(log.events) + 1)], "ids stay dense"
    assert log.events[3].text == "ls /root" and log.events[3].id == "E4"


def test_claude_code_edit_whose_string_was_not_found_makes_no_file_content(tmp_path: Path) -> None:
    log = cc(tmp_path, INIT,
             asst(use("t1", "Edit", file_path="/root/a.py", old_string="x = 1", new_string="x = 42")),
             res("t1", "<tool_use_error>String to replace not found in file.</tool_use_error>", is_error=True),
             asst(use("t2", "MultiEdit", file_path="/root/a.py", edits=[{"old_string": "a", "new_string": "b42"}])),
             res("t2", "<tool_use_error>File has not been read yet.</tool_use_error>", is_error=True))
    assert file_contents(log) == []
    assert [e.is_error for e in log.events if e.kind == "tool_call"] == [True, True]
    assert "new_string: x = 42" in log.events[1].text


def test_a_successful_write_is_still_file_content_and_a_write_never_answered_is_not(tmp_path: Path) -> None:
    log = cc(tmp_path, INIT,
             asst(use("t1", "Write", file_path="/root/ok.txt", content="done")),
             res("t1", "File created successfully at: /root/ok.txt"),
             asst(use("t2", "Write", file_path="/root/late.txt", content="never confirmed")))
    assert file_contents(log) == ["done"]
    ok = next(e for e in log.events if e.kind == "file_content")
    assert ok.path == "/root/ok.txt" and ok.call_id == "E2" and ok.id == "E3"
    last = log.events[-1]
    assert last.kind == "tool_call" and not last.is_error and "content: never confirmed" in last.text
    assert any("never answered" in w for w in log.metadata["warnings"])


def test_acp_diff_of_a_failed_edit_is_no_file_content(tmp_path: Path) -> None:
    path = write(tmp_path, "t/trajectory/acp_trajectory.jsonl", jl(
        _update({"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "edit", "kind": "edit", "status": "failed",
                 "content": [{"type": "diff", "path": "/root/answer.txt", "oldText": "", "newText": "42"},
                             {"type": "content", "content": {"type": "text", "text": "permission denied"}}]}),
        _update({"sessionUpdate": "tool_call", "toolCallId": "c2", "title": "edit", "kind": "edit",
                 "status": "completed", "content": [{"type": "diff", "path": "/root/b.txt", "newText": "7"}]}),
    ))
    log = parse_log(path)
    assert file_contents(log) == ["7"]
    failed = log.events[0]
    assert failed.kind == "tool_call" and failed.is_error and "42" in failed.text
    assert not any(e.kind == "tool_output" and "42" in e.text for e in log.events)


def test_atif_and_codex_writes_follow_their_results(tmp_path: Path) -> None:
    steps = [{"step_id": 1, "source": "agent", "message": "",
              "tool_calls": [{"tool_call_id": "w1", "function_name": "write_file",
                              "arguments": {"file_path": "/root/a.txt", "content": "42"}}],
              "observation": {"results": [{"source_call_id": "w1", "content": "Successfully wrote /root/a.txt"}]}},
             {"step_id": 2, "source": "agent", "message": "",
              "tool_calls": [{"tool_call_id": "w2", "function_name": "replace",
                              "arguments": {"file_path": "/root/b.txt", "old_string": "1", "new_string": "99"}}]}]
    atif = parse_log(write(tmp_path, "a/agent/trajectory.json",
                           json.dumps({"schema_version": "ATIF-v1.4", "session_id": "s", "steps": steps})))
    assert file_contents(atif) == ["42"], "a replace with no result is not file content"
    codex = parse_log(write(tmp_path, "c/agent/codex.txt", jl(
        {"type": "thread.started", "thread_id": "t"},
        {"type": "item.completed", "item": {"id": "i1", "type": "mcp_tool_call", "server": "fs", "tool": "write_file",
                                             "arguments": {"path": "/root/a.txt", "content": "42"},
                                             "error": {"message": "EACCES"}, "status": "failed"}},
    )))
    assert file_contents(codex) == []
    assert codex.events[0].is_error and "content: 42" in codex.events[0].text


def test_gcpc_jsonl_file_content_marked_as_error_is_no_file_content(tmp_path: Path) -> None:
    log = parse_log(write(tmp_path, "x/agent/log.gcpc.jsonl", jl(
        {"gcpc_log": 1, "agent": "h"},
        {"kind": "tool_call", "text": "file_path: /root/a.txt\ncontent: 42", "tool_name": "write", "call": "c1"},
        {"kind": "file_content", "text": "42", "call_ref": "c1", "path": "/root/a.txt", "is_error": True},
    )))
    assert file_contents(log) == []
    assert log.events[1].kind == "tool_output" and log.events[1].is_error


def test_a_run_whose_every_write_failed_gets_no_probe_yes(tmp_path: Path) -> None:
    """The red-team trial: reward 0, nothing written, yet probe Yes on every item before the fix."""
    log = cc(tmp_path, INIT,
             asst(use("t1", "Write", file_path="/root/answer.txt", content="answer: 42")),
             res("t1", "EACCES: permission denied, open '/root/answer.txt'", is_error=True),
             asst(use("t2", "Edit", file_path="/root/report.md", old_string="TBD", new_string="result 42 PASSED")),
             res("t2", "<tool_use_error>String to replace not found in file.</tool_use_error>", is_error=True))
    checklist = Checklist.model_validate({"task": "t", "source": "human:test", "items": [
        {"id": "C1", "route": "generated", "text": "`/root/answer.txt` holds the value `42`", "task_quote": "x",
         "probes": [{"pattern": "answer: 42", "polarity": "yes"}]},
        {"id": "C2", "route": "generated", "text": "`/root/report.md` says `PASSED`", "task_quote": "x",
         "probes": [{"pattern": "PASSED", "polarity": "yes"}]},
    ]})
    view = build_evidence_view(log.events)
    verdicts = probe_judge(checklist, view)
    assert [v.verdict for v in verdicts] == ["Abstain", "Abstain"], [(v.verdict, v.citations) for v in verdicts]
    rendered = view.render()
    assert "file_content" not in rendered
