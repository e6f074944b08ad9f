"""The review app in a real browser, on the demo project: item audit (evidence, agree, disagree, kept
after a reload), a checklist edit failing a gate, pair-diff navigation into the audit, the agreement
page's charts, and the study admin's export downloads."""

from __future__ import annotations

import csv
import io
import json
import re

from playwright.sync_api import expect

from annotations.audits import item_audit_history
from gcpc_core.review.audit import item_views
from gcpc_core.store import Store

from .helpers import App, highlighted


def fail_trajectory(store: Store) -> tuple[str, list]:
    """A FAIL trajectory whose probe verdicts include a No and a Yes, each with a verifier ref and a citation."""
    for traj in store.trials.trajectories():
        if traj.outcome != "FAIL":
            continue
        views = [v for v in item_views(store, traj.id, "probe") if v.citations and v.refs and v.quote and v.quote.span]
        if {"Yes", "No"} <= {v.verdict_raw for v in views}:
            return traj.id, views
    raise AssertionError("the demo has no FAIL trajectory with decided, cited items")


def test_item_audit_shows_evidence_records_agree_and_disagree_and_keeps_them(demo: App) -> None:
    store = Store(demo.server.db)
    traj_id, views = fail_trajectory(store)
    no_item = next(v for v in views if v.verdict_raw == "No")
    yes_item = next(v for v in views if v.verdict_raw == "Yes")

    # open the trajectory from the overview
    demo.open()
    expect(demo.title()).to_have_text("Overview")
    demo.select("Open a trajectory", traj_id, filter_text=traj_id)
    demo.rerun(demo.main.get_by_role("link", name="Open in item audit").click)
    expect(demo.title()).to_have_text("Item audit")
    expect(demo.main.get_by_role("heading", name=traj_id)).to_be_visible()
    expect(demo.page).to_have_url(re.compile(re.escape(f"trajectory={traj_id}")))

    # the reviewer's name, set in the sidebar
    reviewer = demo.sidebar.get_by_role("textbox", name="Reviewer")
    reviewer.fill("e2e-alice")
    demo.rerun(lambda: reviewer.press("Enter"))

    # a No item: task quote, verifier ref with its CTRF status, cited evidence
    demo.select("Item", re.compile(rf"^{no_item.item_id} · "))
    expect(demo.text("instruction.md lines")).to_be_visible()
    expect(highlighted(demo, no_item.quote.quote[:60]).first).to_be_visible()
    ref = no_item.refs[0]
    expect(demo.text(ref.ref).first).to_be_visible()
    expect(demo.main.locator('[data-testid="stBadge"], span').filter(has_text=f"CTRF {ref.status}").first).to_be_visible()
    cite = no_item.citations[0]
    expect(demo.text(f"{cite.event_id} · {cite.event.kind}").first).to_be_visible()
    expect(highlighted(demo, cite.quote[:60]).first).to_be_visible()

    # agree with the keyboard (A)
    demo.press("a")
    expect(demo.text(re.compile(r"e2e-alice: agree$")).first).to_be_visible()

    # next / previous item with the keyboard (J / K)
    ids = [v.item_id for v in item_views(store, traj_id, "probe")]
    following = ids[ids.index(no_item.item_id) + 1]
    demo.press("j")
    expect(demo.combobox("Item")).to_have_value(re.compile(rf"^{following} · "))
    demo.press("k")
    expect(demo.combobox("Item")).to_have_value(re.compile(rf"^{no_item.item_id} · "))

    # the Yes item: disagree, with a corrected verdict and a note, by mouse
    demo.select("Item", re.compile(rf"^{yes_item.item_id} · "))
    expect(demo.text("Audit history (0)")).to_be_visible()
    corrected = demo.main.get_by_role("radiogroup", name="Corrected verdict (if you disagree)")
    expect(corrected.get_by_role("radio", name="No")).not_to_be_checked()  # nothing preset: the auditor chooses
    demo.click(corrected.get_by_role("radio", name="Abstain"))
    expect(corrected.get_by_role("radio", name="Abstain")).to_be_checked()
    demo.main.get_by_role("textbox", name="Note (optional)").fill("e2e: the cited output is stale")
    demo.click(demo.button("Disagree"))
    expect(demo.text("e2e-alice: disagree → Abstain — e2e: the cited output is stale")).to_be_visible()

    # a reload is a new session: both audits come back from the project DB
    demo.page.reload()
    demo.settled()
    expect(demo.main.get_by_role("heading", name=traj_id)).to_be_visible()
    expect(demo.text("e2e-alice: disagree → Abstain — e2e: the cited output is stale")).to_be_visible()
    demo.select("Item", re.compile(rf"^{no_item.item_id} · "))
    expect(demo.text(re.compile(r"e2e-alice: agree$")).first).to_be_visible()
    expect(demo.combobox("Trajectory")).to_have_value(re.compile(rf"^{re.escape(traj_id)} · FAIL · .* · audited 2/"))

    # next / previous trajectory with the keyboard (N / P)
    demo.press("n")
    expect(demo.main.get_by_role("heading", name=traj_id)).to_have_count(0)
    demo.press("p")
    expect(demo.main.get_by_role("heading", name=traj_id)).to_be_visible()

    stored = {item: item_audit_history(store, trajectory_id=traj_id, item_id=item, judge="probe")
              for item in (no_item.item_id, yes_item.item_id)}
    assert [(h.rater, h.value["agree"]) for h in stored[no_item.item_id]] == [("e2e-alice", True)]
    [disagreed] = stored[yes_item.item_id]
    assert disagreed.rater == "e2e-alice" and disagreed.value["agree"] is False, disagreed
    assert disagreed.value["verdict"] == "Abstain", disagreed
    assert disagreed.note == "e2e: the cited output is stale"


def test_checklist_edit_that_fails_a_gate_shows_why_and_cannot_be_saved(demo: App) -> None:
    store = Store(demo.server.db)
    task_id = sorted(t.id for t in store.trials.tasks())[0]
    versions_before = len(store.checklists.list(task=task_id, status=None))
    demo.open("checklists")
    expect(demo.title()).to_have_text("Checklists")
    demo.select("Task", task_id)
    demo.tab("Edit by hand")
    demo.main.get_by_text("Advanced: the checklist as YAML (stays in sync with the form)").click()  # the YAML view
    editor = demo.main.get_by_role("textbox", name="Checklist (YAML or JSON, the checklist-file schema)")
    expect(editor).to_be_visible()
    expect(editor).to_have_value(re.compile("task_quote:"))  # the chosen task's checklist, once its run has drawn
    text = editor.input_value()
    assert "task_quote:" in text, text[:400]
    expect(demo.text("Every gate passes: this can be saved as a new frozen version.")).to_be_visible()

    # the first item's quote no longer appears in the instruction: gate G1 must object
    edited, n = re.subn(r"task_quote: .*", "task_quote: This sentence is nowhere in the instruction.", text, count=1)
    assert n == 1
    editor.fill(edited)
    demo.rerun(lambda: editor.press("Control+Enter"))
    expect(demo.text(re.compile(r"^1 gate failure\(s\): fix them to save\.$"))).to_be_visible()
    expect(demo.button("Save as a new version")).to_be_disabled()
    cells = demo.grid_cells(demo.main.locator(".st-key-checklists-edit-gate-table"), containing="fail")
    assert "G1" in cells and "fail" in cells, cells
    expect(demo.text(re.compile(r"^G1 verbatim quote: task quote not found verbatim in instruction\.md"))).to_be_visible()
    assert len(store.checklists.list(task=task_id, status=None)) == versions_before  # nothing stored

    # putting the quote back clears the failure
    editor.fill(text)
    demo.rerun(lambda: editor.press("Control+Enter"))
    expect(demo.text("Every gate passes: this can be saved as a new frozen version.")).to_be_visible()
    expect(demo.button("Save as a new version")).to_be_enabled()


def test_pair_diff_links_into_the_audit_of_one_side(demo: App) -> None:
    demo.open("pairs")
    expect(demo.title()).to_have_text("Skill pairs")
    expect(demo.main.locator('[data-testid="stPlotlyChart"]').first).to_be_visible()
    expect(demo.text(re.compile(r"^\d+ of \d+ items changed"))).to_be_visible()
    # the pair shown: each side names its trajectory in its first text line
    sides = demo.main.locator('[data-testid="stColumn"]').filter(has_text="Skills side")
    with_side = demo.main.get_by_role("link", name="Audit the with-Skills side")
    expect(with_side).to_be_visible()
    href = with_side.get_attribute("href") or ""
    traj_id = re.search(r"trajectory=([^&]+)", href).group(1)
    assert "judge=" in href, href
    expect(sides.filter(has_text=traj_id)).not_to_have_count(0)
    demo.rerun(with_side.click)
    expect(demo.title()).to_have_text("Item audit")
    expect(demo.main.get_by_role("heading", name=traj_id)).to_be_visible()
    expect(demo.text(re.compile(r" · with-skills · trial #"))).to_be_visible()
    expect(demo.page).to_have_url(re.compile(re.escape(f"trajectory={traj_id}")))


def test_agreement_page_draws_its_charts(demo: App) -> None:
    demo.open("agreement")
    expect(demo.title()).to_have_text("Agreement")
    demo.click(demo.main.get_by_text("Outcome discrimination: AUC vs official PASS", exact=True))
    charts = demo.main.locator('[data-testid="stPlotlyChart"]')
    expect(charts.first).to_be_visible()
    expect(charts.nth(1)).to_be_attached()  # at least two charts
    # plotly really drew: an SVG with data traces, not an empty frame (drawn after the SVG, by plotly's own timer)
    expect(charts.first.locator("svg.main-svg").first).to_be_visible()
    expect(charts.first.locator("g.trace, g.barlayer, g.scatterlayer").first).to_be_attached()
    expect(demo.text("Item auditors vs judges", exact=True)).to_be_visible()
    expect(demo.text(re.compile(r"SIMULATED raters"))).to_be_visible()


def test_study_admin_export_downloads_parse(demo: App) -> None:
    demo.open("study_admin")
    expect(demo.title()).to_have_text("Human study")
    demo.tab("Export and import")
    with demo.page.expect_download() as info:
        demo.button("Download CSV").click()
    download = info.value
    assert download.suggested_filename.endswith("-responses.csv"), download.suggested_filename
    body = open(download.path(), encoding="utf-8").read()
    rows = list(csv.DictReader(io.StringIO(body)))
    assert rows and {"rater", "is_current"} <= set(rows[0]), list(rows[0])[:20]

    with demo.page.expect_download() as info:
        demo.button("Download JSONL (design + responses)").click()
    lines = [json.loads(line) for line in open(info.value.path(), encoding="utf-8") if line.strip()]
    assert len(lines) > len(rows) // 2 and all(isinstance(x, dict) for x in lines)


def test_admin_creates_a_study_its_link_opens_the_rate_page_and_closing_keeps_the_selection(demo: App) -> None:
    demo.open("study_admin")
    expect(demo.title()).to_have_text("Human study")
    base = demo.main.get_by_role("textbox", name="App URL for rater links")
    base.fill(demo.server.url)
    demo.rerun(lambda: base.press("Enter"))

    demo.main.get_by_text("Create a study", exact=True).click()
    form = demo.main.locator('[data-testid="stForm"]').filter(has_text="Create and freeze")
    for label, value in (("Tasks", "1"), ("Trajectories per task", "2"), ("Raters per unit", "1"), ("Seed", "5")):
        form.get_by_role("spinbutton", name=label).fill(value)
    form.get_by_role("textbox", name="Raters (comma-separated names)").fill("e2e-rater")
    form.get_by_role("spinbutton", name=re.compile(r"^Pairs per task")).fill("0")
    form.get_by_role("textbox", name="Study name (optional)").fill("E2E study")
    demo.click(form.get_by_role("button", name="Create and freeze"), must_run=True)
    expect(demo.text("Study created and frozen.")).to_be_visible()
    link = demo.main.locator('[data-testid="stCode"]').filter(has_text="/rate?token=").first.inner_text().strip()
    assert link.startswith(f"{demo.server.url}/rate?token="), link
    expect(demo.combobox("Study")).to_have_value(re.compile(r"^E2E study · .* · open$"))

    # closing the chosen study keeps it chosen (its label changes from "open" to "closed")
    demo.click(demo.button(re.compile(r"^Close study")))
    expect(demo.combobox("Study")).to_have_value(re.compile(r"^E2E study · .* · closed$"))
    expect(demo.button("Reopen study")).to_be_visible()
    demo.click(demo.button("Reopen study"))
    expect(demo.combobox("Study")).to_have_value(re.compile(r"^E2E study · .* · open$"))
    studies = {s.name: s.status for s in Store(demo.server.db).studies.list()}
    assert studies["E2E study"] == "open" and studies["Demo study (SIMULATED raters)"] == "open", studies

    # the link shown once works for its rater
    demo.page.goto(link)
    demo.settled()
    expect(demo.title()).to_have_text("Rating study")
    expect(demo.text(re.compile(r"^0 of \d+ answered$"))).to_be_visible()
