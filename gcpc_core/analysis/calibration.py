"""Judge calibration: each judge's raw Yes/No against auditors and against the verifier, and the
reported figures recomputed with the auditors' corrections.

Reads **items**, **ctrf**, **scores** (see `frames`) and **audits** (see `audits`).

References (`reference_labels`): ``verifier`` — an assertion item's truth from the status of the
tests it cites in the trajectory's CTRF report (`item_accuracy.assertion_truth`); ``auditor`` — the
auditors' consensus verdict (`audits.auditor_consensus`; split audits have none). The judge's
**raw** verdict is compared, as in item accuracy: after postprocessing an official PASS makes
assertion items right by construction.

`calibration_table`: per group (judge × reference, and optionally route, the judge's verdict, task),
over item verdicts where the reference says Yes or No: precision and recall of each class over the
verdicts where the judge says Yes or No too (the precision of class Yes is the share of the judge's
Yes the reference confirms), the recall again with the judge's Abstains counted as misses
(``recall_yes_all``, ``recall_no_all``) and the share of each class the judge abstained on
(``abstain_yes``, ``abstain_no``), and Cohen's κ — the values of
`sklearn.metrics.precision_recall_fscore_support` and `sklearn.metrics.cohen_kappa_score` —, with
percentile intervals from a clustered bootstrap (`bootstrap`): tasks are resampled, or trajectories
within a per-task row. Every statistic depends only on the table of (reference, judge) counts, so
`table_stats` computes them for all resampled tables at once.

`audited_figures`: AUC per judge, mean partial credit per condition and the matched-pair shares,
from the raw verdicts and again with every item verdict that has an auditor consensus replaced by
it, through the same postprocessing and scoring (`ablations.score_variants`), side by side with the
number of overrides used; and beside each audited figure its judge-error interval
(`figure_error_intervals`): where the figure could lie given what the audits so far say about the
judge's error rate in each stratum (`active`), which narrows as audits arrive and closes when every
verdict is audited.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy.stats import mannwhitneyu
from sklearn.metrics import cohen_kappa_score, precision_recall_fscore_support

from ..models import ENDPOINT_ITEM_ID
from .ablations import score_variants
from .active import PRIOR, in_sample, population, stratum_table, verifier_truth
from .audits import KEY, auditor_consensus, auditor_verdicts
from .bootstrap import cluster_counts, draw_clusters, percentile_ci
from .discrimination import auc_table, bootstrap_auc
from .frames import judge_order_of, require_columns
from .item_accuracy import assertion_truth, decided_by_verifier
from .skills import matched_pairs, transition_table

__all__ = ["CALIBRATION_BOOT", "CELLS", "ERROR_DRAWS", "FIGURE_COLUMNS", "REFERENCES", "STATS", "audited_figures",
           "audited_items", "calibration_table", "table_stats", "draw_unaudited_verdicts", "figure_error_intervals", "figure_values",
           "reference_labels", "rescore"]

REFERENCES = ("auditor", "verifier")
CALIBRATION_BOOT = 1000
"""Most bootstrap draws for calibration intervals (the page's and the report's)."""
STATS = ("precision_yes", "recall_yes", "recall_yes_all", "abstain_yes", "precision_no", "recall_no", "recall_no_all",
         "abstain_no", "kappa")
BINARY = ("Yes", "No")
JUDGE_VERDICTS = ("Yes", "No", "Abstain")
CELLS = ("yes_yes", "yes_no", "yes_abstain", "no_yes", "no_no", "no_abstain")
"""The six cells of the (reference, judge) table: the reference says Yes or No, the judge Yes, No or Abstain."""


def reference_labels(items: pd.DataFrame, ctrf: pd.DataFrame | None, audits: pd.DataFrame | None) -> pd.DataFrame:
    """Long frame of labelled item verdicts: ``judge, task, trajectory_id, item_id, route, verdict_raw,
    reference`` (``auditor``/``verifier``), ``truth``. The endpoint item (the outcome itself) is left out."""
    require_columns(items, (*KEY, "task", "route", "verdict_raw"), "items")
    base = items.loc[items["item_id"] != ENDPOINT_ITEM_ID, ["judge", "task", "trajectory_id", "item_id", "route",
                                                            "verdict_raw"]].drop_duplicates(KEY)
    parts = []
    if audits is not None and len(audits):
        consensus = auditor_consensus(auditor_verdicts(base, audits)).dropna(subset=["consensus"])
        parts.append(base.merge(consensus[[*KEY, "consensus"]], on=KEY)
                     .rename(columns={"consensus": "truth"}).assign(reference="auditor"))
    if ctrf is not None and "verifier_refs" in items.columns:
        truth = assertion_truth(items[items["item_id"] != ENDPOINT_ITEM_ID], ctrf)
        truth = truth.loc[decided_by_verifier(truth), [*KEY, "truth"]]
        parts.append(base.merge(truth, on=KEY).assign(reference="verifier"))
    columns = ["judge", "task", "trajectory_id", "item_id", "route", "verdict_raw", "reference", "truth"]
    if not parts:
        return pd.DataFrame(columns=columns)
    return pd.concat(parts, ignore_index=True)[columns]


def table_stats(tables: np.ndarray) -> np.ndarray:
    """`STATS` of (reference, judge) count tables, `CELLS` along the last axis, for any number of tables at once.

    Precision and recall of each class and Cohen's κ are those of the judge's Yes/No against the reference's
    (scikit-learn's `precision_recall_fscore_support` and `cohen_kappa_score` on the same verdicts give the same
    values, as the tests check): a table of counts decides them, so a bootstrap's thousands of resampled tables
    are computed at once instead of with one library call each. ``recall_*_all`` counts the judge's Abstain on an
    item of that class as a miss (the recall over every item the reference puts in the class) and
    ``abstain_*`` is the share of those items the judge abstained on. NaN where a statistic is undefined (no
    such verdict, or κ with one class only on both sides).
    """
    t = np.asarray(tables, dtype=float)
    yy, yn, ya, ny, nn, na = np.moveaxis(t, -1, 0)
    ref_yes, ref_no = yy + yn, ny + nn
    n = ref_yes + ref_no
    with np.errstate(divide="ignore", invalid="ignore"):
        p_o = (yy + nn) / n
        p_e = (ref_yes * (yy + ny) + ref_no * (yn + nn)) / n**2
        kappa = np.where(p_e < 1, (p_o - p_e) / (1 - p_e), np.nan)
        return np.stack([yy / (yy + ny), yy / ref_yes, yy / (ref_yes + ya), ya / (ref_yes + ya),
                         nn / (nn + yn), nn / ref_no, nn / (ref_no + na), na / (ref_no + na), kappa], axis=-1)


def _cells(truth: pd.Series, pred: pd.Series) -> np.ndarray:
    judge = pd.Categorical(pred, categories=JUDGE_VERDICTS).codes
    return (3 * (truth.to_numpy() == "No") + judge).astype(int)


def _bootstrap(cells: np.ndarray, clusters: np.ndarray, n_boot: int, seed: int, ci: float) -> tuple[np.ndarray, ...]:
    codes, uniques = pd.factorize(clusters)
    per_cluster = np.zeros((len(uniques), len(CELLS)))
    np.add.at(per_cluster, (codes, cells), 1.0)
    tables = cluster_counts(draw_clusters(len(uniques), n_boot, seed), len(uniques)) @ per_cluster
    low, high, _ = percentile_ci(table_stats(tables).T, ci)
    return low, high


def calibration_table(
    labels: pd.DataFrame, by: Sequence[str] = ("judge", "reference"), *, n_boot: int = CALIBRATION_BOOT, seed: int = 0,
    ci: float = 0.95,
) -> pd.DataFrame:
    """Precision, recall (per class, without and with the judge's Abstains) and Cohen's κ of the judge's raw
    verdicts against the reference, per `by` group.

    Columns: `by`, ``n_labelled`` (labelled item verdicts), ``n_judge_abstain``, ``n_reference_abstain``,
    ``n`` (both Yes/No: what precision, ``recall_yes``/``recall_no`` and κ use), the six cell counts `CELLS`
    (reference_judge; items the reference calls Abstain are in none), each of `STATS` (`table_stats`) with
    ``_low``/``_high``, ``cluster`` and a ``note``.
    """
    by = list(by)
    require_columns(labels, (*by, "task", "trajectory_id", "verdict_raw", "truth"), "labels")
    cluster = "trajectory_id" if "task" in by else "task"
    rows = []
    for key, g in labels.groupby(by, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        decided = g[g["truth"].isin(BINARY) & g["verdict_raw"].isin(JUDGE_VERDICTS)]
        cells = _cells(decided["truth"], decided["verdict_raw"])
        counts = np.bincount(cells, minlength=len(CELLS))
        point = table_stats(counts)
        n_binary = int(counts[[0, 1, 3, 4]].sum())
        low, high = (_bootstrap(cells, decided[cluster].to_numpy(), n_boot, seed, ci) if len(decided)
                     else (np.full(len(STATS), np.nan),) * 2)
        row = {**dict(zip(by, key)), "n_labelled": len(g), "n_judge_abstain": int((g["verdict_raw"] == "Abstain").sum()),
               "n_reference_abstain": int((g["truth"] == "Abstain").sum()), "n": n_binary,
               **dict(zip(CELLS, map(int, counts)))}
        for k, name in enumerate(STATS):
            row.update({name: point[k], f"{name}_low": low[k], f"{name}_high": high[k]})
        row["cluster"] = cluster
        row["note"] = ("no item verdict where both say Yes or No" if not n_binary
                       else "κ undefined: one class only on both sides" if np.isnan(point[-1]) else "")
        rows.append(row)
    stats = [c for s in STATS for c in (s, f"{s}_low", f"{s}_high")]
    return pd.DataFrame(rows, columns=[*by, "n_labelled", "n_judge_abstain", "n_reference_abstain", "n", *CELLS,
                                       *stats, "cluster", "note"])


def _known(items: pd.DataFrame, audits: pd.DataFrame | None, verifier: pd.DataFrame | None,
           judges: Sequence[str] | None = None) -> pd.DataFrame:
    """`active.population` of every judge of `items` (or of `judges`), in one frame."""
    names = list(dict.fromkeys(items["judge"])) if judges is None else list(judges)
    parts = [population(items, audits, judge, verifier=verifier) for judge in names]
    return pd.concat(parts, ignore_index=True) if parts else population(items.iloc[:0], None, "")


def audited_items(items: pd.DataFrame, audits: pd.DataFrame | None, *,
                  verifier: pd.DataFrame | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """`items` with each raw verdict whose truth is known replaced by it, and the overrides used.

    The truth is the auditors' consensus, else the verifier's (`verifier`: `active.verifier_truth`); split
    audits override nothing. Returns ``(items, overrides)``; `overrides` lists ``trajectory_id, judge, item_id,
    verdict_raw, truth, source`` (``auditor`` or ``verifier``) where the truth differs from the judge.
    """
    require_columns(items, (*KEY, "verdict_raw"), "items")
    columns = [*KEY, "verdict_raw", "truth", "source"]
    if (audits is None or audits.empty) and (verifier is None or verifier.empty):
        return items.copy(), pd.DataFrame(columns=columns)
    known = _known(items, audits, verifier)
    known = known.loc[known["truth"].notna(), [*KEY, "truth", "source"]]
    merged = items.merge(known, on=KEY, how="left")
    changed = (merged["truth"].notna() & (merged["truth"] != merged["verdict_raw"])).to_numpy()
    overrides = merged.loc[changed, columns].reset_index(drop=True)
    out = items.copy()
    out["verdict_raw"] = np.where(changed, merged["truth"].to_numpy(object), merged["verdict_raw"].to_numpy(object))
    return out, overrides


_SCORED = ("trajectory_id", "task", "judge", "item_id", "route", "verdict_raw", "outcome")
"""The item columns `rescore` reads."""
_META = ("trajectory_id", "judge", "task", "outcome", "condition", "agent", "model", "trial_index")
"""The score columns `rescore` keeps."""


def rescore(items: pd.DataFrame, scores: pd.DataFrame) -> pd.DataFrame:
    """A scores frame from (possibly corrected) raw item verdicts: full postprocessing, then partial credit;
    the trajectory columns (condition, agent, model, trial index) come from `scores`."""
    full = score_variants(items, {"full": (True, True)}).drop(columns=["variant", "outcome", "task"])
    meta = scores[list(_META)]
    return meta.merge(full, on=["trajectory_id", "judge"], how="inner")


FIGURE_COLUMNS = ["judge", "figure", "group", "raw", "audited", "delta", "error_low", "error_high", "error_width",
                  "raw_low", "raw_high", "known", "known_low", "known_high", "n", "n_overrides", "n_unaudited",
                  "n_split"]
ERROR_DRAWS = 200
"""Draws of the verdicts not known behind each audited figure and its judge-error interval."""
VERDICTS = ("Yes", "No", "Abstain")


def _figure_frame(scores: pd.DataFrame, auc: Sequence[tuple], threshold: float) -> pd.DataFrame:
    """Long ``judge, figure, group, value, low, high, n``: the `auc` rows as given, the mean partial credit
    per condition and the matched-pair shares per transition, every judge of `scores` in one pass."""
    rows = [(judge, "auc", "all", value, low, high, n) for judge, value, low, high, n in auc]
    pc = scores.groupby(["judge", "condition"], sort=True)["partial_credit"].agg(["mean", "count"]).reset_index()
    rows += [(judge, "mean_partial_credit", condition, mean, np.nan, np.nan, int(count))
             for judge, condition, mean, count in pc.itertuples(index=False)]
    pairs = matched_pairs(scores)
    if len(pairs):
        for r in transition_table(pairs, threshold=threshold).itertuples(index=False):
            if r.n_pairs:
                rows.append((r.judge, "share_improving", r.transition, r.share_improving, np.nan, np.nan, r.n_scored))
                rows.append((r.judge, "share_regressing", r.transition, r.share_regressing, np.nan, np.nan,
                             r.n_scored))
    return pd.DataFrame(rows, columns=["judge", "figure", "group", "value", "low", "high", "n"])


def figure_values(scores: pd.DataFrame, judges: Sequence[str], *, n_boot: int, seed: int, ci: float,
                  threshold: float = 0.10) -> pd.DataFrame:
    """The reported figures of each judge from a scores frame, long: ``judge, figure, group, value, low, high, n``.

    AUC vs official PASS (with its task-clustered interval), mean partial credit per condition, and
    the matched-pair shares improving / regressing per transition.
    """
    s = scores[scores["judge"].isin(judges)]
    auc = []
    for judge in judges:
        sj = s[s["judge"] == judge]
        if sj["partial_credit"].notna().any():
            t = auc_table(bootstrap_auc(sj, [judge], n_boot=n_boot, seed=seed), ci=ci).iloc[0]
            auc.append((judge, t["auc"], t["ci_low"], t["ci_high"], int(t["n"])))
    return _figure_frame(s, auc, threshold)


def draw_unaudited_verdicts(items: pd.DataFrame, audits: pd.DataFrame | None, judge: str, n_draws: int,
                            rng: np.random.Generator, *, verifier: pd.DataFrame | None = None,
                            ) -> tuple[np.ndarray, pd.DataFrame, int, int]:
    """`n_draws` versions of one judge's item verdicts as a full audit could find them.

    A verdict whose truth is known (the auditors' consensus, else `verifier`'s) is that truth in every draw.
    A split verdict is, in each draw, one of the verdicts its auditors tie on, at random. In each draw each
    stratum's error rate θ is drawn from its Jeffreys posterior given that draw's errors among the verdicts drawn
    at random (audits chosen by hand are known, but no sample: `active.in_sample`), and each
    unaudited verdict is wrong with probability θ, replaced then by one of the two other verdicts: the first
    with a share drawn once per stratum and draw from Beta(c₁ + ½, c₂ + ½), c the corrections to each that the
    stratum's known errors hold. Returns (verdicts: draws × rows of `base`, `base`: the judge's rows of
    `items`, the number of unaudited verdicts, the number of split ones)."""
    base = items[items["judge"] == judge].reset_index(drop=True)
    pop = population(base, audits, judge, verifier=verifier)
    t = stratum_table(pop)
    verdicts = np.tile(base["verdict_raw"].to_numpy(dtype=object), (n_draws, 1))
    at = pop[KEY].merge(base[KEY].reset_index(), on=KEY, how="left")["index"].to_numpy()
    known = pop["truth"].notna().to_numpy()
    split = (pop["source"] == "split").to_numpy()
    open_ = ~pop["audited"].to_numpy()
    verdicts[:, at[known]] = pop.loc[known, "truth"].to_numpy(dtype=object)
    if not (split.any() or open_.any()):
        return verdicts, base, 0, 0
    raw = pop["verdict_raw"].to_numpy(dtype=object)
    h = t.index.get_indexer(pop["stratum"])
    drawn_ = in_sample(pop)  # chosen audits are known but estimate nothing
    errors = np.bincount(h[known & drawn_], weights=pop.loc[known & drawn_, "error"].to_numpy(float),
                         minlength=len(t))
    errors = np.tile(errors, (n_draws, 1))
    for k in np.flatnonzero(split):
        tied = np.array(pop.at[k, "tied"], dtype=object)
        drawn = tied[rng.integers(0, len(tied), n_draws)]
        verdicts[:, at[k]] = drawn
        if drawn_[k]:
            errors[:, h[k]] += drawn != raw[k]
    theta = rng.beta(errors + PRIOR, t["n"].to_numpy() - errors + PRIOR)
    rows = np.flatnonzero(open_)
    if len(rows):
        cells, cell_keys = pd.factorize(pd.Series(list(zip(pop["stratum"].iloc[rows], raw[rows]))))
        alternatives = np.array([[v for v in VERDICTS if v != r] for _, r in cell_keys], dtype=object)
        corrections = pop[known & (pop["error"] == 1.0).to_numpy()].groupby(["stratum", "truth"]).size()
        first = np.array([corrections.get((st, alt[0]), 0) for (st, _), alt in zip(cell_keys, alternatives)], float)
        second = np.array([corrections.get((st, alt[1]), 0) for (st, _), alt in zip(cell_keys, alternatives)], float)
        share = rng.beta(first + PRIOR, second + PRIOR, size=(n_draws, len(cell_keys)))  # once per stratum and draw
        wrong = rng.random((n_draws, len(rows))) < theta[:, h[rows]]
        pick_first = rng.random((n_draws, len(rows))) < share[:, cells]
        replacement = np.where(pick_first, alternatives[cells, 0], alternatives[cells, 1])
        verdicts[:, at[rows]] = np.where(wrong, replacement, raw[rows])
    return verdicts, base, int(open_.sum()), int(split.sum())


def _draw_auc(scores: pd.DataFrame, names: Sequence[str]) -> list[tuple]:
    """AUC vs official PASS of each draw (rows of `auc` for `_figure_frame`), all draws in one vectorised
    Mann-Whitney call (AUC = U / (n_PASS · n_FAIL)); trajectories without a partial credit are left out,
    as `bootstrap_auc` leaves them out."""
    grid = scores.pivot(index="judge", columns="trajectory_id", values="partial_credit").reindex(names)
    passed = (scores.drop_duplicates("trajectory_id").set_index("trajectory_id")["outcome"] == "PASS")
    passed = passed.reindex(grid.columns).to_numpy()
    pos, neg = grid.to_numpy(float)[:, passed], grid.to_numpy(float)[:, ~passed]
    n_pos, n_neg = np.isfinite(pos).sum(axis=1), np.isfinite(neg).sum(axis=1)
    if not (n_pos.any() and n_neg.any()):
        return []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a draw with a class left empty: NaN
        u = mannwhitneyu(pos, neg, axis=1, nan_policy="omit").statistic
        auc = np.where((n_pos > 0) & (n_neg > 0), u / (n_pos * n_neg), np.nan)
    return [(name, float(a), np.nan, np.nan, int(p + q)) for name, a, p, q in zip(names, auc, n_pos, n_neg)]


def _frame(columns: dict[str, np.ndarray]) -> pd.DataFrame:
    """A frame of the draws' columns as they are (text stays Python objects: converting millions of drawn labels
    to pandas' string arrays took most of the time)."""
    return pd.DataFrame({k: pd.Series(v, dtype=v.dtype if v.dtype.kind in "biuf" else object, copy=False)
                         for k, v in columns.items()})


def _by_judge(frame: pd.DataFrame | None, judges: Sequence[str]) -> dict[str, pd.DataFrame | None]:
    """Each judge's rows of `frame` (None where `frame` is None), split once."""
    if frame is None:
        return dict.fromkeys(judges)
    groups = dict(tuple(frame.groupby("judge", sort=False))) if len(frame) else {}
    return {j: groups.get(j, frame.iloc[:0]) for j in judges}


def _draw_quantiles(values: np.ndarray, ci: float) -> tuple[float, float, float]:
    """The median and the `ci` range of a figure's draws, each a value some draw took (no interpolation: a share
    over 2 pairs is reported as 0, ½ or 1); NaN draws (the figure undefined) are left out."""
    v = values[np.isfinite(values)]
    if not len(v):
        return np.nan, np.nan, np.nan
    return (float(np.quantile(v, 0.5, method="inverted_cdf")), float(np.quantile(v, (1 - ci) / 2, method="lower")),
            float(np.quantile(v, (1 + ci) / 2, method="higher")))


def figure_error_intervals(
    items: pd.DataFrame, scores: pd.DataFrame, audits: pd.DataFrame | None, judges: Sequence[str], *,
    n_draws: int = ERROR_DRAWS, seed: int = 0, ci: float = 0.95, threshold: float = 0.10,
    verifier: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Each figure as a full audit could find it: ``judge, figure, group, audited, error_low, error_high,
    error_width, n_unaudited, n_split``.

    The figure is recomputed over `n_draws` versions of the verdicts (`draw_unaudited_verdicts`): known ones
    fixed at their truth, split ones at one of their tied verdicts, unaudited ones wrong as often as the
    judge's error rate in their stratum may be. ``audited`` is the draws' median and ``error_low``–``error_high``
    their `ci` range, each a value the figure took in a draw: wide while little is audited (an unaudited
    stratum's error rate is anywhere in [0, 1], ½ on average), narrowing as audits arrive, a point once every
    verdict is known. Rescored through the same postprocessing as the raw figures.
    """
    rng = np.random.default_rng(seed)
    columns = ["judge", "figure", "group", "audited", "error_low", "error_high", "error_width", "n_unaudited",
               "n_split"]
    drawn, metas, counts, of = [], [], {}, {}
    mine = _by_judge(items, judges)
    theirs = _by_judge(audits, judges)
    known = _by_judge(verifier, judges)
    for judge in judges:  # every judge's draws rescored together: one postprocessing and scoring pass
        verdicts, base, n_open, n_split = draw_unaudited_verdicts(mine[judge], theirs[judge], judge, n_draws, rng,
                                                                  verifier=known[judge])
        names = [f"{judge}#{d}" for d in range(n_draws)]
        of.update(dict.fromkeys(names, judge))
        counts[judge] = (n_open, n_split)
        drawn.append(_frame({**{c: np.tile(base[c].to_numpy(), n_draws) for c in _SCORED if c != "judge"},
                             "judge": np.repeat(names, len(base)), "verdict_raw": verdicts.ravel()}))
        meta = scores[scores["judge"] == judge]
        metas.append(_frame({**{c: np.tile(meta[c].to_numpy(), n_draws) for c in _META if c != "judge"},
                             "judge": np.repeat(names, len(meta))}))
    if not drawn:
        return pd.DataFrame(columns=columns)
    s = rescore(pd.concat(drawn, ignore_index=True), pd.concat(metas, ignore_index=True))
    values = _figure_frame(s, _draw_auc(s, list(of)), threshold)
    values["judge"] = values["judge"].map(of)
    out = []
    for (judge, figure, group), g in values.groupby(["judge", "figure", "group"], sort=False):
        centre, lo, hi = _draw_quantiles(g["value"].to_numpy(float), ci)
        out.append((judge, figure, group, centre, lo, hi, hi - lo, *counts[judge]))
    return pd.DataFrame(out, columns=columns)


def audited_figures(
    items: pd.DataFrame, scores: pd.DataFrame, audits: pd.DataFrame | None, *, n_boot: int = 2000, seed: int = 0,
    ci: float = 0.95, threshold: float = 0.10, judges: Sequence[str] | None = None,
    error_draws: int = ERROR_DRAWS, ctrf: pd.DataFrame | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Raw and audited figures side by side (`FIGURE_COLUMNS`), and the overrides used.

    ``audited`` is the figure a full audit would most likely give: the median of `figure_error_intervals`
    (`error_draws` draws) with ``error_low``–``error_high`` around it — what is known of each verdict enters
    as it is (the auditors' consensus, else the verifier's per-test truth from `ctrf`), what is not enters by
    its stratum's estimated error. ``known`` is the figure with only the known truths applied (the unaudited
    verdicts as judged), recomputed from raw verdicts as ``raw`` is, with the same bootstrap draws, so their
    difference is the corrections alone; ``raw_low``… ``known_high`` are those two's sampling intervals
    (tasks resampled; AUC only). With ``error_draws=0`` no draw is made and ``audited`` is ``known``.
    """
    verifier = verifier_truth(items, ctrf)
    corrected, overrides = audited_items(items, audits, verifier=verifier)
    present = set(items["judge"]) & set(scores["judge"])
    judges = [j for j in (judge_order_of(items, scores).ordered(present) if judges is None else judges) if j in present]
    raw = figure_values(rescore(items, scores), judges, n_boot=n_boot, seed=seed, ci=ci, threshold=threshold)
    known = figure_values(rescore(corrected, scores), judges, n_boot=n_boot, seed=seed, ci=ci, threshold=threshold)
    keys = ["judge", "figure", "group"]
    m = raw.merge(known, on=keys, how="outer", suffixes=("_raw", "_known"))
    if error_draws:
        m = m.merge(figure_error_intervals(items, scores, audits, judges, n_draws=error_draws, seed=seed, ci=ci,
                                           threshold=threshold, verifier=verifier), on=keys, how="left")
    else:
        m = m.assign(audited=m["value_known"], error_low=np.nan, error_high=np.nan, error_width=np.nan,
                     n_unaudited=np.nan, n_split=np.nan)
    per_judge = overrides["judge"].value_counts()
    out = pd.DataFrame({
        **{k: m[k] for k in keys}, "raw": m["value_raw"], "audited": m["audited"], "delta": m["audited"] - m["value_raw"],
        "error_low": m["error_low"], "error_high": m["error_high"], "error_width": m["error_width"],
        "raw_low": m["low_raw"], "raw_high": m["high_raw"], "known": m["value_known"], "known_low": m["low_known"],
        "known_high": m["high_known"], "n": m["n_raw"], "n_overrides": m["judge"].map(per_judge).fillna(0).astype(int),
        "n_unaudited": m["n_unaudited"], "n_split": m["n_split"],
    })
    order = {j: k for k, j in enumerate(judges)}
    out = out.sort_values(["judge", "figure", "group"], key=lambda c: c.map(order) if c.name == "judge" else c,
                          kind="stable").reset_index(drop=True)
    return out[FIGURE_COLUMNS], overrides
