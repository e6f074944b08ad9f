"""Token auth: hashed tokens, wrong tokens, and no access to another rater's queue through the API."""

from __future__ import annotations

from pathlib import Path

import pytest
from study_helpers import small_study

from annotations import add_rater, issue_link, open_rater_session, rater_link, reassign
from annotations.tokens import (
    LinkRefused,
    SignInLimiter,
    access_mode,
    check_links_allowed,
    default_base_url,
    hash_token,
    invite_link,
    is_admin,
    served_url,
)
from gcpc_core.store import Store
from annotations.targets import add_annotation


@pytest.fixture
def study(store: Store):
    return small_study(store, tasks=2, per_task=6, raters_per_unit=1, seed=9, pairs_per_task=3)


def test_only_token_hashes_are_stored(store: Store, study) -> None:
    raw = Path(store.path).read_bytes() + b"".join(
        p.read_bytes() for p in Path(store.path).parent.glob("*.db-wal"))
    for token in study.tokens.values():
        assert len(token) >= 32 and token.encode() not in raw  # the DB (and its WAL) never holds a token
    assert all("token_hash" not in r.model_dump() for r in store.studies.raters(study.study_id))
    found = store.studies.rater_by_token_hash(hash_token(study.tokens["ann"]))
    assert found is not None and found.rater == "ann" and "token_hash" not in found.model_dump()


def test_no_token_hash_reaches_an_export_or_a_status(store: Store, study, capsys: pytest.CaptureFixture[str]) -> None:
    from annotations import export_csv, export_jsonl, rater_progress, status_lines
    from gcpc_core.cli import main
    from gcpc_core.export import export_rows
    from gcpc_core.review.overview import studies_frame

    hashes = [hash_token(t) for t in study.tokens.values()]
    assert all(store.studies.rater_by_token_hash(h) is not None for h in hashes)  # the hashes stored
    ann = open_rater_session(store, study.tokens["ann"])
    ann.submit_rating(next(i.target for i in ann.queue() if i.kind == "progress_rating"), 3)
    assert main(["study", "status", "--db", str(store.path), "--json"]) == 0
    shown = [export_csv(store, study.study_id), export_jsonl(store, study.study_id), capsys.readouterr().out,
             repr(list(export_rows(store, "annotations"))), repr(rater_progress(store, study.study_id)),
             "\n".join(status_lines(store, study.study_id)), studies_frame(store).to_csv()]
    assert all(h not in text for h in hashes for text in shown)
    assert any("ann" in text for text in shown)  # the raters are there, their hashes are not


def test_wrong_or_missing_token_opens_nothing(store: Store, study) -> None:
    for token in (None, "", "   ", "not-a-token", study.tokens["ann"][:-1], hash_token(study.tokens["ann"])):
        assert open_rater_session(store, token) is None


def test_a_rater_cannot_read_or_write_another_raters_queue(store: Store, study) -> None:
    ann = open_rater_session(store, study.tokens["ann"])
    ben = open_rater_session(store, study.tokens["ben"])
    ann_units = {i.target for i in ann.queue()}
    ben_units = {i.target for i in ben.queue()}
    assert ann_units and ben_units and not (ann_units & ben_units)  # k = 1: disjoint queues
    foreign_unit = next(i.target for i in ben.queue() if i.kind == "progress_rating")
    foreign_pair = next(i.target for i in ben.queue() if i.kind == "preference")
    ben.submit_rating(foreign_unit, 4, note="ben's private note")
    with pytest.raises(PermissionError):
        ann.unit_view(foreign_unit)
    with pytest.raises(PermissionError):
        ann.pair_view(foreign_pair)
    with pytest.raises(PermissionError):
        ann.history("progress_rating", foreign_unit)
    with pytest.raises(PermissionError):
        ann.answer("progress_rating", foreign_unit)
    with pytest.raises(PermissionError):
        ann.submit_rating(foreign_unit, 1)
    with pytest.raises(PermissionError):
        ann.submit_preference(foreign_pair, "A", 3)
    assert [r.rater for r in store.annotations.list(study_id=study.study_id)] == ["ben"]


def test_the_store_checks_the_assignment_inside_the_write(store: Store, study) -> None:
    ben = open_rater_session(store, study.tokens["ben"])
    unit = next(i.target for i in ben.queue() if i.kind == "progress_rating")
    traj = store.studies.units(study.study_id)
    traj_id = next(u.trajectory_id for u in traj if u.unit_id == unit)
    with pytest.raises(PermissionError, match="not in this rater's queue"):
        add_annotation(store, kind="progress_rating", rater="ann", value={"rating": 1}, study_id=study.study_id,
                             trajectory_id=traj_id, unit_id=unit, assignment=("progress_rating", unit))
    assert store.project.counts()["annotations"] == 0


def test_reassigned_items_move_their_access(store: Store, study) -> None:
    ann = open_rater_session(store, study.tokens["ann"])
    item = ann.queue()[0]
    report = reassign(store, study.study_id, "ann", "ben", targets=[(item.kind, item.target)])
    assert report.moved == [(item.kind, item.target)]
    with pytest.raises(PermissionError):
        ann.unit_view(item.target)
    ben = open_rater_session(store, study.tokens["ben"])
    same_kind = [i.target for i in ben.queue() if i.kind == item.kind]
    assert same_kind[-1] == item.target  # appended at the end of ben's queue of that kind
    assert ben.submit_rating(item.target, 5).created


def test_reissued_link_replaces_the_old_one(store: Store, study) -> None:
    old = study.tokens["cat"]
    new = issue_link(store, study.study_id, "cat")
    assert open_rater_session(store, old) is None
    assert open_rater_session(store, new).rater == "cat"
    newcomer = add_rater(store, study.study_id, "dee")
    assert open_rater_session(store, newcomer).queue() == []
    with pytest.raises(ValueError, match="already belongs"):
        add_rater(store, study.study_id, "dee")


def test_closed_study_is_read_only(store: Store, study) -> None:
    ann = open_rater_session(store, study.tokens["ann"])
    unit = ann.queue()[0].target
    store.studies.set_status(study.study_id, "closed")
    closed = open_rater_session(store, study.tokens["ann"])
    assert not closed.is_open and closed.unit_view(unit).steps
    with pytest.raises(PermissionError, match="closed"):
        closed.submit_rating(unit, 2)


def test_access_policy_fails_closed() -> None:
    assert access_mode("s3cret", None) == "protected"
    assert access_mode(None, "127.0.0.1") == "local" and access_mode("", "::1") == "local"
    assert access_mode(None, "localhost") == "local"
    for everywhere in (None, "", "0.0.0.0", "::", "192.168.1.5", "example.org"):  # unset: Streamlit's every interface
        assert access_mode(None, everywhere) == "open", everywhere
    # behind a proxy a loopback-bound app is public
    assert access_mode(None, "127.0.0.1", {"X-Forwarded-For": "203.0.113.9"}) == "open"
    assert access_mode(None, "127.0.0.1", {"Host": "127.0.0.1:8501"}) == "local"

    assert is_admin(None, None, mode="local") and is_admin("anything", "", mode="local")
    assert not is_admin(None, None, mode="open") and not is_admin("anything", None, mode="open")
    assert not is_admin(None, "s3cret", mode="protected") and not is_admin("wrong", "s3cret", mode="protected")
    assert is_admin("s3cret", "s3cret", mode="protected")
    assert not is_admin("s3cret", "s3cret", mode="open")


def test_links_are_refused_while_anyone_would_be_admin() -> None:
    for public in ("https://rate.example/app", "http://0.0.0.0:8501", "http://192.168.1.5:8501"):
        with pytest.raises(LinkRefused, match="GCPC_ADMIN_TOKEN is not set"):
            check_links_allowed(public, None)
        check_links_allowed(public, "s3cret")  # protected: fine
    for local in ("http://127.0.0.1:8501", "http://localhost:9000/x", "http://[::1]:8501"):
        check_links_allowed(local, None)


def test_link_base_url_comes_from_the_setting_or_the_served_address(tmp_path: Path) -> None:
    assert invite_link("abc-_1", "https://x.org/app/") == "https://x.org/app/rate?token=abc-_1"
    assert default_base_url({"GCPC_PUBLIC_URL": "https://gcpc.example.org/"}) == "https://gcpc.example.org"
    config = tmp_path / "config.toml"
    config.write_text('[server]\naddress = "127.0.0.2"\nport = 9123\nbaseUrlPath = "gcpc"\n')
    assert default_base_url({}, config) == "http://127.0.0.2:9123/gcpc"
    assert default_base_url({}, tmp_path / "missing.toml") == "http://localhost:8501"
    # the committed config: loopback, Streamlit's port
    assert default_base_url({}) == "http://127.0.0.1:8501"
    assert served_url("0.0.0.0", 8600) == "http://localhost:8600" and served_url("::1", 1) == "http://[::1]:1"


def test_a_link_can_be_shown_again_and_a_new_one_replaces_it(store: Store, study) -> None:
    base = "http://127.0.0.1:8600"
    again = rater_link(store, study.study_id, "ann", base)
    assert again == invite_link(study.tokens["ann"], base)  # the same link, rebuilt on demand
    assert rater_link(store, study.study_id, "ann", base) == again
    fresh = issue_link(store, study.study_id, "ann")
    assert rater_link(store, study.study_id, "ann", base) == invite_link(fresh, base)
    assert open_rater_session(store, study.tokens["ann"]) is None and open_rater_session(store, fresh) is not None
    newcomer = add_rater(store, study.study_id, "dee")
    assert rater_link(store, study.study_id, "dee") == invite_link(newcomer)
    assert rater_link(store, study.study_id, "nobody") is None
    # the link key lives beside the DB, not in it: a copy of the DB alone rebuilds no link
    key = Path(f"{store.path}.link-key")
    assert key.stat().st_mode & 0o077 == 0 and key.read_bytes() not in Path(store.path).read_bytes()
    key.write_text("another key " * 4)
    assert rater_link(store, study.study_id, "ann", base) is None


def test_cli_refuses_public_links_without_an_admin_token(store: Store, study, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    from gcpc_core.cli import main

    monkeypatch.delenv("GCPC_ADMIN_TOKEN", raising=False)
    monkeypatch.delenv("GCPC_PUBLIC_URL", raising=False)
    db = str(store.path)
    before = open_rater_session(store, study.tokens["ann"])
    assert main(["study", "link", "--db", db, "--rater", "ann", "--base-url", "https://rate.example"]) == 2
    assert "GCPC_ADMIN_TOKEN is not set" in capsys.readouterr().err
    assert before is not None and open_rater_session(store, study.tokens["ann"]) is not None  # nothing changed
    monkeypatch.setenv("GCPC_PUBLIC_URL", "https://rate.example")
    assert main(["study", "link", "--db", db, "--rater", "ann", "--show"]) == 2
    assert main(["study", "create", "--db", db, "--seed", "3", "--rater", "x", "--rater", "y", "--id", "s2"]) == 2
    assert [s.id for s in store.studies.list()] == [study.study_id]  # refused before anything was created
    monkeypatch.setenv("GCPC_ADMIN_TOKEN", "admin-secret")
    capsys.readouterr()
    assert main(["study", "link", "--db", db, "--rater", "ann", "--show"]) == 0
    assert capsys.readouterr().out.strip() == f"ann: {invite_link(study.tokens['ann'], 'https://rate.example')}"


def test_failed_sign_ins_are_limited_per_client() -> None:
    now = [0.0]
    limiter = SignInLimiter(max_failures=3, window_s=60, clock=lambda: now[0])
    for _ in range(3):
        assert limiter.attempt("10.0.0.1", "guess", "s3cret", mode="protected") is False
    assert limiter.attempt("10.0.0.1", "s3cret", "s3cret", mode="protected") is None  # refused unchecked
    assert limiter.wait_s("10.0.0.1") == 60
    assert limiter.attempt("10.0.0.2", "s3cret", "s3cret", mode="protected") is True  # another client
    now[0] = 30.0
    assert limiter.attempt("10.0.0.1", "s3cret", "s3cret", mode="protected") is None
    now[0] = 60.5
    assert limiter.wait_s("10.0.0.1") == 0
    assert limiter.attempt("10.0.0.1", "s3cret", "s3cret", mode="protected") is True
