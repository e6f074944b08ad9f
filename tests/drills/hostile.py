"""Hostile-text fixture: a task and a trial whose instruction, verifier and agent log carry markup,
script, `javascript:` links, remote markdown images, ANSI escapes and a 1 MB single line.

The importer must store all of it byte for byte (the app must then show it as text, run nothing and
load nothing: the browser suite reuses this fixture for that). `write_hostile_corpus` writes Harbor
task and trial folders; `add_hostile_project` imports them into a project DB and adds a frozen
checklist whose probe judgments cite the hostile spans, so the item audit page has hostile citations
to show.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from gcpc_core.checklist import Checklist, load_rules
from gcpc_core.checklist.registry import register_checklist
from gcpc_core.ingest import ImportReport, import_project
from gcpc_core.judge import judge_project, score_project
from gcpc_core.store import Store

__all__ = ["HOSTILE", "TASK_ID", "TRIAL_ID", "HostileCorpus", "add_hostile_project", "write_hostile_corpus"]

TASK_ID = "hostile-markup"
TRIAL_ID = "hostile-markup__h0st1le"
HOSTILE: dict[str, str] = {
    "script": "<script>alert(1)</script>",
    "img_onerror": "<img src=x onerror=alert(1)>",
    "javascript_link": "[x](javascript:alert(1))",
    "markdown_image": "![i](http://127.0.0.1:1/x.png)",
    "ansi": "\x1b[31mRED\x1b[0m \x1b]0;pwned\x07 \x1b[2J\x1b[H",
}
"""Name → hostile text. The image points at a closed loopback port: a browser that loads it shows up
as a failed request, and nothing leaves the machine."""
HOSTILE_BLOCK = "\n".join(HOSTILE.values())


def huge_line(n_bytes: int) -> str:
    """One line of `n_bytes` ASCII characters that starts and ends with hostile markup."""
    head, tail = HOSTILE["script"], HOSTILE["img_onerror"]
    return head + "A" * max(0, n_bytes - len(head) - len(tail)) + tail


@dataclass(frozen=True)
class HostileCorpus:
    tasks_dir: Path
    trials_dir: Path
    instruction: str
    """instruction.md exactly as written."""
    event_texts: dict[str, str]
    """Role → the exact text one stored event must have (tool call, tool outputs, file content, message)."""


def _instruction(huge: str) -> str:
    return (
        f"# Hostile markup\n\nWrite `/root/report.md` that repeats these lines verbatim:\n\n{HOSTILE_BLOCK}\n\n"
        f"The report must keep the line {HOSTILE['script']} unchanged.\n\n"
        f"The report must keep the link {HOSTILE['javascript_link']} unchanged.\n\n"
        f"A long line follows.\n\n{huge}\n"
    )


VERIFIER = f'''"""Checks of /root/report.md. {HOSTILE['img_onerror']}"""

from pathlib import Path

REPORT = Path("/root/report.md")


def test_report_keeps_script_line():
    """{HOSTILE['script']}"""
    assert {HOSTILE['script']!r} in REPORT.read_text()


def test_report_keeps_javascript_link():
    """{HOSTILE['javascript_link']} {HOSTILE['markdown_image']}"""
    assert {HOSTILE['javascript_link']!r} in REPORT.read_text()
'''


def _log_lines(event_texts: dict[str, str]) -> list[dict]:
    def call(key: str, name: str, arguments: dict) -> dict:
        return {"type": "assistant", "message": {"role": "assistant", "content": [
            {"type": "tool_use", "id": key, "name": name, "input": arguments}]}}

    def result(key: str, content: str) -> dict:
        return {"type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": key, "content": content, "is_error": False}]}}

    return [
        {"type": "system", "subtype": "init", "model": "fake/hostile-model", "claude_code_version": "2.0.0",
         "cwd": "/root", "tools": ["Bash", "Write"], "skills": []},
        {"type": "assistant", "message": {"role": "assistant", "content": [
            {"type": "text", "text": event_texts["agent_message"]}]}},
        call("toolu_1", "Bash", {"command": event_texts["tool_call"]}),
        result("toolu_1", event_texts["tool_output"]),
        call("toolu_2", "Bash", {"command": "cat /root/big.txt"}),
        result("toolu_2", event_texts["huge_output"]),
        call("toolu_3", "Write", {"file_path": "/root/report.md", "content": event_texts["file_content"]}),
        result("toolu_3", "File created successfully at: /root/report.md"),
        {"type": "result", "subtype": "success", "is_error": False, "num_turns": 4, "result": HOSTILE_BLOCK},
    ]


def write_hostile_corpus(root: Path, *, huge_line_bytes: int = 2**20) -> HostileCorpus:
    """Write `root/tasks/<TASK_ID>` and `root/trials/<TRIAL_ID>` (a FAIL trial in Claude Code format)."""
    huge = huge_line(huge_line_bytes)
    task_dir, trial_dir = root / "tasks" / TASK_ID, root / "trials" / TRIAL_ID
    (task_dir / "tests").mkdir(parents=True)
    instruction = _instruction(huge)
    (task_dir / "instruction.md").write_bytes(instruction.encode())
    (task_dir / "tests" / "test_outputs.py").write_text(VERIFIER, encoding="utf-8")
    (task_dir / "tests" / "test.sh").write_text("#!/bin/bash\npytest /tests/test_outputs.py\n", encoding="utf-8")
    event_texts = {
        "agent_message": f"Here is the markup:\n{HOSTILE_BLOCK}",
        "tool_call": f"printf '%s\\n' '{HOSTILE['script']}' '{HOSTILE['img_onerror']}'",
        "tool_output": f"{HOSTILE_BLOCK}\r\noverwritten\rEVIL\n",
        "huge_output": huge,
        "file_content": HOSTILE_BLOCK + "\n",
    }
    (trial_dir / "agent").mkdir(parents=True)
    (trial_dir / "verifier").mkdir()
    log = "\n".join(json.dumps(line) for line in _log_lines(event_texts)) + "\n"
    (trial_dir / "agent" / "claude-code.txt").write_text(log, encoding="utf-8")
    (trial_dir / "result.json").write_text(json.dumps({
        "task_name": TASK_ID, "trial_name": TRIAL_ID,
        "agent_info": {"name": "claude-code", "version": "2.0.0"},
        "config": {"agent": {"model_name": "fake/hostile-model"}, "task": {"path": f"/tasks/{TASK_ID}"}},
        "verifier_result": {"rewards": {"reward": 0.0}},
        "exception_info": {"exception_type": HOSTILE["script"], "exception_message": HOSTILE["ansi"]},
    }), encoding="utf-8")
    (trial_dir / "verifier" / "ctrf.json").write_text(json.dumps({"results": {"tests": [
        {"name": "test_outputs.py::test_report_keeps_script_line", "status": "passed"},
        {"name": "test_outputs.py::test_report_keeps_javascript_link", "status": "failed",
         "message": f"AssertionError: {HOSTILE_BLOCK}"},
    ]}}), encoding="utf-8")
    return HostileCorpus(root / "tasks", root / "trials", instruction, event_texts)


HOSTILE_CHECKLIST = {
    "task": TASK_ID,
    "source": "human:gcpc-drills",
    "items": [
        {"id": "H1", "route": "assertion",
         "text": f"/root/report.md contains the line `{HOSTILE['script']}` verbatim",
         "task_quote": f"The report must keep the line {HOSTILE['script']} unchanged.",
         "verifier_refs": ["test_outputs.py::test_report_keeps_script_line"],
         "probes": [{"pattern": "<script>alert\\(1\\)</script>", "polarity": "yes"}]},
        {"id": "H2", "route": "assertion",
         "text": f"/root/report.md contains the link `{HOSTILE['javascript_link']}` verbatim",
         "task_quote": f"The report must keep the link {HOSTILE['javascript_link']} unchanged.",
         "verifier_refs": ["test_outputs.py::test_report_keeps_javascript_link"],
         "probes": [{"pattern": "\\[x\\]\\(javascript:alert\\(1\\)\\)", "polarity": "yes"}]},
        {"id": "H3", "route": "generated",
         "text": f"/root/report.md contains the line `{HOSTILE['img_onerror']}` verbatim",
         "task_quote": HOSTILE["img_onerror"],
         "probes": [{"pattern": "<img src=x onerror=alert\\(1\\)>", "polarity": "yes"}]},
        {"id": "H4", "route": "generated",
         "text": f"/root/report.md contains the image markup `{HOSTILE['markdown_image']}` verbatim",
         "task_quote": HOSTILE["markdown_image"],
         "probes": [{"pattern": "!\\[i\\]\\(http://127\\.0\\.0\\.1:1/x\\.png\\)", "polarity": "yes"}]},
    ],
}


def add_hostile_project(store: Store, root: Path, *,
                        huge_line_bytes: int = 2**20) -> tuple[HostileCorpus, ImportReport]:
    """Write the corpus under `root`, import it, freeze `HOSTILE_CHECKLIST`, probe-judge and score."""
    corpus = write_hostile_corpus(root, huge_line_bytes=huge_line_bytes)
    report = import_project(store, tasks_dir=corpus.tasks_dir, trials_dir=corpus.trials_dir, progress=False)
    rules = load_rules()
    row, failures = register_checklist(store, Checklist.model_validate(HOSTILE_CHECKLIST), created_by="gcpc drills",
                                       rules=rules)
    if row is None:
        raise RuntimeError(f"hostile checklist fails gates: {[f.line() for f in failures]}")
    judge_project(store, judge="probe", progress=False, rules=rules)
    score_project(store)
    return corpus, report
