"""Input frame contracts of the analysis, and their validation.

The analysis takes plain pandas frames so it does not depend on how they were
loaded (project DB, CSV export, a test fixture). Each public function names the
frames it reads and the columns it requires; a frame that lacks one fails
loudly with `FrameContractError` naming the column, while a frame that is
absent or empty is *data not yet available*, which the report states instead
of failing.

Frames
------
scores
    One row per (trajectory_id, judge): ``trajectory_id, task, judge, outcome`` ("PASS"/"FAIL"),
    ``condition`` ("with-skills"/"without-skills"/"unknown"), ``agent, model, trial_index``,
    ``partial_credit`` (float, NaN when nothing was decided), ``evidence_coverage, perfect,
    perfect_with_endpoint``. The holistic judge has ``judge="holistic"`` and its 0–1 progress
    score in ``partial_credit``.
items
    One row per (trajectory_id, judge, item_id): ``trajectory_id, task, judge, item_id, route``
    ("assertion"/"generated"/"judge"/"endpoint"), ``verdict_raw, verdict`` ("Yes"/"No"/"Abstain"),
    ``verifier_refs`` (list of node ids such as ``test_outputs.py::TestX::test_y``; a JSON list
    string is accepted too), ``outcome``.
ctrf
    One row per CTRF test result: ``trajectory_id, test`` (the name CTRF reports; parametrized
    tests carry a ``[param]`` suffix), ``status`` ("passed"/"failed"/"skipped"/…).
ratings
    Human progress ratings, one row per (unit, rater): ``trajectory_id`` (or ``unit_id``, taken as
    the trajectory id when ``trajectory_id`` is absent), ``task, rater, rating`` (ordinal int).
preferences
    Human pairwise preferences, one row per (pair, rater): ``pair_id, task, left_id, right_id,
    rater, choice`` ("A" = left better, "B" = right better, "tie").
perturbations
    Evidence-sensitivity results, one row per perturbed Yes item under one setting:
    ``trajectory_id, task, judge, model, scope, seed, status`` ("judged"/"not_perturbed"),
    ``verdict`` (the item's raw verdict on the perturbed log); optionally ``kind`` (number/path/
    string), ``route``, ``span_remaining`` (evidence events still holding a cited span), ``recipe``.
    See `sensitivity`.

Human annotations are append-only upstream; the loader passes the current rows. Should a rater
still have two rows for one unit or pair, the last row wins.

Judges are ordered, and told apart as item or rating judges, by the `JudgeOrder` the frames carry
(`with_judge_order`: the loader attaches the registered judges'); the analysis imports no judge. A frame
without one shows its judges alphabetically.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import pandas as pd

from ..judge_order import JudgeOrder

__all__ = [
    "JUDGE_ORDER_ATTR",
    "FrameContractError",
    "JudgeOrder",
    "common_subset",
    "is_available",
    "judge_order_of",
    "require_columns",
    "trajectory_outcomes",
    "with_judge_order",
]

JUDGE_ORDER_ATTR = "judge_order"
"""The key of a frame's `attrs` that holds its `JudgeOrder`, as JSON-ready data (Streamlit serialises a
shown frame's `attrs` as JSON, and warns about a value it cannot)."""

OUTCOMES = ("PASS", "FAIL")


class FrameContractError(ValueError):
    """An input frame violates its documented contract (missing column, bad value, duplicate key)."""


def require_columns(frame: pd.DataFrame, columns: Iterable[str], name: str) -> None:
    """Raise `FrameContractError` naming every required column `frame` lacks."""
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise FrameContractError(
            f"{name} frame is missing required column(s) {', '.join(map(repr, missing))}; "
            f"it has {', '.join(map(repr, frame.columns)) or 'no columns'}"
        )


def with_judge_order(frame: pd.DataFrame, order: JudgeOrder) -> pd.DataFrame:
    """`frame`, carrying `order` (in its `attrs`, which pandas keeps through filtering and copying)."""
    frame.attrs[JUDGE_ORDER_ATTR] = order.model_dump(mode="json")
    return frame


def judge_order_of(*frames: pd.DataFrame | None) -> JudgeOrder:
    """The `JudgeOrder` the first of `frames` that carries one holds; the empty order when none does."""
    for frame in frames:
        order = frame.attrs.get(JUDGE_ORDER_ATTR) if frame is not None else None
        if isinstance(order, dict):
            return JudgeOrder.model_validate(order)
    return JudgeOrder()


def is_available(frame: pd.DataFrame | None) -> bool:
    """True when a frame holds at least one row: an absent or empty frame is data not yet collected."""
    return frame is not None and len(frame) > 0


def trajectory_outcomes(frame: pd.DataFrame, name: str) -> pd.DataFrame:
    """One row per trajectory with its task and official outcome; rejects unknown or conflicting outcomes.

    Several judges' rows repeat a trajectory's outcome, so a conflict means the frame mixes
    projects or thresholds, and no statistic over it would be meaningful.
    """
    require_columns(frame, ("trajectory_id", "task", "outcome"), name)
    bad = set(frame["outcome"].dropna().unique()) - set(OUTCOMES)
    if bad or frame["outcome"].isna().any():
        found = sorted(map(str, bad)) or ["<missing>"]
        raise FrameContractError(f"{name} frame has outcome values other than PASS/FAIL: {found}")
    per = frame[["trajectory_id", "task", "outcome"]].drop_duplicates()
    clash = per["trajectory_id"].duplicated(keep=False)
    if clash.any():
        example = per.loc[clash, "trajectory_id"].iloc[0]
        raise FrameContractError(f"{name} frame gives trajectory {example!r} more than one task or outcome")
    return per.reset_index(drop=True)


def common_subset(
    scores: pd.DataFrame, judges: Sequence[str] | None = None, *, score_col: str = "partial_credit"
) -> tuple[pd.DataFrame, list[str], int]:
    """Wide frame of the trajectories every listed judge scored (non-NaN `score_col`).

    Comparisons between judges are only fair on the same trajectories, so a trajectory is kept
    only when all of them scored it. Returns ``(wide, judges, n_excluded)`` where `wide` has
    ``trajectory_id, task, outcome`` and one float column per judge, and `n_excluded` counts the
    trajectories some judge scored that were dropped. Naming a judge absent from `scores` is a
    ValueError rather than an empty result, so a typo cannot pass for missing data.
    """
    require_columns(scores, ("trajectory_id", "task", "judge", "outcome", score_col), "scores")
    present = judge_order_of(scores).ordered(scores["judge"].unique())
    judges = present if judges is None else list(judges)
    unknown = [j for j in judges if j not in present]
    if unknown:
        raise ValueError(f"judge(s) {unknown} have no rows in the scores frame (judges present: {present})")
    sub = scores[scores["judge"].isin(judges)]
    dup = sub.duplicated(["trajectory_id", "judge"])
    if dup.any():
        row = sub.loc[dup].iloc[0]
        raise FrameContractError(f"scores frame has more than one row for trajectory {row['trajectory_id']!r} "
                                 f"and judge {row['judge']!r}")
    meta = trajectory_outcomes(sub, "scores")
    wide = sub.pivot(index="trajectory_id", columns="judge", values=score_col).reindex(columns=judges).astype(float)
    wide.columns.name = None
    keep = wide.notna().all(axis=1)
    wide = meta.merge(wide[keep], left_on="trajectory_id", right_index=True)
    wide = wide.sort_values(["task", "trajectory_id"], kind="stable").reset_index(drop=True)
    return wide, judges, int((~keep).sum())
