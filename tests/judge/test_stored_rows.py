"""What a judged project stores, row for row, against a golden snapshot: the judging hot path may get
faster, never different.

The demo project is judged by `gcpc` and `holistic` against the fake server, scored, judged again
with `force` (every valid reply then comes from the response cache) and scored again. The replies
are scripted from each request's own evidence, so they are the same on every run whatever the
concurrency: every item Yes; Yes/No mixed with an ungrounded quote; a judge Abstain and an item left
out; an unknown item id (one repair turn); invalid JSON (one repair turn); a citation of an event that
is not evidence. Every stored row of the judge tables, the LLM call records and the response cache is
compared, after dropping what differs between runs by nature (timestamps, run ids, row ids,
latencies) and naming the versions (rules hash, prompt versions, checklist shas) by role; prompt
tokens and costs are checked by their relations, and cache keys by what joins to what.

When a change is meant to alter stored rows (a new prompt, new reply fields), regenerate the golden
file and review its diff: `GCPC_WRITE_GOLDEN=1 python -m pytest -q tests/judge/test_stored_rows.py`.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

from fake_openai import FAKE_MODEL, FakeOpenAI, Reply

from gcpc_core.checklist import load_rules
from gcpc_core.judge import HOLISTIC_PROMPT_VERSION, ITEMS_PROMPT_VERSION, judge_project, score_project
from gcpc_core.llm import Price, Usage, estimate_cost
from gcpc_core.store import Store

from .conftest import EVENT_HEAD, first_citation, is_items_request, is_repair, item_citation, item_ids, user_text

GOLDEN = Path(__file__).with_name("golden") / "stored_rows.json"
PRICE = Price(input=1.0, cached_input=0.5, output=2.0)  # make_llm's price for the fake model
SCENARIOS = ("all_yes", "mixed_ungrounded", "abstain_and_missing", "unknown_id", "invalid_json", "not_evidence")
VOLATILE = {"created_at", "scored_at", "run_id", "id", "latency_s", "prompt_tokens", "cost_usd", "key", "llm_key"}
"""Columns whose values differ between runs by nature, or are checked by relation instead."""


def scenario(request: dict[str, Any]) -> str:
    """The scripted behaviour for a trajectory, fixed by its own evidence (every event's id and first line)."""
    evidence = "\n".join(m.group(0) for m in EVENT_HEAD.finditer(user_text(request)))
    return SCENARIOS[int(hashlib.sha256(evidence.encode()).hexdigest(), 16) % len(SCENARIOS)]


def judge_reply(request: dict[str, Any]) -> Reply:
    citation = first_citation(request)
    cites = [citation] if citation else []
    if not is_items_request(request):
        return Reply.json({"citations": cites, "rationale": "scripted rating", "progress": 0.25 if cites else 0.0})
    ids, case = item_ids(request), scenario(request)
    if is_repair(request):
        case = "all_yes"

    def entry(item_id: str, verdict: str, citations: list[dict]) -> dict:
        if citations == cites:  # the item's own evidence (a line showing the value it names), as a judge would
            own = item_citation(request, item_id)
            citations = [own] if own else []
        return {"item_id": item_id, "citations": citations, "rationale": f"scripted {case} {verdict}", "verdict": verdict}

    if case == "invalid_json":
        return Reply.text('{"items": [ this is not json')
    if case == "mixed_ungrounded":
        items = [entry(i, "Yes" if n % 2 == 0 else "No", cites) for n, i in enumerate(ids)]
        if cites:
            items[1]["citations"] = [{"event_id": cites[0]["event_id"], "quote": "words the event never said"}]
    elif case == "abstain_and_missing":
        items = [entry(i, "Abstain" if n == 0 else "No", cites) for n, i in enumerate(ids[:-1])]
    elif case == "unknown_id":
        items = [entry(i, "Yes", cites) for i in ids] + [entry("X99", "No", cites)]
    elif case == "not_evidence":
        items = [entry(i, "Yes", [{"event_id": "E99999", "quote": "anything"}]) for i in ids]
    else:
        items = [entry(i, "Yes", cites) for i in ids]
    return Reply.json({"items": items})


def _tokens(store: Store) -> dict[str, str]:
    """Version strings stored in rows → their role, so the snapshot survives a rules or prompt edit."""
    rules = load_rules().version
    names = {rules: "<rules>", rules[:12]: "<rules12>", ITEMS_PROMPT_VERSION: "<items-prompt>",
             HOLISTIC_PROMPT_VERSION: "<holistic-prompt>"}
    for row in store.checklists.list():
        names[row.sha] = f"<checklist {row.task}>"
    return names


def _named(value: Any, names: dict[str, str]) -> Any:
    if isinstance(value, str):
        for text in sorted(names, key=len, reverse=True):
            value = value.replace(text, names[text])
        return value
    if isinstance(value, list):
        return [_named(v, names) for v in value]
    if isinstance(value, dict):
        return {k: _named(v, names) for k, v in value.items()}
    return value


def _rows(store: Store, sql: str) -> list[dict[str, Any]]:
    cursor = store.db.conn.execute(sql)
    columns = [c[0] for c in cursor.description]
    return [dict(zip(columns, r)) for r in cursor]


def snapshot(store: Store) -> dict[str, list[dict[str, Any]]]:
    """Every stored row the two judges' runs wrote, in a stable order, volatile columns dropped."""
    judges = "judge IN ('gcpc', 'holistic')"
    tables = {
        "judge_units": f"SELECT * FROM judge_units WHERE {judges} ORDER BY trajectory_id, judge, label",
        "judgments": f"SELECT * FROM judgments WHERE {judges} ORDER BY trajectory_id, judge, label, position, item_id",
        "judge_replies": f"SELECT * FROM judge_replies WHERE {judges} ORDER BY trajectory_id, judge, label, id",
        "scores": f"SELECT * FROM scores WHERE {judges} ORDER BY trajectory_id, judge, label",
        "judge_labels": f"SELECT * FROM judge_labels WHERE {judges} ORDER BY judge, label",
        "llm_calls": "SELECT * FROM llm_calls ORDER BY tag, id",
    }
    names = _tokens(store)
    out = {name: [_named({k: v for k, v in row.items() if k not in VOLATILE}, names) for row in _rows(store, sql)]
           for name, sql in tables.items()}
    tags = {}
    for call in _rows(store, "SELECT key, tag FROM llm_calls ORDER BY tag, id"):
        tags.setdefault(call["key"], call["tag"])
    cache = []
    for row in _rows(store, "SELECT * FROM llm_cache"):
        body = json.loads(row["response"])
        cache.append({"tag": tags.get(row["key"]), "model": row["model"],
                      "content": body["choices"][0]["message"]["content"], "usage": body["usage"]})
    out["llm_cache"] = sorted(_named(cache, names), key=lambda r: (r["tag"] or "", r["content"]))
    return out


def check_relations(store: Store) -> None:
    """What the snapshot leaves out, checked by relation: tokens and cost of every call, and the keys
    that join replies, call records and the response cache."""
    calls = _rows(store, "SELECT * FROM llm_calls")
    cached = {r["key"] for r in _rows(store, "SELECT key FROM llm_cache")}
    for call in calls:
        assert call["run_id"] and call["key"] and call["created_at"], call
        if call["cache_hit"]:
            assert (call["prompt_tokens"], call["completion_tokens"], call["cost_usd"]) == (0, 0, 0.0), call
        else:
            assert call["prompt_tokens"] > 0 and call["latency_s"] > 0, call
            usage = Usage(call["prompt_tokens"], call["cached_tokens"], call["completion_tokens"])
            assert abs(call["cost_usd"] - estimate_cost(usage, PRICE)) < 1e-12, call
        assert (call["key"] in cached) == (call["status"] == "ok"), call
    ok_keys = {c["key"] for c in calls if c["status"] == "ok"}
    replies = _rows(store, "SELECT * FROM judge_replies WHERE judge IN ('gcpc', 'holistic')")
    for reply in replies:
        assert (reply["llm_key"] is None) == (reply["status"] == "invalid_json"), reply
        assert reply["llm_key"] is None or reply["llm_key"] in ok_keys, reply
    assert {r["llm_key"] for r in replies if r["llm_key"]} == cached


def test_a_judged_project_stores_exactly_the_golden_rows(fake_openai: FakeOpenAI, project: Store, make_llm) -> None:
    fake_openai.default = judge_reply
    for force in (False, True):
        for judge in ("gcpc", "holistic"):
            report = judge_project(project, judge=judge, llm=make_llm(concurrency=4), force=force, progress=False)
            assert len(report.judged) == 36 and report.ok
        score_project(project)
    check_relations(project)
    got = snapshot(project)
    statuses = Counter(r["status"] for r in got["judge_replies"])
    reasons = Counter(r["reason_raw"] for r in got["judgments"])
    assert {"ok", "unknown_item_id", "invalid_json"} <= set(statuses), statuses  # the golden covers repairs
    assert {None, "ungrounded", "judge_abstain", "not_judged"} <= set(reasons), reasons
    assert {c["cache_hit"] for c in got["llm_calls"]} == {0, 1} and {c["model"] for c in got["llm_calls"]} == {FAKE_MODEL}
    got = {"summary": summary(got), **{table: [digest(row) for row in rows] for table, rows in got.items()}}
    if os.environ.get("GCPC_WRITE_GOLDEN"):
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    want = json.loads(GOLDEN.read_text(encoding="utf-8"))
    assert got["summary"] == want["summary"]
    rows = snapshot(project)
    for table in sorted(set(want) - {"summary"}):
        assert len(got[table]) == len(want[table]), table
        for n, (row, expected) in enumerate(zip(got[table], want[table])):
            assert row == expected, f"{table} row {n} differs from the golden one: {rows[table][n]}"
    assert set(got) == set(want)


def digest(row: dict[str, Any]) -> str:
    """A stored row's fingerprint: the golden file keeps these (the rows themselves are ~0.5 MB)."""
    return hashlib.sha256(json.dumps(row, sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:16]


def summary(rows: dict[str, list[dict[str, Any]]]) -> dict[str, dict[str, int]]:
    """Counts a reader of the golden file can check at a glance."""
    def count(table: str, *columns: str) -> dict[str, int]:
        return dict(sorted(Counter(" ".join(str(r[c]) for c in columns) for r in rows[table]).items()))

    return {"reply statuses": count("judge_replies", "judge", "attempt", "status"),
            "raw verdicts": count("judgments", "verdict_raw", "reason_raw"),
            "verdicts": count("judgments", "verdict", "reason"),
            "calls": count("llm_calls", "status", "cache_hit"), "rows": {t: len(r) for t, r in rows.items()}}
