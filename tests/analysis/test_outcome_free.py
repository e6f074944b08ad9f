"""RQ1's headline AUC is computed from outcome-free scores (raw verdicts), with the postprocessed variants beside
it labelled as containing the outcome; a judge whose raw verdicts decide nothing, or too little, is warned about."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

from gcpc_core.analysis import build_report, score_variants
from gcpc_core.analysis.report import report_tables
from gcpc_core.analysis.synthetic import synthetic_frames


@pytest.fixture(scope="module")
def frames() -> dict[str, pd.DataFrame]:
    return synthetic_frames(n_tasks=12, n_pairs=80, n_unpaired=10, n_rated=12, n_raters=3, n_pref_pairs=10, seed=7)


def _rescored(frames: dict[str, pd.DataFrame], items: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """`frames` with `items` in place of the items, and the item judges' stored scores postprocessed from them."""
    full = score_variants(items, {"full": (True, True)}).drop(columns=["variant", "task", "outcome"])
    scores = frames["scores"]
    judged = scores[scores["judge"].isin(full["judge"].unique())].drop(
        columns=["partial_credit", "evidence_coverage", "perfect", "perfect_with_endpoint"])
    rest = scores[~scores["judge"].isin(full["judge"].unique())]
    out = pd.concat([rest, judged.merge(full, on=["trajectory_id", "judge"])], ignore_index=True)
    out.attrs = dict(scores.attrs)
    return {**frames, "items": items, "scores": out}


def test_the_headline_auc_reads_raw_verdicts_and_the_outcome_variants_sit_beside_it(frames) -> None:  # noqa: ANN001
    t = report_tables(frames, ["discrimination"], n_boot=200, seed=0).tables
    auc = t["discrimination_auc"].set_index("judge")
    raw = score_variants(frames["items"]).pivot_table(index=["trajectory_id", "judge"], columns="variant",
                                                      values="partial_credit").reset_index()
    data = t["discrimination_data"]
    for judge in ("gcpc", "fixed"):
        mine = data[["trajectory_id", "outcome"]].merge(raw[raw["judge"] == judge], on="trajectory_id")
        assert auc.loc[judge, "auc"] == pytest.approx(roc_auc_score(mine["outcome"] == "PASS", mine["raw"]))
        assert auc.loc[judge, "score"] == "partial credit of raw verdicts (outcome-free)"
        stored = frames["scores"][frames["scores"]["judge"] == judge].set_index("trajectory_id")["partial_credit"]
        assert auc.loc[judge, "auc"] != pytest.approx(roc_auc_score(mine["outcome"] == "PASS",
                                                                    mine["trajectory_id"].map(stored)))
    assert auc.loc["holistic", "score"] == "own score (no item verdicts)"  # a rating judge never read the outcome
    beside = t["discrimination_auc_with_outcome"].set_index(["judge", "variant"])
    assert beside.loc[("gcpc", "raw"), "auc"] == pytest.approx(auc.loc["gcpc", "auc"])
    assert not beside.loc[("gcpc", "raw"), "contains_outcome"]
    assert beside.xs("full", level="variant")["contains_outcome"].all()
    assert (beside.xs("full", level="variant")["auc"] > auc.loc[["gcpc", "fixed"], "auc"]).all()


def test_a_judge_abstaining_everywhere_gets_no_auc_and_a_warning(frames, tmp_path: Path) -> None:  # noqa: ANN001
    """Every raw verdict Abstain: the stored partial credit is the official outcome restated (its AUC reads 1.0);
    the report gives no AUC for that judge and says its score only restates the outcome."""
    items = frames["items"].assign(verdict_raw="Abstain")
    silent = _rescored(frames, items[items["judge"] == "gcpc"])
    stored = silent["scores"][silent["scores"]["judge"] == "gcpc"]
    assert roc_auc_score(stored["outcome"] == "PASS", stored["partial_credit"]) == 1.0  # what the headline used to read
    result = build_report(silent, tmp_path, n_boot=100, figures=False)
    assert "gcpc" not in set(result.tables["discrimination_auc"]["judge"])
    assert result.tables["discrimination_auc"]["judge"].tolist() == ["holistic"]
    warned = [w for w in result.warnings if w.startswith("judge gcpc abstained on every item")]
    assert len(warned) == 1 and "only restates the official outcome" in warned[0] and "no evidence" in warned[0]
    assert "> **Warning:** judge gcpc abstained on every item" in result.markdown.read_text()
    assert any("gcpc decided no item from log evidence" in m for m in result.missing)


def test_too_few_decided_trajectories_are_warned_about(frames) -> None:  # noqa: ANN001
    items = frames["items"]
    passing = items.loc[(items["judge"] == "gcpc") & (items["outcome"] == "PASS"), "trajectory_id"].unique()[:3]
    keep = items["trajectory_id"].isin(passing) | items["outcome"].eq("FAIL")
    few = items.assign(verdict_raw=items["verdict_raw"].where(keep | (items["judge"] != "gcpc"), "Abstain"))
    t = report_tables(_rescored(frames, few), ["discrimination"], n_boot=100)
    assert any(w.startswith("judge gcpc has an outcome-free score on only 3 PASS and") and "too few" in w
               for w in t.warnings), t.warnings
    assert any("gcpc decided no item of" in w for w in t.warnings)
    assert not any(w.startswith("judge fixed") for w in t.warnings)
    assert int(t.tables["discrimination_auc"].set_index("judge").loc["gcpc", "n_undecided"]) > 0


def test_item_judges_without_item_verdicts_have_no_headline_auc(frames) -> None:  # noqa: ANN001
    t = report_tables({"scores": frames["scores"]}, ["discrimination"], n_boot=50)
    assert t.tables["discrimination_auc"]["judge"].tolist() == ["holistic"]
    assert any("no item verdicts for judge(s) gcpc, fixed" in m for m in t.missing)
    assert np.isfinite(t.tables["discrimination_auc"]["auc"]).all()
