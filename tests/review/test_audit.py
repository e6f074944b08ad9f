"""gcpc_core.review.audit on the demo project (and the largest real trial when the corpus is present)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from annotations.audits import item_audit_history, item_audits
from gcpc_core.models import CtrfTest
from gcpc_core.review.audit import (
    ITEM_SHOW,
    AuditFilters,
    audit_list,
    explain_reason,
    filter_items,
    history_lines,
    item_flags,
    item_views,
    judge_stats,
    neighbour,
    record_audit,
    ref_status,
    trajectory_frame,
)
from gcpc_core.store import AnnotationRow, JudgeUnitRow, JudgmentRow, Store, derive_label


def first_fail(store: Store) -> str:
    return next(t.id for t in store.trials.trajectories() if t.outcome == "FAIL")


def test_trajectory_frame_and_judge_stats(demo: Store) -> None:
    frame = trajectory_frame(demo)
    assert len(frame) == 36 and frame["n_events"].sum() == demo.project.counts()["events"]
    traj = demo.trials.trajectories()[0]
    row = frame.set_index("trajectory_id").loc[traj.id]
    assert row["ctrf_passed"] == sum(c.status == "passed" for c in traj.ctrf)
    stats = judge_stats(demo)
    assert set(stats["judge"]) == {"probe"} and len(stats) == 36
    real_items = [r for r in demo.judging.judgments() if r.route != "endpoint"]
    assert stats["n_items"].sum() == len(real_items)
    assert (stats["n_yes"] + stats["n_no"] + stats["n_abstain"] == stats["n_items"]).all()
    assert (stats["audited"] == 0).all() and (stats["judge_disagreements"] == 0).all()


def test_judge_disagreement_needs_two_judges(demo: Store) -> None:
    traj_id = first_fail(demo)
    rows = demo.judging.judgments(trajectory_id=traj_id, judge="probe")
    flipped = {"Yes": "No", "No": "Yes", "Abstain": "Yes"}
    second = [{**r.model_dump(), "judge": "gcpc", "verdict_raw": flipped[r.verdict_raw] if r.item_id == rows[0].item_id
               else r.verdict_raw} for r in rows if r.route != "endpoint"]
    unit = JudgeUnitRow(trajectory_id=traj_id, judge="gcpc", task=rows[0].task, prompt_version="t",
                        created_at="2026-01-01T00:00:00+00:00", label=derive_label("gcpc", None, "t", None))
    demo.judging.save_trajectory_judgment(unit, [JudgmentRow(**r) for r in second], [])
    stats = judge_stats(demo).set_index(["trajectory_id", "judge"])
    assert stats.loc[(traj_id, "probe"), "judge_disagreements"] == 1
    assert stats.loc[(traj_id, "gcpc"), "judge_disagreements"] == 1
    listing = audit_list(trajectory_frame(demo), judge_stats(demo), "probe", AuditFilters(show="judges disagree"))
    assert list(listing["trajectory_id"]) == [traj_id]
    views = item_views(demo, traj_id, "probe")
    assert views[0].judges_disagree and views[0].other_judges == {"gcpc": second[0]["verdict_raw"]}
    assert [v.item_id for v in filter_items(views, [], "judges disagree")] == [rows[0].item_id]


def test_filters_narrow_the_list(demo: Store) -> None:
    frame, stats = trajectory_frame(demo), judge_stats(demo)
    everything = audit_list(frame, stats, "probe", AuditFilters())
    fails = audit_list(frame, stats, "probe", AuditFilters(outcomes=("FAIL",)))
    one_task = audit_list(frame, stats, "probe", AuditFilters(tasks=("sales-csv-summary",), conditions=("with-skills",)))
    assert len(everything) == 36 and 0 < len(fails) < 36 and set(fails["outcome"]) == {"FAIL"}
    assert 0 < len(one_task) < len(fails) + 1 and set(one_task["task"]) == {"sales-csv-summary"}
    assert set(one_task["condition"]) == {"with-skills"}
    assert len(audit_list(frame, stats, "probe", AuditFilters(show="not fully audited"))) == 36
    assert audit_list(frame, stats, "probe", AuditFilters(show="auditors disagree")).empty
    unjudged = audit_list(frame, stats, "holistic", AuditFilters())
    assert len(unjudged) == 36 and (unjudged["n_items"] == 0).all()
    assert audit_list(frame, stats, "holistic", AuditFilters(show="judged")).empty
    with pytest.raises(ValueError, match="unknown filter"):
        audit_list(frame, stats, "probe", AuditFilters(show="everything"))


def test_item_views_of_a_failed_trajectory(demo: Store) -> None:
    traj_id = first_fail(demo)
    traj, views = demo.trials.get_trajectory(traj_id), item_views(demo, traj_id, "probe")
    task = demo.trials.get_task(traj.task)
    assert views[-1].item_id == "ENDPOINT" and not views[-1].auditable and views[-1].verdict == "No"
    assert [v.item_id for v in views[:-1]] == [r.item_id for r in demo.judging.judgments(trajectory_id=traj_id)
                                              if r.route != "endpoint"]
    for view in views[:-1]:
        assert view.quote is not None and view.quote.span is not None
        assert " ".join(task.instruction[view.quote.span.start:view.quote.span.end].split()) == \
            " ".join(view.quote.quote.split())
        for ref in view.refs:
            assert ref.source is not None and ref.source.lstrip().startswith("def ")
            assert ref.status in ("passed", "failed") and ref.results
        for c in view.citations:
            assert c.in_evidence and c.span is not None and c.excerpt is not None
            assert " ".join(c.event.text[c.span.start:c.span.end].split()) == " ".join(c.quote.split())
    assert any(ref.status == "failed" for v in views for ref in v.refs)  # a FAIL has a failed test somewhere
    assert item_views(demo, traj_id, "gcpc") == []
    with pytest.raises(KeyError):
        item_views(demo, "no-such-trajectory", "probe")


def test_abstain_reasons_are_explained(demo: Store) -> None:
    abstains = [r for r in demo.judging.judgments() if r.verdict_raw == "Abstain"]
    assert abstains
    for reason in {r.reason_raw for r in abstains}:
        assert explain_reason(reason) != reason
    assert explain_reason("official_pass").startswith("postprocessing")
    assert explain_reason("something_new") == "something_new" and explain_reason(None) == ""


def test_ref_status_rules() -> None:
    ctrf = [CtrfTest(name="tests/test_outputs.py::T::t[a]", status="passed"),
            CtrfTest(name="tests/test_outputs.py::T::t[b]", status="failed"),
            CtrfTest(name="test_outputs.py::T::u", status="passed"),
            CtrfTest(name="test_outputs.py::T::s", status="skipped")]
    assert ref_status("test_outputs.py::T::t", ctrf)[0] == "failed"
    status, hits = ref_status("test_outputs.py::T::t[a]", ctrf)
    assert status == "passed" and len(hits) == 1
    assert ref_status("test_outputs.py::T::u", ctrf)[0] == "passed"
    assert ref_status("test_outputs.py::T::s", ctrf)[0] == "skipped"
    assert ref_status("test_outputs.py::T::v", ctrf) == ("not in CTRF report", ())
    assert ref_status("test_outputs.py::T::u", []) == ("no CTRF report", ())


def test_a_verifier_scripts_ref_shows_the_official_outcome() -> None:
    """A plain-script verifier's node (`tests/verify.py`) is listed by no CTRF report of pytest's: the audit
    view shows the script's own source and the official outcome as its status, unless the CTRF lists it."""
    from gcpc_core.ingest.tasks import load_task
    from gcpc_core.models import Trajectory
    from gcpc_core.review.audit import _ref_view

    task = load_task(Path(__file__).resolve().parents[1] / "fixtures" / "script_verifiers" / "plain-script")
    fail = Trajectory.model_construct(outcome="FAIL", ctrf=[])
    view = _ref_view("tests/verify.py", task, fail)
    assert view.status == "failed (the official outcome: the script as a whole)"
    assert view.source == task.verifier_files["verify.py"].rstrip("\n") and view.lineno == 1
    listed = Trajectory.model_construct(outcome="FAIL", ctrf=[CtrfTest(name="tests/verify.py", status="passed")])
    assert _ref_view("tests/verify.py", task, listed).status == "passed"
    assert _ref_view("tests/verify.py", task, Trajectory.model_construct(outcome="unscored", ctrf=[])).status == (
        "no CTRF report")


def test_record_audit_appends_and_keeps_history(demo: Store) -> None:
    traj_id = first_fail(demo)
    view = next(v for v in item_views(demo, traj_id, "probe") if v.verdict_raw in ("Yes", "No"))
    other = {"Yes": "No", "No": "Yes"}[view.verdict_raw]
    before = demo.project.counts()["annotations"]
    row, written = record_audit(demo, view, trajectory_id=traj_id, judge="probe", reviewer="alice", agree=True,
                                client_token="t1")
    again, written_again = record_audit(demo, view, trajectory_id=traj_id, judge="probe", reviewer="alice",
                                        agree=True, client_token="t1")
    assert written and not written_again and again.id == row.id
    assert demo.project.counts()["annotations"] == before + 1
    record_audit(demo, view, trajectory_id=traj_id, judge="probe", reviewer="alice", agree=False,
                 corrected_verdict=other, note="the file was overwritten later")
    history = item_audit_history(demo, trajectory_id=traj_id, item_id=view.item_id, judge="probe")
    lines = history_lines(history)
    assert len(lines) == 2 and "alice: agree (superseded)" in lines[0]
    assert f"alice: disagree → {other} — the file was overwritten later" in lines[1]
    audits = item_audits(demo, trajectory_id=traj_id, judge="probe")
    assert item_flags(view, audits)["auditors disagree"]
    assert [v.item_id for v in filter_items(item_views(demo, traj_id, "probe"), audits, "auditors disagree")] == \
        [view.item_id]
    assert view.item_id not in [v.item_id for v in filter_items(item_views(demo, traj_id, "probe"), audits,
                                                                "not audited")]
    stats = judge_stats(demo).set_index(["trajectory_id", "judge"]).loc[(traj_id, "probe")]
    assert stats["audited"] == 1 and stats["auditor_disagreements"] == 1


def test_record_audit_refuses_what_makes_no_sense(demo: Store) -> None:
    traj_id = first_fail(demo)
    views = item_views(demo, traj_id, "probe")
    view = views[0]
    with pytest.raises(ValueError, match="reviewer"):
        record_audit(demo, view, trajectory_id=traj_id, judge="probe", reviewer=" ", agree=True)
    with pytest.raises(ValueError, match="endpoint"):
        record_audit(demo, views[-1], trajectory_id=traj_id, judge="probe", reviewer="a", agree=True)
    with pytest.raises(ValueError, match="other than"):
        record_audit(demo, view, trajectory_id=traj_id, judge="probe", reviewer="a", agree=False,
                     corrected_verdict=view.verdict_raw)
    with pytest.raises(ValueError, match="corrected verdict"):
        record_audit(demo, view, trajectory_id=traj_id, judge="probe", reviewer="a", agree=False)


def test_item_filters_and_neighbours(demo: Store) -> None:
    views = item_views(demo, first_fail(demo), "probe")
    assert filter_items(views, [], "all") == views
    assert all(v.verdict_raw == "Abstain" for v in filter_items(views, [], "Abstain"))
    assert [v.item_id for v in filter_items(views, [], "not audited")] == [v.item_id for v in views if v.auditable]
    for show in ITEM_SHOW:
        filter_items(views, [], show)
    with pytest.raises(ValueError):
        filter_items(views, [], "nope")
    ids = ["a", "b", "c"]
    assert neighbour(ids, "b", 1) == "c" and neighbour(ids, "c", 1) == "c" and neighbour(ids, "a", -1) == "a"
    assert neighbour(ids, "zzz", 1) == "a" and neighbour([], "a", 1) is None


def test_postprocessing_overwrite_is_flagged(demo: Store) -> None:
    from gcpc_core.judge import score_project

    traj = next(t for t in demo.trials.trajectories() if t.outcome == "PASS")
    rows = [r for r in demo.judging.judgments(trajectory_id=traj.id, judge="probe") if r.route != "endpoint"]
    target = next(r for r in rows if r.route == "assertion")
    rows = [{**r.model_dump(), **({"verdict_raw": "Abstain", "reason_raw": "judge_abstain"} if r is target else {})}
            for r in rows]
    demo.judging.save_trajectory_judgment(demo.judging.units("probe")[(traj.id, "probe")],
                                          [JudgmentRow(**r) for r in rows], [])
    score_project(demo, judge="probe")
    view = next(v for v in item_views(demo, traj.id, "probe") if v.item_id == target.item_id)
    assert (view.verdict_raw, view.verdict, view.reason) == ("Abstain", "Yes", "official_pass")
    assert view.overwritten and item_flags(view, [])["changed by postprocessing"]


@pytest.mark.skillsbench
def test_item_views_on_the_largest_real_trial(real_copy: Path) -> None:
    store = Store(real_copy)
    largest = max(store.trials.trajectories(), key=lambda t: t.log_bytes)
    views = item_views(store, largest.id, "probe")
    assert views and all(v.quote is None or v.quote.span is not None for v in views)
    cited = [c for v in views for c in v.citations]
    assert all(c.span is not None for c in cited)
    assert any(ref.status in ("passed", "failed") for v in views for ref in v.refs)


def test_labels_and_summaries(demo: Store) -> None:
    from gcpc_core.review.audit import item_label, trajectory_label, trajectory_summary

    listing = audit_list(trajectory_frame(demo), judge_stats(demo), "probe", AuditFilters(outcomes=("FAIL",)))
    row = listing.iloc[0].to_dict()
    assert trajectory_label(row) == f"{row['trajectory_id']} · FAIL · {row['condition']} · audited 0/{row['n_items']}"
    assert trajectory_label({**row, "judge_disagreements": 2, "auditor_disagreements": 1}).endswith(
        "· 2 judge disagreements · 1 auditor disagreements")
    lines = trajectory_summary(row, "probe")
    assert len(lines) == 2 and "official FAIL" in lines[0] and lines[1].startswith(f"probe: {row['n_items']} items")
    assert "partial credit n/a" in trajectory_summary({**row, "partial_credit": float("nan")}, "probe")[1]
    assert len(trajectory_summary(row, None)) == 1
    views = item_views(demo, row["trajectory_id"], "probe")
    abstain = next(v for v in views if v.verdict_raw == "Abstain")
    assert item_label(abstain, []) == f"{abstain.item_id} · {abstain.route} · Abstain"  # said once
    assert item_label(views[0], []).startswith(f"{views[0].item_id} · {views[0].route} · {views[0].verdict_raw}")
    endpoint = views[-1]
    assert endpoint.route == "endpoint" and item_label(endpoint, []) == f"{endpoint.item_id} · No"
    changed = replace(abstain, verdict="Yes", reason="official_pass")
    assert item_label(changed, []) == f"{abstain.item_id} · {abstain.route} · Abstain → scored Yes"
    audits = [AnnotationRow(kind="item_audit", target=f"t|{abstain.item_id}|probe", rater="ann", item_id=abstain.item_id,
                            value={"agree": False, "verdict": "No"}, created_at="2026-01-01T00:00:00+00:00",
                            client_token="c1")]
    assert item_label(abstain, audits) == f"{abstain.item_id} · {abstain.route} · Abstain · audited · auditors disagree"
    for view in views:
        words = item_label(view, audits).lower().split(" · ")
        assert len(words) == len(set(words)), words


def test_correction_options_leave_out_the_judges_verdict(demo: Store) -> None:
    from gcpc_core.review.audit import correction_options

    for view in item_views(demo, first_fail(demo), "probe"):
        options = correction_options(view)
        assert view.verdict_raw not in options and len(options) == 2 and set(options) < {"Yes", "No", "Abstain"}


def test_the_summary_shows_every_score_after_the_official_outcome(demo: Store) -> None:
    from gcpc_core.review.audit import trajectory_summary
    from gcpc_core.review.scores import trajectory_score

    traj_id = first_fail(demo)
    row = audit_list(trajectory_frame(demo), judge_stats(demo), "probe", AuditFilters()).set_index(
        "trajectory_id").loc[traj_id].to_dict() | {"trajectory_id": traj_id}
    score = trajectory_score(demo, traj_id, "probe")
    lines = trajectory_summary(row, "probe", score)
    assert len(lines) == 3 and lines[1].endswith("Abstain as judged (raw)")
    assert lines[2].startswith(f"scored: partial credit {score.partial_credit:.3f} · evidence coverage ")
    assert f"Perfect {score.perfect} · Perfect with endpoint 0" in lines[2]
    assert lines[2].endswith("(endpoint item included)")
    assert trajectory_score(demo, "no-such-trajectory", "probe") is None
