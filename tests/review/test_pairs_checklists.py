"""gcpc_core.review.pairs and gcpc_core.review.checklists on the demo project."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import yaml

from gcpc_core.project_frames import frames_from_store
from gcpc_core.checklist import load_rules
from gcpc_core.review.checklists import (
    check_text,
    checklist_text,
    failures_frame,
    gate_table,
    human_source,
    save_text,
    skeleton,
    stored_gate_results,
    task_table,
    versions_frame,
)
from gcpc_core.review.audit import item_views
from gcpc_core.review.pairs import (
    CHANGES,
    change_of,
    item_choice_label,
    most_informative_pair,
    pair_items,
    pair_label,
    pairs_table,
    side_by_side,
    transitions,
)
from gcpc_core.store import Store


# ---------------------------------------------------------------- pairs


@pytest.mark.parametrize(("without", "with_", "change"), [
    ("No", "Yes", "gained"), ("Yes", "No", "lost"), ("Yes", "Abstain", "to Abstain"),
    ("Abstain", "No", "from Abstain"), ("Yes", "Yes", "same"), (None, "Yes", "only one side"),
    (float("nan"), "No", "only one side"),
])
def test_change_of(without: object, with_: object, change: str) -> None:
    assert change_of(without, with_) == change and change in CHANGES


def test_pairs_and_transitions(demo: Store) -> None:
    scores = frames_from_store(demo)["scores"]
    pairs = pairs_table(scores)
    assert len(pairs) == 18 and set(pairs["judge"]) == {"probe"}  # 18 with + 18 without trials, all matched
    fails = pairs_table(scores, judge="probe", transition="FAIL→FAIL")
    assert set(fails["transition"]) <= {"FAIL→FAIL"} and len(fails) < len(pairs)
    table = transitions(pairs, threshold=0.1)
    assert table.loc[table["transition"] == "all", "n_pairs"].item() == 18
    assert "Δ" in pair_label(pairs.iloc[0]) and pairs.iloc[0]["task"] in pair_label(pairs.iloc[0])
    assert pairs_table(scores.iloc[0:0]).empty
    with pytest.raises(ValueError, match="transition"):
        pairs_table(scores, transition="PASS→MAYBE")


def _pairs(rows: list[tuple[str, str, float | None]]) -> pd.DataFrame:
    return pd.DataFrame([{"outcome_without": a, "outcome_with": b, "delta": d} for a, b, d in rows])


def test_the_most_informative_pair_is_the_largest_delta_the_outcome_hides() -> None:
    pairs = _pairs([("PASS", "PASS", 0.0), ("FAIL", "PASS", 0.9), ("FAIL", "FAIL", -0.4), ("PASS", "PASS", 0.2),
                    ("FAIL", "FAIL", None)])
    assert most_informative_pair(pairs) == 2  # |−0.4| beats 0.2; the FAIL→PASS 0.9 is visible in the outcome
    assert most_informative_pair(_pairs([("FAIL", "PASS", 0.3), ("PASS", "FAIL", -0.6), ("PASS", "PASS", None)])) == 1
    assert most_informative_pair(_pairs([("PASS", "PASS", None)])) == 0
    # the real sample's two pairs: a PASS→PASS with Δ 0 shows nothing, the FAIL→PASS with Δ 0.33 does
    assert most_informative_pair(_pairs([("PASS", "PASS", 0.0), ("FAIL", "PASS", 0.33)])) == 1
    assert most_informative_pair(_pairs([("PASS", "PASS", 0.0), ("FAIL", "PASS", 0.0)])) == 0
    assert most_informative_pair(_pairs([])) == 0
    shifted = _pairs([("PASS", "PASS", 0.1), ("FAIL", "FAIL", 0.5)]).set_axis([7, 3])  # a filtered table's index
    assert most_informative_pair(shifted) == 1


def test_the_demo_opens_on_an_unchanged_outcome_with_a_nonzero_delta(demo: Store) -> None:
    pairs = pairs_table(frames_from_store(demo)["scores"], judge="probe")
    best = pairs.iloc[most_informative_pair(pairs)]
    same = pairs[pairs["outcome_without"] == pairs["outcome_with"]]
    assert best["outcome_without"] == best["outcome_with"]
    assert abs(best["delta"]) == same["delta"].abs().max() > 0


@pytest.mark.skillsbench
def test_the_real_sample_opens_on_a_pair_with_a_changed_item(real_copy: Path) -> None:
    """The real sample's pairs: a PASS→PASS with Δ 0 and no item changed, and a FAIL→PASS that moved;
    the page opens on the one that shows something."""
    store = Store(real_copy)
    pairs = pairs_table(frames_from_store(store)["scores"], judge="probe")
    assert len(pairs) >= 2
    pair = pairs.iloc[most_informative_pair(pairs)]
    assert pair["delta"] != 0
    items = pair_items(store, pair["trajectory_id_without"], pair["trajectory_id_with"], "probe")
    assert items["changed"].any()


def test_a_changed_item_has_both_sides_evidence(demo: Store) -> None:
    pairs = pairs_table(frames_from_store(demo)["scores"], judge="probe")
    pair = pairs.iloc[most_informative_pair(pairs)]
    items = pair_items(demo, pair["trajectory_id_without"], pair["trajectory_id_with"], "probe")
    row = items[items["changed"]].iloc[0]
    without, with_ = (item_views(demo, pair[f"trajectory_id_{side}"], "probe") for side in ("without", "with"))
    views = side_by_side(without, with_, row["item_id"])
    assert views["without"].item_id == views["with"].item_id == row["item_id"]
    assert (views["without"].verdict, views["with"].verdict) == (row["verdict_without"], row["verdict_with"])
    assert any(v.citations for v in views.values())  # a decided side cites its evidence
    assert side_by_side(without, [], row["item_id"])["with"] is None
    assert item_choice_label(row) == f"{row.item_id} · {row['change']} · {row['verdict_without']} → {row['verdict_with']}"
    assert item_choice_label({**row, "verdict_with": float("nan")}).endswith("→ not judged")


def test_pair_items_side_by_side(demo: Store) -> None:
    pairs = pairs_table(frames_from_store(demo)["scores"])
    pair = pairs[pairs["transition"] != "PASS→PASS"].iloc[0]
    items = pair_items(demo, pair["trajectory_id_without"], pair["trajectory_id_with"], "probe")
    real = [r for r in demo.judging.judgments(trajectory_id=pair["trajectory_id_with"], judge="probe") if r.route != "endpoint"]
    assert list(items["item_id"][: len(real)]) == [r.item_id for r in real]
    assert (items["text"].str.len() > 0).all()
    assert (items["changed"] == (items["change"] != "same")).all()
    if "ENDPOINT" in set(items["item_id"]):  # one side failed: the endpoint is listed last
        assert items["item_id"].iloc[-1] == "ENDPOINT"
        assert items.iloc[-1]["change"] in ("only one side", "same")
    assert items["changed"].any()


# ---------------------------------------------------------------- checklists


def test_task_table_and_versions(demo: Store) -> None:
    table = task_table(demo).set_index("task")
    assert set(table.index) == {t.id for t in demo.trials.tasks()}
    assert (table["status"] == "frozen").all() and (table["frozen_version"] == 1).all()
    assert (table["trajectories"] == 12).all()
    rows = demo.checklists.list(task="sales-csv-summary", status=None)
    versions = versions_frame(rows)
    assert list(versions["version"]) == [1] and versions["sha"].str.len().eq(12).all()


def test_gate_tables() -> None:
    from gcpc_core.checklist import GateFailure

    failures = [GateFailure(item_id="C1", gate="G1", message="not verbatim"),
                GateFailure(item_id="C2", gate="G1", message="x"), GateFailure(item_id="-", gate="G5", message="y")]
    table = gate_table(failures).set_index("gate")
    assert list(table.index) == ["G1", "G2", "G3", "G4", "G5", "G6"]
    assert table.loc["G1", "failures"] == 2 and table.loc["G2", "result"] == "pass" and table.loc["G5", "result"] == "fail"
    assert list(failures_frame(failures).columns) == ["item_id", "gate", "message"]
    assert len(failures_frame([f.model_dump() for f in failures])) == 3


def test_hand_edit_is_gated_and_saved_as_a_new_version(demo: Store) -> None:
    rules = load_rules()
    task = demo.trials.get_task("sales-csv-summary")
    row = demo.checklists.latest(task.id)
    assert stored_gate_results(row, task, rules) == []
    text = checklist_text(row.checklist, source=human_source("alice b"))
    data = yaml.safe_load(text)
    assert data["source"] == "human:alice_b" and data["items"] == row.checklist["items"]
    assert check_text(text, task, rules).ok

    broken = yaml.safe_load(text)
    broken["items"][0]["task_quote"] = "a sentence the instruction never says"
    check = check_text(yaml.safe_dump(broken, sort_keys=False), task, rules)
    assert not check.ok and any(f.gate == "G1" and f.item_id == broken["items"][0]["id"] for f in check.failures)
    stored, _ = save_text(demo, yaml.safe_dump(broken, sort_keys=False), task, rules, reviewer="alice")
    assert stored is None and len(demo.checklists.list(task=task.id, status=None)) == 1

    bad_yaml = check_text("items: [unclosed", task, rules)
    assert bad_yaml.checklist is None and bad_yaml.failures[0].gate == "G6"
    dup = check_text(text + "task: again\n", task, rules)
    assert dup.checklist is None and "duplicate key" in dup.failures[0].message

    edited = yaml.safe_load(text)
    edited["items"] = list(reversed(edited["items"]))  # new content, still passes every gate
    stored, check = save_text(demo, yaml.safe_dump(edited, sort_keys=False), task, rules, reviewer="alice")
    assert check.ok and stored is not None and stored.version == 2 and stored.created_by == "app:alice"
    assert stored.source == "human:alice_b" and demo.checklists.latest(task.id).sha == stored.sha


def test_skeleton_names_every_verifier_test(demo: Store) -> None:
    rules = load_rules()
    task = demo.trials.get_task("ini-config-repair")
    text = skeleton(task, source="human:alice")
    data = yaml.safe_load(text)
    assert [i["verifier_refs"][0] for i in data["items"]] == task.test_ids
    check = check_text(text, task, rules)
    assert check.checklist is not None and {f.gate for f in check.failures} >= {"G1"}
