"""Token auth: hashed tokens, wrong tokens, and no access to another rater's queue through the API."""

from __future__ import annotations

from pathlib import Path

import pytest
from study_helpers import small_study

from annotations import add_rater, issue_link, open_rater_session, rater_link, reassign
from annotations.tokens import (
    LinkRefused,
    SignIn,
    SignInLimiter,
    access_mode,
    client_address,
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


def test_only_loopback_host_names_are_the_local_owner() -> None:
    """DNS rebinding: a browser sends the name it resolved, so a foreign name resolving to 127.0.0.1 is
    another site's page, and never the owner; without an admin token it is simply `open`."""
    for host in ("127.0.0.1:8501", "localhost:8501", "LOCALHOST", "[::1]:8501", "127.0.0.2"):
        assert access_mode(None, "127.0.0.1", {"Host": host}) == "local", host
        assert access_mode(None, "127.0.0.1", {"host": host, "origin": f"http://{host}"}) == "local", host
    for host in ("attacker.test:8501", "attacker.test", "127.0.0.1.nip.io:8501", "localhost.attacker.test",
                 "sub.localhost", "[::1", "", "@127.0.0.1"):
        assert access_mode(None, "127.0.0.1", {"Host": host}) == "open", host
    for origin in ("http://attacker.test:8501", "null", "http://[::1"):  # a foreign page's script, whatever Host
        assert access_mode(None, "127.0.0.1", {"Host": "127.0.0.1:8501", "Origin": origin}) == "open", origin
    assert access_mode("s3cret", "127.0.0.1", {"Host": "attacker.test"}) == "protected"  # the token decides

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


class FakeTime:
    """A clock that only sleeping moves (and tests, by setting `now`)."""

    def __init__(self) -> None:
        self.now, self.slept = 0.0, []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def limiter(fake: FakeTime, **limits: float) -> SignInLimiter:
    return SignInLimiter(clock=fake.clock, sleep=fake.sleep, **{"max_failures": 3, "window_s": 60, "spacing_s": 5,
                                                                 **limits})


def test_a_session_that_failed_too_often_is_refused_and_no_one_else_is() -> None:
    fake = FakeTime()
    limits = limiter(fake)
    for _ in range(3):
        assert limits.attempt("s1", "10.0.0.1", "guess", "s3cret", mode="protected").admin is False
    assert limits.attempt("s1", "10.0.0.1", "s3cret", "s3cret", mode="protected").admin is None  # refused unchecked
    assert limits.wait_s("s1") == 60
    assert limits.attempt("s2", "10.0.0.2", "s3cret", "s3cret", mode="protected") == SignIn(True)  # another client
    fake.now = 30.0
    assert limits.attempt("s1", "10.0.0.1", "s3cret", "s3cret", mode="protected").admin is None
    fake.now = 60.5
    assert limits.wait_s("s1") == 0
    assert limits.attempt("s1", "10.0.0.1", "s3cret", "s3cret", mode="protected").admin is True
    assert not fake.slept  # 3 failures from 10.0.0.1, then one more check: not throttled yet (the 4th waits)


def test_guessers_sharing_the_admins_address_slow_it_down_but_never_lock_the_admin_out() -> None:
    """A guesser opening a new session per guess, from the admin's own address (loopback), gets
    `max_failures` fast checks, then one every `spacing_s`; the admin, in a session of its own, waits its
    turn and is let in."""
    fake = FakeTime()
    limits = limiter(fake)
    results = [limits.attempt(f"guesser-{i}", "loopback", f"guess-{i}", "s3cret", mode="protected") for i in range(3)]
    assert results == [SignIn(False)] * 3 and not fake.slept
    started = fake.now
    for i in range(3, 13):
        result = limits.attempt(f"guesser-{i}", "loopback", f"guess-{i}", "s3cret", mode="protected")
        assert result.admin is False and result.throttled  # checked, never refused: each session is fresh
    assert fake.now - started == 10 * 5  # ten checks, five seconds apart: the sessions bought no speed
    admin = limits.attempt("admin", "loopback", "s3cret", "s3cret", mode="protected")
    assert admin == SignIn(True, True, 5.0)  # delayed by one slot, then in
    assert limits.attempt("elsewhere", "10.0.0.9", "s3cret", "s3cret", mode="protected") == SignIn(True)  # others: at once

    fake.now += 61  # the failures age out: full speed again
    assert limits.attempt("later", "loopback", "s3cret", "s3cret", mode="protected") == SignIn(True)
    assert limits.attempt("later", "10.0.0.9", "guess", "s3cret", mode="protected").admin is False
    assert (set(limits._sessions), set(limits._addresses)) == ({"later"}, {"10.0.0.9"})  # the rest forgotten


def test_checks_from_one_address_are_bounded_per_window_however_many_sessions() -> None:
    fake = FakeTime()
    limits = limiter(fake, max_failures=10, window_s=300, spacing_s=5)
    checked = 0
    while fake.now < 300:
        assert limits.attempt(f"s{checked}", "loopback", "guess", "s3cret", mode="protected").admin is False
        checked += 1
    assert checked <= 10 + 300 / 5


def test_the_counted_client_is_the_tcp_peer_whatever_x_forwarded_for_says() -> None:
    """uvicorn (under Streamlit) replaces a loopback peer with the X-Forwarded-For entry, so Streamlit
    reports whatever the client wrote: a reported address that came from the header is a loopback peer."""
    assert client_address(None, [], {}) == "loopback"  # st.context.ip_address gives None for loopback
    for forged in ("203.0.113.9", "198.18.0.1, 203.0.113.9", "[2001:db8::1]:4711", "unknown"):
        reported = forged.split(",")[-1].strip().strip("[").split("]")[0]  # what uvicorn made of it
        assert client_address(reported, [forged], {}) == "loopback", forged
    assert client_address("10.0.0.3", ["203.0.113.9"], {}) == "10.0.0.3"  # an untrusted peer: not replaced
    assert client_address("10.0.0.3", [], {}) == "10.0.0.3"
    assert client_address("::ffff:10.0.0.3", [], {}) == "::ffff:a00:3"  # one spelling per address
    # uvicorn told to trust every peer: any header value may be forged, so all of them are one client
    assert client_address("203.0.113.9", ["203.0.113.9"], {"FORWARDED_ALLOW_IPS": "*"}) == "a peer in FORWARDED_ALLOW_IPS"
    # uvicorn told to trust nobody: what it reports is the peer
    assert client_address("203.0.113.9", ["203.0.113.9"], {"FORWARDED_ALLOW_IPS": ""}) == "203.0.113.9"


def test_behind_a_trusted_proxy_the_client_is_the_entry_that_proxy_wrote() -> None:
    env = {"GCPC_TRUSTED_PROXIES": "127.0.0.1, 10.0.0.0/8"}
    assert client_address("203.0.113.7", ["203.0.113.7"], env) == "203.0.113.7"  # nginx on this host
    # the client's own header is kept to the left of what the proxy appended: it cannot choose its key
    assert client_address("203.0.113.7", ["6.6.6.6, 203.0.113.7"], env) == "203.0.113.7"
    assert client_address("203.0.113.7", ["6.6.6.6, 203.0.113.7, 10.1.2.3"], env) == "203.0.113.7"  # two proxies
    assert client_address("10.0.0.3", ["203.0.113.7"], env) == "203.0.113.7"  # a trusted proxy elsewhere
    assert client_address("192.0.2.1", ["203.0.113.7"], env) == "192.0.2.1"  # a peer that is no trusted proxy
    assert client_address(None, [], env) == "loopback"
    with pytest.raises(ValueError, match=r"GCPC_TRUSTED_PROXIES: .*'nginx'.*expected addresses or networks"):
        client_address(None, [], {"GCPC_TRUSTED_PROXIES": "nginx"})
