"""The compare page's data: which labelled judge runs there are, which two to compare by default, and
the comparison (`analysis.compare`) with links from each differing item into the item audit."""

from __future__ import annotations

import pandas as pd

from ..analysis.compare import RunComparison, compare_runs, run_key
from ..analysis.run_names import run_name
from ..project_frames import run_frames
from ..analysis.triage import audit_link
from ..store import Store

__all__ = ["compare_view", "default_pair", "differing_table", "run_choices", "run_title"]


def run_choices(store: Store) -> list[dict]:
    """Every labelled run (`store.judging.labels`) with its `key` (`judge=label`), its readable `name` (`run_name`)
    and whether it is its judge's default."""
    defaults = store.judging.default_labels()
    return [{**r.model_dump(), "key": run_key(r.judge, r.label), "name": run_name(r),
             "default": defaults.get(r.judge) == r.label} for r in store.judging.labels()]


def run_title(run: dict) -> str:
    """One line naming a run for a select box: its readable name (judge · model · prompt · date) and whether it
    is its judge's default (the full label goes in the box's tooltip, `ui.run_labels_help`)."""
    return run["name"] + (" · default" if run["default"] else "")


def default_pair(runs: list[dict]) -> tuple[str, str] | None:
    """Keys of the two runs the page opens on: a judge's default run and its most recent other run
    (runs are listed oldest first); without a judge holding two runs, the two most recent runs; None
    with fewer than two runs."""
    for run in reversed(runs):
        if run["default"]:
            other = next((r for r in reversed(runs) if r["judge"] == run["judge"] and r["key"] != run["key"]), None)
            if other is not None:
                return run["key"], other["key"]
    return (runs[-1]["key"], runs[-2]["key"]) if len(runs) >= 2 else None


def compare_view(store: Store, a: str, b: str, n_boot: int = 2000, seed: int = 0) -> RunComparison:
    """`compare_runs` of the runs keyed `a` and `b` (`judge=label`) on the project's every-run frames."""
    runs = {r["key"]: (r["judge"], r["label"]) for r in run_choices(store)}
    unknown = [k for k in (a, b) if k not in runs]
    if unknown:
        raise ValueError(f"no judge run {', '.join(unknown)} in this project")
    frames = run_frames(store, all_labels=True)
    return compare_runs(frames["scores"], frames["items"], runs[a], runs[b], n_boot=n_boot, seed=seed,
                        perturbations=frames["perturbations"])


def differing_table(result: RunComparison, base_url: str) -> pd.DataFrame:
    """The differing items with a link into the item audit (of the app at `base_url`) on run A's verdict and
    one on run B's."""
    out = result.differing.copy()
    (judge_a, label_a), (judge_b, label_b) = result.a, result.b
    out["audit_a"] = [audit_link(base_url, t, judge_a, i, label_a) for t, i in zip(out["trajectory_id"], out["item_id"])]
    out["audit_b"] = [audit_link(base_url, t, judge_b, i, label_b) for t, i in zip(out["trajectory_id"], out["item_id"])]
    return out
