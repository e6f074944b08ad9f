"""The capable model's recorded replies (../shared/capable-replies, read in place) played back through
GCPC's real stages: import → synthesize (reply parsing, gates, freeze) → `gcpc` and `holistic` judging
(reply model, grounding against each trial's evidence view) → postprocess and score → report figures
(item accuracy vs per-test CTRF, AUC vs the official outcome). The figures of that folder's README are
pinned as today's code computes them.

A scripted OpenAI-compatible server (tests/fake_openai.py) answers each request with the recorded reply
of the same kind (synthesis / item judge / holistic judge) for the same task whose evidence shows the
most of the same event ids and kinds (Jaccard): requests are matched by what they concern, never by
prompt text, since the prompts changed after the recording (judge-items-v2 → v5, judge-holistic-v2 → v4;
synthesis-v2 → v4). Every recorded reply must be served exactly once, so a repair turn
or an unmatched request fails the test. Skipped, with the reason, when either shared folder is absent.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from fake_openai import FAKE_MODEL, FakeOpenAI, Reply

from gcpc_core.analysis.ablations import score_variants
from gcpc_core.analysis.discrimination import bootstrap_auc
from gcpc_core.analysis.item_accuracy import assertion_truth, item_accuracy_table
from gcpc_core.checklist import load_rules
from gcpc_core.checklist.synthesis import PROMPT_VERSION, ProjectSynthesis, synthesize_project
from gcpc_core.ingest import import_project
from gcpc_core.judge import JudgeReport, judge_project, score_project
from gcpc_core.llm import LLM, LLMConfig
from gcpc_core.models import ENDPOINT_ITEM_ID
from gcpc_core.project_frames import run_frames
from gcpc_core.store import Store

pytestmark = pytest.mark.skillsbench

REPLIES = Path(__file__).resolve().parents[2].parent / "shared" / "capable-replies"
"""`../shared/capable-replies` beside the repository (like `../shared/skillsbench`, tests/conftest.py)."""
TASKS = ("3d-scan-calc", "citation-check", "azure-bgp-oscillation-route-leak", "dialogue-parser")
_HEADER = re.compile(r"^### (E\d+) · (\w+)", re.M)
_SYNTH_TASK = re.compile(r"^Task id: (\S+)")
_JUDGE_TASK = re.compile(r"^# Task (\S+)", re.M)


def _user(request: dict[str, Any]) -> str:
    return next(m["content"] for m in request["messages"] if m["role"] == "user")


def _concerns(request: dict[str, Any]) -> tuple[str, str]:
    """(kind, task) of a GCPC request: `synthesis`, `items` (the gcpc judge) or `holistic`."""
    user = _user(request)
    if match := _SYNTH_TASK.match(user):
        return "synthesis", match.group(1)
    task = _JUDGE_TASK.search(user)
    assert task is not None, user[:200]
    return ("items" if "\n## Checklist (" in user else "holistic"), task.group(1)


@dataclass
class Recorded:
    n: int
    kind: str
    task: str
    shown: frozenset[tuple[str, str]]
    content: str


def _recorded() -> list[Recorded]:
    out = []
    for n in range(1, 29):
        request = json.loads((REPLIES / f"request-{n}.json").read_text(encoding="utf-8"))
        raw = (REPLIES / f"reply-{n}.json").read_text(encoding="utf-8")
        value = json.loads(raw)
        kind, task = _concerns(request)
        out.append(Recorded(n, kind, task, frozenset(_HEADER.findall(_user(request))),
                            value if isinstance(value, str) else raw))
    return out


@dataclass
class Pipeline:
    store: Store
    synthesis: dict[str, ProjectSynthesis]
    reports: dict[str, JudgeReport]
    served: list[tuple[int, float]]
    """(reply number, Jaccard of the event headers) of every request answered."""
    frames: dict[str, pd.DataFrame]


@pytest.fixture(scope="module")
def pipeline(skillsbench: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pipeline]:
    if not (REPLIES / "README.md").is_file():
        pytest.skip(f"capable-model replies not found at {REPLIES}")
    recorded = _recorded()
    served: list[tuple[int, float]] = []

    def answer(request: dict[str, Any]) -> Reply:
        kind, task = _concerns(request)
        shown = frozenset(_HEADER.findall(_user(request)))
        candidates = [(len(shown & r.shown) / max(1, len(shown | r.shown)), -r.n, r)
                      for r in recorded if (r.kind, r.task) == (kind, task)]
        if not candidates:
            return Reply.error(400, f"no recorded reply for a {kind} request on {task}")
        score, _, best = max(candidates, key=lambda c: c[:2])
        served.append((best.n, score))
        return Reply.text(best.content)

    store = Store(tmp_path_factory.mktemp("capable") / "capable.db")
    import_project(store, tasks_dir=skillsbench / "tasks", trials_dir=skillsbench / "trials", progress=False)
    rules = load_rules()
    with FakeOpenAI() as server:
        server.default = answer
        llm = LLM(LLMConfig(model=FAKE_MODEL, base_url=server.url, api_key="sk-test", structured_mode="json_schema",
                            timeout=10.0, max_retries=0), store=store)
        synthesis = {t: synthesize_project(store, task=t, llm=llm, rules=rules, progress=False) for t in TASKS}
        reports = {j: judge_project(store, judge=j, llm=llm, rules=rules, progress=False) for j in ("gcpc", "holistic")}
    score_project(store)
    try:
        yield Pipeline(store, synthesis, reports, served, run_frames(store))
    finally:
        store.close()


def test_every_recorded_reply_answers_its_own_request_once(pipeline: Pipeline) -> None:
    """28 requests, 28 replies: each served once (no repair turn, no retry), each to a request showing
    exactly the event ids and kinds the recorded one showed (Jaccard 1.0 for all 24 judge requests)."""
    numbers = [n for n, _ in pipeline.served]
    assert sorted(numbers) == list(range(1, 29)), Counter(numbers)
    assert all(score == 1.0 for n, score in pipeline.served if n >= 5), pipeline.served


def test_synthesis_four_of_four_pass_every_gate_first_time(pipeline: Pipeline) -> None:
    """README: 4 of 4 checklists passed every gate on the first reply (10, 13, 15, 15 items), no repair."""
    assert PROMPT_VERSION == "synthesis-v4"
    counts = {}
    for task, report in pipeline.synthesis.items():
        (result,) = report.results
        assert result.status == "frozen", (task, [f.message for f in result.failures])
        assert not result.failures and len(result.attempts) == 1, (task, result.attempts)
        row = pipeline.store.checklists.latest(task)
        assert row is not None and row.sha == result.sha
        counts[task] = len(row.checklist["items"])
    assert counts == {"3d-scan-calc": 10, "citation-check": 13, "azure-bgp-oscillation-route-leak": 15,
                      "dialogue-parser": 15}


def test_gcpc_judge_verdicts_and_grounding(pipeline: Pipeline) -> None:
    """README: 12 of 12 judged, 0 errors; 124 Yes, 12 No, 16 Abstain; every citation grounded.

    Today: the same 12 / 0 and 124 / 12 / 16 raw verdicts on the 152 checklist items (the 6 FAIL trials
    add their endpoint item, No: 158 rows). 282 of the 286 citations are kept, not 286: grounding has
    since refused a citation that quotes a command's own text for an item about a value (the 4 are
    `cat /root/mass_report.json`, each beside a citation of the output it printed; see
    test_capable_replies.py), so no verdict becomes ungrounded and every item keeps its verdict."""
    report = pipeline.reports["gcpc"]
    assert report.counts() == {"judged": 12, "errors": 0, "skipped": 0}
    rows = pipeline.store.judging.judgments(judge="gcpc")
    real = [r for r in rows if r.item_id != ENDPOINT_ITEM_ID]
    assert len({r.trajectory_id for r in rows}) == 12
    assert Counter(r.verdict_raw for r in real) == {"Yes": 124, "No": 12, "Abstain": 16}
    assert Counter(r.verdict_raw for r in rows if r.item_id == ENDPOINT_ITEM_ID) == {"No": 6}
    assert Counter(r.reason_raw for r in real) == {None: 136, "judge_abstain": 16}  # none made ungrounded
    assert sum(len(r.citations or []) for r in real) == 282
    assert all(r.citations for r in real if r.verdict_raw != "Abstain")
    assert {r.prompt_version for r in rows} == {report.prompt_version} == {"judge-items-v5"}


def test_scores_and_item_accuracy(pipeline: Pipeline) -> None:
    """README: item accuracy vs CTRF 0.873 on 71 decided assertion items; Abstain 14.5 %; recall of No
    0.438 (9 Yes where a cited test failed). Computed here with the report's own `assertion_truth` /
    `item_accuracy_table` over the exported items frame: the same figures."""
    truth = assertion_truth(pipeline.frames["items"], pipeline.frames["ctrf"])
    row = item_accuracy_table(truth).set_index("judge").loc["gcpc"]
    assert (row["n_assertion_items"], row["n_comparable"], row["n_decided"]) == (104, 83, 71)
    assert round(row["accuracy"], 3) == 0.873 and round(row["abstain_rate"], 3) == 0.145
    assert (row["n_truth_yes"], row["n_truth_no"]) == (67, 16)
    assert row["recall_yes"] == 1.0 and round(row["recall_no"], 4) == 0.4375
    comparable = truth[truth["basis"] == "ctrf"]
    assert ((comparable["truth"] == "No") & (comparable["verdict_raw"] == "Yes")).sum() == 9

    scores = pipeline.frames["scores"].set_index(["judge", "trajectory_id"])
    gcpc = scores.loc["gcpc"]
    assert len(gcpc) == 12 and (gcpc["outcome"] == "PASS").sum() == 6
    assert gcpc.loc[gcpc["outcome"] == "PASS", "partial_credit"].eq(1.0).all()
    assert gcpc["partial_credit"].round(4).to_dict() == {
        "3d-scan-calc__35QwY5n": 0.7273, "3d-scan-calc__4cTqbyB": 1.0, "3d-scan-calc__MeiFyWh": 1.0,
        "3d-scan-calc__t2HR7VM": 1.0, "azure-bgp-oscillation-route-leak__bgFMbF5": 0.6875,
        "azure-bgp-oscillation-route-leak__tHZERvn": 0.75, "citation-check__8t85Dy9": 0.8462,
        "citation-check__hCgckjm": 1.0, "citation-check__oXwDHn5": 1.0, "citation-check__yMTG5rC": 0.8462,
        "dialogue-parser__jdinGaX": 1.0, "dialogue-parser__rwnM43w": 0.8}
    assert gcpc["perfect"].sum() == 6


def test_auc_against_the_official_outcome(pipeline: Pipeline) -> None:
    """README: AUC raw GCPC 1.000, holistic 1.000 on 12 trajectories. Raw GCPC is the ablation's `raw`
    variant (partial credit of the raw verdicts, no PASS propagation, no endpoint item)."""
    report = pipeline.reports["holistic"]
    assert report.counts() == {"judged": 12, "errors": 0, "skipped": 0}
    variants = score_variants(pipeline.frames["items"])
    raw = variants[(variants["judge"] == "gcpc") & (variants["variant"] == "raw")].drop(columns=["judge"])
    assert bootstrap_auc(raw.rename(columns={"variant": "judge"}), ["raw"], n_boot=10).auc.tolist() == [1.0]
    holistic = bootstrap_auc(pipeline.frames["scores"], ["holistic"], n_boot=10)
    assert holistic.auc.tolist() == [1.0] and len(holistic.data) == 12
    progress = pipeline.frames["scores"].set_index(["judge", "trajectory_id"]).loc["holistic", "partial_credit"]
    assert progress.to_dict() == {
        "3d-scan-calc__35QwY5n": 0.7, "3d-scan-calc__4cTqbyB": 0.8, "3d-scan-calc__MeiFyWh": 0.9,
        "3d-scan-calc__t2HR7VM": 0.95, "azure-bgp-oscillation-route-leak__bgFMbF5": 0.75,
        "azure-bgp-oscillation-route-leak__tHZERvn": 0.55, "citation-check__8t85Dy9": 0.5,
        "citation-check__hCgckjm": 0.9, "citation-check__oXwDHn5": 0.95, "citation-check__yMTG5rC": 0.4,
        "dialogue-parser__jdinGaX": 0.95, "dialogue-parser__rwnM43w": 0.75}
    assert pipeline.reports["holistic"].prompt_version == "judge-holistic-v4"
