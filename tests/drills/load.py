"""Load drill: concurrent simulated annotators writing through the pages' own code path.

Annotators are spread over several processes (two app servers, or a CLI, sharing one project DB)
and several threads per process (Streamlit serves sessions from threads sharing one cached
`Store`). Every annotator writes item audits (`annotations.record_item_audit`, what the audit page
calls) and study answers through its own token-scoped `RaterSession` (`open_rater_session`, what
the rate page calls). Each write carries a unique client token and a unique note, so each must
store exactly one new row; some writes are re-sent with the same token (a double submit) and must
store nothing. Each auditor name is used by two annotators in different processes auditing the same
items at the same moments (one person, two app servers). Afterwards the DB is checked: every token
exactly once, each (target, rater) history one unbroken chain, each current rating or preference the
annotator's last write — so nothing was lost, duplicated or overwritten — and no "database is
locked" reached a caller.
"""

from __future__ import annotations

import threading
import time
import traceback
from collections import Counter, defaultdict
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from multiprocessing import get_context
from pathlib import Path

from annotations import DesignParams, create_study, open_rater_session, record_item_audit
from gcpc_core.store import AnnotationRow, Store

__all__ = ["LoadFigures", "prepare_load_study", "run_load_drill"]

STUDY_ID = "drill-load"
TOKEN_PREFIX = "drill-load:"
AUDIT_JUDGE = "probe"
RESUBMIT_EVERY = 20
"""Every 20th write is sent twice with the same client token (a double click / a rerun)."""


@dataclass
class LoadFigures:
    """What the drill did and what the DB holds afterwards."""

    annotators: int
    processes: int
    writes_per_annotator: int
    attempted: int = 0
    """Distinct writes (distinct client tokens) attempted."""
    resubmits: int = 0
    """Writes re-sent with an already used token; each must store nothing."""
    created: int = 0
    """Writes the API reported as stored."""
    stored: int = 0
    """Rows of the drill in the DB."""
    lost: int = 0
    duplicated: int = 0
    """Tokens stored more than once, plus re-sends that stored a row."""
    broken_chains: int = 0
    stale_current: int = 0
    """(target, rater) whose current answer is not the annotator's last write."""
    errors: list[str] = field(default_factory=list)
    locked: int = 0
    """Errors mentioning "database is locked" (must be 0)."""
    wall_s: float = 0.0

    @property
    def ok(self) -> bool:
        return (not self.errors and self.lost == 0 and self.duplicated == 0 and self.broken_chains == 0
                and self.stale_current == 0 and self.created == self.attempted == self.stored)

    def lines(self) -> list[str]:
        rate = self.attempted / self.wall_s if self.wall_s else 0.0
        return [
            f"load drill: {self.annotators} annotators ({self.processes} processes × "
            f"{self.annotators // self.processes} threads) × {self.writes_per_annotator} writes",
            f"  writes attempted {self.attempted} (+{self.resubmits} double submits), reported stored "
            f"{self.created}, rows stored {self.stored}",
            f"  lost {self.lost}, duplicated {self.duplicated}, broken history chains {self.broken_chains}, "
            f"stale current answers {self.stale_current}",
            f"  errors {len(self.errors)} (database is locked: {self.locked}); wall {self.wall_s:.1f} s, "
            f"{rate:.0f} writes/s",
        ]


def prepare_load_study(store: Store, annotators: int) -> dict[str, str]:
    """A study in which every one of `annotators` raters holds every unit and some pairs; rater → token."""
    raters = tuple(f"drill-{i:02d}" for i in range(annotators))
    params = DesignParams(tasks=None, per_task=4, raters_per_unit=annotators, seed=8, raters=raters, pairs_per_task=3)
    return create_study(store, params, study_id=STUDY_ID, name="load drill").tokens


@dataclass(frozen=True)
class _Spec:
    rater: str
    token: str
    writes: int
    reviewer: str
    """Auditor name, shared by two annotators in different processes: one auditor with the app open
    in two servers, both writing the same item audits at the same moments (their histories must
    still form one chain)."""
    twins: int


def _annotate(store: Store, spec: _Spec, audit_targets: list[tuple[str, str, str]], start_at: float) -> dict:
    """One annotator's writes: counts, errors, the tokens reported stored, the last token per target."""
    out: dict = {"attempted": 0, "resubmits": 0, "bad_resubmits": 0, "created": [], "errors": [], "last": {},
                 "end": start_at}
    try:
        session = open_rater_session(store, spec.token)  # what the rate page does on every rerun
        assert session is not None, f"token of {spec.rater} refused"
        queue = session.queue()
        ratings = [q.target for q in queue if q.kind == "progress_rating"]
        pairs = [q.target for q in queue if q.kind == "preference"]
        scale, confidences = list(session.guidelines.scale_values), list(session.guidelines.confidence_values)
    except Exception as exc:  # noqa: BLE001 — a drill reports every failure instead of stopping
        out["errors"].append(f"{spec.rater} setup: {type(exc).__name__}: {exc}")
        return out
    shift = int(spec.rater.rsplit("-", 1)[1])
    time.sleep(max(0.0, start_at - time.time()))
    for i in range(spec.writes):
        token, note, pick = f"{TOKEN_PREFIX}{spec.rater}:{i:05d}", f"{spec.rater} write {i}", i // 3 + shift
        op = i % 3 if pairs else i % 2
        try:
            for attempt in range(2 if i % RESUBMIT_EVERY == RESUBMIT_EVERY - 1 else 1):
                if op == 0:
                    traj, item, judge = audit_targets[(i // 3 + shift % spec.twins) % len(audit_targets)]
                    agree = pick % 2 == 0
                    row, created = record_item_audit(
                        store, trajectory_id=traj, item_id=item, judge=judge, reviewer=spec.reviewer, agree=agree,
                        corrected_verdict=None if agree else "Abstain", note=note, client_token=token)
                elif op == 1:
                    result = session.submit_rating(ratings[pick % len(ratings)], scale[i % len(scale)], note=note,
                                                   client_token=token)
                    row, created = result.row, result.created
                else:
                    result = session.submit_preference(pairs[pick % len(pairs)], ("A", "B", "tie")[i % 3],
                                                       confidences[i % len(confidences)], note=note, client_token=token)
                    row, created = result.row, result.created
                if attempt == 0:
                    out["attempted"] += 1
                    if created:
                        out["created"].append(token)
                    if op:  # an audit's last writer is either twin: its chain check covers it
                        out["last"][(row.kind, row.target)] = token
                else:
                    out["resubmits"] += 1
                    out["bad_resubmits"] += int(created or row.client_token != token)
        except Exception as exc:  # noqa: BLE001
            out["errors"].append(f"{spec.rater} write {i}: {type(exc).__name__}: {exc}")
            if len(out["errors"]) > 20:
                break
        if i % 50 == 49:  # a rerun of the rate page opens the session again
            session = open_rater_session(store, spec.token) or session
    out["end"] = time.time()
    return out


def _process_main(db_path: str, specs: list[_Spec], start_at: float) -> list[dict]:
    """One "app server": one shared `Store` (as `app.py` caches it), one thread per annotator."""
    store = Store(db_path)
    audit_targets = sorted({(r.trajectory_id, r.item_id, r.judge)
                            for r in store.judging.judgments(judge=AUDIT_JUDGE) if r.route != "endpoint"})
    results: list[dict] = [{} for _ in specs]

    def run(k: int) -> None:
        try:
            results[k] = _annotate(store, specs[k], audit_targets, start_at)
        except BaseException:  # noqa: BLE001
            results[k] = {"errors": [traceback.format_exc()]}

    threads = [threading.Thread(target=run, args=(k,), name=s.rater) for k, s in enumerate(specs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def _verify(store: Store, figures: LoadFigures, created: set[str], last: dict[tuple[str, str, str], str]) -> None:
    """Count the drill's rows and check tokens, history chains and current answers."""
    rows = [r for r in store.annotations.list(current=False) if r.client_token.startswith(TOKEN_PREFIX)]
    per_token = Counter(r.client_token for r in rows)
    figures.stored = len(rows)
    figures.lost = len(created - set(per_token))
    figures.duplicated += sum(n - 1 for n in per_token.values() if n > 1)
    chains: dict[tuple, list[AnnotationRow]] = defaultdict(list)
    for r in rows:
        chains[(r.kind, r.study_id, r.target, r.rater)].append(r)
    for history in chains.values():
        history.sort(key=lambda r: r.id)
        if [r.supersedes for r in history] != [None] + [r.id for r in history[:-1]]:
            figures.broken_chains += 1
    current = {(r.kind, r.target, r.rater): r.client_token
               for r in store.annotations.list() if r.client_token.startswith(TOKEN_PREFIX)}
    figures.stale_current = sum(current.get(key) != token for key, token in last.items())


def run_load_drill(db_path: Path, *, annotators: int = 16, writes: int = 500, processes: int = 4) -> LoadFigures:
    """Run the drill on a project DB that holds probe judgments (the demo project does)."""
    if annotators % processes:
        raise ValueError("annotators must split evenly over processes")
    store = Store(db_path)
    tokens = prepare_load_study(store, annotators)
    half = max(1, annotators // 2)
    specs = [_Spec(rater, token, writes, reviewer=f"drill-auditor-{k % half:02d}", twins=half)
             for k, (rater, token) in enumerate(sorted(tokens.items()))]
    per = annotators // processes
    figures = LoadFigures(annotators=annotators, processes=processes, writes_per_annotator=writes)
    start_at = time.time() + 3.0  # every process starts writing at the same moment, after its imports
    with ProcessPoolExecutor(max_workers=processes, mp_context=get_context("spawn")) as pool:
        futures = [pool.submit(_process_main, str(db_path), specs[p * per:(p + 1) * per], start_at)
                   for p in range(processes)]
        results = [r for f in futures for r in f.result()]
    figures.wall_s = max(r.get("end", start_at) for r in results) - start_at
    created: set[str] = set()
    last: dict[tuple[str, str, str], str] = {}
    for spec, res in zip(specs, results):
        figures.attempted += res.get("attempted", 0)
        figures.resubmits += res.get("resubmits", 0)
        figures.duplicated += res.get("bad_resubmits", 0)
        figures.errors += res.get("errors", [])
        created.update(res.get("created", []))
        last.update({(kind, target, spec.rater): tok for (kind, target), tok in res.get("last", {}).items()})
    figures.created = len(created)
    figures.locked = sum("locked" in e for e in figures.errors)
    _verify(store, figures, created, last)
    return figures
