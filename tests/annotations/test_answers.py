"""Answers through their policies: a rater session's edits and what it shows of them, and item audits
(the store's own behaviour, concurrency included, is tested in tests/store/test_annotations.py)."""

from __future__ import annotations

import pytest
from study_helpers import small_project

from annotations import CreatedStudy, create_study, item_audit_history, item_audits, open_rater_session, record_item_audit
from annotations.design import DesignParams
from gcpc_core.store import Store


def study_with_raters(store: Store) -> CreatedStudy:
    small_project(store, tasks=2, per_stratum=2)
    return create_study(store, DesignParams(tasks=None, per_task=8, raters_per_unit=2, seed=4,
                                            raters=("ann", "ben", "cat", "dov"), pairs_per_task=4))


def test_edits_supersede_and_keep_history(store: Store) -> None:
    created = study_with_raters(store)
    s = open_rater_session(store, created.tokens["ann"])
    unit = s.queue()[0].target
    first = s.submit_rating(unit, 2, note="first look")
    second = s.submit_rating(unit, 4, note="after reading the output")
    assert first.created and second.created and second.row.supersedes == first.row.id
    history = s.history("progress_rating", unit)
    assert [(h.value["rating"], h.note) for h in history] == [(2, "first look"), (4, "after reading the output")]
    assert s.answer("progress_rating", unit) == history[-1]
    current = store.annotations.list(study_id=created.study_id, rater="ann")
    assert [r.value["rating"] for r in current] == [4]
    assert len(store.annotations.list(study_id=created.study_id, current=False)) == 2


def test_item_audits_share_the_store(store: Store) -> None:
    small_project(store, tasks=1, per_stratum=1)
    traj = store.trials.trajectories()[0].id
    row, created = record_item_audit(store, trajectory_id=traj, item_id="C1", judge="gcpc", reviewer="alice",
                                     agree=True, client_token="audit-1")
    again, created_again = record_item_audit(store, trajectory_id=traj, item_id="C1", judge="gcpc",
                                             reviewer="alice", agree=True, client_token="audit-1")
    assert created and not created_again and again.id == row.id
    record_item_audit(store, trajectory_id=traj, item_id="C1", judge="gcpc", reviewer="alice", agree=False,
                      corrected_verdict="No", note="the file is empty")
    record_item_audit(store, trajectory_id=traj, item_id="C1", judge="gcpc", reviewer="bob", agree=True)
    history = item_audit_history(store, trajectory_id=traj, item_id="C1", judge="gcpc")
    assert [(h.rater, h.value["agree"]) for h in history] == [("alice", True), ("alice", False), ("bob", True)]
    current = item_audits(store, trajectory_id=traj)
    assert {(r.rater, r.value["verdict"]) for r in current} == {("alice", "No"), ("bob", None)}
    assert current[0].task == "task-0" and store.project.counts()["annotations"] == 3
    with pytest.raises(ValueError, match="corrected verdict"):
        record_item_audit(store, trajectory_id=traj, item_id="C1", judge="gcpc", reviewer="x", agree=False)


def test_an_audit_records_how_its_verdict_was_selected(store: Store) -> None:
    """`selection` (random: a proposal's link; chosen: anything else) is stored in the audit, read into the audits
    frame (unrecorded when an audit does not say) and validated: a typo would silently turn a chosen audit into a
    sample of the error rate."""
    from gcpc_core.analysis.audits import audits_frame

    small_project(store, tasks=1, per_stratum=1)
    traj = store.trials.trajectories()[0].id
    record_item_audit(store, trajectory_id=traj, item_id="C1", judge="gcpc", reviewer="alice", agree=True,
                      selection="random")
    record_item_audit(store, trajectory_id=traj, item_id="C2", judge="gcpc", reviewer="alice", agree=True,
                      selection="chosen")
    record_item_audit(store, trajectory_id=traj, item_id="C3", judge="gcpc", reviewer="alice", agree=True)
    frame = audits_frame(store).set_index("item_id")
    assert frame.loc[["C1", "C2", "C3"], "selection"].tolist() == ["random", "chosen", "unrecorded"]
    with pytest.raises(ValueError, match="selection is one of"):
        record_item_audit(store, trajectory_id=traj, item_id="C4", judge="gcpc", reviewer="x", agree=True,
                          selection="triage")


def test_a_revoked_link_cannot_save_even_from_an_open_page(store: Store) -> None:
    """The rate page opens its session once per run; the link may be replaced before its Save is clicked."""
    from annotations import issue_link

    created = study_with_raters(store)
    s = open_rater_session(store, created.tokens["ann"])  # the page is open
    unit = s.queue()[0].target
    s.submit_rating(unit, 2)
    issue_link(store, created.study_id, "ann")  # the organiser replaces the link
    with pytest.raises(PermissionError, match="this link no longer works"):
        s.submit_rating(unit, 4)
    with pytest.raises(PermissionError, match="this link no longer works"):
        s.submit_preference(next(i.target for i in s.queue() if i.kind == "preference"), "A", 2)
    rows = store.annotations.list(study_id=created.study_id, rater="ann", current=False)
    assert [r.value for r in rows] == [{"rating": 2}]
    assert open_rater_session(store, created.tokens["ann"]) is None


def test_a_rater_comment_is_capped_with_a_clear_message(store: Store) -> None:
    from annotations.limits import COMMENT_MAX_CHARS

    s = open_rater_session(store, study_with_raters(store).tokens["ann"])
    unit = s.queue()[0].target
    assert s.submit_rating(unit, 2, note="x" * COMMENT_MAX_CHARS).created
    with pytest.raises(ValueError, match=f"comment has {COMMENT_MAX_CHARS + 1:,} characters, over the limit of "
                                         f"{COMMENT_MAX_CHARS:,}"):
        s.submit_rating(unit, 3, note="y" * (COMMENT_MAX_CHARS + 1))
    assert s.answer("progress_rating", unit).value == {"rating": 2}


def test_an_answer_keeps_at_most_the_capped_number_of_versions(store: Store) -> None:
    """40 saves of the longest comment: the first ANSWER_VERSIONS_MAX are kept, each change past them is
    refused and the last kept version stands (append-only: nothing is overwritten or dropped)."""
    from annotations.limits import ANSWER_VERSIONS_MAX, COMMENT_MAX_CHARS

    created = study_with_raters(store)
    s = open_rater_session(store, created.tokens["ann"])
    unit = s.queue()[0].target
    refused = 0
    for n in range(40):
        try:
            s.submit_rating(unit, 1 + n % 5, note=f"{n:02d}" + "z" * (COMMENT_MAX_CHARS - 2))
        except ValueError as exc:
            assert "cannot be changed again" in str(exc)
            refused += 1
    assert refused == 40 - ANSWER_VERSIONS_MAX
    history = s.history("progress_rating", unit)
    assert len(history) == ANSWER_VERSIONS_MAX and history[-1].note.startswith(f"{ANSWER_VERSIONS_MAX - 1:02d}")
    assert s.answer("progress_rating", unit) == history[-1]
    stored = sum(len(r.note or "") for r in store.annotations.list(study_id=created.study_id, current=False))
    assert stored == ANSWER_VERSIONS_MAX * COMMENT_MAX_CHARS  # 80,000 characters, not 40 × 262,144


def test_the_history_is_read_a_page_at_a_time_newest_first(store: Store) -> None:
    from annotations.study import HISTORY_PAGE_SIZE

    s = open_rater_session(store, study_with_raters(store).tokens["ann"])
    unit = s.queue()[0].target
    for n in range(12):
        s.submit_rating(unit, 1 + n % 5, note=f"v{n + 1}")
    first = s.history_page("progress_rating", unit)
    assert (first.total, first.page, first.pages) == (12, 0, 3) and HISTORY_PAGE_SIZE == 5
    assert [(n, a.note) for n, a in first.versions] == [(12, "v12"), (11, "v11"), (10, "v10"), (9, "v9"), (8, "v8")]
    last = s.history_page("progress_rating", unit, 2)
    assert [(n, a.note) for n, a in last.versions] == [(2, "v2"), (1, "v1")]
    assert s.history_page("progress_rating", unit, 99).page == 2  # clamped to the last page
    empty = s.history_page("progress_rating", s.queue()[1].target)
    assert (empty.total, empty.pages, empty.versions) == (0, 1, ())
