"""Token auth: hashed tokens, wrong tokens, and no access to another rater's queue through the API."""

from __future__ import annotations

from pathlib import Path

import pytest
from study_helpers import small_study

from annotations import add_rater, issue_link, open_rater_session, reassign
from annotations.tokens import hash_token, invite_link, is_admin
from gcpc_core.store import Store


@pytest.fixture
def study(store: Store):
    return small_study(store, tasks=2, per_task=6, raters_per_unit=1, seed=9, pairs_per_task=3)


def test_only_token_hashes_are_stored(store: Store, study) -> None:
    raw = Path(store.path).read_bytes() + b"".join(
        p.read_bytes() for p in Path(store.path).parent.glob("*.db-wal"))
    for token in study.tokens.values():
        assert len(token) >= 32 and token.encode() not in raw  # the DB (and its WAL) never holds a token
    assert all("token_hash" not in r for r in store.study_raters(study.study_id))
    assert store.rater_by_token_hash(hash_token(study.tokens["ann"]))["rater"] == "ann"


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
    assert [r["rater"] for r in store.annotations(study_id=study.study_id)] == ["ben"]


def test_the_store_checks_the_assignment_inside_the_write(store: Store, study) -> None:
    ben = open_rater_session(store, study.tokens["ben"])
    unit = next(i.target for i in ben.queue() if i.kind == "progress_rating")
    traj = store.study_units(study.study_id)
    traj_id = next(u["trajectory_id"] for u in traj if u["unit_id"] == unit)
    with pytest.raises(PermissionError, match="not in this rater's queue"):
        store.add_annotation(kind="progress_rating", rater="ann", value={"rating": 1}, study_id=study.study_id,
                             trajectory_id=traj_id, unit_id=unit, assignment=("progress_rating", unit))
    assert store.counts()["annotations"] == 0


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
    store.set_study_status(study.study_id, "closed")
    closed = open_rater_session(store, study.tokens["ann"])
    assert not closed.is_open and closed.unit_view(unit).steps
    with pytest.raises(PermissionError, match="closed"):
        closed.submit_rating(unit, 2)


def test_admin_rule_and_links() -> None:
    assert is_admin(None, None) and is_admin("anything", "")  # no admin token configured: local owner
    assert not is_admin(None, "s3cret") and not is_admin("wrong", "s3cret")
    assert is_admin("s3cret", "s3cret")
    assert invite_link("abc-_1", "https://x.org/app/") == "https://x.org/app/rate?token=abc-_1"
    assert invite_link("t").startswith("http://localhost:8501/rate?token=")
