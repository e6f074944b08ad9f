"""The probe judge over frozen offline drafts (issue 26): no LLM anywhere, yet the drafts' probes decide most
assertion items of the real trials, and decide them as the verifier did.

The 12 real trials of ../shared/skillsbench and the opencode sample of ../shared/harness-samples are imported;
each of their five tasks gets its offline draft (`checklist draft`), reviewed as is and frozen; the `probe`
judge judges every trial; item accuracy against each trial's per-test CTRF is the report's own computation
(`assertion_truth`, `item_accuracy_table`). Target: accuracy ≥ 0.85 with Abstain ≤ 50 %.

The opencode runner's CTRF names its tests without their file (`::TestFlowMetrics::test_flow_metric`); the
report's truth matches such names by class and test (`item_accuracy.same_node`), so that trial counts too.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest

from gcpc_core.analysis.item_accuracy import assertion_truth, item_accuracy_table
from gcpc_core.checklist import load_rules, run_gates
from gcpc_core.checklist.draft import draft_checklist
from gcpc_core.checklist.registry import register_checklist, reviewed
from gcpc_core.ingest import import_project
from gcpc_core.judge import judge_project
from gcpc_core.project_frames import run_frames
from gcpc_core.store import Store

pytestmark = pytest.mark.skillsbench

HARNESS_SAMPLES = Path(__file__).resolve().parents[2].parent / "shared" / "harness-samples"
OPENCODE = HARNESS_SAMPLES / "opencode-acp"
MIN_ACCURACY = 0.85
MAX_ABSTAIN = 0.5


@dataclass
class Judged:
    frames: dict[str, pd.DataFrame]
    tasks: list[str]


@pytest.fixture(scope="module")
def judged(skillsbench: Path, tmp_path_factory: pytest.TempPathFactory) -> Judged:
    if not (OPENCODE / "dapt-intrusion-detection__e4122fb2").is_dir():
        pytest.skip(f"opencode harness sample not found at {OPENCODE}")
    store = Store(tmp_path_factory.mktemp("draft-probes") / "p.db")
    import_project(store, tasks_dir=skillsbench / "tasks", trials_dir=skillsbench / "trials", progress=False)
    import_project(store, tasks_dir=skillsbench / "tasks", trials_dir=OPENCODE, progress=False)
    rules = load_rules()
    tasks = sorted({t.task for t in store.trials.trajectories()})
    for task_id in tasks:
        task = store.trials.get_task(task_id)
        assert task is not None
        draft = draft_checklist(task, rules)
        assert run_gates(draft.checklist, task, rules) == [], task_id
        row, failures = register_checklist(store, reviewed(draft.checklist, "draft-test", rules), created_by="test",
                                           rules=rules)
        assert row is not None, failures
    report = judge_project(store, judge="probe", progress=False, rules=rules)
    assert report.counts()["errors"] == 0
    frames = run_frames(store)
    store.close()
    return Judged(frames, tasks)


def _row(judged: Judged, ctrf: pd.DataFrame) -> pd.Series:
    truth = assertion_truth(judged.frames["items"], ctrf)
    return item_accuracy_table(truth).set_index("judge").loc["probe"]


def test_the_five_tasks_and_thirteen_trials(judged: Judged) -> None:
    assert judged.tasks == ["3d-scan-calc", "azure-bgp-oscillation-route-leak", "citation-check",
                            "dapt-intrusion-detection", "dialogue-parser"]
    assert judged.frames["items"]["trajectory_id"].nunique() == 13


def test_probe_judge_item_accuracy_on_frozen_drafts(judged: Judged,
                                                    record_property: Callable[[str, object], None]) -> None:
    row = _row(judged, judged.frames["ctrf"])
    figure = (f"probe judge over frozen drafts, 13 trials: {row['n_decided']} of {row['n_comparable']} comparable "
              f"assertion items decided, accuracy {row['accuracy']:.3f}, Abstain {row['abstain_rate']:.1%}, "
              f"recall of No {row['recall_no']:.2f}")
    print(figure)
    record_property("draft_probe_accuracy", figure)
    assert row["n_comparable"] >= 140
    assert row["accuracy"] >= MIN_ACCURACY, figure
    assert row["abstain_rate"] <= MAX_ABSTAIN, figure
    assert row["recall_no"] > 0.5, figure  # the probes catch failures, not only passes


def test_the_opencode_trial_is_comparable(judged: Judged) -> None:
    """Its CTRF names tests without their file; they are still matched to the draft's refs."""
    truth = assertion_truth(judged.frames["items"], judged.frames["ctrf"])
    opencode = truth[truth["trajectory_id"].str.contains("e4122fb2")]
    assert len(opencode) and (opencode["basis"] == "ctrf").mean() > 0.5, opencode["basis"].value_counts()
