"""Embedded, clearly-labelled DEMO corpus: small Harbor tasks plus simulated Claude Code trials.

Everything written here is invented by GCPC for demos and tests. No agent was run: the logs are
simulated turn by turn against an in-memory workspace, and the verifier outcome of every trial is
computed from the files that workspace ends with. `write_demo_corpus` lays the result out like
SkillsBench/Harbor (`tasks/<task>/...`, `trials/<trial>/...`). `DEMO_MARKER` labels task.toml,
result.json and each log's init line; instructions and verifiers read like real task files.

Layout of this module: a simulated Claude Code session (`_Session`), three task definitions (data,
instruction, official verifier, a pure-Python mirror of that verifier, and a scenario-driven agent
script each), then the trial assembly (result.json, config.json, CTRF, test stdout) and the writer.
Output is a pure function of the seed: byte-identical for the same seed, no wall clock.
"""

from __future__ import annotations

import ast
import configparser
import csv
import hashlib
import io
import json
import random
import re
import shutil
import string
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from fnmatch import fnmatch
from pathlib import Path
from typing import Any, Literal

from .defaults import DEMO_SEED

__all__ = [
    "CONDITIONS",
    "DEMO_MARKER",
    "DEMO_SEED",
    "DEMO_MODELS",
    "DemoCorpus",
    "DemoTrial",
    "build_demo_corpus",
    "write_demo_corpus",
]

DEMO_MARKER = "GCPC DEMO DATA (simulated, not a real agent run)"
DEMO_MODELS: tuple[str, ...] = ("demo/sim-model-a", "demo/sim-model-b")
CONDITIONS: tuple[str, str] = ("with-skills", "without-skills")
REPEATS = 3
"""Trials per (task, model, condition); trial index `r` under both conditions forms a matched pair."""

LOG_BYTES = (5 * 1024, 40 * 1024)
"""Size bounds of every simulated agent log."""

AGENT_NAME = "claude-code"
AGENT_VERSION = "2.1.0"
AGENT_TIMEOUT_SEC = 600.0
BASE_TIME = datetime(2026, 1, 12, 9, 0, 0, tzinfo=UTC)
_ALNUM = string.ascii_letters + string.digits
_TOOLS = ["Task", "Bash", "Glob", "Grep", "Read", "Edit", "Write", "NotebookEdit", "WebFetch",
          "TodoWrite", "WebSearch", "Skill"]

Workspace = dict[str, str]
"""The simulated container's files: absolute path -> text."""


# --------------------------------------------------------------------------------------------
# Small helpers
# --------------------------------------------------------------------------------------------


def _uuid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def _token(rng: random.Random, n: int) -> str:
    return "".join(rng.choice(_ALNUM) for _ in range(n))


def _iso(dt: datetime) -> str:
    return dt.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _n_tokens(text: str) -> int:
    return max(1, len(text) // 4)


def _numbered(lines: list[str], start: int = 1) -> str:
    """Claude Code's numbered-line rendering (`cat -n` style with an arrow)."""
    return "\n".join(f"{i:>6}\u2192{line}" for i, line in enumerate(lines, start))


def _fill(template: str, **values: object) -> str:
    """Replace `@@NAME@@` placeholders (templates hold Python/TOML braces, so no str.format)."""
    for key, value in values.items():
        template = template.replace(f"@@{key}@@", str(value))
    assert "@@" not in template, "unfilled placeholder"
    return template


def _literal(value: list[Any] | dict[str, Any]) -> str:
    """A Python literal with one item per line, as a person would write it in a verifier."""
    if isinstance(value, dict):
        return "{\n" + "".join(f"    {k!r}: {v!r},\n" for k, v in value.items()) + "}"
    return "[\n" + "".join(f"    {item!r},\n" for item in value) + "]"


def _dumps(obj: Any) -> str:
    return json.dumps(obj, indent=4) + "\n"


# --------------------------------------------------------------------------------------------
# Simulated Claude Code session (stream-json)
# --------------------------------------------------------------------------------------------


@dataclass
class _Call:
    """One tool call and what the tool returned (output None: the run was killed first)."""

    id: str
    name: str
    input: dict[str, Any]
    output: str | None
    is_error: bool = False
    meta: Any = None
    """Claude Code's `tool_use_result` payload."""
    followup: str | None = None
    """Extra user text after the result (a launched skill's instructions)."""
    as_blocks: bool = False
    """Render the result content as a list of text blocks instead of a string."""
    seconds: float = 0.5


class _Session:
    """A simulated Claude Code run: tool helpers act on the workspace, `turn` emits log lines."""

    def __init__(self, rng: random.Random, model: str, workspace: Workspace, skills: list[str]) -> None:
        self.rng = rng
        self.model = model
        self.model_short = model.split("/")[-1]
        self.ws: Workspace = dict(workspace)
        self.skills = skills
        self.session_id = _uuid(rng)
        self.lines: list[dict[str, Any]] = []
        self.turns = 0
        self.elapsed = 0.0
        self.api_seconds = 0.0
        self.context = rng.randint(9000, 14000)
        self.fresh = self.context
        self.totals = Counter[str]()
        self.thinks = rng.random() < (0.9 if model == DEMO_MODELS[0] else 0.35)
        self.bash_blocks = rng.random() < 0.4
        self.finished = False
        self.killed = False
        self._emit({
            "type": "system", "subtype": "init", "cwd": "/root", "session_id": self.session_id,
            "tools": _TOOLS, "mcp_servers": [], "model": model, "permissionMode": "default",
            "slash_commands": [*skills, "compact", "context", "cost", "init", "review"],
            "apiKeySource": "none", "claude_code_version": AGENT_VERSION, "output_style": "default",
            "agents": ["general-purpose", "Explore", "Plan"], "skills": list(skills), "plugins": [],
            "gcpc_demo": DEMO_MARKER, "uuid": _uuid(rng),
        })

    # -- choices --------------------------------------------------------------------------

    def pick(self, options: list[str] | tuple[str, ...]) -> str:
        return self.rng.choice(options)

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    # -- emission -------------------------------------------------------------------------

    def _emit(self, obj: dict[str, Any]) -> None:
        self.lines.append(obj)

    def _user(self, content: list[dict[str, Any]], meta: Any = None, **extra: Any) -> None:
        line: dict[str, Any] = {"type": "user", "message": {"role": "user", "content": content},
                                "parent_tool_use_id": None, "session_id": self.session_id,
                                "uuid": _uuid(self.rng), **extra}
        if meta is not None:
            line["tool_use_result"] = meta
        self._emit(line)

    def turn(self, text: str | None = None, *calls: _Call, thinking: str | None = None) -> None:
        """One assistant message (thinking, text, tool calls; one line per block) and its results."""
        blocks: list[dict[str, Any]] = []
        if thinking and self.thinks:
            blocks.append({"type": "thinking", "thinking": thinking})
        if text:
            blocks.append({"type": "text", "text": text})
        blocks += [{"type": "tool_use", "id": c.id, "name": c.name, "input": c.input} for c in calls]
        usage = {"input_tokens": self.rng.randint(1, 9), "cache_creation_input_tokens": self.fresh,
                 "cache_read_input_tokens": self.context, "output_tokens": _n_tokens(json.dumps(blocks))}
        self.totals.update(usage)
        self.context += self.fresh
        self.fresh = usage["output_tokens"]
        msg_id = "msg_demo_" + _token(self.rng, 24)
        for block in blocks:
            self._emit({
                "type": "assistant",
                "message": {"model": self.model_short, "id": msg_id, "type": "message", "role": "assistant",
                            "content": [block], "stop_reason": None, "stop_sequence": None, "usage": usage,
                            "context_management": None},
                "parent_tool_use_id": None, "session_id": self.session_id, "uuid": _uuid(self.rng),
            })
        latency = self.rng.uniform(1.5, 4.0) + usage["output_tokens"] / 90
        self.api_seconds += latency
        self.elapsed += latency
        self.turns += 1
        for call in calls:
            if call.output is None:
                continue
            content: str | list[dict[str, str]] = call.output
            if call.as_blocks:
                content = [{"type": "text", "text": call.output}]
            block: dict[str, Any] = {"tool_use_id": call.id, "type": "tool_result", "content": content}
            if call.is_error or call.name == "Bash":
                block["is_error"] = call.is_error
            self._user([block], call.meta)
            self.fresh += _n_tokens(call.output)
            self.elapsed += call.seconds
            if call.followup:
                self._user([{"type": "text", "text": call.followup}], isMeta=True)
                self.fresh += _n_tokens(call.followup)

    def finish(self, text: str) -> None:
        """Final assistant message and the closing `result` line."""
        self.turn(text)
        cost = round(self.totals["input_tokens"] * 3e-6 + self.totals["cache_creation_input_tokens"] * 3.75e-6
                     + self.totals["cache_read_input_tokens"] * 3e-7 + self.totals["output_tokens"] * 1.5e-5, 6)
        usage = {k: self.totals[k] for k in ("input_tokens", "cache_creation_input_tokens",
                                             "cache_read_input_tokens", "output_tokens")}
        self._emit({
            "type": "result", "subtype": "success", "is_error": False,
            "duration_ms": int(self.elapsed * 1000), "duration_api_ms": int(self.api_seconds * 1000),
            "num_turns": self.turns, "result": text, "session_id": self.session_id, "total_cost_usd": cost,
            "usage": {**usage, "server_tool_use": {"web_search_requests": 0, "web_fetch_requests": 0},
                      "service_tier": "standard"},
            "modelUsage": {self.model: {"inputTokens": usage["input_tokens"], "outputTokens": usage["output_tokens"],
                                        "cacheReadInputTokens": usage["cache_read_input_tokens"],
                                        "cacheCreationInputTokens": usage["cache_creation_input_tokens"],
                                        "webSearchRequests": 0, "costUSD": cost, "contextWindow": 200000,
                                        "maxOutputTokens": 32000}},
            "permission_denials": [], "uuid": _uuid(self.rng),
        })
        self.finished = True

    def kill(self) -> None:
        """The harness killed the agent at its timeout: the log simply stops."""
        self.elapsed = AGENT_TIMEOUT_SEC
        self.killed = True

    def log_text(self) -> str:
        return "".join(json.dumps(line) + "\n" for line in self.lines)

    # -- tools ----------------------------------------------------------------------------

    def _call(self, name: str, input: dict[str, Any], output: str | None, **kw: Any) -> _Call:
        return _Call("toolu_demo_" + _token(self.rng, 22), name, input, output, **kw)

    def read(self, path: str, limit: int | None = None) -> _Call:
        args: dict[str, Any] = {"file_path": path} | ({"limit": limit} if limit else {})
        text = self.ws.get(path)
        if text is None:
            return self._call("Read", args, "File does not exist.", is_error=True,
                              meta="Error: File does not exist.")
        lines = text.splitlines()
        shown = lines[:limit] if limit else lines
        meta = {"type": "text", "file": {"filePath": path, "content": "\n".join(shown), "numLines": len(shown),
                                         "startLine": 1, "totalLines": len(lines)}}
        return self._call("Read", args, _numbered(shown), meta=meta, seconds=0.1)

    def write(self, path: str, content: str) -> _Call:
        existed = path in self.ws
        self.ws[path] = content
        if existed:
            output = (f"The file {path} has been updated. Here's the result of running `cat -n` on a snippet "
                      f"of the edited file:\n{_numbered(content.splitlines()[:12])}")
        else:
            output = f"File created successfully at: {path}"
        meta = {"type": "update" if existed else "create", "filePath": path, "content": content,
                "structuredPatch": []}
        return self._call("Write", {"file_path": path, "content": content}, output, meta=meta, seconds=0.1)

    def edit(self, path: str, old: str, new: str) -> _Call:
        args = {"file_path": path, "old_string": old, "new_string": new}
        text = self.ws.get(path, "")
        if text.count(old) != 1:
            return self._call("Edit", args, f"<tool_use_error>String to replace not found in file.\nString: {old}"
                                            "</tool_use_error>", is_error=True,
                              meta="Error: String to replace not found in file.")
        updated = text.replace(old, new)
        self.ws[path] = updated
        first = text[: text.index(old)].count("\n")
        lines = updated.splitlines()
        lo, hi = max(0, first - 3), min(len(lines), first + new.count("\n") + 4)
        output = (f"The file {path} has been updated. Here's the result of running `cat -n` on a snippet of the "
                  f"edited file:\n{_numbered(lines[lo:hi], lo + 1)}")
        meta = {"filePath": path, "oldString": old, "newString": new, "structuredPatch": [],
                "userModified": False, "replaceAll": False}
        return self._call("Edit", args, output, meta=meta, seconds=0.1)

    def bash(self, command: str, output: str | None = "", *, exit_code: int = 0, stderr: str = "",
             writes: Workspace | None = None, description: str | None = None, timeout_s: float | None = None,
             seconds: float | None = None) -> _Call:
        """Run a command whose effect (`writes`) and output the scenario computed."""
        args: dict[str, Any] = {"command": command}
        if description:
            args["description"] = description
        if writes:
            self.ws.update(writes)
        if output is None:
            return self._call("Bash", args, None)
        combined = "\n".join(part for part in (output, stderr) if part)
        if timeout_s is not None:
            text = f"Command timed out after {int(timeout_s // 60)}m {timeout_s % 60:.1f}s\n{combined}".rstrip()
            return self._call("Bash", args, text, is_error=True, seconds=timeout_s,
                              meta={"stdout": output, "stderr": stderr, "interrupted": True, "isImage": False})
        text = f"Exit code {exit_code}\n{combined}" if exit_code else combined
        meta = {"stdout": output, "stderr": stderr, "interrupted": False, "isImage": False}
        return self._call("Bash", args, text, is_error=exit_code != 0, meta=meta, as_blocks=self.bash_blocks,
                          seconds=seconds if seconds is not None else self.rng.uniform(0.2, 2.5))

    def cat(self, *paths: str) -> _Call:
        missing = [p for p in paths if p not in self.ws]
        shown = "".join(self.ws[p] for p in paths if p in self.ws).rstrip("\n")
        errors = "\n".join(f"cat: {p}: No such file or directory" for p in missing)
        return self.bash(f"cat {' '.join(paths)}", shown, stderr=errors, exit_code=1 if missing else 0)

    def head(self, path: str, n: int) -> _Call:
        return self.bash(f"head -n {n} {path}", "\n".join(self.ws[path].splitlines()[:n]))

    def ls(self, folder: str) -> _Call:
        prefix = folder.rstrip("/") + "/"
        names = sorted({p[len(prefix):].split("/")[0] for p in self.ws if p.startswith(prefix)})
        rows = ["total " + str(4 * (len(names) + 2)),
                "drwxr-xr-x 2 root root 4096 Jan 12 08:58 .", "drwx------ 1 root root 4096 Jan 12 08:58 .."]
        for name in names:
            path = prefix + name
            if path in self.ws:
                rows.append(f"-rw-r--r-- 1 root root {len(self.ws[path].encode()):>5} Jan 12 08:58 {name}")
            else:
                rows.append(f"drwxr-xr-x 2 root root  4096 Jan 12 08:58 {name}")
        return self.bash(f"ls -la {folder}", "\n".join(rows))

    def glob(self, pattern: str, path: str = "/root") -> _Call:
        prefix = path.rstrip("/") + "/"
        patterns = (pattern, pattern[3:]) if pattern.startswith("**/") else (pattern,)  # `**/` also matches `.`
        found = sorted(p for p in self.ws if p.startswith(prefix) and any(fnmatch(p[len(prefix):], pat)
                                                                          for pat in patterns))
        meta = {"filenames": found, "durationMs": self.rng.randint(3, 40), "numFiles": len(found),
                "truncated": False}
        return self._call("Glob", {"pattern": pattern, "path": path}, "\n".join(found) or "No files found",
                          meta=meta, seconds=0.05)

    def grep(self, pattern: str, path: str, mode: Literal["count", "content"] = "content",
             head_limit: int | None = None) -> _Call:
        hits = [(i, line) for i, line in enumerate(self.ws.get(path, "").splitlines(), 1) if re.search(pattern, line)]
        args: dict[str, Any] = {"pattern": pattern, "path": path, "output_mode": mode}
        if mode == "count":
            output = f"{path}:{len(hits)}\n\nFound {len(hits)} total occurrences across 1 file."
        else:
            args["-n"] = True
            shown = hits[:head_limit] if head_limit else hits
            if head_limit:
                args["head_limit"] = head_limit
            output = "\n".join(f"{i}:{line}" for i, line in shown) or "No matches found"
        meta = {"mode": mode, "numFiles": 1, "filenames": [path], "numLines": len(hits)}
        return self._call("Grep", args, output, meta=meta, as_blocks=True, seconds=0.05)

    def skill(self, name: str, body: str) -> _Call:
        return self._call("Skill", {"skill": name}, f"Launching skill: {name}",
                          meta={"success": True, "commandName": name},
                          followup=f"Base directory for this skill: /root/.claude/skills/{name}\n\n{body}")

    def todo(self, items: list[str], done: int = 0) -> _Call:
        todos = [{"content": item, "status": "completed" if i < done else "in_progress" if i == done else "pending",
                  "activeForm": item} for i, item in enumerate(items)]
        return self._call("TodoWrite", {"todos": todos}, "Todos have been modified successfully.",
                          meta={"oldTodos": [], "newTodos": todos}, seconds=0.05)


def _skill_path(skill: str) -> str:
    return f"/root/.claude/skills/{skill}/SKILL.md"


def _consult_skill(s: _Session, skill: str, skill_md: str) -> None:
    """With-skills runs look at the offered skill in one of several ways (or ignore it)."""
    style = s.pick(["tool", "tool", "read", "glob", "ignore"])
    if style == "tool":
        body = skill_md.split("---\n", 2)[-1].lstrip()
        s.turn(s.pick([f"There is a `{skill}` skill available; let me load it before writing code.",
                       f"Let me use the {skill} skill, it matches this task."]), s.skill(skill, body))
    elif style == "read":
        s.turn(f"I'll check the {skill} skill notes first.", s.read(_skill_path(skill)))
    elif style == "glob":
        s.turn("Let me see which skills are installed.", s.glob("**/SKILL.md", "/root/.claude/skills"))
        s.turn(None, s.read(_skill_path(skill)))


# --------------------------------------------------------------------------------------------
# Verifier mirrors: each check raises _CheckFailed like the official verifier's assert would
# --------------------------------------------------------------------------------------------


class _CheckFailed(Exception):
    def __init__(self, anchor: str, message: str) -> None:
        super().__init__(message)
        self.anchor = anchor
        self.message = message


def _require(ok: bool, message: str, anchor: str | None = None) -> None:
    """Fail like `assert ok, message`; `anchor` is a unique substring of that assert line."""
    if not ok:
        raise _CheckFailed(anchor or message, message)


@dataclass(frozen=True)
class _Check:
    node_id: str
    run: Callable[[Workspace], None]
    param: tuple[str, str] | None = None


@dataclass(frozen=True)
class _TaskSpec:
    name: str
    skill: str
    category: str
    tags: tuple[str, ...]
    summary: str
    instruction: str
    verifier: str
    skill_md: str
    inputs: Workspace
    checks: tuple[_Check, ...]
    reward_mode: Literal["all-or-nothing", "fraction"]
    decks: dict[str, tuple[str, ...]]
    play: Callable[[_Session, str, bool], None]
    difficulty: str = "easy"

    def test_sh(self) -> str:
        reward = ("passed / len(tests) if tests else 0.0" if self.reward_mode == "fraction"
                  else "1.0 if tests and passed == len(tests) else 0.0")
        return _fill(_TEST_SH, REWARD=reward, MODE=self.reward_mode)

    def task_toml(self) -> str:
        return _fill(_TASK_TOML, MARKER=DEMO_MARKER, SUMMARY=self.summary, DIFFICULTY=self.difficulty,
                     CATEGORY=self.category, TAGS=json.dumps(["demo", *self.tags]), MODE=self.reward_mode,
                     SKILL=self.skill, TIMEOUT=AGENT_TIMEOUT_SEC)

    def files(self) -> dict[str, str]:
        return {"instruction.md": self.instruction, "task.toml": self.task_toml(),
                "tests/test_outputs.py": self.verifier, "tests/test.sh": self.test_sh()}


_TASK_TOML = """version = "1.0"

[metadata]
demo = true
demo_note = "@@MARKER@@"
description = "@@MARKER@@: @@SUMMARY@@ Written by the GCPC demo generator; not a real benchmark task."
author_name = "GCPC demo generator"
difficulty = "@@DIFFICULTY@@"
category = "@@CATEGORY@@"
tags = @@TAGS@@
reward_mode = "@@MODE@@"
demo_skill = "@@SKILL@@"

[verifier]
timeout_sec = 300.0

[agent]
timeout_sec = @@TIMEOUT@@

[environment]
build_timeout_sec = 300.0
cpus = 1
memory_mb = 2048
storage_mb = 4096
gpus = 0
allow_internet = false
"""

_TEST_SH = """#!/bin/bash
# Runs the official verifier and turns its CTRF report into a reward (@@MODE@@).
set -u
mkdir -p /logs/verifier
python3 -m pip install --quiet --disable-pip-version-check pytest==8.4.1 pytest-json-ctrf==0.3.5
cd /tests
python3 -m pytest --ctrf /logs/verifier/ctrf.json /tests/test_outputs.py -rA -v
python3 - <<'EOF'
import json

tests = json.load(open("/logs/verifier/ctrf.json"))["results"]["tests"]
passed = sum(t["status"] == "passed" for t in tests)
reward = round(@@REWARD@@, 4)
print(f"REWARD: {reward}")
with open("/logs/verifier/reward.txt", "w") as fh:
    fh.write(f"{reward}\\n")
EOF
"""


# --------------------------------------------------------------------------------------------
# Task 1: sales-csv-summary (module-level tests, one parametrized)
# --------------------------------------------------------------------------------------------

SALES_CSV = "/root/data/sales_2024q3.csv"
SALES_OUT = "/root/output/summary.json"
SALES_SCRIPT = "/root/summarize_sales.py"
_SALES_PRODUCTS = {"Widget A": 12.5, "Widget B": 18.75, "Gizmo": 42.0, "Sprocket": 7.25, "Flange": 3.4}
_SALES_HEADER = ["order_id", "order_date", "region", "product", "units", "unit_price", "status"]

_SALES_INSTRUCTION = """# Quarterly sales summary

The finance team exported last quarter's orders to `/root/data/sales_2024q3.csv` (columns: `order_id`, `order_date`, `region`, `product`, `units`, `unit_price`, `status`). They need a small machine-readable summary for their dashboard.

Write `/root/output/summary.json` containing one JSON object with exactly these keys:

- `total_revenue`: the sum of `units * unit_price` over orders whose `status` is `completed`, as a JSON number rounded to 2 decimal places (not a string).
- `orders_by_region`: an object mapping each region name in lower case (`"east"`, `"north"`, `"south"`, `"west"`) to the number of completed orders in that region.
- `top_product`: the name of the product with the highest completed revenue, spelled exactly as in the CSV.
- `refunded_orders`: the number of orders whose `status` is `refunded`.

Orders with status `pending` count toward none of these values.

Constraints:

- Use only the Python 3 standard library (for example `csv` and `json`); do not install or import pandas or any other third-party package.
- Do not modify the input CSV.
"""

_SALES_VERIFIER = '''"""Official verifier for the sales-csv-summary task (GCPC demo task)."""

import json
import os
from pathlib import Path

import pytest

ROOT = Path(os.environ.get("TASK_ROOT", "/root"))
SUMMARY = ROOT / "output" / "summary.json"

EXPECTED_KEYS = ["orders_by_region", "refunded_orders", "top_product", "total_revenue"]
EXPECTED_TOTAL_REVENUE = @@TOTAL@@
EXPECTED_ORDERS_BY_REGION = @@REGIONS@@
EXPECTED_TOP_PRODUCT = @@TOP@@
EXPECTED_REFUNDED_ORDERS = @@REFUNDED@@


def load_summary():
    assert SUMMARY.is_file(), "output/summary.json was not created"
    return json.loads(SUMMARY.read_text())


def test_summary_is_json_object():
    """summary.json exists and holds a JSON object."""
    summary = load_summary()
    assert isinstance(summary, dict), f"summary.json holds a {type(summary).__name__}, expected an object"


def test_summary_has_exactly_required_keys():
    """The object has exactly the four keys the instruction names."""
    keys = sorted(load_summary())
    assert keys == EXPECTED_KEYS, f"keys are {keys}, expected {EXPECTED_KEYS}"


def test_total_revenue():
    """total_revenue sums completed orders only and is a JSON number."""
    value = load_summary().get("total_revenue")
    assert isinstance(value, (int, float)) and not isinstance(value, bool), f"total_revenue must be a JSON number, got {value!r}"
    assert abs(value - EXPECTED_TOTAL_REVENUE) < 0.01, f"total_revenue = {value}, expected {EXPECTED_TOTAL_REVENUE}"


@pytest.mark.parametrize("region", ["east", "north", "south", "west"])
def test_orders_by_region(region):
    """Completed orders per region, keyed by the lower-case region name."""
    counts = load_summary().get("orders_by_region") or {}
    assert counts.get(region) == EXPECTED_ORDERS_BY_REGION[region], f"orders_by_region[{region!r}] = {counts.get(region)!r}, expected {EXPECTED_ORDERS_BY_REGION[region]}"


def test_top_product():
    """The product with the highest completed revenue."""
    value = load_summary().get("top_product")
    assert value == EXPECTED_TOP_PRODUCT, f"top_product = {value!r}, expected {EXPECTED_TOP_PRODUCT!r}"


def test_refunded_orders():
    """Count of refunded orders."""
    value = load_summary().get("refunded_orders")
    assert value == EXPECTED_REFUNDED_ORDERS, f"refunded_orders = {value!r}, expected {EXPECTED_REFUNDED_ORDERS}"
'''

_SALES_SKILL = """---
name: csv-analytics
description: Summarise CSV exports with the Python standard library (csv, json, collections) - filters, group counts and money totals.
---

# CSV analytics with the standard library

## Workflow

1. Look at the header first (`head -n 1 file.csv`) and use the exact column names; a misspelt column only fails with a `KeyError` once the first row is read.
2. Read rows with `csv.DictReader` and convert numbers explicitly: `int(row["units"])`, `float(row["unit_price"])`.
3. Apply the status filter **before** adding to any total; keep counters for excluded statuses separately.
4. Normalise keys exactly as the spec asks (for example `.lower()`), and keep money as a number: `round(total, 2)`, never a formatted string.
5. Write JSON with `json.dumps(obj, indent=2)`, then read the file back to check it.

## Pitfalls

- `max(d, key=d.get)` returns the key with the largest value, which is usually what you want.
- Do not reach for pandas when the task restricts you to the standard library.
"""


@dataclass(frozen=True)
class _SalesVariant:
    revenue_all_statuses: bool = False
    lower_regions: bool = True
    total_as_text: bool = False
    out_path: str = SALES_OUT
    bad_column: bool = False
    """The first script reads `row["price"]` and dies with a KeyError."""
    fixes_column: bool = True
    pandas: bool = False


_SALES_VARIANTS = {
    "complete": _SalesVariant(),
    "recovered": _SalesVariant(bad_column=True),
    "pandas": _SalesVariant(pandas=True),
    "refunds_in_total": _SalesVariant(revenue_all_statuses=True),
    "string_total": _SalesVariant(total_as_text=True),
    "title_case_regions": _SalesVariant(lower_regions=False),
    "wrong_path": _SalesVariant(out_path="/root/summary.json"),
    "false_claim": _SalesVariant(bad_column=True, fixes_column=False),
}


def _sales_rows() -> list[dict[str, str]]:
    rng = random.Random("gcpc-demo/sales-data")
    rows = []
    for i in range(160):
        product = rng.choice(list(_SALES_PRODUCTS))
        price = _SALES_PRODUCTS[product] * (0.9 if rng.random() < 0.15 else 1.0)
        day = datetime(2024, 7, 1) + timedelta(days=rng.randrange(92))
        rows.append({"order_id": f"SO-{10001 + i}", "order_date": day.strftime("%Y-%m-%d"),
                     "region": rng.choice(["North", "South", "East", "West"]), "product": product,
                     "units": str(rng.randint(1, 24)), "unit_price": f"{price:.2f}",
                     "status": rng.choices(["completed", "refunded", "pending"], [78, 12, 10])[0]})
    return rows


def _csv_text(header: list[str], rows: list[list[Any]]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return buf.getvalue()


def _sales_summary(rows: list[dict[str, str]], v: _SalesVariant = _SalesVariant()) -> dict[str, Any]:
    """What the agent's script computes (the same float operations in the same order)."""
    total = 0.0
    regions: Counter[str] = Counter()
    product_revenue: defaultdict[str, float] = defaultdict(float)
    refunded = 0
    for row in rows:
        revenue = int(row["units"]) * float(row["unit_price"])
        if v.revenue_all_statuses:
            total += revenue
        if row["status"] == "refunded":
            refunded += 1
        if row["status"] != "completed":
            continue
        if not v.revenue_all_statuses:
            total += revenue
        regions[row["region"].lower() if v.lower_regions else row["region"]] += 1
        product_revenue[row["product"]] += revenue
    return {"total_revenue": f"{total:.2f}" if v.total_as_text else round(total, 2),
            "orders_by_region": dict(sorted(regions.items())),
            "top_product": max(product_revenue, key=product_revenue.__getitem__),
            "refunded_orders": refunded}


def _sales_script(v: _SalesVariant, price_column: str) -> str:
    if v.pandas:
        return _fill(_SALES_PANDAS_SCRIPT, OUT=v.out_path)
    total_line = "        total += revenue\n"
    return _fill(_SALES_SCRIPT, OUT=v.out_path, PRICE=price_column,
                 PRE=total_line if v.revenue_all_statuses else "",
                 POST="" if v.revenue_all_statuses else total_line,
                 LOWER=".lower()" if v.lower_regions else "",
                 TOTAL='f"{total:.2f}"' if v.total_as_text else "round(total, 2)")


_SALES_SCRIPT = '''#!/usr/bin/env python3
"""Summarise Q3 orders from the sales export into @@OUT@@."""
import csv
import json
from collections import Counter, defaultdict
from pathlib import Path

SRC = Path("/root/data/sales_2024q3.csv")
OUT = Path("@@OUT@@")

total = 0.0
regions = Counter()
product_revenue = defaultdict(float)
refunded = 0
with SRC.open(newline="") as fh:
    for row in csv.DictReader(fh):
        revenue = int(row["units"]) * float(row["@@PRICE@@"])
@@PRE@@        if row["status"] == "refunded":
            refunded += 1
        if row["status"] != "completed":
            continue
@@POST@@        regions[row["region"]@@LOWER@@] += 1
        product_revenue[row["product"]] += revenue

summary = {
    "total_revenue": @@TOTAL@@,
    "orders_by_region": dict(sorted(regions.items())),
    "top_product": max(product_revenue, key=product_revenue.get),
    "refunded_orders": refunded,
}
OUT.parent.mkdir(parents=True, exist_ok=True)
OUT.write_text(json.dumps(summary, indent=2) + "\\n")
print(json.dumps(summary, indent=2))
'''

_PIP_PANDAS = """Collecting pandas
  Downloading pandas-2.2.3-cp312-cp312-manylinux_2_17_x86_64.manylinux2014_x86_64.whl (12.7 MB)
Installing collected packages: pytz, tzdata, numpy, python-dateutil, pandas
Successfully installed numpy-2.1.3 pandas-2.2.3 python-dateutil-2.9.0.post0 pytz-2024.2 tzdata-2024.2"""

_SALES_PANDAS_SCRIPT = '''#!/usr/bin/env python3
import json
from pathlib import Path

import pandas as pd

df = pd.read_csv("/root/data/sales_2024q3.csv")
df["revenue"] = df["units"] * df["unit_price"]
done = df[df["status"] == "completed"]
summary = {
    "total_revenue": round(float(done["revenue"].sum()), 2),
    "orders_by_region": {k.lower(): int(v) for k, v in done["region"].value_counts().sort_index().items()},
    "top_product": done.groupby("product")["revenue"].sum().idxmax(),
    "refunded_orders": int((df["status"] == "refunded").sum()),
}
out = Path("@@OUT@@")
out.parent.mkdir(parents=True, exist_ok=True)
out.write_text(json.dumps(summary, indent=2) + "\\n")
print(json.dumps(summary, indent=2))
'''


def _sales_checks(exp: dict[str, Any]) -> tuple[_Check, ...]:
    def load(ws: Workspace) -> Any:
        _require(SALES_OUT in ws, "output/summary.json was not created")
        return json.loads(ws[SALES_OUT])

    def is_object(ws: Workspace) -> None:
        summary = load(ws)
        _require(isinstance(summary, dict), f"summary.json holds a {type(summary).__name__}, expected an object",
                 "expected an object")

    def keys(ws: Workspace) -> None:
        found, expected = sorted(load(ws)), sorted(exp)
        _require(found == expected, f"keys are {found}, expected {expected}", "expected {EXPECTED_KEYS}")

    def total(ws: Workspace) -> None:
        value = load(ws).get("total_revenue")
        _require(isinstance(value, (int, float)) and not isinstance(value, bool),
                 f"total_revenue must be a JSON number, got {value!r}", "must be a JSON number")
        _require(abs(value - exp["total_revenue"]) < 0.01,
                 f"total_revenue = {value}, expected {exp['total_revenue']}", "expected {EXPECTED_TOTAL_REVENUE}")

    def region(name: str) -> Callable[[Workspace], None]:
        def run(ws: Workspace) -> None:
            got = (load(ws).get("orders_by_region") or {}).get(name)
            want = exp["orders_by_region"][name]
            _require(got == want, f"orders_by_region[{name!r}] = {got!r}, expected {want}",
                     "orders_by_region[{region!r}]")
        return run

    def scalar(key: str, anchor: str, quote: bool) -> Callable[[Workspace], None]:
        def run(ws: Workspace) -> None:
            got, want = load(ws).get(key), exp[key]
            shown = repr(want) if quote else str(want)
            _require(got == want, f"{key} = {got!r}, expected {shown}", anchor)
        return run

    node = "test_outputs.py::"
    return (
        _Check(node + "test_summary_is_json_object", is_object),
        _Check(node + "test_summary_has_exactly_required_keys", keys),
        _Check(node + "test_total_revenue", total),
        *(_Check(f"{node}test_orders_by_region[{r}]", region(r), ("region", r))
          for r in ("east", "north", "south", "west")),
        _Check(node + "test_top_product", scalar("top_product", "expected {EXPECTED_TOP_PRODUCT!r}", True)),
        _Check(node + "test_refunded_orders", scalar("refunded_orders", "expected {EXPECTED_REFUNDED_ORDERS}", False)),
    )


def _play_sales(s: _Session, scenario: str, with_skill: bool) -> None:
    v = _SALES_VARIANTS[scenario]
    rows = _sales_rows()
    intro = s.pick(["I'll start by looking at the input data.", "Let me explore /root/data first.",
                    "First, let me find the sales export and look at its structure."])
    s.turn(intro, s.glob("**/*.csv", "/root/data") if s.chance(0.5) else s.ls("/root/data"),
           thinking="The task wants a JSON summary of completed orders. I need to check the CSV columns and "
                    "statuses before writing anything.")
    look = s.pick(["read", "cat", "head"])
    if look == "read":
        s.turn("Reading the whole export to check the columns and the status values.", s.read(SALES_CSV))
    elif look == "cat":
        s.turn(None, s.cat(SALES_CSV), thinking="180 rows is small enough to print in full.")
    else:
        s.turn("Let me peek at the first rows and count the lines.", s.head(SALES_CSV, 12),
               s.bash(f"wc -l {SALES_CSV}", f"{len(rows) + 1} {SALES_CSV}"))
    if s.chance(0.5):
        s.turn("Checking which status values occur.", s.grep("refunded", SALES_CSV, "count"))
    if with_skill:
        _consult_skill(s, "csv-analytics", _SALES_SKILL)
    if s.chance(0.35):
        s.turn(None, s.todo(["Write summary script", "Run it and write /root/output/summary.json",
                             "Verify the JSON"]))

    if v.pandas:
        s.turn("pandas makes the group-bys trivial; let me make sure it is available.",
               s.bash("pip install pandas", _PIP_PANDAS, seconds=21.0),
               thinking="Quickest is pandas: read_csv, filter status, groupby.")
    script = _sales_script(v, "price" if v.bad_column else "unit_price")
    s.turn(s.pick(["Now I'll write the summary script.", "Writing a small script that computes all four values."]),
           s.write(SALES_SCRIPT, script))
    run = f"python3 {SALES_SCRIPT}"
    description = "Run the summary script"
    if v.bad_column:
        line = script.splitlines().index('        revenue = int(row["units"]) * float(row["price"])') + 1
        trace = (f'Traceback (most recent call last):\n  File "{SALES_SCRIPT}", line {line}, in <module>\n'
                 f'    revenue = int(row["units"]) * float(row["price"])\n'
                 f'                                        ~~~^^^^^^^^^\nKeyError: \'price\'')
        s.turn("Running it.", s.bash(run, "", stderr=trace, exit_code=1, description=description))
        if not v.fixes_column:
            s.finish(f"I've written `{SALES_SCRIPT}` and run it. The summary has been generated at "
                     f"`{SALES_OUT}` with `total_revenue`, `orders_by_region` (lower-case keys), `top_product` and "
                     "`refunded_orders`, using only the standard library. The task is complete.")
            return
        s.turn("The column is not called `price`; let me check the header.", s.head(SALES_CSV, 1))
        s.turn("It's `unit_price`. Fixing the script.",
               s.edit(SALES_SCRIPT, 'float(row["price"])', 'float(row["unit_price"])'))
    summary = _sales_summary(rows, v)
    out_text = json.dumps(summary, indent=2) + "\n"
    s.turn("Running the script." if not v.bad_column else "Re-running.",
           s.bash(run, out_text.rstrip("\n"), writes={v.out_path: out_text}, description=description))
    if s.chance(0.6):
        s.turn("Let me verify the written file.", s.read(v.out_path) if s.chance(0.5) else s.cat(v.out_path))
    regions = ", ".join(f"{k}: {n}" for k, n in summary["orders_by_region"].items())
    s.finish(s.pick(["Done.", "The summary is written.", "Task complete."])
             + f" `{v.out_path}` contains:\n\n- total_revenue: {summary['total_revenue']}\n"
             f"- orders_by_region: {regions}\n- top_product: {summary['top_product']}\n"
             f"- refunded_orders: {summary['refunded_orders']}\n\nOnly completed orders count toward revenue "
             "and regions; pending orders are ignored.")


def _sales_task() -> _TaskSpec:
    rows = _sales_rows()
    exp = _sales_summary(rows)
    csv_text = _csv_text(_SALES_HEADER, [[r[k] for k in _SALES_HEADER] for r in rows])
    verifier = _fill(_SALES_VERIFIER, TOTAL=repr(exp["total_revenue"]), REGIONS=_literal(exp["orders_by_region"]),
                     TOP=repr(exp["top_product"]), REFUNDED=exp["refunded_orders"])
    return _TaskSpec(
        name="sales-csv-summary", skill="csv-analytics", category="data-analysis", tags=("csv", "json", "stdlib"),
        summary="summarise a quarterly sales CSV into a JSON file.", instruction=_SALES_INSTRUCTION,
        verifier=verifier, skill_md=_SALES_SKILL, inputs={SALES_CSV: csv_text}, checks=_sales_checks(exp),
        reward_mode="fraction", play=_play_sales,
        decks={"with-skills": ("complete", "complete", "recovered", "pandas", "refunds_in_total", "string_total"),
               "without-skills": ("complete", "recovered", "refunds_in_total", "title_case_regions", "wrong_path",
                                  "false_claim")},
    )


# --------------------------------------------------------------------------------------------
# Task 2: ini-config-repair (class-based tests, all-or-nothing reward)
# --------------------------------------------------------------------------------------------

CONFIG_INI = "/root/service/app.ini"
CONFIG_CHANGES = "/root/service/CHANGES.md"

_CONFIG_ORIGINAL = """; demo-api service configuration
; Managed by the platform team -- the deploy linter reads these comments.

[server]
host = 0.0.0.0
port = 80800
workers = 4
; request timeout in seconds
timeout = 30

[database]
host = db.internal
port = 5432
name = orders
user = api_rw
host = db-replica.internal
pool_size = twenty

[cache]
backend = redis
url = redis://cache.internal:6379/0
; how long cached responses live
ttl_seconds = 15m

[logging]
level = verbose
format = json
file = /var/log/demo-api/app.log
"""

_CONFIG_UNIT = """[Unit]
Description=demo-api
After=network.target

[Service]
ExecStart=/usr/local/bin/demo-api --config /root/service/app.ini
Restart=on-failure

[Install]
WantedBy=multi-user.target
"""

_CONFIG_COMMENTS = [line for line in _CONFIG_ORIGINAL.splitlines() if line.startswith(";")]
_CONFIG_KEPT = {"server.host": "0.0.0.0", "server.workers": "4", "server.timeout": "30",
                "database.host": "db.internal", "database.port": "5432", "database.name": "orders",
                "database.user": "api_rw", "cache.backend": "redis", "cache.url": "redis://cache.internal:6379/0",
                "logging.format": "json", "logging.file": "/var/log/demo-api/app.log"}
_CONFIG_FIXES = (  # (key, old line, new line, old value, new value); new value None = use the variant's
    ("server.port", "port = 80800", "port = 8080", "80800", "8080"),
    ("database.host", "user = api_rw\nhost = db-replica.internal\n", "user = api_rw\n", "db-replica.internal",
     "(removed)"),
    ("database.pool_size", "pool_size = twenty", "pool_size = 20", "twenty", "20"),
    ("cache.ttl_seconds", "ttl_seconds = 15m", "ttl_seconds = @@TTL@@", "15m", "@@TTL@@"),
    ("logging.level", "level = verbose", "level = INFO", "verbose", "INFO"),
)
_CONFIG_EXPECTED_CHANGES = [f"- {key}: {old} -> {new.replace('@@TTL@@', '900')}"
                            for key, _, _, old, new in _CONFIG_FIXES]

_CONFIG_INSTRUCTION = """# Repair the demo-api service configuration

The `demo-api` service refuses to start after last night's configuration change. Its configuration file is `/root/service/app.ini` (INI format, loaded with Python's `configparser` in strict mode).

Fix these problems in `/root/service/app.ini`:

1. `[server]` `port` must be `8080`.
2. `[database]` defines `host` twice. The primary database is `db.internal`; delete the second `host` line (`db-replica.internal`), which was pasted by mistake.
3. `[database]` `pool_size` must be the integer `20`.
4. `[cache]` `ttl_seconds` must be given in seconds: the intended lifetime is 15 minutes, i.e. `900`.
5. `[logging]` `level` must be `INFO`.

Edit the file in place: keep every comment line and every other key exactly as they are. Do not regenerate the file from scratch, and do not restart or modify the service itself.

Then write `/root/service/CHANGES.md` with one line per fix, in exactly this form:

    - <section>.<key>: <old value> -> <new value>

For the deleted duplicate write `(removed)` as the new value, e.g. `- database.host: db-replica.internal -> (removed)`.
"""

_CONFIG_VERIFIER = '''"""Official verifier for the ini-config-repair task (GCPC demo task)."""

import configparser
import os
from pathlib import Path

ROOT = Path(os.environ.get("TASK_ROOT", "/root"))
CONFIG = ROOT / "service" / "app.ini"
CHANGES = ROOT / "service" / "CHANGES.md"

KEPT_COMMENTS = @@COMMENTS@@
KEPT_VALUES = @@KEPT@@
EXPECTED_CHANGES = @@CHANGES@@


def load_config(strict=False):
    parser = configparser.ConfigParser(strict=strict, interpolation=None)
    parser.read_string(CONFIG.read_text(), source="app.ini")
    return parser


def value(key):
    section, option = key.split(".")
    return load_config().get(section, option, fallback=None)


class TestConfigLoads:
    def test_strict_parse(self):
        """app.ini loads with a strict configparser: no duplicate keys left."""
        try:
            load_config(strict=True)
            error = None
        except configparser.Error as exc:
            error = str(exc)
        assert error is None, f"app.ini does not load strictly: {error}"


class TestRepairedValues:
    def test_server_port(self):
        assert value("server.port") == "8080", f"server.port = {value('server.port')!r}, expected '8080'"

    def test_database_pool_size(self):
        assert value("database.pool_size") == "20", f"database.pool_size = {value('database.pool_size')!r}, expected '20'"

    def test_cache_ttl_seconds(self):
        assert value("cache.ttl_seconds") == "900", f"cache.ttl_seconds = {value('cache.ttl_seconds')!r}, expected '900'"

    def test_logging_level(self):
        assert value("logging.level") == "INFO", f"logging.level = {value('logging.level')!r}, expected 'INFO'"


class TestNothingElseChanged:
    def test_comments_and_other_keys_kept(self):
        """The file was edited in place: comments and untouched keys survive."""
        lines = CONFIG.read_text().splitlines()
        missing = [c for c in KEPT_COMMENTS if c not in lines]
        assert not missing, f"comment lines removed: {missing}"
        changed = {k: value(k) for k, v in KEPT_VALUES.items() if value(k) != v}
        assert not changed, f"keys that must stay unchanged differ: {changed}"


class TestChangeLog:
    def test_change_log_lists_every_fix(self):
        """CHANGES.md has one `- section.key: old -> new` line per fix."""
        assert CHANGES.is_file(), "service/CHANGES.md was not created"
        lines = [line.strip() for line in CHANGES.read_text().splitlines()]
        missing = [c for c in EXPECTED_CHANGES if c not in lines]
        assert not missing, f"CHANGES.md lacks the lines {missing}"
'''

_CONFIG_SKILL = """---
name: ini-config-editing
description: Repair INI files read by Python's configparser without losing comments or unrelated keys.
---

# Editing INI files in place

1. Load the file with `configparser.ConfigParser(strict=True, interpolation=None)` to see the real error (duplicate options, bad sections).
2. Make the smallest possible edit per problem, one line each (the Edit tool or a targeted `sed -i`). Never round-trip through `ConfigParser.write()`: it drops every comment.
3. Convert units explicitly: `15m` is 900 seconds, `1h` is 3600.
4. After editing, reload strictly and print the values you changed.
5. Record each change as `section.key: old -> new`.
"""

_CONFIG_CHECK_CMD = ('python3 -c "import configparser; p = configparser.ConfigParser(strict=True, interpolation=None); '
                     "p.read('/root/service/app.ini'); print({s: dict(p[s]) for s in p.sections()})\"")


@dataclass(frozen=True)
class _ConfigVariant:
    method: Literal["edit", "sed", "rewrite"] = "edit"
    ttl: str = "900"
    broken_pool_edit: bool = False
    """The pool_size Edit uses the wrong whitespace, fails, and the agent does not notice."""
    changelog: Literal["exact", "prose", "none"] = "exact"


_CONFIG_VARIANTS = {
    "complete": _ConfigVariant(),
    "sed": _ConfigVariant(method="sed"),
    "ttl_minutes": _ConfigVariant(ttl="15"),
    "changelog_prose": _ConfigVariant(changelog="prose"),
    "rewrite": _ConfigVariant(method="rewrite"),
    "false_claim": _ConfigVariant(broken_pool_edit=True),
    "no_changelog": _ConfigVariant(changelog="none"),
}


def _strict_check(text: str) -> tuple[str, str, int]:
    """stdout, stderr and exit code of `_CONFIG_CHECK_CMD` on this file text."""
    parser = configparser.ConfigParser(strict=True, interpolation=None)
    try:
        parser.read_string(text, source=CONFIG_INI)
    except configparser.Error as exc:
        trace = ('Traceback (most recent call last):\n  File "<string>", line 1, in <module>\n'
                 '  File "/usr/lib/python3.12/configparser.py", line 684, in read\n    self._read(fp, filename)\n'
                 '  File "/usr/lib/python3.12/configparser.py", line 1071, in _read\n'
                 "    raise DuplicateOptionError(sectname, optname,\n"
                 f"configparser.{type(exc).__name__}: {exc}")
        return "", trace, 1
    return str({s: dict(parser[s]) for s in parser.sections()}), "", 0


def _config_checks() -> tuple[_Check, ...]:
    def load(ws: Workspace, strict: bool = False) -> configparser.ConfigParser:
        parser = configparser.ConfigParser(strict=strict, interpolation=None)
        parser.read_string(ws[CONFIG_INI], source="app.ini")
        return parser

    def value(ws: Workspace, key: str) -> str | None:
        section, option = key.split(".")
        return load(ws).get(section, option, fallback=None)

    def strict(ws: Workspace) -> None:
        try:
            load(ws, strict=True)
            error = None
        except configparser.Error as exc:
            error = str(exc)
        _require(error is None, f"app.ini does not load strictly: {error}", "does not load strictly")

    def fixed(key: str, want: str) -> Callable[[Workspace], None]:
        def run(ws: Workspace) -> None:
            got = value(ws, key)
            _require(got == want, f"{key} = {got!r}, expected {want!r}", f"{key} = {{value('{key}')!r}}")
        return run

    def kept(ws: Workspace) -> None:
        lines = ws[CONFIG_INI].splitlines()
        missing = [c for c in _CONFIG_COMMENTS if c not in lines]
        _require(not missing, f"comment lines removed: {missing}", "comment lines removed")
        changed = {k: value(ws, k) for k, v in _CONFIG_KEPT.items() if value(ws, k) != v}
        _require(not changed, f"keys that must stay unchanged differ: {changed}", "must stay unchanged differ")

    def changelog(ws: Workspace) -> None:
        _require(CONFIG_CHANGES in ws, "service/CHANGES.md was not created")
        lines = [line.strip() for line in ws[CONFIG_CHANGES].splitlines()]
        missing = [c for c in _CONFIG_EXPECTED_CHANGES if c not in lines]
        _require(not missing, f"CHANGES.md lacks the lines {missing}", "CHANGES.md lacks the lines")

    node = "test_outputs.py::"
    return (
        _Check(node + "TestConfigLoads::test_strict_parse", strict),
        _Check(node + "TestRepairedValues::test_server_port", fixed("server.port", "8080")),
        _Check(node + "TestRepairedValues::test_database_pool_size", fixed("database.pool_size", "20")),
        _Check(node + "TestRepairedValues::test_cache_ttl_seconds", fixed("cache.ttl_seconds", "900")),
        _Check(node + "TestRepairedValues::test_logging_level", fixed("logging.level", "INFO")),
        _Check(node + "TestNothingElseChanged::test_comments_and_other_keys_kept", kept),
        _Check(node + "TestChangeLog::test_change_log_lists_every_fix", changelog),
    )


def _play_config(s: _Session, scenario: str, with_skill: bool) -> None:
    v = _CONFIG_VARIANTS[scenario]
    fixes = [(key, old, new.replace("@@TTL@@", v.ttl), old_v, new_v.replace("@@TTL@@", v.ttl))
             for key, old, new, old_v, new_v in _CONFIG_FIXES]
    s.turn(s.pick(["Let me look at the service directory.", "I'll start by inspecting /root/service."]),
           s.ls("/root/service"), thinking="Config repair task. Read the INI, reproduce the strict-parse failure, "
                                           "then make minimal edits and keep the comments.")
    s.turn(None, s.read(CONFIG_INI))
    out, err, code = _strict_check(s.ws[CONFIG_INI])
    s.turn("Let me reproduce the failure with a strict parser.", s.bash(_CONFIG_CHECK_CMD, out, stderr=err,
                                                                        exit_code=code))
    if s.chance(0.5):
        s.turn("Confirming the duplicate key.", s.grep(r"^host", CONFIG_INI))
    if with_skill:
        _consult_skill(s, "ini-config-editing", _CONFIG_SKILL)
    if v.method == "edit":
        for key, old, new, _, _ in fixes:
            if key == "database.pool_size" and v.broken_pool_edit:
                old, new = "pool_size=twenty", "pool_size=20"
            s.turn(s.pick([f"Fixing `{key}`.", f"Now `{key}`.", None]), s.edit(CONFIG_INI, old, new))
    elif v.method == "sed":
        text = s.ws[CONFIG_INI]
        for _, old, new, _, _ in fixes:
            text = text.replace(old, new)
        cmd = ("sed -i -e 's/^port = 80800$/port = 8080/' -e '/^host = db-replica.internal$/d' "
               f"-e 's/^pool_size = twenty$/pool_size = 20/' -e 's/^ttl_seconds = 15m$/ttl_seconds = {v.ttl}/' "
               f"-e 's/^level = verbose$/level = INFO/' {CONFIG_INI}")
        s.turn("All five fixes are single-line changes, so one targeted `sed -i` does it in place.",
               s.bash(cmd, "", writes={CONFIG_INI: text}))
        s.turn(None, s.grep(r"^(port|host|pool_size|ttl_seconds|level) ", CONFIG_INI))
    else:
        parser = configparser.ConfigParser(strict=False, interpolation=None)
        parser.read_string(_CONFIG_ORIGINAL)
        for key, _, _, _, new_v in fixes:
            section, option = key.split(".")
            if option == "host":
                parser.set(section, option, "db.internal")
            else:
                parser.set(section, option, new_v)
        buf = io.StringIO()
        parser.write(buf)
        s.turn("Simplest is to write a clean version of the file with all values corrected.",
               s.write(CONFIG_INI, buf.getvalue().rstrip("\n") + "\n"),
               thinking="Rewriting the whole file avoids fiddly edits.")
    out, err, code = _strict_check(s.ws[CONFIG_INI])
    s.turn("Re-checking with the strict parser.", s.bash(_CONFIG_CHECK_CMD, out, stderr=err, exit_code=code))
    if v.changelog == "exact":
        body = "# app.ini changes\n\n" + "".join(f"- {k}: {o} -> {n}\n" for k, _, _, o, n in fixes)
        s.turn("Writing the change log.", s.write(CONFIG_CHANGES, body))
    elif v.changelog == "prose":
        body = ("Changes to app.ini\n\nChanged the server port from 80800 to 8080.\n"
                "Removed the duplicated database host (db-replica.internal).\nSet the pool size to 20.\n"
                f"Set the cache TTL to {v.ttl} seconds.\nSet the log level to INFO.\n")
        s.turn("Writing a short change log.", s.write(CONFIG_CHANGES, body))
    listed = "\n".join(f"- {k}: {o} -> {n}" for k, _, _, o, n in fixes)
    s.finish(s.pick(["All five problems are fixed.", "The configuration is repaired."])
             + f" Changes made to `{CONFIG_INI}`:\n\n{listed}\n\nThe file now loads with a strict configparser"
             + (" and the changes are recorded in `/root/service/CHANGES.md`." if v.changelog != "none" else "."))


def _config_task() -> _TaskSpec:
    verifier = _fill(_CONFIG_VERIFIER, COMMENTS=_literal(_CONFIG_COMMENTS), KEPT=_literal(_CONFIG_KEPT),
                     CHANGES=_literal(_CONFIG_EXPECTED_CHANGES))
    return _TaskSpec(
        name="ini-config-repair", skill="ini-config-editing", category="devops", tags=("ini", "configparser"),
        summary="repair a broken INI service configuration in place and log the changes.",
        instruction=_CONFIG_INSTRUCTION, verifier=verifier, skill_md=_CONFIG_SKILL,
        inputs={CONFIG_INI: _CONFIG_ORIGINAL, "/root/service/demo-api.service": _CONFIG_UNIT},
        checks=_config_checks(), reward_mode="all-or-nothing", play=_play_config,
        decks={"with-skills": ("complete", "complete", "sed", "complete", "ttl_minutes", "changelog_prose"),
               "without-skills": ("complete", "sed", "rewrite", "ttl_minutes", "false_claim", "no_changelog")},
    )


# --------------------------------------------------------------------------------------------
# Task 3: ssh-failed-login-report (module-level tests, parametrized over IPs)
# --------------------------------------------------------------------------------------------

AUTH_LOG = "/root/logs/auth.log"
AUTH_CSV = "/root/report/failed_logins.csv"
AUTH_SUMMARY = "/root/report/summary.txt"
AUTH_SCRIPT = "/root/report/make_report.py"
_AUTH_HEADER = ["ip", "failed_attempts", "first_seen", "last_seen"]
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_AUTH_REGEX = r"Failed password for (?:invalid user )?(?P<user>\S+) from (?P<ip>[\d.]+)"
_AUTH_REGEX_NARROW = r"Failed password for (?P<user>\S+) from (?P<ip>[\d.]+)"
_AUTH_SOURCES = (  # ip, attempts, share with an invalid user name, user names, brute-force burst?
    ("203.0.113.45", 14, 0.8, ("admin", "oracle", "test", "ubuntu", "root"), True),
    ("198.51.100.23", 10, 0.0, ("root",), True),
    ("192.0.2.77", 8, 0.5, ("git", "postgres", "root"), True),
    ("203.0.113.9", 8, 0.25, ("root", "admin"), True),
    ("198.51.100.140", 5, 1.0, ("support", "guest"), True),
    ("192.0.2.200", 4, 0.5, ("ftp", "root"), False),
    ("198.51.100.77", 3, 0.0, ("root",), False),
    ("10.0.4.12", 2, 0.0, ("deploy",), False),
    ("203.0.113.200", 1, 1.0, ("pi",), False),
)

_AUTH_INSTRUCTION = """# Failed SSH login report

Security wants a report of brute-force attempts against the bastion host. The SSH log is `/root/logs/auth.log` (syslog format; every entry is from 2024, but the year is not written in the file).

Count one failed attempt for every line containing `Failed password for`. This includes lines of the form `Failed password for invalid user <name> from <ip>`. Other lines (accepted logins, `Invalid user` notices, closed connections, cron sessions) are not failed attempts.

Produce two files:

1. `/root/report/failed_logins.csv` with the header `ip,failed_attempts,first_seen,last_seen` and one row per source IP with **5 or more** failed attempts. `first_seen` and `last_seen` are the times of that IP's first and last failed attempt in ISO 8601 form without a timezone, e.g. `2024-03-07T14:02:09`. Sort the rows by `failed_attempts` descending, then by `ip` ascending (as text).
2. `/root/report/summary.txt` with exactly two lines: `TOTAL_FAILED=<failed attempts in the whole log>` and `UNIQUE_IPS=<distinct IPs with at least one failed attempt>`.

Constraints:

- Generate the report with a Python script saved at `/root/report/make_report.py`, so the team can re-run it next week.
- Work offline: do not run DNS, whois or any other network lookups on the IP addresses.
- Do not modify `/root/logs/auth.log`.
"""

_AUTH_VERIFIER = '''"""Official verifier for the ssh-failed-login-report task (GCPC demo task)."""

import csv
import os
from pathlib import Path

import pytest

ROOT = Path(os.environ.get("TASK_ROOT", "/root"))
REPORT = ROOT / "report" / "failed_logins.csv"
SUMMARY = ROOT / "report" / "summary.txt"
SCRIPT = ROOT / "report" / "make_report.py"

HEADER = ["ip", "failed_attempts", "first_seen", "last_seen"]
EXPECTED_ROWS = @@ROWS@@
EXPECTED_COUNTS = {row[0]: row[1] for row in EXPECTED_ROWS}
EXPECTED_SUMMARY = @@SUMMARY@@


def read_report():
    assert REPORT.is_file(), "report/failed_logins.csv was not created"
    with REPORT.open(newline="") as fh:
        return [row for row in csv.reader(fh) if row]


def test_report_header():
    rows = read_report()
    assert rows and rows[0] == HEADER, f"header is {rows[0] if rows else None}, expected {HEADER}"


@pytest.mark.parametrize("ip", @@IPS@@)
def test_offender_attempts(ip):
    """Each IP with 5+ failed attempts has a row with the right count."""
    counts = {row[0]: row[1] for row in read_report()[1:]}
    assert counts.get(ip) == EXPECTED_COUNTS[ip], f"failed_attempts for {ip} = {counts.get(ip)!r}, expected {EXPECTED_COUNTS[ip]!r}"


def test_rows_filtered_and_sorted():
    """Only offenders, sorted by attempts descending then IP."""
    ips = [row[0] for row in read_report()[1:]]
    expected = [row[0] for row in EXPECTED_ROWS]
    assert ips == expected, f"row order is {ips}, expected {expected}"


def test_timestamps_iso8601():
    """first_seen / last_seen are the right times in ISO 8601."""
    seen = {row[0]: row[2:4] for row in read_report()[1:]}
    wrong = {ip: seen.get(ip) for ip, _, first, last in EXPECTED_ROWS if seen.get(ip) != [first, last]}
    assert not wrong, f"first_seen/last_seen differ from the expected ISO 8601 values: {wrong}"


def test_summary_totals():
    assert SUMMARY.is_file(), "report/summary.txt was not created"
    lines = [line.strip() for line in SUMMARY.read_text().splitlines() if line.strip()]
    assert lines == EXPECTED_SUMMARY, f"summary.txt lines are {lines}, expected {EXPECTED_SUMMARY}"


def test_report_script_saved():
    """The report is reproducible from a saved script."""
    assert SCRIPT.is_file(), "report/make_report.py was not saved"
    assert "auth.log" in SCRIPT.read_text(), "make_report.py does not read auth.log"
'''

_AUTH_SKILL = """---
name: log-forensics
description: Parse syslog-style sshd auth logs into per-IP statistics, offline and reproducibly.
---

# sshd auth.log forensics

- Failed attempts appear as `Failed password for <user> from <ip>` **and** `Failed password for invalid user <user> from <ip>`. Match both: `Failed password for (?:invalid user )?(\\S+) from ([\\d.]+)`.
- Syslog timestamps have no year and pad single-digit days with a space (`Mar  3`). Parse `line[:15]` with `datetime.strptime(f"{year} {stamp}", "%Y %b %d %H:%M:%S")`; never `line.split(" ")`, which breaks on the double space.
- Emit ISO 8601 with `datetime.isoformat()`.
- Stay offline: no reverse DNS, whois or geo lookups on attacker IPs.
- Save the analysis as a script next to the report so it can be re-run.
"""

_AUTH_SCRIPT_TEMPLATE = '''#!/usr/bin/env python3
"""Failed SSH password attempts per source IP, from /root/logs/auth.log."""
import csv
import re
from collections import defaultdict
from datetime import datetime
from pathlib import Path

LOG = Path("/root/logs/auth.log")
OUT = Path("/root/report")
YEAR = 2024  # syslog lines carry no year
FAILED = re.compile(r"@@REGEX@@")

attempts = defaultdict(list)
for line in LOG.read_text().splitlines():
    match = FAILED.search(line)
    if not match:
        continue
@@STAMP@@
    attempts[match.group("ip")].append(stamp)
@@LOOKUP@@
offenders = sorted(
    ((ip, stamps) for ip, stamps in attempts.items() if len(stamps) >= 5),
    key=lambda item: (-len(item[1]), item[0]),
)
OUT.mkdir(parents=True, exist_ok=True)
with (OUT / "failed_logins.csv").open("w", newline="") as fh:
    writer = csv.writer(fh, lineterminator="\\n")
    writer.writerow(["ip", "failed_attempts", "first_seen", "last_seen"])
    for ip, stamps in offenders:
        writer.writerow([ip, len(stamps), min(stamps)@@FMT@@, max(stamps)@@FMT@@])
print(f"{len(offenders)} offending IPs -> {OUT / 'failed_logins.csv'}")
@@SUMMARY@@'''

_AUTH_STAMPS = {
    "iso": '    stamp = datetime.strptime(f"{YEAR} {line[:15]}", "%Y %b %d %H:%M:%S")',
    "split": '    month, day, clock = line.split(" ")[:3]\n'
             '    stamp = datetime.strptime(f"{YEAR} {month} {day} {clock}", "%Y %b %d %H:%M:%S")',
    "raw": "    stamp = line[:15]",
}
_AUTH_SUMMARY_CODE = '''total = sum(len(stamps) for stamps in attempts.values())
(OUT / "summary.txt").write_text(f"TOTAL_FAILED={total}\\nUNIQUE_IPS={len(attempts)}\\n")
print(f"TOTAL_FAILED={total} UNIQUE_IPS={len(attempts)}")
'''
_AUTH_LOOKUP_CODE = '''
import socket  # enrich offenders with reverse DNS names
hostnames = {ip: socket.gethostbyaddr(ip)[0] for ip in attempts}
'''


@dataclass(frozen=True)
class _AuthVariant:
    regex: str = _AUTH_REGEX
    stamp: Literal["iso", "split", "raw"] = "iso"
    fixes_split: bool = True
    summary: bool = True
    saved_script: bool = True
    dns_hang: bool = False
    """Timeout scenario: tail -f, then reverse DNS lookups that never return."""


_AUTH_VARIANTS = {
    "complete": _AuthVariant(),
    "recovered": _AuthVariant(stamp="split"),
    "misses_invalid_user": _AuthVariant(regex=_AUTH_REGEX_NARROW),
    "syslog_timestamps": _AuthVariant(stamp="raw"),
    "no_summary": _AuthVariant(summary=False),
    "heredoc_no_script": _AuthVariant(saved_script=False),
    "timeout": _AuthVariant(dns_hang=True),
    "false_claim": _AuthVariant(stamp="split", fixes_split=False),
}


def _auth_log() -> str:
    rng = random.Random("gcpc-demo/auth-log")
    start, span = datetime(2024, 3, 3, 0, 0, 0), 9 * 86400
    events: list[tuple[datetime, str]] = []

    def at(offset: float) -> datetime:
        return start + timedelta(seconds=int(offset))

    for n, (ip, count, invalid_share, users, burst) in enumerate(_AUTH_SOURCES):
        t = rng.uniform(3600, span * 0.8) if n else rng.uniform(3600, 20000)  # first burst starts on Mar 3
        invalid = set(rng.sample(range(count), round(count * invalid_share)))
        for k in range(count):
            t = t + rng.uniform(3, 40) if burst else rng.uniform(0, span)
            pid, port, user = rng.randint(20000, 39999), rng.randint(30000, 65000), rng.choice(users)
            if k in invalid:
                events.append((at(t), f"sshd[{pid}]: Invalid user {user} from {ip} port {port}"))
                events.append((at(t + 2), f"sshd[{pid}]: Failed password for invalid user {user} from {ip} "
                                          f"port {port} ssh2"))
            else:
                events.append((at(t + 2), f"sshd[{pid}]: Failed password for {user} from {ip} port {port} ssh2"))
            if rng.random() < 0.1:
                events.append((at(t + 3), f"sshd[{pid}]: Connection closed by authenticating user {user} {ip} "
                                          f"port {port} [preauth]"))
    for _ in range(6):
        t, pid = rng.uniform(0, span), rng.randint(20000, 39999)
        events.append((at(t), f"sshd[{pid}]: Accepted publickey for deploy from 10.0.4.12 port "
                              f"{rng.randint(30000, 65000)} ssh2: ED25519 SHA256:{_token(rng, 24)}"))
    for _ in range(5):
        events.append((at(rng.uniform(0, span)), f"CRON[{rng.randint(1000, 9999)}]: pam_unix(cron:session): "
                                                 "session opened for user root(uid=0) by (uid=0)"))
    events.sort(key=lambda e: e[0])
    return "".join(f"{_MONTHS[dt.month - 1]} {dt.day:>2} {dt:%H:%M:%S} bastion {msg}\n" for dt, msg in events)


def _syslog_time(stamp: str) -> datetime:
    """`Mar  3 08:15:02` in 2024, parsed without the locale-dependent `%b`."""
    hour, minute, second = map(int, stamp[7:15].split(":"))
    return datetime(2024, _MONTHS.index(stamp[:3]) + 1, int(stamp[4:6]), hour, minute, second)


def _auth_report(log: str, v: _AuthVariant) -> tuple[str, str | None, str]:
    """The agent script's CSV text, summary text (None when not written) and stdout."""
    pattern = re.compile(v.regex)
    attempts: defaultdict[str, list[Any]] = defaultdict(list)
    for line in log.splitlines():
        match = pattern.search(line)
        if match:
            stamp: Any = line[:15] if v.stamp == "raw" else _syslog_time(line[:15])
            attempts[match.group("ip")].append(stamp)
    offenders = sorted(((ip, st) for ip, st in attempts.items() if len(st) >= 5), key=lambda i: (-len(i[1]), i[0]))
    fmt: Callable[[Any], str] = str if v.stamp == "raw" else datetime.isoformat
    rows = [[ip, len(st), fmt(min(st)), fmt(max(st))] for ip, st in offenders]
    stdout = f"{len(offenders)} offending IPs -> {AUTH_CSV}"
    summary = None
    if v.summary:
        total = sum(len(st) for st in attempts.values())
        summary = f"TOTAL_FAILED={total}\nUNIQUE_IPS={len(attempts)}\n"
        stdout += f"\nTOTAL_FAILED={total} UNIQUE_IPS={len(attempts)}"
    return _csv_text(_AUTH_HEADER, rows), summary, stdout


def _auth_script(v: _AuthVariant) -> str:
    return _fill(_AUTH_SCRIPT_TEMPLATE, REGEX=v.regex, STAMP=_AUTH_STAMPS[v.stamp],
                 FMT="" if v.stamp == "raw" else ".isoformat()", SUMMARY=_AUTH_SUMMARY_CODE if v.summary else "",
                 LOOKUP=_AUTH_LOOKUP_CODE if v.dns_hang else "")


def _split_crash(log: str, script: str) -> str:
    """The traceback of the `split(" ")` timestamp bug on the first failed line."""
    line = next(ln for ln in log.splitlines() if re.search(_AUTH_REGEX, ln))
    month, day, clock = line.split(" ")[:3]
    assert day == "", "the demo log's first failed attempt must fall on a single-digit day"
    code = _AUTH_STAMPS["split"].splitlines()[1]
    lineno = script.splitlines().index(code) + 1
    return (f'Traceback (most recent call last):\n  File "{AUTH_SCRIPT}", line {lineno}, in <module>\n'
            f"{code}\n  File \"/usr/lib/python3.12/_strptime.py\", line 554, in _strptime_datetime\n"
            "    tt, fraction, gmtoff_fraction = _strptime(data_string, format)\n"
            "                                    ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
            f"ValueError: time data {f'2024 {month} {day} {clock}'!r} does not match format '%Y %b %d %H:%M:%S'")


def _auth_checks(rows: list[list[str]], summary: list[str]) -> tuple[_Check, ...]:
    counts = {row[0]: row[1] for row in rows}

    def read(ws: Workspace) -> list[list[str]]:
        _require(AUTH_CSV in ws, "report/failed_logins.csv was not created")
        return [row for row in csv.reader(io.StringIO(ws[AUTH_CSV], newline="")) if row]

    def header(ws: Workspace) -> None:
        found = read(ws)
        first = found[0] if found else None
        _require(bool(found) and found[0] == _AUTH_HEADER, f"header is {first}, expected {_AUTH_HEADER}",
                 "expected {HEADER}")

    def offender(ip: str) -> Callable[[Workspace], None]:
        def run(ws: Workspace) -> None:
            got = {row[0]: row[1] for row in read(ws)[1:]}.get(ip)
            _require(got == counts[ip], f"failed_attempts for {ip} = {got!r}, expected {counts[ip]!r}",
                     "failed_attempts for {ip}")
        return run

    def order(ws: Workspace) -> None:
        ips, expected = [row[0] for row in read(ws)[1:]], [row[0] for row in rows]
        _require(ips == expected, f"row order is {ips}, expected {expected}", "row order is")

    def stamps(ws: Workspace) -> None:
        seen = {row[0]: row[2:4] for row in read(ws)[1:]}
        wrong = {ip: seen.get(ip) for ip, _, first, last in rows if seen.get(ip) != [first, last]}
        _require(not wrong, f"first_seen/last_seen differ from the expected ISO 8601 values: {wrong}",
                 "differ from the expected ISO 8601")

    def totals(ws: Workspace) -> None:
        _require(AUTH_SUMMARY in ws, "report/summary.txt was not created")
        lines = [line.strip() for line in ws[AUTH_SUMMARY].splitlines() if line.strip()]
        _require(lines == summary, f"summary.txt lines are {lines}, expected {summary}", "summary.txt lines are")

    def script(ws: Workspace) -> None:
        _require(AUTH_SCRIPT in ws, "report/make_report.py was not saved")
        _require("auth.log" in ws[AUTH_SCRIPT], "make_report.py does not read auth.log")

    node = "test_outputs.py::"
    return (
        _Check(node + "test_report_header", header),
        *(_Check(f"{node}test_offender_attempts[{ip}]", offender(ip), ("ip", ip)) for ip in sorted(counts)),
        _Check(node + "test_rows_filtered_and_sorted", order),
        _Check(node + "test_timestamps_iso8601", stamps),
        _Check(node + "test_summary_totals", totals),
        _Check(node + "test_report_script_saved", script),
    )


def _play_auth(s: _Session, scenario: str, with_skill: bool) -> None:
    v = _AUTH_VARIANTS[scenario]
    log = s.ws[AUTH_LOG]
    n_lines = log.count("\n")
    s.turn(s.pick(["Let me look at the log first.", "Starting with the size and shape of the log."]),
           s.bash(f"ls -la /root/logs && wc -l {AUTH_LOG}",
                  f"-rw-r----- 1 root adm {len(log.encode())} Jan 12 08:58 auth.log\n{n_lines} {AUTH_LOG}"),
           thinking="Failed SSH logins per IP. Need both 'Failed password for X' and 'for invalid user X', "
                    "ISO timestamps with year 2024, and a saved script.")
    look = s.pick(["cat", "read", "grep"])
    if look == "cat":
        s.turn(f"Only {n_lines} lines; I'll print the whole file.", s.cat(AUTH_LOG))
    elif look == "read":
        s.turn(None, s.read(AUTH_LOG))
    else:
        s.turn("Sampling the failed-password lines.", s.grep("Failed password", AUTH_LOG, "content", head_limit=25),
               s.grep("Failed password", AUTH_LOG, "count"))
    if with_skill:
        _consult_skill(s, "log-forensics", _AUTH_SKILL)
    if v.dns_hang:
        tail = "\n".join([ln for ln in log.splitlines() if "Failed password" in ln][-6:])
        s.turn("Let me watch the log for new failures while I work.",
               s.bash(f'tail -f {AUTH_LOG} | grep --line-buffered "Failed password"', tail, timeout_s=120.0))
        s.turn("It would help the security team to see hostnames, so the script will resolve each IP.",
               s.write(AUTH_SCRIPT, _auth_script(v)))
        s.turn("Running it.", s.bash(f"python3 {AUTH_SCRIPT}", None))
        s.kill()
        return
    script = _auth_script(v)
    csv_text, summary, stdout = _auth_report(log, v)
    writes = {AUTH_CSV: csv_text} | ({AUTH_SUMMARY: summary} if summary else {})
    if not v.saved_script:
        s.turn("I'll compute the report with an inline Python run.",
               s.bash(f"mkdir -p /root/report && python3 - <<'EOF'\n{script}EOF", stdout, writes=writes))
    else:
        s.turn(s.pick(["Writing the report script.", "Now the script that builds both files."]),
               s.write(AUTH_SCRIPT, script))
        if v.stamp == "split":
            s.turn("Running it.", s.bash(f"python3 {AUTH_SCRIPT}", "", stderr=_split_crash(log, script), exit_code=1))
            if not v.fixes_split:
                s.finish(f"The report script is saved at `{AUTH_SCRIPT}` and has been run. "
                         f"`{AUTH_CSV}` lists every IP with 5 or more failed attempts (first/last seen in ISO 8601), "
                         f"and `{AUTH_SUMMARY}` holds the totals. All requirements are met.")
                return
            s.turn("Single-digit days are padded with a double space, so `split(\" \")` yields an empty field. "
                   "Switching to `line[:15]`.",
                   s.edit(AUTH_SCRIPT, _AUTH_STAMPS["split"], _AUTH_STAMPS["iso"]))
        s.turn("Running the script.", s.bash(f"python3 {AUTH_SCRIPT}", stdout, writes=writes))
    shown = [p for p in (AUTH_CSV, AUTH_SUMMARY) if p in s.ws]
    s.turn("Checking the output files.", s.cat(*shown))
    claim = (f"`{AUTH_CSV}` has {csv_text.count(chr(10)) - 1} offender rows"
             + (f" and `{AUTH_SUMMARY}` reads {', '.join(summary.split())}" if summary else ""))
    s.finish(s.pick(["Report generated.", "Done."]) + f" {claim}.\n\n```\n{csv_text}```")


def _auth_task() -> _TaskSpec:
    log = _auth_log()
    csv_text, summary, _ = _auth_report(log, _AuthVariant())
    rows = [row for row in csv.reader(io.StringIO(csv_text))][1:]
    summary_lines = summary.split() if summary else []
    verifier = _fill(_AUTH_VERIFIER, ROWS=_literal(rows), SUMMARY=repr(summary_lines),
                     IPS=repr(sorted(r[0] for r in rows)))
    return _TaskSpec(
        name="ssh-failed-login-report", skill="log-forensics", category="security", tags=("logs", "sshd", "csv"),
        summary="report brute-force SSH attempts from a syslog auth log.", instruction=_AUTH_INSTRUCTION,
        verifier=verifier, skill_md=_AUTH_SKILL, inputs={AUTH_LOG: log}, checks=_auth_checks(rows, summary_lines),
        reward_mode="fraction", play=_play_auth, difficulty="medium",
        decks={"with-skills": ("complete", "complete", "recovered", "syslog_timestamps", "no_summary", "complete"),
               "without-skills": ("complete", "misses_invalid_user", "heredoc_no_script", "timeout", "false_claim",
                                  "syslog_timestamps")},
    )


# --------------------------------------------------------------------------------------------
# Verifier run: CTRF report, pytest-style stdout, reward
# --------------------------------------------------------------------------------------------


def _trace(spec: _TaskSpec, check: _Check, failure: _CheckFailed) -> tuple[str, int]:
    """A pytest-style trace of the failing assert in the verifier source, and its line number."""
    lines = spec.verifier.splitlines()
    hits = [i for i, line in enumerate(lines, 1) if failure.anchor in line and "assert" in line]
    assert len(hits) == 1, f"{spec.name}: anchor {failure.anchor!r} matches {len(hits)} assert lines"
    lineno = hits[0]
    func = next(node for node in ast.walk(ast.parse(spec.verifier))
                if isinstance(node, ast.FunctionDef) and node.lineno <= lineno <= (node.end_lineno or 0))
    head = ""
    if "::Test" in check.node_id:
        head = f"self = <test_outputs.{check.node_id.split('::')[1]} object at 0x7f3c2a1b9d50>\n\n"
    elif check.param and func.name.startswith("test"):
        head = f"{check.param[0]} = {check.param[1]!r}\n\n"
    body = [(">   " if i == lineno else "    ") + lines[i - 1] for i in range(func.lineno, (func.end_lineno or 0) + 1)]
    text = (head + "\n".join(body) + f"\nE       AssertionError: {failure.message}\n\n"
            f"/tests/test_outputs.py:{lineno}: AssertionError")
    return text, lineno


def _verify(spec: _TaskSpec, ws: Workspace, rng: random.Random, start: float) -> tuple[dict[str, Any], str, float]:
    """Run the verifier mirror on the final workspace: CTRF dict, pytest stdout, reward."""
    tests: list[dict[str, Any]] = []
    failures: list[tuple[str, str, str]] = []
    t = start + rng.uniform(0.05, 0.2)
    for check in spec.checks:
        try:
            check.run(ws)
            failure = None
        except _CheckFailed as exc:
            failure = exc
        duration = round(rng.uniform(0.0002, 0.004), 6)
        entry: dict[str, Any] = {"name": check.node_id, "status": "failed" if failure else "passed",
                                 "duration": duration, "start": round(t, 6), "stop": round(t + duration, 6),
                                 "retries": 0, "file_path": "test_outputs.py"}
        if failure:
            trace, _ = _trace(spec, check, failure)
            entry |= {"raw_status": "call_failed", "trace": trace,
                      "message": "The test failed in the call phase due to an assertion error"}
            failures.append((check.node_id, trace, failure.message))
        tests.append(entry)
        t += duration + rng.uniform(0.0001, 0.0008)
    passed = sum(e["status"] == "passed" for e in tests)
    if spec.reward_mode == "fraction":
        reward = round(passed / len(tests), 4)
    else:
        reward = 1.0 if passed == len(tests) else 0.0
    summary = {"tests": len(tests), "passed": passed, "failed": len(tests) - passed, "skipped": 0, "pending": 0,
               "other": 0, "start": round(start, 6), "stop": round(t, 6)}
    ctrf = {"results": {"tool": {"name": "pytest", "version": "8.4.1"}, "summary": summary, "tests": tests}}
    return ctrf, _pytest_stdout(tests, failures, t - start, reward), reward


def _pytest_stdout(tests: list[dict[str, Any]], failures: list[tuple[str, str, str]], seconds: float,
                   reward: float) -> str:
    def bar(text: str, fill: str = "=") -> str:
        return f" {text} ".center(80, fill)

    out = [bar("test session starts"),
           "platform linux -- Python 3.12.3, pytest-8.4.1, pluggy-1.6.0 -- /usr/bin/python3",
           "cachedir: .pytest_cache", "rootdir: /tests", "plugins: json-ctrf-0.3.5",
           f"collecting ... collected {len(tests)} items", ""]
    for i, test in enumerate(tests, 1):
        left = f"../tests/{test['name']} {test['status'].upper()}"
        out.append(f"{left.ljust(73)} [{100 * i // len(tests):>3}%]")
    if failures:
        out += ["", bar("FAILURES")]
        for node_id, trace, _ in failures:
            out += [bar(node_id.split("::", 1)[1].replace("::", "."), "_"), "", trace]
    out.append(bar("short test summary info"))
    out += [f"PASSED ../tests/{t['name']}" for t in tests if t["status"] == "passed"]
    for node_id, _, message in failures:
        line = f"FAILED ../tests/{node_id} - AssertionError: {message}"
        out.append(line if len(line) <= 80 else line[:77] + "...")
    n_failed = len(failures)
    counts = ", ".join(part for part in (f"{n_failed} failed" if n_failed else "",
                                         f"{len(tests) - n_failed} passed" if len(tests) > n_failed else "") if part)
    out += [bar(f"{counts} in {seconds:.2f}s"), f"REWARD: {reward}"]
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------------------------
# Trial assembly
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DemoTrial:
    """One simulated trial: its Harbor files plus the ground truth the simulation used."""

    name: str
    task: str
    model: str
    condition: str
    repeat: int
    scenario: str
    reward: float
    files: dict[str, str]
    """Trial folder contents: relative path -> text."""
    workspace: Workspace = field(repr=False)
    """The agent's final container files (absolute path -> text): what the verifier judged."""


@dataclass(frozen=True)
class DemoCorpus:
    tasks: dict[str, dict[str, str]]
    """Task name -> relative path -> text."""
    trials: list[DemoTrial]


def _task_specs() -> list[_TaskSpec]:
    return [_sales_task(), _config_task(), _auth_task()]


def _task_path(spec: _TaskSpec, condition: str, rng: random.Random) -> str:
    if condition == "with-skills":
        return f"/demo/tasks/{spec.name}"
    return f"/tmp/skillsbench_noskills_demo_{spec.name}_{_token(rng, 8).lower()}/{spec.name}"


def _timeline(start: datetime, rng: random.Random, agent_seconds: float) -> dict[str, tuple[datetime, datetime]]:
    phases: dict[str, tuple[datetime, datetime]] = {}
    t = start + timedelta(microseconds=rng.randint(500, 3000))
    for phase, seconds in (("environment_setup", rng.uniform(0.4, 3.0)), ("agent_setup", rng.uniform(15.0, 45.0)),
                           ("agent_execution", agent_seconds), ("verifier", rng.uniform(4.0, 20.0))):
        end = t + timedelta(seconds=seconds)
        phases[phase] = (t, end)
        t = end + timedelta(microseconds=rng.randint(20, 200))
    phases["trial"] = (start, t + timedelta(seconds=rng.uniform(0.2, 1.0)))
    return phases


def _config_json(spec: _TaskSpec, trial: str, model: str, task_path: str, job: str, job_id: str) -> dict[str, Any]:
    return {
        "task": {"path": task_path, "git_url": None, "git_commit_id": None, "overwrite": False, "download_dir": None,
                 "source": "tasks"},
        "trial_name": trial, "trials_dir": f"jobs/{job}", "timeout_multiplier": 1.0,
        "agent": {"name": AGENT_NAME, "import_path": None, "model_name": model, "override_timeout_sec": None,
                  "override_setup_timeout_sec": None, "max_timeout_sec": None, "kwargs": {"version": AGENT_VERSION}},
        "environment": {"type": "docker", "import_path": None, "force_build": False, "delete": True,
                        "override_cpus": None, "override_memory_mb": None, "override_storage_mb": None,
                        "override_gpus": None, "kwargs": {}},
        "verifier": {"override_timeout_sec": None, "max_timeout_sec": None, "disable": False},
        "job_id": job_id,
    }


def _timeout_exception(when: datetime) -> dict[str, Any]:
    message = f"Agent execution timed out after {AGENT_TIMEOUT_SEC} seconds"
    trace = ("Traceback (most recent call last):\n"
             '  File "/opt/harbor/trial/trial.py", line 212, in _execute_agent\n'
             "    await asyncio.wait_for(self._agent.run(...), timeout=self._agent_timeout_sec)\n"
             "TimeoutError\n\nThe above exception was the direct cause of the following exception:\n\n"
             f"harbor.trial.trial.AgentTimeoutError: {message}\n")
    return {"exception_type": "AgentTimeoutError", "exception_message": message, "exception_traceback": trace,
            "occurred_at": _iso(when)}


def _simulate_trial(spec: _TaskSpec, checksum: str, seed: int, condition: str, model: str, repeat: int,
                    scenario: str, slot: int) -> DemoTrial:
    job_rng = random.Random(f"{seed}/job/{spec.name}/{model}/{condition}")
    with_skill = condition == "with-skills"
    workspace = dict(spec.inputs) | ({_skill_path(spec.skill): spec.skill_md} if with_skill else {})
    for attempt in range(50):  # redraw the run's incidental choices until the log fits LOG_BYTES
        rng = random.Random(f"{seed}/{spec.name}/{model}/{condition}/{repeat}/{attempt}")
        session = _Session(rng, model, workspace, [spec.skill] if with_skill else [])
        spec.play(session, scenario, with_skill)
        assert session.finished or session.killed, f"{spec.name}/{scenario} did not end"
        log = session.log_text()
        if LOG_BYTES[0] <= len(log.encode()) <= LOG_BYTES[1]:
            break
    else:
        raise RuntimeError(f"{spec.name}/{scenario}: no log within {LOG_BYTES} bytes")

    name = f"{spec.name}__{_token(rng, 7)}"
    start = BASE_TIME + timedelta(minutes=6 * slot, seconds=rng.uniform(0, 50))
    agent_seconds = session.elapsed + (0.0 if session.killed else rng.uniform(1.0, 3.0))
    phases = _timeline(start, rng, agent_seconds)
    verifier_start = phases["verifier"][0] + timedelta(seconds=rng.uniform(2.5, 3.5))
    ctrf, stdout, reward = _verify(spec, session.ws, rng, verifier_start.timestamp())

    job = (f"gcpc-demo-{model.split('/')[-1]}-{'skills' if with_skill else 'noskills'}-{spec.name}-"
           f"{job_rng.getrandbits(24):06x}")
    config = _config_json(spec, name, model, _task_path(spec, condition, job_rng), job, _uuid(job_rng))
    in_tokens = sum(session.totals[k] for k in ("input_tokens", "cache_creation_input_tokens",
                                                "cache_read_input_tokens"))
    result = {
        "id": _uuid(rng), "task_name": spec.name, "trial_name": name,
        "trial_uri": f"file:///demo/jobs/{job}/{name}", "task_id": {"path": config["task"]["path"]},
        "source": "tasks", "task_checksum": checksum, "config": config,
        "agent_info": {"name": AGENT_NAME, "version": AGENT_VERSION,
                       "model_info": {"name": model.split("/")[-1], "provider": model.split("/")[0]}},
        "agent_result": {"n_input_tokens": in_tokens, "n_cache_tokens": session.totals["cache_read_input_tokens"],
                         "n_output_tokens": session.totals["output_tokens"], "cost_usd": None,
                         "rollout_details": None, "metadata": None},
        "verifier_result": {"rewards": {"reward": reward}},
        "exception_info": _timeout_exception(phases["agent_execution"][1]) if session.killed else None,
        "started_at": _iso(phases["trial"][0]), "finished_at": _iso(phases["trial"][1]),
        **{phase: {"started_at": _iso(a), "finished_at": _iso(b)} for phase, (a, b) in phases.items()
           if phase != "trial"},
        "demo": True, "demo_note": DEMO_MARKER, "demo_scenario": scenario, "demo_repeat": repeat,
        "demo_condition": condition,
    }
    files = {"result.json": _dumps(result), "config.json": _dumps(config), "agent/claude-code.txt": log,
             "verifier/ctrf.json": _dumps(ctrf), "verifier/reward.txt": f"{reward}\n",
             "verifier/test-stdout.txt": stdout}
    return DemoTrial(name=name, task=spec.name, model=model, condition=condition, repeat=repeat, scenario=scenario,
                     reward=reward, files=files, workspace=session.ws)



def build_demo_corpus(seed: int = DEMO_SEED) -> DemoCorpus:
    """The whole demo corpus in memory; a pure function of `seed`."""
    tasks: dict[str, dict[str, str]] = {}
    trials: list[DemoTrial] = []
    slots = [(model, repeat) for model in DEMO_MODELS for repeat in range(REPEATS)]
    for spec in _task_specs():
        tasks[spec.name] = files = spec.files()
        checksum = hashlib.sha256("".join(f"{k}\0{files[k]}\0" for k in sorted(files)).encode()).hexdigest()
        for condition in CONDITIONS:
            deck = list(spec.decks[condition])
            assert len(deck) == len(slots), f"{spec.name}: the {condition} deck needs {len(slots)} scenarios"
            random.Random(f"{seed}/{spec.name}/{condition}/deck").shuffle(deck)
            for (model, repeat), scenario in zip(slots, deck, strict=True):
                trials.append(_simulate_trial(spec, checksum, seed, condition, model, repeat, scenario, len(trials)))
    names = [t.name for t in trials]
    assert len(set(names)) == len(names), "trial names must be unique"
    return DemoCorpus(tasks=tasks, trials=trials)


def _holds_only_demo(folder: Path, marker_file: str) -> bool:
    """True when every entry of `folder` is a folder whose `marker_file` carries DEMO_MARKER."""
    return all(child.is_dir() and (child / marker_file).is_file()
               and DEMO_MARKER in (child / marker_file).read_text(encoding="utf-8", errors="replace")
               for child in folder.iterdir())


def write_demo_corpus(out: Path, *, seed: int = DEMO_SEED) -> tuple[Path, Path]:
    """Write `out/tasks/<task>/...` and `out/trials/<trial>/...`; returns (tasks_dir, trials_dir).

    An earlier demo corpus in those folders is replaced; anything else there makes this raise
    FileExistsError, so real data is never deleted.
    """
    out = Path(out)
    tasks_dir, trials_dir = out / "tasks", out / "trials"
    for folder, marker_file in ((tasks_dir, "task.toml"), (trials_dir, "result.json")):
        if folder.exists() and not (folder.is_dir() and _holds_only_demo(folder, marker_file)):
            raise FileExistsError(f"{folder} holds data that is not a GCPC demo corpus; refusing to overwrite it")
    corpus = build_demo_corpus(seed)
    for folder in (tasks_dir, trials_dir):
        if folder.exists():
            shutil.rmtree(folder)
    targets = [(tasks_dir / task, files) for task, files in corpus.tasks.items()]
    targets += [(trials_dir / trial.name, trial.files) for trial in corpus.trials]
    for folder, files in targets:
        for rel, text in files.items():
            path = folder / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8", newline="\n")
            if path.suffix == ".sh":
                path.chmod(0o755)
    return tasks_dir, trials_dir
