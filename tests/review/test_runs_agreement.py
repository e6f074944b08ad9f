"""gcpc_core.review.runs, .agreement, .overview, the analysis loader and the Store's review helpers."""

from __future__ import annotations

import io
import json
import tarfile
import zipfile
from pathlib import Path

import pandas as pd
import pytest

from annotations.audits import record_item_audit
from gcpc_core.project_frames import frames_from_store
from gcpc_core.project_frames import CTRF_COLUMNS, ITEM_COLUMNS, SCORE_COLUMNS
from gcpc_core.demo import write_demo_corpus
from gcpc_core.review.agreement import SECTIONS, audit_agreement, auc_ci_figure, dashboard, table_bytes
from gcpc_core.review.audit import AuditFilters, judge_stats, trajectory_frame
from gcpc_core.review.overview import judges_frame, overview_trajectories, studies_frame
from gcpc_core.ingest.archive import ArchiveError, uploads_dir
from gcpc_core.review.runs import JOBS, JobRunner, job_run, needs_llm, run_progress, runs_frame, start_archive_import
from gcpc_core.store import JudgeUnitRow, LLMCallRow, RunRow, Store, utcnow

NO_LLM = ("OPENAI_BASE_URL", "OPENAI_API_KEY", "GCPC_MODEL")


@pytest.fixture
def demo(demo_copy: Path) -> Store:
    return Store(demo_copy)


@pytest.fixture
def no_llm(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in NO_LLM:
        monkeypatch.delenv(name, raising=False)


# ---------------------------------------------------------------- store helpers


def test_data_version_changes_with_the_tables_it_covers(demo: Store) -> None:
    judged, audits = demo.project.data_version("judgments", "scores"), demo.project.data_version("annotations")
    assert demo.project.data_version("judgments", "scores") == judged  # stable while nothing is written
    traj = demo.trials.trajectories()[0]
    record_item_audit(demo, trajectory_id=traj.id, item_id="I1", judge="probe", reviewer="a", agree=True)
    assert demo.project.data_version("annotations") != audits
    assert demo.project.data_version("judgments", "scores") == judged
    assert set(demo.project.data_version().split("|")) >= {v for v in judged.split("|")}


def test_event_counts(demo: Store) -> None:
    counts = demo.trials.event_counts()
    assert sum(counts.values()) == demo.project.counts()["events"] and len(counts) == 36


# ---------------------------------------------------------------- jobs and runs


def test_score_and_probe_judge_jobs_record_runs(demo: Store, no_llm: None) -> None:
    runner = JobRunner()
    job = runner.wait(runner.start(demo.path, "judge", {"judge": "probe", "force": True}).id, timeout=60)
    assert job.status == "done", job.lines
    run = job_run(demo, job)
    assert run is not None and run.kind == "judge-probe" and run.status == "done"
    assert run_progress(demo, run) == (36, 36)
    score = runner.wait(runner.start(demo.path, "score", {}).id, timeout=60)
    assert score.status == "done" and any("scored 36" in line for line in score.lines)
    assert job_run(demo, score).kind == "score"
    frame = runs_frame(demo)
    assert frame["started_at"].is_monotonic_decreasing  # newest first
    assert frame.set_index("id").loc[run.id, "progress"] == "36/36"
    assert frame.set_index("id").loc[score.run_id, "status"] == "done"
    assert [j.id for j in runner.jobs(demo.path)] == [score.id, job.id] and not runner.running(demo.path)


def test_import_job_reports_progress_and_failures(tmp_path: Path, no_llm: None) -> None:
    tasks, trials = write_demo_corpus(tmp_path / "corpus", seed=3)
    store = Store(tmp_path / "p.db")
    runner = JobRunner()
    job = runner.wait(runner.start(store.path, "import", {"tasks_dir": str(tasks), "trials_dir": str(trials)}).id, 120)
    assert job.status == "done" and any(line.startswith("trials: 36 imported") for line in job.lines)
    run = job_run(store, job)
    assert run.kind == "import" and run.params["trials"] == 36 and run_progress(store, run) == (36, 36)
    missing = runner.wait(runner.start(store.path, "import", {"trials_dir": str(tmp_path / "nowhere")}).id, 60)
    assert missing.status == "failed" and "not a folder" in missing.error


def test_an_uploaded_archive_is_unpacked_and_imported_or_refused_whole(tmp_path: Path, no_llm: None) -> None:
    tasks, trials = write_demo_corpus(tmp_path / "corpus", seed=3)
    packed = io.BytesIO()
    with tarfile.open(fileobj=packed, mode="w:gz") as tf:
        tf.add(tasks, arcname="tasks")
        tf.add(trials, arcname="trials")
    db = tmp_path / "p.db"
    job = JOBS.wait(start_archive_import(db, "job.tar.gz", packed.getvalue(), holds="tasks and trials").id, 120)
    assert job.status == "done" and any(line.startswith("trials: 36 imported") for line in job.lines), job.lines
    assert job.params["tasks_dir"] == job.params["trials_dir"]
    assert Path(job.params["trials_dir"]).parent == uploads_dir(db) and job.params["archive"] == "job.tar.gz"

    evil = io.BytesIO()
    with zipfile.ZipFile(evil, "w") as zf:
        zf.writestr("trials/../../escaped.txt", "x")
    with pytest.raises(ArchiveError, match="climb out"):
        start_archive_import(db, "evil.zip", evil.getvalue())
    with pytest.raises(ValueError, match="unknown archive content"):
        start_archive_import(db, "job.tar.gz", packed.getvalue(), holds="everything")
    assert [j.id for j in JOBS.jobs(db)] == [job.id]  # no job started for a refused archive
    assert [p.name for p in uploads_dir(db).iterdir()] == [Path(job.params["trials_dir"]).name]
    assert not (tmp_path / "escaped.txt").exists()


def test_llm_jobs_need_an_endpoint(demo: Store, no_llm: None) -> None:
    runner = JobRunner()
    assert needs_llm("judge", {"judge": "gcpc"}) and needs_llm("synthesize", {}) and not needs_llm("score", {})
    assert not needs_llm("judge", {"judge": "probe"})
    with pytest.raises(ValueError, match="LLM not configured"):
        runner.start(demo.path, "judge", {"judge": "gcpc"})
    with pytest.raises(ValueError, match="LLM not configured"):
        runner.start(demo.path, "synthesize", {})
    with pytest.raises(ValueError, match="unknown job kind"):
        runner.start(demo.path, "dance", {})
    assert runner.jobs() == []


def test_a_running_run_shows_live_progress_and_cost(demo: Store) -> None:
    run_id = demo.runs.start(RunRow(kind="judge-gcpc", model="m", prompt_version="p", rules_version="r",
                                    params={"trajectories": 10})).id
    demo.runs.record_llm_call(LLMCallRow(run_id=run_id, status="ok", cache_hit=0, prompt_tokens=100,
                          completion_tokens=20, cost_usd=0.5, created_at=utcnow()))
    demo.runs.record_llm_call(LLMCallRow(run_id=run_id, status="ok", cache_hit=1, prompt_tokens=100,
                          completion_tokens=20, cost_usd=0.0, created_at=utcnow()))
    unit = JudgeUnitRow(trajectory_id=demo.trials.trajectories()[0].id, judge="gcpc",
                        task=demo.trials.trajectories()[0].task, prompt_version="p",
                        created_at="2026-01-01T00:00:00+00:00", run_id=run_id, label="live")
    demo.judging.save_trajectory_judgment(unit, [], [])
    live = demo.runs.progress(run_id)
    assert (live.judged, live.calls, live.http_calls, live.cache_hits) == (1, 2, 1, 1)
    assert live.prompt_tokens == 200 and live.cost_usd == pytest.approx(0.5)
    row = runs_frame(demo).set_index("id").loc[run_id]
    assert row["status"] == "running" and row["progress"] == "1/10" and row["cost_usd"] == pytest.approx(0.5)


# ---------------------------------------------------------------- loader, dashboard, overview


def test_frames_from_store_follow_the_contracts(demo: Store) -> None:
    frames = frames_from_store(demo)
    assert list(frames["scores"].columns) == list(SCORE_COLUMNS) and len(frames["scores"]) == 36
    assert list(frames["items"].columns) == list(ITEM_COLUMNS)
    assert len(frames["items"]) == demo.project.counts()["judgments"]
    assert list(frames["ctrf"].columns) == list(CTRF_COLUMNS)
    assert len(frames["ctrf"]) == sum(len(t.ctrf) for t in demo.trials.trajectories())
    assert frames["scores"]["partial_credit"].dtype == float
    assert all(isinstance(r, list) for r in frames["items"]["verifier_refs"])
    assert frames["ratings"]["simulated"].all() and len(frames["preferences"]) > 0
    people = frames_from_store(demo, include_simulated=False)
    assert people["ratings"].empty and people["preferences"].empty


def test_frames_of_an_empty_project(store: Store) -> None:
    frames = frames_from_store(store)
    assert all(f.empty for f in frames.values())
    assert list(frames["scores"].columns) == list(SCORE_COLUMNS)


def test_dashboard_on_the_demo(demo: Store) -> None:
    dash = dashboard(frames_from_store(demo), n_boot=200)
    assert dash.tables["discrimination_auc"]["auc"].notna().all()
    titles = {t for figs in dash.figures.values() for t, _ in figs}
    assert {"AUC with CI", "ROC", "Δ by transition", "Pairwise agreement"} <= titles
    assert any("two judges" in m for m in dash.missing)  # one judge only: no paired ΔAUC
    for section in SECTIONS:
        for name, table in dash.section_tables(section):
            assert name in SECTIONS[section] and isinstance(table, pd.DataFrame)


def test_dashboard_shows_evidence_sensitivity_once_perturbed(demo: Store) -> None:
    from gcpc_core.cli import main

    assert any("evidence-perturbation" in m for m in dashboard(frames_from_store(demo), n_boot=50).missing)
    version = demo.project.data_version("perturbations")
    assert main(["perturb", "--db", str(demo.path), "--judge", "probe", "--quiet"]) == 0
    assert demo.project.data_version("perturbations") != version  # the app's caches see the new results
    dash = dashboard(frames_from_store(demo), n_boot=50)
    assert [name for name, _ in dash.section_tables("Evidence sensitivity")][:1] == ["sensitivity"]
    assert [t for t, _ in dash.figures["Evidence sensitivity"]] == ["Perturbed Yes items judged No"]


def test_dashboard_without_human_data_says_so(demo: Store) -> None:
    dash = dashboard(frames_from_store(demo, include_simulated=False), n_boot=200)
    assert any("no human study data" in m for m in dash.missing)
    assert "agreement_pairwise" not in dash.tables


def test_dashboard_on_an_empty_project(store: Store) -> None:
    dash = dashboard(frames_from_store(store), n_boot=50)
    assert any("no judge scores" in m for m in dash.missing) and all(not f for f in dash.figures.values())


def test_audit_agreement_and_downloads(demo: Store) -> None:
    assert audit_agreement(demo).empty
    rows = [r for r in demo.judging.judgments() if r.route == "assertion"][:3]
    record_item_audit(demo, trajectory_id=rows[0].trajectory_id, item_id=rows[0].item_id, judge="probe",
                      reviewer="a", agree=True)
    record_item_audit(demo, trajectory_id=rows[1].trajectory_id, item_id=rows[1].item_id, judge="probe",
                      reviewer="b", agree=False, corrected_verdict="Abstain")
    table = audit_agreement(demo)
    assert table.to_dict("records")[0] | {} == {
        "judge": "probe", "route": "assertion", "audited_items": 2, "reviewers": 2, "agree": 1, "disagree": 1,
        "agreement": 0.5, "corrected_to_yes": 0, "corrected_to_no": 0, "corrected_to_abstain": 1}
    csv = table_bytes(table, "csv").decode()
    assert csv.splitlines()[0].startswith("judge,route,audited_items")
    lines = table_bytes(table, "jsonl").decode().splitlines()
    assert json.loads(lines[0])["agreement"] == 0.5
    with pytest.raises(ValueError):
        table_bytes(table, "xlsx")
    fig = auc_ci_figure(pd.DataFrame({"judge": ["<b>x</b>"], "auc": [0.8], "ci_low": [0.7], "ci_high": [0.9]}))
    assert fig.data[0].x[0] == "&lt;b&gt;x&lt;/b&gt;"  # plotly renders some HTML: data labels are escaped


def test_overview_frames(demo: Store) -> None:
    frame, stats = trajectory_frame(demo), judge_stats(demo)
    judges = judges_frame(frame, stats)
    assert judges.to_dict("records")[0]["trajectories"] == "36/36"
    view = overview_trajectories(frame, stats, AuditFilters(outcomes=("PASS",)))
    assert "pc_probe" in view.columns and set(view["outcome"]) == {"PASS"} and len(view) == demo.project.counts()["pass"]
    studies = studies_frame(demo)
    assert len(studies) == 1 and bool(studies["simulated"].iloc[0])


def test_data_version_changes_with_an_edit_in_place_by_another_connection(demo: Store) -> None:
    """An UPDATE keeps row counts, rowids and timestamps: the version still moves, for that table only, and a
    new Store (a restart) reads the same version."""
    import sqlite3

    before = {name: demo.project.data_version(name) for name in ("scores", "judgments", "trajectories", "studies")}
    with sqlite3.connect(demo.path) as conn:
        conn.execute("UPDATE scores SET partial_credit = 0.5 WHERE rowid = (SELECT min(rowid) FROM scores)")
        conn.execute("UPDATE studies SET name = name || ' (renamed)'")
    after = {name: demo.project.data_version(name) for name in before}
    assert after["scores"] != before["scores"] and after["studies"] != before["studies"]
    assert (after["judgments"], after["trajectories"]) == (before["judgments"], before["trajectories"])
    assert {name: Store(demo.path).project.data_version(name) for name in before} == after
    with pytest.raises(ValueError, match="no write counter for table.*events"):
        demo.project.data_version("events")


def test_a_judge_abstaining_everywhere_is_no_evidence_on_the_overview_and_the_headline(demo: Store) -> None:
    """Every raw verdict Abstain, then scored: the stored partial credit is the official outcome restated (its AUC
    reads 1.0). The Overview and the Agreement headline say that the score only restates the outcome and that its
    AUC is no evidence; a judge that decides items gets no such warning."""
    import sqlite3

    from sklearn.metrics import roc_auc_score

    from gcpc_core.judge import score_project
    from gcpc_core.review.agreement import HEADLINE_SECTIONS, headline
    from gcpc_core.review.overview import judge_warnings

    assert judge_warnings(judge_stats(demo)) == []
    with sqlite3.connect(demo.path) as conn:
        assert conn.execute("UPDATE judgments SET verdict_raw = 'Abstain' WHERE route != 'endpoint'").rowcount > 0
    score_project(demo)
    frames = frames_from_store(demo)
    s = frames["scores"][frames["scores"]["judge"] == "probe"]
    assert roc_auc_score(s["outcome"] == "PASS", s["partial_credit"]) == 1.0  # what the headline used to show
    warnings = judge_warnings(judge_stats(demo))
    assert len(warnings) == 1 and warnings[0].startswith("judge probe abstained on every item of its 36 trajectories")
    assert "only restates the official outcome" in warnings[0] and "no evidence" in warnings[0]
    lines = headline(dashboard(frames, sections=HEADLINE_SECTIONS, n_boot=50, figures=False))
    auc = next(line for line in lines if line.statistic.startswith("AUC"))
    assert (auc.statistic, auc.value) == ("AUC vs official PASS", "no evidence")
    assert auc.reading.startswith("Judge probe abstained on every item") and "no evidence" in auc.reading


def test_a_cached_loader_called_with_its_defaults_spelled_out_or_not_is_computed_once(demo: Store) -> None:
    # the Overview reads the frames as f(store), the Triage page as f(store, labels=None): one entry, one load
    from gcpc_core.review.ui import cached

    calls: list[tuple] = []

    def load(store: Store, n: int = 1, *, labels: dict | None = None) -> int:
        calls.append((n, labels))
        return n

    loader = cached("judgments")(load)
    assert [loader(demo), loader(demo, labels=None), loader(demo, 1), loader(demo, n=1, labels=None)] == [1] * 4
    assert calls == [(1, None)]
    assert loader(demo, 2) == 2 and loader(demo, labels={"gcpc": "b"}) == 1 and len(calls) == 3
    judged = demo.judging.judgments()[0]
    record_item_audit(demo, trajectory_id=judged.trajectory_id, item_id=judged.item_id, judge=judged.judge,
                      reviewer="alice", agree=True)
    loader(demo)  # an audit is no judgment: the judgments' version, and so the entry, stand
    assert len(calls) == 3
