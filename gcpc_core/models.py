"""The shared data model: tasks, trajectories and their normalized events.

These pydantic models are the contract between the importers, the project DB,
the evidence view and everything downstream (checklists, judges, the app).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "AuditSelection",
    "CONDITIONS",
    "ENDPOINT_ITEM_ID",
    "EVENT_KINDS",
    "Citation",
    "Condition",
    "CtrfTest",
    "Event",
    "EventKind",
    "ItemJudgment",
    "LogFormat",
    "Outcome",
    "Route",
    "SCORED_OUTCOMES",
    "SCRIPT_REF_PREFIX",
    "Task",
    "Trajectory",
    "UNRECORDED_SELECTION",
    "Verdict",
    "VerifierTest",
    "is_script_ref",
]

EventKind = Literal[
    "system", "user", "agent_message", "agent_thinking", "tool_call", "tool_output", "file_content"
]
EVENT_KINDS: tuple[str, ...] = EventKind.__args__  # type: ignore[attr-defined]

Condition = Literal["with-skills", "without-skills", "unknown"]
CONDITIONS: tuple[str, ...] = Condition.__args__  # type: ignore[attr-defined]

Outcome = Literal["PASS", "FAIL", "unscored"]
"""`unscored`: no reward was recorded (an unfinished job); imported and shown, left out of outcome statistics."""
SCORED_OUTCOMES: tuple[str, ...] = ("PASS", "FAIL")

LogFormat = Literal["claude-code", "atif", "terminus-2", "codex", "acp", "gcpc-jsonl"]

Verdict = Literal["Yes", "No", "Abstain"]

AuditSelection = Literal["random", "chosen"]
"""How an item verdict came to be audited: `random`, a seeded random draw within its stratum (the triage page's
proposals); `chosen`, anything else (the disagreement list, browsing), which says nothing of the verdicts nobody
audited. Audits recorded without one (before it was recorded, or outside the app) are `UNRECORDED_SELECTION`."""
UNRECORDED_SELECTION = "unrecorded"

Route = Literal["assertion", "generated", "judge", "endpoint"]
"""Checklist routes, plus `endpoint`: the virtual item postprocessing adds for an official FAIL."""

ENDPOINT_ITEM_ID = "ENDPOINT"

SCRIPT_REF_PREFIX = "tests/"
"""The node id of a verifier script (`VerifierTest.kind == "script"`) is its path in the task folder,
`tests/<file>` (tests/verify.py): this prefix and the file, with no `::` (which every pytest node id has)."""


def is_script_ref(ref: str) -> bool:
    """Whether a verifier ref names a whole verifier script (`tests/<file>`), not a pytest node."""
    ref = ref.strip()
    return ref.startswith(SCRIPT_REF_PREFIX) and "::" not in ref


class VerifierTest(BaseModel):
    """One pytest node of a task's official verifier, as parsed from its source — or, for a verifier
    with no pytest test node (a plain script), one node standing for that script (`kind="script"`)."""

    model_config = ConfigDict(frozen=True)

    node_id: str
    """`file::Class::test` or `file::test`, the form pytest and CTRF report; for a script, its path
    `tests/<file>` (`SCRIPT_REF_PREFIX`)."""
    file: str
    """Verifier file name relative to the task's `tests/` folder, e.g. `test_outputs.py` (`test.sh` for a
    shell script)."""
    cls: str | None = None
    """Enclosing `Test*` class, when the test is a method."""
    name: str
    """The test function's name; a script's file name."""
    lineno: int
    """1-based line of the `def`, so a UI can show the test's source excerpt (1 for a script)."""
    end_lineno: int
    """Last line of the test function (of the file, for a script)."""
    parametrized: bool = False
    """True when decorated with `pytest.mark.parametrize`; CTRF then reports `name[param]` ids."""
    param_cases: int = 0
    """How many cases pytest collects from the test's `parametrize` decorators (their product), when
    every decorator lists its cases literally; 0 when not parametrized or the cases are computed."""
    param_ids: tuple[str, ...] = ()
    """The cases' ids as pytest writes them in `name[id]` (spaces and trailing spaces kept), when
    known statically (one decorator, literal values or `ids`); empty otherwise."""

    docstring: str | None = None
    """The test's docstring: the verifier author's own statement of what it checks (a script's module
    docstring, or a shell script's leading comment)."""
    kind: Literal["pytest", "script"] = "pytest"
    """`script`: the whole verifier script of a task with no pytest test node. It passes when the script
    does (the official outcome, unless a CTRF report lists it); assertion items cite it like a test."""
    script_checks: int = 0
    """For a script: how many checks it makes (`assert` statements and calls that exit with a failure)."""

    @property
    def checks(self) -> int:
        """How many checks the verifier runs for this node: a script's checks, or a test's parametrized
        cases, else one."""
        return max(1, self.script_checks if self.kind == "script" else self.param_cases)


class Task(BaseModel):
    """One benchmark task in Harbor layout: the instruction the agent saw plus its verifier."""

    id: str
    """Task name (the folder name), e.g. `citation-check`; trials refer to it by `task_name`."""
    instruction: str
    """Full text of `instruction.md`, verbatim: checklist quotes must be spans of it."""
    verifier_files: dict[str, str] = Field(default_factory=dict)
    """Python sources under `tests/`, keyed by file name relative to `tests/`."""
    test_script: str | None = None
    """`tests/test.sh`, when present: how the verifier is run."""
    tests: list[VerifierTest] = Field(default_factory=list)
    """Parsed verifier test nodes, in source order."""
    parse_errors: list[str] = Field(default_factory=list)
    """Verifier files that could not be parsed, each with the reason."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """`task.toml` as parsed (metadata, verifier/agent timeouts, environment)."""
    source_path: str
    """Absolute path of the task folder this was imported from."""

    @property
    def test_ids(self) -> list[str]:
        """Node ids of every parsed verifier test."""
        return [t.node_id for t in self.tests]

    def verifier_text(self, file: str) -> str:
        """The source of verifier file `file` (relative to `tests/`; `test.sh` is `test_script`), or ""."""
        if file in self.verifier_files:
            return self.verifier_files[file]
        return (self.test_script or "") if file == "test.sh" else ""


class CtrfTest(BaseModel):
    """One test's result from a trial's `verifier/ctrf.json`."""

    name: str
    """Test name as CTRF reports it, normally the pytest node id."""
    status: str
    """`passed`, `failed`, `skipped`, `pending` or `other`."""
    message: str | None = None
    """Failure message or trace, when the report carries one."""
    duration: float | None = None
    """Seconds the test took."""


class Trajectory(BaseModel):
    """One agent run on one task: a Harbor trial folder, normalized."""

    id: str
    """Trial name (`result.json` → `trial_name`, else the folder name); unique in a project."""
    task: str
    """Task id this trial ran."""
    agent: str
    """Agent harness name, e.g. `claude-code`, `gemini-cli`, `terminus-2`."""
    agent_version: str | None = None
    """Harness version, when recorded."""
    model: str
    """Model name as configured for the run, e.g. `minimax/MiniMax-M2.1`."""
    condition: Condition = "unknown"
    """Whether the agent had curated Skills; `unknown` when nothing in the trial says."""
    condition_basis: str = ""
    """Which evidence decided the condition (mapping file, config path, log init line, …)."""
    trial_index: int = 0
    """0-based rank among trials sharing (task, agent, model, condition), ordered by start time;
    with task, agent and model it forms the matched-pair key."""
    outcome: Outcome
    """Official outcome: PASS when reward ≥ the project's threshold (1.0 by default); `unscored`
    when no reward was recorded."""
    outcome_basis: str = ""
    """The evidence for the outcome: the reward, its source and the threshold, or why it is unscored
    (or that PASS/FAIL was derived from the CTRF report on request)."""
    reward: float | None = None
    """Official verifier reward, from `result.json` or `verifier/reward.txt`."""
    reward_source: str = ""
    """Where the reward came from: `result.json`, `verifier/reward.txt` or `missing`."""
    ctrf: list[CtrfTest] = Field(default_factory=list)
    """Per-test verifier results; empty when the trial has no CTRF report (it happens)."""
    timings: dict[str, Any] = Field(default_factory=dict)
    """Start/finish times of the trial and of its phases, as ISO strings."""
    exception: dict[str, Any] | None = None
    """`result.json` → `exception_info` (e.g. an agent timeout), or None."""
    tokens: dict[str, Any] = Field(default_factory=dict)
    """Agent token usage as recorded by the harness (input, cache, output, cost)."""
    source_path: str
    """Absolute path of the trial folder."""
    log_path: str
    """Path of the agent log inside the trial folder, relative to it."""
    log_format: LogFormat
    """Detected agent-log format."""
    log_bytes: int = 0
    """Size of the agent log file in bytes."""
    content_hash: str = ""
    """sha256 over the trial's files, so a re-import can tell unchanged from changed."""
    is_demo: bool = False
    """True for trials of the embedded, simulated demo corpus."""


class Event(BaseModel):
    """One normalized step of a trajectory log, with a stable id that citations point at."""

    id: str
    """`E1`, `E2`, … in log order; stable across re-imports of the same log."""
    seq: int
    """1-based position in the trajectory (the number in `id`)."""
    kind: EventKind
    """What the step is; only tool calls, tool outputs and file contents are evidence."""
    text: str
    """The step's content, whole (never truncated in storage)."""
    tool_name: str | None = None
    """Tool name for tool calls, and for the outputs and file contents they produced."""
    call_id: str | None = None
    """For outputs and file contents: the event id (`E…`) of the tool call that produced them."""
    path: str | None = None
    """For file contents: the file read or written."""
    is_error: bool = False
    """For tool outputs: the harness marked the result as an error. For tool calls: a write or edit
    whose result was an error (a failed attempt: the call shows what it tried to write, and no
    `file_content` was made of it)."""
    source: str = ""
    """Where in the log file the step came from, e.g. `line 17` or `steps[4].observation`."""


class Citation(BaseModel):
    """A verbatim span of one evidence-view event that a verdict rests on."""

    event_id: str
    """The cited event, e.g. `E17`."""
    quote: str
    """The span, verbatim up to whitespace."""


class ItemJudgment(BaseModel):
    """One judge's verdict on one checklist item of one trajectory, after the grounding check."""

    item_id: str
    """Checklist item id, or `ENDPOINT` for the virtual endpoint item."""
    route: Route
    """The item's route; postprocessing treats `assertion` items specially."""
    verdict_raw: Verdict
    """The verdict as judged and grounded, before the official outcome is applied."""
    verdict: Verdict
    """The verdict after postprocessing (equal to `verdict_raw` until then)."""
    citations: list[Citation] = Field(default_factory=list)
    """Grounded citations; an ungrounded Yes/No has become Abstain."""
    rationale: str = ""
    """The judge's short reason, for auditors."""
    reason: str | None = None
    """Why a verdict is Abstain or was overwritten: `ungrounded`, `not_judged`, `official_pass`, …"""
