"""The pipeline on what a real (tiny) model actually says: synthesis, the gcpc and holistic judges and
one evidence perturbation against llama-cpp-python's server with Gemma 3 270M, negotiated from
`auto`. A 270M model is far below a real judge: these tests assert that GCPC *behaves* — mode
negotiated and recorded, tokens taken from the server, every item stored with a verdict or an Abstain
reason, grounding applied to the citations the model really wrote — never what the verdicts are."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Mapping
from typing import ClassVar

import pytest
from pydantic import BaseModel

from gcpc_core.checklist import load_rules
from gcpc_core.checklist.synthesis import ChecklistDraft, synthesize_project
from gcpc_core.decoding import DecodingBounds
from gcpc_core.evidence import build_evidence_view
from gcpc_core.judge import judge_project
from gcpc_core.judge.registry import get_judge
from gcpc_core.judge.replies import HolisticReply, ItemJudgeReply, SingleItemReply
from gcpc_core.judge.results import TrajectoryJudgment
from gcpc_core.judge.units import store_judgment
from gcpc_core.llm import LLMCallError, LLMConfig, LLMReplyError, check_endpoint
from gcpc_core.local_llm import LOCAL_MODEL_ALIAS, stop_with_parent
from gcpc_core.models import Citation, ItemJudgment
from gcpc_core.perturb import run_perturbations
from store.helpers import llm_calls

from .conftest import CALL_TIMEOUT_S, MAX_TOKENS, REAL_N_CTX, TASK, TRIAL

pytestmark = [pytest.mark.llm_real, pytest.mark.timeout(1800)]

REASONS = {"ungrounded", "not_judged", "unknown_item_id", "judge_abstain", "invalid_json", "schema", "truncated",
           "empty", "refusal", "content_filter", "context_overflow", "no_choices", "invalid_body", "timeout"}
"""Every reason an item can be left Abstain with."""


def assert_run_used_the_server(store, run_id: str, endpoint: str) -> None:
    run = store.runs.get(run_id)
    assert run.structured_mode == "json_object"  # llama-cpp-python takes only json_object (+ schema)
    calls = [c for c in llm_calls(store, run_id=run_id) if not c.cache_hit]
    assert calls and all(c.prompt_tokens > 0 for c in calls)  # usage reported by the server
    assert run.prompt_tokens == sum(c.prompt_tokens for c in calls)
    assert store.runs.llm_mode(endpoint, LOCAL_MODEL_ALIAS).mode == "json_object"  # stored for later runs


def test_llm_check_reports_the_negotiated_mode(local_server, real_store) -> None:
    report = check_endpoint(LLMConfig(model=LOCAL_MODEL_ALIAS, base_url=local_server.base_url,
                                      context_window=local_server.n_ctx, timeout=300, max_retries=0),
                            store=real_store)
    text = "\n".join(report.lines)
    assert report.ok, text
    assert report.structured_mode == "json_object" and "rejected first — parse: HTTP 500" in text
    assert "response_format" in text and report.tokenizer == "/extras/tokenize/count"


def test_synthesize_one_small_task(real_llm, real_store) -> None:
    llm = real_llm(max_completion_tokens=2 * MAX_TOKENS)
    report = synthesize_project(real_store, task=TASK, force=True, llm=llm, progress=False)
    [result] = report.results
    assert result.status in ("frozen", "failed"), result  # an endpoint error would be a failure of the tier
    stored = [r for r in real_store.checklists.list(status=None) if r.source.startswith("llm:")]
    assert len(stored) == 1 and stored[0].status == result.status
    if result.status == "failed":
        assert stored[0].reason or stored[0].gate_failures  # says why, never silently accepted
    assert_run_used_the_server(real_store, report.run_id, llm.config.endpoint)


@pytest.mark.parametrize("judge", ["gcpc", "holistic"])
def test_judge_one_trajectory(judge: str, real_llm, real_store) -> None:
    llm = real_llm()
    report = judge_project(real_store, judge=judge, llm=llm, limit=1, progress=False)
    assert report.ok and report.judged == [TRIAL], report.lines()
    assert_run_used_the_server(real_store, report.run_id, llm.config.endpoint)
    replies = real_store.judging.replies(trajectory_id=TRIAL, judge=judge)
    assert replies and all(r.raw is not None or r.status == "context_overflow" for r in replies)
    view = build_evidence_view(real_store.trials.events(TRIAL))
    if judge == "gcpc":
        items = real_store.judging.judgments(judge="gcpc", trajectory_id=TRIAL)
        assert [i.item_id for i in items] == ["C1", "C2", "C3", "C4"]  # every item stored
        for item in items:
            assert item.verdict_raw in ("Yes", "No", "Abstain")
            if item.verdict_raw == "Abstain":
                assert item.reason_raw in REASONS
            else:  # grounding let it through: every kept citation is verbatim in an evidence event it names
                assert item.citations
                assert all(view.quote_in_event(c["event_id"], c["quote"]) for c in item.citations)
    else:
        [unit] = [u for (t, j), u in real_store.judging.units("holistic").items() if t == TRIAL]
        assert (unit.progress is not None and 0 <= unit.progress <= 1) or unit.reason in REASONS
        assert all(view.quote_in_event(c["event_id"], c["quote"]) for c in unit.citations or [])


def test_one_perturbation(real_llm, real_store) -> None:
    """The real judging is tested above; here a stored gcpc Yes (a verbatim citation of the `cat`
    output, what a judge should say) is perturbed and re-judged through the real model."""
    llm = real_llm()
    checklist = real_store.checklists.latest(TASK)
    items = [ItemJudgment(item_id=i["id"], route=i["route"], verdict_raw="Abstain", verdict="Abstain",
                          reason="judge_abstain") for i in checklist.checklist["items"]]
    items[0] = ItemJudgment(item_id="C1", route="assertion", verdict_raw="Yes", verdict="Yes",
                            citations=[Citation(event_id="E4", quote="hello")], rationale="E4 shows hello")
    store_judgment(real_store, TrajectoryJudgment(
        trajectory_id=TRIAL, task=TASK, judge="gcpc", checklist_sha=checklist.sha, model=llm.model,
        prompt_version=get_judge("gcpc").version(), rules_version=load_rules().version,
        content_hash=real_store.trials.get_trajectory(TRIAL).content_hash, items=items), run_id=None)
    report = run_perturbations(real_store, judge="gcpc", llm=llm, progress=False, n_boot=50)
    assert report.ok, report.errors
    [row] = list(real_store.db["perturbations"].rows_where("judge = 'gcpc'"))
    assert row["status"] == "judged" and row["item_id"] == "C1" and row["recipe"]
    assert row["verdict"] in ("Yes", "No", "Abstain") and (row["verdict"] != "Abstain" or row["reason"] in REASONS)
    assert_run_used_the_server(real_store, report.run_id, llm.config.endpoint)


def test_serve_local_stops_cleanly_on_sigterm() -> None:
    process = subprocess.Popen([sys.executable, "-m", "gcpc_core", "llm", "serve-local", "--port", "0",
                                "--n-ctx", "1024"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               start_new_session=True, preexec_fn=stop_with_parent())
    lines: list[str] = []
    try:
        deadline = time.monotonic() + 180
        assert process.stdout is not None
        while time.monotonic() < deadline:
            line = process.stdout.readline()
            if not line:
                break
            lines.append(line)
            if line.startswith("Ctrl-C"):
                break
        text = "".join(lines)
        assert "export OPENAI_BASE_URL=http://127.0.0.1:" in text and "TINY local model" in text, text
        url = next(l for l in lines if l.startswith("export OPENAI_BASE_URL=")).split("=", 1)[1].strip()
        process.send_signal(signal.SIGTERM)
        assert process.wait(30) == 0
    finally:
        if process.poll() is None:
            process.kill()
    with pytest.raises(OSError):  # the server went with it
        urllib.request.urlopen(f"{url}/models", timeout=2)


# ---- bad input the real server can produce -----------------------------------------------------


class Word(BaseModel):
    word: str


def test_real_wrong_model_name_is_caught_by_the_check(local_server) -> None:
    report = check_endpoint(LLMConfig(model="no-such-model", base_url=local_server.base_url, timeout=CALL_TIMEOUT_S,
                                      max_retries=0))
    assert not report.ok and "does not list model no-such-model" in report.verdict, report.lines


def test_real_context_overflow_is_a_clear_error(real_llm) -> None:
    llm = real_llm(context_window=None)  # no budget: the server itself refuses the prompt
    messages = [{"role": "user", "content": "word " * (2 * REAL_N_CTX)}]  # twice the window
    with pytest.raises(LLMCallError) as caught:
        llm.run_sync(lambda: llm.complete(messages, Word, prompt_version="v1"))
    assert caught.value.reason == "context_overflow" and "context" in str(caught.value)


def test_real_reply_cut_by_max_tokens_is_truncated(real_llm) -> None:
    llm = real_llm(max_completion_tokens=2)
    messages = [{"role": "user", "content": 'Reply with {"word": "hello"}'}]
    with pytest.raises(LLMReplyError) as caught:
        llm.run_sync(lambda: llm.complete(messages, Word, prompt_version="v1"))
    assert caught.value.reason == "truncated" and caught.value.usage.completion_tokens == 2


# ---- grammar bounds --------------------------------------------------------------------------------


class Words(DecodingBounds, BaseModel):
    words: list[str]
    decoding_bounds: ClassVar[Mapping[str, int]] = {"words": 2}


@pytest.mark.parametrize("model", [SingleItemReply, ItemJudgeReply, HolisticReply, ChecklistDraft],
                         ids=lambda m: m.__name__)
def test_llama_cpp_compiles_every_bounded_reply_schema(model, local_server) -> None:
    """The server builds its grammar with this converter: a bound it rejected would be a 500 on every call.
    (`local_server` only to fail with the tier's message when the extra is missing.)"""
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    grammar = json_schema_to_gbnf(json.dumps(model.decoding_schema()))
    assert "root ::=" in grammar


def test_real_server_stops_a_list_at_its_bound(real_llm) -> None:
    """The tiny model, asked for ten words, writes at most the two the grammar allows and closes the reply."""
    llm = real_llm(max_completion_tokens=64)
    messages = [{"role": "user", "content": 'List ten different English words as {"words": [...]}.'}]
    result = llm.run_sync(lambda: llm.complete(messages, Words, prompt_version="v1"))
    assert len(result.parsed.words) <= 2 and result.usage.completion_tokens < 64
