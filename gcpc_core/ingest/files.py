"""Reading task and trial folders: what cannot be imported is refused by name, never half-read.

Importers report these messages verbatim, each naming the path at fault; the caller picks the
error type (TaskError, TrialError) so its report says which kind of folder was skipped.
"""

from __future__ import annotations

from pathlib import Path

from .logs._io import lone_surrogate

__all__ = ["read_utf8", "resolved_folder"]


def resolved_folder(folder: Path, error: type[ValueError]) -> Path:
    """The folder's real path; its name becomes an id in the DB, which cannot hold non-UTF-8 text."""
    folder = Path(folder).resolve()
    if lone_surrogate(str(folder)):  # a name that is not UTF-8 reaches Python as lone surrogates
        raise error(f"{str(folder)!r}: folder name is not valid UTF-8")
    return folder


def read_utf8(path: Path, *, max_bytes: int, error: type[ValueError], what: str, newline: str | None = None) -> str:
    """The text of a file, refused when larger than `max_bytes` (not hand-written) or not UTF-8.

    `newline` as for `open`: None folds line endings to `\\n`; "" keeps them (JSON, whose error
    positions then count the file's own lines).
    """
    size = path.stat().st_size
    if size > max_bytes:
        raise error(f"{path}: {size / 2**20:.1f} MB is too large for {what}")
    try:
        with open(path, encoding="utf-8", newline=newline) as fh:
            return fh.read()
    except UnicodeDecodeError as exc:
        raise error(f"{path}: not UTF-8 (byte {exc.start})") from exc
