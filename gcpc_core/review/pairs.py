"""The skill-pairs page's data: matched with/without-Skills pairs, and one pair item by item.

Pairs, Δ and transitions come from `analysis.skills` over the loader's scores frame; this module
adds what a reviewer browsing one pair needs: which pair to open first, both sides' verdicts per item
with the change named, and a changed item's evidence from both sides.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from ..analysis.skills import PAIR_KEY, TRANSITIONS, matched_pairs, transition_table
from ..models import ENDPOINT_ITEM_ID
from ..store import Store
from .audit import ItemView, checklist_items

__all__ = ["CHANGES", "change_of", "item_choice_label", "most_informative_pair", "pair_items", "pair_label",
           "pairs_table", "side_by_side", "transitions"]

CHANGES = ("gained", "lost", "to Abstain", "from Abstain", "same", "only one side")
"""How an item's verdict moved from the without-Skills side to the with-Skills side."""


def change_of(without: object, with_: object) -> str:
    """`gained` (No→Yes), `lost` (Yes→No), to/from Abstain, `same`, or `only one side` judged it."""
    if not isinstance(without, str) or not isinstance(with_, str):
        return "only one side"
    if without == with_:
        return "same"
    if with_ == "Abstain":
        return "to Abstain"
    if without == "Abstain":
        return "from Abstain"
    return "gained" if with_ == "Yes" else "lost"


def pairs_table(scores: pd.DataFrame, *, judge: str | None = None, transition: str | None = None) -> pd.DataFrame:
    """Matched pairs (`analysis.matched_pairs`), optionally for one judge and one transition."""
    if scores is None or scores.empty:
        return pd.DataFrame(columns=["judge", *PAIR_KEY, "trajectory_id_without", "trajectory_id_with",
                                     "outcome_without", "outcome_with", "score_without", "score_with", "delta",
                                     "transition"])
    pairs = matched_pairs(scores)
    if judge is not None:
        pairs = pairs[pairs["judge"] == judge]
    if transition is not None:
        if transition not in TRANSITIONS:
            raise ValueError(f"unknown transition {transition!r}; one of {TRANSITIONS}")
        pairs = pairs[pairs["transition"] == transition]
    return pairs.reset_index(drop=True)


def transitions(pairs: pd.DataFrame, *, threshold: float = 0.10) -> pd.DataFrame:
    """Per judge and transition: counts, median/mean Δ, shares improving and regressing."""
    return transition_table(pairs, threshold=threshold)


def most_informative_pair(pairs: pd.DataFrame) -> int:
    """Position (0-based) of the pair to open first: the largest |Δ| among pairs whose official outcome
    did not change (PASS→PASS, FAIL→FAIL), where a Skill's effect is invisible to the binary outcome;
    when every such pair has Δ 0 (nothing to see), the largest |Δ| of any pair; 0 when no pair has a
    Δ other than 0."""
    if pairs.empty:
        return 0
    size = pd.to_numeric(pairs["delta"], errors="coerce").abs().reset_index(drop=True)
    same = (pairs["outcome_without"] == pairs["outcome_with"]).reset_index(drop=True)
    moved = size > 0  # NaN compares False: a pair without a Δ is never chosen for it
    for candidates in (size[same & moved], size[moved]):
        if not candidates.empty:
            return int(candidates.idxmax())
    return 0


def pair_label(row: pd.Series | dict) -> str:
    """One line naming a pair: task, agent, model, trial index, transition and Δ."""
    delta = row["delta"]
    shown = "n/a" if delta is None or pd.isna(delta) else f"{delta:+.2f}"
    return (f"{row['task']} · {row['agent']} · {row['model']} · #{row['trial_index']} · "
            f"{row['transition']} · Δ {shown}")


def pair_items(store: Store, without_id: str, with_id: str, judge: str) -> pd.DataFrame:
    """Both sides of a pair item by item (checklist order; endpoint last): raw and postprocessed
    verdicts per side and the change of the postprocessed verdict, which is what scores count."""
    sides, texts = {}, {}
    for side, traj_id in (("without", without_id), ("with", with_id)):
        rows = store.judging.judgments(judge=judge, trajectory_id=traj_id)
        if rows:
            texts.update({k: v.text for k, v in checklist_items(store, rows, judge, rows[0].task).items()})
        sides[side] = pd.DataFrame(
            [{"item_id": r.item_id, "route": r.route, "position": r.position,
              f"raw_{side}": r.verdict_raw, f"verdict_{side}": r.verdict, f"reason_{side}": r.reason}
             for r in rows],
            columns=["item_id", "route", "position", f"raw_{side}", f"verdict_{side}", f"reason_{side}"])
    merged = sides["without"].merge(sides["with"], on="item_id", how="outer", suffixes=("", "_w"))
    merged["route"] = merged["route"].fillna(merged.pop("route_w"))
    merged["position"] = merged["position"].fillna(merged.pop("position_w"))
    merged["change"] = [change_of(a, b) for a, b in zip(merged["verdict_without"], merged["verdict_with"])]
    merged["changed"] = merged["change"] != "same"
    merged["is_endpoint"] = merged["item_id"] == ENDPOINT_ITEM_ID
    merged = merged.sort_values(["is_endpoint", "position", "item_id"], kind="stable").drop(columns="is_endpoint")
    merged["text"] = [texts.get(i, "official outcome (endpoint)" if i == ENDPOINT_ITEM_ID else "") for i in merged["item_id"]]
    return merged[["item_id", "route", "text", "verdict_without", "verdict_with", "change", "changed", "raw_without",
                   "raw_with", "reason_without", "reason_with"]].reset_index(drop=True)


def item_choice_label(row: pd.Series | dict) -> str:
    """One line naming an item of a pair: id, its change and the scored verdicts (without → with)."""
    without, with_ = (v if isinstance(v, str) else "not judged" for v in (row["verdict_without"], row["verdict_with"]))
    return f"{row['item_id']} · {row['change']} · {without} → {with_}"


def side_by_side(without: Sequence[ItemView], with_: Sequence[ItemView], item_id: str) -> dict[str, ItemView | None]:
    """One item's view on each side of a pair ("without", "with"); None where that side has no verdict."""
    return {side: next((v for v in views if v.item_id == item_id), None)
            for side, views in (("without", without), ("with", with_))}
