"""Disagreement triage on a constructed project whose ranking and figure changes are known by hand."""

from __future__ import annotations

from urllib.parse import parse_qs, urlparse

import pandas as pd
import pytest

from gcpc_core.analysis.triage import KINDS, audit_link, disagreements, item_verdicts, rank_disagreements, triage

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


def frames() -> dict[str, pd.DataFrame]:
    items, scores = [], []
    for traj, (task, condition, outcome, rows) in PROJECT.items():
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
    ctrf = pd.DataFrame({"trajectory_id": ["a-wo", "b-w", "b-wo"], "test": [T + "f", T + "p", T + "f"],
                         "status": ["failed", "passed", "failed"]})

    def audit(traj: str, item: str, rater: str, agree: bool, verdict: str | None = None) -> dict:
        return {"trajectory_id": traj, "judge": "gcpc", "item_id": item, "rater": rater, "agree": agree,
                "verdict": verdict, "created_at": "2026-01-01", "is_simulated": False}

    audits = pd.DataFrame([
        audit("b-wo", "C2", "bob", False, "Yes"), audit("b-wo", "C2", "carol", False, "Yes"),   # C
        audit("b-wo", "C3", "bob", True), audit("b-wo", "C3", "carol", False, "No"),            # D: split
        audit("b-w", "C2", "dave", False, "No"),                                                 # F
        audit("a-w", "C1", "dave", True),                                                        # agreement only
    ])
    return {"items": pd.DataFrame(items), "scores": pd.DataFrame(scores), "ctrf": ctrf, "audits": audits}


def test_item_verdicts_gather_verifier_and_auditors() -> None:
    f = frames()
    v = item_verdicts(f["items"], f["ctrf"], f["audits"]).set_index(["trajectory_id", "item_id"])
    assert "ENDPOINT" not in v.index.get_level_values("item_id")
    assert v.loc[("a-wo", "C1"), "verifier"] == "No" and v.loc[("b-w", "C1"), "verifier"] == "Yes"
    assert pd.isna(v.loc[("a-w", "C2"), "verifier"])
    assert v.loc[("b-wo", "C3"), "split"] and pd.isna(v.loc[("b-wo", "C3"), "consensus"])
    assert v.loc[("b-wo", "C3"), "dissent"] == "No" and v.loc[("b-wo", "C2"), "consensus"] == "Yes"
    assert pd.isna(v.loc[("a-w", "C1"), "dissent"]) and v.loc[("a-w", "C1"), "n_auditors"] == 1


def test_ranking_and_figure_changes_by_hand() -> None:
    f = frames()
    found = disagreements(item_verdicts(f["items"], f["ctrf"], f["audits"]))
    ranked = rank_disagreements(found, f["items"], f["scores"], base_url=APP, threshold=0.35)
    got = [(r.trajectory_id, r.item_id, r.kind, r.proposed) for r in ranked.itertuples()]
    assert got == [
        ("a-wo", "C1", KINDS[0], "No"),    # B: pair a's Δ .286 → .429 crosses the threshold: share improving +.5
        ("b-w", "C2", KINDS[1], "No"),     # F: b-w 1 → 2/3 falls below a-wo's 5/7: AUC 1 → .75
        ("b-wo", "C2", KINDS[1], "Yes"),   # C: b-wo 1/4 → 2/4: mean without-skills +.125
        ("b-wo", "C3", KINDS[1], "No"),    # D: b-wo 1/4 → 0: mean −.125 (both kinds)
        ("b-wo", "C3", KINDS[2], "No"),
        ("b-w", "C1", KINDS[0], "Yes"),    # A: official PASS already counts it Yes: moves nothing
    ]
    r = ranked.set_index(["trajectory_id", "item_id", "kind"])
    b = r.loc[("a-wo", "C1", KINDS[0])]
    assert b["delta_share"] == pytest.approx(0.5) and b["delta_auc"] == pytest.approx(0.0)
    assert b["delta_mean_pc"] == pytest.approx((4 / 7 - 5 / 7) / 2) and b["impact"] == pytest.approx(0.5)
    fr = r.loc[("b-w", "C2", KINDS[1])]
    assert fr["delta_auc"] == pytest.approx(-0.25) and fr["delta_mean_pc"] == pytest.approx((2 / 3 - 1) / 2)
    assert fr["delta_share"] == pytest.approx(0.0) and fr["impact"] == pytest.approx(0.25)
    assert r.loc[("b-wo", "C2", KINDS[1]), "delta_mean_pc"] == pytest.approx(0.125)
    assert r.loc[("b-wo", "C3", KINDS[2]), "auditors"] == "bob: Yes; carol: No"
    a = r.loc[("b-w", "C1", KINDS[0])]
    assert a["impact"] == 0.0 and a["delta_mean_pc"] == 0.0
    assert ranked["rank"].tolist() == list(range(1, 7))


def test_links_open_the_item_audit_and_carry_no_secret() -> None:
    """Links are absolute (they work pasted outside the app) and name one item verdict, nothing else."""
    f = frames()
    ranked = triage(f, base_url=APP, threshold=0.35)
    url = urlparse(ranked["link"].iloc[0])
    assert (url.scheme, url.netloc, url.path) == ("https", "gcpc.example:8443", "/base/audit")
    assert parse_qs(url.query) == {"trajectory": ["a-wo"], "judge": ["gcpc"], "item": ["C1"]}
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

    # an audit disagreeing with the judge becomes a judge vs auditor row, ranked with the others
    top = out["disagreements"][0]
    record_item_audit(store, trajectory_id=top["trajectory_id"], item_id=top["item_id"], judge="probe",
                      reviewer="alice", agree=False, corrected_verdict=top["proposed"])
    assert main(["triage", "--db", str(demo_copy), "--json"]) == 0
    kinds = {(r["trajectory_id"], r["item_id"], r["kind"]) for r in json.loads(capsys.readouterr().out)["disagreements"]}
    assert (top["trajectory_id"], top["item_id"], "judge vs auditor") in kinds

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
