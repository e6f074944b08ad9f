"""Admin logic: progress, live α, disagreements, reassignment, the demo study and the `study` CLI."""

from __future__ import annotations

import math
from pathlib import Path

import krippendorff
import numpy as np
import pytest
from study_helpers import small_project, small_study

from annotations import (
    DEMO_STUDY_ID,
    agreement,
    disagreements,
    load_study,
    open_rater_session,
    rater_progress,
    reassign,
    unit_progress,
)
from gcpc_core.cli import main
from gcpc_core.demo import build_demo_project
from gcpc_core.store import Store
from annotations.targets import add_annotation


@pytest.fixture
def study(store: Store):
    return small_study(store, tasks=1, per_task=4, raters_per_unit=3, seed=2, pairs_per_task=2)


def test_progress_counts_per_rater_and_unit(store: Store, study) -> None:
    ann = open_rater_session(store, study.tokens["ann"])
    first = ann.queue()[0]
    ann.submit_rating(first.target, 3)
    ann.submit_rating(first.target, 4)  # an edit is still one answer
    rows = {r["rater"]: r for r in rater_progress(store, study.study_id)}
    assert rows["ann"]["done"] == 1 and rows["ann"]["total"] == 6 and rows["ben"]["done"] == 0
    assert rows["ann"]["ratings_assigned"] == 4 and rows["ann"]["pairs_assigned"] == 2 and rows["ann"]["has_link"]
    units = {(u["kind"], u["target"]): u for u in unit_progress(store, study.study_id)}
    assert units[("progress_rating", first.target)]["answers"] == 1
    assert not any(u["complete"] for u in units.values()) and len(units) == 6


def test_alpha_matches_krippendorff_and_is_nan_with_a_reason(store: Store, study) -> None:
    assert all(math.isnan(a.alpha) and "no answers yet" in a.note for a in agreement(store, study.study_id))
    given = {"ann": [1, 2, 3, 5], "ben": [1, 3, 3, 4], "cat": [2, 2, 4, 5]}
    for rater, ratings in given.items():
        s = open_rater_session(store, study.tokens[rater])
        units = sorted(i.target for i in s.queue() if i.kind == "progress_rating")
        for unit, rating in zip(units, ratings):
            s.submit_rating(unit, rating)
    alpha = {a.kind: a for a in agreement(store, study.study_id)}
    expected = krippendorff.alpha(reliability_data=np.array(list(given.values()), dtype=float),
                                  value_domain=[1, 2, 3, 4, 5], level_of_measurement="ordinal")
    assert alpha["progress_rating"].alpha == pytest.approx(expected)
    assert alpha["progress_rating"].units == 4 and alpha["progress_rating"].raters == 3
    assert math.isnan(alpha["preference"].alpha)


def test_a_malformed_stored_rating_is_left_out_of_alpha_and_said(store: Store, study) -> None:
    sessions = {r: open_rater_session(store, t) for r, t in study.tokens.items()}
    units = sorted(i.target for i in sessions["ann"].queue() if i.kind == "progress_rating")
    for rater, ratings in (("ann", [1, 2]), ("ben", [1, 3])):
        for unit, rating in zip(units, ratings):
            sessions[rater].submit_rating(unit, rating)
    unit = load_study(store, study.study_id).units[units[0]]
    add_annotation(store, kind="progress_rating", rater="cat", value={"rating": "lots"}, study_id=study.study_id,
                         task=unit.task, trajectory_id=unit.trajectory_id, unit_id=units[0])
    rating = agreement(store, study.study_id)[0]
    assert rating.units == 2 and rating.answers == 4 and "1 malformed answers left out" in rating.note


def test_disagreements_list_divided_units_and_pairs(store: Store, study) -> None:
    sessions = {r: open_rater_session(store, t) for r, t in study.tokens.items()}
    unit = sorted(i.target for i in sessions["ann"].queue() if i.kind == "progress_rating")[0]
    pair = next(i.target for i in sessions["ann"].queue() if i.kind == "preference")
    for rater, rating, choice in (("ann", 1, "A"), ("ben", 4, "B"), ("cat", 2, "A")):
        sessions[rater].submit_rating(unit, rating)
        sessions[rater].submit_preference(pair, choice, 2)
    rows = disagreements(store, study.study_id)
    assert [(r["kind"], r["target"]) for r in rows] == [("progress_rating", unit), ("preference", pair)]
    assert rows[0]["spread"] == 3 and "ann: 1" in rows[0]["answers"] and "__" in rows[0]["trajectories"]
    assert rows[1]["spread"] == pytest.approx(1 / 3, abs=1e-3)
    assert disagreements(store, study.study_id, min_spread=4)[0]["kind"] == "preference"


def test_reassign_moves_only_unanswered_items(store: Store) -> None:
    created = small_study(store, tasks=1, per_task=6, raters_per_unit=1, seed=3, pairs_per_task=3)
    ann = open_rater_session(store, created.tokens["ann"])
    answered = ann.queue()[0]
    ann.submit_rating(answered.target, 2)
    held = len(ann.queue())
    report = reassign(store, created.study_id, "ann", "ben")
    assert len(report.moved) == held - 1 and report.skipped == []
    assert [i.target for i in open_rater_session(store, created.tokens["ann"]).queue()] == [answered.target]
    assert rater_progress(store, created.study_id)[0]["done"] == 1
    with pytest.raises(ValueError):
        reassign(store, created.study_id, "ann", "ann")
    with pytest.raises(KeyError):
        reassign(store, created.study_id, "ann", "zed")


def test_demo_project_has_a_labelled_simulated_study(tmp_path: Path) -> None:
    db = tmp_path / "demo.db"
    build_demo_project(db)
    store = Store(db)
    study = store.studies.get(DEMO_STUDY_ID)
    assert study.is_simulated and "SIMULATED" in study.name
    raters = {r.rater: r for r in store.studies.raters(DEMO_STUDY_ID)}
    assert sum(r.is_simulated for r in raters.values()) == 3 and not raters["demo-you"].is_simulated
    rows = store.annotations.list(study_id=DEMO_STUDY_ID)
    assert rows and all(r.is_simulated and r.source == "simulated" for r in rows)
    assert {a.kind for a in agreement(store, DEMO_STUDY_ID) if not math.isnan(a.alpha)} == {"progress_rating", "preference"}
    build_demo_project(db)  # rebuilding keeps the one study
    assert len(store.studies.list()) == 1 and len(store.annotations.list(study_id=DEMO_STUDY_ID)) == len(rows)


def test_cli_study_create_prints_design_and_links(store: Store, capsys: pytest.CaptureFixture[str],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GCPC_ADMIN_TOKEN", "admin-secret")  # links to a public address need one
    small_project(store, tasks=2, per_stratum=2)
    db = str(store.path)
    args = ["study", "create", "--db", db, "--n-tasks", "12", "--per-task", "8", "--raters-per-unit", "2",
            "--seed", "5", "--rater", "alice", "--rater", "bob", "--rater", "carol", "--pairs-per-task", "4", "--base-url", "https://rate.example"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "NOTE: 12 tasks requested but only 2" in out and "2 tasks, 16 units, 8 pairs" in out
    links = [line.split(": ", 1)[1] for line in out.splitlines() if "https://rate.example/rate?token=" in line]
    assert len(links) == 3
    token = links[0].split("token=")[1]
    assert open_rater_session(store, token) is not None
    assert main(args) == 2  # the same design again: the study exists
    assert "already exists" in capsys.readouterr().err
    assert main(["study", "create", "--db", db, "--seed", "1", "--raters-per-unit", "4", "--rater", "a", "--rater", "b"]) == 2
    assert main(["study", "link", "--db", db, "--rater", "alice"]) == 0
    assert "http://127.0.0.1:8501/rate?token=" in capsys.readouterr().out  # .streamlit/config.toml's address
    assert main(["study", "reassign", "--db", db, "--from", "alice", "--to", "bob"]) == 0
    moved = capsys.readouterr().out
    assert "unanswered items from alice to bob" in moved and "bob already has it" in moved  # k = 2: shared items stay
    assert main(["study", "status", "--db", db]) == 0
    status = capsys.readouterr().out
    assert "alice: 0/" in status and "α progress_rating (ordinal): n/a" in status


@pytest.mark.parametrize("action", ["create", "status", "export", "import", "link", "reassign"])
def test_every_study_action_has_help(action: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["study", action, "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: python -m gcpc_core study {action}") and "--db" in out
