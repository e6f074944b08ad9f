"""Verifier-grounded item accuracy: node ids, CTRF truth, confusion matrix by hand."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from gcpc_core.analysis import (
    VERIFIER_BASES,
    assertion_truth,
    confusion_table,
    ctrf_node_status,
    ctrf_pass_fraction,
    decided_by_verifier,
    item_accuracy_table,
    node_id,
    same_node,
)

T = "test_outputs.py::TestX::"


def test_node_id_strips_params_and_directories() -> None:
    assert node_id("test_outputs.py::TestX::test_y[case-1]") == "test_outputs.py::TestX::test_y"
    assert node_id("tests/test_outputs.py::test_y") == "test_outputs.py::test_y"
    assert node_id("test_outputs.py::test_y[a/b::c]") == "test_outputs.py::test_y"


def test_parametrized_results_fold_into_one_node() -> None:
    ctrf = pd.DataFrame({"trajectory_id": ["t1"] * 5, "test": [T + "p[1]", T + "p[2]", T + "q[1]", T + "q[2]", T + "s"],
                         "status": ["passed", "passed", "passed", "failed", "skipped"]})
    st = ctrf_node_status(ctrf).set_index("node_id")["status"]
    assert st.to_dict() == {T + "p": "passed", T + "q": "failed", T + "s": "unknown"}


def test_file_less_ctrf_names_match_their_class_and_test() -> None:
    """opencode's runner writes `::TestX::a` for `tests/test_outputs.py::TestX::a`; the item is still decided."""
    assert same_node(node_id("::TestX::a[1]"), node_id(T + "a")) and not same_node("::TestX::b", T + "a")
    assert not same_node(node_id("other.py::TestX::a"), node_id(T + "a"))
    items = pd.DataFrame([("gcpc", "t1", "C1", "assertion", "Yes", [T + "a"]),
                          ("gcpc", "t1", "C2", "assertion", "Yes", [T + "a", T + "b"])],
                         columns=["judge", "trajectory_id", "item_id", "route", "verdict_raw", "verifier_refs"])
    ctrf = pd.DataFrame({"trajectory_id": "t1", "test": ["::TestX::a[1]", "::TestX::a[2]", "::TestX::b"],
                         "status": ["passed", "passed", "failed"]})
    t = assertion_truth(items.assign(task="task-a"), ctrf).set_index("item_id")
    assert t["truth"].to_dict() == {"C1": "Yes", "C2": "No"} and set(t["basis"]) == {"ctrf"}


ITEMS = pd.DataFrame([
    # judge, traj, item, route, raw verdict, refs
    ("gcpc", "t1", "C1", "assertion", "Yes", [T + "a"]),         # truth Yes → correct
    ("gcpc", "t1", "C2", "assertion", "Yes", [T + "b"]),         # truth No  → wrong
    ("gcpc", "t1", "C3", "assertion", "No", [T + "b", T + "a"]),  # truth No (one failed) → correct
    ("gcpc", "t1", "C4", "assertion", "Abstain", [T + "a"]),     # truth Yes → abstain
    ("gcpc", "t1", "C5", "assertion", "No", [T + "c"]),          # truth Yes (param c[1], c[2] passed) → wrong
    ("gcpc", "t1", "C6", "assertion", "No", [T + "missing"]),    # not in CTRF → not comparable
    ("gcpc", "t1", "C7", "assertion", "Yes", []),                # no refs
    ("gcpc", "t1", "C8", "generated", "Yes", []),                # not an assertion item
    ("gcpc", "t2", "C1", "assertion", "Yes", f'["{T}a"]'),       # refs as a JSON string; t2 has no CTRF
], columns=["judge", "trajectory_id", "item_id", "route", "verdict_raw", "verifier_refs"]).assign(task="task-a")
CTRF = pd.DataFrame({"trajectory_id": "t1", "test": ["tests/" + T + "a", T + "b", T + "c[1]", T + "c[2]"],
                     "status": ["passed", "failed", "passed", "passed"]})


def test_truth_and_basis() -> None:
    t = assertion_truth(ITEMS, CTRF).set_index(["trajectory_id", "item_id"])
    assert t.loc[("t1", "C1"), "truth"] == "Yes" and t.loc[("t1", "C3"), "truth"] == "No"
    assert t.loc[("t1", "C5"), "truth"] == "Yes"
    assert t.loc[("t1", "C6"), "basis"] == "refs not decided by CTRF" and pd.isna(t.loc[("t1", "C6"), "truth"])
    assert t.loc[("t1", "C7"), "basis"] == "no verifier refs"
    assert t.loc[("t2", "C1"), "basis"] == "no CTRF report"
    assert ("t1", "C8") not in t.index


def test_confusion_matrix_and_accuracy_by_hand() -> None:
    truth = assertion_truth(ITEMS, CTRF)
    cm = confusion_table(truth).set_index("truth")[["Yes", "No", "Abstain"]]
    # truth Yes: C1 Yes, C4 Abstain, C5 No; truth No: C2 Yes, C3 No
    assert cm.loc["Yes"].tolist() == [1, 1, 1] and cm.loc["No"].tolist() == [1, 1, 0]
    acc = item_accuracy_table(truth).iloc[0]
    assert (acc["n_assertion_items"], acc["n_comparable"], acc["n_decided"]) == (8, 5, 4)  # t1's C1–C7 and t2's C1
    assert acc["accuracy"] == pytest.approx(2 / 4)
    assert acc["abstain_rate"] == pytest.approx(1 / 5)
    assert acc["recall_yes"] == pytest.approx(1 / 2) and acc["recall_no"] == pytest.approx(1 / 2)
    assert (acc["n_truth_yes"], acc["n_truth_no"]) == (3, 2)
    by_task = item_accuracy_table(truth, by=("judge", "task"))
    assert by_task[["judge", "task"]].values.tolist() == [["gcpc", "task-a"]]


def test_all_abstain_is_noted() -> None:
    truth = assertion_truth(ITEMS.assign(verdict_raw="Abstain"), CTRF)
    acc = item_accuracy_table(truth).iloc[0]
    assert np.isnan(acc["accuracy"]) and acc["abstain_rate"] == 1.0 and "Abstain" in acc["note"]


def test_ctrf_pass_fraction() -> None:
    f = ctrf_pass_fraction(pd.concat([CTRF, pd.DataFrame({"trajectory_id": ["t3"], "test": [T + "z"],
                                                           "status": ["skipped"]})])).set_index("trajectory_id")
    assert (f.loc["t1", "n_tests"], f.loc["t1", "n_passed"]) == (3, 2)  # a, b, c (c's params folded)
    assert f.loc["t1", "ctrf_pass_fraction"] == pytest.approx(2 / 3)
    assert "t3" not in f.index  # only skipped tests: nothing decided


def test_a_cited_verifier_script_takes_the_official_outcome_unless_the_ctrf_lists_it() -> None:
    """A task whose verifier is a plain script has one node for it (`tests/verify.py`); it passes when the
    verifier does, so its truth is the official outcome, or the CTRF report's result when it lists it."""
    items = pd.DataFrame([
        ("gcpc", "s1", "S1", "assertion", "Yes", ["tests/verify.py"], "PASS"),  # no CTRF: PASS → Yes, correct
        ("gcpc", "s2", "S1", "assertion", "Yes", ["tests/verify.py"], "FAIL"),  # FAIL → No: wrong
        ("gcpc", "s3", "S1", "assertion", "No", ["tests/verify.py"], "FAIL"),   # the CTRF lists it, passed → Yes
        ("gcpc", "s3", "S2", "assertion", "No", [T + "a"], "FAIL"),  # a pytest ref missing from the CTRF: undecided
    ], columns=["judge", "trajectory_id", "item_id", "route", "verdict_raw", "verifier_refs", "outcome"])
    items = items.assign(task="script-task")
    ctrf = pd.DataFrame({"trajectory_id": ["s3"], "test": ["verify.py"], "status": ["passed"]})
    t = assertion_truth(items, ctrf).set_index(["trajectory_id", "item_id"])
    assert t.loc[("s1", "S1"), ["truth", "basis"]].tolist() == ["Yes", "official outcome"]
    assert t.loc[("s2", "S1"), ["truth", "basis"]].tolist() == ["No", "official outcome"]
    assert t.loc[("s3", "S1"), ["truth", "basis"]].tolist() == ["Yes", "ctrf"]
    assert t.loc[("s3", "S2"), "basis"] == "refs not decided by CTRF"
    assert set(VERIFIER_BASES) == {"ctrf", "official outcome"}
    assert decided_by_verifier(t).tolist() == [True, True, True, False]
    acc = item_accuracy_table(assertion_truth(items, ctrf)).iloc[0]
    assert (acc["n_comparable"], acc["n_decided"]) == (3, 3)
    assert acc["accuracy"] == pytest.approx(1 / 3)  # s1 right; s2 and s3 wrong
    # with no CTRF report at all (a script verifier writes none), the outcome still decides
    empty = pd.DataFrame(columns=["trajectory_id", "test", "status"])
    assert assertion_truth(items, empty)["basis"].tolist() == ["official outcome"] * 3 + ["no CTRF report"]
    # without an outcome column nothing is guessed
    assert set(assertion_truth(items.drop(columns="outcome"), empty)["basis"]) == {"no CTRF report"}
