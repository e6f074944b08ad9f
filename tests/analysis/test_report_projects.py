"""`report` and `perturb` end to end on project DBs: the demo project and the real SkillsBench sample.

Both go through the command line and the DB loader, on private copies of the projects that
tests/conftest.py builds once. What a project cannot support yet (human data, a second judge,
a fixed checklist) must be stated, never fail the report.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from gcpc_core.cli import main
from gcpc_core.store import Store
from annotations.targets import add_annotation

Capture = pytest.CaptureFixture[str]


def _report(db: Path, out: Path, capsys: Capture, *extra: str) -> tuple[int, str]:
    capsys.readouterr()
    code = main(["report", "--db", str(db), "--out", str(out), "--n-boot", "200", *extra])
    return code, capsys.readouterr().out


def test_report_on_the_demo_project(demo_copy: Path, tmp_path: Path, capsys: Capture) -> None:
    code, out = _report(demo_copy, tmp_path / "before", capsys)
    assert code == 0
    md = (tmp_path / "before" / "report.md").read_text()
    assert "DEMO project, simulated data" in md and (tmp_path / "before" / "report.html").is_file()
    assert f"report: {tmp_path / 'before' / 'report.md'}" in out
    assert "not computed: no evidence-perturbation results yet" in out  # stated, not failed
    assert (tmp_path / "before" / "agreement_spearman.csv").is_file()  # the simulated study is human data
    # perturb offline with the probe judge, then the report carries the sensitivity tables
    assert main(["perturb", "--db", str(demo_copy), "--judge", "probe", "--quiet"]) == 0
    code, out = _report(demo_copy, tmp_path / "after", capsys)
    assert code == 0 and "no evidence-perturbation results" not in out
    table = pd.read_csv(tmp_path / "after" / "sensitivity.csv")
    assert table["judge"].tolist() == ["probe"] and table.loc[0, "n"] > 100
    units = pd.read_csv(tmp_path / "after" / "sensitivity_units.csv")
    assert len(units) == table.loc[0, "n"] and units["recipe"].str.contains('"replacement"').all()
    assert "RQ4 — Evidence sensitivity" in (tmp_path / "after" / "report.md").read_text()


def test_report_reads_the_perturbations_of_the_run_it_reports(demo_copy: Path, tmp_path: Path, capsys: Capture) -> None:
    db = str(demo_copy)
    first = Store(demo_copy).judging.default_labels()["probe"]
    assert main(["perturb", "--db", db, "--judge", "probe", "--limit", "15", "--quiet"]) == 0
    assert main(["judge", "--db", db, "--judge", "probe", "--label", "second", "--limit", "5", "--quiet"]) == 0
    assert main(["score", "--db", db]) == 0
    code, out = _report(demo_copy, tmp_path / "new", capsys, "--no-figures")  # the new default has none yet
    assert code == 0 and "not computed: no evidence-perturbation results yet for judge run(s) probe (run second)" in out
    code, out = _report(demo_copy, tmp_path / "old", capsys, "--no-figures", "--run", first)
    table = pd.read_csv(tmp_path / "old" / "sensitivity.csv")
    assert code == 0 and table[["label", "n"]].values.tolist() == [[first, 15]]
    assert main(["perturb", "--db", db, "--judge", "probe", "--run", "second", "--limit", "4", "--quiet"]) == 0
    code, out = _report(demo_copy, tmp_path / "again", capsys, "--no-figures")
    table = pd.read_csv(tmp_path / "again" / "sensitivity.csv")
    assert code == 0 and table[["label", "n"]].values.tolist() == [["second", 4]]
    assert set(pd.read_csv(tmp_path / "again" / "sensitivity_units.csv")["label"]) == {"second"}


def test_report_options_and_bad_input(demo_copy: Path, tmp_path: Path, capsys: Capture) -> None:
    code, out = _report(demo_copy, tmp_path / "r", capsys, "--exclude-simulated", "--no-figures", "--judge", "probe")
    assert code == 0 and "not computed: no human study data yet" in out and "(0 figures)" in out
    assert main(["report", "--db", str(demo_copy), "--out", str(tmp_path / "x"), "--judge", "gcpc"]) == 2
    assert "no scores for judge(s) gcpc" in capsys.readouterr().err
    assert main(["report", "--db", str(tmp_path / "none.db"), "--out", str(tmp_path / "y")]) == 2
    assert "no such project DB" in capsys.readouterr().err


def test_report_on_an_empty_project(tmp_path: Path, capsys: Capture) -> None:
    Store(tmp_path / "empty.db").close()
    code, out = _report(tmp_path / "empty.db", tmp_path / "r", capsys)
    assert code == 0 and "not computed: no judge scores yet" in out


@pytest.mark.skillsbench
def test_report_and_perturb_on_the_real_sample(real_copy: Path, tmp_path: Path, capsys: Capture) -> None:
    assert main(["perturb", "--db", str(real_copy), "--judge", "probe", "--scope", "log", "--quiet"]) == 0
    code, out = _report(real_copy, tmp_path / "r", capsys)
    assert code == 0
    assert "not computed: no human study data yet" in out  # the real sample has no human data
    assert "not computed: paired ΔAUC needs at least two judges." in out
    auc = pd.read_csv(tmp_path / "r" / "discrimination_auc.csv")
    # the headline reads the probe judge's raw verdicts: 1 of the 12 runs has none decided, and every decided
    # verdict of the others is the same (the postprocessed score, which holds the outcome, read 1.000)
    assert auc["judge"].tolist() == ["probe"] and auc.loc[0, "n"] == 12 - 1 and auc.loc[0, "n_undecided"] == 1
    assert auc.loc[0, "auc"] == 0.5 and "constant score" in auc.loc[0, "note"]
    assert "warning: judge probe decided no item of 1 of its 12 trajectories" in out
    assert "warning: judge probe decided only 19% of its items (26 of 134) from log evidence" in out
    sens = pd.read_csv(tmp_path / "r" / "sensitivity.csv")
    assert sens.loc[0, "scope"] == "log" and sens.loc[0, "span_remaining"] == 0 and sens.loc[0, "n"] > 0
    assert (tmp_path / "r" / "item_accuracy.csv").is_file()  # real CTRF results behind assertion items


def test_study_status_and_report_print_the_same_alpha(demo_copy: Path, tmp_path: Path, capsys: Capture) -> None:
    import json

    capsys.readouterr()
    assert main(["study", "status", "--db", str(demo_copy)]) == 0
    status = {line.split("α ")[1].split(" (")[0]: line.split(": ")[1].split(" ")[0]
              for line in capsys.readouterr().out.splitlines() if line.strip().startswith("α ")}
    assert main(["study", "status", "--db", str(demo_copy), "--json"]) == 0
    exact = {a["kind"]: a["alpha"] for a in json.loads(capsys.readouterr().out)["alpha"]}
    code, _ = _report(demo_copy, tmp_path / "r", capsys, "--no-figures")
    assert code == 0
    alpha = pd.read_csv(tmp_path / "r" / "agreement_alpha.csv")
    humans = alpha[alpha["coders"] == "humans"].set_index("data")
    md = (tmp_path / "r" / "report.md").read_text()
    for kind, data in (("progress_rating", "ratings"), ("preference", "preferences")):
        assert exact[kind] == pytest.approx(humans.loc[data, "alpha"], abs=1e-12), kind
        assert status[kind] == f"{humans.loc[data, 'alpha']:.3f}", kind
        assert f"| {data} | humans | {'ordinal' if data == 'ratings' else 'nominal'} | {status[kind]} |" in md
    assert status["preference"] != "0.000"  # the as-shown A/B coding gave 0 on the demo study


def test_a_malformed_stored_rating_does_not_abort_the_report(demo_copy: Path, tmp_path: Path, capsys: Capture) -> None:
    from annotations import DEMO_STUDY_ID, load_study

    store = Store(demo_copy)
    unit_id, unit = next(iter(load_study(store, DEMO_STUDY_ID).units.items()))
    add_annotation(store, kind="progress_rating", rater="demo-you", value={"rating": "three"}, study_id=DEMO_STUDY_ID,
                         task=unit.task, trajectory_id=unit.trajectory_id, unit_id=unit_id)
    code, out = _report(demo_copy, tmp_path / "r", capsys, "--no-figures")
    assert code == 0
    assert "not computed: 1 malformed human answers left out" in out and "rating 'three' is not a whole number" in out
    for name in ("discrimination_auc", "agreement_spearman", "agreement_alpha", "agreement_rejected_rows"):
        assert (tmp_path / "r" / f"{name}.csv").is_file(), name
    assert main(["study", "status", "--db", str(demo_copy)]) == 0
    assert "1 malformed answers left out" in capsys.readouterr().out
