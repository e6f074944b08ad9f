"""Evidence sensitivity, pure parts: perturbing cited spans in a log, and the flip shares with CIs."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from evidence_helpers import find_quote

from gcpc_core.analysis import PerturbationError, build_report, perturb_events, sensitivity_table
from gcpc_core.analysis.bootstrap import draw_clusters
from gcpc_core.evidence import build_evidence_view
from gcpc_core.models import Citation, Event


def _events() -> list[Event]:
    return [
        Event(id="E1", seq=1, kind="agent_message", text="I will check that port 8080 is set"),
        Event(id="E2", seq=2, kind="tool_call", text="cat /app/app.ini", tool_name="Bash"),
        Event(id="E3", seq=3, kind="tool_output", text="[server]\nport = 8080\nhost = example.org", call_id="E2"),
        Event(id="E4", seq=4, kind="tool_output", text="grep: port = 8080", call_id="E2"),
    ]


def test_cited_scope_changes_only_the_cited_event() -> None:
    events = _events()
    changed, recipes, still = perturb_events(events, [Citation(event_id="E3", quote="port = 8080")], seed=1)
    by_id = {e.id: e for e in changed}
    assert "port = 8080" not in by_id["E3"].text and "host = example.org" in by_id["E3"].text
    assert by_id["E4"].text == events[3].text and by_id["E1"].text == events[0].text
    assert still == ["E4"]  # the span is still in another evidence event: a Yes may still be right
    assert [(r["event_id"], r["cited"], r["kind"]) for r in recipes] == [("E3", True, "number")]
    assert events[2].text == "[server]\nport = 8080\nhost = example.org"  # inputs are not mutated
    again, recipes_again, _ = perturb_events(events, [Citation(event_id="E3", quote="port = 8080")], seed=1)
    assert [e.text for e in again] == [e.text for e in changed] and recipes_again == recipes  # deterministic


def test_log_scope_removes_the_span_from_every_evidence_event_alike() -> None:
    changed, recipes, still = perturb_events(_events(), [Citation(event_id="E3", quote="port = 8080")], seed=1,
                                             scope="log")
    by_id = {e.id: e for e in changed}
    assert still == []
    assert [(r["event_id"], r["cited"]) for r in recipes] == [("E3", True), ("E4", False)]
    assert recipes[0]["replacement"] == recipes[1]["replacement"]  # one wrong value, consistently
    assert by_id["E1"].text == "I will check that port 8080 is set"  # narration is not evidence: untouched
    view = build_evidence_view(changed)
    assert find_quote(view, "port = 8080") == [] and find_quote(view, recipes[0]["replacement"]) == ["E3", "E4"]


def test_overlapping_citations_and_missing_quotes() -> None:
    cites = [Citation(event_id="E3", quote="port = 8080"), Citation(event_id="E3", quote="8080")]
    _, recipes, _ = perturb_events(_events(), cites, seed=0)
    assert "skipped" in recipes[1] and recipes[1]["citation"] == 1
    with pytest.raises(PerturbationError, match="not in E2"):
        perturb_events(_events(), [Citation(event_id="E2", quote="port = 8080")], seed=0)
    with pytest.raises(ValueError, match="scope"):
        perturb_events(_events(), [], seed=0, scope="everywhere")  # type: ignore[arg-type]


def _frame() -> pd.DataFrame:
    rows = [("t1", "a", "No"), ("t1", "b", "Abstain"), ("t1", "c", "Yes"), ("t2", "d", "No"), ("t3", "e", "Yes"),
            ("t3", "f", "Yes")]
    frame = pd.DataFrame([{"trajectory_id": f"{task}-x", "task": task, "item_id": item, "verdict": v,
                           "status": "judged", "span_remaining": 0, "kind": "number"} for task, item, v in rows])
    skipped = {"trajectory_id": "t2-x", "task": "t2", "item_id": "g", "verdict": None, "status": "not_perturbed",
               "span_remaining": 0, "kind": None}
    frame = pd.concat([frame, pd.DataFrame([skipped])], ignore_index=True)
    return frame.assign(judge="gcpc", label="run-a", model="m", scope="cited", seed=0)


def test_shares_hand_computed_and_ci_against_a_per_draw_loop() -> None:
    frame = _frame()
    table = sensitivity_table(frame, n_boot=300, seed=4)
    row = table.iloc[0]
    assert (row["n"], row["to_no"], row["to_no_or_abstain"], row["still_yes"], row["not_perturbed"], row["tasks"]) \
        == (6, 2, 3, 3, 1, 3)
    assert row["share_no"] == pytest.approx(2 / 6) and row["share_no_or_abstain"] == pytest.approx(3 / 6)
    # reference: the same task draws, one draw at a time
    judged = frame[frame["status"] == "judged"]
    tasks = list(pd.unique(judged["task"]))
    shares = []
    for draw in draw_clusters(len(tasks), 300, 4):
        sample = pd.concat([judged[judged["task"] == tasks[k]] for k in draw])
        shares.append((sample["verdict"] == "No").mean())
    assert row["share_no_low"] == pytest.approx(np.percentile(shares, 2.5))
    assert row["share_no_high"] == pytest.approx(np.percentile(shares, 97.5))
    assert sensitivity_table(frame, n_boot=300, seed=4).equals(table)  # seeded: same numbers
    assert row["note"].startswith("interval unreliable: only 3 tasks (10 distinct task resamples")


def test_groups_and_degenerate_cases() -> None:
    frame = _frame()
    by_task = sensitivity_table(frame, by=("task",), n_boot=50).set_index("task")
    assert by_task.loc["t1", "share_no"] == pytest.approx(1 / 3)
    assert np.isnan(by_task.loc["t1", "share_no_low"])  # one cluster: no interval
    assert by_task.loc["t1", "note"] == "fewer than 2 tasks: no task-clustered interval"
    only_skipped = frame[frame["status"] == "not_perturbed"]
    row = sensitivity_table(only_skipped, n_boot=50).iloc[0]
    assert row["n"] == 0 and np.isnan(row["share_no"]) and row["not_perturbed"] == 1
    two = pd.concat([frame, frame.assign(judge="probe", model=None)], ignore_index=True)
    assert sensitivity_table(two, n_boot=50)["judge"].tolist() == ["gcpc", "probe"]
    runs = sensitivity_table(pd.concat([frame, frame.assign(label="run-b", verdict="No")]), n_boot=50)
    assert runs[["judge", "label", "n", "to_no"]].values.tolist() == [["gcpc", "run-a", 6, 2], ["gcpc", "run-b", 6, 6]]
    assert sensitivity_table(frame.iloc[0:0], n_boot=10).empty


def test_report_shows_sensitivity_only_when_data_exists(tmp_path) -> None:
    from gcpc_core.analysis.synthetic import synthetic_frames

    frames = synthetic_frames(n_tasks=3, n_pairs=8, n_unpaired=2, n_rated=4, n_raters=2, n_pref_pairs=2, seed=1)
    without = build_report(frames, tmp_path / "a", n_boot=50, figures=False)
    assert "sensitivity" not in without.csv
    assert any("no evidence-perturbation results yet" in m for m in without.missing)
    with_p = build_report({**frames, "perturbations": _frame()}, tmp_path / "b", n_boot=50)
    assert {"sensitivity", "sensitivity_by_kind", "sensitivity_by_task", "sensitivity_units"} <= set(with_p.csv)
    assert not any("no evidence-perturbation results yet" in m for m in with_p.missing)
    assert any("for judge run(s) fixed:" in m for m in with_p.missing)  # scored judges never perturbed
    assert any("perturbed Yes items" in f for f in with_p.figures)
    assert pd.read_csv(with_p.csv["sensitivity"])["share_no"].tolist() == pytest.approx([2 / 6])
