"""A synthetic project as analysis frames: for the benchmark, end-to-end tests and trying the report.

Nothing here is real data. Each trajectory gets a latent progress p; checklist items hold with
probability p; the official outcome is PASS exactly when every assertion item holds (so CTRF
statuses equal the assertion items' truth); judges see the truth through noise; Skills raise p.
Scores are computed from the item verdicts with the project's own postprocessing, so the frames
are mutually consistent.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .ablations import score_variants
from .frames import JudgeOrder, with_judge_order

SYNTHETIC_JUDGES = JudgeOrder(names=("gcpc", "fixed", "holistic"), item_judges=frozenset({"gcpc", "fixed"}),
                              checklist_ablation=("gcpc", "fixed"))
"""The synthetic project's judges: the method, its fixed-checklist variant and a rating judge."""

__all__ = ["SYNTHETIC_JUDGES", "synthetic_frames"]

AGENTS = (("claude-code", "anthropic/claude-opus-4.5"), ("claude-code", "anthropic/claude-sonnet-4.5"),
          ("gemini-cli", "google/gemini-3-pro"), ("codex", "openai/gpt-5.2"), ("terminus-2", "minimax/MiniMax-M2.1"))
ROUTES = ("assertion",) * 5 + ("generated",) * 3 + ("judge",)


def _verdicts(truth: np.ndarray, rng: np.random.Generator, accuracy: float, abstain: float) -> np.ndarray:
    u = rng.random(truth.shape)
    right = np.where(truth, "Yes", "No")
    wrong = np.where(truth, "No", "Yes")
    return np.where(u < abstain, "Abstain", np.where(u < abstain + accuracy, right, wrong))


def synthetic_frames(
    *,
    n_tasks: int = 85,
    n_pairs: int = 1946,
    n_unpaired: int = 563,
    n_rated: int = 96,
    n_raters: int = 3,
    n_pref_pairs: int = 96,
    seed: int = 0,
) -> dict[str, pd.DataFrame]:
    """Frames ``scores, items, ctrf, ratings, preferences`` (contracts in `frames`); 9 checklist items per
    trajectory for the ``gcpc`` and ``fixed`` judges, plus a ``holistic`` judge (`SYNTHETIC_JUDGES`)."""
    rng = np.random.default_rng(seed)
    tasks = np.array([f"task-{k:03d}" for k in range(n_tasks)], dtype=object)
    difficulty = rng.normal(0.0, 1.0, n_tasks)
    # matched pairs: (task, agent/model, trial_index) keys, then unpaired with-skills or unknown trajectories
    combo = rng.integers(0, len(AGENTS), n_pairs + n_unpaired)
    task_of = rng.integers(0, n_tasks, n_pairs + n_unpaired)
    key = pd.DataFrame({"t": task_of, "c": combo})
    trial = key.groupby(["t", "c"]).cumcount().to_numpy()
    paired = np.arange(n_pairs + n_unpaired) < n_pairs
    rows = pd.DataFrame({
        "task": np.concatenate([tasks[task_of[paired]], tasks[task_of[paired]], tasks[task_of[~paired]]]),
        "combo": np.concatenate([combo[paired], combo[paired], combo[~paired]]),
        "trial_index": np.concatenate([trial[paired], trial[paired], trial[~paired]]),
        "condition": np.concatenate([["with-skills"] * n_pairs, ["without-skills"] * n_pairs,
                                     rng.choice(["with-skills", "unknown"], n_unpaired)]),
    })
    n = len(rows)
    rows["trajectory_id"] = [f"{t}__{i:05d}" for i, t in enumerate(rows["task"])]
    rows["agent"] = [AGENTS[c][0] for c in rows["combo"]]
    rows["model"] = [AGENTS[c][1] for c in rows["combo"]]
    t_idx = pd.Series(np.arange(n_tasks), index=tasks)[rows["task"]].to_numpy()
    z = 1.2 - difficulty[t_idx] + 0.5 * (rows["condition"] == "with-skills").to_numpy() + rng.normal(0, 0.8, n)
    progress = 1 / (1 + np.exp(-z))
    truth = rng.random((n, len(ROUTES))) < progress[:, None] ** 0.5
    outcome = np.where(truth[:, :5].all(axis=1), "PASS", "FAIL")
    rows["outcome"] = outcome

    def item_frame(judge: str, ids: list[str], routes: tuple[str, ...], raw: np.ndarray) -> pd.DataFrame:
        k = len(ids)
        refs = [[f"test_outputs.py::TestChecks::test_item_{i}"] if r == "assertion" else [] for i, r in enumerate(routes)]
        f = pd.DataFrame({
            "trajectory_id": np.repeat(rows["trajectory_id"].to_numpy(), k), "task": np.repeat(rows["task"].to_numpy(), k),
            "judge": judge, "item_id": np.tile(ids, n), "route": np.tile(routes, n), "verdict_raw": raw.ravel(),
            "verifier_refs": refs * n, "outcome": np.repeat(outcome, k)})
        post = f["verdict_raw"].where(~((f["outcome"] == "PASS") & (f["route"] == "assertion")), "Yes")
        return f.assign(verdict=post)

    gcpc = item_frame("gcpc", [f"C{i + 1}" for i in range(9)], ROUTES, _verdicts(truth, rng, 0.85, 0.05))
    fixed_truth = rng.random((n, 9)) < (0.3 + 0.5 * progress)[:, None]
    fixed = item_frame("fixed", [f"F{i + 1}" for i in range(9)], ("generated",) * 4 + ("judge",) * 5,
                       _verdicts(fixed_truth, rng, 0.8, 0.1))
    items = pd.concat([gcpc, fixed], ignore_index=True)
    meta = rows[["trajectory_id", "task", "outcome", "condition", "agent", "model", "trial_index"]]
    full = score_variants(items)
    full = full[full["variant"] == "full"].drop(columns="variant")
    holistic = meta[["trajectory_id", "task", "outcome"]].assign(
        judge="holistic", partial_credit=np.clip(np.round(progress + rng.normal(0, 0.25, n), 1), 0, 1),
        evidence_coverage=np.nan, perfect=np.nan, perfect_with_endpoint=np.nan)
    scores = pd.concat([full, holistic], ignore_index=True).merge(
        meta.drop(columns=["task", "outcome"]), on="trajectory_id")
    # CTRF: one test per assertion item; item 0 is parametrized (two results)
    tests = [f"test_outputs.py::TestChecks::test_item_{i}" for i in range(5)]
    status = np.where(truth[:, :5], "passed", "failed")
    ctrf = pd.DataFrame({"trajectory_id": np.repeat(rows["trajectory_id"].to_numpy(), 6),
                         "test": np.tile([tests[0] + "[a]", tests[0] + "[b]", *tests[1:]], n),
                         "status": np.column_stack([status[:, :1], status]).ravel()})
    # humans: progress ratings 1–5 and pairwise preferences within a task
    rated = rng.choice(n, n_rated, replace=False)
    ratings = pd.DataFrame({
        "trajectory_id": np.repeat(rows["trajectory_id"].to_numpy()[rated], n_raters),
        "task": np.repeat(rows["task"].to_numpy()[rated], n_raters),
        "rater": np.tile([f"rater-{r}" for r in range(n_raters)], n_rated),
        "rating": np.clip(np.rint(1 + 4 * np.repeat(progress[rated], n_raters) + rng.normal(0, 0.7, n_rated * n_raters)),
                          1, 5).astype(int),
        "scale_min": 1, "scale_max": 5})
    by_task = pd.Series(np.arange(n)).groupby(rows["task"].to_numpy()).agg(list)
    by_task = by_task[by_task.map(len) >= 2]
    picks = rng.choice(len(by_task), n_pref_pairs)
    sides = np.array([rng.choice(by_task.iloc[p], 2, replace=False) for p in picks], dtype=int).reshape(-1, 2)
    left, right = sides.T
    diff = np.repeat(progress[left] - progress[right], n_raters) + rng.normal(0, 0.1, n_pref_pairs * n_raters)
    swap = rng.random(n_pref_pairs * n_raters) < 0.5
    choice = np.where(np.abs(diff) < 0.05, "tie", np.where((diff > 0) != swap, "A", "B"))
    l_id = np.repeat(rows["trajectory_id"].to_numpy()[left], n_raters)
    r_id = np.repeat(rows["trajectory_id"].to_numpy()[right], n_raters)
    preferences = pd.DataFrame({
        "pair_id": np.repeat([f"pair-{k:04d}" for k in range(n_pref_pairs)], n_raters),
        "task": np.repeat(rows["task"].to_numpy()[left], n_raters),
        "left_id": np.where(swap, r_id, l_id), "right_id": np.where(swap, l_id, r_id),
        "rater": np.tile([f"rater-{r}" for r in range(n_raters)], n_pref_pairs), "choice": choice})
    return {"scores": with_judge_order(scores, SYNTHETIC_JUDGES), "items": with_judge_order(items, SYNTHETIC_JUDGES),
            "ctrf": ctrf, "ratings": ratings, "preferences": preferences}
