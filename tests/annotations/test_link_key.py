"""The link key rater tokens are derived with (`annotations.tokens.link_key`): made atomically once, and
refused — naming the file or the variable — when it is empty, short, or in a file others could read,
write or own."""

from __future__ import annotations

import multiprocessing
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from study_helpers import small_project, small_study

from annotations.tokens import LINK_KEY_ENV, LINK_KEY_MIN_CHARS, LinkKeyError, link_key
from gcpc_core.store import Store

ROUNDS = 200
RACERS = 4


def _key_file(db: Path) -> Path:
    return Path(f"{db}.link-key")


def test_a_new_key_file_is_private_complete_and_kept(tmp_path: Path) -> None:
    db = tmp_path / "p.db"
    key = link_key(db, env={})
    path = _key_file(db)
    assert len(key) >= LINK_KEY_MIN_CHARS
    assert path.stat().st_mode & 0o777 == 0o600 and path.stat().st_uid == os.geteuid()
    assert link_key(db, env={}) == key  # made once
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.db.link-key"]  # no temporary file left behind


@pytest.mark.parametrize("content", ["", "   \n\t\n", "short-key\n", "x" * (LINK_KEY_MIN_CHARS - 1)])
def test_an_empty_or_short_key_file_is_refused_naming_it(tmp_path: Path, content: str) -> None:
    db = tmp_path / "p.db"
    path = _key_file(db)
    path.write_text(content)
    path.chmod(0o600)
    with pytest.raises(LinkKeyError, match="empty" if not content.strip() else "too short") as refused:
        link_key(db, env={})
    assert str(path) in str(refused.value)
    assert path.read_text() == content  # left as it was: links made with it are the owner's to replace


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o620, 0o602, 0o666], ids=oct)
def test_a_key_file_others_may_read_or_write_is_refused(tmp_path: Path, mode: int) -> None:
    db = tmp_path / "p.db"
    path = _key_file(db)
    path.write_text("k" * 64)
    path.chmod(mode)
    with pytest.raises(LinkKeyError, match=f"mode {mode:04o}") as refused:
        link_key(db, env={})
    assert str(path) in str(refused.value) and "chmod 600" in str(refused.value)
    path.chmod(0o600)
    assert link_key(db, env={}) == b"k" * 64


def test_a_key_file_of_another_user_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "p.db"
    path = _key_file(db)
    path.write_text("k" * 64)
    path.chmod(0o600)
    me = os.geteuid()
    monkeypatch.setattr(os, "geteuid", lambda: me + 1)  # as another user sees this file
    with pytest.raises(LinkKeyError, match=f"owned by uid {me}, not by this user") as refused:
        link_key(db, env={})
    assert str(path) in str(refused.value)


def test_a_key_file_that_is_not_a_file_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "p.db"
    _key_file(db).mkdir()
    with pytest.raises(LinkKeyError, match=str(_key_file(db))):
        link_key(db, env={})


@pytest.mark.parametrize("value", ["", "  ", "abc", "y" * (LINK_KEY_MIN_CHARS - 1)])
def test_an_empty_or_short_environment_key_is_refused(tmp_path: Path, value: str) -> None:
    with pytest.raises(LinkKeyError, match=f"\\${LINK_KEY_ENV} is (empty|too short)"):
        link_key(tmp_path / "p.db", env={LINK_KEY_ENV: value})
    assert not _key_file(tmp_path / "p.db").exists()  # a set variable is never silently replaced by a file


def test_an_environment_key_is_used_as_given(tmp_path: Path) -> None:
    value = "z" * LINK_KEY_MIN_CHARS
    assert link_key(tmp_path / "p.db", env={LINK_KEY_ENV: value}) == value.encode()
    assert not _key_file(tmp_path / "p.db").exists()


def _race_in_threads(db: Path) -> list[bytes]:
    start = threading.Barrier(RACERS)

    def first_call() -> bytes:
        start.wait()
        return link_key(db, env={})

    with ThreadPoolExecutor(RACERS) as pool:
        return list(pool.map(lambda _: first_call(), range(RACERS)))


def test_threads_racing_the_first_call_all_get_the_one_complete_key(tmp_path: Path) -> None:
    for r in range(ROUNDS):
        db = tmp_path / f"r{r}.db"
        keys = _race_in_threads(db)
        assert len(set(keys)) == 1 and len(keys[0]) >= LINK_KEY_MIN_CHARS, (r, keys)
        assert keys[0] == _key_file(db).read_bytes().strip()


def _race_in_a_process(dbs: list[Path], start: threading.Barrier, out: multiprocessing.Queue) -> None:
    """One racer: every round waits for the others at `start`, then makes its first call."""
    keys: list[bytes | str] = []
    for db in dbs:
        start.wait()
        try:
            keys.append(link_key(db, env={}))
        except LinkKeyError as exc:
            keys.append(str(exc))
    out.put(keys)


def test_processes_racing_the_first_call_all_get_the_one_complete_key(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("fork")
    dbs = [tmp_path / f"r{r}.db" for r in range(ROUNDS)]
    start, out = ctx.Barrier(RACERS, timeout=60), ctx.Queue()
    racers = [ctx.Process(target=_race_in_a_process, args=(dbs, start, out)) for _ in range(RACERS)]
    for p in racers:
        p.start()
    results = [out.get(timeout=120) for _ in racers]
    for p in racers:
        p.join(timeout=60)
        assert p.exitcode == 0
    for r, db in enumerate(dbs):
        keys = {result[r] for result in results}
        assert keys == {_key_file(db).read_bytes().strip()}, (r, keys)
        assert len(next(iter(keys))) >= LINK_KEY_MIN_CHARS


@pytest.mark.parametrize("show", [True, False], ids=["show-again", "issue-new"])
def test_the_cli_names_an_unusable_key_file_without_a_traceback(
        store: Store, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], show: bool) -> None:
    from gcpc_core.cli import main

    monkeypatch.delenv(LINK_KEY_ENV, raising=False)
    study = small_study(store, tasks=2, per_task=4, raters_per_unit=1, seed=3, pairs_per_task=0)
    path = _key_file(store.path)
    path.chmod(0o644)
    capsys.readouterr()
    code = main(["study", "link", "--db", str(store.path), "--study", study.study_id, "--rater", "ann",
                 *(["--show"] if show else [])])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("study link: ") and str(path) in err and "mode 0644" in err
    assert "Traceback" not in err


def test_the_cli_refuses_a_short_environment_key(store: Store, monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    from gcpc_core.cli import main

    monkeypatch.setenv(LINK_KEY_ENV, "")
    small_project(store, tasks=1, per_stratum=2)
    code = main(["study", "create", "--db", str(store.path), "--n-tasks", "1", "--per-task", "2",
                 "--raters-per-unit", "1", "--seed", "0"])
    err = capsys.readouterr().err
    assert code == 2 and f"${LINK_KEY_ENV} is empty" in err and "Traceback" not in err
    assert store.studies.list() == []  # nothing stored
