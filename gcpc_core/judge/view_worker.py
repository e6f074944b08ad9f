"""The worker process of `prepare.ViewPool`: builds evidence views for a live run, off its loop.

    python -m gcpc_core.judge.view_worker      # started by ViewPool; frames on stdin and stdout

Its first frame is (project DB path, task id -> focus); it answers "ready" once the DB is open, then
each (request id, trajectory id, task id) with (request id, `prepare.ViewRows`), or (request id,
None) when that view could not be built (the run then builds it itself and sees the error). It only
reads the DB, and ends at the end of its stdin: when the run closes it, or when the run's process is
gone. Ctrl-C is the run's to handle.
"""

from __future__ import annotations

import os
import signal
import sys
from typing import IO

from ..store import Store
from .prepare import read_frame, view_rows, write_frame

__all__ = ["main"]


def serve(requests: IO[bytes], replies: IO[bytes]) -> None:
    """Answer view requests until `requests` ends."""
    db_path, focus = read_frame(requests)
    store = Store(db_path)
    write_frame(replies, "ready")
    while True:
        try:
            request_id, trajectory_id, task_id = read_frame(requests)
        except EOFError:
            return
        try:
            rows = view_rows(store, trajectory_id, focus[task_id])
        except Exception:  # noqa: BLE001 - the run rebuilds this view itself and meets the error there
            rows = None
        write_frame(replies, (request_id, rows))


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # nothing printed by accident, by Python or C, lands in the frames
    serve(sys.stdin.buffer, replies)


if __name__ == "__main__":
    main()
