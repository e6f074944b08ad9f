"""Verifier-grounded item accuracy: is an item verdict right where the verifier itself tested it?

Reads **items** (``trajectory_id, task, judge, item_id, route, verdict_raw, verifier_refs``) and
**ctrf** (``trajectory_id, test, status``); see `frames`.

Only assertion items carry verifier refs. Their *truth* comes from the trajectory's CTRF report:
a CTRF name maps to a node id by dropping a ``[param]`` suffix and any directory before the file
name. Some runners (opencode's) name tests without their file (``::TestFlow::test_metric``): such a
name matches the ref of that class and test in whichever verifier file (`same_node`). A node is *passed* when all its results passed, *failed* when any failed, otherwise
(skipped, pending, …) unknown. A ref to a whole verifier script (``tests/test_outputs.py`` of a task
with no pytest test node, `models.is_script_ref`) that the CTRF report does not list is decided by
the item's official ``outcome`` instead: the verifier's result is that script's. An item is true-No
as soon as one of its refs failed, true-Yes when every ref passed; otherwise it is not comparable
(``basis`` says why; `VERIFIER_BASES` are the comparable ones). The judge's **raw**
verdict (before postprocessing — after it, PASS propagation would make it right by
construction) is compared with the truth: accuracy over decided verdicts, Abstain rate, recall of
each truth class, confusion matrix (`sklearn.metrics.confusion_matrix`).

`ctrf_pass_fraction` gives the share of a trajectory's decided tests that passed: a reference
score to set beside the judges (it is the verifier's own signal, so near-perfect AUC is expected).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

import numpy as np
import pandas as pd
from sklearn.metrics import confusion_matrix

from ..models import is_script_ref
from .frames import require_columns

__all__ = ["VERDICTS", "VERIFIER_BASES", "assertion_truth", "confusion_table", "ctrf_node_status",
           "ctrf_pass_fraction", "decided_by_verifier", "item_accuracy_table", "node_id", "same_node"]

VERDICTS = ("Yes", "No", "Abstain")
BASIS_CTRF = "ctrf"
BASIS_OUTCOME = "official outcome"
VERIFIER_BASES = (BASIS_CTRF, BASIS_OUTCOME)
"""The bases on which `assertion_truth` decides an item: every cited test's CTRF result, or — for a
cited verifier script the CTRF report does not list — the official outcome (the script's own result)."""
_PARAM = re.compile(r"\[.*\]$")


def node_id(test: str) -> str:
    """CTRF test name → verifier node id: ``tests/test_outputs.py::T::t[x]`` → ``test_outputs.py::T::t``."""
    head, sep, rest = _PARAM.sub("", str(test)).partition("::")
    return head.rsplit("/", 1)[-1] + sep + rest


def without_file(node: str) -> str:
    """A node id with its file taken off (``test_outputs.py::T::t`` → ``::T::t``), as file-less CTRF names read."""
    head, sep, rest = node.partition("::")
    return sep + rest if sep else node


def same_node(name: str, node: str) -> bool:
    """Whether CTRF name `name` is verifier node `node` (both as node ids, or both with their `[param]`):
    equal, or a file-less name (``::T::t``, as opencode's runner writes them) of the same class and test."""
    return name == node or (name.startswith("::") and name == without_file(node))


def _refs(value: object) -> list[str]:
    """Verifier refs as a list, whether stored as a list/array or as a JSON list string."""
    if isinstance(value, str):
        return json.loads(value) if value.lstrip().startswith("[") else [value]
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return []
    return list(value)


def _node_ids(names: pd.Series) -> np.ndarray:
    """`node_id` of every name, computed once per distinct name (reports repeat the same few tests)."""
    codes, uniques = pd.factorize(names)
    return np.array([node_id(u) for u in uniques], dtype=object)[codes] if len(codes) else np.array([], dtype=object)


def ctrf_node_status(ctrf: pd.DataFrame) -> pd.DataFrame:
    """One row per (trajectory_id, node_id) with status passed / failed / unknown."""
    require_columns(ctrf, ("trajectory_id", "test", "status"), "ctrf")
    status = ctrf["status"].astype(str).str.lower()
    c = pd.DataFrame({"trajectory_id": ctrf["trajectory_id"].to_numpy(), "node_id": _node_ids(ctrf["test"]),
                      "failed": (status == "failed").to_numpy(), "passed": (status == "passed").to_numpy()})
    agg = c.groupby(["trajectory_id", "node_id"], sort=True).agg(failed=("failed", "any"), passed=("passed", "all"))
    agg["status"] = np.where(agg["failed"], "failed", np.where(agg["passed"], "passed", "unknown"))
    return agg[["status"]].reset_index()


def assertion_truth(items: pd.DataFrame, ctrf: pd.DataFrame) -> pd.DataFrame:
    """Every assertion item with its raw verdict and, where the verifier decides it, the truth (``Yes``/``No``).

    Columns: ``judge, task, trajectory_id, item_id, verdict_raw, n_refs, truth, basis`` where basis
    is ``ctrf`` or ``official outcome`` (comparable: `VERIFIER_BASES`), ``no verifier refs``, ``no CTRF
    report`` or ``refs not decided by CTRF`` (a ref missing from the report, or only skipped). A cited
    verifier script missing from the CTRF report (or with no report) takes the item's ``outcome``
    column when `items` has one: PASS passed, FAIL failed.
    """
    require_columns(items, ("trajectory_id", "task", "judge", "item_id", "route", "verdict_raw", "verifier_refs"), "items")
    if not len(ctrf):  # no report at all (a script verifier writes none): cited scripts still have their outcome
        ctrf = pd.DataFrame(columns=["trajectory_id", "test", "status"])
    columns = ["judge", "task", "trajectory_id", "item_id", "verdict_raw", "verifier_refs"]
    a = items.loc[items["route"] == "assertion", columns + (["outcome"] if "outcome" in items else [])]
    a = a.reset_index(drop=True)
    a["ref"] = a.pop("verifier_refs").map(_refs)
    a["n_refs"] = a["ref"].map(len).astype(int)
    status = ctrf_node_status(ctrf).rename(columns={"node_id": "ref"})
    refs = a[["trajectory_id", "ref"]].explode("ref").dropna(subset=["ref"]).reset_index()
    script = refs["ref"].map(is_script_ref).astype(bool).to_numpy()
    refs["ref"] = _node_ids(refs["ref"])
    refs = refs.merge(status, on=["trajectory_id", "ref"], how="left")
    fileless = status[status["ref"].str.startswith("::")]
    if len(fileless):  # a runner that names tests without their file: match on class and test
        missing = refs["status"].isna()
        keyed = refs.loc[missing, ["trajectory_id", "ref"]].assign(ref=lambda d: d["ref"].map(without_file))
        refs.loc[missing, "status"] = keyed.merge(fileless, on=["trajectory_id", "ref"], how="left")["status"].to_numpy()
    outcome = a["outcome"].reindex(refs["index"]).to_numpy() if "outcome" in a else np.full(len(refs), None)
    by_outcome = script & refs["status"].isna().to_numpy() & np.isin(outcome, ("PASS", "FAIL"))
    refs["status"] = np.where(by_outcome, np.where(outcome == "PASS", "passed", "failed"), refs["status"])
    refs = refs.assign(failed=refs["status"] == "failed", passed=refs["status"] == "passed", by_outcome=by_outcome)
    per_item = refs.groupby("index").agg(failed=("failed", "any"), passed=("passed", "all"),
                                         by_outcome=("by_outcome", "any"))
    a = a.drop(columns=["ref", *(["outcome"] if "outcome" in a else [])]).join(per_item)
    failed, passed = a["failed"].eq(True).to_numpy(), a["passed"].eq(True).to_numpy()
    truth = np.where(failed, "No", np.where(passed, "Yes", None))
    basis = np.select(
        [a["n_refs"].to_numpy() == 0, a["by_outcome"].eq(True).to_numpy() & (failed | passed),
         ~a["trajectory_id"].isin(set(status["trajectory_id"])).to_numpy(), failed | passed],
        ["no verifier refs", BASIS_OUTCOME, "no CTRF report", BASIS_CTRF], default="refs not decided by CTRF")
    a = a.assign(truth=truth, basis=basis)
    return a[["judge", "task", "trajectory_id", "item_id", "verdict_raw", "n_refs", "truth", "basis"]]


def decided_by_verifier(truth: pd.DataFrame) -> pd.Series:
    """The rows of an `assertion_truth` frame whose truth the verifier decided (`VERIFIER_BASES`)."""
    return truth["basis"].isin(VERIFIER_BASES)


def item_accuracy_table(truth: pd.DataFrame, by: Sequence[str] = ("judge",)) -> pd.DataFrame:
    """Accuracy of raw verdicts over decided items, Abstain rate and per-class recall, grouped by `by`.

    Over comparable items (`VERIFIER_BASES`): ``accuracy`` = correct / decided (Yes or No),
    ``abstain_rate`` = Abstain / comparable, ``recall_no`` = share of items whose test failed
    that the judge called No among decided ones (does it catch what the verifier caught?),
    ``recall_yes`` likewise for passed tests. NaN where the denominator is zero, with a note.
    """
    by = list(by)
    comparable = decided_by_verifier(truth).to_numpy()
    raw, t = truth["verdict_raw"].to_numpy(), truth["truth"].to_numpy()
    decided = comparable & (raw != "Abstain")
    flags = pd.DataFrame({
        "n_assertion_items": 1, "n_comparable": comparable, "n_decided": decided, "correct": decided & (raw == t),
        "n_truth_yes": comparable & (t == "Yes"), "n_truth_no": comparable & (t == "No"),
        "decided_yes": decided & (t == "Yes"), "said_yes": decided & (t == "Yes") & (raw == "Yes"),
        "decided_no": decided & (t == "No"), "said_no": decided & (t == "No") & (raw == "No"),
    })
    g = flags.groupby([truth[c].to_numpy() for c in by], sort=True).sum().astype(int)
    g.index.names = by
    with np.errstate(invalid="ignore", divide="ignore"):
        g["accuracy"] = g["correct"] / g["n_decided"].replace(0, np.nan)
        g["abstain_rate"] = 1 - g["n_decided"] / g["n_comparable"].replace(0, np.nan)
        g["recall_yes"] = g["said_yes"] / g["decided_yes"].replace(0, np.nan)
        g["recall_no"] = g["said_no"] / g["decided_no"].replace(0, np.nan)
    g["note"] = np.select([g["n_comparable"] == 0, g["n_decided"] == 0],
                          ["no assertion item is decided by CTRF", "every comparable verdict is Abstain"], default="")
    cols = ["n_assertion_items", "n_comparable", "n_decided", "accuracy", "abstain_rate", "n_truth_yes",
            "n_truth_no", "recall_yes", "recall_no", "note"]
    return g[cols].reset_index()


def confusion_table(truth: pd.DataFrame) -> pd.DataFrame:
    """Per judge and truth class, counts of raw verdicts Yes / No / Abstain (comparable items only)."""
    c = truth[decided_by_verifier(truth)]
    rows = []
    for judge, g in c.groupby("judge", sort=True):
        m = confusion_matrix(g["truth"], g["verdict_raw"], labels=list(VERDICTS))
        rows += [{"judge": judge, "truth": cls, **dict(zip(VERDICTS, map(int, m[k])))}
                 for k, cls in enumerate(("Yes", "No"))]
    return pd.DataFrame(rows, columns=["judge", "truth", *VERDICTS])


def ctrf_pass_fraction(ctrf: pd.DataFrame) -> pd.DataFrame:
    """Per trajectory: decided tests (passed or failed, per node), passed, and their ratio."""
    s = ctrf_node_status(ctrf)
    s = s[s["status"] != "unknown"]
    g = s.assign(passed=s["status"] == "passed").groupby("trajectory_id", sort=True)["passed"]
    out = pd.DataFrame({"n_tests": g.size(), "n_passed": g.sum().astype(int)}).reset_index()
    out["ctrf_pass_fraction"] = out["n_passed"] / out["n_tests"]
    return out
