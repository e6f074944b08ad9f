"""Import all of ../shared/skillsbench (read in place) and check it against the source files."""

from __future__ import annotations

import csv
import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from gcpc_core.ingest import import_project
from gcpc_core.store import Store

pytestmark = pytest.mark.skillsbench
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def real(skillsbench: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Store, object]:
    store = Store(tmp_path_factory.mktemp("real") / "p.db")
    report = import_project(store, tasks_dir=skillsbench / "tasks", trials_dir=skillsbench / "trials", progress=False)
    return store, report


def manifest(skillsbench: Path) -> dict[str, dict]:
    with open(skillsbench / "trials" / "MANIFEST.tsv", encoding="utf-8") as fh:
        return {row["trial_folder"]: row for row in csv.DictReader(fh, delimiter="\t")}


def test_counts(real) -> None:
    store, report = real
    assert report.skipped == []
    counts = store.project.counts()
    assert (counts["tasks"], counts["trials"]) == (87, 12)
    assert (counts["pass"], counts["fail"]) == (6, 6)
    formats = sorted(t.log_format for t in store.trials.trajectories())
    assert formats.count("claude-code") == 4 and formats.count("atif") == 6 and formats.count("terminus-2") == 2


def _by_folder(store: Store) -> dict[str, object]:
    return {Path(t.source_path).name: t for t in store.trials.trajectories()}


def test_outcomes_match_result_json_and_partial_reward_is_fail(real, skillsbench: Path) -> None:
    store, _ = real
    for folder, t in _by_folder(store).items():
        result = json.loads((skillsbench / "trials" / folder / "result.json").read_text())
        reward = result["verifier_result"]["rewards"]["reward"]
        assert t.reward == pytest.approx(reward)
        assert t.outcome == ("PASS" if reward >= 1.0 else "FAIL")
        assert t.task == result["task_name"]
    partial = _by_folder(store)["dialogue-parser__rwnM43w"]
    assert partial.reward == pytest.approx(0.667) and partial.outcome == "FAIL"


def test_conditions_agents_models_match_manifest(real, skillsbench: Path) -> None:
    store, _ = real
    rows = manifest(skillsbench)
    by_folder = _by_folder(store)
    assert set(by_folder) == set(rows)
    for folder, row in rows.items():
        t = by_folder[folder]
        assert t.condition == row["condition"], (folder, t.condition_basis)
        assert t.agent == row["agent"]
        assert t.model == row["model"]
        assert t.log_path == row["log_file"]


def test_ctrf_statuses_where_a_report_exists(real, skillsbench: Path) -> None:
    store, _ = real
    for folder, t in _by_folder(store).items():
        ctrf = skillsbench / "trials" / folder / "verifier" / "ctrf.json"
        if not ctrf.exists():
            assert t.ctrf == []  # some real trials have no report: normal
            continue
        tests = json.loads(ctrf.read_text())["results"]["tests"]
        assert [(c.name, c.status) for c in t.ctrf] == [(x["name"], x["status"]) for x in tests]


def test_ctrf_names_map_to_parsed_verifier_nodes(real) -> None:
    store, _ = real
    unmapped = []
    for t in store.trials.trajectories():
        node_ids = set(store.trials.get_task(t.task).test_ids)
        for c in t.ctrf:
            base = re.sub(r"\[.*\]$", "", c.name)  # parametrized: node[param]
            if base not in node_ids:
                unmapped.append((t.id, c.name))
    # every CTRF name in the real sample maps to a node id parsed from the verifier source
    assert unmapped == []


def test_cli_import_and_info_json(skillsbench: Path, tmp_path: Path) -> None:
    db = tmp_path / "p.db"
    run = subprocess.run(
        [sys.executable, "-m", "gcpc_core", "import", "--tasks", str(skillsbench / "tasks"),
         "--trials", str(skillsbench / "trials"), "--db", str(db), "--quiet"],
        cwd=REPO, capture_output=True, text=True, check=True,
    )
    assert "12 imported" in run.stdout
    info = subprocess.run([sys.executable, "-m", "gcpc_core", "info", "--db", str(db), "--json"],
                          cwd=REPO, capture_output=True, text=True, check=True)
    data = json.loads(info.stdout)
    for key in ("tasks", "trials", "pass", "fail", "events", "checklists", "judgments", "annotations"):
        assert key in data
    assert (data["tasks"], data["trials"], data["pass"], data["fail"]) == (87, 12, 6, 6)
    assert data["events"] > 100


# Taken from an import of ../shared/skillsbench before Codex, ACP, ATIF continuations and unscored trials were
# added: those changes must leave every event (id, kind, text, tool, link, path, error flag, source), outcome and
# condition of the real corpus exactly as it was.
EVENTS_DIGEST = "3bad9a22a29e10c76b0c9b47b134cc40744edd29edda23bbe6cf3300f15e576c"
OUTCOMES_DIGEST = "05dbc3254337a754c8496e1eaffe64e77ae51884c39c8d5821c5dc5880889a7d"


def test_the_real_corpus_imports_exactly_as_before(real) -> None:
    store, _ = real
    trajectories = sorted(store.trials.trajectories(), key=lambda t: t.id)
    rows = [[t.id, e.id, e.kind, e.text, e.tool_name, e.call_id, e.path, e.is_error, e.source]
            for t in trajectories for e in store.trials.events(t.id)]
    kinds = {k: sum(r[2] == k for r in rows) for k in {r[2] for r in rows}}
    assert kinds == {"agent_message": 104, "agent_thinking": 65, "file_content": 40, "system": 8, "tool_call": 135,
                     "tool_output": 101, "user": 9}
    assert hashlib.sha256(json.dumps(rows, ensure_ascii=False).encode()).hexdigest() == EVENTS_DIGEST
    outcomes = sorted((t.id, (t.outcome, t.condition, t.condition_basis)) for t in trajectories)
    assert hashlib.sha256(json.dumps(outcomes).encode()).hexdigest() == OUTCOMES_DIGEST
    assert store.project.counts()["unscored"] == 0
