"""Judging on the real SkillsBench sample (../shared/skillsbench, read in place; skipped when absent).

With the hand-written checklists of tests/fixtures/checklists: prompts are built for every real
trial, scripted replies cite real event ids (and pass grounding), altered quotes and quotes of the
agent's own narration do not.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_openai import FAKE_MODEL, Reply

from gcpc_core.checklist import Checklist, load_rules
from gcpc_core.evidence import build_evidence_view
from gcpc_core.judge import ground_items, judge_project, score_project
from gcpc_core.judge.grounding import may_cite
from gcpc_core.judge.prompts import holistic_messages, items_messages
from gcpc_core.judge.replies import ItemJudgeReply
from gcpc_core.llm import LLM, LLMConfig
from gcpc_core.store import Store

from .conftest import is_items_request, items_reply

pytestmark = pytest.mark.skillsbench


@pytest.fixture
def real(real_copy: Path) -> Iterator[Store]:
    """The real sample, its hand-written checklists frozen, probe-judged and scored (`real_master`)."""
    store = Store(real_copy)
    yield store
    store.close()


def test_prompts_are_built_for_every_real_trial(real: Store) -> None:
    rules = load_rules()
    trials = real.trials.trajectories()
    assert len(trials) == 12
    for traj in trials:
        task = real.trials.get_task(traj.task)
        view = build_evidence_view(real.trials.events(traj.id))
        assert view.entries, f"{traj.id}: empty evidence view"
        row = real.checklists.latest(traj.task)
        assert row is not None, f"no fixture checklist for {traj.task}"
        checklist = Checklist.model_validate(row.checklist)
        system, user = items_messages(task, checklist, view, rules)
        assert user["content"].count("</evidence>") == 1
        assert f"each exactly once: {', '.join(i.id for i in checklist.items)}." in user["content"]
        assert all(f"### {e.event.id} · " in user["content"] for e in view.entries)
        assert holistic_messages(task, view)[1]["content"].count("<evidence>") == 1


def test_grounding_on_real_events(real: Store) -> None:
    checked = Counter()
    for traj in real.trials.trajectories():
        events = real.trials.events(traj.id)
        view = build_evidence_view(events)
        checklist = Checklist.model_validate(real.checklists.latest(traj.task).checklist)
        narration = [e for e in events if e.kind in ("agent_message", "agent_thinking") and len(e.text.strip()) >= 20]
        a, b = checklist.items[0], checklist.items[1]
        evidence = [e.event for e in view.entries
                    if e.duplicate_of is None and len(e.event.text.strip()) >= 20 and may_cite(view, e.event, a)]
        target = evidence[-1]
        quote = target.text.strip()[:80]
        entries = [
            {"item_id": a.id, "verdict": "No", "rationale": "r", "citations": [{"event_id": target.id, "quote": quote}]},
            {"item_id": b.id, "verdict": "No", "rationale": "r",
             "citations": [{"event_id": target.id, "quote": quote[:-3] + "XYZ"}]},
        ]
        if narration:
            n = narration[0]
            entries.append({"item_id": checklist.items[2].id, "verdict": "Yes", "rationale": "r",
                            "citations": [{"event_id": n.id, "quote": n.text.strip()[:60]}]})
        grounded = ground_items(checklist.items, ItemJudgeReply.model_validate({"items": entries}).items, view)
        by_id = {i.item_id: i for i in grounded.items}
        assert by_id[a.id].verdict_raw == "No" and by_id[a.id].citations[0].event_id == target.id
        assert (by_id[b.id].verdict_raw, by_id[b.id].reason) == ("Abstain", "ungrounded")  # altered quote
        if narration:
            assert by_id[checklist.items[2].id].reason == "ungrounded"  # the agent's own words are not evidence
            checked["narration"] += 1
        checked["trials"] += 1
    assert checked["trials"] == 12 and checked["narration"] >= 4


def test_scripted_run_on_real_trials(real: Store, fake_openai) -> None:
    fake_openai.on(is_items_request, items_reply("Yes"))
    fake_openai.default = Reply.error(400, "unexpected request")
    llm = LLM(LLMConfig(model=FAKE_MODEL, base_url=fake_openai.url, api_key="sk-test", timeout=5.0), store=real)
    report = judge_project(real, judge="gcpc", llm=llm, progress=False)
    assert len(report.judged) == 12 and report.ok and fake_openai.request_count == 12
    rows = real.judging.judgments(judge="gcpc")
    # every scripted citation grounded. D13 names 'Back so soon? Afraid?', which lies in the middle of the
    # long /app/script.txt: head-and-tail windows cut it in two trials (its Yes was ungrounded,
    # `value_not_cited`); the item-aware window keeps the lines naming it, so the scripted judge cites it
    ungrounded = [(r.trajectory_id, r.item_id) for r in rows if r.verdict_raw != "Yes"]
    assert ungrounded == []
    score_project(real)
    scores = real.judging.scores(judge="gcpc")
    assert len(scores) == 12 and all(s.partial_credit is not None for s in scores)
    assert {s.outcome for s in scores} == {"PASS", "FAIL"}
