"""Every bad input the issue names, against the fake server, through a real judge run: each ends in
a stored reason and one clear message, never a crash. Endpoint failures (down, wrong model, 401,
404) store nothing for the trajectory (a rerun tries again) but are recorded as calls with their
reason; reply failures (cut by max tokens, empty, refusal, extra keys, context overflow) store
every item as Abstain with the reason and keep the server's words in the audit trail."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from fake_openai import Reply, fault_refusal, overflow_error

from gcpc_core.judge import judge_project
from gcpc_core.llm import REPAIR_TOKENS_FACTOR
from gcpc_core.llm.server import MESSAGE_OVERHEAD_TOKENS, estimate_tokens

from .conftest import is_items_request, is_repair, item_ids, items_reply

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "llm"))
from local_helpers import closed_port_url  # noqa: E402
from store.helpers import llm_calls  # noqa: E402

TRAJ = "ini-config-repair__0KnwxjT"


def run_one(project, make_llm, judge: str = "gcpc", **llm_overrides):
    return judge_project(project, judge=judge, llm=make_llm(**llm_overrides), limit=1, progress=False)


def stored(project, judge: str = "gcpc") -> set[tuple[str, str | None]]:
    return {(r.verdict_raw, r.reason_raw) for r in project.judging.judgments(judge=judge, trajectory_id=TRAJ)}


def extra_keys(request) -> Reply:
    items = [{"item_id": i, "citations": [], "rationale": "r", "verdict": "No", "confidence": 0.9}
             for i in item_ids(request)]
    return Reply.json({"items": items})


@pytest.mark.parametrize(
    ("reply", "reason", "said"),
    [
        (Reply(content='{"items": [{"item_id": "I1", "cit', finish_reason="length"), "truncated", "token limit"),
        (Reply(content=""), "empty", "reply is empty"),
        (Reply(content="   \n"), "empty", "reply is empty"),
        (fault_refusal("I cannot evaluate this."), "refusal", "I cannot evaluate this."),
        (extra_keys, "schema", "Extra inputs are not permitted"),
    ],
    ids=["finish_length", "empty", "blank", "refusal", "extra_keys"],
)
def test_bad_reply_is_a_stored_abstain_with_its_reason(reply, reason, said, fake_openai, project, make_llm) -> None:
    fake_openai.on(is_items_request, reply)
    report = run_one(project, make_llm)
    assert report.judged == [TRAJ] and report.ok  # judged: every item stored, none lost
    assert stored(project) == {("Abstain", reason)}
    assert fake_openai.request_count == 2  # the initial request and one repair, no more
    replies = project.judging.replies(trajectory_id=TRAJ, judge="gcpc")
    assert [r.status for r in replies] == [reason, reason]
    assert said in replies[0].problems[0]
    assert report.verdicts == {f"Abstain:{reason}": 8}


def test_server_context_overflow_is_abstain_context_overflow(fake_openai, project, make_llm) -> None:
    fake_openai.on(is_items_request, overflow_error(window=2048, requested=9000))
    report = run_one(project, make_llm)
    assert report.judged == [TRAJ]
    assert stored(project) == {("Abstain", "context_overflow")}
    assert fake_openai.request_count == 1  # not retried, no repair (it would be longer still)
    [reply] = project.judging.replies(trajectory_id=TRAJ, judge="gcpc")
    assert reply.status == "context_overflow" and "maximum context length is 2048" in reply.problems[0]


def test_server_context_overflow_holistic(fake_openai, project, make_llm) -> None:
    fake_openai.default = overflow_error()
    report = run_one(project, make_llm, judge="holistic")
    assert report.judged == [TRAJ] and report.verdicts == {"unrated:context_overflow": 1}
    [unit] = [u for u in project.judging.units("holistic").values() if u.trajectory_id == TRAJ]
    assert unit.reason == "context_overflow" and unit.progress is None


@pytest.mark.parametrize(
    ("reply", "reason", "said"),
    [
        (Reply.error(404, "The model `fake-model` does not exist"), "model_not_found", "does not serve model"),
        (Reply.error(404, "Not Found"), "not_found", "usually ends in /v1"),
        (Reply.error(401, "Incorrect API key provided"), "auth", "OPENAI_API_KEY"),
        (Reply.error(403, "forbidden"), "auth", "refused the API key"),
    ],
    ids=["wrong_model", "wrong_url", "401", "403"],
)
def test_endpoint_failure_is_a_clear_error_and_stores_nothing(reply, reason, said, fake_openai, project,
                                                              make_llm) -> None:
    fake_openai.on(is_items_request, reply)
    report = run_one(project, make_llm)
    assert not report.ok and not report.judged
    assert report.errors[TRAJ].startswith(f"{reason}: ") and said in report.errors[TRAJ]
    assert fake_openai.request_count == 1  # deterministic: neither retried nor negotiated away
    assert stored(project) == set()
    assert llm_calls(project, run_id=report.run_id)[0].status == reason


def test_server_down_is_a_clear_error(project, make_llm) -> None:
    report = run_one(project, make_llm, base_url=closed_port_url(), max_retries=0)
    assert not report.ok
    assert report.errors[TRAJ].startswith("connection: cannot reach http://127.0.0.1:")
    assert "llm check" in report.errors[TRAJ]
    assert stored(project) == set()
    assert llm_calls(project, run_id=report.run_id)[0].status == "connection"


def cut_then_ok(request) -> Reply:
    """A reply cut at the token bound first; the repair is answered in full."""
    if is_repair(request):
        return items_reply()(request)
    return Reply(content='{"items": [{"item_id": "I1", "cit', finish_reason="length", usage={"completion_tokens": 300})


def test_repair_after_a_cut_reply_gets_a_larger_bound(fake_openai, project, make_llm) -> None:
    fake_openai.on(is_items_request, cut_then_ok)
    report = run_one(project, make_llm, max_completion_tokens=300)
    initial, repair = fake_openai.requests
    assert initial["max_completion_tokens"] == 300
    assert repair["max_completion_tokens"] == 300 * REPAIR_TOKENS_FACTOR  # not cut again at the same bound
    assert report.judged == [TRAJ] and {v for v, _ in stored(project)} == {"Yes"}
    assert [r.status for r in project.judging.replies(trajectory_id=TRAJ, judge="gcpc")] == ["truncated", "ok"]


def test_repair_bound_without_a_setting_doubles_what_the_server_wrote(fake_openai, project, make_llm) -> None:
    fake_openai.on(is_items_request, cut_then_ok)
    run_one(project, make_llm)
    initial, repair = fake_openai.requests
    assert "max_completion_tokens" not in initial and repair["max_completion_tokens"] == 600


def test_repair_bound_is_capped_by_the_context_window(fake_openai, project, make_llm) -> None:
    fake_openai.on(is_items_request, cut_then_ok)
    llm = make_llm(max_completion_tokens=300)
    window = prompt_tokens(project, llm) + 800  # room for the 300-token reply, not for twice as much after the echo
    run_one(project, make_llm, max_completion_tokens=300, context_window=window)
    initial, repair = fake_openai.requests
    sent = sum(estimate_tokens(m["content"]) + MESSAGE_OVERHEAD_TOKENS for m in repair["messages"])
    assert 300 < repair["max_completion_tokens"] <= window - sent + 1


def test_no_room_for_a_longer_reply_is_truncated_at_once(fake_openai, project, make_llm) -> None:
    long_cut = '{"items": [{"item_id": "I1", "rationale": "' + "words " * 1500
    fake_openai.on(is_items_request, Reply(content=long_cut, finish_reason="length"))
    llm = make_llm(max_completion_tokens=512)
    window = prompt_tokens(project, llm) + 600  # the first request fits; with the cut reply echoed no repair can
    report = run_one(project, make_llm, max_completion_tokens=512, context_window=window)
    assert fake_openai.request_count == 1  # the same bound would cut a repair again: not sent
    assert report.judged == [TRAJ] and stored(project) == {("Abstain", "truncated")}
    [reply] = project.judging.replies(trajectory_id=TRAJ, judge="gcpc")
    assert reply.status == "truncated"
    assert any(p.startswith("no repair sent: the ") and "no more than the 512 the cut reply had" in p
               for p in reply.problems)


def prompt_tokens(project, llm) -> int:
    """Tokens of the first judge request for TRAJ as the budget counts them (before negotiation: the longest)."""
    from gcpc_core.checklist import Checklist, load_rules
    from gcpc_core.evidence import build_evidence_view
    from gcpc_core.judge.prompts import items_messages
    from gcpc_core.judge.replies import ItemJudgeReply
    from gcpc_core.llm import count_prompt_tokens

    traj = project.trials.get_trajectory(TRAJ)
    checklist = Checklist.model_validate(project.checklists.latest(traj.task).checklist)
    messages = items_messages(project.trials.get_task(traj.task), checklist, build_evidence_view(project.trials.events(TRAJ)),
                              load_rules())
    return llm.run_sync(lambda: count_prompt_tokens(llm, messages, ItemJudgeReply))[0]


def test_repair_with_a_larger_bound_gets_a_timeout_scaled_alike(fake_openai, project, make_llm) -> None:
    def cut_then_slow(request) -> Reply:
        if is_repair(request):  # twice the bound, written in more than the configured timeout
            return Reply(**{**items_reply()(request).__dict__, "delay": 1.5})
        return Reply(content='{"items": [{"item_id": "I1", "cit', finish_reason="length")

    fake_openai.on(is_items_request, cut_then_slow)
    report = run_one(project, make_llm, max_completion_tokens=300, timeout=1.0, max_retries=0)
    assert report.ok and report.judged == [TRAJ], report.errors  # the repair's timeout is 2 s, not 1 s
    assert {v for v, _ in stored(project)} == {"Yes"}
