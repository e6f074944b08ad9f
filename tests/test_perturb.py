"""Evidence sensitivity runs: perturb cited evidence of Yes items and re-judge through the judge's own path.

Offline with the probe judge on the demo project, and through the LLM layer against the fake server
with scripted judges: one that reads its evidence (No once the cited line changed) and one that
does not (always Yes).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from fake_openai import FAKE_MODEL, Reply
from judge.conftest import (
    PER_ITEM_ID,
    first_citation,
    is_items_request,
    item_ids,
    items_reply,
    single_item_reply,
    user_text,
)

from gcpc_core.analysis import perturbation_frame
from gcpc_core.cli import main
from gcpc_core.demo import DEMO_SIMULATED_LABEL
from gcpc_core.judge import judge_project
from gcpc_core.judge.prompts import PROBE_VERSION
from gcpc_core.llm import LLM
from gcpc_core.perturb import run_perturbations
from gcpc_core.store import Store
from store.helpers import llm_calls


@pytest.fixture
def llm_store(project: Store) -> Store:
    """`make_llm` layers store into the demo project."""
    return project


def _yes_with_citations(store: Store, judge: str) -> list[dict]:
    return [r for r in store.judging.judgments(judge=judge)
            if r.route != "endpoint" and r.verdict_raw == "Yes" and r.citations]


def test_probe_judge_on_the_demo_is_a_deterministic_check(project: Store) -> None:
    candidates = _yes_with_citations(project, "probe")
    report = run_perturbations(project, judge="probe", seed=0, progress=False)
    assert report.ok and report.candidates == len(candidates) == report.done["judged"] > 100
    rows = project.perturbations.list(judge="probe")
    assert len(rows) == len(candidates)
    assert {r.status for r in rows} == {"judged"} and {r.verdict for r in rows} <= {"Yes", "No", "Abstain"}
    port = next(r for r in rows if r.original_citations[0]["quote"] == "'port': '8080'")
    first = port.recipe["events"][0]
    assert (first["kind"], first["span"], first["cited"]) == ("number", "'port': '8080'", True)
    assert first["replacement"] != first["span"] and port.kind == "number"
    run = project.runs.get(report.run_id)
    assert run.kind == "perturb-probe" and run.status == "done"
    # the shares printed are those of the stored rows
    table = report.table.iloc[0]
    verdicts = Counter(r.verdict for r in rows)
    assert (table["n"], table["to_no"], table["to_no_or_abstain"]) == (
        len(rows), verdicts["No"], verdicts["No"] + verdicts["Abstain"])
    assert any("perturbed Yes items" in line and "No or Abstain" in line for line in report.lines())
    # resumable: nothing left to do; forced again: the very same recipes and verdicts
    again = run_perturbations(project, judge="probe", seed=0, progress=False)
    assert again.done == Counter() and again.skipped["already perturbed with this setting"] == len(rows)
    run_perturbations(project, judge="probe", seed=0, progress=False, force=True)
    assert [(r.id, r.recipe, r.verdict) for r in project.perturbations.list(judge="probe")] == \
        [(r.id, r.recipe, r.verdict) for r in rows]


def test_log_scope_leaves_no_cited_span_and_limit_samples_across_tasks(project: Store) -> None:
    some = run_perturbations(project, judge="probe", scope="log", limit=12, progress=False)
    assert some.done["judged"] == 12 and some.skipped["beyond --limit"] > 0
    assert len({r.task for r in project.perturbations.list()}) > 1  # a seeded sample, not the first task
    rest = run_perturbations(project, judge="probe", scope="log", progress=False)
    assert rest.done["judged"] == rest.candidates - 12  # the rerun extends the same sample
    frame = perturbation_frame(project)
    assert (frame["span_remaining"] == 0).all()
    for r in project.perturbations.list():
        if r.verdict == "Yes":  # still Yes: it must rest on other evidence than the perturbed span
            assert {c["quote"] for c in r.citations}.isdisjoint(c["quote"] for c in r.original_citations)


def test_two_labelled_runs_with_the_same_model_and_prompt_keep_their_own_results(project: Store) -> None:
    default = project.judging.default_labels()["probe"]
    first = run_perturbations(project, judge="probe", seed=0, progress=False)
    judge_project(project, judge="probe", label="second", limit=6, progress=False)  # same model and prompt
    assert project.judging.default_labels()["probe"] == "second"
    second_yes = [r for r in project.judging.judgments(judge="probe", labels={"probe": "second"})
                  if r.route != "endpoint" and r.verdict_raw == "Yes" and r.citations]
    second = run_perturbations(project, judge="probe", seed=0, progress=False)  # now the default: run `second`
    assert (first.label, second.label) == (default, "second")
    assert second.done["judged"] == second.candidates == len(second_yes) < first.candidates
    rows = project.perturbations.list(judge="probe", all_labels=True)
    by_label = Counter(r.label for r in rows)
    assert by_label == {default: first.candidates, "second": len(second_yes)}
    ids = {label: {r.id for r in rows if r.label == label} for label in by_label}
    assert ids["second"] < ids[default]  # the same setting keys: kept apart by the label alone
    # reads follow the chosen run; each run resumes and is forced on its own
    assert {r.label for r in project.perturbations.list(judge="probe")} == {"second"}
    assert len(project.perturbations.list(labels={"probe": default})) == first.candidates
    again = run_perturbations(project, judge="probe", label=default, seed=0, progress=False)
    assert again.done == Counter() and again.skipped["already perturbed with this setting"] == first.candidates
    run_perturbations(project, judge="probe", label=default, seed=0, force=True, progress=False)
    assert Counter(r.label for r in project.perturbations.list(judge="probe", all_labels=True)) == by_label
    # the analysis: one row per labelled run, the figures of each run from its own rows
    table = second.table.set_index("label")
    assert table.loc[default, "n"] == first.candidates and table.loc["second", "n"] == len(second_yes)
    assert set(perturbation_frame(project)["label"]) == {"second"}
    assert set(perturbation_frame(project, labels={"probe": default})["label"]) == {default}
    with pytest.raises(ValueError, match="no probe run labelled 'third'"):
        run_perturbations(project, judge="probe", label="third", progress=False)


def test_holistic_judge_is_refused(project: Store) -> None:
    with pytest.raises(ValueError, match="item verdicts"):
        run_perturbations(project, judge="holistic", progress=False)


def reading_judge() -> tuple[Callable[[dict[str, Any]], Reply], dict[str, Any]]:
    """A scripted judge that reads its evidence: while learning it says Yes to every item citing the first
    evidence line; afterwards Yes only when that line is one it learned, No (citing the changed line) else."""
    state: dict[str, Any] = {"learning": True, "seen": set()}

    def reply(request: dict[str, Any]) -> Reply:
        citation = first_citation(request)
        assert citation is not None
        if state["learning"]:
            state["seen"].add(citation["quote"])
        verdict = "Yes" if citation["quote"] in state["seen"] else "No"
        return Reply.json({"items": [{"item_id": i, "citations": [citation], "rationale": f"scripted {verdict}",
                                      "verdict": verdict} for i in item_ids(request)]})

    return reply, state


def blind_judge(request: dict[str, Any]) -> Reply:
    """Yes on every item whatever the evidence says, each citing the first evidence line."""
    citation = first_citation(request)
    return Reply.json({"items": [{"item_id": i, "citations": [citation], "rationale": "scripted Yes", "verdict": "Yes"}
                                 for i in item_ids(request)]})


@pytest.mark.parametrize("reads", [True, False], ids=["reads-evidence", "blind"])
def test_llm_judge_that_reads_evidence_flips_and_one_that_does_not_stays(
    reads: bool, project: Store, fake_openai, make_llm: Callable[..., LLM]
) -> None:
    reply, state = reading_judge()
    fake_openai.on(is_items_request, reply if reads else blind_judge)
    judged = judge_project(project, judge="gcpc", llm=make_llm(), limit=3, progress=False)
    assert len(judged.judged) == 3
    candidates = _yes_with_citations(project, "gcpc")
    state["learning"] = False
    before = fake_openai.request_count
    report = run_perturbations(project, judge="gcpc", llm=make_llm(), seed=0, progress=False)
    assert report.ok and report.done["judged"] == len(candidates) > 10
    # all items of a trajectory cite the same line: identical perturbed requests, answered from the cache
    assert fake_openai.request_count - before <= 2 * len(judged.judged)
    rows = project.perturbations.list(judge="gcpc")
    assert {r.verdict for r in rows} == ({"No"} if reads else {"Yes"}) and {r.model for r in rows} == {FAKE_MODEL}
    assert all(r.replies and r.replies[0]["llm_key"] for r in rows)
    assert all(r.recipe["events"][0]["replacement"] != r.original_citations[0]["quote"] for r in rows)
    row = report.table.iloc[0]
    expected = (1.0, 1.0, 0) if reads else (0.0, 0.0, len(candidates))
    assert (row["share_no"], row["share_no_or_abstain"], row["still_yes"]) == expected
    assert project.runs.get(report.run_id).kind == "perturb-gcpc"
    assert {c.tag for c in llm_calls(project, run_id=report.run_id)} <= {r.trajectory_id for r in rows}


def test_per_item_verdicts_are_rejudged_with_the_per_item_prompt(
    project: Store, fake_openai, make_llm: Callable[..., LLM]
) -> None:
    fake_openai.on(lambda r: not is_items_request(r), single_item_reply("Yes"))
    judge_project(project, judge="gcpc", llm=make_llm(), per_item=True, limit=1, progress=False)
    candidates = _yes_with_citations(project, "gcpc")
    all_items = run_perturbations(project, judge="gcpc", llm=make_llm(), progress=False)  # other prompt: skipped
    assert all_items.done == Counter() and sum(all_items.skipped.values()) == len(candidates)
    fake_openai.reset()
    fake_openai.on(lambda r: not is_items_request(r), single_item_reply("No"))
    report = run_perturbations(project, judge="gcpc", llm=make_llm(), per_item=True, progress=False)
    assert report.done["judged"] == len(candidates) == fake_openai.request_count  # one call per perturbed item
    asked = sorted(PER_ITEM_ID.search(user_text(r)).group(1) for r in fake_openai.requests)  # type: ignore[union-attr]
    assert asked == sorted(r.item_id for r in candidates)
    assert report.table.iloc[0]["share_no"] == 1.0


def test_other_model_is_skipped_and_endpoint_errors_are_retried_later(
    project: Store, fake_openai, make_llm: Callable[..., LLM]
) -> None:
    fake_openai.on(is_items_request, items_reply("Yes"))
    judge_project(project, judge="gcpc", llm=make_llm(), limit=1, progress=False)
    n = len(_yes_with_citations(project, "gcpc"))
    other = run_perturbations(project, judge="gcpc", llm=make_llm(model="other-model"), progress=False)
    assert other.done == Counter() and list(other.skipped.values()) == [n]
    why = next(iter(other.skipped))
    assert f"judged with model {FAKE_MODEL}" in why and "not other-model" in why
    fake_openai.reset()
    fake_openai.default = Reply.error(500, "down")
    failed = run_perturbations(project, judge="gcpc", llm=make_llm(max_retries=0), progress=False)
    assert not failed.ok and len(failed.errors) == n and project.perturbations.list() == []
    fake_openai.default = None
    fake_openai.on(is_items_request, items_reply("No"))
    retried = run_perturbations(project, judge="gcpc", llm=make_llm(), progress=False)
    assert retried.ok and retried.done["judged"] == n


def test_perturb_cli(project: Store, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(project.path)
    for var in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "GCPC_MODEL"):
        monkeypatch.delenv(var, raising=False)
    assert main(["perturb", "--db", db, "--judge", "gcpc"]) == 2
    assert "LLM not configured" in capsys.readouterr().err
    assert main(["perturb", "--db", db + ".missing", "--judge", "probe"]) == 2
    assert "no such project DB" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main(["perturb", "--db", db, "--judge", "holistic"])
    assert exc.value.code == 2
    capsys.readouterr()
    assert main(["perturb", "--db", db, "--judge", "probe", "--limit", "20", "--quiet"]) == 0
    out = capsys.readouterr().out
    default = project.judging.default_labels()["probe"]
    assert f"probe run {default} (seed 0, scope cited): 20 perturbed Yes items" in out
    assert f"next: python -m gcpc_core report --db {db} --out DIR\n" in out
    # --run: a run of the judge, by its name, perturbed under its own label
    assert main(["perturb", "--db", db, "--judge", "probe", "--run", "nope", "--quiet"]) == 2
    assert "no judge run labelled 'nope'" in capsys.readouterr().err
    assert main(["perturb", "--db", db, "--judge", "gcpc", "--run", default, "--quiet"]) == 2
    assert "is a run of probe, not of judge 'gcpc'" in capsys.readouterr().err
    assert main(["perturb", "--db", db, "--judge", "probe", "--run", DEMO_SIMULATED_LABEL, "--quiet"]) == 0
    out = capsys.readouterr().out  # simulated verdicts: not the probe judge's, so none is re-judged
    assert f"judged with model demo-model-b (SIMULATED) / prompt {PROBE_VERSION}, not None / {PROBE_VERSION}" in out
    assert main(["judge", "--db", db, "--judge", "probe", "--label", "my run", "--limit", "4", "--quiet"]) == 0
    assert main(["perturb", "--db", db, "--judge", "probe", "--run", "my run", "--limit", "10", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "perturb probe (run my run, seed 0, scope cited)" in out
    assert f"next: python -m gcpc_core report --db {db} --out DIR --run 'my run'" in out  # quoted for the shell
    assert Counter(r.label for r in project.perturbations.list(judge="probe", all_labels=True)) == {
        default: 20, "my run": 10}


def test_perturb_cli_through_the_llm_layer(project: Store, llm_env, capsys: pytest.CaptureFixture[str]) -> None:
    llm_env.on(is_items_request, items_reply("Yes"))
    assert main(["judge", "--db", str(project.path), "--judge", "gcpc", "--limit", "2", "--quiet"]) == 0
    llm_env.reset()
    llm_env.on(is_items_request, items_reply("Abstain", cite=False))
    assert main(["perturb", "--db", str(project.path), "--judge", "gcpc", "--quiet"]) == 0
    out = capsys.readouterr().out
    label = project.judging.default_labels()["gcpc"]
    assert f"gcpc run {label} model {FAKE_MODEL} (seed 0, scope cited)" in out and "No 0 (0.0%" in out
    assert "No or Abstain" in out and "(100.0%" in out
