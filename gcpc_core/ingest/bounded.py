"""Opening files from folders the user hands us: regular files only, never more than a limit.

A folder to import may hold anything: a named pipe where a verifier should be (opening it for
reading would block forever), a device, a directory named like a file, a symbolic link loop, or
a 1 GB sparse `reward.txt`. Every file import reads goes through `read_regular` or
`hash_regular`: the file is opened without blocking, checked on the open descriptor (so a swap
between check and read changes nothing), and read at most `max_bytes + 1` bytes, so memory stays
bounded by the largest accepted file whatever the folder holds.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import Any

__all__ = ["FileRefused", "hash_regular", "is_regular", "read_regular"]

_CHUNK = 1 << 20
_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a named pipe"), (stat.S_ISSOCK, "a socket"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))


class FileRefused(ValueError):
    """A file import will not read; the message names the path and the reason."""


def _size(n: int) -> str:
    return f"{n / 2**20:.1f} MiB ({n} bytes)" if n >= 2**20 else f"{n} bytes"


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def _open(path: Path) -> int:
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        return os.open(path, flags)
    except FileNotFoundError:
        raise FileRefused(f"{path}: no such file") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise FileRefused(f"{path}: symbolic link loop, not followed") from None
        if exc.errno == errno.EISDIR:
            raise FileRefused(f"{path}: is a directory, not a file") from None
        raise FileRefused(f"{path}: cannot open ({exc.strerror or exc})") from None


def is_regular(path: Path) -> bool:
    """Whether `path` (links followed) is a regular file; False for loops, pipes, devices, folders."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def read_regular(path: Path, max_bytes: int | None, *, what: str = "this file", head: int | None = None) -> bytes:
    """The bytes of a regular file of at most `max_bytes`, else FileRefused saying why.

    With `head`, only the first `head` bytes are read, whatever the file's size (`max_bytes` None).
    """
    fd = _open(path)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise FileRefused(f"{path}: {_kind(st.st_mode)}, not a regular file: not read")
        if max_bytes is not None and st.st_size > max_bytes:
            raise FileRefused(f"{path}: file is {_size(st.st_size)}, over the {_size(max_bytes)} limit for {what}")
        limit = head if head is not None else (max_bytes if max_bytes is not None else st.st_size) + 1
        chunks, total = [], 0
        while total < limit:
            chunk = os.read(fd, min(_CHUNK, limit - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        if head is None and max_bytes is not None and total > max_bytes:  # grew between fstat and read
            raise FileRefused(f"{path}: file grew past the {_size(max_bytes)} limit for {what} while being read")
        return b"".join(chunks)
    except OSError as exc:
        raise FileRefused(f"{path}: cannot read ({exc.strerror or exc})") from None
    finally:
        os.close(fd)


def hash_regular(path: Path, max_bytes: int, h: Any) -> None:
    """Feed a file to hash `h` in bounded chunks; an unreadable, irregular or oversized file
    contributes its refusal and its size and mtime instead, so a change to it still shows."""
    try:
        fd = _open(path)
    except FileRefused as exc:
        h.update(f"\0refused:{exc}".encode("utf-8", "surrogateescape"))
        return
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > max_bytes:
            h.update(f"\0unread:{st.st_mode}:{st.st_size}:{st.st_mtime_ns}".encode())
            return
        total = 0
        while total <= max_bytes:
            chunk = os.read(fd, min(_CHUNK, max_bytes + 1 - total))
            if not chunk:
                break
            h.update(chunk)
            total += len(chunk)
    except OSError as exc:
        h.update(f"\0error:{exc.errno}".encode())
    finally:
        os.close(fd)
