"""The data behind the Compare runs page and the labelled runs on the item audit page, on the demo project:
which two runs the page opens on, links from a differing item into the audit of each run, the other
run's verdict and citations on an item, audits recorded per run, and a Runs-page job under a label."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest

from annotations.audits import item_audits
from gcpc_core.judge.prompts import PROBE_VERSION
from gcpc_core.demo import DEMO_SIMULATED_LABEL, DEMO_SIMULATED_MODEL
from gcpc_core.review.audit import item_views, judge_stats, record_audit
from gcpc_core.analysis.run_names import run_name
from gcpc_core.review.compare import compare_view, default_pair, differing_table, run_choices, run_title
from gcpc_core.review.runs import JobRunner
from gcpc_core.store import Store


def test_the_page_opens_on_the_default_run_against_the_other(demo: Store) -> None:
    runs = run_choices(demo)
    probe = demo.judging.default_labels()["probe"]
    assert default_pair(runs) == (f"probe={probe}", f"probe={DEMO_SIMULATED_LABEL}")
    assert ["SIMULATED" in run_title(r) for r in runs] == [False, True]
    assert default_pair(runs[:1]) is None
    result = compare_view(demo, *default_pair(runs), n_boot=200)
    table = differing_table(result, "http://127.0.0.1:8501")
    assert len(table) == len(result.differing) > 0
    first = table.iloc[0]
    for column, label in (("audit_a", probe), ("audit_b", DEMO_SIMULATED_LABEL)):
        url = urlparse(first[column])
        assert (url.scheme, url.netloc, url.path) == ("http", "127.0.0.1:8501", "/audit")
        query = parse_qs(url.query)
        assert query == {"trajectory": [first["trajectory_id"]], "judge": ["probe"], "item": [first["item_id"]],
                         "label": [label]}
    with pytest.raises(ValueError, match="no judge run probe=nope"):
        compare_view(demo, "probe=nope", f"probe={probe}")


def test_an_item_shows_the_other_runs_verdict_and_audits_stay_with_their_run(demo: Store) -> None:
    probe = demo.judging.default_labels()["probe"]
    result = compare_view(demo, f"probe={probe}", f"probe={DEMO_SIMULATED_LABEL}", n_boot=100)
    row = result.differing.iloc[0]
    view = next(v for v in item_views(demo, row["trajectory_id"], "probe") if v.item_id == row["item_id"])
    assert view.verdict_raw == row["verdict_a"]
    (other,) = view.other_runs
    assert (other.label, other.verdict_raw, other.model, other.simulated) == (
        DEMO_SIMULATED_LABEL, row["verdict_b"], DEMO_SIMULATED_MODEL, True)
    assert other.citations and all(c.event is not None for c in other.citations)
    flipped = next(v for v in item_views(demo, row["trajectory_id"], "probe", DEMO_SIMULATED_LABEL)
                   if v.item_id == row["item_id"])
    assert flipped.verdict_raw == row["verdict_b"] and flipped.other_runs[0].label == probe

    record_audit(demo, flipped, trajectory_id=row["trajectory_id"], judge="probe", reviewer="rev", agree=True,
                 label=DEMO_SIMULATED_LABEL)
    mine = [a for a in item_audits(demo, trajectory_id=row["trajectory_id"], judge="probe", label=DEMO_SIMULATED_LABEL)
            if a.rater == "rev"]
    assert [(a.item_id, a.label) for a in mine] == [(row["item_id"], DEMO_SIMULATED_LABEL)]
    # the default run's figures do not count an audit of the simulated run
    assert not [a for a in item_audits(demo, trajectory_id=row["trajectory_id"], judge="probe") if a.rater == "rev"]
    stats = judge_stats(demo, {"probe": DEMO_SIMULATED_LABEL}).set_index(["trajectory_id", "judge"])
    assert stats.loc[(row["trajectory_id"], "probe"), "audited"] >= 1


def test_a_runs_page_job_judges_under_its_label(demo: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "GCPC_MODEL"):
        monkeypatch.delenv(name, raising=False)
    runner = JobRunner()
    job = runner.wait(runner.start(demo.path, "judge", {"judge": "probe", "label": "from-the-page"}).id, timeout=120)
    assert job.status == "done", job.lines
    assert any("judged 36" in line for line in job.lines)
    assert demo.judging.default_labels()["probe"] == "from-the-page"
    assert {r.label for r in demo.judging.labels()} == {"from-the-page", DEMO_SIMULATED_LABEL,
                                                         next(r.label for r in demo.judging.labels()
                                                              if r.label.startswith("probe:"))}


def test_triage_reads_the_chosen_run_and_links_to_it(demo: Store) -> None:
    from gcpc_core.review.auditloop import judge_loop, loop_data

    default = loop_data(demo, "http://127.0.0.1:8501")
    chosen = loop_data(demo, "http://127.0.0.1:8501", labels={"probe": DEMO_SIMULATED_LABEL})
    assert not default.disagreements["link"].str.contains("label=").any()
    assert chosen.disagreements["link"].str.contains("label=DEMO").all()
    # the simulated run flips verdicts, so it disagrees with the verifier where the probe judge did not
    assert set(chosen.disagreements["trajectory_id"] + chosen.disagreements["item_id"]) != set(
        default.disagreements["trajectory_id"] + default.disagreements["item_id"])
    loop = judge_loop(demo, "http://127.0.0.1:8501", "probe", 3, 0.1, labels={"probe": DEMO_SIMULATED_LABEL})
    assert len(loop.proposals) == 3 and loop.proposals["link"].str.contains("label=DEMO").all()
    assert loop.proposals["link"].str.startswith("http://127.0.0.1:8501/audit?").all()
    assert default.disagreements["link"].str.startswith("http://127.0.0.1:8501/audit?").all()


def test_the_report_names_the_run_of_each_judge(demo: Store, tmp_path: Path) -> None:
    from gcpc_core.analysis import build_report
    from gcpc_core.project_frames import frames_from_store

    result = build_report(frames_from_store(demo), tmp_path / "r", n_boot=50, figures=False)
    assert list(result.tables["judges"]["label"]) == [demo.judging.default_labels()["probe"]]
    # named for a reader, the full label beside it (report.md kept the raw label alone)
    run = next(r for r in demo.judging.labels() if r.label == demo.judging.default_labels()["probe"])
    assert list(result.tables["judges"]["run"]) == [run_name(run)]
    assert f"probe · offline · {PROBE_VERSION} · " in (tmp_path / "r" / "report.md").read_text()
    chosen = build_report(frames_from_store(demo, labels={"probe": DEMO_SIMULATED_LABEL}), tmp_path / "s", n_boot=50,
                          figures=False)
    assert list(chosen.tables["judges"]["label"]) == [DEMO_SIMULATED_LABEL]
