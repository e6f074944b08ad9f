"""Runs named for a reader (`analysis.compare.run_name`): judge · model · prompt version · date, the label only
when a person chose it, never the derived `judge:model:prompt:rules-<hash>` label itself."""

from __future__ import annotations

from gcpc_core.analysis.run_names import run_name
from gcpc_core.review.compare import run_choices, run_title
from gcpc_core.review.runs import judge_runs_frame
from gcpc_core.store import JudgeRun, Store


def _run(**over: object) -> JudgeRun:
    fields = {"judge": "probe", "label": "probe:offline:probe-v1:rules-b8e112b25397", "model": None,
              "prompt_version": "probe-v1", "rules_version": "b8e112b25397", "named": False, "simulated": False,
              "n_trajectories": 36, "first_at": "2026-11-30T09:00:00+00:00", "last_at": "2026-12-01T17:45:12+00:00"}
    return JudgeRun.model_validate(fields | over)


def test_a_derived_label_reads_as_its_parts() -> None:
    assert run_name(_run()) == "probe · offline · probe-v1 · 2026-12-01"
    assert run_name(_run(judge="gcpc", model="gpt-4.1-mini", prompt_version="gcpc-v3",
                         label="gcpc:gpt-4.1-mini:gcpc-v3:rules-0a1b")) == "gcpc · gpt-4.1-mini · gcpc-v3 · 2026-12-01"


def test_a_chosen_label_is_kept_and_simulated_is_said_once() -> None:
    assert run_name(_run(label="from-the-page", named=True)) == "probe · from-the-page · offline · probe-v1 · 2026-12-01"
    assert run_name(_run(simulated=True, model="model-b")) == "probe · model-b · probe-v1 · 2026-12-01 · SIMULATED"
    assert run_name(_run(simulated=True, model="demo-model-b (SIMULATED)")).count("SIMULATED") == 1
    assert run_name(_run(prompt_version=None)) == "probe · offline · no prompt version · 2026-12-01"


def test_the_demo_runs_are_named_without_their_raw_label(demo: Store) -> None:
    runs = run_choices(demo)
    for run in runs:
        assert run["label"] not in run_title(run) and run_title(run).startswith(run["name"])
        assert "rules-" not in run["name"] and "=" not in run["name"]
    table = judge_runs_frame(demo)
    assert sorted(table["label"]) == sorted(r["label"] for r in runs)
    assert sorted(table["run"]) == sorted(r["name"] for r in runs)
    assert table["default"].sum() == 1
