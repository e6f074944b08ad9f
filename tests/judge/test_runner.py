"""Whole runs on the demo project against the fake server: run records, resume, cache, modes, batch, CLI."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from contextlib import contextmanager
from pathlib import Path

import pytest
from fake_openai import FAKE_MODEL, FakeOpenAI, fault_malformed

from gcpc_core.checklist import load_checklist_file, load_rules
from gcpc_core.cli import main
from gcpc_core.judge import (
    HOLISTIC_PROMPT_VERSION,
    ITEMS_PROMPT_VERSION,
    collect_batches,
    judge_project,
    score_project,
)
from gcpc_core.judge.prompts import PER_ITEM_PROMPT_VERSION
from gcpc_core.store import Store

from .conftest import holistic_reply, is_items_request, is_repair, items_reply, single_item_reply

N_TRIALS = 36
ALL_YES = Counter({"Yes": 8 * N_TRIALS - 6, "Abstain": 6})
"""Raw verdicts of `items_reply("Yes")` on the demo: 6 scripted Yes on FAIL trials whose evidence never
shows the value the item names (`ssh-failed-login-report` H1, H5) are ungrounded (`value_not_cited`)."""


def integrity(store: Store, judge: str = "gcpc") -> Counter:
    """Every unit has exactly its checklist's items, no duplicates; returns raw verdict counts."""
    units = store.judging.units(judge)
    rows = store.judging.judgments(judge=judge)
    per_unit = Counter(r.trajectory_id for r in rows if r.route != "endpoint")
    assert len({(r.trajectory_id, r.item_id) for r in rows}) == len(rows)
    for (traj_id, _), unit in units.items():
        assert per_unit[traj_id] == unit.n_items, traj_id
    assert set(per_unit) <= {t for t, _ in units}
    return Counter(r.verdict_raw for r in rows)


def test_full_run_records_provenance_and_cost(fake_openai, project, make_llm) -> None:
    fake_openai.on(is_items_request, items_reply("Yes"))
    report = judge_project(project, judge="gcpc", llm=make_llm(concurrency=4), progress=False)
    assert len(report.judged) == N_TRIALS and report.ok and fake_openai.request_count == N_TRIALS
    assert integrity(project) == ALL_YES
    run = project.runs.get(report.run_id)
    assert run.kind == "judge-gcpc" and run.status == "done" and run.model == FAKE_MODEL
    assert run.prompt_version == ITEMS_PROMPT_VERSION and run.rules_version == load_rules().version
    assert set(run.params["checklists"]) == {"ini-config-repair", "sales-csv-summary", "ssh-failed-login-report"}
    assert run.prompt_tokens > 0 and run.completion_tokens > 0 and run.cost_usd > 0 and run.wall_s > 0
    assert run.http_calls == N_TRIALS and run.cache_hits == 0
    sha = {r.task: r.sha for r in project.checklists.list()}
    assert all(r.checklist_sha == sha[r.task] and r.run_id == report.run_id for r in project.judging.judgments(judge="gcpc"))


def test_identical_rerun_makes_zero_http_calls(fake_openai, project, make_llm) -> None:
    fake_openai.on(is_items_request, items_reply("Yes"))
    judge_project(project, judge="gcpc", llm=make_llm(), progress=False)
    before = fake_openai.request_count
    again = judge_project(project, judge="gcpc", llm=make_llm(), progress=False)  # resume: all finished
    assert not again.judged and Counter(again.skipped.values())["already judged"] == N_TRIALS
    forced = judge_project(project, judge="gcpc", llm=make_llm(), progress=False, force=True)  # all from cache
    assert len(forced.judged) == N_TRIALS and forced.totals.cache_hits == N_TRIALS and forced.totals.http_calls == 0
    assert fake_openai.request_count == before  # the server's own counter
    integrity(project)


def test_resume_after_ctrl_c_repeats_nothing(fake_openai, project, make_llm) -> None:
    fake_openai.on(is_items_request, items_reply("Yes"))
    seen: list[str] = []

    def interrupt_after_ten(result) -> None:
        seen.append(result.trajectory_id)
        if len(seen) == 10:
            # Ctrl-C as the terminal sends it: asyncio.run cancels the run and raises KeyboardInterrupt at
            # the end. (A KeyboardInterrupt raised inside a task instead leaves that task's exception
            # unretrieved; logging it at garbage collection formats a traceback with `ast`, which on
            # CPython 3.11 broke an `ast.parse` running at that moment in a later test.)
            signal.raise_signal(signal.SIGINT)

    # A shell starts a background job with SIGINT ignored, and Python keeps it so: Ctrl-C is then not
    # Python's to handle and asyncio.run leaves it alone. The test runs as a terminal's foreground job would.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            judge_project(project, judge="gcpc", llm=make_llm(concurrency=2), progress=False,
                          on_result=interrupt_after_ten)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert len(seen) == 10, f"the run went on after Ctrl-C: {len(seen)} results"
    stored = len(project.judging.units("gcpc"))
    assert 10 <= stored < N_TRIALS
    assert project.runs.list(kind="judge-gcpc")[-1].status == "interrupted"
    calls_before = fake_openai.request_count
    cached = project.db["llm_cache"].count  # answered before the interrupt (a call cut off in flight is not)
    report = judge_project(project, judge="gcpc", llm=make_llm(), progress=False)
    assert len(report.judged) == N_TRIALS - stored and len(project.judging.units("gcpc")) == N_TRIALS
    # answers received before the interrupt come from the cache; only the rest reach the server
    assert report.totals.cache_hits == cached - stored
    assert fake_openai.request_count - calls_before == N_TRIALS - cached
    integrity(project)


def test_resume_after_kill_9(fake_openai: FakeOpenAI, project: Store, tmp_path: Path) -> None:
    fake_openai.latency = 0.05
    fake_openai.on(is_items_request, items_reply("Yes"))
    env = {**os.environ, "OPENAI_BASE_URL": fake_openai.url, "OPENAI_API_KEY": "sk-test", "GCPC_MODEL": FAKE_MODEL,
           "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    cmd = [sys.executable, "-m", "gcpc_core", "judge", "--db", str(project.path), "--judge", "gcpc",
           "--concurrency", "2", "--quiet"]
    child = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    watcher = Store(project.path)
    deadline = time.monotonic() + 60
    while len(watcher.judging.units("gcpc")) < 6 and time.monotonic() < deadline and child.poll() is None:
        time.sleep(0.02)
    child.send_signal(signal.SIGKILL)
    child.wait()
    stored = len(watcher.judging.units("gcpc"))
    assert 6 <= stored < N_TRIALS, "the child should be killed mid-run"
    integrity(watcher)  # a kill -9 never leaves half a trajectory
    answered = fake_openai.request_count
    report = judge_project(watcher, judge="gcpc", progress=False, llm=_env_llm(watcher, fake_openai))
    assert len(watcher.judging.units("gcpc")) == N_TRIALS and len(report.judged) == N_TRIALS - stored
    assert fake_openai.request_count - answered <= N_TRIALS - stored  # cached answers are not asked again
    integrity(watcher)


def test_finished_trajectories_are_stored_a_group_at_a_time(fake_openai, project, make_llm, monkeypatch) -> None:
    """A fast run commits a few groups, not one transaction per call and per trajectory; each group
    holds whole trajectories with the cache rows and call records of their calls."""
    fake_openai.on(is_items_request, items_reply("Yes"))
    groups: list[tuple[int, int, int]] = []
    original = project.atomic

    @contextmanager
    def watched():
        outer = not project.db.conn.in_transaction
        with original() as db:
            yield db
        if outer:
            groups.append(tuple(db.conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in (
                "judge_units WHERE judge = 'gcpc'", "llm_cache", "llm_calls")))

    monkeypatch.setattr(project, "atomic", watched)
    judge_project(project, judge="gcpc", llm=make_llm(concurrency=8), progress=False)
    written = [g for g in groups if g[2]]  # the ones that wrote calls (not the run row, mode, ...)
    assert 1 <= len(written) < N_TRIALS // 2, groups
    for units, cached, calls in written:
        assert cached >= units and calls >= units  # a trajectory is never stored before its call
    assert written[-1][1:] == (N_TRIALS, N_TRIALS) and integrity(project) == ALL_YES


def test_a_failed_group_write_fails_the_run_and_keeps_whole_trajectories(fake_openai, project, make_llm,
                                                                          monkeypatch) -> None:
    fake_openai.on(is_items_request, items_reply("Yes"))
    save = project.judging.save_trajectory_judgments
    calls: list[int] = []

    def failing(saves) -> None:
        calls.append(len(calls))
        if len(calls) == 2:
            raise OSError("disk full")
        save(saves)

    monkeypatch.setattr(project.judging, "save_trajectory_judgments", failing)
    monkeypatch.setattr("gcpc_core.judge.runner.GROUP_SECONDS", 0.0)  # a group per finished trajectory
    with pytest.raises(OSError, match="disk full"):
        judge_project(project, judge="gcpc", llm=make_llm(concurrency=2), progress=False)
    assert project.runs.list(kind="judge-gcpc")[-1].status == "failed"
    integrity(project)
    stored = len(project.judging.units("gcpc"))
    report = judge_project(project, judge="gcpc", llm=make_llm(), progress=False)
    assert len(report.judged) == N_TRIALS - stored and len(project.judging.units("gcpc")) == N_TRIALS
    integrity(project)


def _env_llm(store: Store, server: FakeOpenAI):
    from gcpc_core.llm import LLM, LLMConfig

    return LLM(LLMConfig(model=FAKE_MODEL, base_url=server.url, api_key="sk-test", timeout=2.0), store=store)


def test_per_item_mode_makes_one_call_per_item(fake_openai, project, make_llm) -> None:
    fake_openai.on(lambda req: "Judge this one item" in req["messages"][1]["content"], single_item_reply("No"))
    report = judge_project(project, judge="gcpc", llm=make_llm(), progress=False, limit=3, per_item=True)
    assert len(report.judged) == 3 and fake_openai.request_count == 3 * 8
    assert integrity(project) == Counter({"No": 24})
    assert {u.prompt_version for u in project.judging.units("gcpc").values()} == {PER_ITEM_PROMPT_VERSION}
    # switching back to the default mode is a different request: the units are judged again
    fake_openai.on(is_items_request, items_reply("Yes"))
    again = judge_project(project, judge="gcpc", llm=make_llm(), progress=False, limit=3)
    assert len(again.judged) == 3


def test_holistic_and_fixed_judges_are_scored_as_their_own_judges(fake_openai, project, make_llm) -> None:
    fake_openai.on(lambda req: "Rate this run's progress" in req["messages"][1]["content"], holistic_reply(0.75))
    fake_openai.on(is_items_request, items_reply("Yes"))
    h = judge_project(project, judge="holistic", llm=make_llm(), progress=False, limit=4)
    f = judge_project(project, judge="fixed", llm=make_llm(), progress=False, limit=4)
    assert len(h.judged) == 4 and len(f.judged) == 4
    assert h.prompt_version == HOLISTIC_PROMPT_VERSION
    assert {r.item_id for r in project.judging.judgments(judge="fixed")} == {"F1", "F2", "F3", "F4", "F5", "F6"}
    score_project(project)
    holistic = project.judging.scores(judge="holistic")
    assert len(holistic) == 4 and {s.partial_credit for s in holistic} == {0.75}
    assert all(s.perfect is None and s.n_items == 0 for s in holistic)
    units = project.judging.units("holistic")
    assert all(u.citations and u.rationale == "scripted" for u in units.values())
    fixed = project.judging.scores(judge="fixed")
    assert all(s.n_items == 6 for s in fixed)  # fixed items are `judge` route: PASS does not overwrite them


def test_probe_judge_on_the_demo(project) -> None:
    units = project.judging.units("probe")
    assert len(units) == N_TRIALS  # built by `demo --db`
    rows = project.judging.judgments(judge="probe")
    counts = integrity(project, "probe")
    assert counts["Yes"] > 100 and counts["No"] > 10 and counts["Abstain"] > 0
    from gcpc_core.evidence import build_evidence_view

    views = {}
    for row in rows:
        for c in row.citations:
            view = views.setdefault(row.trajectory_id, build_evidence_view(project.trials.events(row.trajectory_id)))
            assert view.quote_in_event(c["event_id"], c["quote"])  # every probe verdict is grounded
        if row.verdict_raw in ("Yes", "No") and row.route != "endpoint":
            assert row.citations
    scores = {s.trajectory_id: s for s in project.judging.scores(judge="probe")}
    assert len(scores) == N_TRIALS
    fails = [s for s in scores.values() if s.outcome == "FAIL"]
    assert fails and all(s.perfect_with_endpoint == 0 for s in fails)
    # the ini trial that first hit the duplicate-host error and then fixed it: latest evidence wins
    assert {r.item_id: r.verdict_raw for r in project.judging.judgments(judge="probe", trajectory_id="ini-config-repair__0KnwxjT")}["I1"] == "Yes"


def test_batch_submit_and_collect(fake_openai, project, make_llm) -> None:
    fake_openai.on(lambda req: is_items_request(req) and "sales-csv-summary" in req["messages"][1]["content"]
                   and not is_repair(req), fault_malformed())
    fake_openai.on(is_items_request, items_reply("Yes"))
    llm = make_llm()
    report = judge_project(project, judge="gcpc", llm=llm, progress=False, batch=True)
    assert report.batch_id and not report.judged
    [row] = project.judging.batches()
    assert row.n_requests == N_TRIALS and set(row.requests) == {t.id for t in project.trials.trajectories()}
    lines = [json.loads(x) for x in Path(row.input_path).read_text().splitlines()]
    assert {x["custom_id"] for x in lines} == set(row.requests)
    assert all(x["url"] == "/v1/chat/completions" and x["body"]["model"] == FAKE_MODEL for x in lines)
    # submitted trajectories are not judged live while the batch is pending
    pending = judge_project(project, judge="gcpc", llm=make_llm(), progress=False)
    assert not pending.judged and "batch" in next(iter(pending.skipped.values()))
    collected = collect_batches(project, llm=make_llm(), progress=False)
    assert collected.batches == {row.id: "collected"}
    assert len(project.judging.units("gcpc")) == N_TRIALS and integrity(project) == ALL_YES
    sales = [u for (t, _), u in project.judging.units("gcpc").items() if t.startswith("sales")]
    replies = project.judging.replies(trajectory_id=sales[0].trajectory_id, judge="gcpc")
    assert [r.attempt for r in replies] == ["batch", "repair"]  # bad batch reply → one live repair
    # valid batch replies went into the response cache: a forced live rerun asks the server only the
    # initial requests whose batch reply was unusable (never cached); their repairs are cached
    before = fake_openai.request_count
    rerun = judge_project(project, judge="gcpc", llm=make_llm(), progress=False, force=True)
    assert fake_openai.request_count - before == len(sales) == rerun.totals.http_calls
    assert rerun.totals.cache_hits == N_TRIALS
    assert collect_batches(project, llm=make_llm(), progress=False).batches == {}


def test_cli_judge_score_export(llm_env, project, capsys, tmp_path) -> None:
    llm_env.on(is_items_request, items_reply("Yes"))
    db = str(project.path)
    assert main(["judge", "--db", db, "--judge", "gcpc", "--limit", "5", "--quiet"]) == 0
    assert "judged 5" in capsys.readouterr().out
    assert main(["score", "--db", db]) == 0
    assert "scored 5 trajectories for judge gcpc" in capsys.readouterr().out
    out = tmp_path / "j.jsonl"
    assert main(["export", "--db", db, "--what", "judgments", "--out", str(out)]) == 0
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    for key in ("trajectory_id", "task", "judge", "item_id", "route", "verdict_raw", "verdict", "citations", "reason",
                "rationale", "checklist_sha"):
        assert key in rows[0]
    assert {r["judge"] for r in rows} == {"gcpc", "probe"}
    out = tmp_path / "s.csv"
    assert main(["export", "--db", db, "--what", "scores", "--format", "csv", "--out", str(out)]) == 0
    header = out.read_text().splitlines()[0].split(",")
    for key in ("trajectory_id", "task", "judge", "outcome", "condition", "partial_credit", "evidence_coverage",
                "perfect", "perfect_with_endpoint", "n_yes", "n_no", "n_abstain"):
        assert key in header


def test_cli_without_llm_config_exits_2(project, monkeypatch, capsys) -> None:
    for var in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "GCPC_MODEL"):
        monkeypatch.delenv(var, raising=False)
    assert main(["judge", "--db", str(project.path), "--judge", "holistic"]) == 2
    assert "LLM not configured" in capsys.readouterr().err
    assert main(["judge", "--db", str(project.path), "--judge", "probe", "--quiet", "--force"]) == 0
    assert main(["judge", "--db", str(project.path) + ".missing", "--judge", "probe"]) == 2


@pytest.mark.parametrize("verb", [["judge"], ["score"], ["batch"], ["batch", "collect"], ["batch", "list"]])
def test_every_new_verb_has_help(verb, capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        main([*verb, "--help"])
    assert exc.value.code == 0 and "usage" in capsys.readouterr().out


def test_holistic_batch_round_trip(fake_openai, project, make_llm) -> None:
    fake_openai.on(lambda req: "Rate this run's progress" in req["messages"][1]["content"], holistic_reply(0.5))
    report = judge_project(project, judge="holistic", llm=make_llm(), progress=False, batch=True, limit=5)
    assert report.batch_id and project.judging.batches()[0].n_requests == 5
    collect_batches(project, llm=make_llm(), progress=False)
    units = project.judging.units("holistic")
    assert len(units) == 5 and {u.progress for u in units.values()} == {0.5}
    assert {r.attempt for r in project.judging.replies(judge="holistic")} == {"batch"}


def test_batch_is_refused_for_the_probe_judge_and_per_item(project, make_llm) -> None:
    with pytest.raises(ValueError, match="offline"):
        judge_project(project, judge="probe", batch=True, progress=False)
    with pytest.raises(ValueError, match="per-item"):
        judge_project(project, judge="gcpc", llm=make_llm(), batch=True, per_item=True, progress=False)


def test_demo_checklists_pass_every_gate(tmp_path) -> None:
    from gcpc_core.checklist import validate_files
    from gcpc_core.demo import DEMO_CHECKLISTS_DIR, write_demo_corpus

    tasks_dir, _ = write_demo_corpus(tmp_path / "corpus")
    files = sorted(DEMO_CHECKLISTS_DIR.glob("*.yaml"))
    assert [f.stem for f in files] == ["ini-config-repair", "sales-csv-summary", "ssh-failed-login-report"]
    for path in files:
        code, lines = validate_files(tasks_dir / path.stem, path)
        assert code == 0, lines
        checklist = load_checklist_file(path)
        assert all(item.probes for item in checklist.items)  # every demo item can be probe-judged
        instruction = (tasks_dir / path.stem / "instruction.md").read_text()
        assert all(" ".join(i.task_quote.split()) in " ".join(instruction.split()) for i in checklist.items)
