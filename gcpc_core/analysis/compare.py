"""Two labelled judge runs side by side: outcome discrimination and item-level agreement.

A project may hold several labelled runs of one judge kind (another model, prompt or rules version;
see `store.judging.labels`). `compare_runs` is pure over the **scores** and **items** frames (see
`frames`) with a ``label`` column, holding at least the two runs:

* AUC of run A and run B against official PASS on the trajectories both scored, with the paired
  ΔAUC = AUC(A) − AUC(B) and its task-clustered interval — the very `discrimination.bootstrap_auc`
  draws, `auc_table` and `delta_auc_table` the report uses, with each run standing in for a judge;
* item-level agreement of the two runs' **raw** verdicts (what each judge said, before the official
  outcome overwrote anything) on the items both judged: the share of equal verdicts and Cohen's κ
  (`sklearn.metrics.cohen_kappa_score` over Yes / No / Abstain), with the cross-table;
* every item where the verdicts differ;
* each run's evidence sensitivity (`sensitivity.sensitivity_table` over the perturbations of each run,
  when `perturb --run` ran on it): how often its Yes verdicts fall once the cited evidence is changed.

An item pairs only when both runs judged it from the same checklist (same sha): an item id of two
checklist versions may name different requirements. Items paired across versions are counted and
left out, never compared.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from sklearn.metrics import cohen_kappa_score

from ..models import ENDPOINT_ITEM_ID
from .bootstrap import few_clusters_note
from .discrimination import auc_table, bootstrap_auc, delta_auc_table
from .frames import require_columns
from .sensitivity import sensitivity_table

__all__ = ["DIFFER_COLUMNS", "VERDICT_ORDER", "RunComparison", "compare_runs", "run_key"]

VERDICT_ORDER = ("Yes", "No", "Abstain")
DIFFER_COLUMNS = ["trajectory_id", "task", "item_id", "route", "outcome", "verdict_a", "verdict_b"]


def run_key(judge: str, label: str) -> str:
    """One run's name in tables: `judge=label` (two kinds may use the same label)."""
    return f"{judge}={label}"


@dataclass(frozen=True)
class RunComparison:
    """What `compare_runs` found; `headline()` says it in one paragraph."""

    a: tuple[str, str]
    b: tuple[str, str]
    auc: pd.DataFrame
    """`auc_table` rows for A then B (``judge`` holds the run key), on the trajectories both scored."""
    delta: pd.DataFrame
    """One `delta_auc_table` row: ΔAUC = AUC(A) − AUC(B), its interval and the share of draws > 0."""
    n_items: int
    """Items both runs judged from the same checklist (endpoint excluded)."""
    n_agree: int
    kappa: float
    """Cohen's κ of the raw verdicts; NaN when undefined (no items, or both runs use one verdict only)."""
    confusion: pd.DataFrame
    """Counts of (verdict A, verdict B) over the paired items; rows A, columns B, in `VERDICT_ORDER`."""
    differing: pd.DataFrame
    """The paired items whose raw verdicts differ (`DIFFER_COLUMNS`)."""
    n_only_a: int
    n_only_b: int
    n_checklist_mismatch: int
    notes: list[str] = field(default_factory=list)
    sensitivity: pd.DataFrame = field(default_factory=pd.DataFrame)
    """`sensitivity_table` rows of run A then run B (those with perturbation results; empty when neither)."""

    @property
    def agreement(self) -> float:
        return self.n_agree / self.n_items if self.n_items else float("nan")

    def headline(self, names: Mapping[str, str] | None = None) -> str:
        """The comparison in one paragraph; `names` (run key → `run_name`) names the runs for a reader."""
        ka, kb = run_key(*self.a), run_key(*self.b)
        auc = dict(zip(self.auc["judge"], self.auc["auc"]))
        d = self.delta.iloc[0] if len(self.delta) else None
        names = names or {}
        parts = [f"A = {names.get(ka, ka)}; B = {names.get(kb, kb)}."]
        if d is not None:
            parts.append(f"On {int(d['n'])} trajectories both scored ({int(d['n_tasks'])} tasks): AUC A {_f(auc.get(ka))}, "
                         f"B {_f(auc.get(kb))}; ΔAUC (A − B) {_f(d['delta_auc'], signed=True)} "
                         f"[{_f(d['ci_low'], signed=True)}, {_f(d['ci_high'], signed=True)}]"
                         + (f" ({flag})." if (flag := few_clusters_note(int(d["n_tasks"]))) else "."))
        parts.append(f"Items both judged: {self.n_items}; same raw verdict {self.n_agree} "
                     f"({_pct(self.agreement)}), Cohen's κ {_f(self.kappa)}; {len(self.differing)} differ.")
        return " ".join(parts)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: runs, AUC rows, ΔAUC, agreement, cross-table and the differing items."""
        return {
            "a": {"judge": self.a[0], "label": self.a[1]}, "b": {"judge": self.b[0], "label": self.b[1]},
            "auc": _records(self.auc), "delta": _records(self.delta)[0] if len(self.delta) else None,
            "agreement": {"n_items": self.n_items, "n_agree": self.n_agree, "agreement": _num(self.agreement),
                          "kappa": _num(self.kappa), "n_differ": len(self.differing), "n_only_a": self.n_only_a,
                          "n_only_b": self.n_only_b, "n_checklist_mismatch": self.n_checklist_mismatch},
            "confusion": {a: {b: int(n) for b, n in row.items()} for a, row in self.confusion.iterrows()},
            "differing": _records(self.differing), "sensitivity": _records(self.sensitivity), "notes": self.notes,
            "headline": self.headline(),
        }


def _num(x: Any) -> float | None:
    return None if x is None or (isinstance(x, float) and np.isnan(x)) else float(x)


def _records(frame: pd.DataFrame) -> list[dict]:
    return [{k: (_num(v) if isinstance(v, (float, np.floating)) else v.item() if isinstance(v, np.generic) else v)
             for k, v in row.items()} for row in frame.to_dict("records")]


def _f(x: Any, *, signed: bool = False) -> str:
    if x is None or pd.isna(x):
        return "n/a"
    return f"{x:+.3f}" if signed else f"{x:.3f}"


def _pct(x: float) -> str:
    return "n/a" if np.isnan(x) else f"{100 * x:.1f}%"


def _run(frame: pd.DataFrame, run: tuple[str, str], name: str) -> pd.DataFrame:
    rows = frame[(frame["judge"] == run[0]) & (frame["label"] == run[1])]
    if rows.empty:
        raise ValueError(f"the {name} frame has no rows of run {run_key(*run)}")
    return rows


def compare_runs(
    scores: pd.DataFrame, items: pd.DataFrame, a: tuple[str, str], b: tuple[str, str], *,
    n_boot: int = 10_000, seed: int = 0, ci: float = 0.95, perturbations: pd.DataFrame | None = None,
) -> RunComparison:
    """Compare run `a` with run `b` (each `(judge, label)`); see the module docstring.

    Raises ValueError when a run has no rows or `a` is `b`; FrameContractError for a frame lacking a column.
    """
    if tuple(a) == tuple(b):
        raise ValueError(f"compare needs two different runs, got {run_key(*a)} twice")
    require_columns(scores, ("trajectory_id", "task", "judge", "label", "outcome", "partial_credit"), "scores")
    require_columns(items, ("trajectory_id", "task", "judge", "label", "item_id", "route", "verdict_raw", "outcome"),
                    "items")
    ka, kb = run_key(*a), run_key(*b)
    both = pd.concat([_run(scores, a, "scores").assign(judge=ka), _run(scores, b, "scores").assign(judge=kb)])
    boot = bootstrap_auc(both, [ka, kb], n_boot=n_boot, seed=seed)
    auc, delta = auc_table(boot, ci=ci), delta_auc_table(boot, [(ka, kb)], ci=ci)

    keep = ["trajectory_id", "task", "item_id", "route", "outcome", "verdict_raw"]
    if "checklist_sha" in items.columns:
        keep.append("checklist_sha")
    ia, ib = (_run(items, run, "items") for run in (a, b))
    ia, ib = (f[f["item_id"] != ENDPOINT_ITEM_ID][keep] for f in (ia, ib))
    paired = ia.merge(ib, on=["trajectory_id", "item_id"], how="outer", suffixes=("_a", "_b"), indicator=True)
    n_only_a = int((paired["_merge"] == "left_only").sum())
    n_only_b = int((paired["_merge"] == "right_only").sum())
    paired = paired[paired["_merge"] == "both"]
    mismatch = np.zeros(len(paired), dtype=bool)
    if "checklist_sha" in items.columns:
        sha_a, sha_b = paired["checklist_sha_a"], paired["checklist_sha_b"]
        mismatch = (sha_a.notna() & sha_b.notna() & (sha_a != sha_b)).to_numpy()
    paired = paired[~mismatch].sort_values(["task_a", "trajectory_id", "item_id"], kind="stable")
    va, vb = paired["verdict_raw_a"].to_numpy(), paired["verdict_raw_b"].to_numpy()
    notes = []
    kappa = float("nan")
    if len(paired) and len(set(va) | set(vb)) > 1:
        kappa = float(cohen_kappa_score(va, vb, labels=list(VERDICT_ORDER)))
    elif len(paired):
        notes.append("both runs gave every paired item the same single verdict: Cohen's κ is undefined")
    else:
        notes.append("no item was judged by both runs from the same checklist")
    if mismatch.any():
        notes.append(f"{int(mismatch.sum())} items were judged from different checklist versions and are not compared")
    confusion = (pd.crosstab(pd.Categorical(va, VERDICT_ORDER), pd.Categorical(vb, VERDICT_ORDER), dropna=False)
                 .reindex(index=list(VERDICT_ORDER), columns=list(VERDICT_ORDER), fill_value=0))
    confusion.index.name, confusion.columns.name = "A", "B"
    differ = paired[va != vb]
    differing = pd.DataFrame({"trajectory_id": differ["trajectory_id"], "task": differ["task_a"],
                              "item_id": differ["item_id"], "route": differ["route_a"], "outcome": differ["outcome_a"],
                              "verdict_a": differ["verdict_raw_a"], "verdict_b": differ["verdict_raw_b"]},
                             columns=DIFFER_COLUMNS).reset_index(drop=True)
    sensitivity = pd.DataFrame()
    if perturbations is not None and len(perturbations):
        runs = [p for p in (perturbations[(perturbations["judge"] == j) & (perturbations["label"] == lab)]
                            for j, lab in (a, b)) if len(p)]
        if runs:
            sensitivity = sensitivity_table(pd.concat(runs), n_boot=n_boot, seed=seed, ci=ci)
            order = {run: k for k, run in enumerate((tuple(a), tuple(b)))}
            sensitivity = sensitivity.sort_values(
                "judge", key=lambda _: [order[r] for r in zip(sensitivity["judge"], sensitivity["label"])],
                kind="stable").reset_index(drop=True)
    return RunComparison(a=tuple(a), b=tuple(b), auc=auc, delta=delta, n_items=len(paired),
                         n_agree=int((va == vb).sum()), kappa=kappa, confusion=confusion, differing=differing,
                         n_only_a=n_only_a, n_only_b=n_only_b, n_checklist_mismatch=int(mismatch.sum()), notes=notes,
                         sensitivity=sensitivity)
