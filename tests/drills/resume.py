"""Kill -9 resume drill: a command-line judge run SIGKILLed at seeded random points, resumed each time.

Two copies of one project are judged by `python -m gcpc_core judge --judge gcpc` in a child process
against the fake OpenAI server (in this process, reached through OPENAI_BASE_URL on 127.0.0.1): one
without interruption, one killed with SIGKILL at `kills` seeded random points — each once the run
has stored a seeded random number of trajectories, plus a random few milliseconds so the kill can
land inside a write — and resumed after each kill by the same command. After every kill the DB must
hold only whole trajectories. Both copies are then scored, and their exported judgments and scores
must be equal row for row (timestamps and run ids aside): no duplicates, nothing missing.

Replies are computed from each request (a verdict per item from a hash of the prompt, a real
citation), so equal exports mean each trajectory got its own answers back, not just "all Yes".
"""

from __future__ import annotations

import hashlib
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fake_openai import FAKE_MODEL, FakeOpenAI, Reply
from judge.conftest import first_citation, is_items_request, item_ids, user_text

from gcpc_core.export import EXPORTERS
from gcpc_core.judge import score_project
from gcpc_core.store import Store

__all__ = ["ResumeFigures", "comparable", "mixed_items_reply", "run_resume_drill"]

REPO = Path(__file__).resolve().parents[2]
JUDGE = "gcpc"
VOLATILE = ("run_id", "created_at", "scored_at")
"""Export columns that legitimately differ between two runs."""
CHILD_TIMEOUT_S = 60.0


def mixed_items_reply(request: dict[str, Any]) -> Reply:
    """Yes / No / Abstain per item, from a hash of the prompt and the item id; cites real evidence."""
    prompt, citation = user_text(request), first_citation(request)
    items = []
    for item in item_ids(request):
        verdict = ("Yes", "No", "Abstain")[hashlib.sha256(f"{prompt}|{item}".encode()).digest()[0] % 3]
        cites = [citation] if citation and verdict != "Abstain" else []
        items.append({"item_id": item, "citations": cites, "rationale": f"drill {verdict}", "verdict": verdict})
    return Reply.json({"items": items})


def comparable(rows: list[dict]) -> list[dict]:
    """Export rows without their volatile columns, in a stable order."""
    out = [{k: v for k, v in r.items() if k not in VOLATILE} for r in rows]
    return sorted(out, key=lambda r: (r["trajectory_id"], r["judge"], str(r.get("item_id"))))


@dataclass
class ResumeFigures:
    trajectories: int = 0
    kills: list[dict] = field(default_factory=list)
    """Per kill: the stored-trajectory target, trajectories stored when killed, whether still running."""
    judgments: int = 0
    scores: int = 0
    duplicates: int = 0
    missing: int = 0
    half_stored: int = 0
    """Checks after a kill that found a trajectory with a partial set of item judgments."""
    equal_judgments: bool = False
    equal_scores: bool = False
    diff: list[str] = field(default_factory=list)
    wall_s: float = 0.0

    @property
    def ok(self) -> bool:
        return (self.equal_judgments and self.equal_scores and not self.duplicates and not self.missing
                and not self.half_stored and all(k["mid_run"] for k in self.kills))

    def lines(self) -> list[str]:
        points = ", ".join(f"{k['stored']}/{self.trajectories}" for k in self.kills)
        return [
            f"kill -9 resume drill: {len(self.kills)} SIGKILLs of `python -m gcpc_core judge --judge {JUDGE}` "
            f"(stored when killed: {points}), each resumed",
            f"  final: {self.judgments} judgments, {self.scores} scores; duplicates {self.duplicates}, "
            f"missing {self.missing}, half-stored after a kill {self.half_stored}",
            f"  equal to an uninterrupted run: judgments {self.equal_judgments}, scores {self.equal_scores}; "
            f"wall {self.wall_s:.1f} s",
        ]


def _child(db: Path, server: FakeOpenAI) -> subprocess.Popen:
    env = {**os.environ, "OPENAI_BASE_URL": server.url, "OPENAI_API_KEY": "sk-drill", "GCPC_MODEL": FAKE_MODEL,
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    cmd = [sys.executable, "-m", "gcpc_core", "judge", "--db", str(db), "--judge", JUDGE, "--concurrency", "2",
           "--quiet"]
    return subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _run_to_end(db: Path, server: FakeOpenAI) -> None:
    child = _child(db, server)
    _, err = child.communicate(timeout=CHILD_TIMEOUT_S)
    if child.returncode != 0:
        raise RuntimeError(f"judge run failed ({child.returncode}): {err.decode(errors='replace')[-2000:]}")


def _half_stored(store: Store) -> int:
    """Trajectories whose stored item judgments are not exactly their unit's item count."""
    per_unit = Counter(r.trajectory_id for r in store.judging.judgments(judge=JUDGE) if r.route != "endpoint")
    units = store.judging.units(JUDGE)
    bad = sum(per_unit[t] != u.n_items for (t, _), u in units.items())
    return bad + len(set(per_unit) - {t for t, _ in units})


def _kill_at(db: Path, server: FakeOpenAI, target: int, jitter_s: float) -> dict:
    """Start a resume; SIGKILL it once `target` trajectories are stored (plus `jitter_s`)."""
    watcher = Store(db)
    child = _child(db, server)
    deadline = time.monotonic() + CHILD_TIMEOUT_S
    while len(watcher.judging.units(JUDGE)) < target and child.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    time.sleep(jitter_s)
    mid_run = child.poll() is None
    child.send_signal(signal.SIGKILL)
    child.wait()
    if child.stderr:
        child.stderr.close()
    stored = len(watcher.judging.units(JUDGE))
    watcher.close()
    return {"target": target, "stored": stored, "mid_run": mid_run}


def _final(db: Path) -> tuple[list[dict], list[dict]]:
    """Score, then export this judge's judgments and scores (what `export --what …` writes)."""
    store = Store(db)
    score_project(store, judge=JUDGE)
    judgments, scores = ([r for r in EXPORTERS[what](store) if r["judge"] == JUDGE] for what in ("judgments", "scores"))
    store.close()
    return judgments, scores


def run_resume_drill(clean_db: Path, killed_db: Path, *, kills: int = 5, seed: int = 8,
                     latency_s: float = 0.1) -> ResumeFigures:
    """Judge `clean_db` uninterrupted and `killed_db` (an identical copy) with `kills` kill -9s; compare.

    The judge stores finished trajectories a group at a time (`GROUP_SECONDS`); at concurrency 2 the
    server's latency sets how many a group holds (about 4 at 0.1 s), so every kill can land mid-run."""
    figures = ResumeFigures()
    start = time.monotonic()
    store = Store(killed_db)
    figures.trajectories = sum(1 for t in store.trials.trajectories() if store.checklists.latest(t.task) is not None)
    store.close()
    if figures.trajectories < kills + 13:
        raise ValueError(f"{figures.trajectories} judgeable trajectories are too few for {kills} kills")
    rng = random.Random(seed)
    # leave room at the end: a kill lands a few trajectories after its target
    targets = sorted(rng.sample(range(1, figures.trajectories - 12), kills))
    with FakeOpenAI() as server:
        server.latency = latency_s
        server.on(is_items_request, mixed_items_reply)
        _run_to_end(clean_db, server)
        for target in targets:
            stored = figures.kills[-1]["stored"] if figures.kills else 0
            # each resume stores at least one more trajectory before its kill
            figures.kills.append(_kill_at(killed_db, server, max(target, stored + 1), rng.uniform(0.0, 0.03)))
            check = Store(killed_db)
            figures.half_stored += _half_stored(check)
            check.close()
        _run_to_end(killed_db, server)
    clean_j, clean_s = _final(clean_db)
    killed_j, killed_s = _final(killed_db)
    keys = Counter((r["trajectory_id"], r["judge"], r["item_id"]) for r in killed_j)
    figures.judgments, figures.scores = len(killed_j), len(killed_s)
    figures.duplicates = sum(n - 1 for n in keys.values())
    figures.missing = len({(r["trajectory_id"], r["judge"], r["item_id"]) for r in clean_j} - set(keys))
    figures.missing += figures.trajectories - len({r["trajectory_id"] for r in killed_s})
    figures.equal_judgments = comparable(clean_j) == comparable(killed_j)
    figures.equal_scores = comparable(clean_s) == comparable(killed_s)
    for a, b in zip(comparable(clean_j), comparable(killed_j)):
        if a != b and len(figures.diff) < 5:
            figures.diff.append(f"{a} != {b}")
    figures.wall_s = time.monotonic() - start
    return figures
