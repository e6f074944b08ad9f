"""The blinded rater page in a real browser, on the demo study's open seat (`demo-you`): a link issued
with `python -m gcpc_core study link`, a progress rating and a pairwise preference answered with the
keyboard shortcuts, answers kept, guidelines one key away."""

from __future__ import annotations

import re
import subprocess
import sys

from playwright.sync_api import expect

from annotations import DEMO_STUDY_ID
from annotations.simulate import DEMO_HUMAN_RATER
from annotations.study import RaterSession, open_rater_session
from gcpc_core.store import Store

from .helpers import REPO, App


def issue_link(app: App, rater: str = DEMO_HUMAN_RATER) -> str:
    """A rater link from the command line, exactly as an organiser issues it."""
    out = subprocess.run([sys.executable, "-m", "gcpc_core", "study", "link", "--db", str(app.server.db),
                          "--study", DEMO_STUDY_ID, "--rater", rater, "--base-url", app.server.url],
                         cwd=REPO, capture_output=True, text=True, timeout=120, check=True).stdout
    link = re.search(rf"^{re.escape(rater)}: (\S+)$", out, re.M).group(1)
    assert link.startswith(f"{app.server.url}/rate?token="), link
    return link


def open_link(app: App, link: str) -> RaterSession:
    app.page.goto(link)
    app.settled()
    expect(app.title()).to_have_text("Rating study")
    session = open_rater_session(Store(app.server.db), link.split("token=", 1)[1])
    assert session is not None
    return session


def rater_only(app: App) -> None:
    """The rate page and nothing else: no navigation, no sidebar, no 'page not found'."""
    assert app.page.locator('[data-testid="stSidebarNav"]').count() == 0
    assert app.page.locator('[data-testid="stSidebar"]').count() == 0
    expect(app.page.get_by_text("Page not found")).to_have_count(0)
    assert not [m for m in app.watch.console if "does not seem to exist" in m], app.watch.console
    assert not app.watch.dialogs


def go_to(app: App, session: RaterSession, kind: str) -> tuple[int, str]:
    """Jump (item chooser) to the first unanswered item of `kind`; returns its index and target."""
    queue = session.queue()
    item = next(i for i in queue if i.kind == kind and not i.answered)
    name = {"progress_rating": "Progress rating", "preference": "Which made more progress?"}[kind]
    app.select("Item", re.compile(rf"^{item.index + 1} · {re.escape(name)} · {item.target}"), filter_text=item.target)
    expect(app.main.locator("h3").filter(has_text=f"{item.index + 1} of {len(queue)} · {name} · {item.target}")
           ).to_be_visible()
    return item.index, item.target


def primary(app: App, label: str | re.Pattern):  # noqa: ANN201 - a Locator
    return app.main.locator('[data-testid="stBaseButton-primary"]').filter(has_text=label).locator("visible=true")


def test_progress_rating_with_keyboard_shortcuts_is_saved_and_kept(demo: App) -> None:
    session = open_link(demo, issue_link(demo))
    rater_only(demo)
    index, unit = go_to(demo, session, "progress_rating")
    expect(demo.text("What the agent did")).to_be_visible()
    save = demo.button("Save and next")
    expect(save).to_be_disabled()

    demo.press("4")  # rate 4
    expect(primary(demo, re.compile(r"^4 · ")).first).to_be_visible()
    expect(save).to_be_enabled()
    demo.press("2")  # changed my mind: 2
    expect(primary(demo, re.compile(r"^2 · ")).first).to_be_visible()
    expect(primary(demo, re.compile(r"^4 · "))).to_have_count(0)

    note = demo.main.get_by_role("textbox", name="Comment (optional)")
    note.fill("e2e: stopped after reading the CSV")
    demo.rerun(lambda: note.press("Control+Enter"))  # save and next, straight from the comment box
    expect(demo.toast("Saved.")).to_be_visible()
    expect(demo.main.locator("h3").filter(has_text=unit)).to_have_count(0)  # moved on to an open item

    answer = session.answer("progress_rating", unit)
    assert answer is not None and answer.value["rating"] == 2, answer
    assert answer.note == "e2e: stopped after reading the CSV", answer

    # back to it (the item chooser): the saved answer is shown, and kept across a reload
    demo.page.reload()
    demo.settled()
    name = "Progress rating"
    demo.select("Item", re.compile(rf"^{index + 1} · {name} · {unit} ✓$"), filter_text=unit)
    expect(demo.text("Your saved answer: version 1 of 1")).to_be_visible()
    expect(primary(demo, re.compile(r"^2 · ")).first).to_be_visible()
    expect(demo.main.get_by_role("textbox", name="Comment (optional)")).to_have_value(
        "e2e: stopped after reading the CSV")
    rater_only(demo)


def test_pairwise_preference_with_keyboard_shortcuts_and_guidelines(demo: App) -> None:
    session = open_link(demo, issue_link(demo))
    index, pair = go_to(demo, session, "preference")
    expect(demo.text("Record A")).to_be_visible()
    expect(demo.text("Record B")).to_be_visible()
    save = demo.button("Save and next")
    expect(save).to_be_disabled()

    demo.press("b")  # B made more progress
    expect(primary(demo, "B made more progress").first).to_be_visible()
    expect(save).to_be_disabled()  # a confidence is still missing
    demo.press("3")  # confidence 3
    expect(primary(demo, re.compile(r"^3 · ")).first).to_be_visible()
    demo.press("t")  # a tie after all
    expect(primary(demo, re.compile(r"^Tie")).first).to_be_visible()
    expect(save).to_be_enabled()
    demo.press("Control+Enter")
    expect(demo.toast("Saved.")).to_be_visible()
    answer = session.answer("preference", pair)
    assert answer is not None and answer.value["choice"] == "tie" and answer.confidence == 3, answer

    # guidelines (G) open in a dialog and close with Escape
    demo.press("g")
    dialog = demo.page.get_by_role("dialog")
    expect(dialog).to_be_visible()
    expect(dialog.get_by_text("Rater guidelines", exact=True)).to_be_visible()
    demo.page.keyboard.press("Escape")
    expect(dialog).to_have_count(0)

    # previous / next (P / N) step through the queue
    heading = demo.main.locator("h3").first
    start = int(re.match(r"(\d+) of", heading.inner_text()).group(1))
    demo.press("n" if start == 1 else "p")
    expect(heading).not_to_have_text(re.compile(rf"^{start} of"))
    moved = int(re.match(r"(\d+) of", heading.inner_text()).group(1))
    assert moved == (2 if start == 1 else start - 1)


def test_a_reissued_link_replaces_the_old_one(demo: App) -> None:
    old = issue_link(demo)
    new = issue_link(demo)  # the organiser issues a new link: the old one stops working
    demo.page.goto(old)
    demo.settled()
    expect(demo.main.get_by_text("This link is not valid. Please ask the study organisers for a new one.")
           ).to_be_visible()
    assert demo.main.locator("h1").count() == 0 and demo.page.locator('[data-testid="stSidebar"]').count() == 0
    open_link(demo, new)
    rater_only(demo)


def test_a_link_revoked_while_the_page_is_open_saves_nothing(demo: App) -> None:
    """The page was opened with a good link; the organiser replaces it; the rater then clicks Save."""
    from annotations import issue_link as reissue

    session = open_link(demo, issue_link(demo))
    _, unit = go_to(demo, session, "progress_rating")
    demo.press("4")
    save = demo.button("Save and next")
    expect(save).to_be_enabled()
    store = Store(demo.server.db)
    before = len(store.annotations.list(study_id=DEMO_STUDY_ID, rater=DEMO_HUMAN_RATER, current=False))
    reissue(store, DEMO_STUDY_ID, DEMO_HUMAN_RATER)  # revoked in the store, behind the open page's back
    demo.click(save)
    expect(demo.main.get_by_text("This link is not valid. Please ask the study organisers for a new one.")
           ).to_be_visible()
    expect(demo.toast("Saved.")).to_have_count(0)
    assert session.answer("progress_rating", unit) is None
    assert len(store.annotations.list(study_id=DEMO_STUDY_ID, rater=DEMO_HUMAN_RATER, current=False)) == before
