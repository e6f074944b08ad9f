"""`judge --label`, `labels` and `compare` on the demo project: a named run coexists with the default one,
rerunning it resumes, and `compare` reports the two runs' figures — the demo's simulated second run
against the probe judge's, and two runs of the deterministic probe judge, which must agree on every item."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gcpc_core.cli import main
from gcpc_core.demo import DEMO_SIMULATED_LABEL
from gcpc_core.store import Store


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_compare_the_demo_runs(demo_copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(demo_copy)
    code, out, _ = _run(capsys, "labels", "--db", db, "--json")
    runs = {r["label"]: r for r in json.loads(out)}
    assert code == 0 and len(runs) == 2
    assert runs[DEMO_SIMULATED_LABEL]["simulated"] and not runs[DEMO_SIMULATED_LABEL]["default"]
    (probe,) = [name for name, r in runs.items() if r["default"]]

    code, out, _ = _run(capsys, "compare", "--db", db, "--a", probe, "--b", DEMO_SIMULATED_LABEL, "--json",
                        "--n-boot", "300")
    assert code == 0
    result = json.loads(out)
    store = Store(demo_copy)
    rows = store.judging.judgments(judge="probe", all_labels=True)
    by_run: dict[str, dict[tuple[str, str], str]] = {}
    for r in rows:
        if r.route != "endpoint":
            by_run.setdefault(r.label, {})[(r.trajectory_id, r.item_id)] = r.verdict_raw
    a, b = by_run[probe], by_run[DEMO_SIMULATED_LABEL]
    differ = {k for k in a if a[k] != b[k]}
    assert result["agreement"]["n_items"] == len(a) == len(b)
    assert result["agreement"]["n_differ"] == len(differ) > 0
    assert {(d["trajectory_id"], d["item_id"]) for d in result["differing"]} == differ
    assert result["agreement"]["agreement"] == pytest.approx(1 - len(differ) / len(a))
    assert result["delta"]["n"] == 36 and result["delta"]["ci_low"] <= result["delta"]["delta_auc"] <= result["delta"]["ci_high"]

    code, out, _ = _run(capsys, "compare", "--db", db, "--a", probe, "--b", DEMO_SIMULATED_LABEL, "--n-boot", "200",
                        "--limit", "3")
    assert code == 0 and out.startswith(f"A = probe={probe}; B = probe={DEMO_SIMULATED_LABEL}.")
    assert f"{len(differ)} items differ (showing 3)" in out
    assert "(no perturbation results for either run: `perturb --run LABEL`)" in out and result["sensitivity"] == []


def test_judge_label_coexists_resumes_and_compares(demo_copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(demo_copy)
    before = Store(demo_copy).judging.default_labels()["probe"]
    code, out, _ = _run(capsys, "judge", "--db", db, "--judge", "probe", "--label", "probe-again", "--quiet")
    assert code == 0 and "judged 36" in out
    code, out, _ = _run(capsys, "judge", "--db", db, "--judge", "probe", "--label", "probe-again", "--quiet")
    assert code == 0 and "judged 0" in out and "already judged" in out  # the same label resumes
    assert _run(capsys, "score", "--db", db)[0] == 0
    store = Store(demo_copy)
    assert store.judging.default_labels()["probe"] == "probe-again"  # the most recent run
    assert len(store.judging.scores(judge="probe", all_labels=True)) == 3 * 36
    assert next(r for r in store.judging.labels() if r.label == "probe-again").named

    code, out, _ = _run(capsys, "compare", "--db", db, "--a", "probe-again", "--b", before, "--json", "--n-boot", "200")
    result = json.loads(out)
    assert code == 0 and result["agreement"]["n_differ"] == 0 and result["agreement"]["kappa"] == pytest.approx(1.0)
    assert result["delta"]["delta_auc"] == 0.0

    # each run's evidence sensitivity, from its own perturbations (same model and prompt: kept apart by label)
    for label, limit in (("probe-again", "10"), (before, "6")):
        assert _run(capsys, "perturb", "--db", db, "--judge", "probe", "--run", label, "--limit", limit,
                    "--quiet")[0] == 0
    code, out, _ = _run(capsys, "compare", "--db", db, "--a", "probe-again", "--b", before, "--json", "--n-boot", "200")
    sens = json.loads(out)["sensitivity"]
    assert code == 0 and [(r["label"], r["n"]) for r in sens] == [("probe-again", 10), (before, 6)]
    code, out, _ = _run(capsys, "compare", "--db", db, "--b", "probe-again", "--a", before, "--n-boot", "200")
    assert code == 0 and "evidence sensitivity of each run" in out
    rows = out.split("evidence sensitivity of each run")[1].splitlines()[2:4]  # run A first
    assert before in rows[0] and "probe-again" in rows[1], rows

    code, out, _ = _run(capsys, "triage", "--db", db, "--run", before, "--json")
    assert code == 0 and json.loads(out)["n_disagreements"] > 0


def test_unknown_labels_are_refused(demo_copy: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    db = str(demo_copy)
    code, _, err = _run(capsys, "compare", "--db", db, "--a", "nope", "--b", DEMO_SIMULATED_LABEL)
    assert code == 2 and "no judge run labelled 'nope'" in err and DEMO_SIMULATED_LABEL in err
    code, _, err = _run(capsys, "compare", "--db", db, "--a", DEMO_SIMULATED_LABEL, "--b", DEMO_SIMULATED_LABEL)
    assert code == 2 and "two different runs" in err
    code, _, err = _run(capsys, "report", "--db", db, "--out", str(tmp_path / "r"), "--run", "nope", "--no-figures")
    assert code == 2 and "no judge run labelled 'nope'" in err
