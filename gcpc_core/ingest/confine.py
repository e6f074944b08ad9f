"""Import reads only under the folders it is given.

A symbolic link under a tasks or trials folder that leads outside it (an absolute link, or one
climbing out with `..`) is never followed: a linked folder is reported at discovery, and a task or
trial whose files would be read through such a link is reported and skipped, so nothing from outside
the given folder reaches the project DB (and so the app). Links that stay inside the folder are
harmless and followed as usual. A link that loops leads nowhere and is reported the same way. The
given folder itself is the user's choice: it is resolved once (it may itself be a link) and
everything is checked against its real path.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path

__all__ = ["first_escape", "outside_links", "refusal", "walk"]


def _target(path: Path) -> Path | None:
    """Where `path` leads, or None for a symbolic link loop (which leads nowhere)."""
    try:
        return path.resolve()
    except (RuntimeError, OSError):  # Python 3.11 raises RuntimeError("Symlink loop ...")
        return None


def _escapes(path: Path, root: Path) -> bool:
    if not (path.is_symlink() or path.exists()):
        return False
    target = _target(path)
    return target is None or not target.is_relative_to(root)


def first_escape(paths: Iterable[Path], root: Path) -> Path | None:
    """The first of `paths` that resolves outside `root` (a resolved folder), or None.

    The first path is resolved whole; each later one must lie in a folder listed before it (or in
    the first), so only a symbolic link among them can lead elsewhere: only links are resolved.
    """
    for i, p in enumerate(paths):
        if (i == 0 or p.is_symlink()) and _escapes(p, root):
            return p
    return None


def refusal(path: Path, root: Path) -> str:
    """The reason reported for a path that leads outside `root`, or nowhere (a link loop)."""
    target = _target(path)
    if target is None:
        return f"{path}: symbolic link loop: not followed"
    return f"{path}: leads outside {root} (to {target}): not followed, import reads only under the given folder"


def walk(root: Path | str) -> Iterator[tuple[str, list[os.DirEntry], list[os.DirEntry]]]:
    """`os.walk(root)` in the same order, with the directory entries themselves instead of names.

    An entry knows whether it is a link or a folder from the directory listing, so a walk over
    thousands of trials does not `lstat` every file again (discovery runs before any parsing
    starts). Links to folders are listed among the folders and never entered; unreadable folders
    are passed over; iterative, so a deep tree cannot exhaust the stack.
    """
    stack = [os.fspath(root)]
    while stack:
        top = stack.pop()
        try:
            entries = os.scandir(top)
        except OSError:
            continue
        dirs, files = [], []
        with entries:
            for entry in entries:
                try:
                    is_dir = entry.is_dir()
                except OSError:  # a link loop, as os.walk does
                    is_dir = False
                (dirs if is_dir else files).append(entry)
        yield top, dirs, files
        stack += reversed([d.path for d in dirs if not d.is_symlink()])


def outside_links(root: Path) -> list[tuple[str, str]]:
    """(path, reason) for every symbolic link to a folder under `root` that leads outside it."""
    root = Path(root).resolve()
    found = []
    for _, dirs, files in walk(root):  # links to folders are listed, never entered
        for entry in dirs + files:
            if not entry.is_symlink():
                continue
            path = Path(entry.path)
            if (path.is_dir() or _target(path) is None) and _escapes(path, root):
                found.append((str(path), refusal(path, root)))
    return found
