"""`python -m gcpc_core export … | head`: the export ends quietly when its reader closes the pipe early —
no BrokenPipe traceback, exit code 141 (128 + SIGPIPE, as a shell reports a command ended by SIGPIPE)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gcpc_core.cli import EXIT_BROKEN_PIPE

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("what", "fmt", "runs"), [("judgments", "jsonl", ()), ("judgments", "csv", ()),
                                                   ("judgments", "csv", ("--all-runs",))])
def test_export_into_a_pipe_closed_early_ends_quietly(demo_master: Path, what: str, fmt: str,
                                                      runs: tuple[str, ...]) -> None:
    """The reader takes one line and closes its end, as `head -1` does; the export (far more than a pipe
    buffer holds) then fails to write and must stop without a traceback."""
    export = subprocess.Popen([sys.executable, "-m", "gcpc_core", "export", "--db", str(demo_master), "--what", what,
                               "--format", fmt, *runs], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert export.stdout is not None and export.stderr is not None
    first = export.stdout.readline()
    export.stdout.close()
    stderr = export.stderr.read().decode("utf-8", "replace")
    code = export.wait(timeout=120)
    assert first.strip(), "the export wrote nothing"
    assert "Traceback" not in stderr and "BrokenPipeError" not in stderr and "Exception ignored" not in stderr, stderr
    assert code == EXIT_BROKEN_PIPE == 141


def test_export_read_to_the_end_still_exits_0(demo_master: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "gcpc_core", "export", "--db", str(demo_master), "--what", "scores",
                           "--format", "csv"], cwd=REPO, capture_output=True, timeout=120)
    assert done.returncode == 0 and done.stderr == b""
    assert done.stdout.decode().splitlines()[0].startswith("trajectory_id,task,judge,outcome")
