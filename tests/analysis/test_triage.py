"""Disagreement triage on a constructed project whose ranking and figure changes are known by hand."""

from __future__ import annotations

from urllib.parse import parse_qs, urlparse

import pandas as pd
import pytest

import numpy as np

from gcpc_core.analysis import auc_table, bootstrap_auc, draw_clusters, score_variants
from gcpc_core.analysis.triage import KINDS, WIDTH_BOOT, audit_link, item_verdicts, settled, triage

T = "test_outputs.py::TestX::"

# trajectory → (task, condition, outcome, [(item, route, raw verdict, refs)])
PROJECT = {
    "a-w": ("a", "with-skills", "PASS", [("C1", "assertion", "Yes", []), ("C2", "generated", "Yes", []),
                                         ("C3", "generated", "Yes", [])]),
    "a-wo": ("a", "without-skills", "FAIL", [("C1", "assertion", "Yes", [T + "f"]), ("C2", "generated", "No", []),
                                              *((f"C{k}", "generated", "Yes", []) for k in range(3, 7))]),
    "b-w": ("b", "with-skills", "PASS", [("C1", "assertion", "No", [T + "p"]), ("C2", "generated", "Yes", []),
                                         ("C3", "generated", "Yes", [])]),
    "b-wo": ("b", "without-skills", "FAIL", [("C1", "assertion", "No", [T + "f"]), ("C2", "generated", "No", []),
                                              ("C3", "generated", "Yes", [])]),
}

APP = "https://gcpc.example:8443/base"
"""An app address the links start with."""


def audit(traj: str, item: str, rater: str, agree: bool, verdict: str | None = None) -> dict:
    return {"trajectory_id": traj, "judge": "gcpc", "item_id": item, "rater": rater, "agree": agree,
            "verdict": verdict, "created_at": "2026-01-01", "is_simulated": False}


def frames_of(project: dict, ctrf: pd.DataFrame, audits: pd.DataFrame) -> dict[str, pd.DataFrame]:
    items, scores = [], []
    for traj, (task, condition, outcome, rows) in project.items():
        scores.append({"trajectory_id": traj, "task": task, "judge": "gcpc", "outcome": outcome, "condition": condition,
                       "agent": "ag", "model": "m", "trial_index": 0, "partial_credit": None})
        for item, route, raw, refs in rows:
            post = "Yes" if outcome == "PASS" and route == "assertion" else raw
            items.append({"trajectory_id": traj, "task": task, "judge": "gcpc", "item_id": item, "route": route,
                          "verdict_raw": raw, "verdict": post, "verifier_refs": refs, "outcome": outcome,
                          "condition": condition})
        if outcome == "FAIL":
            items.append({"trajectory_id": traj, "task": task, "judge": "gcpc", "item_id": "ENDPOINT",
                          "route": "endpoint", "verdict_raw": "No", "verdict": "No", "verifier_refs": [],
                          "outcome": outcome, "condition": condition})
    return {"items": pd.DataFrame(items), "scores": pd.DataFrame(scores), "ctrf": ctrf,
            "audits": pd.DataFrame(audits, columns=list(audit("t", "i", "r", True)))}


def frames() -> dict[str, pd.DataFrame]:
    ctrf = pd.DataFrame({"trajectory_id": ["a-wo", "b-w", "b-wo"], "test": [T + "f", T + "p", T + "f"],
                         "status": ["failed", "passed", "failed"]})
    audits = pd.DataFrame([
        audit("b-wo", "C2", "bob", False, "Yes"), audit("b-wo", "C2", "carol", False, "Yes"),   # C: settled (Yes)
        audit("b-wo", "C3", "bob", True), audit("b-wo", "C3", "carol", False, "No"),            # D: split, tied
        audit("b-w", "C2", "dave", False, "No"),                                                 # F: settled (No)
        audit("a-w", "C1", "dave", True),                                                        # agreement only
    ])
    return frames_of(PROJECT, ctrf, audits)


def test_item_verdicts_gather_verifier_and_auditors() -> None:
    f = frames()
    v = item_verdicts(f["items"], f["ctrf"], f["audits"]).set_index(["trajectory_id", "item_id"])
    assert "ENDPOINT" not in v.index.get_level_values("item_id")
    assert v.loc[("a-wo", "C1"), "verifier"] == "No" and v.loc[("b-w", "C1"), "verifier"] == "Yes"
    assert pd.isna(v.loc[("a-w", "C2"), "verifier"])
    assert v.loc[("b-wo", "C3"), "split"] and pd.isna(v.loc[("b-wo", "C3"), "consensus"])
    assert v.loc[("b-wo", "C3"), "dissent"] == "No" and v.loc[("b-wo", "C2"), "consensus"] == "Yes"
    assert pd.isna(v.loc[("a-w", "C1"), "dissent"]) and v.loc[("a-w", "C1"), "n_auditors"] == 1


def test_settled_items_leave_the_list_and_impacts_are_in_interval_widths() -> None:
    """C and F are settled by their auditors' consensus (2 of 2, and 1 of 1): they leave the list. D's auditors are
    tied: it stays, as judge vs auditor and auditor vs auditor. Every change is in units of its figure's interval."""
    f = frames()
    verdicts = item_verdicts(f["items"], f["ctrf"], f["audits"])
    assert [(r.trajectory_id, r.item_id) for r in settled(verdicts).itertuples()] == [("b-w", "C2"), ("b-wo", "C2")]
    ranked = triage(f, base_url=APP, threshold=0.35)
    assert ranked.attrs["n_settled"] == 2
    got = [(r.trajectory_id, r.item_id, r.kind, r.proposed) for r in ranked.itertuples()]
    assert sorted(got) == sorted([
        ("a-wo", "C1", KINDS[0], "No"),    # B: pair a's Δ .286 → .429 crosses the threshold: share improving +.5
        ("b-wo", "C3", KINDS[1], "No"),    # D: b-wo 1/4 → 0: mean −.125 (both kinds)
        ("b-wo", "C3", KINDS[2], "No"),
        ("b-w", "C1", KINDS[0], "Yes"),    # A: raw verdicts 2/3 → 1: the outcome-free AUC moves (the stored score not)
    ])
    r = ranked.set_index(["trajectory_id", "item_id", "kind"])
    b = r.loc[("a-wo", "C1", KINDS[0])]
    assert b["delta_share"] == pytest.approx(0.5) and b["share"] == "improving FAIL→PASS"
    assert b["delta_mean_pc"] == pytest.approx((4 / 7 - 5 / 7) / 2)
    a = r.loc[("b-w", "C1", KINDS[0])]
    assert a["delta_mean_pc"] == 0.0 and a["delta_auc"] > 0  # raw b-w 2/3 → 1 now outscores every FAIL run
    for row in ranked.itertuples():  # the impact is the largest change in units of its own interval width
        scaled = [abs(d) / w for d, w in ((row.delta_auc, row.width_auc), (row.delta_mean_pc, row.width_mean_pc),
                                          (row.delta_share, row.width_share)) if np.isfinite(w)]
        assert row.impact == pytest.approx(max(scaled)), row
    assert ranked["impact"].is_monotonic_decreasing and ranked["rank"].tolist() == [1, 2, 3, 4]
    assert set(ranked["n_open"]) == {1}  # one open verdict per trajectory here: the joint effect is the single one
    assert ranked["joint_impact"].tolist() == pytest.approx(ranked["impact"].tolist())


def test_interval_widths_are_the_figures_task_clustered_intervals() -> None:
    """width_auc is the report's AUC interval of the raw-verdict scores; width_mean_pc the same draws' interval of the
    condition's mean partial credit, replayed one draw at a time."""
    f = frames()
    ranked = triage(f, base_url=APP, threshold=0.35).set_index(["trajectory_id", "item_id", "kind"])
    variants = score_variants(f["items"]).pivot(index="trajectory_id", columns="variant", values="partial_credit")
    scores = f["scores"].assign(partial_credit=f["scores"]["trajectory_id"].map(variants["raw"]))
    t = auc_table(bootstrap_auc(scores, n_boot=WIDTH_BOOT, seed=0)).iloc[0]
    assert ranked["width_auc"].iloc[0] == pytest.approx(t["ci_high"] - t["ci_low"])
    without = scores[scores["condition"] == "without-skills"].assign(
        pc=lambda d: d["trajectory_id"].map(variants["full"]))
    tasks = list(pd.unique(without["task"]))
    means = [pd.concat([without[without["task"] == tasks[k]] for k in draw])["pc"].mean()
             for draw in draw_clusters(len(tasks), WIDTH_BOOT, 0)]
    low, high = np.percentile(means, [2.5, 97.5])
    assert ranked.loc[("a-wo", "C1", KINDS[0]), "width_mean_pc"] == pytest.approx(high - low)


def test_the_joint_effect_of_a_trajectorys_open_verdicts() -> None:
    """A FAIL run with one Yes and two Abstain items the verifier says are No: either correction alone moves its
    partial credit 1/2 → 1/3, both together to 1/4 — not 1/2 − 2·(1/6) = 1/6: the joint effect is shown beside."""
    project = {
        "a-w": ("a", "with-skills", "PASS", [("C1", "generated", "Yes", []), ("C2", "generated", "Yes", [])]),
        "a-wo": ("a", "without-skills", "FAIL", [("C1", "generated", "Yes", []), ("C2", "assertion", "Abstain", [T + "f"]),
                                                  ("C3", "assertion", "Abstain", [T + "g"])]),
        "b-w": ("b", "with-skills", "FAIL", [("C1", "generated", "No", []), ("C2", "generated", "Yes", [])]),
        "b-wo": ("b", "without-skills", "FAIL", [("C1", "generated", "No", []), ("C2", "generated", "Yes", [])]),
        "c-w": ("c", "with-skills", "PASS", [("C1", "generated", "Yes", []), ("C2", "generated", "No", [])]),
        "c-wo": ("c", "without-skills", "PASS", [("C1", "generated", "Yes", []), ("C2", "generated", "Yes", [])]),
    }
    ctrf = pd.DataFrame({"trajectory_id": ["a-wo", "a-wo"], "test": [T + "f", T + "g"], "status": ["failed", "failed"]})
    ranked = triage(frames_of(project, ctrf, pd.DataFrame()), base_url=APP).set_index("item_id")
    assert list(ranked.index.sort_values()) == ["C2", "C3"] and set(ranked["n_open"]) == {2}
    n_without = 3  # the condition's mean partial credit moves by the run's change / 3
    for item in ("C2", "C3"):
        row = ranked.loc[item]
        assert row["delta_mean_pc"] == pytest.approx((1 / 3 - 1 / 2) / n_without)
        assert row["joint_delta_mean_pc"] == pytest.approx((1 / 4 - 1 / 2) / n_without)
    assert 2 * ranked.loc["C2", "delta_mean_pc"] != pytest.approx(ranked.loc["C2", "joint_delta_mean_pc"])
    assert (ranked["joint_impact"] > ranked["impact"]).all()


def test_links_open_the_item_audit_and_carry_no_secret() -> None:
    """Links are absolute (they work pasted outside the app) and name one item verdict, nothing else."""
    f = frames()
    ranked = triage(f, base_url=APP, threshold=0.35)
    url = urlparse(ranked["link"].iloc[0])
    assert (url.scheme, url.netloc, url.path) == ("https", "gcpc.example:8443", "/base/audit")
    assert parse_qs(url.query) == {"trajectory": ["b-w"], "judge": ["gcpc"], "item": ["C1"]}
    assert audit_link("http://localhost:8501/", "t&1", "j", "C 1") == (
        "http://localhost:8501/audit?trajectory=t%261&judge=j&item=C+1")
    assert not any("admin" in link or "token" in link for link in ranked["link"])


def test_nothing_to_triage() -> None:
    f = frames()
    assert triage({"items": f["items"].iloc[0:0], "scores": f["scores"]}, base_url=APP).empty
    assert triage({"items": f["items"][f["items"]["trajectory_id"] == "a-w"], "scores": f["scores"]}, base_url=APP).empty


def test_cli_on_the_demo(demo_copy, capsys) -> None:  # noqa: ANN001 - pytest fixtures
    import json

    from annotations.audits import record_item_audit
    from gcpc_core.cli import main
    from gcpc_core.store import Store

    store = Store(demo_copy)
    assert main(["triage", "--db", str(demo_copy), "--json", "--next", "4", "--simulate-audits", "30"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["n_disagreements"] == len(out["disagreements"]) > 0
    assert {r["kind"] for r in out["disagreements"]} == {"judge vs verifier"}  # the demo has no audits yet
    assert [r["order"] for r in out["proposals"]] == [1, 2, 3, 4]
    sim = out["simulated_audits"]
    assert sim["n_audits"] == 30 and sim["estimates_after"][0]["n_audited"] == 30
    assert sim["estimates_after"][0]["width"] < sim["estimates_before"][0]["width"]
    assert store.annotations.list(kind="item_audit") == []  # simulated audits are never stored

    # an audit settles the item verdict it decides: it leaves the list, counted as settled
    assert out["n_settled"] == 0
    top = out["disagreements"][0]
    record_item_audit(store, trajectory_id=top["trajectory_id"], item_id=top["item_id"], judge="probe",
                      reviewer="alice", agree=False, corrected_verdict=top["proposed"])
    assert main(["triage", "--db", str(demo_copy), "--json"]) == 0
    after = json.loads(capsys.readouterr().out)
    kinds = {(r["trajectory_id"], r["item_id"]) for r in after["disagreements"]}
    assert (top["trajectory_id"], top["item_id"]) not in kinds and after["n_settled"] == 1
    assert after["n_disagreements"] == out["n_disagreements"] - 1
    # a second auditor holding the judge's verdict ties the auditors: the item verdict is open again, for both kinds
    record_item_audit(store, trajectory_id=top["trajectory_id"], item_id=top["item_id"], judge="probe",
                      reviewer="bob", agree=True)
    assert main(["triage", "--db", str(demo_copy), "--json"]) == 0
    kinds = {(r["trajectory_id"], r["item_id"], r["kind"]) for r in json.loads(capsys.readouterr().out)["disagreements"]}
    assert {(top["trajectory_id"], top["item_id"], k) for k in ("judge vs auditor", "auditor vs auditor")} <= kinds

    assert main(["triage", "--db", str(demo_copy.parent / "missing.db")]) == 2
    assert "no such project DB" in capsys.readouterr().err
    assert main(["triage"]) == 2


def test_cli_links_are_absolute(demo_copy, capsys, monkeypatch) -> None:  # noqa: ANN001 - pytest fixtures
    """`triage` prints links that open in a browser as they are: from --base-url, else $GCPC_PUBLIC_URL, else the
    address the committed config serves."""
    import json

    from annotations.tokens import default_base_url
    from gcpc_core.cli import main

    def links(*args: str) -> list[str]:
        assert main(["triage", "--db", str(demo_copy), "--json", "--limit", "3", *args]) == 0
        return [r["link"] for r in json.loads(capsys.readouterr().out)["disagreements"]]

    monkeypatch.delenv("GCPC_PUBLIC_URL", raising=False)
    assert all(link.startswith(default_base_url() + "/audit?trajectory=") for link in links())
    assert default_base_url().startswith("http://")
    monkeypatch.setenv("GCPC_PUBLIC_URL", "https://audit.example/gcpc/")
    assert all(link.startswith("https://audit.example/gcpc/audit?") for link in links())
    assert all(link.startswith("http://10.0.0.5:8600/audit?") for link in links("--base-url", "http://10.0.0.5:8600"))


def test_every_candidates_changes_equal_a_full_recomputation() -> None:
    """The figures are updated per candidate, not recomputed (the page ranks thousands at paper scale): on a synthetic
    project every candidate's AUC, mean partial credit and share changes equal those of rescoring the whole project
    with that one verdict corrected (scikit-learn's AUC of the raw-verdict scores, the condition's mean, the shares of
    `skills.transition_table`), and the share reported is the one that moves most in units of its width."""
    from sklearn.metrics import roc_auc_score

    from gcpc_core.analysis.skills import matched_pairs, transition_table
    from gcpc_core.analysis.synthetic import synthetic_frames

    f = synthetic_frames(n_tasks=6, n_pairs=30, n_unpaired=6, n_rated=4, n_raters=2, n_pref_pairs=2, seed=3)
    f["items"] = f["items"][f["items"]["judge"] == "gcpc"].reset_index(drop=True)
    f["scores"] = f["scores"][f["scores"]["judge"] == "gcpc"].reset_index(drop=True)
    f["audits"] = pd.DataFrame(columns=list(audit("t", "i", "r", True)))
    ranked = triage(f, base_url=APP)
    assert len(ranked) > 20

    def figures(items: pd.DataFrame) -> tuple[float, pd.Series, pd.Series]:
        v = score_variants(items).pivot(index="trajectory_id", columns="variant", values="partial_credit")
        s = f["scores"].drop(columns="partial_credit").assign(raw=lambda d: d["trajectory_id"].map(v["raw"]),
                                                              partial_credit=lambda d: d["trajectory_id"].map(v["full"]))
        auc = roc_auc_score(s["outcome"] == "PASS", s["raw"])
        table = transition_table(matched_pairs(s), threshold=0.10).set_index("transition")
        shares = pd.concat([table["share_improving"].rename(lambda t: f"improving {t}"),
                            table["share_regressing"].rename(lambda t: f"regressing {t}")])
        return auc, s.groupby("condition")["partial_credit"].mean(), shares

    auc0, pc0, shares0 = figures(f["items"])
    for row in ranked.itertuples():
        hit = (f["items"]["trajectory_id"] == row.trajectory_id) & (f["items"]["item_id"] == row.item_id)
        auc, pc, shares = figures(f["items"].assign(verdict_raw=f["items"]["verdict_raw"].mask(hit, row.proposed)))
        assert row.delta_auc == pytest.approx(auc - auc0, abs=1e-12), row
        assert row.delta_mean_pc == pytest.approx(pc[row.condition] - pc0[row.condition], abs=1e-12), row
        moved = (shares - shares0).dropna().round(12)
        if pd.isna(row.share):
            assert (moved == 0).all(), row
            continue
        assert row.delta_share == pytest.approx(moved[row.share], abs=1e-12), row
