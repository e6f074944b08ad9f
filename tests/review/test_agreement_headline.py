"""The Agreement page's headline (gcpc_core.review.agreement.headline): each statistic read out of the
report's tables and put in words, on hand-made tables and on the demo; figures share axes and list items
in natural order."""

from __future__ import annotations

import pandas as pd
import pytest

from gcpc_core.analysis.figures import delta_histogram_figure, item_change_heatmap, natural_key
from gcpc_core.project_frames import frames_from_store
from gcpc_core.review.agreement import Dashboard, Headline, HeadlineView, dashboard, headline, headline_view, stored_headline
from gcpc_core.store import JudgmentRow, Store
from gcpc_core.store.project import ProjectRepository

NAN = float("nan")


def _dash(missing: tuple[str, ...] = (), **tables: list[dict]) -> Dashboard:
    return Dashboard(tables={name: pd.DataFrame(rows) for name, rows in tables.items()}, missing=missing)


def _by_label(lines: list[Headline]) -> dict[str, Headline]:
    return {line.statistic: line for line in lines}


def test_auc_and_paired_delta_are_read_with_their_intervals() -> None:
    lines = _by_label(headline(_dash(
        discrimination_auc=[
            {"judge": "gcpc", "n": 40, "n_tasks": 12, "auc": 0.81, "ci_low": 0.70, "ci_high": 0.90},
            {"judge": "holistic", "n": 40, "n_tasks": 12, "auc": 0.55, "ci_low": 0.41, "ci_high": 0.69},
            {"judge": "fixed", "n": 0, "n_tasks": 0, "auc": NAN, "ci_low": NAN, "ci_high": NAN,
             "note": "needs PASS and FAIL trajectories"}],
        discrimination_delta_auc=[
            {"judge_a": "gcpc", "judge_b": "holistic", "delta_auc": 0.26, "ci_low": 0.10, "ci_high": 0.40},
            {"judge_a": "gcpc", "judge_b": "fixed", "delta_auc": -0.02, "ci_low": -0.12, "ci_high": 0.07}])))
    gcpc = lines["AUC · gcpc"]
    assert gcpc.value == "0.810 [0.700, 0.900]"
    assert gcpc.reading.startswith("A PASS run outscores a FAIL run 81% of the time") and "above chance" in gcpc.reading
    assert "40 trajectories of 12 tasks" in gcpc.reading and "unreliable" not in gcpc.reading
    assert "includes chance" in lines["AUC · holistic"].reading
    assert (lines["AUC · fixed"].value, lines["AUC · fixed"].reading) == ("n/a", "needs PASS and FAIL trajectories")
    clear, unclear = lines["ΔAUC · gcpc − holistic"], lines["ΔAUC · gcpc − fixed"]
    assert clear.value == "+0.260 [0.100, 0.400]" and clear.reading.startswith("gcpc separates PASS from FAIL better")
    assert "excludes 0: a clear difference" in clear.reading
    assert unclear.reading.startswith("fixed separates") and "includes 0: no clear difference" in unclear.reading


def test_intervals_over_fewer_than_ten_tasks_are_flagged_unreliable() -> None:
    """3 tasks give 10 distinct task resamples: the headline says the interval is unreliable before reading it."""
    lines = _by_label(headline(_dash(
        discrimination_auc=[{"judge": "gcpc", "n": 36, "n_tasks": 3, "auc": 0.99, "ci_low": 0.98, "ci_high": 1.0},
                            {"judge": "fixed", "n": 36, "n_tasks": 1, "auc": 0.7, "ci_low": NAN, "ci_high": NAN}],
        discrimination_delta_auc=[{"judge_a": "gcpc", "judge_b": "fixed", "n_tasks": 9, "delta_auc": 0.29,
                                   "ci_low": 0.1, "ci_high": 0.4}],
        agreement_spearman=[{"judge": "gcpc", "n": 24, "n_tasks": 3, "rho": 0.5, "ci_low": 0.2, "ci_high": 0.9}])))
    auc = lines["AUC · gcpc"]
    assert auc.value == "0.990 [0.980, 1.000]"
    assert auc.reading.startswith("Interval unreliable: only 3 tasks (10 distinct task resamples; 10 or more tasks")
    assert lines["ΔAUC · gcpc − fixed"].reading.startswith("Interval unreliable: only 9 tasks (24310 distinct")
    assert lines["Spearman ρ · gcpc"].reading.startswith("Interval unreliable: only 3 tasks")
    assert "unreliable" not in lines["AUC · fixed"].reading  # one task: no interval at all, nothing to flag


def test_human_agreement_is_read_against_the_humans_own_agreement() -> None:
    lines = _by_label(headline(_dash(
        agreement_pairwise=[
            {"judge": "human-human", "n_votes_with_ties": 10, "agreement_with_ties": 0.8,
             "n_votes_without_ties": 8, "agreement_without_ties": 0.9},
            {"judge": "gcpc", "n_votes_with_ties": 30, "agreement_with_ties": 0.6,
             "n_votes_without_ties": 0, "agreement_without_ties": NAN}],
        agreement_spearman=[{"judge": "gcpc", "n": 24, "rho": -0.35, "ci_low": -0.6, "ci_high": -0.05}],
        agreement_alpha=[
            {"data": "ratings", "coders": "humans", "alpha": 0.85},
            {"data": "ratings", "coders": "humans + gcpc", "alpha": 0.6},
            {"data": "preferences", "coders": "humans", "alpha": 0.5}])))
    humans = lines["Pairwise agreement · humans with each other"]
    assert humans.value == "80%" and "10 comparisons; 90% when ties are left out" in humans.reading
    gcpc = lines["Pairwise agreement · gcpc"]
    assert gcpc.value == "60%" and gcpc.reading == "Picks the same side of a pair as a human rater in 60% of 30 votes."
    rho = lines["Spearman ρ · gcpc"]
    assert rho.value == "-0.35 [-0.60, -0.05]" and rho.reading.startswith("A moderate rank correlation")
    assert "get lower human progress ratings (24 trajectories)" in rho.reading
    assert "reliable (≥ 0.8)" in lines["α · progress ratings · humans"].reading
    assert "too low to rely on" in lines["α · pairwise preferences · humans"].reading
    assert "falls from 0.85" in lines["α · progress ratings · humans + gcpc"].reading


def test_a_missing_statistic_says_why() -> None:
    lines = headline(_dash(missing=("paired ΔAUC needs at least two judges.",
                                    "no human study data yet (progress ratings and pairwise preferences are empty): "
                                    "pairwise agreement, Spearman ρ and Krippendorff's α need them.")))
    by = _by_label(lines)
    assert [line.statistic for line in lines] == ["AUC vs official PASS", "Paired ΔAUC", "Pairwise agreement",
                                                  "Spearman ρ", "Krippendorff's α"]
    assert all(line.value == "not computed" for line in lines)
    assert by["Paired ΔAUC"].reading == "Paired ΔAUC needs at least two judges."
    assert by["Spearman ρ"].reading.startswith("No human study data yet")
    assert by["AUC vs official PASS"].reading.startswith("Not computed")  # no statement about it: said generally
    no_scores = headline(_dash(missing=("no judge scores yet (run `judge` and `score`), so no AUC.",)))
    assert no_scores[0].reading == "No judge scores yet (run `judge` and `score`), so no AUC."


def test_the_demo_headline(demo: Store) -> None:
    dash = dashboard(frames_from_store(demo), n_boot=200, seed=0)
    lines = _by_label(headline(dash))
    assert lines["AUC · probe"].value == "0.802 [0.786, 0.833]"  # raw verdicts; postprocessed it read 0.995
    assert "From the judge's raw verdicts, which never read the official outcome." in lines["AUC · probe"].reading
    assert ("Its postprocessed partial credit reads 0.995 on the same trajectories, but it contains the official "
            "outcome: no evidence.") in lines["AUC · probe"].reading
    assert lines["Paired ΔAUC"].value == "not computed"
    assert {"Pairwise agreement · probe", "Spearman ρ · probe", "α · progress ratings · humans + probe"} <= set(lines)
    assert lines["AUC · probe"].reading.startswith("Interval unreliable: only 3 tasks")  # the demo has 3 tasks
    assert any(w.startswith("only 3 tasks: every task-clustered interval") for w in dash.warnings)
    assert dash.caption("discrimination_auc") == "AUC per judge, from outcome-free scores (raw verdicts)"
    assert dash.caption("no_such_table") == "No such table"
    for name in dash.tables:
        assert "_" not in dash.caption(name), name


@pytest.mark.parametrize(("ids", "order"), [
    (["C10", "C2", "C1", "C11"], ["C1", "C2", "C10", "C11"]),
    (["item-2b", "item-10", "item-2a"], ["item-2a", "item-2b", "item-10"]),
])
def test_natural_order(ids: list[str], order: list[str]) -> None:
    assert sorted(ids, key=natural_key) == order


def test_item_heatmap_lists_items_in_natural_order() -> None:
    changes = pd.DataFrame([{"judge": "j", "task": "t", "item_id": i, "net_share": 0.0, "n_pairs": 1}
                            for i in ("C10", "C2", "C1")])
    assert list(item_change_heatmap(changes, "j").data[0].x) == ["C1", "C2", "C10"]


def test_delta_histograms_share_both_axes() -> None:
    pairs = pd.DataFrame([{"judge": "j", "transition": t, "delta": d}
                          for t, d in (("FAIL→PASS", 0.9), ("PASS→FAIL", -0.2), ("FAIL→FAIL", 0.1))])
    layout = delta_histogram_figure(pairs).layout
    xs = [layout[f"xaxis{k}"] for k in ("", "2", "3", "4")]
    ys = [layout[f"yaxis{k}"] for k in ("", "2", "3", "4")]
    for axes in (xs, ys):  # one panel's axis anchors the scale, the other three follow it
        anchors = [a.matches for a in axes]
        assert anchors.count(None) == 1 and len(set(anchors) - {None}) == 1, anchors
    assert all(tuple(a.range) == (-1.05, 1.05) for a in xs)


def test_figures_can_wait_until_their_section_is_opened(demo: Store) -> None:
    from gcpc_core.review.agreement import SECTIONS, section_figures

    frames = frames_from_store(demo)
    lazy = dashboard(frames, n_boot=100, seed=0, figures=False)
    eager = dashboard(frames, n_boot=100, seed=0)
    assert all(not figs for figs in lazy.figures.values())
    for section in SECTIONS:
        drawn = section_figures(section, lazy.tables, frames, n_boot=100, seed=0)
        assert [t for t, _ in drawn] == [t for t, _ in eager.figures[section]]
        for (_, a), (_, b) in zip(drawn, eager.figures[section]):
            assert a.to_json() == b.to_json()
    assert section_figures("Ablations", lazy.tables, frames) == []


def test_the_headline_from_its_own_sections_equals_the_full_reports(demo: Store, tmp_path) -> None:
    """The page computes only `HEADLINE_SECTIONS` before showing the headline: same figures, same tables."""
    from gcpc_core.analysis import build_report
    from gcpc_core.review.agreement import HEADLINE_SECTIONS

    frames = frames_from_store(demo)
    quick = dashboard(frames, sections=HEADLINE_SECTIONS, n_boot=200, seed=0, figures=False)
    full = dashboard(frames, n_boot=200, seed=0, figures=False)
    assert headline(quick) == headline(full)
    assert "calibration" not in quick.tables and "calibration" in full.tables
    report = build_report(frames, tmp_path, n_boot=200, seed=0, figures=False)
    assert set(full.tables) == set(report.tables) and set(full.missing) == set(report.missing)
    for name, table in quick.tables.items():
        pd.testing.assert_frame_equal(table, report.tables[name], check_exact=True)


def test_each_dashboard_section_is_computed_by_its_report_section(demo: Store) -> None:
    from gcpc_core.review.agreement import REPORT_SECTION, SECTIONS

    frames = frames_from_store(demo)
    full = dashboard(frames, n_boot=50, seed=0, figures=False)
    for section, report in REPORT_SECTION.items():
        part = dashboard(frames, sections=(report,), n_boot=50, seed=0, figures=False)
        shown = [name for name in SECTIONS[section] if name in full.tables and name != "judges"]
        assert all(name in part.tables for name in shown), (section, shown, list(part.tables))
        assert shown or part.missing, section  # a section shows its tables or says why it has none
        assert set(part.missing) <= set(full.missing)
    assert set(REPORT_SECTION) == set(SECTIONS)


def test_an_unknown_report_section_is_refused(demo: Store) -> None:
    from gcpc_core.analysis.report import report_tables

    with pytest.raises(ValueError, match="unknown report section.*'rq9'"):
        report_tables(frames_from_store(demo), ("discrimination", "rq9"))


# ---------------------------------------------------------------- the headline kept in the project DB


def _stored_slots(store: Store) -> dict[str, str]:
    from gcpc_core.review.agreement import HEADLINE_META_PREFIX

    rows = store.db.execute("SELECT key, value FROM meta WHERE key LIKE ?", [HEADLINE_META_PREFIX + "%"]).fetchall()
    return dict(rows)


def _fresh(store: Store, **kwargs: object) -> HeadlineView:
    return headline_view(frames_from_store(store), n_boot=200, seed=0, **kwargs)  # type: ignore[arg-type]


def _no_compute(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make any computation of the analysis fail: what is returned then was read from the DB."""
    import gcpc_core.review.agreement as agreement

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the headline was computed, not read")

    monkeypatch.setattr(agreement, "frames_from_store", refuse)


def test_the_demo_is_built_with_its_headline_stored(demo: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    computed = headline_view(frames_from_store(demo), n_boot=1000, seed=0)
    _no_compute(monkeypatch)
    shown = stored_headline(demo)  # the page's defaults: 1000 draws, seed 0, simulated raters in, default runs
    assert shown == computed and shown.simulated_answers > 0
    assert "AUC · probe" in {line.statistic for line in shown.lines}


def test_a_stored_headline_is_read_back_by_a_fresh_store(demo: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    first = stored_headline(demo, 200, 0, False)
    assert first == headline_view(frames_from_store(demo, include_simulated=False), n_boot=200, seed=0)
    assert len(_stored_slots(demo)) == 2  # the demo's defaults and these parameters, side by side
    _no_compute(monkeypatch)
    assert stored_headline(Store(demo.path), 200, 0, False) == first  # another connection, as a new server has


@pytest.mark.parametrize("change", ["judgment", "audit", "rating"])
def test_a_stored_headline_is_recomputed_when_the_data_change(demo: Store, change: str) -> None:
    from annotations.audits import record_item_audit
    from annotations.targets import add_annotation
    from gcpc_core.judge import score_project

    before = stored_headline(demo, 200, 0)
    slots = _stored_slots(demo)
    fail = next(t for t in demo.trials.trajectories() if t.outcome == "FAIL")
    if change == "judgment":  # every item of a FAIL run judged Yes: its score, and so the AUC, rises
        rows = [{**r.model_dump(), "verdict_raw": "Yes", "reason_raw": None}
                for r in demo.judging.judgments(trajectory_id=fail.id, judge="probe") if r.route != "endpoint"]
        demo.judging.save_trajectory_judgment(demo.judging.units("probe")[(fail.id, "probe")],
                                              [JudgmentRow(**r) for r in rows], [])
        score_project(demo, judge="probe")
    elif change == "audit":
        item = demo.judging.judgments(trajectory_id=fail.id, judge="probe")[0].item_id
        record_item_audit(demo, trajectory_id=fail.id, item_id=item, judge="probe", reviewer="ann", agree=True)
    else:  # a current progress rating replaced by another: Spearman ρ and α move
        rating = demo.annotations.list(kind="progress_rating")[0]
        value = {**rating.value, "rating": 1 if rating.value["rating"] > 1 else 5}
        add_annotation(demo, kind="progress_rating", rater=rating.rater, value=value, study_id=rating.study_id,
                       task=rating.task, trajectory_id=rating.trajectory_id, unit_id=rating.unit_id,
                       is_simulated=rating.is_simulated)
    after = stored_headline(demo, 200, 0)
    assert after == _fresh(demo)  # what the data say now, not what was stored
    assert _stored_slots(demo).keys() == slots.keys() and _stored_slots(demo) != slots  # the same entry, replaced
    if change != "audit":  # an audit feeds no headline statistic; it still dates the stored one
        assert after != before


def test_a_corrupt_or_unwritable_stored_headline_is_recomputed(demo: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    import sqlite3

    stored_headline(demo, 200, 0)
    for key in _stored_slots(demo):
        demo.project.set_meta(key, "{not json")
    assert stored_headline(demo, 200, 0) == _fresh(demo)
    assert sum(v.startswith('{"key"') for v in _stored_slots(demo).values()) == 1  # that entry replaced, well-formed

    def read_only(self: ProjectRepository, key: str, value: str) -> None:
        raise sqlite3.OperationalError("attempt to write a readonly database")

    monkeypatch.setattr(ProjectRepository, "set_meta", read_only)
    assert stored_headline(demo, 500, 1) == headline_view(frames_from_store(demo), n_boot=500, seed=1)


_AUC_IN_A_NEW_PROCESS = """
import sys
from gcpc_core.review.agreement import stored_headline
from gcpc_core.store import Store
view = stored_headline(Store(sys.argv[1]), 200, 0)
print(next(line.value for line in view.lines if line.statistic == "AUC · probe"))
"""


MIRROR = ("UPDATE judgments SET verdict_raw = CASE verdict_raw WHEN 'Yes' THEN 'No' WHEN 'No' THEN 'Yes' "
          "ELSE verdict_raw END WHERE route != 'endpoint'")
"""Every raw item verdict turned round (the headline AUC reads raw verdicts), in place."""


def _auc(view: HeadlineView) -> str:
    return next(line.value for line in view.lines if line.statistic == "AUC · probe")


def test_a_stored_headline_follows_an_edit_in_place_made_with_plain_sqlite(demo: Store) -> None:
    """Raw verdicts changed by an UPDATE (the sqlite3 shell, another tool): same row count, same rowids, same
    timestamps. The headline shown is the one the data give now, in this Store, a new one and a new process."""
    import sqlite3
    import subprocess
    import sys

    before = stored_headline(demo, 200, 0)
    assert _auc(before).startswith("0.8")
    with sqlite3.connect(demo.path) as conn:  # every raw verdict mirrored: PASS runs now score low, FAIL runs high
        assert conn.execute(MIRROR).rowcount > 0
    fresh = _fresh(demo)
    assert _auc(fresh).startswith("0.1")  # what the data now say: 1 − 0.802
    shown = subprocess.run([sys.executable, "-c", _AUC_IN_A_NEW_PROCESS, str(demo.path)], capture_output=True,
                           text=True, check=True, timeout=300).stdout.strip()
    assert shown == _auc(fresh)  # a new server process (the stored entry predates the edit)
    assert stored_headline(Store(demo.path), 200, 0) == fresh
    assert stored_headline(demo, 200, 0) == fresh  # the connection that stored the old headline
    with sqlite3.connect(demo.path) as conn:  # and back: the entry stored for the edited data is stale in turn
        conn.execute(MIRROR)
    assert stored_headline(demo, 200, 0) == before
