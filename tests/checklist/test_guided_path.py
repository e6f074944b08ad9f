"""The guided path without an LLM: per-task status and its next step, from import to audited scores.

The toy test walks every step on an in-memory task; the real-corpus test (skipped when
../shared/skillsbench is absent) takes the path through the command line alone:
import → info --task-status → checklist draft → (review) checklist add → judge probe → score → audit.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from annotations.audits import record_item_audit
from gcpc_core.checklist import Rules
from gcpc_core.checklist.draft import draft_checklist
from gcpc_core.checklist.registry import register_checklist
from gcpc_core.cli import main
from gcpc_core.defaults import AUDIT_TARGET_WIDTH
from gcpc_core.models import ENDPOINT_ITEM_ID
from gcpc_core.review.overview import status_frame, task_status
from gcpc_core.store import Store
from store.helpers import replace_trajectory

INFO_CONTRACT = {"tasks", "trials", "pass", "fail", "events", "checklists", "judgments", "annotations"}


def steps(store: Store, *, llm_ready: bool = False) -> dict[str, str]:
    return {s.task: s.next_step for s in task_status(store, llm_ready=llm_ready)}


def info(db: Path, capsys: pytest.CaptureFixture[str]) -> dict:
    assert main(["info", "--db", str(db), "--task-status", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert INFO_CONTRACT <= set(data)
    return {s["task"]: s for s in data["task_status"]}


@pytest.mark.skillsbench
def test_real_corpus_guided_path_on_the_command_line(skillsbench: Path, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str], rules: Rules) -> None:
    db = tmp_path / "real.db"
    assert main(["import", "--tasks", str(skillsbench / "tasks"), "--trials", str(skillsbench / "trials"),
                 "--db", str(db), "--quiet"]) == 0
    capsys.readouterr()
    status = info(db, capsys)
    active = {t for t, s in status.items() if s["trajectories"]}
    assert active == {"3d-scan-calc", "azure-bgp-oscillation-route-leak", "citation-check", "dialogue-parser"}
    assert {status[t]["next_step"] for t in active} == {"draft a checklist"}
    assert {status[t]["next_step"] for t in status if t not in active} == {"import trials"}
    assert status["citation-check"]["command"].startswith("python -m gcpc_core checklist draft")
    assert main(["info", "--db", str(db), "--task-status"]) == 0
    text = capsys.readouterr().out
    assert "next: draft a checklist: python -m gcpc_core checklist draft" in text and "then: edit citation-check.yaml" in text

    draft = tmp_path / "citation-check.yaml"
    assert main(["checklist", "draft", "--db", str(db), "--task", "citation-check", "--out", str(draft)]) == 0
    assert main(["checklist", "add", "--db", str(db), str(draft)]) == 1  # a draft is never frozen as is
    draft.write_text(draft.read_text().replace(f"source: draft:{rules.version}", "source: human:tester"))
    assert main(["checklist", "add", "--db", str(db), str(draft)]) == 0
    capsys.readouterr()
    status = info(db, capsys)
    assert status["citation-check"]["next_step"] == "judge"
    assert status["citation-check"]["command"].endswith("--judge probe")

    assert main(["judge", "--db", str(db), "--judge", "probe", "--quiet"]) == 0
    capsys.readouterr()
    status = info(db, capsys)
    assert status["citation-check"]["judged"] == {"probe": 4} and status["citation-check"]["next_step"] == "score"
    assert main(["score", "--db", str(db)]) == 0
    capsys.readouterr()
    status = info(db, capsys)
    assert status["citation-check"]["scored"] == {"probe": 4} and status["citation-check"]["next_step"] == "audit"

    # done only when audited as the triage loop asks (the error-rate interval at its target width), not after the
    # first audit (which used to end the path)
    store = Store(db)
    rows = [r for r in store.judging.judgments(judge="probe") if r.item_id != ENDPOINT_ITEM_ID]
    record_item_audit(store, trajectory_id=rows[0].trajectory_id, item_id=rows[0].item_id, judge="probe",
                      reviewer="tester", agree=True)
    status = info(db, capsys)
    assert status["citation-check"]["audited_items"] == 1 and status["citation-check"]["next_step"] == "audit"
    assert status["citation-check"]["audit_width"]["probe"] > AUDIT_TARGET_WIDTH
    assert "triage" in status["citation-check"]["command"] and "error-rate interval" in status["citation-check"]["then"]
    assert status["dialogue-parser"]["next_step"] == "draft a checklist"
    for r in rows[1:]:
        record_item_audit(store, trajectory_id=r.trajectory_id, item_id=r.item_id, judge="probe", reviewer="tester",
                          agree=True)
    # two auditors split on one verdict: another auditor must settle it
    record_item_audit(store, trajectory_id=rows[0].trajectory_id, item_id=rows[0].item_id, judge="probe",
                      reviewer="second", agree=False, corrected_verdict=next(v for v in ("Yes", "No")
                                                                             if v != rows[0].verdict_raw))
    status = info(db, capsys)["citation-check"]
    assert status["next_step"] == "audit" and status["split_items"] == 1 and "split on" in status["then"]
    record_item_audit(store, trajectory_id=rows[0].trajectory_id, item_id=rows[0].item_id, judge="probe",
                      reviewer="third", agree=True)
    status = info(db, capsys)["citation-check"]
    assert (status["next_step"], status["split_items"], status["audit_width"]) == ("done", 0, {"probe": 0.0})


def test_status_steps_on_a_toy_project(store: Store, rules: Rules) -> None:
    from gcpc_core.models import Trajectory

    from .toy import make_toy_task

    task = make_toy_task()
    store.trials.upsert_task(task)
    assert steps(store) == {"toy-count": "import trials"}
    traj = Trajectory(id="toy__1", task=task.id, agent="a", model="m", outcome="FAIL", source_path="/x", log_path="/x/l",
                      log_format="gcpc-jsonl")
    replace_trajectory(store, traj, [])
    assert steps(store) == {"toy-count": "draft a checklist"}
    assert steps(store, llm_ready=True) == {"toy-count": "synthesize a checklist"}
    checklist = draft_checklist(task, rules).checklist.model_copy(update={"source": "human:alice"})
    v1, _ = register_checklist(store, checklist, created_by="alice", rules=rules)
    assert v1 is not None
    [status] = task_status(store)
    assert (status.next_step, status.checklist_version, status.checklist_items) == ("judge", 1, len(checklist.items))
    frame = status_frame([status])
    assert list(frame["checklist"]) == [f"v1 ({len(checklist.items)} items)"] and list(frame["next step"]) == ["judge"]

    from gcpc_core.judge import judge_project, score_project

    judge_project(store, judge="probe", progress=False)
    assert (task_status(store)[0].judged, task_status(store)[0].next_step) == ({"probe": 1}, "score")
    score_project(store)
    assert task_status(store)[0].next_step == "audit"
    edited = checklist.model_copy(update={"items": checklist.items[:-1]})
    v2, _ = register_checklist(store, edited, created_by="alice", rules=rules)
    assert v2 is not None and v2.version == 2
    [status] = task_status(store)
    assert (status.judged, status.stale, status.next_step) == ({}, {"probe": 1}, "judge")
    assert "stale: probe 1/1" in status_frame([status])["judged"][0]
