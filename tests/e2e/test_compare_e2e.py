"""The compare page in a real browser, on the demo project: it opens on the probe judge's run against the
demo's SIMULATED second run, shows the figures `analysis.compare` computes for them, lists the differing
items, and a differing item opens in the item audit on run A's verdict, where run B's verdict is shown
beside it with its citations."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlparse

from playwright.sync_api import Locator, expect

from gcpc_core.project_frames import compare_project
from gcpc_core.demo import DEMO_SIMULATED_LABEL
from gcpc_core.review.audit import item_views
from gcpc_core.review.compare import run_choices
from gcpc_core.store import Store

from .helpers import App


def metric(app: App, label: str) -> Locator:
    """The value of the metric `label` (to be checked with `expect`, which waits for the run that draws it)."""
    box = app.main.locator('[data-testid="stMetric"]').filter(has_text=label).first
    return box.locator('[data-testid="stMetricValue"]')


def _equal(got: object, expected: object) -> None:
    assert got == expected, (got, expected)


def test_compare_page_shows_both_runs_and_opens_a_differing_item_with_both_verdicts(demo: App) -> None:
    store = Store(demo.server.db)
    probe = store.judging.default_labels()["probe"]
    expected = compare_project(store, probe, DEMO_SIMULATED_LABEL, n_boot=2000)
    assert len(expected.differing) > 0
    names = {r["key"]: r["name"] for r in run_choices(store)}
    name_a, name_b = names[f"probe={probe}"], names[f"probe={DEMO_SIMULATED_LABEL}"]

    demo.open("compare")
    expect(demo.title()).to_have_text("Compare runs")
    expect(demo.text("SIMULATED verdicts").first).to_be_visible()
    expect(demo.text(expected.headline(names), exact=True)).to_be_visible()
    # runs are named for a reader (judge · model · prompt · date), the full label in the tooltip; no raw backticks
    assert probe not in expected.headline(names) and name_a in expected.headline(names)
    expect(demo.combobox("Run A")).to_have_value(f"{name_a} · default")
    assert "`" not in demo.main.inner_text()
    demo.main.locator('[data-testid="stWidgetLabel"]').filter(has_text="Run A").locator(
        '[data-testid="stTooltipHoverTarget"]').hover()
    expect(demo.page.locator('[data-testid="stTooltipContent"]')).to_contain_text(probe)
    expect(metric(demo, "Items both judged")).to_have_text(str(expected.n_items), use_inner_text=True)
    expect(metric(demo, "Cohen's κ")).to_have_text(f"{expected.kappa:.3f}", use_inner_text=True)
    expect(metric(demo, "Same raw verdict")).to_have_text(f"{100 * expected.agreement:.1f}%", use_inner_text=True)
    expect(metric(demo, "ΔAUC (A − B)")).to_have_text(f"{expected.delta.iloc[0]['delta_auc']:+.3f}",
                                                      use_inner_text=True)
    expect(demo.main.get_by_role("heading", name=f"Items where the runs differ ({len(expected.differing)})")).to_be_visible()
    expect(demo.main.get_by_role("heading", name="Evidence sensitivity of each run")).to_be_visible()
    if expected.sensitivity.empty:  # the demo's runs are not perturbed unless a test perturbed them
        expect(demo.text(re.compile(r"^Neither run has perturbation results"))).to_be_visible()

    # a differing item whose verdicts both carry citations
    views = {}
    for row in expected.differing.itertuples(index=False):
        views = {v.item_id: v for v in item_views(store, row.trajectory_id, "probe")}
        view = views[row.item_id]
        if view.citations and view.other_runs and view.other_runs[0].citations:
            break
    else:
        raise AssertionError("no differing demo item has citations in both runs")
    assert demo.grid_cells(containing=row.trajectory_id)
    option = f"{row.trajectory_id} · {row.item_id} · A {row.verdict_a} / B {row.verdict_b}"
    demo.select("Open a differing item", option)
    link = demo.main.get_by_role("link", name="Audit A's verdict")

    def links_to_the_item() -> None:  # the link of the item shown before the pick, until the pick's run has drawn
        query = parse_qs(urlparse(link.get_attribute("href") or "").query)
        assert query == {"trajectory": [row.trajectory_id], "judge": ["probe"], "item": [row.item_id],
                         "label": [probe]}, query

    demo.eventually(links_to_the_item)

    demo.rerun(link.click)
    expect(demo.title()).to_have_text("Item audit")
    expect(demo.main.get_by_role("heading", name=row.trajectory_id)).to_be_visible()
    expect(demo.combobox("Run")).to_have_value(f"{name_a} · default")
    expect(demo.combobox("Item")).to_have_value(re.compile(rf"^{re.escape(row.item_id)} · "))
    other = view.other_runs[0]
    expect(demo.text(f"This item in probe's other labelled runs (raw verdicts; this run: {row.verdict_a})")).to_be_visible()
    expect(demo.text(f"{name_b}: {row.verdict_b}").first).to_be_visible()
    expect(demo.text(re.compile(r"SIMULATED verdicts \(demo\), not a judge run · DIFFERENT verdict$"))).to_be_visible()
    # both verdicts' citations: this run's and the other run's, each located in its event
    counts = [len(view.citations), len(other.citations)]
    for n in set(counts):
        expect(demo.text(f"Citations ({n})", exact=True)).to_have_count(counts.count(n))
    cite = other.citations[0]
    expect(demo.text(f"{cite.event_id} · {cite.event.kind}").first).to_be_visible()

    # the Run box switches the audited verdicts to run B's; the other run is then A's
    demo.select("Run", name_b)
    expect(demo.combobox("Item")).to_have_value(re.compile(rf"^{re.escape(row.item_id)} · .*{row.verdict_b}"))
    expect(demo.text(f"{name_a}: {row.verdict_a}").first).to_be_visible()
    demo.eventually(lambda: _equal(parse_qs(urlparse(demo.page.url).query)["label"], [DEMO_SIMULATED_LABEL]))
