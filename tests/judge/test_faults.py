"""Each fault against the fake server: HTTP faults are retried by the client; reply faults get one
repair round, then Abstain with the reason; raw replies are stored for audit."""

from __future__ import annotations

from fake_openai import Reply, fault_429, fault_500, fault_malformed, fault_refusal, fault_timeout

from gcpc_core.judge import judge_project
from store.helpers import llm_calls

from .conftest import is_items_request, is_repair, item_ids, items_reply

TRAJ = "ini-config-repair__0KnwxjT"
"""One demo trial (PASS); its checklist has items I1–I8."""


def run_one(project, make_llm, **llm_overrides):
    llm = make_llm(**llm_overrides)
    return judge_project(project, judge="gcpc", llm=llm, limit=1, progress=False)


def verdicts(project, judge: str = "gcpc") -> dict[str, tuple[str, str | None]]:
    return {r.item_id: (r.verdict_raw, r.reason_raw) for r in project.judging.judgments(judge=judge, trajectory_id=TRAJ)}


def first_request(req) -> bool:
    return is_items_request(req) and not is_repair(req)


def test_happy_path_one_call_grounded_yes(fake_openai, project, make_llm) -> None:
    fake_openai.on(is_items_request, items_reply("Yes"))
    report = run_one(project, make_llm)
    assert report.judged == [TRAJ] and fake_openai.request_count == 1
    assert set(verdicts(project).values()) == {("Yes", None)} and len(verdicts(project)) == 8
    [reply] = project.judging.replies(trajectory_id=TRAJ, judge="gcpc")
    assert reply.status == "ok" and reply.attempt == "initial" and '"items"' in reply.raw


def test_429_then_success(fake_openai, project, make_llm) -> None:
    fake_openai.on(is_items_request, fault_429(), items_reply("Yes"))
    report = run_one(project, make_llm)
    assert report.judged == [TRAJ] and fake_openai.request_count == 2
    assert llm_calls(project, run_id=report.run_id)[0].retries == 1


def test_500_then_success(fake_openai, project, make_llm) -> None:
    fake_openai.on(is_items_request, fault_500(), items_reply("No"))
    report = run_one(project, make_llm)
    assert report.judged == [TRAJ] and set(verdicts(project).values()) == {("No", None)}


def test_persistent_500_leaves_the_trajectory_for_a_rerun(fake_openai, project, make_llm) -> None:
    fake_openai.on(is_items_request, fault_500())
    report = run_one(project, make_llm, max_retries=1)
    assert not report.judged and "http_500" in report.errors[TRAJ] and not report.ok
    assert verdicts(project) == {}  # nothing half-stored
    assert project.runs.get(report.run_id).errors == 1
    fake_openai.reset()
    fake_openai.on(is_items_request, items_reply("Yes"))
    assert run_one(project, make_llm).judged == [TRAJ]


def test_timeout_then_success(fake_openai, project, make_llm) -> None:
    fake_openai.on(is_items_request, fault_timeout(1.0), items_reply("Yes"))
    report = run_one(project, make_llm, timeout=0.3)
    assert report.judged == [TRAJ] and fake_openai.request_count == 2


def test_persistent_timeout_is_a_stored_abstain_timeout(fake_openai, project, make_llm) -> None:
    """A request that runs out of its time bound (after the client's retries) would time out again on
    a server too slow for it: every item is stored Abstain `timeout`, no repair is sent."""
    fake_openai.on(is_items_request, fault_timeout(1.0))
    report = run_one(project, make_llm, timeout=0.2, max_retries=0)
    assert report.ok and report.judged == [TRAJ] and report.errors == {}
    assert set(verdicts(project).values()) == {("Abstain", "timeout")} and len(verdicts(project)) == 8
    assert fake_openai.request_count == 1
    [reply] = project.judging.replies(trajectory_id=TRAJ, judge="gcpc")
    assert reply.status == "timeout" and "GCPC_LLM_TIMEOUT" in reply.problems[0]


def test_timeout_of_the_repair_keeps_the_first_replys_reason(fake_openai, project, make_llm) -> None:
    fake_openai.on(first_request, fault_malformed())
    fake_openai.on(is_repair, fault_timeout(1.0))
    report = run_one(project, make_llm, timeout=0.2, max_retries=0)
    assert report.ok and report.judged == [TRAJ]
    assert set(verdicts(project).values()) == {("Abstain", "invalid_json")}
    assert [r.status for r in project.judging.replies(trajectory_id=TRAJ)] == ["invalid_json", "timeout"]


def test_persistent_timeout_holistic_is_unrated_timeout(fake_openai, project, make_llm) -> None:
    fake_openai.default = fault_timeout(1.0)
    report = judge_project(project, judge="holistic", llm=make_llm(timeout=0.2, max_retries=0), limit=1,
                           progress=False)
    assert report.judged == [TRAJ] and report.verdicts == {"unrated:timeout": 1}


def test_malformed_json_gets_one_repair(fake_openai, project, make_llm) -> None:
    fake_openai.on(first_request, fault_malformed())
    fake_openai.on(is_repair, items_reply("Yes"))
    run_one(project, make_llm)
    assert fake_openai.request_count == 2 and set(verdicts(project).values()) == {("Yes", None)}
    repair = fake_openai.requests[1]["messages"]
    assert repair[-2]["role"] == "assistant" and "this is not json" in repair[-2]["content"]
    assert "invalid_json" in repair[-1]["content"]
    statuses = [r.status for r in project.judging.replies(trajectory_id=TRAJ)]
    assert statuses == ["invalid_json", "ok"]


def test_malformed_json_twice_abstains_with_reason(fake_openai, project, make_llm) -> None:
    fake_openai.on(is_items_request, fault_malformed())
    report = run_one(project, make_llm)
    assert report.errors == {} and fake_openai.request_count == 2 and report.judged == [TRAJ]
    assert set(verdicts(project).values()) == {("Abstain", "invalid_json")}
    raws = [r.raw for r in project.judging.replies(trajectory_id=TRAJ)]
    assert len(raws) == 2 and all("this is not json" in raw for raw in raws)  # stored for audit


def test_missing_items_are_not_judged_without_retry(fake_openai, project, make_llm) -> None:
    fake_openai.on(is_items_request, items_reply("Yes", ids=["I1", "I2"]))
    run_one(project, make_llm)
    got = verdicts(project)
    assert fake_openai.request_count == 1
    assert got["I1"] == ("Yes", None) and got["I3"] == ("Abstain", "not_judged") and len(got) == 8


def test_unknown_ids_get_one_repair(fake_openai, project, make_llm) -> None:
    fake_openai.on(first_request, lambda req: items_reply("Yes", ids=[*item_ids(req)[:-1], "C99"])(req))
    fake_openai.on(is_repair, items_reply("Yes"))
    run_one(project, make_llm)
    assert fake_openai.request_count == 2 and set(verdicts(project).values()) == {("Yes", None)}
    assert "C99" in fake_openai.requests[1]["messages"][-1]["content"]
    assert [r.status for r in project.judging.replies(trajectory_id=TRAJ)] == ["unknown_item_id", "ok"]


def test_unknown_ids_twice_abstain_with_reason(fake_openai, project, make_llm) -> None:
    fake_openai.on(is_items_request, lambda req: items_reply("Yes", ids=[*item_ids(req)[:-1], "C99"])(req))
    run_one(project, make_llm)
    got = verdicts(project)
    assert fake_openai.request_count == 2 and got["I8"] == ("Abstain", "unknown_item_id") and got["I1"] == ("Yes", None)


def test_refusal_then_success(fake_openai, project, make_llm) -> None:
    fake_openai.on(first_request, fault_refusal())
    fake_openai.on(is_repair, items_reply("Yes"))
    run_one(project, make_llm)
    assert set(verdicts(project).values()) == {("Yes", None)}
    assert [r.status for r in project.judging.replies(trajectory_id=TRAJ)] == ["refusal", "ok"]


def test_refusal_twice_abstains(fake_openai, project, make_llm) -> None:
    fake_openai.on(is_items_request, fault_refusal())
    run_one(project, make_llm)
    assert set(verdicts(project).values()) == {("Abstain", "refusal")}


def test_ungrounded_citations_abstain(fake_openai, project, make_llm) -> None:
    def invented(req):
        items = [{"item_id": i, "citations": [{"event_id": "E6", "quote": "port = 9999"}], "rationale": "r",
                  "verdict": "Yes"} for i in item_ids(req)]
        return Reply.json({"items": items})

    fake_openai.on(is_items_request, invented)
    run_one(project, make_llm)
    assert set(verdicts(project).values()) == {("Abstain", "ungrounded")} and fake_openai.request_count == 1
