"""Codex `exec --json`, Agent Client Protocol (opencode) and ATIF v1.0-v1.7 logs, continuations included.

Logs here are written from the formats' public descriptions (the Codex CLI's exec JSON events, ACP's
session/update schema, Harbor's ATIF RFC); the opencode sample in ../shared/harness-samples is a
real, unedited run and is read in place.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gcpc_core.ingest import import_project
from gcpc_core.ingest.logs import LogError, find_log, parse_log
from gcpc_core.ingest.logs._io import loads
from gcpc_core.store import Store

from .test_import import make_task

SAMPLES = Path(__file__).resolve().parents[2].parent / "shared" / "harness-samples"
OPENCODE = SAMPLES / "opencode-acp" / "dapt-intrusion-detection__e4122fb2"


def jl(*records: object) -> str:
    return "\n".join(r if isinstance(r, str) else json.dumps(r) for r in records) + "\n"


def write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def kinds(log) -> list[tuple[str, str]]:
    return [(e.kind, e.text) for e in log.events]


# ---- Codex CLI `codex exec --json` ----

CMD = {"id": "item_1", "type": "command_execution", "command": "bash -lc 'pytest -q'",
       "aggregated_output": "", "exit_code": None, "status": "in_progress"}
CODEX = jl(
    "Reading prompt from stdin...",
    {"type": "thread.started", "thread_id": "0199a213-81c0"},
    {"type": "turn.started"},
    {"type": "item.completed", "item": {"id": "item_0", "type": "reasoning", "text": "**Run the tests first**"}},
    {"type": "item.started", "item": CMD},
    {"type": "item.updated", "item": {**CMD, "aggregated_output": "1 failed"}},
    {"type": "item.completed", "item": {**CMD, "aggregated_output": "1 failed, 3 passed\n", "exit_code": 1,
                                        "status": "failed"}},
    {"type": "item.completed", "item": {"id": "item_2", "type": "file_change", "status": "completed",
                                        "changes": [{"path": "/app/x.py", "kind": "update"}]}},
    {"type": "item.started", "item": {"id": "item_3", "type": "mcp_tool_call", "server": "fs", "tool": "read_file",
                                      "arguments": {"path": "/app/x.py"}, "result": None, "error": None,
                                      "status": "in_progress"}},
    {"type": "item.completed", "item": {"id": "item_3", "type": "mcp_tool_call", "server": "fs", "tool": "read_file",
                                        "arguments": {"path": "/app/x.py"}, "status": "completed",
                                        "result": {"content": [{"type": "text", "text": "def f(): return 2"}],
                                                   "structured_content": None}, "error": None}},
    {"type": "item.completed", "item": {"id": "item_4", "type": "web_search", "query": "pytest exit codes"}},
    {"type": "item.completed", "item": {"id": "item_5", "type": "todo_list",
                                        "items": [{"text": "fix f", "completed": True}]}},
    {"type": "item.completed", "item": {"id": "item_6", "type": "error", "message": "sandbox denied write"}},
    {"type": "item.completed", "item": {"id": "item_7", "type": "agent_message", "text": "Fixed f."}},
    {"type": "turn.completed", "usage": {"input_tokens": 1200, "cached_input_tokens": 200, "output_tokens": 345}},
    {"type": "turn.failed", "error": {"message": "stream disconnected"}},
)


def test_codex_exec_json_events_become_one_call_and_one_output_per_item(tmp_path: Path) -> None:
    path = write(tmp_path, "t/agent/codex.txt", CODEX)
    assert find_log(tmp_path / "t") == (path, "codex")
    log = parse_log(path)
    assert log.format == "codex" and log.metadata["session_id"] == "0199a213-81c0"
    assert log.metadata["usage"] == {"input_tokens": 1200, "cached_input_tokens": 200, "output_tokens": 345}
    assert kinds(log) == [
        ("system", "Reading prompt from stdin..."),
        ("agent_thinking", "**Run the tests first**"),
        ("tool_call", "bash -lc 'pytest -q'"),
        ("tool_output", "1 failed, 3 passed\n"),
        ("tool_call", "update: /app/x.py"),
        ("tool_output", "patch completed"),
        ("tool_call", "path: /app/x.py"),
        ("file_content", "def f(): return 2"),
        ("tool_call", "query: pytest exit codes"),
        ("agent_message", "[x] fix f"),
        ("system", "sandbox denied write"),
        ("agent_message", "Fixed f."),
        ("system", "turn failed: stream disconnected"),
    ]
    ev = {e.text: e for e in log.events}
    assert ev["1 failed, 3 passed\n"].call_id == ev["bash -lc 'pytest -q'"].id and ev["1 failed, 3 passed\n"].is_error
    assert ev["def f(): return 2"].path == "/app/x.py" and ev["def f(): return 2"].tool_name == "read_file"
    assert ev["sandbox denied write"].is_error
    assert any("not JSON" in w for w in log.metadata["warnings"])


def test_codex_command_that_never_completed_keeps_its_last_state_with_a_warning(tmp_path: Path) -> None:
    path = write(tmp_path, "codex.txt", jl({"type": "thread.started", "thread_id": "t"},
                                           {"type": "item.started", "item": CMD},
                                           {"type": "item.updated", "item": {**CMD, "aggregated_output": "partial"}}))
    log = parse_log(path)
    assert kinds(log) == [("tool_call", "bash -lc 'pytest -q'"), ("tool_output", "partial")]
    assert any("never completed" in w for w in log.metadata["warnings"])


def test_codex_event_without_an_item_is_a_clear_error(tmp_path: Path) -> None:
    path = write(tmp_path, "codex.txt", jl({"type": "thread.started", "thread_id": "t"},
                                           {"type": "item.completed", "item": "oops"}))
    with pytest.raises(LogError, match=r"codex\.txt line 2: item\.completed without an item object"):
        parse_log(path)


# ---- Agent Client Protocol ----

def _update(update: dict) -> dict:
    return {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "sess-1", "update": update}}


ACP_RAW = jl(
    _update({"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "Fix the test"}}),
    _update({"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "I should "}}),
    _update({"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "run it."}}),
    _update({"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "bash", "kind": "execute",
             "status": "pending", "rawInput": {}}),
    _update({"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "in_progress",
             "rawInput": {"command": "pytest -q", "description": "run tests"}}),
    _update({"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "completed",
             "content": [{"type": "content", "content": {"type": "text", "text": "1 failed"}}]}),
    _update({"sessionUpdate": "tool_call", "toolCallId": "c2", "title": "Read x.py", "kind": "read",
             "status": "completed", "locations": [{"path": "/app/x.py"}],
             "content": [{"type": "content", "content": {"type": "text", "text": "def f(): return 1"}}]}),
    _update({"sessionUpdate": "tool_call", "toolCallId": "c3", "title": "edit", "kind": "edit", "status": "failed",
             "content": [{"type": "content", "content": {"type": "text", "text": "no such file"}}]}),
    _update({"sessionUpdate": "tool_call", "toolCallId": "c4", "title": "write", "kind": "edit",
             "status": "completed",
             "content": [{"type": "diff", "path": "/app/x.py", "oldText": "return 1", "newText": "return 2"}]}),
    _update({"sessionUpdate": "plan", "entries": [{"content": "fix f", "status": "completed", "priority": "high"}]}),
    _update({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Done."}}),
    _update({"sessionUpdate": "agent_message_chunk", "content": {"type": "image", "data": "AAAA",
                                                                  "mimeType": "image/png"}}),
)


def test_acp_session_updates_join_chunks_and_follow_one_call_through_its_updates(tmp_path: Path) -> None:
    path = write(tmp_path, "t/trajectory/acp_trajectory.jsonl", ACP_RAW)
    assert find_log(tmp_path / "t") == (path, "acp")
    log = parse_log(path)
    assert log.metadata["session_id"] == "sess-1"
    assert kinds(log) == [
        ("user", "Fix the test"),
        ("agent_thinking", "I should run it."),
        ("tool_call", "pytest -q"),
        ("tool_output", "1 failed"),
        ("tool_call", "title: Read x.py\npaths: [\"/app/x.py\"]"),
        ("file_content", "def f(): return 1"),
        ("tool_call", "title: edit"),
        ("tool_output", "no such file"),
        ("tool_call", "title: write"),
        ("file_content", "return 2"),
        ("agent_message", "[completed] fix f"),
        ("agent_message", "Done.[image omitted]"),
    ]
    ev = log.events
    assert ev[3].call_id == ev[2].id and ev[2].tool_name == "bash" and ev[2].source == "line 4"
    assert ev[5].path == "/app/x.py" and ev[5].call_id == ev[4].id
    assert ev[7].is_error and ev[9].path == "/app/x.py" and ev[9].call_id == ev[8].id


def test_acp_call_that_never_completed_is_kept_with_a_warning(tmp_path: Path) -> None:
    path = write(tmp_path, "a.jsonl", jl(_update({"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "bash",
                                                  "kind": "execute", "status": "in_progress",
                                                  "rawInput": {"command": "sleep 999"}})))
    log = parse_log(path)
    assert kinds(log) == [("tool_call", "sleep 999")]
    assert any("never completed" in w for w in log.metadata["warnings"])


@pytest.mark.skipif(not OPENCODE.is_dir(), reason=f"real opencode ACP sample not found at {OPENCODE}")
def test_real_opencode_acp_sample_imports_with_outcome_condition_and_event_kinds(tmp_path: Path) -> None:
    tasks = SAMPLES.parent / "skillsbench" / "tasks"
    if not (tasks / "dapt-intrusion-detection").is_dir():
        pytest.skip(f"its task definition is not at {tasks}")
    store = Store(tmp_path / "p.db")
    report = import_project(store, tasks_dir=tasks, trials_dir=OPENCODE.parent, progress=False)
    assert report.skipped == [] and report.trials_imported == 1
    t = store.trials.get_trajectory("dapt-intrusion-detection__e4122fb2")
    assert (t.outcome, t.reward, t.reward_source) == ("FAIL", 0.0, "result.json")
    assert (t.condition, t.condition_basis) == ("without-skills", "config.json skills_dir is null")
    assert (t.agent, t.model, t.log_format, t.log_path) == (
        "opencode", "google/gemini-3-flash-preview", "acp", "trajectory/acp_trajectory.jsonl")
    assert t.tokens["n_tool_calls"] == 14 and t.timings["durations_s"]["agent_execution"] == 120.0
    assert len(t.ctrf) == 14 and sum(c.status == "failed" for c in t.ctrf) == 5
    events = store.trials.events(t.id)
    counts = {k: sum(e.kind == k for e in events) for k in {e.kind for e in events}}
    # 14 tool calls as result.json counts them; 4 writes/edits give their new text, 2 reads the file read
    assert counts == {"user": 1, "agent_thinking": 8, "agent_message": 1, "tool_call": 14, "tool_output": 12,
                      "file_content": 6}
    reads = [e for e in events if e.kind == "file_content" and e.tool_name == "read"]
    assert [e.path for e in reads] == ["/root/network_stats.csv"] * 2
    again = import_project(store, tasks_dir=tasks, trials_dir=OPENCODE.parent, progress=False)
    assert again.trials_unchanged == 1 and again.trials_updated == 0


# ---- Harbor ATIF v1.0-v1.7 ----

def _atif(version: str, steps: list[dict], **extra: object) -> dict:
    return {"schema_version": f"ATIF-v{version}", "session_id": "s1", "agent": {"name": "terminus-2",
            "version": "2.0", "model_name": "m"}, "steps": steps, **extra}


def _call_step(step_id: int, call_id: str, keys: str, output: object, **result: object) -> dict:
    return {"step_id": step_id, "source": "agent", "message": f"step {step_id}",
            "tool_calls": [{"tool_call_id": call_id, "function_name": "bash_command",
                            "arguments": {"keystrokes": keys, "duration": 0.1}}],
            "observation": {"results": [{"source_call_id": call_id, "content": output, **result}]}}


@pytest.mark.parametrize("version", ["1.0", "1.1", "1.2", "1.3", "1.4", "1.5", "1.6", "1.7"])
def test_atif_versions_link_calls_to_results(tmp_path: Path, version: str) -> None:
    doc = _atif(version, [{"step_id": 1, "source": "user", "message": "task"},
                          _call_step(2, "call_a", "ls /app\n", "x.py")])
    path = write(tmp_path, "t/agent/trajectory.json", json.dumps(doc))
    assert find_log(tmp_path / "t") == (path, "atif")
    log = parse_log(path)
    assert kinds(log) == [("user", "task"), ("agent_message", "step 2"), ("tool_call", "ls /app\n"),
                          ("tool_output", "x.py")]
    assert log.events[3].call_id == log.events[2].id and log.metadata["schema_version"] == f"ATIF-v{version}"


def test_atif_multimodal_parts_become_placeholders_and_subagent_refs_are_marked(tmp_path: Path) -> None:
    image = {"type": "image", "source": {"media_type": "image/png", "path": "images/step_2.png"}}
    doc = _atif("1.7", [
        {"step_id": 1, "source": "user", "message": [{"type": "text", "text": "look at this"}, image]},
        _call_step(2, "call_a", "screenshot\n", [{"type": "text", "text": "saved"}, image]),
        {"step_id": 3, "source": "agent", "message": "summarizing",
         "observation": {"results": [{"content": None, "subagent_trajectory_ref": [
             {"session_id": "sum-1", "trajectory_path": "trajectory.summarization-1-summary.json"}]}]}},
    ])
    log = parse_log(write(tmp_path, "trajectory.json", json.dumps(doc)))
    texts = kinds(log)
    assert texts[0] == ("user", "look at this\n[image images/step_2.png omitted]")
    assert ("tool_output", "saved\n[image images/step_2.png omitted]") in texts
    assert texts[-1] == ("system", "subagent trajectory: trajectory.summarization-1-summary.json "
                                   "(its steps are not part of this run)")
    assert log.metadata["subagent_trajectories"] == ["trajectory.summarization-1-summary.json"]


def _continued(tmp_path: Path, *, refs: bool) -> Path:
    agent = tmp_path / "t" / "agent"
    first = _atif("1.6", [{"step_id": 1, "source": "user", "message": "task"},
                          _call_step(2, "call_0", "make\n", "built")],
                  **({"continued_trajectory_ref": "trajectory.cont-1.json"} if refs else {}))
    copied = [{"step_id": 1, "source": "user", "message": "task", "is_copied_context": True},
              {"step_id": 2, "source": "user", "message": "summary of earlier work", "is_copied_context": True}]
    second = _atif("1.6", [*copied, _call_step(3, "call_0", "make test\n", "ok")],
                   **({"continued_trajectory_ref": "trajectory.cont-2.json"} if refs else {}))
    third = _atif("1.6", [copied[0], _call_step(2, "call_0", "echo done\n", "done")])
    write(agent, "trajectory.json", json.dumps(first))
    write(agent, "trajectory.cont-2.json", json.dumps(third))  # written first: order comes from refs or numbers
    write(agent, "trajectory.cont-1.json", json.dumps(second))
    write(agent, "trajectory.summarization-1-summary.json", json.dumps(_atif("1.6", [])))
    return agent / "trajectory.json"


@pytest.mark.parametrize("refs", [True, False], ids=["continued_trajectory_ref", "numbered"])
def test_atif_continuations_join_into_one_run_with_seams(tmp_path: Path, refs: bool) -> None:
    log = parse_log(_continued(tmp_path, refs=refs))
    assert kinds(log) == [
        ("user", "task"), ("agent_message", "step 2"), ("tool_call", "make\n"), ("tool_output", "built"),
        ("system", "continued in trajectory.cont-1.json (session s1): the agent's context was summarized here"),
        ("agent_message", "step 3"), ("tool_call", "make test\n"), ("tool_output", "ok"),
        ("system", "continued in trajectory.cont-2.json (session s1): the agent's context was summarized here"),
        ("agent_message", "step 2"), ("tool_call", "echo done\n"), ("tool_output", "done"),
    ]
    ev = log.events
    assert ev[7].call_id == ev[6].id and ev[11].call_id == ev[10].id  # the same call id in each file stays apart
    assert ev[6].source == "trajectory.cont-1.json steps[2].tool_calls[0]"
    assert log.metadata["copied_context_steps"] == {"trajectory.cont-1.json": 2, "trajectory.cont-2.json": 1}
    assert log.metadata["continuations"] == ["trajectory.cont-1.json", "trajectory.cont-2.json"]


def test_atif_continuation_refs_must_stay_beside_the_log(tmp_path: Path) -> None:
    path = write(tmp_path, "trajectory.json", json.dumps(_atif("1.6", [], continued_trajectory_ref="../x.json")))
    with pytest.raises(LogError, match="is not a file name beside it"):
        parse_log(path)


def test_a_changed_continuation_file_reimports_the_trial(tmp_path: Path) -> None:
    make_task(tmp_path)
    trial = tmp_path / "trials" / "demo-task__cont"
    log = _continued(trial.parent / "x", refs=False)
    (trial / "agent").parent.mkdir(parents=True)
    log.parent.rename(trial / "agent")
    write(trial, "result.json", json.dumps({"task_name": "demo-task", "trial_name": "demo-task__cont",
                                            "verifier_result": {"rewards": {"reward": 1.0}}}))
    store = Store(tmp_path / "p.db")
    first = import_project(store, tasks_dir=tmp_path / "tasks", trials_dir=tmp_path / "trials", progress=False)
    assert first.trials_imported == 1 and len(store.trials.events("demo-task__cont")) == 12
    cont = trial / "agent" / "trajectory.cont-2.json"
    cont.write_text(cont.read_text().replace("echo done", "echo changed"))
    second = import_project(store, trials_dir=tmp_path / "trials", progress=False)
    assert second.trials_updated == 1
    assert "echo changed\n" in [e.text for e in store.trials.events("demo-task__cont")]
    assert import_project(store, trials_dir=tmp_path / "trials", progress=False).trials_unchanged == 1


@pytest.mark.parametrize("doc", [
    '{"a": 123456789012345678901234567890, "b": -98765432109876543210, "c": 1e30}',  # beyond 64 bits
    '[1.5, "x", {"y": [true, null, 18446744073709551615]}]', "NaN", '{"n": Infinity}', '"\\udc80"',
    "[" * 300 + "]" * 300, '{"a": 1, "a": 2}', '"\u2028 raw separator"',
])
def test_fast_json_decoding_gives_what_the_standard_decoder_gives(doc: str) -> None:
    assert json.dumps(loads(doc)) == json.dumps(json.loads(doc))
    assert type(loads(doc)) is type(json.loads(doc))
