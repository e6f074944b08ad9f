"""The run harness: how every stage run is recorded, shows its progress, stops on Ctrl-C and is reaped.

Every stage entry point — import, synthesize, judge, score, perturb, report — runs inside
`recorded_run`, whether the command line or the app's Runs page started it, so the `runs` ledger
tells the same story for both: kind, parameters, versions, what the run counted, its LLM calls,
tokens and cost, wall time, and how it ended (`done`, `interrupted` on Ctrl-C or cancellation,
`failed` on any other error). Stages store each unit of work in its own transaction as it is
finished, so an interrupted run leaves nothing half-written and a rerun resumes.

A run killed without a chance to close its row (SIGKILL, a crash) stays `running` in the ledger;
`reap_dead_runs` tells those from live runs by the process id and host the row records. The store
only runs the queries; what counts as alive is decided here.

Progress: a stage takes `progress` — True for a tqdm bar on the terminal, False for none, or a
callback `(done, total)` that the app's job runner passes to show progress on its page.

This module sits below the stages and the LLM layer (it imports only the store), so any of them
can use it without an import cycle.
"""

from __future__ import annotations

import asyncio
import os
import socket
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Protocol, TypeVar

from tqdm import tqdm

from .store import Store

__all__ = [
    "Progress",
    "ProgressBar",
    "ProgressFn",
    "RunAccount",
    "pid_alive",
    "reap_dead_runs",
    "recorded_run",
    "run_owner",
]

ProgressFn = Callable[[int, int], None]
"""Called with (done, total) after each finished unit of work."""
Progress = bool | ProgressFn
"""What a stage's `progress` argument takes: a terminal bar (True), nothing (False) or a callback."""


class RunAccount(Protocol):
    """What a run accounts into while it works: its ledger id, and its totals as ledger columns."""

    run_id: str | None

    def as_row(self) -> dict[str, Any]: ...


Account = TypeVar("Account", bound=RunAccount)


def run_owner() -> dict[str, Any]:
    """The process and host a new `running` row belongs to, so a dead owner can be told later."""
    return {"pid": os.getpid(), "host": socket.gethostname()}


def pid_alive(pid: int) -> bool:
    """Whether process `pid` exists on this host (signal 0 checks without signalling)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by someone else
    return True


def reap_dead_runs(store: Store) -> int:
    """Mark `running` rows whose process on this host is gone (SIGKILL, crash) as `interrupted`.

    Returns how many were marked. Rows of other hosts are left alone: their liveness is unknown here,
    and so are rows that name no process.
    """
    dead = [row.id for row in store.runs.running(host=socket.gethostname())
            if row.pid is not None and not pid_alive(row.pid)]
    store.runs.interrupt(dead)
    return len(dead)


@contextmanager
def recorded_run(
    store: Store,
    totals: Account,
    kind: str,
    *,
    model: str | None,
    prompt_version: str | None,
    rules_version: str | None = None,
    params: Mapping[str, Any] | None = None,
    counts: Callable[[], Mapping[str, int]] | None = None,
) -> Iterator[Account]:
    """One `runs` row around some work, with or without an LLM, so every run is audited alike.

    Dead runs are reaped first. `totals` gets the row's id; the row ends `done`, `interrupted`
    (Ctrl-C, cancellation) or `failed` (any other error), with the totals, the wall time and what
    `counts` reports at that moment (so an interrupted run still says how far it got).
    """
    reap_dead_runs(store)
    run_id = totals.run_id = store.runs.start(
        kind=kind, model=model, prompt_version=prompt_version, rules_version=rules_version,
        params=dict(params or {}), **run_owner(),
    )
    started, status = time.monotonic(), "failed"
    try:
        yield totals
        status = "done"
    except (KeyboardInterrupt, asyncio.CancelledError):
        status = "interrupted"
        raise
    finally:
        store.runs.finish(run_id, status=status, wall_s=round(time.monotonic() - started, 3),
                         totals=totals.as_row(), counts=dict(counts()) if counts is not None else None)


class ProgressBar:
    """Progress of one stage run: a tqdm bar on the terminal, or the caller's callback, or nothing."""

    def __init__(self, total: int, *, desc: str, unit: str, progress: Progress = True):
        self.total = total
        self.done = 0
        self._callback: ProgressFn | None = progress if callable(progress) else None
        self._bar = tqdm(total=total, desc=desc, unit=unit, dynamic_ncols=True,
                         disable=callable(progress) or not progress or not total)

    def update(self, n: int = 1, *, note: str | None = None) -> None:
        """`n` more units done; `note` (cost so far, the last task) shows beside the bar."""
        self.done += n
        if note is not None:
            self._bar.set_postfix_str(note, refresh=False)
        self._bar.update(n)
        if self._callback is not None:
            self._callback(self.done, self.total)

    def close(self) -> None:
        self._bar.close()

    def __enter__(self) -> ProgressBar:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
