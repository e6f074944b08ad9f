"""The judge registry: the built-in judges' specs, the views over them, and a judge added from
outside the package (one spec, one registration) running through judge → score → report."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from gcpc_core.analysis import build_report
from gcpc_core.project_frames import frames_from_store
from gcpc_core.cli import main
from gcpc_core.judge import (
    ITEM_JUDGES,
    JUDGE_ORDER,
    JUDGES,
    LLM_JUDGES,
    JudgeCall,
    JudgeSpec,
    Verdicts,
    export_judgments,
    find_judge,
    get_judge,
    judge_project,
    register_judge,
    score_project,
    unregister_judge,
)
from gcpc_core.checklist import ChecklistItem, load_rules
from gcpc_core.evidence import EvidenceView
from gcpc_core.judge.grounding import item_judgment, may_cite, named_values
from gcpc_core.judge.prompts import ITEMS_PROMPT_VERSION, PER_ITEM_PROMPT_VERSION
from gcpc_core.judge.registry import TASK_CHECKLIST_JUDGES, checklist_ablation, checklist_kind, item_judges_among
from gcpc_core.models import Citation
from gcpc_core.store import Store

TOY = "toy"
TOY_VERSION = "toy-v1"


def test_built_in_judges_and_their_views() -> None:
    assert tuple(JUDGES) == ("gcpc", "holistic", "fixed", "probe")
    assert tuple(LLM_JUDGES) == ("gcpc", "holistic", "fixed")
    assert tuple(ITEM_JUDGES) == ("gcpc", "fixed", "probe")
    assert tuple(TASK_CHECKLIST_JUDGES) == ("gcpc", "probe")
    assert tuple(JUDGE_ORDER) == ("gcpc", "fixed", "probe", "holistic")
    assert checklist_ablation() == ("gcpc", "fixed")
    assert [checklist_kind(j) for j in JUDGES] == ["task", "none", "fixed", "task"]
    assert checklist_kind("gone") is None and find_judge("gone") is None
    gcpc, holistic, probe = get_judge("gcpc"), get_judge("holistic"), get_judge("probe")
    assert (gcpc.version(), gcpc.version(per_item=True)) == (ITEMS_PROMPT_VERSION, PER_ITEM_PROMPT_VERSION)
    assert holistic.version(per_item=True) == holistic.prompt_version and not holistic.has_items
    assert not probe.calls_llm and probe.first_request is None


def test_unknown_judge_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match=r"unknown judge 'nope'; one of gcpc, holistic, fixed, probe"):
        get_judge("nope")


async def _never(call: JudgeCall) -> Verdicts:
    raise AssertionError("not run")


@pytest.mark.parametrize(("spec", "problem"), [
    (JudgeSpec(name="gcpc", order=9, calls_llm=False, checklist="task", prompt_version="x", judge=_never),
     "already registered"),
    (JudgeSpec(name="llm-toy", order=9, calls_llm=True, checklist="task", prompt_version="x", judge=_never),
     "no first_request"),
    (JudgeSpec(name="variant", order=9, calls_llm=False, checklist="fixed", prompt_version="x", judge=_never,
               variant_of="missing"), "'missing', which is not registered"),
    (JudgeSpec(name="a b/c", order=9, calls_llm=False, checklist="task", prompt_version="x", judge=_never),
     "use letters, digits"),
])
def test_registration_refuses_a_spec_that_could_not_run(spec: JudgeSpec, problem: str) -> None:
    before = tuple(JUDGES)
    with pytest.raises(ValueError, match=problem):
        register_judge(spec)
    assert tuple(JUDGES) == before


def _toy_citation(view: EvidenceView, item: ChecklistItem) -> tuple[Citation, bool]:
    """A whole line of the first event the item may cite that shows a value the item names (True),
    else the first such event's first long line (False)."""
    values = named_values(item, load_rules())
    lines = [(e.event.id, line.strip()) for e in view.entries if may_cite(view, e.event, item)
             for line in e.event.text.splitlines() if len(line.replace(" ", "")) >= 8]
    for event_id, line in lines:
        if any(v in line.lower() for v in values):
            return Citation(event_id=event_id, quote=line), True
    return Citation(event_id=lines[0][0], quote=lines[0][1]), not values


async def _toy(call: JudgeCall) -> Verdicts:
    """Yes on the 1st, 3rd, … item (when it can cite a value the item names), No on the others, each
    citing evidence verbatim."""
    assert call.checklist is not None and call.llm is None
    out = []
    for k, item in enumerate(call.checklist.items):
        citation, shows_value = _toy_citation(call.view, item)
        out.append(item_judgment(item, "Yes" if k % 2 == 0 and shows_value else "No", [citation], "toy rule", call.view))
    return Verdicts(items=out)


@pytest.fixture
def toy_judge() -> Iterator[JudgeSpec]:
    spec = register_judge(JudgeSpec(name=TOY, order=10, calls_llm=False, checklist="task",
                                    prompt_version=TOY_VERSION, judge=_toy))
    try:
        yield spec
    finally:
        unregister_judge(TOY)


def test_a_toy_judge_runs_through_judge_score_and_report(toy_judge: JudgeSpec, demo_copy: Path,
                                                         tmp_path: Path) -> None:
    assert TOY in JUDGES and TOY in ITEM_JUDGES and TOY not in LLM_JUDGES and JUDGE_ORDER[-1] == TOY
    store = Store(demo_copy)
    trajectories = store.trials.trajectories()

    report = judge_project(store, judge=TOY, progress=False)
    assert sorted(report.judged) == sorted(t.id for t in trajectories) and report.ok
    assert report.prompt_version == TOY_VERSION and report.model is None
    assert report.verdicts["Yes"] > 0 and report.verdicts["No"] > 0
    [run] = [r for r in store.runs.list() if r.id == report.run_id]
    assert run.kind == f"judge-{TOY}"
    again = judge_project(store, judge=TOY, progress=False)
    assert not again.judged and set(again.skipped.values()) == {"already judged"}

    scored = score_project(store, judge=TOY)
    [(kind, label)] = scored.scored
    assert kind == TOY and label == store.judging.default_labels()[TOY]  # one labelled run: the toy's derived label
    assert scored.scored[kind, label] == len(trajectories)
    scores = [s for s in store.judging.scores() if s.judge == TOY]
    assert len(scores) == len(trajectories)
    for row in scores:
        traj = next(t for t in trajectories if t.id == row.trajectory_id)
        raw = [j for j in store.judging.judgments(trajectory_id=traj.id) if j.judge == TOY and j.route != "endpoint"]
        assert row.n_items == len(raw) and row.evidence_coverage == 1.0  # every toy citation grounded
        assert row.prompt_version == TOY_VERSION and row.model is None
        if traj.outcome == "FAIL":  # verdicts as judged, plus the endpoint item judged No
            n, yes = len(raw), sum(j.verdict_raw == "Yes" for j in raw)
            assert (row.n_yes, row.n_no) == (yes, n - yes + 1)
            assert row.partial_credit == pytest.approx(yes / (n + 1))

    assert {r["judge"] for r in export_judgments(store)} >= {TOY, "probe"}
    frames = frames_from_store(store)
    assert item_judges_among(frames["items"]["judge"].unique()) == ["probe", TOY]
    result = build_report(frames, tmp_path / "report", n_boot=50, figures=False)
    assert list(result.tables["judges"]["judge"]) == ["probe", TOY]
    assert list(result.tables["discrimination_auc"]["judge"]) == ["probe", TOY]
    assert set(result.tables["item_accuracy"]["judge"]) == {"probe", TOY}
    assert TOY in result.markdown.read_text(encoding="utf-8")


def test_a_removed_judge_s_rows_are_still_scored_and_exported(toy_judge: JudgeSpec, demo_copy: Path) -> None:
    store = Store(demo_copy)
    judge_project(store, judge=TOY, progress=False)
    unregister_judge(TOY)
    try:
        assert TOY not in JUDGES and find_judge(TOY) is None
        scored = score_project(store).scored
        assert sum(n for (kind, _), n in scored.items() if kind == TOY) == len(store.trials.trajectories())
        assert any(r["judge"] == TOY for r in export_judgments(store))
        assert item_judges_among([TOY, "probe"]) == ["probe"]
    finally:
        register_judge(toy_judge)


def test_the_cli_offers_a_registered_judge(toy_judge: JudgeSpec, demo_copy: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["judge", "--db", str(demo_copy), "--judge", TOY, "--quiet"]) == 0
    assert f"judge {TOY}: judged" in capsys.readouterr().out

