"""Agent-log parsers: per-format units, bad input, detection, and the real SkillsBench corpus."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path
from typing import Any, get_args

import pytest

from gcpc_core.ingest.logs import LogError, ParsedLog, find_log, parse_log
from gcpc_core.ingest.logs._io import lone_surrogate
from gcpc_core.ingest.logs.api import PARSERS
from gcpc_core.models import Event, LogFormat

CORPUS = Path(__file__).resolve().parents[2] / ".." / "shared" / "skillsbench" / "trials"
DOCS = Path(__file__).resolve().parents[2] / "docs" / "log-format.md"


# ---------------------------------------------------------------- helpers


def write(tmp_path: Path, rel: str, content: str | bytes) -> Path:
    path = tmp_path / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def jl(*records: Any) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


INIT = {"type": "system", "subtype": "init", "model": "m-1", "session_id": "s-1", "cwd": "/root",
        "tools": ["Bash", "Read"], "skills": ["pdf"], "claude_code_version": "2.1.19"}


def asst(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {"type": "assistant", "message": {"role": "assistant", "content": list(blocks)}}


def use(tid: str, name: str, **inp: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": tid, "name": name, "input": inp}


def res(tid: str, content: Any, is_error: bool = False) -> dict[str, Any]:
    return {"type": "user", "message": {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": tid, "content": content, "is_error": is_error}]}}


def cc(tmp_path: Path, *records: Any) -> ParsedLog:
    return parse_log(write(tmp_path, "agent/claude-code.txt", jl(*records)))


def by_kind(log: ParsedLog, kind: str) -> list[Event]:
    return [e for e in log.events if e.kind == kind]


def check_invariants(log: ParsedLog) -> None:
    """Ids E1..En contiguous; every output / file content links to an earlier tool call."""
    assert [e.id for e in log.events] == [f"E{i}" for i in range(1, len(log.events) + 1)]
    assert [e.seq for e in log.events] == list(range(1, len(log.events) + 1))
    index = {e.id: e for e in log.events}
    for e in log.events:
        assert e.source, e
        if e.kind in ("tool_output", "file_content") and e.call_id is not None:
            call = index[e.call_id]
            assert call.kind == "tool_call" and call.seq < e.seq
            assert e.tool_name == call.tool_name


# ---------------------------------------------------------------- claude-code


def test_claude_code_basic_flow(tmp_path: Path) -> None:
    log = cc(
        tmp_path,
        INIT,
        asst({"type": "thinking", "thinking": "plan it", "signature": "x"}),
        asst({"type": "text", "text": "Running tests."}),
        asst(use("t1", "Bash", command="pytest -q\n  --maxfail=1", description="run tests")),
        res("t1", "3 passed"),
        {"type": "user", "message": {"role": "user", "content": "please continue"}},
        {"type": "result", "subtype": "success", "is_error": False, "num_turns": 2, "result": "All done.",
         "total_cost_usd": 0.1},
    )
    check_invariants(log)
    assert log.format == "claude-code"
    assert [e.kind for e in log.events] == [
        "system", "agent_thinking", "agent_message", "tool_call", "tool_output", "user", "system"]
    call, out = log.events[3], log.events[4]
    assert call.text == "pytest -q\n  --maxfail=1" and call.tool_name == "Bash"
    assert out.call_id == call.id == "E4" and out.text == "3 passed" and out.tool_name == "Bash"
    assert log.events[0].text.startswith("Claude Code 2.1.19") and "skills: pdf" in log.events[0].text
    assert log.events[-1].text == "All done."
    assert log.events[2].source == "line 3"
    assert log.skills_offered == ["pdf"] and log.skills_used == []
    assert log.metadata["model"] == "m-1" and log.metadata["session_id"] == "s-1"
    assert log.metadata["agent"] == "claude-code" and log.metadata["agent_version"] == "2.1.19"
    assert log.metadata["result"]["total_cost_usd"] == 0.1
    assert "warnings" not in log.metadata


def test_claude_code_tool_result_block_list_and_images(tmp_path: Path) -> None:
    content = [{"type": "text", "text": "first"}, {"type": "image", "source": {"data": "AAAA"}},
               {"type": "text", "text": "second"}]
    log = cc(tmp_path, asst(use("t1", "Bash", command="ls")), res("t1", content, is_error=True))
    out = log.events[1]
    assert out.kind == "tool_output" and out.is_error
    assert out.text == "first\n[image omitted]\nsecond"


def test_claude_code_write_edit_multiedit_read(tmp_path: Path) -> None:
    body = "line one\n  line two\n"
    log = cc(
        tmp_path,
        asst(use("w", "Write", file_path="/x.py", content=body)),
        res("w", "File created successfully at: /x.py"),
        asst(use("e", "Edit", file_path="/x.py", old_string="one\n", new_string="uno\ndos", replace_all=False)),
        res("e", "The file /x.py has been updated."),
        asst(use("m", "MultiEdit", file_path="/y.py", edits=[
            {"old_string": "a", "new_string": "b\nc"}, {"old_string": "d", "new_string": "e"}])),
        res("m", "ok"),
        asst(use("r", "Read", file_path="/x.py")),
        res("r", "     1→line uno"),
        asst(use("bad", "Read", file_path="/nope")),
        res("bad", "File does not exist.", is_error=True),
    )
    check_invariants(log)
    ev = log.events
    assert (ev[0].kind, ev[0].text) == ("tool_call", "file_path: /x.py")
    assert (ev[1].kind, ev[1].text, ev[1].path, ev[1].call_id) == ("file_content", body, "/x.py", "E1")
    assert ev[1].source == "line 1, input.content"
    assert ev[2].kind == "tool_output" and ev[2].call_id == "E1"
    assert ev[3].text == "file_path: /x.py\nold_string: one\n\nnew_string: uno\ndos\nreplace_all: false"
    assert (ev[4].kind, ev[4].text, ev[4].path) == ("file_content", "uno\ndos", "/x.py")
    assert ev[6].text.startswith("file_path: /y.py\nedits[0].old_string: a\nedits[0].new_string: b\nc")
    assert [(e.text, e.path) for e in ev[7:9]] == [("b\nc", "/y.py"), ("e", "/y.py")]
    read = next(e for e in ev if e.text == "     1→line uno")
    assert (read.kind, read.path, read.tool_name) == ("file_content", "/x.py", "Read")
    failed = ev[-1]
    assert (failed.kind, failed.is_error, failed.path) == ("tool_output", True, None)


def test_claude_code_multi_block_line_and_nested_args(tmp_path: Path) -> None:
    todos = [{"content": "step\nwith newline", "status": "pending"}]
    log = cc(tmp_path, asst({"type": "text", "text": "Two things."}, use("t", "TodoWrite", todos=todos)))
    assert [e.source for e in log.events] == ["line 1, content[0]", "line 1, content[1]"]
    assert log.events[1].text == "todos[0].content: step\nwith newline\ntodos[0].status: pending"
    assert "{" not in log.events[1].text  # no JSON envelope


def test_claude_code_skill_detection(tmp_path: Path) -> None:
    log = cc(
        tmp_path,
        asst(use("a", "Skill", skill="mesh-analysis", args="/x.stl")),
        asst(use("b", "Skill", command="/pdf")),
        asst(use("c", "Read", file_path="/root/.claude/skills/xlsx/SKILL.md")),
        asst(use("d", "Bash", command="cat /root/.agents/skills/docx/SKILL.md | head")),
        asst(use("e", "Bash", command="python3 /root/.claude/skills/tool-kit/scripts/run.py")),
        asst(use("f", "Write", file_path="/root/.claude/skills/mine/SKILL.md", content="x")),
    )
    assert log.skills_used == ["mesh-analysis", "pdf", "xlsx", "docx"]
    assert log.skills_offered is None  # no init line: the log says nothing
    assert log.metadata["skills_referenced"] == ["xlsx", "docx", "tool-kit", "mine"]


def test_claude_code_lenient_records(tmp_path: Path) -> None:
    log = cc(
        tmp_path,
        INIT,
        {"type": "stream_event", "event": {}},
        res("ghost", "orphan output"),
        asst(use("t", "Bash", command="ls")),
        asst(use("t", "Bash", command="ls")),
        {"type": "system", "subtype": "compact_boundary", "compact_metadata": {"trigger": "auto"}},
        asst({"type": "mystery", "payload": 1}),
        {"type": "assistant", "message": "string message"},
        {"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": ["x"], "content": None}]}},
    )
    check_invariants(log)
    assert "string message" in [e.text for e in log.events]
    orphan = next(e for e in log.events if e.text == "orphan output")
    assert orphan.kind == "tool_output" and orphan.call_id is None
    assert len(by_kind(log, "tool_call")) == 1
    assert any("compact_boundary" in e.text for e in by_kind(log, "system"))
    assert any("payload: 1" in e.text for e in by_kind(log, "agent_message"))
    warnings = " | ".join(log.metadata["warnings"])
    for needle in ("stream_event", "ghost", "repeated tool_use", "mystery"):
        assert needle in warnings


# ---------------------------------------------------------------- atif


def atif_doc(*steps: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"schema_version": "ATIF-v1.2", "session_id": "sess", "agent": {
        "name": "gemini-cli", "version": "0.1", "model_name": "gemini-3-flash-preview"},
        "steps": list(steps), "final_metrics": {"total_steps": len(steps)}, **extra}


def test_atif_full_step_shapes(tmp_path: Path) -> None:
    doc = atif_doc(
        {"step_id": 1, "source": "user", "message": "Do the task."},
        {"step_id": "2", "source": "agent", "message": [{"type": "text", "text": "Reading."}],
         "reasoning_content": "think first",
         "tool_calls": [
             {"tool_call_id": "r1", "function_name": "read_file", "arguments": {"file_path": "/a.txt"}},
             {"tool_call_id": "w1", "function_name": "write_file",
              "arguments": json.dumps({"file_path": "/b.txt", "content": "B\nB"})},
             {"tool_call_id": "s1", "function_name": "run_shell_command",
              "arguments": {"command": "ls -la", "description": "list"}},
             {"tool_call_id": "k1", "function_name": "activate_skill", "arguments": {"name": "citation-management"}},
             {"tool_call_id": "x1", "function_name": "replace",
              "arguments": {"instruction": "fix", "old_string": "a", "new_string": "b", "file_path": "/c.py"}},
         ],
         "observation": {"results": [
             {"source_call_id": "r1", "content": "A content"},
             {"source_call_id": "w1", "content": [{"type": "text", "text": "written"}]},
             {"source_call_id": "s1", "content": None},
             {"source_call_id": "k1", "content": "<activated_skill>"},
             {"source_call_id": "x1", "content": "Successfully modified file"},
         ]}},
    )
    log = parse_log(write(tmp_path, "agent/trajectory.json", json.dumps(doc)))
    check_invariants(log)
    assert log.format == "atif"
    kinds = [(e.kind, e.source) for e in log.events]
    assert kinds[:4] == [("user", "steps[0].message"), ("agent_thinking", "steps[1].reasoning_content"),
                         ("agent_message", "steps[1].message"), ("tool_call", "steps[1].tool_calls[0]")]
    texts = {e.text: e for e in log.events}
    assert texts["A content"].kind == "file_content" and texts["A content"].path == "/a.txt"
    assert texts["file_path: /b.txt"].kind == "tool_call"
    assert texts["B\nB"].kind == "file_content" and texts["B\nB"].path == "/b.txt"
    assert texts["written"].kind == "tool_output"
    assert texts["ls -la"].tool_name == "run_shell_command"
    assert texts["file_path: /c.py\ninstruction: fix\nold_string: a\nnew_string: b"].kind == "tool_call"
    assert texts["b"].kind == "file_content"
    empty = [e for e in log.events if e.source == "steps[1].observation.results[2]"]
    assert empty[0].text == "" and empty[0].kind == "tool_output"
    assert log.skills_used == ["citation-management"] and log.skills_offered is None
    assert log.metadata["model"] == "gemini-3-flash-preview" and log.metadata["agent"] == "gemini-cli"
    assert log.metadata["final_metrics"] == {"total_steps": 2} and log.metadata["session_id"] == "sess"


def test_atif_lenient(tmp_path: Path) -> None:
    doc = atif_doc(
        {"source": "narrator", "message": "odd source"},
        {"source": "agent", "message": None, "tool_calls": [
            {"function_name": "run_shell_command", "arguments": "not json {"}],
         "observation": {"results": [{"content": "out"}]}},
        {"source": "agent"},
        {"source": "system", "message": "sys note"},
    )
    del doc["agent"]
    log = parse_log(write(tmp_path, "t.json", json.dumps(doc)))
    check_invariants(log)
    assert [e.kind for e in log.events] == ["system", "tool_call", "tool_output", "system"]
    assert log.events[1].text == "not json {"
    assert log.events[2].call_id == "E2"
    assert len(log.metadata["warnings"]) == 2


@pytest.mark.parametrize("doc, where", [
    ({"schema_version": "ATIF-v1.2", "steps": {"a": 1}}, "steps: expected an array"),
    ({"schema_version": "ATIF-v1.2", "steps": ["x"]}, "steps[0]: expected an object"),
    ({"schema_version": "ATIF-v1.2", "steps": [{"source": "agent", "tool_calls": "x"}]}, "steps[0].tool_calls"),
    ({"schema_version": "ATIF-v1.2", "steps": [{"source": "agent", "observation": []}]}, "steps[0].observation"),
])
def test_atif_wrong_shape(tmp_path: Path, doc: dict[str, Any], where: str) -> None:
    path = write(tmp_path, "agent/trajectory.json", json.dumps(doc))
    with pytest.raises(LogError, match=re.escape(where)) as err:
        parse_log(path)
    assert str(path) in str(err.value)


# ---------------------------------------------------------------- terminus-2


def episode(i: int, prompt: str, response: Any) -> dict[str, Any]:
    return {"episode": i, "prompt": prompt, "response": response if isinstance(response, str) else json.dumps(response)}


def test_terminus2_episodes(tmp_path: Path) -> None:
    doc = [
        episode(0, "Task Description:\nDo X\n", {"analysis": "look", "plan": "ls then cat", "commands": [
            {"keystrokes": "ls\n", "duration": 0.1}, {"keystrokes": "cat a\n", "duration": 0.1}]}),
        episode(1, "New Terminal Output:\na\nhello", "Sure!\n```json\n" + json.dumps(
            {"analysis": "done", "plan": "finish", "commands": [], "task_complete": True}) + "\n```"),
        episode(2, "Current terminal state:\nAre you sure?", '{"analysis": "bad json", "commands": [}'),
    ]
    log = parse_log(write(tmp_path, "agent/trajectory.json", json.dumps(doc)))
    check_invariants(log)
    assert log.format == "terminus-2"
    ev = log.events
    assert [(e.kind, e.text) for e in ev[:5]] == [
        ("user", "Task Description:\nDo X\n"), ("agent_thinking", "look"), ("agent_message", "ls then cat"),
        ("tool_call", "ls\n"), ("tool_call", "cat a\n")]
    assert ev[3].tool_name == "terminal" and ev[3].source == "[0].response.commands[0]"
    out = ev[5]
    assert (out.kind, out.call_id, out.text) == ("tool_output", "E5", "New Terminal Output:\na\nhello")
    assert ev[6].kind == "agent_message" and ev[6].text == "Sure!"  # prose around the JSON kept, fences dropped
    assert [e.text for e in ev[7:10]] == ["done", "finish", "task_complete: true"]
    # an episode without commands: its successor still links to the latest call
    assert ev[10].kind == "tool_output" and ev[10].call_id == "E5"
    assert ev[11].kind == "agent_message" and ev[11].text == '{"analysis": "bad json", "commands": [}'
    assert any("not JSON" in w for w in log.metadata["warnings"])
    assert log.metadata["agent"] == "terminus-2" and log.metadata["task_complete"] is False


def test_terminus2_load_skill_and_skill_reads(tmp_path: Path) -> None:
    doc = [
        episode(0, "Task", {"load_skill": "pdf"}),
        episode(1, "Loaded skill: pdf\n# PDF skill", {"analysis": "", "plan": "read", "commands": [
            {"keystrokes": "cat /root/.terminus/skills/xlsx/SKILL.md\n"}, "weird"]}),
    ]
    log = parse_log(write(tmp_path, "trajectory.json", json.dumps(doc)), "terminus-2")
    check_invariants(log)
    assert log.skills_used == ["pdf", "xlsx"]
    assert log.events[1].kind == "tool_call" and log.events[1].tool_name == "load_skill"
    assert log.events[2].kind == "tool_output" and log.events[2].call_id == "E2"
    assert log.events[-1].text == "weird"


# ---------------------------------------------------------------- gcpc-jsonl


def test_gcpc_jsonl_documented_example(tmp_path: Path) -> None:
    example = DOCS.read_text(encoding="utf-8").split("```jsonl\n")[1].split("```")[0]
    log = parse_log(write(tmp_path, "agent/run.jsonl", example))
    check_invariants(log)
    assert log.format == "gcpc-jsonl"
    assert [e.kind for e in log.events] == [
        "user", "agent_message", "tool_call", "tool_output", "tool_call", "file_content", "tool_call"]
    assert log.events[3].call_id == "E3" and log.events[3].tool_name == "shell" and log.events[3].is_error
    assert log.events[5].path == "/app/x.py" and log.events[5].text == "def f():\n    return 1\n"
    assert log.skills_offered == ["pdf"] and log.skills_used == ["pdf"]
    assert log.metadata == {"agent": "my-harness", "model": "org/model-x"}


@pytest.mark.parametrize("line, message", [
    ({"kind": "thought", "text": "x"}, "line 2: unknown kind 'thought'"),
    ({"kind": "user"}, "line 2: text must be a string"),
    ({"kind": "user", "text": "x", "colour": 1}, "line 2: unknown key 'colour'"),
    ({"kind": "tool_output", "text": "x", "call_ref": "nope"}, "line 2: call_ref 'nope' names no earlier call"),
    ({"kind": "user", "text": "x", "call": "c"}, "line 2: 'call' is only allowed"),
    ({"kind": "user", "text": "x", "is_error": "yes"}, "line 2: is_error must be a boolean"),
    ([1, 2], "line 2: expected an event object"),
])
def test_gcpc_jsonl_strict(tmp_path: Path, line: Any, message: str) -> None:
    path = write(tmp_path, "agent/x.jsonl", jl({"gcpc_log": 1}, line))
    with pytest.raises(LogError, match=re.escape(message)):
        parse_log(path, "gcpc-jsonl")


def test_gcpc_jsonl_header_and_duplicates(tmp_path: Path) -> None:
    call = {"kind": "tool_call", "text": "ls", "call": "c"}
    with pytest.raises(LogError, match="line 3: call id 'c' is used twice"):
        parse_log(write(tmp_path, "a.jsonl", jl({"gcpc_log": 1}, call, call)))
    with pytest.raises(LogError, match="unsupported gcpc_log version 2"):
        parse_log(write(tmp_path, "b.jsonl", jl({"gcpc_log": 2})))
    with pytest.raises(LogError, match="no \"gcpc_log\" header"):
        parse_log(write(tmp_path, "c.jsonl", jl({"kind": "user", "text": "x"})), "gcpc-jsonl")


# ---------------------------------------------------------------- bad input


BAD_INPUTS: list[tuple[str, bytes, str]] = [
    ("truncated line", (json.dumps(INIT) + "\n" + json.dumps(asst(use("t", "Bash", command="ls")))[:40]).encode(),
     r"line 2: truncated JSON \("),
    ("invalid line", (json.dumps(INIT) + "\n{\"type\": \"user\" \"x\": 1}\n").encode(),
     r"line 2: invalid JSON \(Expecting"),
    ("non-utf8", json.dumps(INIT).encode() + b"\n{\"type\": \"user\", \"x\": \"\xff\xfe\"}\n",
     rf"not UTF-8 \(invalid byte 0xff at byte offset {len(json.dumps(INIT)) + 24}\)"),
    ("binary", b"\x7fELF\x02\x01\x00\x00junk", r"binary file \(NUL byte at byte offset 6\)"),
    ("empty", b"", r"empty file"),
    ("whitespace only", b"\n  \n\t\n", r"empty file"),
    ("line not an object", (json.dumps(INIT) + "\n[1, 2]\n").encode(), r"line 2: expected a JSON object, got array"),
    ("truncated document", b'{"schema_version": "ATIF-v1.2", "steps": [{"source": "us', r"line 1: truncated JSON"),
    ("wrong shape object", b'{"hello": "world"}', r"unknown log format \(a JSON object with keys \['hello'\]\)"),
    ("wrong shape array", b"[1, 2, 3]", r"unknown log format \(a JSON array of 3 items"),
    ("scalar", b"42", r"unknown log format \(a JSON number\)"),
    ("unknown json lines", b'{"event": "a"}\n{"event": "b"}\n', r"unknown log format \(JSON lines whose first line"),
    ("plain text", b"hello world\nthis is not json\n", r"line 1: invalid JSON"),
    ("deep nesting", b"[" * 100000 + b"]" * 100000, r"JSON nested too deeply|unknown log format"),
]


@pytest.mark.parametrize("data, pattern", [(d, p) for _, d, p in BAD_INPUTS], ids=[n for n, _, _ in BAD_INPUTS])
def test_bad_input_raises_log_error_naming_file(tmp_path: Path, data: bytes, pattern: str) -> None:
    path = write(tmp_path, "agent/claude-code.txt", data)
    with pytest.raises(LogError, match=pattern) as err:
        parse_log(path)
    assert str(err.value).startswith(str(path))


def test_too_large_names_size_and_limit(tmp_path: Path) -> None:
    path = write(tmp_path, "agent/claude-code.txt", jl(INIT) * 50)
    size = path.stat().st_size
    with pytest.raises(LogError, match=rf"file is {size} bytes, over the 1000 bytes limit"):
        parse_log(path, max_bytes=1000)
    with pytest.raises(LogError, match=r"over the 1.0 MiB \(1048576 bytes\) limit"):
        parse_log(write(tmp_path, "big.txt", b" " * (2**20 + 1)), max_bytes=2**20)


def test_missing_file_and_forced_wrong_format(tmp_path: Path) -> None:
    with pytest.raises(LogError, match="no such file"):
        parse_log(tmp_path / "nope.txt")
    cc_path = write(tmp_path, "agent/claude-code.txt", jl(INIT))
    with pytest.raises(LogError, match="not an ATIF trajectory"):
        parse_log(cc_path, "atif")
    with pytest.raises(LogError, match="not a terminus-2 log"):
        parse_log(cc_path, "terminus-2")
    with pytest.raises(LogError, match="no Claude Code stream-json records"):
        parse_log(write(tmp_path, "x.txt", jl({"a": 1})), "claude-code")
    with pytest.raises(LogError, match="unsupported log format 'nope'"):
        parse_log(cc_path, "nope")  # type: ignore[arg-type]


@pytest.mark.parametrize("record", [
    asst({"type": "tool_use", "id": "t", "name": "Bash", "input": {"command": None}}),
    {"type": "assistant", "message": "oops"},
    {"type": "assistant", "message": {"content": [None, 3, "str block", {"type": "text", "text": 5}]}},
    {"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": ["x"], "content": {"k": 1}}]}},
    {"type": "system", "subtype": "init", "skills": "not a list", "tools": None},
    {"type": "result", "result": None, "is_error": True},
])
def test_odd_shapes_never_crash(tmp_path: Path, record: dict[str, Any]) -> None:
    path = write(tmp_path, "agent/claude-code.txt", jl(INIT, record))
    try:
        log = parse_log(path)
    except LogError as exc:
        assert str(path) in str(exc)
    else:
        check_invariants(log)


# ---------------------------------------------------------------- detection


def test_every_format_has_a_parser() -> None:
    assert set(PARSERS) == set(get_args(LogFormat))


def test_find_log_prefers_claude_code_over_atif(tmp_path: Path) -> None:
    write(tmp_path, "agent/claude-code.txt", jl(INIT))
    write(tmp_path, "agent/trajectory.json", json.dumps(atif_doc()))
    assert find_log(tmp_path) == (tmp_path / "agent" / "claude-code.txt", "claude-code")


def test_find_log_sniffs_trajectory_json(tmp_path: Path) -> None:
    a = tmp_path / "a"
    write(a, "agent/trajectory.json", json.dumps(atif_doc(), indent=2))
    assert find_log(a) == (a / "agent" / "trajectory.json", "atif")
    t = tmp_path / "t"
    write(t, "agent/trajectory.json", json.dumps([episode(0, "p", {"commands": []})], indent=2))
    assert find_log(t)[1] == "terminus-2"
    s = tmp_path / "s"  # ATIF recognized by "steps" alone
    write(s, "agent/trajectory.json", json.dumps({"steps": []}))
    assert find_log(s)[1] == "atif"


def test_find_log_jsonl_and_errors(tmp_path: Path) -> None:
    g = tmp_path / "g"
    write(g, "agent/aaa.jsonl", jl({"something": "else"}))
    write(g, "agent/run.jsonl", jl({"gcpc_log": 1}, {"kind": "user", "text": "hi"}))
    assert find_log(g) == (g / "agent" / "run.jsonl", "gcpc-jsonl")
    bad = tmp_path / "bad"
    write(bad, "agent/x.jsonl", jl({"something": "else"}))
    with pytest.raises(LogError, match=r"x\.jsonl: unknown log format"):
        find_log(bad)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(LogError) as err:
        find_log(empty)
    assert str(err.value) == (f"{empty}: no agent log found (looked for agent/claude-code.txt, "
                              "agent/trajectory.json, agent/codex.txt, trajectory/acp_trajectory.jsonl, "
                              "trajectory/trajectory.json, agent/*.jsonl, trajectory/*.jsonl, agent/*.txt, "
                              "trajectory/*.json)")
    odd = tmp_path / "odd"
    write(odd, "agent/trajectory.json", json.dumps({"foo": [1]}))
    with pytest.raises(LogError, match=r"trajectory\.json: unknown log format \(a JSON object with keys \['foo'\]\)"):
        find_log(odd)
    with pytest.raises(LogError, match="not a directory"):
        find_log(tmp_path / "missing")


def test_detection_of_large_files_uses_content(tmp_path: Path) -> None:
    big = "x" * 100_000
    atif_path = write(tmp_path, "a/agent/trajectory.json", json.dumps(atif_doc(
        {"source": "user", "message": big}, {"source": "agent", "message": "é" * 40_000}), indent=1))
    assert find_log(tmp_path / "a")[1] == "atif"
    assert parse_log(atif_path).events[0].text == big
    term_path = write(tmp_path, "t/agent/trajectory.json", json.dumps([episode(0, big, {"commands": []})]))
    assert find_log(tmp_path / "t")[1] == "terminus-2"
    assert parse_log(term_path).events[0].text == big
    cc_path = write(tmp_path, "c/agent/claude-code.txt", jl(INIT, asst({"type": "text", "text": big})))
    assert find_log(tmp_path / "c")[1] == "claude-code"
    assert parse_log(cc_path).events[1].text == big
    # a long first line that is not a known record still falls back to a full, correct verdict
    odd = write(tmp_path, "o/agent/trajectory.json", json.dumps({"steps": [{"source": "user", "message": big}],
                                                                 "pad": big}))
    assert find_log(tmp_path / "o")[1] == "atif" and parse_log(odd).events[0].text == big


def test_utf8_bom_and_crlf_are_tolerated(tmp_path: Path) -> None:
    data = ("\ufeff" + jl(INIT, asst({"type": "text", "text": "hi\u2028there"}))).replace("\n", "\r\n")
    log = parse_log(write(tmp_path, "agent/claude-code.txt", data.encode("utf-8")))
    assert log.events[1].text == "hi\u2028there"


# ---------------------------------------------------------------- real corpus


def _manifest() -> list[dict[str, str]]:
    path = CORPUS / "MANIFEST.tsv"
    if not path.is_file():
        return []
    with path.open(encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh, delimiter="\t"))


MANIFEST = _manifest()
needs_corpus = pytest.mark.skipif(not MANIFEST, reason=f"SkillsBench corpus not found at {CORPUS}")


def _expected_format(row: dict[str, str]) -> str:
    if row["log_file"].endswith("claude-code.txt"):
        return "claude-code"
    return "terminus-2" if row["agent"] == "terminus-2" else "atif"


def _strings(value: Any, skip: frozenset[str] = frozenset()) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() if k not in skip for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _tool_io_strings(path: Path, fmt: str) -> list[str]:
    """Every tool input / output string in the raw log (shell `description`s excluded by design)."""
    out: list[str] = []
    narration = frozenset({"description"})
    if fmt == "claude-code":
        for line in path.read_text(encoding="utf-8").splitlines():
            content = (json.loads(line).get("message") or {}).get("content")
            for blk in content if isinstance(content, list) else []:
                if blk.get("type") == "tool_use":
                    out += _strings(blk["input"], narration if blk["name"] == "Bash" else frozenset())
                elif blk.get("type") == "tool_result":
                    out += _strings(blk.get("content"))
    elif fmt == "atif":
        for step in json.loads(path.read_text(encoding="utf-8"))["steps"]:
            for call in step.get("tool_calls") or []:
                shell = call["function_name"] == "run_shell_command"
                out += _strings(call["arguments"], narration if shell else frozenset())
            for result in (step.get("observation") or {}).get("results") or []:
                out += _strings(result.get("content"))
    else:
        for i, ep in enumerate(json.loads(path.read_text(encoding="utf-8"))):
            out += [ep["prompt"]] if i else []
            out += [c["keystrokes"] for c in json.loads(ep["response"]).get("commands", [])]
    return [s for s in out if s]


@needs_corpus
def test_corpus_has_the_expected_mix() -> None:
    counts: dict[str, int] = {}
    for row in MANIFEST:
        counts[_expected_format(row)] = counts.get(_expected_format(row), 0) + 1
    assert counts == {"claude-code": 4, "atif": 6, "terminus-2": 2}


@needs_corpus
@pytest.mark.parametrize("row", MANIFEST, ids=[r["trial_folder"] for r in MANIFEST])
def test_corpus_trial_parses(row: dict[str, str]) -> None:
    trial = CORPUS / row["trial_folder"]
    path, fmt = find_log(trial)
    assert path == trial / row["log_file"] and fmt == _expected_format(row)
    log = parse_log(path, fmt)
    assert log == parse_log(path)  # detection agrees and parsing is deterministic
    check_invariants(log)
    assert "warnings" not in log.metadata
    assert by_kind(log, "tool_call") and by_kind(log, "tool_output")
    assert all(e.call_id is not None for e in log.events if e.kind in ("tool_output", "file_content"))
    for e in log.events:
        if e.kind == "file_content":
            assert e.path, e
        if e.kind == "tool_call" and e.tool_name in ("Read", "read_file"):
            outputs = [o for o in log.events if o.call_id == e.id]
            assert outputs and all(o.kind == "file_content" or o.is_error for o in outputs)
    hay = "\x00".join(e.text for e in log.events)
    missing = [s[:80] for s in _tool_io_strings(path, fmt) if s not in hay]
    assert not missing
    if fmt != "terminus-2":
        assert row["model"].endswith(log.metadata["model"])
    if fmt == "claude-code":
        assert log.skills_offered and log.skills_offered[0] in row["condition_basis"]
    else:
        assert log.skills_offered is None


@needs_corpus
@pytest.mark.parametrize("trial, skills", [
    ("claude-code-claude-haiku-4-5-skills-3d-scan-calc-c59444", ["mesh-analysis"]),
    ("citation-check__hCgckjm", ["citation-management"]),
    ("dialogue-parser__jdinGaX", ["dialogue-graph"]),
    ("citation-check__8t85Dy9", []),
    ("3d-scan-calc__35QwY5n", []),
    ("3d-scan-calc__MeiFyWh", []),
])
def test_corpus_skills_used(trial: str, skills: list[str]) -> None:
    assert parse_log(*find_log(CORPUS / trial)).skills_used == skills


@needs_corpus
@pytest.mark.parametrize("trial, kind, needle", [
    ("claude-code-claude-haiku-4-5-skills-3d-scan-calc-c59444", "tool_output", "Mass = 34648.04123490179 g"),
    ("claude-code-claude-haiku-4-5-skills-3d-scan-calc-c59444", "file_content", "| **42** | Unobtanium | 5.55 |"),
    ("3d-scan-calc__t2HR7VM", "tool_output", "'main_part_material_id': 42, 'total_components': 53"),
    ("dialogue-parser__jdinGaX", "tool_output", "SyntaxError: unmatched ')'"),
    ("citation-check__hCgckjm", "file_content", "@"),
    ("3d-scan-calc__MeiFyWh", "tool_output", "Raw Volume: 6242.890312594911"),
    ("azure-bgp-oscillation-route-leak__tHZERvn", "tool_output", '"description": "Hub2 is customer of Virtual WAN"'),
])
def test_corpus_known_output_verbatim(trial: str, kind: str, needle: str) -> None:
    log = parse_log(*find_log(CORPUS / trial))
    assert any(needle in e.text for e in by_kind(log, kind))


@needs_corpus
def test_corpus_claude_code_details() -> None:
    log = parse_log(*find_log(CORPUS / "claude-code-claude-haiku-4-5-skills-3d-scan-calc-c59444"))
    read_err = next(e for e in log.events if e.text == "EISDIR: illegal operation on a directory, read")
    assert read_err.kind == "tool_output" and read_err.is_error and read_err.tool_name == "Read"
    write_call = next(e for e in log.events if e.text == "file_path: /root/calculate_mass.py")
    written = log.events[write_call.seq]  # the event right after the call
    assert written.kind == "file_content" and written.call_id == write_call.id
    assert written.text.startswith("#!/usr/bin/env python3\nimport sys")
    assert log.metadata["result"]["subtype"] == "success"
    minimax = parse_log(*find_log(CORPUS / "3d-scan-calc__t2HR7VM"))
    assert minimax.skills_used == [] and minimax.metadata["skills_referenced"] == ["mesh-analysis"]


@pytest.mark.parametrize("text, expected", [
    ("", None), ("plain ascii", None), ("caf\u00e9 \u2192 \U0001f600", None),
    ("bad \udc80 byte", "U+DC80"), ("\u00e9\ud800 then \udfff", "U+D800"), ("\ud83d\ude00", "U+D83D"),
])
def test_lone_surrogate_names_the_first_surrogate_whatever_else_the_text_holds(text: str, expected: str | None) -> None:
    """Its fast paths (ASCII, encodable text) must agree with searching every character."""
    assert lone_surrogate(text) == expected


def test_an_atif_continuation_with_a_lone_surrogate_escape_is_refused(tmp_path: Path) -> None:
    """Only the first file's text is searched for escapes: a continuation's events are checked whole."""
    head = {"schema_version": "ATIF-v1.6", "session_id": "s", "agent": {"name": "terminus-2", "version": "2"}}
    (tmp_path / "agent").mkdir()
    (tmp_path / "agent" / "trajectory.json").write_text(json.dumps({
        **head, "steps": [{"step_id": 1, "source": "user", "message": "task"}],
        "continued_trajectory_ref": "trajectory.cont-1.json"}))
    (tmp_path / "agent" / "trajectory.cont-1.json").write_text(json.dumps({
        **head, "steps": [{"step_id": 1, "source": "agent", "message": "caf\u00e9 \udc80"}]}))
    with pytest.raises(LogError, match=r"trajectory.cont-1.json.*lone surrogate U\+DC80"):
        parse_log(*find_log(tmp_path))
