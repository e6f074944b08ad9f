"""The app in a real browser on the real SkillsBench sample (`../shared/skillsbench`; skipped when absent):
an item audit of a real Claude Code run with its evidence, the log viewer's search, and the blinded rater
page over real logs (no outcome, model, agent, condition or trajectory id reaches the browser)."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from annotations.audits import item_audit_history
from annotations.study import open_rater_session
from gcpc_core.review.audit import item_views
from gcpc_core.store import Store

from .helpers import App, highlighted

pytestmark = pytest.mark.skillsbench


def decided_item(store: Store):  # noqa: ANN201 - (trajectory id, ItemView)
    """A FAIL trajectory's item with a Yes/No verdict, a located task quote, a verifier ref and a citation."""
    for traj in store.trials.trajectories():
        if traj.outcome != "FAIL":
            continue
        for view in item_views(store, traj.id, "probe"):
            if view.verdict_raw in ("Yes", "No") and view.citations and view.refs and view.quote and view.quote.span:
                return traj.id, view
    raise AssertionError("no decided, cited item on a FAIL trajectory of the real sample")


def test_real_trajectory_audit_with_evidence_and_log_search(real: App) -> None:
    store = Store(real.server.db)
    traj_id, view = decided_item(store)
    real.open("audit", trajectory=traj_id, judge="probe", item=view.item_id)
    expect(real.main.get_by_role("heading", name=traj_id)).to_be_visible()
    expect(real.text(re.compile(r"^instruction\.md lines \d+–\d+"))).to_be_visible()
    expect(highlighted(real, view.quote.quote[:50]).first).to_be_visible()
    expect(real.text(view.refs[0].ref).first).to_be_visible()
    cite = view.citations[0]
    expect(real.text(f"{cite.event_id} · {cite.event.kind}").first).to_be_visible()
    expect(highlighted(real, cite.quote[:50]).first).to_be_visible()
    real.click(real.button("Agree"))
    expect(real.text(re.compile(r"e2e-reviewer: agree$")).first).to_be_visible()

    # the full log: search it for a word of the cited evidence
    real.tab("Log")
    word = max(re.findall(r"[A-Za-z_]{6,}", cite.quote) or ["the"], key=len)
    search = real.main.get_by_role("textbox", name="Search the log")
    search.fill(word)
    real.rerun(lambda: search.press("Enter"))
    expect(real.text(re.compile(r"events shown, [1-9]\d* search hits"))).to_be_visible()
    assert not real.watch.dialogs and not real.watch.errors

    real.page.reload()
    real.settled()
    expect(real.text(re.compile(r"e2e-reviewer: agree$")).first).to_be_visible()
    history = item_audit_history(store, trajectory_id=traj_id, item_id=view.item_id, judge="probe")
    assert [h.value["agree"] for h in history] == [True]


def blinded_terms(store: Store) -> list[str]:
    """Strings no rater page may show: trajectory ids and trial suffixes, models, agents, conditions (task
    words such as "reward" can be in real logs; the outcome and reward labels are checked by pattern)."""
    terms = {"with-skills", "without-skills", "partial credit"}
    for t in store.trials.trajectories():
        terms |= {t.id, t.id.split("__", 1)[1], t.model, t.agent}
    return sorted(w for w in terms if w)


def test_real_logs_on_the_rate_page_are_blinded_in_the_browser(real: App, real_study_token: str) -> None:
    store = Store(real.server.db)
    session = open_rater_session(store, real_study_token)
    assert session is not None
    terms = blinded_terms(store)
    queue = session.queue()
    kinds = {}
    for item in queue:
        kinds.setdefault(item.kind, item)
    assert set(kinds) == {"progress_rating", "preference"}, [i.kind for i in queue]
    real.open("rate", token=real_study_token)
    expect(real.title()).to_have_text("Rating study")
    for item in kinds.values():
        name = {"progress_rating": "Progress rating", "preference": "Which made more progress?"}[item.kind]
        real.select("Item", re.compile(rf"^{item.index + 1} · {re.escape(name)} · {item.target}"),
                    filter_text=item.target)
        expect(real.main.locator("h3").filter(has_text=item.target)).to_be_visible()
        shown = real.page.locator("body").inner_text()
        html = real.page.content()
        leaks = [w for w in terms if w.lower() in shown.lower() or w in html]
        assert not leaks, f"{item.kind} {item.target}: the rater's browser got {leaks}"
        assert not re.search(r"\b(PASS|FAIL)\b|\breward[ :=(]+[01]", shown), f"{item.kind} {item.target}: outcome shown"
    assert not real.watch.dialogs and not real.watch.errors
