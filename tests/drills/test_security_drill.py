"""Security drills that need no browser: import confinement (symlinks, `..`), archive extraction,
and hostile text stored byte for byte."""

from __future__ import annotations

import io
import json
import os
import shutil
import tarfile
import zipfile
from pathlib import Path

import pytest

from gcpc_core.export import EXPORTERS
from gcpc_core.ingest import import_project
from gcpc_core.cli import main
from gcpc_core.ingest.archive import ArchiveError, safe_extract, uploads_dir
from gcpc_core.store import Store

from .hostile import HOSTILE, TASK_ID, TRIAL_ID, HostileCorpus, write_hostile_corpus

pytestmark = pytest.mark.drill


@pytest.fixture
def corpus(tmp_path: Path) -> HostileCorpus:
    """A small hostile corpus (64 KiB long line) to move around; the 1 MB one is tested below."""
    return write_hostile_corpus(tmp_path / "in", huge_line_bytes=1 << 16)


def _outside(tmp_path: Path, corpus: HostileCorpus) -> Path:
    """The trial moved to a folder outside every import root: a secret the import must not read."""
    outside = tmp_path / "elsewhere" / TRIAL_ID
    outside.parent.mkdir(parents=True)
    shutil.move(corpus.trials_dir / TRIAL_ID, outside)
    return outside


# ---- import reads only under the folders it is given ----

def test_symlinked_trial_folder_leading_outside_is_reported_not_followed(tmp_path: Path, corpus: HostileCorpus) -> None:
    outside = _outside(tmp_path, corpus)
    (corpus.trials_dir / TRIAL_ID).symlink_to(outside, target_is_directory=True)
    store = Store(tmp_path / "p.db")
    report = import_project(store, tasks_dir=corpus.tasks_dir, trials_dir=corpus.trials_dir, progress=False)
    assert store.project.counts()["trials"] == 0 and store.project.counts()["events"] == 0
    [(path, reason)] = report.skipped
    assert path == str(corpus.trials_dir.resolve() / TRIAL_ID)
    assert "leads outside" in reason and "not followed" in reason
    assert [i.path for i in store.trials.import_issues()] == [path]


@pytest.mark.parametrize("link", ["agent/claude-code.txt", "result.json", "agent"])
def test_trial_reading_a_file_through_a_link_outside_is_reported(tmp_path: Path, corpus: HostileCorpus,
                                                                  link: str) -> None:
    outside = _outside(tmp_path, corpus)
    trial = corpus.trials_dir / TRIAL_ID
    shutil.copytree(outside, trial)
    shutil.rmtree(trial / link) if (trial / link).is_dir() else (trial / link).unlink()
    (trial / link).symlink_to(outside / link)
    store = Store(tmp_path / "p.db")
    report = import_project(store, tasks_dir=corpus.tasks_dir, trials_dir=corpus.trials_dir, progress=False)
    assert store.project.counts()["trials"] == 0 and store.project.counts()["events"] == 0
    reasons = dict(report.skipped)
    assert "leads outside" in reasons[str(trial.resolve())] and link in reasons[str(trial.resolve())]


def test_task_file_linked_outside_is_reported(tmp_path: Path, corpus: HostileCorpus) -> None:
    secret = tmp_path / "secret.py"
    secret.write_text("def test_secret():\n    '''API_KEY=hunter2'''\n")
    (corpus.tasks_dir / TASK_ID / "tests" / "test_leak.py").symlink_to(secret)
    store = Store(tmp_path / "p.db")
    report = import_project(store, tasks_dir=corpus.tasks_dir, progress=False)
    assert store.project.counts()["tasks"] == 0 and "leads outside" in dict(report.skipped)[str(corpus.tasks_dir / TASK_ID)]


def test_links_staying_inside_and_dotdot_in_the_given_path_are_fine(tmp_path: Path, corpus: HostileCorpus) -> None:
    """`..` in the folder the user names is resolved once; links inside that folder stay usable."""
    trial = corpus.trials_dir / TRIAL_ID
    (trial / "agent" / "log-copy.txt").symlink_to(trial / "agent" / "claude-code.txt")
    (corpus.trials_dir / "latest").symlink_to(trial, target_is_directory=True)  # not entered: its target is
    store = Store(tmp_path / "p.db")
    trials = corpus.trials_dir.parent / "tasks" / ".." / "trials"
    report = import_project(store, tasks_dir=corpus.tasks_dir, trials_dir=trials, progress=False)
    assert report.skipped == [] and report.trials_imported == 1
    assert store.trials.get_trajectory(TRIAL_ID).source_path == str(trial.resolve())


# ---- archives (`import --trials ARCHIVE`, the Runs page's upload: unpack safely, then import) ----

def _zip(members: dict[str, bytes], *, symlink: str | None = None) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
        if symlink:
            info = zipfile.ZipInfo(symlink)
            info.external_attr = (0o120777 << 16)
            zf.writestr(info, "/etc/passwd")
    return buf.getvalue()


def _tar(add) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        add(tf)
    return buf.getvalue()


def _tar_member(name: str, kind: bytes = tarfile.REGTYPE, data: bytes = b"x", link: str = ""):
    def add(tf: tarfile.TarFile) -> None:
        info = tarfile.TarInfo(name)
        info.type, info.linkname, info.size = kind, link, len(data) if kind == tarfile.REGTYPE else 0
        tf.addfile(info, io.BytesIO(data) if kind == tarfile.REGTYPE else None)
    return add


@pytest.mark.parametrize(("archive", "why"), [
    (_zip({"../evil.txt": b"x"}), "'..'"),
    (_zip({"trials/../../evil.txt": b"x"}), "'..'"),
    (_zip({"/etc/evil.txt": b"x"}), "absolute"),
    (_zip({"C:/evil.txt": b"x"}), "absolute"),
    (_zip({"..\\evil.txt": b"x"}), "backslash"),
    (_zip({"ok.txt": b"x"}, symlink="trials/link"), "symbolic link"),
    (_zip({"a": b"x", "a/b": b"y"}), "both a file and a folder"),
    (_tar(_tar_member("../evil.txt")), "'..'"),
    (_tar(_tar_member("/abs/evil.txt")), "absolute"),
    (_tar(_tar_member("trials/link", tarfile.SYMTYPE, link="/etc")), "symbolic link"),
    (_tar(_tar_member("trials/hard", tarfile.LNKTYPE, link="/etc/passwd")), "hard link"),
    (_tar(_tar_member("trials/dev", tarfile.CHRTYPE)), "not a regular file"),
    (_tar(_tar_member("trials/fifo", tarfile.FIFOTYPE)), "not a regular file"),
    (b"not an archive at all", "not a zip or tar"),
], ids=["zip-dotdot", "zip-inner-dotdot", "zip-absolute", "zip-drive", "zip-backslash", "zip-symlink",
        "zip-file-folder-clash", "tar-dotdot", "tar-absolute", "tar-symlink", "tar-hardlink", "tar-device",
        "tar-fifo", "garbage"])
def test_archive_with_a_bad_member_is_refused_whole(tmp_path: Path, archive: bytes, why: str) -> None:
    dest = tmp_path / "box" / "upload"
    with pytest.raises(ArchiveError, match=why):
        safe_extract(archive, dest)
    assert not dest.exists() and list((tmp_path / "box").iterdir()) == []  # nothing written, no staging left
    assert not (tmp_path / "evil.txt").exists()


def test_archive_bombs_are_bounded(tmp_path: Path) -> None:
    with pytest.raises(ArchiveError, match="over the limit"):
        safe_extract(_zip({f"f{i}": b"" for i in range(11)}), tmp_path / "a", max_members=10)
    with pytest.raises(ArchiveError, match="over the limit"):
        safe_extract(_zip({"big": b"0" * 4096}), tmp_path / "b", max_bytes=1024)
    with pytest.raises(ArchiveError, match="not an empty folder"):
        (tmp_path / "c").mkdir()
        (tmp_path / "c" / "keep").write_text("mine")
        safe_extract(_zip({"keep": b"theirs"}), tmp_path / "c")
    assert (tmp_path / "c" / "keep").read_text() == "mine"


def _corpus_archive(corpus: HostileCorpus, kind: str) -> bytes:
    """The corpus (tasks/ and trials/) as a zip or a tar.gz, with a setuid mode on every tar member."""
    files = {p.relative_to(corpus.tasks_dir.parent).as_posix(): p.read_bytes()
             for p in corpus.tasks_dir.parent.rglob("*") if p.is_file()}
    if kind == "zip":
        return _zip(files)

    def add(tf: tarfile.TarFile) -> None:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o4777  # a setuid bit is not carried over
            tf.addfile(info, io.BytesIO(data))
    return _tar(add)


@pytest.mark.parametrize("kind", ["zip", "tar"])
def test_import_from_an_archive_unpacks_beside_the_db_and_reimports_as_unchanged(
        tmp_path: Path, corpus: HostileCorpus, kind: str, capsys: pytest.CaptureFixture[str]) -> None:
    archive = tmp_path / f"job.{'zip' if kind == 'zip' else 'tar.gz'}"
    archive.write_bytes(_corpus_archive(corpus, kind))
    db = tmp_path / "p.db"
    argv = ["import", "--tasks", str(archive), "--trials", str(archive), "--db", str(db), "--quiet"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    [folder] = list(uploads_dir(db).iterdir())
    assert folder.name.startswith("job-") and f"unpacked to {folder}" in out
    written = [p for p in folder.rglob("*") if p.is_file()]
    assert written and all(os.stat(p).st_mode & 0o7777 == 0o644 for p in written)
    store = Store(db)
    assert [t.id for t in store.trials.trajectories()] == [TRIAL_ID] and store.trials.get_task(TASK_ID) is not None
    assert Path(store.trials.get_trajectory(TRIAL_ID).source_path).is_relative_to(folder)

    assert main(argv) == 0  # the same archive again: the same folder, the trial found unchanged
    assert list(uploads_dir(db).iterdir()) == [folder]
    assert [t.id for t in Store(db).trials.trajectories()] == [TRIAL_ID]


def test_import_refuses_a_hostile_archive_and_changes_nothing(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "p.db"
    archive = tmp_path / "evil.zip"
    archive.write_bytes(_zip({"trials/ok/result.json": b"{}", "trials/../../evil.txt": b"x"}))
    assert main(["import", "--trials", str(archive), "--db", str(db)]) == 2
    err = capsys.readouterr().err
    assert str(archive) in err and "'trials/../../evil.txt'" in err and "climb out" in err
    assert not (tmp_path / "evil.txt").exists() and not db.exists()
    assert not uploads_dir(db).exists() or list(uploads_dir(db).iterdir()) == []


# ---- hostile text is stored byte for byte ----

def test_hostile_text_imports_byte_exact(hostile_project) -> None:
    store, corpus = hostile_project
    assert store.trials.get_task(TASK_ID).instruction.encode() == corpus.instruction.encode()
    assert len(max(corpus.instruction.split("\n"), key=len)) >= 2**20  # the 1 MB single line
    texts = [e.text for e in store.trials.events(TRIAL_ID)]
    for role, text in corpus.event_texts.items():
        assert text in texts, role
    assert "\x1b[31m" in corpus.event_texts["agent_message"] and "\r" in corpus.event_texts["tool_output"]
    traj = store.trials.get_trajectory(TRIAL_ID)
    assert traj.exception == {"exception_type": HOSTILE["script"], "exception_message": HOSTILE["ansi"]}
    assert HOSTILE["script"] in store.trials.get_task(TASK_ID).verifier_files["test_outputs.py"]
    cited = {c["quote"] for r in EXPORTERS["judgments"](store) if r["trajectory_id"] == TRIAL_ID
             for c in r["citations"]}
    assert {HOSTILE["script"], HOSTILE["img_onerror"], HOSTILE["javascript_link"], HOSTILE["markdown_image"]} <= cited
    exported = [json.loads(json.dumps(r)) for r in EXPORTERS["trials"](store)]
    assert exported[0]["exception"] == HOSTILE["script"]
