"""Postprocessing and score formulas end to end through the project DB, on hand-computed cases."""

from __future__ import annotations

import pytest

from gcpc_core.judge import TrajectoryJudgment, score_project, store_judgment
from gcpc_core.models import Citation, ItemJudgment

PASS_TRAJ = "ini-config-repair__0KnwxjT"
FAIL_TRAJ = "ini-config-repair__EvijmT7"


def item(item_id: str, route: str, verdict: str, reason: str | None = None) -> ItemJudgment:
    cites = [Citation(event_id="E3", quote="ls")] if verdict != "Abstain" else []
    return ItemJudgment(item_id=item_id, route=route, verdict_raw=verdict, verdict=verdict, citations=cites,
                        reason=reason)


ITEMS = [
    item("A1", "assertion", "Yes"),
    item("A2", "assertion", "No"),
    item("A3", "assertion", "Abstain", "ungrounded"),
    item("G1", "generated", "No"),
    item("J1", "judge", "Yes"),
    item("J2", "judge", "Abstain", "not_judged"),
]


def put(store, traj_id: str, items=ITEMS, judge: str = "gcpc") -> None:
    traj = store.trials.get_trajectory(traj_id)
    store_judgment(store, TrajectoryJudgment(trajectory_id=traj_id, task=traj.task, judge=judge, items=items,
                                             checklist_sha="sha-x", model="m", prompt_version="v", rules_version="r",
                                             content_hash=traj.content_hash), run_id=None)


def test_pass_overwrites_assertions_and_keeps_raw(project) -> None:
    assert project.trials.get_trajectory(PASS_TRAJ).outcome == "PASS"
    put(project, PASS_TRAJ)
    score_project(project, judge="gcpc")
    rows = {r.item_id: r for r in project.judging.judgments(judge="gcpc", trajectory_id=PASS_TRAJ)}
    assert "ENDPOINT" not in rows
    assert [(rows[i].verdict_raw, rows[i].verdict) for i in ("A1", "A2", "A3", "G1", "J1", "J2")] == [
        ("Yes", "Yes"), ("No", "Yes"), ("Abstain", "Yes"), ("No", "No"), ("Yes", "Yes"), ("Abstain", "Abstain")]
    assert rows["A2"].reason == "official_pass" and rows["A3"].reason_raw == "ungrounded"
    [score] = project.judging.scores(judge="gcpc")
    # postprocessed: Yes = A1 A2 A3 J1 = 4, No = G1 = 1, Abstain = J2 = 1
    assert (score.n_yes, score.n_no, score.n_abstain, score.n_items) == (4, 1, 1, 6)
    assert score.partial_credit == pytest.approx(4 / 5)
    # coverage reads raw verdicts: A3 was Abstain before PASS set it to Yes, so only A1 A2 G1 J1 are covered
    assert score.evidence_coverage == pytest.approx(4 / 6)
    assert (score.perfect, score.perfect_with_endpoint) == (0, 0)  # G1 is No
    assert score.outcome == "PASS" and score.checklist_sha == "sha-x"


def test_fail_adds_endpoint_and_keeps_verdicts(project) -> None:
    assert project.trials.get_trajectory(FAIL_TRAJ).outcome == "FAIL"
    put(project, FAIL_TRAJ)
    score_project(project, judge="gcpc")
    rows = {r.item_id: r for r in project.judging.judgments(judge="gcpc", trajectory_id=FAIL_TRAJ)}
    assert rows["ENDPOINT"].route == "endpoint" and rows["ENDPOINT"].verdict == "No"
    assert rows["ENDPOINT"].reason == "official_fail"
    assert all(r.verdict == r.verdict_raw for k, r in rows.items() if k != "ENDPOINT")
    [score] = project.judging.scores(judge="gcpc")
    # Yes = A1 J1 = 2; No = A2 G1 ENDPOINT = 3; Abstain = A3 J2 = 2
    assert (score.n_yes, score.n_no, score.n_abstain, score.n_items) == (2, 3, 2, 6)
    assert score.partial_credit == pytest.approx(2 / 5)
    assert score.evidence_coverage == pytest.approx(4 / 6)
    assert (score.perfect, score.perfect_with_endpoint) == (0, 0)


def test_perfect_counts_real_items_only(project) -> None:
    clean = [item("A1", "assertion", "Yes"), item("J1", "judge", "Abstain", "judge_abstain")]
    put(project, FAIL_TRAJ, clean)
    put(project, PASS_TRAJ, clean)
    score_project(project, judge="gcpc")
    scores = {s.trajectory_id: s for s in project.judging.scores(judge="gcpc")}
    assert (scores[FAIL_TRAJ].perfect, scores[FAIL_TRAJ].perfect_with_endpoint) == (1, 0)
    assert scores[FAIL_TRAJ].partial_credit == pytest.approx(1 / 2)  # endpoint No in the denominator
    assert (scores[PASS_TRAJ].perfect, scores[PASS_TRAJ].perfect_with_endpoint) == (1, 1)
    assert scores[PASS_TRAJ].partial_credit == 1.0 and scores[PASS_TRAJ].evidence_coverage == 0.5


def test_all_abstain_scores_none_and_rescoring_is_idempotent(project) -> None:
    put(project, PASS_TRAJ, [item("G1", "generated", "Abstain", "invalid_json")])
    score_project(project, judge="gcpc")
    first = project.judging.scores(judge="gcpc")
    assert first[0].partial_credit is None and first[0].evidence_coverage == 0.0
    score_project(project, judge="gcpc")
    again = project.judging.scores(judge="gcpc")
    assert [s.model_dump(exclude={"scored_at"}) for s in again] == [s.model_dump(exclude={"scored_at"}) for s in first]
    assert len(project.judging.judgments(judge="gcpc")) == 1


def test_rejudging_replaces_judgments_and_drops_the_stale_score(project) -> None:
    put(project, FAIL_TRAJ)
    score_project(project, judge="gcpc")
    put(project, FAIL_TRAJ, [item("A1", "assertion", "Yes")])
    assert project.judging.scores(judge="gcpc") == []  # stale score removed with the old judgments
    assert [r.item_id for r in project.judging.judgments(judge="gcpc")] == ["A1"]
