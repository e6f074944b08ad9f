"""The run harness (`gcpc_core.runs.run_stage`, `RunKind`) and the recorded stage entry points (`gcpc_core.stages`).

Every stage verb writes one `runs` row with its counts, whether the command line or the app's Runs
page started it; a run ends `done`, `interrupted` or `failed`; dead runs are reaped; progress goes
to a terminal bar or to the caller's callback; a project DB of the previous schema gains the
`counts` column with its rows intact.
"""

from __future__ import annotations

import copy
import os
import pickle
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from fake_openai import FakeOpenAI, Reply
from sqlite_utils import Database
from sqlite_utils.migrations import Migrations

from gcpc_core.cli import main
from gcpc_core.demo import write_demo_corpus
from gcpc_core.review.runs import JOB_KINDS, JobRunner, job_progress, job_run
from gcpc_core.runs import STAGES, ProgressBar, RunKind, StageRun, reap_dead_runs, run_owner, run_stage
from gcpc_core.store import MIGRATIONS, RunRow, Store

RUN = {"model": "m", "prompt_version": "p", "rules_version": "r"}


def _gone_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_dead_runs_of_this_host_are_reaped_live_foreign_and_unowned_ones_kept(store: Store) -> None:
    gone = _gone_pid()
    live = store.runs.start(RunRow(kind="judge", **RUN, **run_owner())).id
    dead = store.runs.start(RunRow(kind="judge", **RUN, pid=gone, host=socket.gethostname())).id
    foreign = store.runs.start(RunRow(kind="judge", **RUN, pid=gone, host=f"not-{socket.gethostname()}")).id
    unowned = store.runs.start(RunRow(kind="judge", **RUN)).id
    assert reap_dead_runs(store) == 1
    status = {r.id: r.status for r in store.runs.list()}
    assert status == {live: "running", dead: "interrupted", foreign: "running", unowned: "running"}
    assert store.runs.get(dead).finished_at
    assert reap_dead_runs(store) == 0


def test_a_stage_run_reaps_first_and_ends_done_interrupted_or_failed_with_its_counts(store: Store) -> None:
    dead = store.runs.start(RunRow(kind="judge", **RUN, pid=_gone_pid(), host=socket.gethostname())).id
    seen: list[tuple[int, int]] = []

    async def double(n: int, run: StageRun[int]) -> int:
        assert store.runs.get(dead).status == "interrupted" and store.runs.get(run.run_id).status == "running"
        return 2 * n

    run = run_stage(store, RunKind("score"), [1, 2], double, prompt_version="-", params={"a": 1},
                    counts=lambda done: {"done": len(done)}, progress=lambda d, t: seen.append((d, t)))
    row = store.runs.get(run.run_id)
    assert run.results == [2, 4] and seen == [(1, 2), (2, 2)]
    assert (row.kind, row.status, row.counts, row.params, row.pid, row.host) == (
        "score", "done", {"done": 2}, {"a": 1}, os.getpid(), socket.gethostname())
    assert row.wall_s >= 0 and row.calls == 0 and row.model is None

    def stop(n: int, run: StageRun[int]) -> int:  # a plain function works a unit too
        if n == 3:
            raise KeyboardInterrupt
        return n

    with pytest.raises(KeyboardInterrupt):
        run_stage(store, RunKind.judge("probe"), [1, 2, 3], stop, prompt_version="-",
                  counts=lambda done: {"done": len(done)})
    [stopped] = store.runs.list(kind="judge-probe")
    assert (stopped.status, stopped.counts) == ("interrupted", {"done": 2})

    def boom(n: int, run: StageRun[int]) -> int:
        raise RuntimeError("boom")

    flushed: list[bool] = []
    with pytest.raises(RuntimeError):
        run_stage(store, RunKind("report"), [1], boom, prompt_version="-", finish=lambda: flushed.append(True))
    [broken] = store.runs.list(kind="report")
    assert broken.status == "failed" and broken.counts is None and flushed == [True]


def test_run_kinds_are_the_strings_the_ledger_holds_and_parse_back() -> None:
    assert RunKind.judge("gcpc") == "judge-gcpc" and RunKind.perturb("probe") == "perturb-probe"
    assert RunKind("batch-collect", "gcpc") == "batch-collect-gcpc" and RunKind("score") == "score"
    for text in ("judge-gcpc", "judge-probe-simulated", "batch-submit-fixed", "import", "triage", "judge"):
        kind = RunKind.parse(text)
        assert kind == text and RunKind(kind.stage, kind.judge_name) == text
    assert (RunKind.parse("judge-probe-simulated").stage, RunKind.parse("judge-probe-simulated").judge_name) == (
        "judge", "probe-simulated")
    assert copy.deepcopy(RunKind.judge("gcpc")).judge_name == "gcpc"
    assert pickle.loads(pickle.dumps(RunKind.judge("gcpc"))).stage == "judge"
    for bad in ("work", "scoring", "judgement-x"):
        with pytest.raises(ValueError):
            RunKind.parse(bad)
    with pytest.raises(ValueError):
        RunKind("score", "gcpc")  # score is not run per judge
    assert set(JOB_KINDS) <= set(STAGES) and list(JOB_KINDS) == [s for s in STAGES if s in JOB_KINDS]


def test_progress_goes_to_the_callback_or_the_terminal_bar(capsys: pytest.CaptureFixture[str]) -> None:
    seen: list[tuple[int, int]] = []
    with ProgressBar(3, desc="work", unit="u", progress=lambda done, total: seen.append((done, total))) as bar:
        bar.update()
        bar.update(2, note="last")
    assert seen == [(1, 3), (3, 3)] and capsys.readouterr().err == ""
    with ProgressBar(2, desc="work", unit="u", progress=False) as bar:
        bar.update(2)
    assert capsys.readouterr().err == ""
    with ProgressBar(2, desc="work", unit="u", progress=True) as bar:
        bar.update(2, note="last")
    err = capsys.readouterr().err
    assert "work" in err and "2/2" in err and "last" in err


def test_a_project_db_of_the_previous_schema_gains_the_counts_column(tmp_path: Path) -> None:
    previous = Migrations("gcpc")
    for migration in MIGRATIONS._migrations:
        if migration.name != "m1201_run_counts":
            previous(name=migration.name)(migration.fn)
    path = tmp_path / "old.db"
    db = Database(path)
    previous.apply(db)
    db["runs"].insert({"id": "r1", "kind": "judge-probe", "status": "done", "params": '{"judge": "probe"}',
                       "started_at": "2026-01-01T00:00:00+00:00", "calls": 0})
    assert "counts" not in db["runs"].columns_dict
    db.close()
    store = Store(path)
    assert store.schema_version == len(MIGRATIONS._migrations)
    row = store.runs.get("r1")
    assert (row.kind, row.params, row.counts) == ("judge-probe", {"judge": "probe"}, None)
    run = run_stage(store, RunKind("score"), [1], lambda n, _: n, prompt_version="-", counts=lambda done: {"n": 1})
    assert store.runs.get(run.run_id).counts == {"n": 1}


def _only_run(store: Store, kind: str) -> dict:
    [run] = store.runs.list(kind=kind)
    assert run.status == "done", run
    return run


def test_every_stage_verb_records_a_run_from_the_command_line(
    tmp_path: Path, demo_copy: Path, llm_env: FakeOpenAI
) -> None:
    tasks, trials = write_demo_corpus(tmp_path / "corpus", seed=3)
    fresh = tmp_path / "fresh.db"
    assert main(["import", "--tasks", str(tasks), "--trials", str(trials), "--db", str(fresh), "--quiet"]) == 0
    store = Store(fresh)
    run = _only_run(store, "import")
    assert run.counts["trials_imported"] == 36 and run.params["trials_dir"] == str(trials)

    llm_env.default = Reply(content="not a checklist")  # every draft fails: the run still records what it did
    main(["synthesize", "--db", str(fresh), "--quiet"])
    run = _only_run(store, "synthesize")
    assert sum(run.counts[k] for k in ("frozen", "failed", "error")) == len(store.trials.tasks()) > 0

    demo = str(demo_copy)
    project = Store(demo_copy)
    before = {r.id for r in project.runs.list()}
    assert main(["judge", "--db", demo, "--judge", "probe", "--force", "--quiet"]) == 0
    assert main(["score", "--db", demo]) == 0
    assert main(["perturb", "--db", demo, "--judge", "probe", "--limit", "3", "--quiet"]) == 0
    assert main(["report", "--db", demo, "--out", str(tmp_path / "report"), "--n-boot", "20", "--no-figures"]) == 0
    new = {r.kind: r for r in project.runs.list() if r.id not in before}
    assert set(new) == {"judge-probe", "score", "perturb-probe", "report"}
    assert all(r.status == "done" and r.pid == os.getpid() for r in new.values())
    assert new["judge-probe"].counts["judged"] == 36
    probe = "probe=" + project.judging.default_labels()["probe"]
    assert new["score"].counts[probe] == 36 and new["score"].rules_version  # per labelled run
    assert sum(v for k, v in new["perturb-probe"].counts.items() if k in ("judged", "not_perturbed")) == 3
    assert new["report"].counts["tables"] > 0 and new["report"].params["n_boot"] == 20


def test_the_runs_page_jobs_record_the_same_runs_and_report_progress(
    tmp_path: Path, demo_copy: Path, llm_env: FakeOpenAI
) -> None:
    tasks, trials = write_demo_corpus(tmp_path / "corpus", seed=3)
    fresh = Store(tmp_path / "fresh.db")
    runner = JobRunner()
    job = runner.wait(runner.start(fresh.path, "import", {"tasks_dir": str(tasks), "trials_dir": str(trials)}).id, 120)
    run = job_run(fresh, job)
    assert job.status == "done" and job.run_id == run.id and run.kind == "import"
    assert run.counts["trials_imported"] == 36 and run.params["trials"] == 36

    llm_env.default = Reply(content="not a checklist")
    job = runner.wait(runner.start(fresh.path, "synthesize", {}).id, 120)
    run = job_run(fresh, job)
    assert job.status == "done" and run.kind == "synthesize" and run.status == "done"
    assert job.done == job.total == len(fresh.trials.tasks()) == run.params["tasks"]

    job = runner.wait(runner.start(demo_copy, "judge", {"judge": "probe", "force": True}).id, 120)
    project = Store(demo_copy)
    run = job_run(project, job)
    assert (run.kind, run.counts["judged"], job.done, job.total) == ("judge-probe", 36, 36, 36)
    assert job_progress(project, job, run) == (36, 36)
    job = runner.wait(runner.start(demo_copy, "score", {}).id, 120)
    run = job_run(project, job)
    probe = "probe=" + project.judging.default_labels()["probe"]
    assert job.run_id == run.id and run.kind == "score" and run.counts[probe] == 36
