"""Disagreement triage: which open item verdicts to check first, ranked by how much correcting them would
move the reported figures.

Reads **items**, **ctrf**, **scores** (see `frames`) and **audits** (see `audits`).

`item_verdicts` puts every real item verdict (the endpoint is the outcome itself) beside what else
is known about it: the judge's raw and postprocessed verdicts, the verifier's truth for an
assertion item whose cited tests are in the CTRF report, every auditor's verdict and their
consensus. An item verdict the auditors' consensus has decided is **settled**: the audited figures
already apply the consensus, and auditing it again would change nothing, so it leaves the list
(`settled` lists those the judge or the verifier disagreed on). `disagreements` lists the open ones,
one row per item verdict and kind:

* ``judge vs verifier`` — the CTRF truth differs from the raw verdict; proposed: the truth;
* ``judge vs auditor`` — some auditor holds another verdict and the auditors are tied; proposed: the
  most common of the verdicts auditors hold instead of the judge's;
* ``auditor vs auditor`` — auditors hold different verdicts, tied; proposed as for judge vs auditor.

`rank_disagreements` adds what the proposed correction would change, each from the raw verdicts
through the real postprocessing and scoring (`outcome`): the judge's headline AUC vs official PASS
(outcome-free: partial credit of raw verdicts, as the report's RQ1; the Mann-Whitney AUC, ties ½), the mean
partial credit of the trajectory's condition and the matched-pair shares improving / regressing
(`skills.transition_table`; both of the postprocessed partial credit, as reported). The figures live on
different scales (a mean over many runs, a share over a few pairs), so each change is put in units of
its figure's own interval width — the 95% task-clustered bootstrap interval (`WIDTH_BOOT` draws, seed
0): ``impact`` = the largest of |change| / width, 1 meaning "moves the figure by the width of its
interval". A figure with a zero-width (or no) interval cannot be scaled and is left out of the
impact; an item none of whose figures can be scaled has impact NaN and ranks last.

The single-item effect can overstate what several wrong verdicts of one trajectory do together (a run
with one Yes and two Abstain: either Abstain corrected to No moves its partial credit 1 → 0.5, both move
it to 0.33, not 0), so each row also gives
the **joint** effect of correcting every open verdict of its trajectory at once (``n_open`` of them;
the other items take their own proposal, the verifier's truth first), on the same scale.
"""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import urlencode

import numpy as np
import pandas as pd

from ..models import ENDPOINT_ITEM_ID
from ..outcome import partial_credit_of
from .ablations import OUTCOME_FREE_VARIANT, VARIANTS, score_variants
from .audits import KEY, auditor_consensus, auditor_verdicts
from .bootstrap import cluster_counts, clustered_ci, draw_clusters, ratio_draws
from .discrimination import auc_table, bootstrap_auc
from .frames import require_columns
from .item_accuracy import assertion_truth, decided_by_verifier
from .skills import TRANSITIONS, matched_pairs, pair_moves

__all__ = ["DRAWN_QUERY", "IMPACT_SCALE", "KINDS", "TRIAGE_COLUMNS", "WIDTH_BOOT", "audit_link", "disagreements", "item_verdicts",
           "rank_disagreements", "settled", "triage"]

KINDS = ("judge vs verifier", "judge vs auditor", "auditor vs auditor")
EFFECTS = ["impact", "delta_auc", "delta_mean_pc", "delta_share", "share"]
TRIAGE_COLUMNS = ["rank", *KEY, "task", "route", "kind", "verdict_raw", "verdict", "verifier", "auditors", "proposed",
                  *EFFECTS, "width_auc", "width_mean_pc", "width_share", "n_open", *(f"joint_{c}" for c in EFFECTS),
                  "condition", "link"]
WIDTH_BOOT = 1000
"""Task-clustered bootstrap draws behind each figure's interval width (seed 0)."""
IMPACT_SCALE = ("impact: the largest change correcting the verdict would make to the judge's AUC (from raw verdicts, "
                "as the report's headline), the mean partial credit of its condition or a matched-pair share, each in "
                "units of that figure's own 95% task-clustered interval width (1 = the width of its interval); joint_*: "
                "the same with every open verdict of the trajectory corrected at once")
"""The scale of ``impact``, in words, for the page and the command line to state."""


def item_verdicts(items: pd.DataFrame, ctrf: pd.DataFrame | None, audits: pd.DataFrame | None) -> pd.DataFrame:
    """One row per real item verdict: ``trajectory_id, judge, item_id, task, route, verdict_raw, verdict,
    verifier`` (CTRF truth or None), ``n_auditors, auditors, consensus, split, dissent`` (the most common
    verdict auditors hold instead of the judge's, or None)."""
    require_columns(items, (*KEY, "task", "route", "verdict_raw", "verdict"), "items")
    real = items.loc[items["item_id"] != ENDPOINT_ITEM_ID].drop_duplicates(KEY)
    out = real[[*KEY, "task", "route", "verdict_raw", "verdict"]].reset_index(drop=True)
    if ctrf is not None and "verifier_refs" in real.columns:
        truth = assertion_truth(real, ctrf)
        out = out.merge(truth.loc[decided_by_verifier(truth), [*KEY, "truth"]].rename(columns={"truth": "verifier"}),
                        on=KEY, how="left")
    else:
        out["verifier"] = None
    verdicts = auditor_verdicts(real, audits) if audits is not None and len(audits) else pd.DataFrame()
    consensus = auditor_consensus(verdicts)
    out = out.merge(consensus, on=KEY, how="left")
    out["n_auditors"] = out["n_auditors"].fillna(0).astype(int)
    out["split"] = out["split"].astype("boolean").fillna(False).astype(bool)
    if len(verdicts):
        other = verdicts[verdicts["auditor_verdict"] != verdicts["verdict_raw"]]
        dissent = (other.groupby(KEY)["auditor_verdict"]
                   .agg(lambda v: v.value_counts().sort_index(kind="stable").idxmax()).rename("dissent"))
        out = out.merge(dissent, left_on=KEY, right_index=True, how="left")
    else:
        out["dissent"] = None
    return out.astype({"verifier": object, "consensus": object, "dissent": object, "auditors": object})


def _contested(v: pd.DataFrame) -> pd.Series:
    """Item verdicts someone disagrees with: the verifier, or some auditor."""
    return (v["verifier"].notna() & (v["verifier"] != v["verdict_raw"])) | v["dissent"].notna()


def settled(verdicts: pd.DataFrame) -> pd.DataFrame:
    """The contested item verdicts (`item_verdicts` rows) the auditors' consensus has decided: off the triage list."""
    return verdicts[_contested(verdicts) & verdicts["consensus"].notna()].reset_index(drop=True)


def disagreements(verdicts: pd.DataFrame) -> pd.DataFrame:
    """One row per open (not `settled`) item verdict and kind of disagreement, with the ``proposed`` correction (see
    module docstring)."""
    v = verdicts[verdicts["consensus"].isna()]
    parts = [
        v[v["verifier"].notna() & (v["verifier"] != v["verdict_raw"])].assign(kind=KINDS[0], proposed=lambda d: d["verifier"]),
        v[v["dissent"].notna()].assign(kind=KINDS[1], proposed=lambda d: d["dissent"]),
        v[v["split"] & v["dissent"].notna()].assign(kind=KINDS[2], proposed=lambda d: d["dissent"]),
    ]
    return pd.concat(parts, ignore_index=True)


def _scores(items: Sequence[tuple[str, str, str]], outcome: str) -> tuple[float, float]:
    """(outcome-free, postprocessed) partial credit of one trajectory's real items, given as ``(item_id, route,
    verdict_raw)``: plain tuples and no judgment models, since this runs twice per candidate correction."""
    verdicts = [(r, v) for _, r, v in items]
    out = []
    for propagate, endpoint in (VARIANTS[OUTCOME_FREE_VARIANT], VARIANTS["full"]):
        pc = partial_credit_of(verdicts, outcome, propagate_pass=propagate, add_endpoint=endpoint)
        out.append(np.nan if pc is None else pc)
    return out[0], out[1]


def _share_values(n: np.ndarray, up: np.ndarray, down: np.ndarray) -> dict[str, float]:
    """One judge's matched-pair shares improving / regressing per transition with a scored pair (and "all"), from
    the counts of scored, improving and regressing pairs per transition (the moves of `skills.pair_moves`, which
    `skills.transition_table` counts too). Counts, because this runs once per candidate correction."""
    names = [name for name, k in zip((*TRANSITIONS, "all"), n) if k]
    index = {name: i for i, name in enumerate((*TRANSITIONS, "all"))}
    return {**{f"improving {name}": float(up[index[name]] / n[index[name]]) for name in names},
            **{f"regressing {name}": float(down[index[name]] / n[index[name]]) for name in names}}


def _width(draws: np.ndarray, n_tasks: int) -> np.ndarray:
    """95% task-clustered interval width of each row of `draws`; NaN where there is none (or it is zero-wide)."""
    low, high, _ = clustered_ci(draws, n_tasks, 0.95)
    width = np.asarray(high - low, dtype=float)
    return np.where(width > 0, width, np.nan)


def _share_widths(pairs: pd.DataFrame, threshold: float) -> dict[str, float]:
    """Interval width of every matched-pair share `_shares` reports, pairs resampled by task."""
    scored = pairs[np.isfinite(pairs["delta"].to_numpy(dtype=float))]
    up, down = pair_moves(scored["delta"].to_numpy(dtype=float), threshold)
    out: dict[str, float] = {}
    for name in (*TRANSITIONS, "all"):
        chosen = (scored["transition"] == name).to_numpy() if name != "all" else np.ones(len(scored), dtype=bool)
        if not chosen.any():
            continue
        codes, tasks = pd.factorize(scored.loc[chosen, "task"])
        counts = cluster_counts(draw_clusters(len(tasks), WIDTH_BOOT, 0), len(tasks))
        draws = ratio_draws(np.stack([up[chosen], down[chosen]]).astype(float), np.ones(int(chosen.sum())), codes,
                            counts)
        w_up, w_down = _width(draws, len(tasks))
        out[f"improving {name}"], out[f"regressing {name}"] = float(w_up), float(w_down)
    return out


class _JudgeFigures:
    """One judge's figures over its trajectories, their interval widths, and what a correction changes in them.

    A correction changes one trajectory's two partial credits, so each figure is updated, not recomputed: the AUC's
    Mann-Whitney count by the pairs that trajectory is in (sorted scores, `np.searchsorted`), the mean partial credit
    of its condition by its sum, the matched-pair shares by the counts of the one pair it is in. The triage page ranks
    thousands of candidates at paper scale; recomputing each figure took 13 ms a candidate.
    """

    def __init__(self, s: pd.DataFrame, threshold: float) -> None:
        self.s, self.threshold = s, threshold
        self.where = {t: k for k, t in enumerate(s["trajectory_id"])}
        self.outcome = s["outcome"].to_numpy()
        self.raw, self.full = s["raw"].to_numpy(dtype=float), s["partial_credit"].to_numpy(dtype=float)
        self.condition = s["condition"].to_numpy(dtype=object)
        self.passed = self.outcome == "PASS"
        finite = np.isfinite(self.raw)
        self.pos, self.neg = np.sort(self.raw[finite & self.passed]), np.sort(self.raw[finite & ~self.passed])
        self.u0 = float(sum(self._u_of(x, True) for x in self.pos))
        self.auc0 = self._auc(self.u0, len(self.pos), len(self.neg))
        self.pc_sum = {c: float(np.nansum(self.full[self.condition == c])) for c in set(self.condition)}
        self.pc_n = {c: int(np.isfinite(self.full[self.condition == c]).sum()) for c in set(self.condition)}
        self.pairs = matched_pairs(s)
        self._init_pairs()
        boot = bootstrap_auc(s.assign(partial_credit=self.raw), n_boot=WIDTH_BOOT, seed=0)
        t = auc_table(boot).iloc[0] if len(boot.data) else None
        self.w_auc = float(t["ci_high"] - t["ci_low"]) if t is not None and t["ci_high"] > t["ci_low"] else np.nan
        self.w_pc: dict[str, float] = {}
        for condition, g in s[np.isfinite(self.full)].groupby("condition", sort=False):
            codes, tasks = pd.factorize(g["task"])
            counts = cluster_counts(draw_clusters(len(tasks), WIDTH_BOOT, 0), len(tasks))
            draws = ratio_draws(g["partial_credit"].to_numpy(dtype=float), np.ones(len(g)), codes, counts)
            self.w_pc[condition] = float(_width(draws, len(tasks)))
        self.w_share = _share_widths(self.pairs, threshold) if len(self.pairs) else {}

    def _init_pairs(self) -> None:
        """Per pair: its two trajectories' positions and its transition; per transition (and "all"): the counts."""
        p = self.pairs
        self.pair_of: dict[str, int] = {}
        if not len(p):
            self.n0 = self.up0 = self.down0 = np.zeros(len(TRANSITIONS) + 1)
            self.shares0: dict[str, float] = {}
            return
        self.with_at = np.array([self.where[t] for t in p["trajectory_id_with"]])
        self.without_at = np.array([self.where[t] for t in p["trajectory_id_without"]])
        self.pair_of = {**{t: k for k, t in enumerate(p["trajectory_id_with"])},
                        **{t: k for k, t in enumerate(p["trajectory_id_without"])}}
        self.transition = np.array([TRANSITIONS.index(t) for t in p["transition"]])
        self.n0, self.up0, self.down0 = self._counts(p["delta"].to_numpy(dtype=float), self.transition)
        self.shares0 = _share_values(self.n0, self.up0, self.down0)

    def _counts(self, delta: np.ndarray, transition: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Scored, improving and regressing pairs per transition, "all" last."""
        scored = np.isfinite(delta)
        up, down = pair_moves(delta, self.threshold)
        size = len(TRANSITIONS) + 1
        out = []
        for what in (scored, up & scored, down & scored):
            c = np.bincount(transition[what], minlength=size - 1).astype(float)
            out.append(np.append(c, c.sum()))
        return out[0], out[1], out[2]

    def _u_of(self, x: float, positive: bool) -> float:
        """The Mann-Whitney count of one trajectory's score `x` against the other class (ties count ½)."""
        other = self.neg if positive else self.pos
        below, upto = np.searchsorted(other, x, "left"), np.searchsorted(other, x, "right")
        return float((below if positive else len(other) - upto) + 0.5 * (upto - below))

    @staticmethod
    def _auc(u: float, n_pos: int, n_neg: int) -> float:
        return u / (n_pos * n_neg) if n_pos and n_neg else np.nan

    def _auc_after(self, k: int, new: float) -> float:
        """The AUC vs official PASS once trajectory `k`'s outcome-free score is `new` (NaN leaves it out)."""
        old, positive = self.raw[k], bool(self.passed[k])
        n_pos, n_neg = len(self.pos), len(self.neg)
        u = self.u0
        if np.isfinite(old):  # its pairs with the other class leave
            u -= self._u_of(old, positive)
            n_pos, n_neg = (n_pos - 1, n_neg) if positive else (n_pos, n_neg - 1)
        if np.isfinite(new):
            u += self._u_of(new, positive)
            n_pos, n_neg = (n_pos + 1, n_neg) if positive else (n_pos, n_neg + 1)
        return self._auc(u, n_pos, n_neg)

    def _moved_shares(self, k: int, trajectory: str, full: float) -> dict[str, float]:
        """The change of every matched-pair share once trajectory `k`'s postprocessed score is `full` (a share
        present before or after; 0 where it did not move)."""
        pair = self.pair_of[trajectory]
        w, wo = self.with_at[pair], self.without_at[pair]
        old_delta = self.full[w] - self.full[wo]
        new_delta = (full if w == k else self.full[w]) - (full if wo == k else self.full[wo])
        # the pair's counts before and after, in one call: row 0 its old Δ, row 1 its new one
        t = self.transition[[pair, pair]]
        delta = np.array([old_delta, new_delta])
        scored = np.isfinite(delta)
        up, down = pair_moves(delta, self.threshold)
        n, up_n, down_n = self.n0.copy(), self.up0.copy(), self.down0.copy()
        for counts, flags in ((n, scored), (up_n, up & scored), (down_n, down & scored)):
            change = float(flags[1]) - float(flags[0])
            counts[t[0]] += change
            counts[-1] += change
        after = _share_values(n, up_n, down_n)
        names = list(after) if list(after) == list(self.shares0) else sorted({*after, *self.shares0})
        return {name: round(after.get(name, 0.0) - self.shares0.get(name, 0.0), 12) + 0.0 for name in names}

    def effect(self, trajectory: str, scores: tuple[float, float]) -> dict[str, object]:
        """What setting `trajectory`'s (outcome-free, postprocessed) partial credit to `scores` does: the signed
        changes, the share that moves most (in width units), their widths and the impact."""
        k = self.where[trajectory]
        raw, full = scores
        condition = self.condition[k]
        d_auc = self._auc_after(k, raw) - self.auc0
        n, total = self.pc_n[condition], self.pc_sum[condition]
        old = self.full[k]
        n_after = n - int(np.isfinite(old)) + int(np.isfinite(full))
        total_after = total - (old if np.isfinite(old) else 0.0) + (full if np.isfinite(full) else 0.0)
        d_pc = total_after / n_after - (total / n if n else np.nan) if n_after else np.nan
        d_share, share = 0.0, None
        if trajectory in self.pair_of:
            moved = self._moved_shares(k, trajectory, full)
            if any(abs(v) > 0 for v in moved.values()):
                scaled = {name: abs(v) / self.w_share[name] for name, v in moved.items()
                          if np.isfinite(self.w_share.get(name, np.nan))}
                scaled = {name: v for name, v in scaled.items() if np.isfinite(v)}
                pool = scaled or {name: abs(v) for name, v in moved.items()}
                share = max(pool, key=pool.__getitem__)  # the first of the largest, as pandas' idxmax
                d_share = float(moved[share])
        d_auc, d_pc = (round(float(d), 12) + 0.0 for d in (d_auc, d_pc))  # float noise (or -0.0) is no change
        w_pc = self.w_pc.get(condition, np.nan)
        w_share = self.w_share.get(share, np.nan) if share else np.nan
        scaled_all = [abs(d) / w for d, w in ((d_auc, self.w_auc), (d_pc, w_pc), (d_share, w_share))
                      if np.isfinite(d) and np.isfinite(w)]
        return {"impact": max(scaled_all) if scaled_all else np.nan, "delta_auc": d_auc, "delta_mean_pc": d_pc,
                "delta_share": d_share, "share": share, "width_auc": self.w_auc, "width_mean_pc": w_pc,
                "width_share": w_share, "condition": condition}


def _by_judge(items: pd.DataFrame, scores: pd.DataFrame) -> pd.DataFrame:
    """Per (trajectory, judge) of `items`: the trajectory columns of `scores` and both partial credits recomputed from
    raw verdicts, ``raw`` (outcome-free) and ``partial_credit`` (postprocessed)."""
    variants = score_variants(items, {OUTCOME_FREE_VARIANT: VARIANTS[OUTCOME_FREE_VARIANT], "full": VARIANTS["full"]})
    wide = variants.pivot(index=["trajectory_id", "judge"], columns="variant", values="partial_credit").reset_index()
    wide = wide.rename(columns={OUTCOME_FREE_VARIANT: "raw", "full": "partial_credit"})
    meta = scores[["trajectory_id", "judge", "task", "outcome", "condition", "agent", "model", "trial_index"]]
    return meta.merge(wide[["trajectory_id", "judge", "raw", "partial_credit"]], on=["trajectory_id", "judge"])


def rank_disagreements(
    found: pd.DataFrame, items: pd.DataFrame, scores: pd.DataFrame, *, base_url: str, threshold: float = 0.10
) -> pd.DataFrame:
    """`found` (from `disagreements`) with the single and joint effects of its correction (see the module docstring),
    ``condition, rank, link``, most impactful first (``link``: `audit_link` into the app at `base_url`)."""
    if found.empty:
        return pd.DataFrame(columns=TRIAGE_COLUMNS)
    require_columns(scores, ("trajectory_id", "judge", "outcome", "condition", "agent", "model", "trial_index"),
                    "scores")
    base = _by_judge(items, scores)
    real = items[items["item_id"] != ENDPOINT_ITEM_ID]
    # the correction each open item verdict takes when another item of its trajectory is the one ranked
    first = found.assign(_kind=found["kind"].map({k: i for i, k in enumerate(KINDS)}))
    first = first.sort_values("_kind", kind="stable").drop_duplicates(KEY)
    open_items: dict[tuple[str, str], dict[str, str]] = {}
    for r in first.itertuples(index=False):
        open_items.setdefault((r.judge, r.trajectory_id), {})[r.item_id] = r.proposed
    effects: dict[tuple[str, str, str, str], dict] = {}
    for judge, cand in found.groupby("judge", sort=True):
        s = base[base["judge"] == judge].reset_index(drop=True)
        figures = _JudgeFigures(s, threshold)
        mine = real[real["judge"] == judge]
        by_traj: dict[str, list[tuple[str, str, str]]] = {}
        # plain lists: iterating Arrow-backed columns value by value costs more than the scoring itself
        for t, i, r, v in zip(*(mine[c].tolist() for c in ("trajectory_id", "item_id", "route", "verdict_raw"))):
            by_traj.setdefault(t, []).append((i, r, v))
        keys = cand[["trajectory_id", "item_id", "proposed"]].drop_duplicates()
        for trajectory, item_id, proposed in zip(*(keys[c].tolist() for c in keys.columns)):
            k = figures.where.get(trajectory)
            if k is None:
                continue
            rows = by_traj[trajectory]
            single = [(i, r, proposed if i == item_id else v) for i, r, v in rows]
            joint_map = {**open_items[(judge, trajectory)], item_id: proposed}
            joint = [(i, r, joint_map.get(i, v)) for i, r, v in rows]
            outcome = figures.outcome[k]
            one = figures.effect(trajectory, _scores(single, outcome))
            together = figures.effect(trajectory, _scores(joint, outcome))
            effects[(judge, trajectory, item_id, proposed)] = {
                **one, "n_open": len(joint_map), **{f"joint_{c}": together[c] for c in EFFECTS}}
    out = found.copy()
    empty = dict.fromkeys([*EFFECTS, "width_auc", "width_mean_pc", "width_share", "n_open",
                           *(f"joint_{c}" for c in EFFECTS), "condition"], np.nan)
    got = pd.DataFrame([effects.get((r.judge, r.trajectory_id, r.item_id, r.proposed), empty)
                        for r in out.itertuples(index=False)], index=out.index)
    out = pd.concat([out, got], axis=1)
    out["_kind"] = out["kind"].map({k: i for i, k in enumerate(KINDS)})
    out = out.sort_values(["impact", "_kind", "judge", "trajectory_id", "item_id"],
                          ascending=[False, True, True, True, True], kind="stable", na_position="last")
    out = out.reset_index(drop=True)
    out["rank"] = np.arange(1, len(out) + 1)
    out["n_open"] = out["n_open"].astype("Int64")
    out["link"] = [audit_link(base_url, r.trajectory_id, r.judge, r.item_id) for r in out.itertuples(index=False)]
    return out[TRIAGE_COLUMNS]


DRAWN_QUERY = {"selection": "random"}
"""What a link to a verdict `active.propose` drew at random adds to its query: an audit made from it records
``selection: random`` (`models.AuditSelection`), any other audit ``chosen``."""


def audit_link(base_url: str, trajectory_id: str, judge: str, item_id: str, label: str | None = None, *,
               drawn: bool = False) -> str:
    """Absolute URL of the item audit page of the app at `base_url` opened on one item verdict (what the audit
    page reads from its query); `label` names the judge run when it is not the judge's default; `drawn` marks a
    verdict drawn at random (`DRAWN_QUERY`). Absolute, so the link works where it is pasted (a terminal, a
    ticket, a spreadsheet), not only inside the app."""
    query = ({"trajectory": trajectory_id, "judge": judge, "item": item_id} | ({"label": label} if label else {})
             | (DRAWN_QUERY if drawn else {}))
    return f"{base_url.rstrip('/')}/audit?{urlencode(query)}"


def triage(frames: dict[str, pd.DataFrame | None], *, base_url: str, threshold: float = 0.10) -> pd.DataFrame:
    """Every open disagreement of a project's frames, ranked (`TRIAGE_COLUMNS`), linking into the app at `base_url`;
    empty when there are no item verdicts. ``attrs["n_settled"]``: the contested item verdicts left out because
    the auditors' consensus settled them."""
    items, scores = frames.get("items"), frames.get("scores")
    if items is None or items.empty or scores is None or scores.empty:
        return pd.DataFrame(columns=TRIAGE_COLUMNS)
    verdicts = item_verdicts(items, frames.get("ctrf"), frames.get("audits"))
    ranked = rank_disagreements(disagreements(verdicts), items, scores, base_url=base_url, threshold=threshold)
    ranked.attrs["n_settled"] = len(settled(verdicts))
    return ranked
