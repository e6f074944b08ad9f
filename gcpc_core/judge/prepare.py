"""Evidence views built in a worker process, off the event loop of a live LLM run.

A live run sends its requests and takes its replies on one event loop (one thread). Building a
trajectory's evidence view (reading its events, windowing them for the checklist's focus) is the
largest part of GCPC's own work per request, and pure Python: on that thread it competes with the
HTTP client for the one core the loop has (`bench/judge_bench.py`). `ViewPool` builds the views in a
worker process (`view_worker`), which reads the project DB on its own connection (SQLite readers do
not block the run's writer), and hands each view back to the loop; the view is the one
`units.evidence_of` builds (same events, same focus, same code), so requests, replies and stored rows
are what an in-loop run gives.

The worker is a plain `python -m gcpc_core.judge.view_worker` child talking over its stdin and
stdout (length-prefixed pickles), not a `multiprocessing` pool: a spawned pool re-runs the caller's
main script in the child, which a user's script without a `__main__` guard does not survive, and a
forked one inherits the app's threads. It is only worth its start (~0.3-0.5 s of imports, overlapped
with the run) on a run of many units (`MIN_UNITS`) on a machine with a core to spare. Until it is
ready, and if it fails or dies, the views are built on the loop as before. The worker only reads: a
kill -9 of the run leaves nothing of it to clean, and it ends when its stdin closes.
"""

from __future__ import annotations

import asyncio
import os
import pickle
import struct
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from ..checklist import Rules
from ..evidence import EvidenceEntry, EvidenceView, Focus, Gap
from ..models import Event
from ..store import Store
from .units import Unit, evidence_of, trajectory_view

__all__ = ["MIN_UNITS", "ViewPool", "ViewRows", "read_frame", "view_rows", "write_frame"]

MIN_UNITS = 200
"""A run of fewer units builds its views on the loop: the worker's start would cost more than it saves."""
_HEADER = struct.Struct("!I")

ViewRows = tuple[list[tuple[dict[str, Any], str, int, str | None, bool, bool, int]], tuple[Gap, ...], str]
"""A view as it travels from the worker: per entry its event's fields and the entry's own, its gaps,
and its rendered text (the judge prompt's evidence). Plain values: unpickling the view's objects cost
the loop half of what building the view did."""


def write_frame(stream: IO[bytes], value: Any) -> None:
    """One length-prefixed pickle, flushed."""
    data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_HEADER.pack(len(data)) + data)
    stream.flush()


def read_frame(stream: IO[bytes]) -> Any:
    """The next frame's value; EOFError at the end of the stream (or inside a frame: the writer died)."""
    header = stream.read(_HEADER.size)
    if len(header) < _HEADER.size:
        raise EOFError
    (size,) = _HEADER.unpack(header)
    data = stream.read(size)
    if len(data) < size:
        raise EOFError
    return pickle.loads(data)  # noqa: S301 - frames come from GCPC's own worker or run process


def view_rows(store: Store, trajectory_id: str, focus: Focus) -> ViewRows:
    """A stored trajectory's view (`units.trajectory_view`) as `ViewRows`: what the worker sends."""
    view = trajectory_view(store, trajectory_id, focus)
    return ([(dict(e.event), e.shown, e.elided_chars, e.duplicate_of, e.claim, e.boilerplate, e.focus_hits)
             for e in view.entries], view.gaps, view.render())


def _view_of(rows: ViewRows, focus: Focus) -> EvidenceView:
    """The view the worker built, again: its events were validated when they were loaded there."""
    entries, gaps, text = rows
    return EvidenceView([EvidenceEntry(Event.model_construct(**event), shown, elided, duplicate_of, claim,
                                       boilerplate, hits, focus)
                         for event, shown, elided, duplicate_of, claim, boilerplate, hits in entries], gaps, focus,
                        text=text)


class _WorkerGone(Exception):
    """The worker failed a view, or ended: the loop builds it (and the rest)."""


class ViewPool:
    """Builds the evidence views of a run's units in a worker process (see the module docstring)."""

    def __init__(self, store: Store, units: Sequence[Unit]):
        self._focus: Mapping[str, Focus] = {unit.task.id: unit.focus for unit in units if unit.focus is not None}
        package_root = str(Path(__file__).resolve().parents[2])
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (package_root, os.environ.get("PYTHONPATH"))))}
        self._process = subprocess.Popen(  # noqa: S603 - this interpreter, GCPC's own module
            [sys.executable, "-m", "gcpc_core.judge.view_worker"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            env=env)
        assert self._process.stdin is not None and self._process.stdout is not None
        self._to_worker, self._from_worker = self._process.stdin, self._process.stdout
        self._lock = threading.Lock()
        self._waiting: dict[int, asyncio.Future[ViewRows]] = {}
        self._next = 0
        self._units, self._asked = len(units), 0
        self.ready = False
        """The worker opened the DB and takes requests."""
        self.gone = False
        """The worker ended or failed: every view is built on the loop."""
        self.built = 0
        """Views the worker built (the rest were built on the loop)."""
        try:
            write_frame(self._to_worker, (str(Path(store.path).resolve()), self._focus))
        except OSError:
            self.gone = True
        self._reader = threading.Thread(target=self._read, name="gcpc-view-reader", daemon=True)
        self._reader.start()

    @classmethod
    def for_run(cls, store: Store, units: Sequence[Unit], *, cores: int | None = None) -> ViewPool | None:
        """A pool for a run of `units`, or None when the run is too small or no core is spare."""
        cores = cores if cores is not None else (os.cpu_count() or 1)
        if cores < 2 or len(units) < MIN_UNITS:
            return None
        return cls(store, units)

    def _read(self) -> None:
        """The reader thread: the ready frame, then each view to the future waiting for it."""
        try:
            self.ready = read_frame(self._from_worker) == "ready"
            while self.ready:
                request_id, rows = read_frame(self._from_worker)
                with self._lock:
                    future = self._waiting.pop(request_id, None)
                if future is not None:
                    future.get_loop().call_soon_threadsafe(_settle, future, rows)
        except (EOFError, OSError, pickle.UnpicklingError, ValueError, TypeError):
            pass
        self.gone = True
        with self._lock:
            left, self._waiting = list(self._waiting.values()), {}
        for future in left:
            future.get_loop().call_soon_threadsafe(_settle, future, None)

    async def view(self, store: Store, unit: Unit, rules: Rules) -> EvidenceView:
        """`unit`'s evidence view: from the worker once it is ready, else built here. Asked for the
        run's last unit, the worker is told to end once it has answered (it then ends meanwhile,
        instead of at `close`)."""
        self._asked += 1
        focus = unit.focus
        if not self.ready or self.gone or focus is None or unit.task.id not in self._focus:
            return evidence_of(store, unit, rules)
        future: asyncio.Future[ViewRows] = asyncio.get_running_loop().create_future()
        with self._lock:
            if self.gone:
                return evidence_of(store, unit, rules)
            request_id, self._next = self._next, self._next + 1
            self._waiting[request_id] = future
        try:
            write_frame(self._to_worker, (request_id, unit.trajectory.id, unit.task.id))
            if self._asked == self._units:
                self._end_input()
            rows = await future
        except (OSError, ValueError, _WorkerGone):  # the worker is gone, or its input closed
            with self._lock:
                self._waiting.pop(request_id, None)
            return evidence_of(store, unit, rules)
        self.built += 1
        return _view_of(rows, focus)

    def _end_input(self) -> None:
        """Close the worker's stdin: it answers what it was asked, then ends."""
        try:
            self._to_worker.close()
        except OSError:
            pass

    def close(self) -> None:
        """End the worker (its stdin closes) and the reader; a worker that does not end is killed."""
        self._end_input()
        try:
            self._process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        self._reader.join(timeout=5)
        self._from_worker.close()


def _settle(future: asyncio.Future[ViewRows], rows: ViewRows | None) -> None:
    """On the loop: give a waiting unit its view (None: the worker could not build it)."""
    if future.done():
        return
    if rows is None:
        future.set_exception(_WorkerGone())
    else:
        future.set_result(rows)
