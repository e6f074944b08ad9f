"""Checklist synthesis end to end against the fake server, on the real `citation-check` task."""

from __future__ import annotations

import copy
import inspect
import json
import sqlite3
from pathlib import Path

import pytest
from fake_openai import FAKE_MODEL, FakeOpenAI, Reply, fault_malformed, request_text

from gcpc_core.checklist import Checklist, checklist_sha, item_cap, load_rules, run_gates
from gcpc_core.checklist.synthesis import (
    PROMPT_VERSION,
    EXTRA_ITEMS,
    ChecklistDraft,
    build_messages,
    draft_model,
    item_bound,
    reply_bound,
    synthesize_checklist,
    synthesize_project,
)
from gcpc_core.ingest.tasks import load_task
from gcpc_core.llm import LLMNotConfigured
from gcpc_core.models import Task
from gcpc_core.store import ChecklistRow, Store
from store.helpers import llm_calls

pytestmark = pytest.mark.skillsbench

TASK_ID = "citation-check"
T = "test_outputs.py::"
ON_TASK = f"Task id: {TASK_ID}"
ON_REPAIR_GATES = "failed these validation gates"
ON_REPAIR_REPLY = "could not be read as a checklist"

VALID = {
    "items": [
        {"id": "C1", "route": "assertion", "text": "The file /root/answer.json exists",
         "task_quote": "Write your findings to `/root/answer.json`",
         "verifier_refs": [T + "TestAnswerFileExists::test_answer_file_exists"], "probes": []},
        {"id": "C2", "route": "assertion", "text": "/root/answer.json parses as valid JSON",
         "task_quote": "Write your findings to `/root/answer.json` in the following format:",
         "verifier_refs": [T + "TestAnswerFileExists::test_answer_file_valid_json"], "probes": []},
        {"id": "C3", "route": "assertion", "text": "The top-level key 'fake_citations' of answer.json holds a list",
         "task_quote": "in the `fake_citations` array",
         "verifier_refs": [T + "TestAnswerFileExists::test_answer_has_required_key",
                           T + "TestAnswerFileExists::test_fake_citations_is_list"], "probes": []},
        {"id": "C4", "route": "assertion",
         "text": "fake_citations includes 'Advances in Artificial Intelligence for Natural Language Processing'",
         "task_quote": "identify which citations are fake or hallucinated",
         "verifier_refs": [T + "TestFakeCitationsDetected::test_smith2020ai_detected"],
         "probes": [{"pattern": "Advances in Artificial Intelligence", "polarity": "yes", "flags": "i"}]},
        {"id": "C5", "route": "assertion",
         "text": "fake_citations includes 'Neural Networks in Deep Learning: A Comprehensive Review'",
         "task_quote": "identify which citations are fake or hallucinated",
         "verifier_refs": [T + "TestFakeCitationsDetected::test_wilson2021neural_detected"], "probes": []},
        {"id": "C6", "route": "assertion",
         "text": "fake_citations includes 'Blockchain Applications in Supply Chain Management'",
         "task_quote": "identify which citations are fake or hallucinated",
         "verifier_refs": [T + "TestFakeCitationsDetected::test_patel2023blockchain_detected"], "probes": []},
        {"id": "C7", "route": "assertion", "text": "fake_citations holds exactly three titles",
         "task_quote": "identify which citations are fake or hallucinated",
         "verifier_refs": [T + "TestCitationCount::test_correct_fake_count"], "probes": []},
        {"id": "C8", "route": "generated", "text": "The titles in fake_citations are in alphabetical order",
         "task_quote": "Sort titles alphabetically for consistency", "verifier_refs": [], "probes": []},
    ],
    "waivers": [
        {"verifier_ref": T + "TestCitationCount::test_no_empty_titles",
         "reason": "adds no requirement of its own: C4-C6 name the exact titles expected"},
    ],
}
"""A hand-written reply that passes every gate for citation-check."""


def _bad_quote() -> dict:
    """VALID with a fabricated quote on C1 (fails G1)."""
    bad = copy.deepcopy(VALID)
    bad["items"][0]["task_quote"] = "Save the answer to /root/result.json"
    return bad


@pytest.fixture(scope="module")
def rules():
    return load_rules()


@pytest.fixture
def task(skillsbench: Path) -> Task:
    return load_task(skillsbench / "tasks" / TASK_ID)


@pytest.fixture
def project(store: Store, task: Task) -> Store:
    store.trials.upsert_task(task)
    return store


def run_project(project: Store, make_llm, rules, **kwargs):
    return synthesize_project(project, llm=make_llm(), rules=rules, progress=False, **kwargs)


# ---- no leakage ---------------------------------------------------------------------------------


def test_signature_admits_only_task_and_rules() -> None:
    assert list(inspect.signature(synthesize_checklist).parameters) == ["task", "llm", "rules"]
    leaky = {"trajectory", "trajectories", "trial", "outcome", "reward", "solution", "events", "ctrf"}
    assert not leaky & set(Task.model_fields)


def _trajectory_strings(trial_dir: Path) -> set[str]:
    """Long strings from a real agent log (and result.json) that are not task or verifier text."""
    found: set[str] = set()

    def walk(value) -> None:
        if isinstance(value, str):
            for line in value.splitlines():
                if len(line.strip()) >= 40:
                    found.add(line.strip())
        elif isinstance(value, dict):
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    for path in [*trial_dir.glob("agent/*"), trial_dir / "result.json"]:
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        try:
            walk(json.loads(text))
        except json.JSONDecodeError:
            for line in text.splitlines():
                try:
                    walk(json.loads(line))
                except json.JSONDecodeError:
                    walk(line)
    return found


def test_prompt_contains_no_trajectory_text(skillsbench: Path, task: Task, rules) -> None:
    trials = sorted((skillsbench / "trials").glob(f"{TASK_ID}__*"))
    assert trials, "no citation-check trials in the sample"
    prompt = "\n".join(m["content"] for m in build_messages(task, rules))
    task_text = task.instruction + "\n".join(task.verifier_files.values())
    flat_task = " ".join(task_text.split())
    checked = 0
    for trial in trials:
        for s in _trajectory_strings(trial):
            if s in task_text or " ".join(s.split()) in flat_task:
                continue  # the agent saw the instruction too: that text is the task's, not the run's
            checked += 1
            assert s not in prompt, f"trajectory text leaked into the prompt: {s[:80]!r}"
    assert checked > 50  # the check really looked at run text
    assert "verifier_result" not in prompt and "trial_name" not in prompt


def test_prompt_holds_rules_instruction_and_verifier(task: Task, rules) -> None:
    system, user = build_messages(task, rules)
    assert system["role"] == "system" and rules.prose["checklist_contract.md"].strip()[:200] in system["content"]
    assert "max_items: 15" in system["content"]  # gate settings as loaded
    assert task.instruction.strip() in user["content"]
    assert all(node in user["content"] for node in task.test_ids)
    assert task.verifier_files["test_outputs.py"].strip()[:300] in user["content"]
    # rules first and task-independent, so providers can cache the prefix
    assert build_messages(task.model_copy(update={"id": "other"}), rules)[0] == system


# ---- end to end ------------------------------------------------------------------------------------


def test_synthesis_freezes_a_checklist_that_passes_every_gate(
    fake_openai: FakeOpenAI, make_llm, project: Store, task: Task, rules
) -> None:
    fake_openai.on(ON_TASK, Reply.json(VALID))
    report = run_project(project, make_llm, rules)
    [result] = report.results
    assert result.status == "frozen", result.reason
    assert fake_openai.request_count == 1
    sent = fake_openai.requests[0]
    assert sent["response_format"]["json_schema"]["name"] == ChecklistDraft.__name__
    assert result.checklist.source == f"llm:{FAKE_MODEL}" and result.checklist.task == TASK_ID
    assert result.sha == checklist_sha(result.checklist)

    [row] = project.checklists.list(task=TASK_ID)
    assert row.status == "frozen" and row.sha == result.sha and row.version == 1
    assert row.rules_version == rules.version and row.model == FAKE_MODEL
    assert row.prompt_version == PROMPT_VERSION and row.run_id == report.run_id and row.created_at
    stored = Checklist.model_validate(row.checklist)
    assert checklist_sha(stored) == row.sha
    assert run_gates(stored, task, rules) == []

    [run] = project.runs.list(kind="synthesize")
    assert run.status == "done" and run.calls == 1 and run.prompt_tokens > 0
    assert run.rules_version == rules.version and run.prompt_version == PROMPT_VERSION
    assert "frozen 1, failed 0" in report.lines()[-1]

    # rerun: the task is frozen, so nothing is asked
    again = run_project(project, make_llm, rules)
    assert again.results == [] and TASK_ID in again.skipped
    # forced rerun: answered from the cache, no HTTP call, no new row
    forced = run_project(project, make_llm, rules, force=True)
    assert forced.results[0].status == "frozen" and forced.totals.cache_hits == 1
    assert fake_openai.request_count == 1
    assert len(project.checklists.list(task=TASK_ID)) == 1


def test_sync_synthesize_checklist_stores_nothing(fake_openai: FakeOpenAI, make_llm, task: Task, rules, store) -> None:
    fake_openai.on(ON_TASK, Reply.json(VALID))
    result = synthesize_checklist(task, llm=make_llm(), rules=rules)
    assert result.status == "frozen" and result.rules_version == rules.version
    assert store.checklists.list() == []


def test_gate_failure_gets_exactly_one_repair(fake_openai: FakeOpenAI, make_llm, project: Store, rules) -> None:
    fake_openai.on(ON_REPAIR_GATES, Reply.json(VALID))
    fake_openai.on(ON_TASK, Reply.json(_bad_quote()))
    [result] = run_project(project, make_llm, rules).results
    assert result.status == "frozen" and "after one repair" in result.reason
    assert fake_openai.request_count == 2
    repair = fake_openai.requests[1]
    assert repair["messages"][:2] == fake_openai.requests[0]["messages"]
    assert repair["messages"][2]["role"] == "assistant"
    assert json.loads(repair["messages"][2]["content"]) == _bad_quote()
    assert "C1 G1 task quote not found verbatim" in repair["messages"][3]["content"]
    assert [a.kind for a in result.attempts] == ["initial", "repair"]
    assert result.attempts[0].failures[0].gate == "G1" and not result.attempts[1].failures


def test_still_failing_after_repair_is_stored_as_failed(
    fake_openai: FakeOpenAI, make_llm, project: Store, rules
) -> None:
    fake_openai.on(ON_TASK, Reply.json(_bad_quote()))  # the repair gets the same bad answer
    report = run_project(project, make_llm, rules)
    [result] = report.results
    assert result.status == "failed" and not report.ok
    assert fake_openai.request_count == 2  # initial + exactly one repair
    assert [f.gate for f in result.failures] == ["G1"] and result.failures[0].item_id == "C1"
    [row] = project.checklists.list(task=TASK_ID, status=None)
    assert row.status == "failed" and row.gate_failures[0]["gate"] == "G1"
    assert row.checklist["items"][0]["task_quote"] == "Save the answer to /root/result.json"
    assert project.checklists.frozen_tasks() == set()
    assert project.checklists.latest(TASK_ID) is None
    # a rerun asks again (no frozen checklist) but both replies come from the cache: no HTTP, no new row
    rerun = run_project(project, make_llm, rules)
    assert rerun.results[0].status == "failed" and rerun.totals.cache_hits == 2
    assert fake_openai.request_count == 2
    assert len(project.checklists.list(task=TASK_ID, status=None)) == 1


def test_malformed_reply_is_reported_not_accepted(fake_openai: FakeOpenAI, make_llm, project: Store, rules) -> None:
    fake_openai.on(ON_TASK, fault_malformed('{"items": [{"id": "C1", '))
    [result] = run_project(project, make_llm, rules).results
    assert result.status == "failed" and "invalid_json" in result.reason
    assert fake_openai.request_count == 2
    assert ON_REPAIR_REPLY in request_text(fake_openai.requests[1])
    assert result.checklist is None and result.raw_reply == '{"items": [{"id": "C1", '
    assert result.failures[0].gate == "G6"
    [row] = project.checklists.list(task=TASK_ID, status=None)
    assert row.status == "failed" and row.checklist is None and row.raw_reply
    assert [c.status for c in llm_calls(project)] == ["invalid_json", "invalid_json"]


def test_malformed_then_repaired_reply_freezes(fake_openai: FakeOpenAI, make_llm, project: Store, rules) -> None:
    fake_openai.on(ON_REPAIR_REPLY, Reply.json(VALID))
    fake_openai.on(ON_TASK, Reply.json({"items": "not a list", "waivers": []}))
    [result] = run_project(project, make_llm, rules).results
    assert result.status == "frozen"
    assert result.attempts[0].reply_error == "schema"


def test_http_error_is_reported_and_not_stored(fake_openai: FakeOpenAI, make_llm, project: Store, rules) -> None:
    fake_openai.on(ON_TASK, Reply.error(404, "The model `fake-model` does not exist"))
    report = run_project(project, make_llm, rules)
    assert report.results[0].status == "error" and "model_not_found" in report.results[0].reason
    assert project.checklists.list(status=None) == []
    assert project.runs.list()[0].errors == 1


def test_unknown_task_and_missing_config(project: Store, rules, monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("GCPC_MODEL", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(LLMNotConfigured):
        synthesize_project(project, rules=rules, progress=False)
    monkeypatch.setenv("GCPC_MODEL", "m")
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    with pytest.raises(KeyError, match="nope"):
        synthesize_project(project, task="nope", rules=rules, progress=False)


def test_many_tasks_respect_concurrency(skillsbench: Path, make_llm, store: Store, rules) -> None:
    names = ["3d-scan-calc", "dialogue-parser", "azure-bgp-oscillation-route-leak", TASK_ID, "data-to-d3"]
    for name in names:
        store.trials.upsert_task(load_task(skillsbench / "tasks" / name))
    with FakeOpenAI(latency=0.05) as server:
        server.on(ON_TASK, Reply.json(VALID))
        server.default = fault_malformed()
        seen: list[str] = []
        report = synthesize_project(
            store, llm=make_llm(base_url=server.url, concurrency=2), rules=rules, progress=False,
            on_result=lambda r: seen.append(r.task),
        )
    assert sorted(seen) == sorted(names)
    assert server.max_in_flight <= 2
    statuses = {r.task: r.status for r in report.results}
    assert statuses.pop(TASK_ID) == "frozen" and set(statuses.values()) == {"failed"}
    assert server.request_count == 1 + 2 * (len(names) - 1)


# ---- frozen means frozen -------------------------------------------------------------------------------


def test_frozen_rows_are_immutable_and_edits_are_new_versions(
    fake_openai: FakeOpenAI, make_llm, project: Store, rules
) -> None:
    fake_openai.on(ON_TASK, Reply.json(VALID))
    [result] = run_project(project, make_llm, rules).results
    with pytest.raises(sqlite3.IntegrityError, match="frozen"):
        project.db["checklists"].update(result.sha, {"checklist": "{}"})
    edited = result.checklist.model_copy(update={"source": "human:auditor"})
    row = project.checklists.add(ChecklistRow(
        sha=checklist_sha(edited), task=TASK_ID, status="frozen", source=edited.source,
        checklist=edited.model_dump(mode="json"), rules_version=rules.version, created_by="auditor",
    ))
    assert row.version == 2 and row.sha != result.sha
    assert project.checklists.latest(TASK_ID).sha == row.sha
    assert project.checklists.get(result.sha).checklist == result.checklist.model_dump(mode="json")


# ---- context budget -----------------------------------------------------------------------------


def _padded(task: Task, chars: int) -> Task:
    """The task with its verifier file grown by `chars` characters of comments (an oversized task)."""
    name, source = next(iter(sorted(task.verifier_files.items())))
    return task.model_copy(update={"verifier_files": {**task.verifier_files,
                                                      name: source + "\n# padding line\n" * (chars // 16)}})


def _tokens(llm, messages) -> int:
    from gcpc_core.llm import count_prompt_tokens

    return llm.run_sync(lambda: count_prompt_tokens(llm, messages, ChecklistDraft))[0]


def test_oversized_verifier_is_cut_to_fit_and_says_so(fake_openai: FakeOpenAI, make_llm, store: Store,
                                                      task: Task, rules) -> None:
    big = _padded(task, 200_000)
    store.trials.upsert_task(big)
    fake_openai.on(ON_TASK, Reply.json(VALID))
    reserve = 1000
    window = _tokens(make_llm(), build_messages(big, rules, source_chars=5_000)) + reserve + 10
    report = synthesize_project(store, llm=make_llm(context_window=window, max_completion_tokens=reserve),
                                rules=rules, progress=False)
    [result] = report.results
    assert result.status == "frozen"
    assert "verifier sources cut to 5,000 chars each" in result.reason and f"{window:,}-token window" in result.reason
    sent = request_text(fake_openai.requests[-1])
    assert "more characters cut]" in sent and "padding line" in sent
    assert store.checklists.latest(TASK_ID).reason == result.reason  # recorded with the checklist


def test_a_task_that_fits_in_no_form_is_stored_as_context_overflow(fake_openai: FakeOpenAI, make_llm,
                                                                    store: Store, task: Task, rules) -> None:
    huge = task.model_copy(update={"instruction": task.instruction + "\nmore words " * 20_000})
    store.trials.upsert_task(huge)
    report = synthesize_project(store, llm=make_llm(context_window=4096), rules=rules, progress=False)
    [result] = report.results
    assert result.status == "failed" and result.reason.startswith("context_overflow: context budget: 4,096-token")
    assert "even with the verifier sources left out" in result.reason
    assert fake_openai.requests == []  # nothing sent that could not fit
    rows = store.checklists.list(task=TASK_ID)
    assert [r.status for r in rows] == ["failed"] and rows[0].reason == result.reason


def test_server_overflow_is_a_stored_failure_not_a_retry(fake_openai: FakeOpenAI, make_llm, project: Store,
                                                         rules) -> None:
    """Without a window to count against, the server's own "too long" is recorded, not retried."""
    from fake_openai import overflow_error

    fake_openai.on(ON_TASK, overflow_error())
    report = run_project(project, make_llm, rules)
    [result] = report.results
    assert result.status == "failed" and result.reason.startswith("context_overflow:")
    assert "maximum context length is 2048 tokens" in result.reason
    assert fake_openai.request_count == 1
    assert project.checklists.latest(TASK_ID) is None and project.checklists.list(task=TASK_ID)[0].status == "failed"


def test_a_timed_out_synthesis_is_a_stored_failure(fake_openai: FakeOpenAI, make_llm, project: Store, rules) -> None:
    """A request that runs out of its time bound would do so again: stored as failed with the reason,
    so the run ends with every task accounted for."""
    from fake_openai import fault_timeout

    fake_openai.on(ON_TASK, fault_timeout(1.0))
    report = synthesize_project(project, llm=make_llm(timeout=0.2, max_retries=0), rules=rules, progress=False)
    [result] = report.results
    assert result.status == "failed" and result.reason.startswith("timeout:") and "GCPC_LLM_TIMEOUT" in result.reason
    assert fake_openai.request_count == 1
    assert project.checklists.list(task=TASK_ID)[0].status == "failed"


def test_a_timed_out_repair_keeps_the_first_draft(fake_openai: FakeOpenAI, make_llm, project: Store, rules) -> None:
    from fake_openai import fault_timeout

    fake_openai.on(ON_REPAIR_GATES, fault_timeout(1.0))
    fake_openai.on(ON_TASK, Reply.json(_bad_quote()))
    [result] = synthesize_project(project, llm=make_llm(timeout=0.2, max_retries=0), rules=rules,
                                  progress=False).results
    assert result.status == "failed" and result.checklist is not None  # the draft, with its gate failures
    assert "G1" in result.reason and "repair failed" in result.reason and "timed out" in result.reason
    assert [f.gate for f in result.failures] == ["G1"]


def test_repair_of_a_cut_reply_gets_a_larger_bound(fake_openai: FakeOpenAI, make_llm, project: Store, rules) -> None:
    fake_openai.on(ON_REPAIR_REPLY, Reply.json(VALID))
    fake_openai.on(ON_TASK, Reply(content='{"items": [{"id": "C1", ', finish_reason="length"))
    [result] = synthesize_project(project, llm=make_llm(max_completion_tokens=4000), rules=rules, progress=False).results
    assert result.status == "frozen" and result.attempts[0].reply_error == "truncated"
    assert [r["max_completion_tokens"] for r in fake_openai.requests] == [4000, 8000]  # not cut again at 4000


def test_grammar_bounds_are_no_looser_than_the_gates(task: Task, rules) -> None:
    """A bound looser than a gate lets a small model write what the gates reject anyway, at seconds a token."""
    contract = rules.contract
    bounds = ChecklistDraft.decoding_bounds
    assert bounds["items"] == contract.budget.max_items_ceiling and "text" not in bounds
    assert draft_model(task, rules).decoding_bounds["text"] == contract.item.max_raw_chars  # G3's raw cap
    assert item_bound(task, rules) == min(item_cap(task, rules), len(task.tests) + EXTRA_ITEMS)
    few = task.model_copy(update={"tests": task.tests[:1]})
    many = task.model_copy(update={"tests": task.tests * 10})
    assert item_bound(few, rules) == contract.budget.min_items and item_bound(many, rules) == item_cap(many, rules)
    assert item_cap(many, rules) == min(contract.budget.max_items_ceiling, 10 * len(task.tests) + 2)
    assert draft_model(few, rules).decoding_bounds["verifier_refs"] == 1
    assert draft_model(few, rules).decoding_bounds["verifier_ref"] == len(few.tests[0].node_id) + 40
    # only the grammar differs: the schema a reply is validated against, and so the cache key, are ChecklistDraft's
    model = draft_model(task, rules)
    assert model is draft_model(task, rules) and model.model_json_schema() == ChecklistDraft.model_json_schema()
    assert model.decoding_schema()["properties"]["items"]["maxItems"] == item_bound(task, rules)
    assert model.model_validate(VALID).model_dump() == ChecklistDraft.model_validate(VALID).model_dump()


def test_a_bounded_layer_gives_synthesis_room_for_a_whole_checklist(fake_openai: FakeOpenAI, make_llm,
                                                                    project: Store, task: Task, rules) -> None:
    """A local server's bound is set for judge replies; cut there, a checklist never closes (`truncated`)."""
    fake_openai.on(ON_TASK, Reply.json(VALID))
    llm = make_llm(max_completion_tokens=256, structured_mode="json_object")
    [result] = synthesize_project(project, llm=llm, rules=rules, progress=False).results
    assert result.status == "frozen", result.reason
    [sent] = fake_openai.requests
    bound = reply_bound(llm, task, rules)
    assert bound > 256 and sent["max_tokens"] == sent["max_completion_tokens"] == bound
    assert sent["response_format"]["schema"]["properties"]["items"]["maxItems"] == item_bound(task, rules)
    assert reply_bound(make_llm(max_completion_tokens=8000), task, rules) == 8000  # never below the configured one


def test_an_unbounded_layer_stays_unbounded(fake_openai: FakeOpenAI, make_llm, project: Store, rules) -> None:
    """A real server without a configured bound gets none, and `parse` mode gets the plain schema."""
    fake_openai.on(ON_TASK, Reply.json(VALID))
    [result] = run_project(project, make_llm, rules).results
    assert result.status == "frozen"
    [sent] = fake_openai.requests
    assert "max_completion_tokens" not in sent and "max_tokens" not in sent
    assert "maxItems" not in json.dumps(sent["response_format"])


def test_a_synthesis_bound_above_the_window_is_lowered_to_fit(fake_openai: FakeOpenAI, make_llm, project: Store,
                                                              task: Task, rules) -> None:
    fake_openai.on(ON_TASK, Reply.json(VALID))
    prompt = _tokens(make_llm(), build_messages(task, rules))
    window = prompt + 300
    llm = make_llm(max_completion_tokens=200, context_window=window, structured_mode="json_object")
    [result] = synthesize_project(project, llm=llm, rules=rules, progress=False).results
    assert result.status == "frozen", result.reason
    [sent] = fake_openai.requests
    assert 200 <= sent["max_tokens"] <= 300 < reply_bound(llm, task, rules)
