"""Unpacking an uploaded archive of tasks or trials (zip or tar) without letting it escape its folder.

For `import --trials/--tasks ARCHIVE` and the Runs page's upload: `unpack_for_import` unpacks beside the
project DB, content-addressed, and the folder it returns is imported like any other. Every member
is checked before anything is written, and one bad member refuses the whole archive: member names
must be relative paths that stay inside the destination (no absolute paths, drive letters, `..`
parts, backslashes or NUL bytes), members must be regular files or folders (no symbolic or hard
links, devices or FIFOs), names must be unique and not clash file-vs-folder, and member count and
total size are bounded (zip bombs). Files are unpacked into a private temporary folder beside
`dest` and moved into place at the end, so a failure midway leaves nothing behind; file modes are
not taken from the archive.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import shutil
import stat
import tarfile
import tempfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import BinaryIO

__all__ = [
    "ARCHIVE_SUFFIXES",
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_MEMBERS",
    "ArchiveError",
    "is_archive_name",
    "safe_extract",
    "unpack_for_import",
    "uploads_dir",
]

DEFAULT_MAX_BYTES = 2 * 2**30
DEFAULT_MAX_MEMBERS = 50_000
_CHUNK = 1 << 20
_DRIVE = re.compile(r"^[A-Za-z]:")
_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")
ARCHIVE_SUFFIXES = (".zip", ".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz")
"""File names `unpack_for_import` is offered (the content decides: zip or tar, any compression)."""


class ArchiveError(ValueError):
    """An archive refused whole; the message names the member and the reason."""


@dataclass(frozen=True)
class _Member:
    parts: tuple[str, ...]
    is_dir: bool
    size: int
    handle: object
    """The zipfile.ZipInfo or tarfile.TarInfo to read it from."""


def _parts(name: str) -> tuple[str, ...]:
    """The safe relative path parts of a member name, or ArchiveError."""
    if "\x00" in name:
        raise ArchiveError(f"member {name!r}: NUL byte in the name")
    if "\\" in name:
        raise ArchiveError(f"member {name!r}: backslash in the name (a Windows path could climb out)")
    if name.startswith("/") or _DRIVE.match(name):
        raise ArchiveError(f"member {name!r}: absolute path")
    parts = tuple(p for p in PurePosixPath(name).parts if p not in ("", "."))
    if ".." in parts:
        raise ArchiveError(f"member {name!r}: '..' would climb out of the destination")
    if not parts:
        raise ArchiveError(f"member {name!r}: empty name")
    return parts


def _zip_members(zf: zipfile.ZipFile) -> Iterator[_Member]:
    for info in zf.infolist():
        mode = info.external_attr >> 16
        kind = stat.S_IFMT(mode)
        if stat.S_ISLNK(mode):
            raise ArchiveError(f"member {info.filename!r}: symbolic link")
        if kind and kind not in (stat.S_IFREG, stat.S_IFDIR):
            raise ArchiveError(f"member {info.filename!r}: not a regular file or folder")
        yield _Member(_parts(info.filename), info.is_dir(), info.file_size, info)


def _tar_members(tf: tarfile.TarFile) -> Iterator[_Member]:
    for info in tf.getmembers():
        if info.issym() or info.islnk():
            raise ArchiveError(f"member {info.name!r}: {'symbolic' if info.issym() else 'hard'} link")
        if not (info.isfile() or info.isdir()):
            raise ArchiveError(f"member {info.name!r}: not a regular file or folder")
        yield _Member(_parts(info.name), info.isdir(), info.size, info)


def _check(members: list[_Member], max_bytes: int, max_members: int) -> None:
    if len(members) > max_members:
        raise ArchiveError(f"{len(members)} members, over the limit of {max_members}")
    total = sum(m.size for m in members if not m.is_dir)
    if total > max_bytes:
        raise ArchiveError(f"{total} bytes unpacked, over the limit of {max_bytes}")
    files = {m.parts for m in members if not m.is_dir}
    if len(files) != sum(not m.is_dir for m in members):
        raise ArchiveError("a file name occurs twice")
    folders = {m.parts[:i] for m in members for i in range(1, len(m.parts) + (m.is_dir))}
    clash = files & folders
    if clash:
        raise ArchiveError(f"member {'/'.join(min(clash))!r} is both a file and a folder")


def _copy(source: BinaryIO, target: Path, limit: int, name: str) -> None:
    """Copy at most `limit` bytes (the declared size: a lying header cannot inflate the output)."""
    written = 0
    with open(target, "xb") as out:
        while chunk := source.read(_CHUNK):
            written += len(chunk)
            if written > limit:
                raise ArchiveError(f"member {name!r}: more data than its declared {limit} bytes")
            out.write(chunk)


def safe_extract(archive: str | Path | bytes | BinaryIO, dest: str | Path, *, max_bytes: int = DEFAULT_MAX_BYTES,
                 max_members: int = DEFAULT_MAX_MEMBERS) -> list[Path]:
    """Unpack a zip or tar (optionally gzip/bz2/xz) archive into `dest` (missing or empty); returns
    the files written. Raises ArchiveError, writing nothing, when any member is refused."""
    dest = Path(dest)
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise ArchiveError(f"{dest}: destination exists and is not an empty folder")
    source: str | BinaryIO = io.BytesIO(archive) if isinstance(archive, bytes) else (
        str(archive) if isinstance(archive, (str, Path)) else archive)
    dest.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{dest.name}.unpacking-", dir=dest.parent))
    try:
        written = _extract(source, staging, max_bytes, max_members)
        if dest.exists():
            dest.rmdir()
        staging.rename(dest)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return [dest / p.relative_to(staging) for p in written]


def _extract(source: str | BinaryIO, staging: Path, max_bytes: int, max_members: int) -> list[Path]:
    root = staging.resolve()
    if not isinstance(source, str):
        source.seek(0)
    if zipfile.is_zipfile(source):
        if not isinstance(source, str):
            source.seek(0)
        try:
            zf = zipfile.ZipFile(source)
        except (zipfile.BadZipFile, OSError) as exc:
            raise ArchiveError(f"not a readable zip archive ({exc})") from None
        with zf:
            members = list(_zip_members(zf))
            _check(members, max_bytes, max_members)
            return _write(members, root, lambda m: zf.open(m.handle))  # type: ignore[arg-type]
    if not isinstance(source, str):
        source.seek(0)
    try:
        tf = tarfile.open(name=source if isinstance(source, str) else None,
                          fileobj=None if isinstance(source, str) else source, mode="r:*")
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise ArchiveError(f"not a zip or tar archive ({exc})") from None
    with tf:
        members = list(_tar_members(tf))
        _check(members, max_bytes, max_members)
        return _write(members, root, lambda m: tf.extractfile(m.handle))  # type: ignore[arg-type]


def _write(members: list[_Member], root: Path, open_member) -> list[Path]:
    written = []
    for m in members:
        target = root.joinpath(*m.parts)
        if not target.resolve().is_relative_to(root):  # belt and braces: _parts already refused this
            raise ArchiveError(f"member {'/'.join(m.parts)!r} would land outside the destination")
        if m.is_dir:
            target.mkdir(mode=0o755, parents=True, exist_ok=True)
            continue
        target.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
        try:
            with open_member(m) as fh:
                _copy(fh, target, m.size, "/".join(m.parts))
        except (zipfile.BadZipFile, tarfile.TarError, EOFError, OSError) as exc:
            raise ArchiveError(f"member {'/'.join(m.parts)!r}: cannot be read ({exc})") from None
        os.chmod(target, 0o644)
        written.append(target)
    return written


def is_archive_name(name: str) -> bool:
    """Whether a file name ends like a zip or tar archive."""
    return name.lower().endswith(ARCHIVE_SUFFIXES)


def uploads_dir(db_path: str | Path) -> Path:
    """Where archives imported into a project are unpacked: beside its DB (`<db>.uploads/`), since
    imported trials keep pointing at their folders."""
    db_path = Path(db_path)
    return db_path.parent / f"{db_path.name}.uploads"


def unpack_for_import(archive: str | Path | bytes, db_path: str | Path, *, name: str | None = None,
                      max_bytes: int = DEFAULT_MAX_BYTES, max_members: int = DEFAULT_MAX_MEMBERS) -> Path:
    """Unpack an archive of task or trial folders for importing into the project at `db_path`; returns
    the folder to import. Raises ArchiveError (nothing written) when the archive is refused.

    The folder is named by the archive's name and content hash: the same archive unpacks once, so
    importing it again finds its trials unchanged instead of as duplicates in a second folder.
    """
    digest = hashlib.sha256()
    if isinstance(archive, bytes):
        digest.update(archive)
    else:
        with open(archive, "rb") as fh:
            while chunk := fh.read(_CHUNK):
                digest.update(chunk)
    label = name or (Path(archive).name if not isinstance(archive, bytes) else "upload")
    stem = label
    for suffix in sorted(ARCHIVE_SUFFIXES, key=len, reverse=True):
        if stem.lower().endswith(suffix):
            stem = stem[: -len(suffix)]
            break
    stem = _UNSAFE_NAME.sub("_", stem).strip("._")[:60] or "archive"
    dest = uploads_dir(db_path) / f"{stem}-{digest.hexdigest()[:12]}"
    if dest.is_dir() and any(dest.iterdir()):
        return dest  # unpacked before: safe_extract only ever moves a complete folder into place
    safe_extract(archive, dest, max_bytes=max_bytes, max_members=max_members)
    return dest
