"""Evidence views built by the worker process (`prepare.ViewPool`, a real child process reading the
project DB) and the judging run's writing thread: the same views, requests and rows as on the loop;
a worker that dies or cannot answer leaves the run to build its views itself."""

from __future__ import annotations

import asyncio
import dataclasses
import time

import pytest

from gcpc_core.checklist import load_rules
from gcpc_core.evidence import EvidenceEntry, EvidenceView
from gcpc_core.judge import judge_project, prepare
from gcpc_core.judge.prepare import ViewPool
from gcpc_core.judge.units import evidence_of, plan_units
from gcpc_core.store import Store

from store.helpers import llm_calls

from .conftest import items_reply, is_items_request


def _wait_ready(pool: ViewPool) -> None:
    deadline = time.monotonic() + 60
    while not (pool.ready or pool.gone) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert pool.ready and not pool.gone, "the view worker did not start"


def _entries(view: EvidenceView) -> list[tuple]:
    return [tuple(getattr(e, f.name) for f in dataclasses.fields(EvidenceEntry) if f.compare) for e in view.entries]


def test_the_worker_builds_exactly_the_views_the_loop_builds(project: Store) -> None:
    rules = load_rules()
    units = plan_units(project, "gcpc", rules=rules, model="m", force=True).todo
    pool = ViewPool(project, units)
    try:
        _wait_ready(pool)

        async def every_view() -> list[EvidenceView]:
            return list(await asyncio.gather(*(pool.view(project, unit, rules) for unit in units)))

        views = asyncio.run(every_view())
    finally:
        pool.close()
    assert pool.built == len(units) == 36
    for unit, view in zip(units, views, strict=True):
        local = evidence_of(project, unit, rules)
        assert _entries(view) == _entries(local), unit.trajectory.id
        assert view.gaps == local.gaps and view.focus is unit.focus
        assert view.render() == local.render() and view.text is not None and local.text is None
        assert all(view.get(e.event.id) == e.event for e in local.entries)


def test_a_worker_that_dies_leaves_the_views_to_the_loop(project: Store) -> None:
    rules = load_rules()
    units = plan_units(project, "gcpc", rules=rules, model="m", force=True).todo
    pool = ViewPool(project, units)
    try:
        _wait_ready(pool)
        first = asyncio.run(pool.view(project, units[0], rules))
        pool._process.kill()  # noqa: SLF001 - the worker killed, as an OOM killer would
        pool._process.wait()  # noqa: SLF001
        after = [asyncio.run(pool.view(project, unit, rules)) for unit in units[1:]]
    finally:
        pool.close()
    assert pool.built == 1 and pool.gone
    assert _entries(first) == _entries(evidence_of(project, units[0], rules))
    assert [_entries(v) for v in after] == [_entries(evidence_of(project, u, rules)) for u in units[1:]]


def test_a_view_the_worker_cannot_build_is_built_on_the_loop(project: Store) -> None:
    rules = load_rules()
    units = plan_units(project, "gcpc", rules=rules, model="m", force=True).todo
    first_task = [u for u in units if u.task.id == units[0].task.id]
    other = next(u for u in units if u.task.id != units[0].task.id)
    pool = ViewPool(project, first_task)  # the worker knows one task's focus
    pool._focus = {**pool._focus, other.task.id: other.focus}  # noqa: SLF001 - the run asks for another
    try:
        _wait_ready(pool)
        view = asyncio.run(pool.view(project, other, rules))  # the worker fails it (KeyError there)
        known = asyncio.run(pool.view(project, first_task[0], rules))
        alive = not pool.gone  # one failed view is not a dead worker
    finally:
        pool.close()
    assert pool.built == 1 and alive
    assert _entries(view) == _entries(evidence_of(project, other, rules))
    assert _entries(known) == _entries(evidence_of(project, first_task[0], rules))


def _stored(store: Store) -> list[tuple]:
    return [(r.trajectory_id, r.item_id, r.verdict_raw, r.reason_raw, str(r.citations))
            for r in store.judging.judgments(judge="gcpc")]


def test_a_run_with_the_worker_stores_what_a_run_without_it_does(fake_openai, project, make_llm, demo_copy,
                                                                  tmp_path, monkeypatch) -> None:
    """The same replies, verdicts and call records whether the views come from the worker or the loop,
    with a group written per finished trajectory on the writing thread."""
    fake_openai.on(is_items_request, items_reply("Yes"))
    monkeypatch.setattr("gcpc_core.judge.runner.GROUP_SECONDS", 0.0)
    import sqlite3

    with sqlite3.connect(tmp_path / "without.db") as copy:  # a consistent copy, WAL included
        project.db.conn.backup(copy)
    other = Store(tmp_path / "without.db")
    monkeypatch.setattr(prepare, "MIN_UNITS", 10**9)
    from gcpc_core.llm import LLM

    base = make_llm(concurrency=4)
    without = judge_project(other, judge="gcpc", llm=LLM(base.config, store=other, prices=base.prices), progress=False)
    requests_without = fake_openai.request_count
    built: list[int] = []
    close = ViewPool.close

    def counted(pool: ViewPool) -> None:
        close(pool)
        built.append(pool.built)

    monkeypatch.setattr(ViewPool, "close", counted)
    monkeypatch.setattr(prepare, "MIN_UNITS", 1)
    monkeypatch.setattr(prepare.ViewPool, "for_run", classmethod(
        lambda cls, store, units, cores=None: _started(cls(store, units))))
    with_pool = judge_project(project, judge="gcpc", llm=make_llm(concurrency=4), progress=False)
    assert built and built[0] > 0
    assert len(with_pool.judged) == len(without.judged) == 36
    assert fake_openai.request_count == 2 * requests_without  # the same requests, none answered twice
    assert _stored(project) == _stored(other)
    for store, report in ((project, with_pool), (other, without)):
        calls = llm_calls(store, run_id=report.run_id)
        assert len(calls) == 36 and len({c.key for c in calls}) == 36  # each call recorded once
        assert all(store.runs.cache_get(c.key) is not None for c in calls)


def _started(pool: ViewPool) -> ViewPool:
    _wait_ready(pool)
    return pool


def test_a_run_of_few_units_or_on_one_core_has_no_worker(project: Store) -> None:
    units = plan_units(project, "gcpc", rules=load_rules(), model="m", force=True).todo
    assert ViewPool.for_run(project, units) is None  # 36 < MIN_UNITS
    assert ViewPool.for_run(project, units * 10, cores=1) is None


@pytest.mark.parametrize("cores", [2, 8])
def test_a_large_run_gets_a_worker_when_a_core_is_spare(project: Store, cores: int) -> None:
    units = plan_units(project, "gcpc", rules=load_rules(), model="m", force=True).todo
    pool = ViewPool.for_run(project, units * 10, cores=cores)
    assert pool is not None
    pool.close()
    assert pool._process.returncode is not None  # noqa: SLF001 - the worker ended with close
