"""The report end to end on a small synthetic project: files, figures, escaping, missing data stated."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from gcpc_core.analysis import FrameContractError, build_report
from gcpc_core.analysis.synthetic import synthetic_frames

EVIL_TASK = "<script>alert('task')</script>"
EVIL_JUDGE = "<img src=x onerror=alert(1)>"


@pytest.fixture(scope="module")
def frames() -> dict[str, pd.DataFrame]:
    return synthetic_frames(n_tasks=8, n_pairs=60, n_unpaired=10, n_rated=12, n_raters=3, n_pref_pairs=10, seed=5)


def test_full_report(frames: dict[str, pd.DataFrame], tmp_path: Path) -> None:
    result = build_report(frames, tmp_path, n_boot=200, seed=1)
    assert result.markdown.is_file() and result.html.is_file()
    assert all(p.is_file() for p in result.csv.values())
    for name in ("discrimination_auc", "discrimination_delta_auc", "agreement_pairwise", "agreement_spearman",
                 "agreement_alpha", "skills_transitions", "skills_item_changes", "ablation_variant_auc",
                 "ablation_checklist", "ablation_perfect", "item_accuracy", "item_confusion", "discrimination_data"):
        assert name in result.csv, name
    page = result.html.read_text()
    assert page.count("plotly-graph-div") >= 5 and "Plotly.newPlot" in page
    assert page.count("* plotly.js v") == 1  # standalone: the library is inlined, once
    assert len(result.figures) >= 5
    md = result.markdown.read_text()
    for heading in ("RQ1", "RQ2", "RQ3", "RQ4 — Evidence sensitivity", "RQ4 — Ablations", "item accuracy"):
        assert heading in md
    assert result.missing == (result.missing[0],) and "evidence-perturbation" in result.missing[0]
    # every table shown in the report is a CSV that reads back to the same numbers
    back = pd.read_csv(result.csv["discrimination_auc"])
    assert back["auc"].tolist() == pytest.approx(result.tables["discrimination_auc"]["auc"].tolist())


def test_same_seed_same_numbers(frames: dict[str, pd.DataFrame], tmp_path: Path) -> None:
    a = build_report(frames, tmp_path / "a", n_boot=100, seed=3, figures=False)
    b = build_report(frames, tmp_path / "b", n_boot=100, seed=3, figures=False)
    for name in a.csv:
        assert a.csv[name].read_bytes() == b.csv[name].read_bytes(), name


def test_empty_ratings_are_stated_not_fatal(frames: dict[str, pd.DataFrame], tmp_path: Path) -> None:
    partial = {**frames, "ratings": frames["ratings"].iloc[0:0]}
    result = build_report(partial, tmp_path, n_boot=50, figures=False)
    md = result.markdown.read_text()
    assert "no human progress ratings yet" in md
    assert "agreement_spearman" not in result.csv and "agreement_pairwise" in result.csv
    none = build_report({**frames, "ratings": pd.DataFrame(), "preferences": None}, tmp_path / "n", n_boot=50,
                        figures=False)
    assert any("no human study data yet" in m for m in none.missing)


def test_nothing_available_still_writes_a_report(tmp_path: Path) -> None:
    result = build_report({}, tmp_path, n_boot=10)
    md = result.markdown.read_text()
    assert "no judge scores yet" in md and "Not computed" in md
    assert result.html.is_file() and result.figures == ()
    assert "inputs" in result.csv


def test_scores_only(frames: dict[str, pd.DataFrame], tmp_path: Path) -> None:
    result = build_report({"scores": frames["scores"]}, tmp_path, n_boot=50, figures=False)
    assert "discrimination_auc" in result.csv and "skills_transitions" in result.csv
    text = " ".join(result.missing)
    assert "no item verdicts" in text and "needs item verdicts and per-test CTRF results" in text


def test_judges_restrict_every_comparison(frames: dict[str, pd.DataFrame], tmp_path: Path) -> None:
    result = build_report(frames, tmp_path, n_boot=50, figures=False, judges=["holistic", "gcpc"])
    assert result.tables["discrimination_auc"]["judge"].tolist() == ["holistic", "gcpc"]
    assert set(result.tables["ablation_variant_auc"]["judge"]) == {"gcpc"}
    assert set(result.tables["skills_transitions"]["judge"]) == {"holistic", "gcpc"}
    only_holistic = build_report(frames, tmp_path / "h", n_boot=50, figures=False, judges=["holistic"])
    assert any("score variants not computed" in m for m in only_holistic.missing)
    assert any("paired ΔAUC needs at least two judges" in m for m in only_holistic.missing)


def test_data_strings_are_escaped_in_html(frames: dict[str, pd.DataFrame], tmp_path: Path) -> None:
    evil = {}
    for name, f in frames.items():
        f = f.copy()
        if "task" in f.columns:
            f["task"] = f["task"].replace("task-000", EVIL_TASK)
        if "judge" in f.columns:
            f["judge"] = f["judge"].replace("fixed", EVIL_JUDGE)
        evil[name] = f
    result = build_report(evil, tmp_path, n_boot=50, seed=0)
    page = result.html.read_text()
    assert EVIL_TASK not in page and EVIL_JUDGE not in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page


def test_contract_violations_fail_loudly(frames: dict[str, pd.DataFrame], tmp_path: Path) -> None:
    with pytest.raises(FrameContractError, match="'outcome'"):
        build_report({"scores": frames["scores"].drop(columns="outcome")}, tmp_path, n_boot=10)


def test_judges_restrict_the_task_vs_fixed_ablation(frames: dict[str, pd.DataFrame], tmp_path: Path) -> None:
    both = build_report(frames, tmp_path / "b", n_boot=50, figures=False, judges=["gcpc", "fixed"])
    assert "ablation_checklist" in both.csv
    result = build_report(frames, tmp_path, n_boot=50, figures=False, judges=["holistic", "gcpc"])
    assert "ablation_checklist" not in result.csv
    assert any("task vs fixed checklist" in m and "among the compared judges" in m for m in result.missing)


def test_a_malformed_rating_is_reported_and_the_rest_of_the_report_produced(
        frames: dict[str, pd.DataFrame], tmp_path: Path) -> None:
    ratings = frames["ratings"].astype({"rating": object})
    ratings.loc[3, "rating"] = "4.5 stars"
    ratings.loc[5, "rating"] = 7  # off the declared 1–5 scale
    result = build_report({**frames, "ratings": ratings}, tmp_path, n_boot=50, figures=False)
    for name in ("discrimination_auc", "skills_transitions", "agreement_spearman", "agreement_alpha",
                 "ablation_variant_auc", "item_accuracy"):
        assert name in result.csv, name
    rejected = result.tables["agreement_rejected_rows"]
    assert rejected[["frame", "row"]].values.tolist() == [["ratings", 3], ["ratings", 5]]
    assert rejected["reason"].tolist() == ["rating '4.5 stars' is not a whole number",
                                           "rating 7 is outside the declared scale 1–5"]
    note = next(m for m in result.missing if "malformed" in m)
    assert note.startswith("2 malformed human answers") and "ratings row 3" in note and "ratings row 5" in note
    alpha = result.tables["agreement_alpha"].set_index(["data", "coders"])
    assert alpha.loc[("ratings", "humans"), "n_answers"] == len(ratings) - 2


def test_the_report_maps_judge_scores_onto_the_declared_scale(frames: dict[str, pd.DataFrame], tmp_path: Path) -> None:
    narrow = frames["ratings"].assign(rating=frames["ratings"]["rating"].clip(2, 4))
    declared = build_report({**frames, "ratings": narrow}, tmp_path / "d", n_boot=20, figures=False)
    given = build_report({**frames, "ratings": narrow.drop(columns=["scale_min", "scale_max"])}, tmp_path / "g",
                         n_boot=20, figures=False, rating_scale=(1, 5))
    observed = build_report({**frames, "ratings": narrow.drop(columns=["scale_min", "scale_max"])}, tmp_path / "o",
                            n_boot=20, figures=False)
    alpha = {k: r.tables["agreement_alpha"].set_index(["data", "coders"]) for k, r in
             (("declared", declared), ("given", given), ("observed", observed))}
    key = ("ratings", "humans + gcpc")
    assert alpha["declared"].loc[key, "scale"] == "1–5" == alpha["given"].loc[key, "scale"]
    assert alpha["declared"].loc[key, "alpha"] == pytest.approx(alpha["given"].loc[key, "alpha"])
    assert alpha["observed"].loc[key, "scale"] == "2–4" and "observed range" in alpha["observed"].loc[key, "note"]
    assert alpha["observed"].loc[key, "alpha"] != pytest.approx(alpha["declared"].loc[key, "alpha"])


def test_a_single_task_gives_flagged_nan_intervals(tmp_path: Path) -> None:
    one = synthetic_frames(n_tasks=1, n_pairs=30, n_unpaired=0, n_rated=8, n_raters=2, n_pref_pairs=4, seed=2)
    result = build_report(one, tmp_path, n_boot=50, figures=False)
    for name, column in (("discrimination_auc", "auc"), ("agreement_spearman", "rho")):
        table = result.tables[name]
        assert table[column].notna().all(), name
        assert table["ci_low"].isna().all() and table["ci_high"].isna().all(), name
        assert table["note"].str.contains("fewer than 2 tasks").all(), name
    delta = result.tables["discrimination_delta_auc"]
    assert delta["ci_low"].isna().all() and delta["share_draws_gt_0"].isna().all()


def test_synthetic_frames_without_preference_pairs(tmp_path: Path) -> None:
    frames = synthetic_frames(n_tasks=4, n_pairs=20, n_unpaired=2, n_rated=6, n_pref_pairs=0, seed=1)
    assert frames["preferences"].empty and list(frames["preferences"].columns)[:3] == ["pair_id", "task", "left_id"]
    result = build_report(frames, tmp_path, n_boot=20, figures=False)
    assert any("no pairwise preferences yet" in m for m in result.missing)


EVIL_MD = "run ![x](http://127.0.0.1:9/p.png) [click](http://evil) <b>b</b> **bold** | pipe `tick"


def test_data_strings_are_escaped_in_markdown(frames: dict[str, pd.DataFrame], tmp_path: Path) -> None:
    """A judge name (as a run is named in the tables) with image, link, HTML, emphasis and a table pipe: every
    line of report.md that shows it holds no live Markdown, and the table keeps its columns."""
    from markdown_reader import live_markup, read

    evil = {}
    for name, f in frames.items():
        f = f.copy()
        if "judge" in f.columns:
            f["judge"] = f["judge"].replace("fixed", EVIL_MD)
        evil[name] = f
    result = build_report(evil, tmp_path, n_boot=50, seed=0, figures=False)
    document = result.markdown.read_text().splitlines()
    lines = [line for line in document if "click" in line]
    assert lines, "the judge name is not in report.md"

    def columns(line: str) -> int:
        return len(re.findall(r"(?<!\\)\|", line))

    for k, line in enumerate(document):  # each row of a table keeps its header's columns
        if "click" in line and line.startswith("|"):
            header = next(document[j] for j in range(k - 1, -1, -1) if document[j + 1].startswith("| ---"))
            assert columns(line) == columns(header), (header, line)
    for line in lines:
        cells = re.split(r"(?<!\\)\|", line)[1:-1] if line.startswith("|") else [line]
        for cell in cells:
            assert live_markup(cell) == [], line
        if line.startswith("|"):
            assert any(EVIL_MD in read(c.strip()).shown for c in cells), line  # in one cell, literally


def test_the_reports_own_code_spans_are_kept_and_the_rest_escaped() -> None:
    from gcpc_core.analysis.report import _md_prose

    own = "no judge scores yet (run `judge` and `score`), so no AUC."
    assert _md_prose(own) == own  # nothing in it acts as Markdown mid-line: the raw file reads as written
    assert _md_prose("runs a![i](x.png) <b>, *b* and `perturb` | x") == r"runs a!\[i\](x.png) \<b\>, \*b\* and `perturb` \| x"


def test_intervals_over_fewer_than_ten_tasks_are_flagged_in_the_report(tmp_path: Path) -> None:
    """3 tasks give 10 distinct task resamples: the report warns once at the top and every interval's note says
    it is unreliable; 12 tasks are not flagged."""
    few = synthetic_frames(n_tasks=3, n_pairs=30, n_unpaired=6, n_rated=9, n_raters=2, n_pref_pairs=6, seed=2)
    result = build_report(few, tmp_path / "few", n_boot=200, seed=0, figures=False)
    assert len(result.warnings) >= 1 and result.warnings[0].startswith("only 3 tasks: every task-clustered interval")
    assert "10 distinct task resamples" in result.warnings[0]
    assert "> **Warning:** only 3 tasks" in result.markdown.read_text()
    assert "<b>Warning:</b> only 3 tasks" in result.html.read_text()
    flag = "interval unreliable: only 3 tasks (10 distinct task resamples"
    for name in ("discrimination_auc", "discrimination_delta_auc", "agreement_spearman"):
        assert result.tables[name]["note"].str.contains(flag, regex=False).all(), name
    many = build_report(synthetic_frames(n_tasks=12, n_pairs=60, n_unpaired=10, n_rated=12, n_raters=3,
                                         n_pref_pairs=10, seed=2), tmp_path / "many", n_boot=200, figures=False)
    assert not any("tasks" in w for w in many.warnings)
    assert not many.tables["discrimination_auc"]["note"].str.contains("unreliable").any()
