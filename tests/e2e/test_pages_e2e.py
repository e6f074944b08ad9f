"""Review pages in a real browser, on a private copy of the demo project: evidence highlighted inside
its source line, Skill pairs opening on the most informative pair with both sides' evidence, the
Agreement headline, and the item audit's D flow (it asks for the verdict; counts follow at once)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import copy_db
from playwright.sync_api import expect

from gcpc_core.project_frames import frames_from_store
from gcpc_core.review.audit import item_views
from gcpc_core.review.pairs import most_informative_pair, pair_items, pair_label, pairs_table
from gcpc_core.store import Store

from .conftest import REVIEWER
from .helpers import HIGHLIGHT, App, Server, Watch, excerpt_rows, highlighted, running, server_env


@pytest.fixture(scope="module")
def pages_server(demo_master: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """The app on its own demo copy: these tests write audits that other e2e tests must not see."""
    root = tmp_path_factory.mktemp("e2e-pages")
    db = copy_db(demo_master, root / "demo.db")
    with running(Server("pages", db, root / "server.log", server_env(db, root / "home", GCPC_REVIEWER=REVIEWER))) as s:
        yield s


@pytest.fixture
def app(pages_server: Server, page, watch: Watch) -> App:  # noqa: ANN001 - playwright's Page
    return App(page, pages_server, watch)


def assert_lines_intact(app: App, excerpt, quote: str) -> None:  # noqa: ANN001 - a Locator
    """Each source line is one row, numbered consecutively; the marked part sits inside its row and is
    part of the quote; the mark is drawn with a background (the sanitizer kept its style)."""
    rows = excerpt_rows(excerpt)
    numbers = [int(r["number"]) for r in rows]
    assert numbers == list(range(numbers[0], numbers[0] + len(rows))), rows
    marked = [r for r in rows if r["marked"]]
    assert marked, rows
    flat = " ".join(quote.split())
    for r in marked:
        assert r["marked"] in r["text"] and " ".join(r["marked"].split()) in flat, r
        assert r["background"] not in (None, "rgba(0, 0, 0, 0)", "transparent"), r


def test_pairs_open_on_the_most_informative_pair_with_both_sides_evidence(app: App) -> None:
    store = Store(app.server.db)
    pairs = pairs_table(frames_from_store(store)["scores"], judge="probe")
    best = pairs.iloc[most_informative_pair(pairs)]
    assert best["outcome_without"] == best["outcome_with"] and abs(best["delta"]) > 0
    items = pair_items(store, best["trajectory_id_without"], best["trajectory_id_with"], "probe")
    first_changed = items[items["changed"]].iloc[0]

    app.open("pairs")
    expect(app.title()).to_have_text("Skill pairs")
    expect(app.combobox("Pair")).to_have_value(pair_label(best))
    expect(app.main.get_by_role("heading", name="Evidence side by side")).to_be_visible()
    expect(app.combobox("Changed item")).to_have_value(re.compile(rf"^{first_changed['item_id']} · "))
    for side in ("Without Skills", "With Skills"):
        expect(app.text(side, exact=True).nth(1)).to_be_visible()  # the pair's header, then the evidence column
    expect(app.text(re.compile(r"^Citations \(\d+\)$")).nth(1)).to_be_visible()
    quotes = {c.quote for side in ("without", "with")
              for v in item_views(store, best[f"trajectory_id_{side}"], "probe") if v.item_id == first_changed["item_id"]
              for c in v.citations}
    excerpts = app.main.locator(HIGHLIGHT).locator("visible=true")
    expect(excerpts.first).to_be_visible()
    assert quotes
    for k in range(excerpts.count()):
        text = excerpts.nth(k).inner_text()
        quote = next(q for q in quotes if any(" ".join(p.split()) in " ".join(text.split())
                                              for p in q.split("\n") if p.strip()))
        assert_lines_intact(app, excerpts.nth(k), quote)
    assert not app.watch.errors, app.watch.errors


_CUT_JS = """() => [...document.querySelectorAll('[data-testid="stMain"] *')]
  .filter(e => getComputedStyle(e).textOverflow === 'ellipsis' && e.scrollWidth > e.clientWidth + 1 && e.textContent.trim())
  .map(e => e.textContent.trim())"""
"""Texts of the main area cut short with an ellipsis (an element narrower than what it holds)."""


@pytest.mark.parametrize("width", [1400, 1000])
@pytest.mark.parametrize("path", ["agreement", "study_admin"])
def test_no_label_value_or_button_is_cut_short(app: App, path: str, width: int) -> None:
    """The Agreement headline's values with their intervals, its labels and toggles, the study's buttons:
    whole at a wide and at a narrow window."""
    app.page.set_viewport_size({"width": width, "height": 1000})
    app.open(path)
    if path == "agreement":
        expect(app.main.locator('[data-testid="stMetric"]').first).to_be_visible()
    app.page.wait_for_timeout(500)  # layout done
    assert app.page.evaluate(_CUT_JS) == []


def test_agreement_leads_with_the_headline_and_opens_details_on_demand(app: App) -> None:
    app.open("agreement")
    expect(app.title()).to_have_text("Agreement")
    headline = app.main.get_by_role("heading", name="Headline")
    details = app.main.get_by_role("heading", name="Details")
    expect(headline).to_be_visible()
    assert headline.bounding_box()["y"] < details.bounding_box()["y"]
    auc = app.main.locator('[data-testid="stMetric"]').filter(has_text="AUC · probe")
    # the headline reads raw verdicts (0.802; the postprocessed score, which holds the outcome, reads 0.995)
    expect(auc.locator('[data-testid="stMetricValue"]')).to_have_text(re.compile(r"^0\.802 \[0\.\d{3}, 0\.\d{3}\]$"))
    expect(app.text(re.compile(r"^Interval unreliable: only 3 tasks .*A PASS run outscores a FAIL run \d+% of the "
                               r"time")).first).to_be_visible()
    expect(app.main.get_by_text(re.compile(r"^Only 3 tasks: every task-clustered interval"))).to_be_visible()
    delta = app.main.locator('[data-testid="stMetric"]').filter(has_text="Paired ΔAUC")
    expect(delta.locator('[data-testid="stMetricValue"]')).to_have_text("not computed")
    expect(app.text("Paired ΔAUC needs at least two judges.")).to_be_visible()
    for label in ("Pairwise agreement · probe", "Pairwise agreement · humans with each other", "Spearman ρ · probe",
                  "α · progress ratings · humans"):
        expect(app.main.locator('[data-testid="stMetric"]').filter(has_text=label).first).to_be_visible()
    # the raw tables and charts wait in closed sections
    assert app.main.locator('[data-testid="stDataFrame"]').count() == 0
    assert app.main.locator('[data-testid="stPlotlyChart"]').count() == 0
    app.click(app.main.get_by_text("Outcome discrimination: AUC vs official PASS", exact=True))
    charts = app.main.locator('[data-testid="stPlotlyChart"]')
    expect(charts.first.locator("svg.main-svg").first).to_be_visible()
    expect(app.text("AUC per judge, from outcome-free scores (raw verdicts)", exact=True)).to_be_visible()
    expect(app.main.locator('[data-testid="stDataFrame"]').first).to_be_visible()
    assert not app.watch.errors, app.watch.errors


def test_audit_d_asks_for_the_verdict_and_the_counts_follow_at_once(app: App) -> None:
    store = Store(app.server.db)
    traj = next(t for t in store.trials.trajectories() if t.outcome == "FAIL"
                and any(v.verdict_raw == "Yes" and v.citations for v in item_views(store, t.id, "probe")))
    views = item_views(store, traj.id, "probe")
    yes = next(v for v in views if v.verdict_raw == "Yes" and v.citations)
    n_items = sum(v.auditable for v in views)
    app.open("audit", trajectory=traj.id, judge="probe", item=yes.item_id)
    expect(app.main.get_by_role("heading", name=traj.id)).to_be_visible()
    expect(app.combobox("Trajectory")).to_have_value(re.compile(rf" · audited 0/{n_items}$"))
    # the cited evidence: its line shown once, the quote marked inside it
    cite = yes.citations[0]
    assert_lines_intact(app, highlighted(app, cite.quote.split("\n")[0][:40]).first, cite.quote)

    corrected = app.main.get_by_role("radiogroup", name="Corrected verdict (if you disagree)")
    for verdict in ("No", "Abstain"):
        expect(corrected.get_by_role("radio", name=verdict)).not_to_be_checked()  # nothing pre-selected
    app.press("d")
    expect(app.text(re.compile(r"^You disagree with the judge's Yes\. Which verdict is right\? 1 = No · 2 = Abstain$"))
           ).to_be_visible()
    assert store.annotations.list(kind="item_audit") == []  # D alone stored nothing
    app.press("2")
    expect(app.page.locator('[data-testid="stToast"]').filter(has_text="Audit saved: disagree → Abstain")).to_be_visible()
    expect(app.combobox("Trajectory")).to_have_value(re.compile(rf" · audited 1/{n_items} · 1 auditor disagreements$"))
    expect(app.combobox("Item")).to_have_value(re.compile(rf"^{yes.item_id} · .* · audited · auditors disagree$"))
    expect(app.text(re.compile(rf"{REVIEWER}: disagree → Abstain$")).first).to_be_visible()
    expect(app.text(re.compile(r"^You disagree with the judge's"))).to_have_count(0)
    [audit] = store.annotations.list(kind="item_audit")
    assert audit.item_id == yes.item_id and audit.value == {"agree": False, "verdict": "Abstain", "selection": "chosen"}, audit

    # A on the next item: the trajectory's count follows without a reload
    app.press("j")
    expect(app.combobox("Item")).not_to_have_value(re.compile(rf"^{yes.item_id} · "))
    app.press("a")
    expect(app.combobox("Trajectory")).to_have_value(re.compile(rf" · audited 2/{n_items} · "))
    assert len(store.annotations.list(kind="item_audit")) == 2
    assert not app.watch.errors, app.watch.errors
