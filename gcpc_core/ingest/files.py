"""Reading task and trial folders: what cannot be imported is refused by name, never half-read.

Importers report these messages verbatim, each naming the path at fault; the caller picks the
error type (TaskError, TrialError) so its report says which kind of folder was skipped.
"""

from __future__ import annotations

from pathlib import Path

from .bounded import FileRefused, read_regular
from .logs._io import lone_surrogate

__all__ = ["read_utf8", "resolved_folder"]


def resolved_folder(folder: Path, error: type[ValueError]) -> Path:
    """The folder's real path; its name becomes an id in the DB, which cannot hold non-UTF-8 text."""
    folder = Path(folder).resolve()
    if lone_surrogate(str(folder)):  # a name that is not UTF-8 reaches Python as lone surrogates
        raise error(f"{str(folder)!r}: folder name is not valid UTF-8")
    return folder


def read_utf8(path: Path, *, max_bytes: int, error: type[ValueError], what: str, newline: str | None = None) -> str:
    """The text of a regular file, refused when larger than `max_bytes` (not hand-written) or not UTF-8.

    `newline` as for `open`: None folds line endings to `\\n`; "" keeps them (JSON, whose error
    positions then count the file's own lines).
    """
    try:
        data = read_regular(path, max_bytes, what=what)
    except FileRefused as exc:
        raise error(str(exc)) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(f"{path}: not UTF-8 (byte {exc.start})") from None
    if newline is None and "\r" in text:  # as open() would: universal newlines
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text
