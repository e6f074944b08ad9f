"""Checklist synthesis: one structured LLM call per task, gated, repaired at most once, then
frozen — or stored as failed with its reasons. A bad item is never silently accepted.

Leak-proof by construction: `synthesize_checklist` takes a `Task` (instruction and verifier
sources are all a Task holds) and the rules. It has no parameter through which a trajectory,
an official outcome or a `solution/` folder could arrive, and it gets no project DB (which
holds trajectories); `synthesize_project` reads only tasks from the DB and stores the results.

Prompts are module constants versioned by `PROMPT_VERSION`; the rules text is part of the
prompt, so a rules change also changes every request (and so misses the response cache).
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import ClassVar, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field

from ..decoding import DecodingBounds
from ..llm import (
    REASON_CONTEXT_OVERFLOW,
    UNREPAIRABLE_CALL_ERRORS,
    LLM,
    LLMCallError,
    LLMReplyError,
    RunTotals,
    count_prompt_tokens,
    fit_prompt,
    repair_room,
)
from ..runs import Progress, RunKind, StageRun, run_stage
from ..models import Task, VerifierTest
from ..store import ChecklistRow, Store, utcnow
from .freeze import checklist_sha, freeze
from .gates import GateFailure, failure_lines, item_cap, length_rule, run_gates, verifier_checks
from .rules import Rules, load_rules
from .schema import Checklist, ChecklistItem, Waiver

__all__ = [
    "CONTRACT_PROSE_FILE",
    "EXTRA_ITEMS",
    "PROMPT_VERSION",
    "REPAIR_GATES_PROMPT",
    "REPAIR_REPLY_PROMPT",
    "SYSTEM_PROMPT",
    "TASK_PROMPT",
    "Attempt",
    "ChecklistDraft",
    "ProjectSynthesis",
    "SynthesisResult",
    "budget_candidates",
    "build_messages",
    "draft_model",
    "item_bound",
    "record_synthesis",
    "reply_bound",
    "synthesize_checklist",
    "synthesize_checklist_async",
    "synthesize_project",
]

PROMPT_VERSION = "synthesis-v4"
"""Bump whenever a prompt constant below changes meaning: it is part of every cache key. v3: the item
cap grows with the verifier (`gates.item_cap`, stated in the task prompt), test nodes list their
parametrized case ids, and the contract states one length rule for literals. v4: the system prompt
states that length rule with its numbers (`gates.length_rule`: prose bounds and a raw cap, the
grammar's `maxLength` on `text`), and the contract prose no longer repeats them; a verifier with no
pytest test node lists its script as one node (`tests/<file>`, `SCRIPT_NODE_NOTE`) for assertion
items to cite."""

CONTRACT_PROSE_FILE = "checklist_contract.md"
"""The rules prose the synthesis prompt embeds (the gate settings are embedded as loaded)."""

MAX_SOURCE_CHARS = 100_000
"""A verifier file longer than this is cut in the prompt (the longest real one is ~50k)."""

CREATED_BY = "gcpc synthesize"

SYSTEM_PROMPT = """\
You write grading checklists for agent benchmark tasks (GCPC: Grounded Checklist Partial Credit).

A checklist lists, for one task, the atomic and observable requirements a run of the task must \
meet, so that a rater can answer Yes or No to each item from the run's evidence (tool calls, tool \
outputs and file contents). You see only the task's instruction and its official verifier. Base \
every item on them; do not imagine what a solution or a particular run looks like.

Deterministic gates check every item you write, and a checklist that fails any gate is rejected:
- task_quote is an exact span of instruction.md: copy it character for character, markdown \
markup (`**`, backticks) included; only whitespace may differ;
- verifier_refs are test node ids from the list given, written exactly as listed;
- every verifier test node is covered by the verifier_refs of an assertion item, or waived with \
a written reason;
- each item states one specific requirement, says nothing about tests passing, rewards or the \
task being complete, and nothing about a particular run; its length and the item count stay \
within the bounds below;
- each item's text has {length_rule}.

Reply with one JSON object {{"items": [...], "waivers": [...]}}. Each item has id (C1, C2, ...), \
route (assertion, generated or judge), text, task_quote, verifier_refs (a list; may be empty for \
generated and judge items) and probes (an empty list unless a regular expression over tool \
outputs or written file contents reliably decides the item). Each waiver has verifier_ref and reason.

# Checklist contract ({contract_file})

{contract}

# Gate settings (checklist_contract.yaml, as loaded)

{settings}"""

TASK_PROMPT = """\
Task id: {task_id}

## instruction.md
Task quotes must be exact spans of the text between the tags.
<instruction>
{instruction}
</instruction>

## Verifier test nodes
Use these ids, exactly as written, as verifier refs. Cover each with an assertion item or waive it.
{test_nodes}

## Item budget
{min_items} to {max_items} items for this task ({checks} verifier checks: test nodes, each case of a \
parametrized test counted).

## Verifier source
{sources}

Write the checklist for task {task_id}."""

NO_TEST_NODES = (
    "(none: this verifier has no pytest test nodes and no script, so write generated and judge items only "
    "and no assertion items)"
)
SCRIPT_NODE_NOTE = (
    "the verifier script as a whole, not a pytest test: it passes when the script succeeds; it makes "
    "{checks} checks. Cite it from each assertion item that states something the script checks"
)

REPAIR_GATES_PROMPT = """\
Your checklist failed these validation gates (one per line: item id, gate, message):
{failures}

Reply with the complete corrected checklist as one JSON object: all items and waivers, not only \
the changed ones. Fix every failure above; keep the items that passed as they are unless a fix \
needs them changed."""

REPAIR_REPLY_PROMPT = """\
Your reply could not be read as a checklist ({reason}): {message}

Reply again with one JSON object of the form {{"items": [...], "waivers": [...]}} that follows the \
schema exactly."""

MAX_REPAIR_ECHO = 20_000
"""An unreadable reply is echoed back to the model at most this long in the repair round."""


class ChecklistDraft(DecodingBounds, BaseModel):
    """What the model writes: items and waivers. Task id and source are filled in by code,
    so a model can neither relabel a checklist nor claim to be human. Its grammar bounds (for a
    server that constrains decoding to the schema) are no looser than the gates allow — no more items
    than the contract's `max_items_ceiling` (G6) — and end a quote or a reason at a few sentences; a
    request narrows them further to its task and rules (`draft_model`), and bounds `text` by G3's raw cap
    (`max_raw_chars`), the one length bound a grammar can state. The gates still judge whatever is
    written, bounded or not."""

    model_config = ConfigDict(extra="forbid")
    decoding_bounds: ClassVar[Mapping[str, int]] = {
        "items": 60, "waivers": 60, "verifier_refs": 8, "probes": 1,
        "id": 16, "task_quote": 200, "pattern": 120, "flags": 4, "verifier_ref": 200, "reason": 160,
    }

    items: list[ChecklistItem]
    waivers: list[Waiver]


EXTRA_ITEMS = 2
"""Items a task's grammar allows beyond one per verifier test node: the generated and judge items
the instruction asks for beside what the tests check."""
ITEM_TOKENS = 110
"""Reply tokens a typical item takes: keys and route (~30), a one-line text and a sentence of quote
(~25 each), a ref or two (~30); the hand-written items of the test suite's checklists take 60–100.
Not the grammar's worst case (a 200-character quote of digits alone is 200 Gemma tokens): a reply
that runs to its bounds is still cut, and repaired once with twice the bound."""
WAIVER_TOKENS = 50
REPLY_FRAME_TOKENS = 20


def item_bound(task: Task, rules: Rules) -> int:
    """How many items a task's grammar allows: one per verifier check (`gates.verifier_checks`) plus
    `EXTRA_ITEMS`, within the task's budget (`gates.item_cap`). A small model under a grammar keeps
    adding items until a bound stops it, and each costs seconds on a CPU; a task with more checks
    gets more room."""
    budget = rules.contract.budget
    return max(budget.min_items, min(item_cap(task, rules), verifier_checks(task) + EXTRA_ITEMS))


PARAM_SUFFIX_CHARS = 40
"""Room a verifier ref gets beyond the task's longest test node id: a `[param]` suffix."""


@functools.cache
def _bounded_draft(items: int, refs: int, ref_chars: int, text_chars: int) -> type[ChecklistDraft]:
    bounds = {**ChecklistDraft.decoding_bounds, "items": items, "waivers": refs, "verifier_refs": refs,
              "verifier_ref": ref_chars, "text": text_chars}
    # the same name and JSON schema: cache keys and validation are those of ChecklistDraft
    return type("ChecklistDraft", (ChecklistDraft,), {"decoding_bounds": bounds, "__doc__": ChecklistDraft.__doc__})


def draft_model(task: Task, rules: Rules) -> type[ChecklistDraft]:
    """`ChecklistDraft` with grammar bounds for this task: `item_bound` items, no more waivers or
    refs per item than the task has test nodes (at least one, so a list can hold one stray ref), and
    no ref longer than its longest node id with a `[param]` suffix (seen: Gemma 3 270M filling every
    ref of a waiver list with 200 characters of the instruction). Only the decoding schema differs; a
    reply validates exactly as a `ChecklistDraft`. An item's `text` is bounded by G3's raw cap
    (`max_raw_chars`, see `gates.length_rule`): the gate rejects what the grammar cannot emit."""
    bounds = ChecklistDraft.decoding_bounds
    refs = max(1, min(bounds["verifier_refs"], len(task.tests)))
    longest = max((_longest_ref(test) for test in task.tests), default=0)
    return _bounded_draft(item_bound(task, rules), refs, min(bounds["verifier_ref"], longest),
                          rules.contract.item.max_raw_chars)


def _longest_ref(test: VerifierTest) -> int:
    """The longest ref to `test`: with its longest known case id, else with a `[param]` suffix."""
    if test.param_ids:
        return len(test.node_id) + 2 + max(len(i) for i in test.param_ids)
    return len(test.node_id) + PARAM_SUFFIX_CHARS


def reply_bound(llm: LLM, task: Task, rules: Rules) -> int | None:
    """The initial synthesis call's reply bound. An unbounded layer (a real server, no
    `max_completion_tokens`) stays unbounded. A bounded one — a slow local server, whose bound is set
    for judge replies — gets at least what a checklist of `item_bound` items and one waiver takes:
    cut at the judges' bound, a checklist never closes and every synthesis is `truncated`."""
    configured = llm.config.max_completion_tokens
    if configured is None:
        return None
    needed = REPLY_FRAME_TOKENS + item_bound(task, rules) * ITEM_TOKENS + WAIVER_TOKENS
    return max(configured, needed)


class Attempt(BaseModel):
    """One call of a synthesis: the initial one or the repair."""

    kind: Literal["initial", "repair"]
    cache_hit: bool = False
    llm_key: str | None = None
    sha: str | None = None
    """sha of the checklist this attempt produced (None when its reply was unusable)."""
    reply_error: str | None = None
    """Reason code when the reply was not a valid checklist (invalid_json, schema, refusal, …)."""
    failures: list[GateFailure] = Field(default_factory=list)


class SynthesisResult(BaseModel):
    """Outcome for one task, with provenance; `status`:

    - `frozen`: passed every gate (after at most one repair); `sha` identifies it;
    - `failed`: still failing after the repair; `failures` say why (never silently accepted) — or
      the request did not fit the context window or ran out of its time bound (`reason` says which);
    - `error`: the endpoint could not be reached (HTTP error after retries): nothing to judge
      yet, nothing stored as a checklist; a rerun tries again.
    """

    task: str
    status: Literal["frozen", "failed", "error"]
    checklist: Checklist | None = None
    """The frozen checklist, or the last one the model produced when it failed."""
    sha: str | None = None
    failures: list[GateFailure] = Field(default_factory=list)
    reason: str = ""
    """One line for the CLI and the app."""
    raw_reply: str | None = None
    """The last unusable reply's text, kept for the audit trail."""
    attempts: list[Attempt] = Field(default_factory=list)
    model: str
    prompt_version: str = PROMPT_VERSION
    rules_version: str
    created_at: str = Field(default_factory=utcnow)


# ---- prompts -----------------------------------------------------------------------------


def _system_prompt(rules: Rules) -> str:
    # the grammar's word lists (9 KB) tell an author nothing the contract's prose does not say, and would push a
    # small task's prompt past a local server's context window
    settings = yaml.safe_dump(rules.contract.model_dump(mode="json", exclude={"grammar"}), sort_keys=False,
                              allow_unicode=True)
    return SYSTEM_PROMPT.format(
        length_rule=length_rule(rules),
        contract_file=CONTRACT_PROSE_FILE,
        contract=rules.prose.get(CONTRACT_PROSE_FILE, "").strip(),
        settings=settings.strip(),
    )


def _test_node_lines(task: Task) -> str:
    lines = []
    for test in task.tests:
        line = f"- {test.node_id}"
        if test.kind == "script":
            line += f" ({SCRIPT_NODE_NOTE.format(checks=test.checks)})"
        elif test.param_ids:
            ids = ", ".join(f"[{i}]" for i in test.param_ids)
            line += f" (parametrized, {len(test.param_ids)} cases: {ids}; a ref may add one of these suffixes or none)"
        elif test.parametrized:
            line += " (parametrized: a ref may add a [param] suffix)"
        if test.docstring:
            line += f": {' '.join(test.docstring.split())}"
        lines.append(line)
    lines.extend(f"- could not be parsed: {err}" for err in task.parse_errors)
    return "\n".join(lines) or NO_TEST_NODES


def _source_block(name: str, text: str, language: str, limit: int = MAX_SOURCE_CHARS) -> str:
    if len(text) > limit:
        text = text[:limit] + f"\n# [... {len(text) - limit} more characters cut]"
    return f"### tests/{name}\n```{language}\n{text.rstrip()}\n```"


def build_messages(task: Task, rules: Rules, *, source_chars: int | None = MAX_SOURCE_CHARS) -> list[dict[str, str]]:
    """The synthesis request: rules first (identical for every task, so providers can cache the
    prefix), then this task's instruction, verifier test nodes and verifier source — each file cut
    (with a marker) at `source_chars`, or left out with a note when None (the context budget)."""
    blocks = [_source_block(name, src, "python", source_chars) for name, src in sorted(task.verifier_files.items())
              if source_chars is not None]
    if task.test_script and source_chars is not None:
        blocks.append(_source_block("test.sh", task.test_script, "sh", source_chars))
    sources = "\n\n".join(blocks) or "(no verifier source)"
    if source_chars is None and (task.verifier_files or task.test_script):
        sources = SOURCES_LEFT_OUT
    user = TASK_PROMPT.format(
        task_id=task.id,
        instruction=task.instruction.rstrip(),
        test_nodes=_test_node_lines(task),
        min_items=rules.contract.budget.min_items,
        max_items=item_cap(task, rules),
        checks=verifier_checks(task),
        sources=sources,
    )
    return [{"role": "system", "content": _system_prompt(rules)}, {"role": "user", "content": user}]


SOURCE_WINDOW_STEPS = (20_000, 5_000, 1_500)
"""Characters each verifier file is cut to, step by step, when the request does not fit the model's
context window; last, the sources are left out (the test node ids and docstrings stay)."""
SOURCES_LEFT_OUT = ("(verifier source left out to fit the model's context window: use the test node ids and "
                    "docstrings above)")


def budget_candidates(task: Task, rules: Rules) -> list[tuple[list[dict[str, str]], str]]:
    """The synthesis request, fullest first, then ever shorter forms, each with what it leaves out
    (for `llm.budget.fit_prompt`). The instruction is never cut: task quotes must come from it."""
    out = [(build_messages(task, rules), "")]
    longest = max([len(src) for src in task.verifier_files.values()] + [len(task.test_script or "")])
    out += [(build_messages(task, rules, source_chars=step), f"verifier sources cut to {step:,} chars each")
            for step in SOURCE_WINDOW_STEPS if step < min(longest, MAX_SOURCE_CHARS)]
    if longest:
        out.append((build_messages(task, rules, source_chars=None), "the verifier sources left out"))
    return out


# ---- one task ---------------------------------------------------------------------------------


@dataclass
class _Outcome:
    """What one call produced: a gated checklist, or the reply error that prevented one."""

    attempt: Attempt
    checklist: Checklist | None = None
    reply_text: str = ""
    error: LLMReplyError | None = None


async def _attempt(
    kind: Literal["initial", "repair"],
    messages: list[dict[str, str]],
    task: Task,
    llm: LLM,
    rules: Rules,
    max_completion_tokens: int | None = None,
) -> _Outcome:
    try:
        result = await llm.complete(messages, draft_model(task, rules), prompt_version=PROMPT_VERSION, tag=task.id,
                                    max_completion_tokens=max_completion_tokens)
    except LLMReplyError as error:
        failure = GateFailure(item_id="-", gate="G6", message=f"reply is not a valid checklist ({error.reason}): {error}")
        return _Outcome(Attempt(kind=kind, reply_error=error.reason, failures=[failure]), error=error)
    draft = result.parsed
    checklist = Checklist(task=task.id, source=f"llm:{llm.model}", items=draft.items, waivers=draft.waivers)
    failures = run_gates(checklist, task, rules)
    attempt = Attempt(
        kind=kind, cache_hit=result.cache_hit, llm_key=result.key, sha=checklist_sha(checklist), failures=failures
    )
    return _Outcome(attempt, checklist=checklist, reply_text=result.text)


async def _within_window(llm: LLM, messages: list[dict[str, str]], bound: int | None) -> int | None:
    """`bound`, lowered to what the context window leaves after `messages` when it exceeds the
    configured bound (which the prompt budget already reserved); never below the configured bound."""
    configured = llm.config.max_completion_tokens
    if bound is None or configured is None or bound <= configured or not llm.context_window:
        return bound
    prompt, _ = await count_prompt_tokens(llm, messages, ChecklistDraft)
    return max(configured, min(bound, llm.context_window - prompt))


def _repair_messages(messages: list[dict[str, str]], first: _Outcome) -> list[dict[str, str]]:
    """The conversation so far plus one repair turn naming exactly what was wrong."""
    if first.error is not None:
        echo = first.error.raw[:MAX_REPAIR_ECHO]
        ask = REPAIR_REPLY_PROMPT.format(reason=first.error.reason, message=" ".join(str(first.error).split())[:2000])
    else:
        echo = first.reply_text
        ask = REPAIR_GATES_PROMPT.format(failures="\n".join(failure_lines(first.attempt.failures)))
    return [*messages, {"role": "assistant", "content": echo}, {"role": "user", "content": ask}]


async def synthesize_checklist_async(task: Task, *, llm: LLM, rules: Rules) -> SynthesisResult:
    """Synthesize, gate and (if it passes) freeze one task's checklist; stores nothing.

    At most two LLM calls: the initial one and, when the reply fails a gate or cannot be read,
    exactly one repair that sends the gate messages (or the read error) back.
    """
    provenance = {"task": task.id, "model": llm.model, "rules_version": rules.version}
    fit = await fit_prompt(llm, budget_candidates(task, rules), ChecklistDraft)
    if fit.messages is None:
        return SynthesisResult(status="failed", reason=f"{REASON_CONTEXT_OVERFLOW}: {fit.overflow}", **provenance)
    messages = fit.messages
    budget = f" ({fit.note})" if fit.note else ""
    outcomes: list[_Outcome] = []
    try:
        bound = await _within_window(llm, messages, reply_bound(llm, task, rules))
        outcomes.append(await _attempt("initial", messages, task, llm, rules, bound))
        if outcomes[0].attempt.failures:
            repair = _repair_messages(messages, outcomes[0])
            error = outcomes[0].error
            room = await repair_room(llm, repair, ChecklistDraft, error, had=bound) if error is not None else None
            if room is not None and room.full:
                budget += f" ({room.full})"
            else:
                repair_bound = room.max_completion_tokens if room is not None else None
                outcomes.append(await _attempt("repair", repair, task, llm, rules,
                                               repair_bound or await _within_window(llm, repair, bound)))
    except LLMCallError as error:
        if error.reason not in UNREPAIRABLE_CALL_ERRORS:
            return SynthesisResult(
                status="error",
                reason=f"LLM call failed ({error.reason}): {error}",
                attempts=[o.attempt for o in outcomes],
                **provenance,
            )
        # too long to send, or too slow to answer within the time bound: asking again would fail the
        # same way, so this is stored as failed, not retried as an endpoint fault
        if not outcomes:
            return SynthesisResult(status="failed", reason=f"{error.reason}: {error}{budget}", **provenance)
        budget += f" (repair {'not sent' if error.reason == REASON_CONTEXT_OVERFLOW else 'failed'}: {error})"
    attempts = [o.attempt for o in outcomes]
    last = outcomes[-1]
    if last.checklist is not None and not last.attempt.failures:
        frozen = freeze(last.checklist, rules_version=rules.version)
        repaired = " after one repair" if len(outcomes) > 1 else ""
        return SynthesisResult(
            status="frozen",
            checklist=frozen.checklist,
            sha=frozen.sha,
            reason=f"passed every gate{repaired}{budget}",
            attempts=attempts,
            **provenance,
        )
    # Still failing: keep the last checklist the model did produce (with its own failures), and
    # say why the final attempt was rejected.
    best = next((o for o in reversed(outcomes) if o.checklist is not None), None)
    failures = list(best.attempt.failures) if best else []
    if last.error is not None:
        failures += last.attempt.failures
    gates = sorted({f.gate for f in failures})
    after = " after repair" if len(outcomes) > 1 else ""
    reason = (
        f"unusable reply{after} ({last.error.reason})"
        if last.error is not None
        else f"{len(failures)} gate failure(s){after} ({', '.join(gates)})"
    ) + budget
    return SynthesisResult(
        status="failed",
        checklist=best.checklist if best else None,
        sha=best.attempt.sha if best else None,
        failures=failures,
        reason=reason,
        raw_reply=last.error.raw if last.error is not None else None,
        attempts=attempts,
        **provenance,
    )


def synthesize_checklist(task: Task, *, llm: LLM, rules: Rules) -> SynthesisResult:
    """Sync form of `synthesize_checklist_async` (runs its own event loop)."""
    return llm.run_sync(lambda: synthesize_checklist_async(task, llm=llm, rules=rules))


# ---- a project ----------------------------------------------------------------------------------


def record_synthesis(store: Store, result: SynthesisResult, *, run_id: str | None = None) -> ChecklistRow | None:
    """Store a frozen or failed result as the task's next checklist version; returns the row.

    `error` results are not stored as checklists (their calls are in `llm_calls`). A failed
    result without any checklist is keyed by the sha256 of its raw reply.
    """
    if result.status == "error":
        return None
    sha = result.sha or hashlib.sha256((result.raw_reply or result.reason).encode("utf-8")).hexdigest()
    return store.checklists.add(ChecklistRow(
        sha=sha,
        task=result.task,
        status=result.status,
        source=result.checklist.source if result.checklist else f"llm:{result.model}",
        checklist=result.checklist.model_dump(mode="json") if result.checklist else None,
        gate_failures=[f.model_dump() for f in result.failures],
        reason=result.reason,
        raw_reply=result.raw_reply,
        attempts=[a.model_dump() for a in result.attempts],
        rules_version=result.rules_version,
        model=result.model,
        prompt_version=result.prompt_version,
        run_id=run_id,
        created_by=CREATED_BY,
    ))


@dataclass
class ProjectSynthesis:
    """What `synthesize_project` did: per-task results, skipped tasks and the run's totals."""

    results: list[SynthesisResult]
    skipped: dict[str, str] = field(default_factory=dict)
    """task id → why it was not synthesized (e.g. already frozen)."""
    run_id: str | None = None
    totals: RunTotals = field(default_factory=RunTotals)

    def count(self, status: str) -> int:
        return sum(r.status == status for r in self.results)

    def counts(self) -> dict[str, int]:
        """What the run ledger records this run counted."""
        return {**{s: self.count(s) for s in ("frozen", "failed", "error")}, "skipped": len(self.skipped)}

    @property
    def ok(self) -> bool:
        """True when every synthesized task was frozen."""
        return all(r.status == "frozen" for r in self.results)

    def lines(self) -> list[str]:
        """Human-readable report: one line per task, then a summary line."""
        out = [
            f"{r.task} {r.status} {r.sha[:12] if r.sha and r.status == 'frozen' else '-'} {r.reason}"
            for r in self.results
        ]
        out += [f"{task} skipped - {why}" for task, why in sorted(self.skipped.items())]
        out.append(
            f"frozen {self.count('frozen')}, failed {self.count('failed')}, error {self.count('error')}, "
            f"skipped {len(self.skipped)}; {self.totals.summary(http=False)}"
            + (f", run {self.run_id}" if self.run_id else "")
        )
        return out


def synthesize_project(
    store: Store,
    *,
    task: str | None = None,
    model: str | None = None,
    concurrency: int | None = None,
    force: bool = False,
    rules: Rules | None = None,
    llm: LLM | None = None,
    progress: Progress = True,
    on_result: Callable[[SynthesisResult], None] | None = None,
) -> ProjectSynthesis:
    """Synthesize checklists for every task lacking a frozen one (or just `task`).

    Restartable: each result is stored as soon as it is ready, tasks already frozen are skipped
    (unless `force`), and a rerun answers identical requests from the response cache. Raises
    LLMNotConfigured before any work when no model or endpoint is configured, and KeyError for
    an unknown `task`.
    """
    rules = rules or load_rules()
    if llm is None:
        llm = LLM.from_env(model, store=store, concurrency=concurrency)
    if task is not None:
        found = store.trials.get_task(task)
        if found is None:
            raise KeyError(f"unknown task {task!r}: import it first")
        candidates = [found]
    else:
        candidates = store.trials.tasks()
    frozen = set() if force else store.checklists.frozen_tasks()
    todo = [t for t in candidates if t.id not in frozen]
    report = ProjectSynthesis(
        results=[], skipped={t.id: "already has a frozen checklist" for t in candidates if t.id in frozen}
    )
    if not todo:
        return report
    params = {"task": task, "force": force, "concurrency": llm.config.concurrency, "tasks": len(todo)}

    async def one(t: Task, run: StageRun[SynthesisResult]) -> SynthesisResult:
        result = await synthesize_checklist_async(t, llm=llm, rules=rules)
        record_synthesis(store, result, run_id=run.run_id)
        report.results.append(result)  # as they finish, so an interrupted run still counts them
        if on_result is not None:
            on_result(result)
        return result

    run = run_stage(store, RunKind("synthesize"), todo, one, llm=llm, prompt_version=PROMPT_VERSION,
                    rules_version=rules.version, params=params, counts=lambda _: report.counts(), progress=progress,
                    unit="task", note=lambda result: f"{result.task} {result.status}")
    report.run_id, report.totals, report.results = run.run_id, run.totals, run.results
    return report
