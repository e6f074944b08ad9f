"""The guided path and the checklist editor in a real browser, on the real SkillsBench sample without an LLM
(`../shared/skillsbench`; skipped when absent).

- The guided path on a fresh project: import (Runs page) → the Overview's "Draft a checklist" → the editor
  opens on the offline draft → edit by quoting an instruction sentence → save → "Judge with probe" → "Score"
  → "Audit the proposed verdicts" (Triage) → a proposal in the item audit → agree; the task is done once every
  verdict is known (the error-rate interval at its target), not after the first audit.
- The editor's click-to-quote (a sentence, or a trimmed span checked verbatim) and click-to-ref (a verifier
  test as a new assertion item, or as one more ref of an item), with gate messages shown whole beside the
  item they concern.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml
from playwright.sync_api import Locator, expect

from annotations.audits import record_item_audit
from gcpc_core.models import ENDPOINT_ITEM_ID
from gcpc_core.store import Store

from .conftest import REVIEWER
from .helpers import App, Server, Watch, running, server_env

pytestmark = pytest.mark.skillsbench

EDITOR = "Checklist (YAML or JSON, the checklist-file schema)"
TASK = "citation-check"


@pytest.fixture(scope="module")
def fresh_server(skillsbench: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """The app on an empty project DB (nothing imported yet), no LLM configured."""
    root = tmp_path_factory.mktemp("e2e-fresh")
    Store(root / "fresh.db").close()
    env = server_env(root / "fresh.db", root / "home", GCPC_REVIEWER=REVIEWER)
    with running(Server("fresh", root / "fresh.db", root / "server.log", env)) as server:
        yield server


@pytest.fixture
def fresh(fresh_server: Server, page, watch: Watch) -> App:  # noqa: ANN001 - playwright's Page
    return App(page, fresh_server, watch)


def task_row(app: App, task: str) -> Locator:
    return app.main.locator(f".st-key-overview-task-{task}")


def until(app: App, check: Callable[[], bool], *, what: str, timeout_s: float = 60) -> None:
    """Reload the page until `check()` holds (a background job's result shows on the next run)."""
    for _ in range(int(timeout_s * 2)):
        if check():
            return
        app.page.wait_for_timeout(500)
        app.page.reload()
        app.settled()
    raise AssertionError(f"timed out waiting for {what}")


def editor(app: App) -> Locator:
    """The YAML view of the editor (under a collapsed expander: present, not visible)."""
    return app.main.get_by_role("textbox", name=EDITOR, include_hidden=True)


def editor_text(app: App) -> str:
    return editor(app).input_value()


def editor_items(app: App, check: Callable[[list[dict]], None]) -> list[dict]:
    """The items of the editor's YAML once `check(items)` passes (it asserts): the editor is filled by the
    action's run, which can still be on its way to the page when the action returns."""
    def read() -> list[dict]:
        items = yaml.safe_load(editor_text(app))["items"]
        check(items)
        return items
    return app.eventually(read)


def _equal(got: object, expected: object) -> None:
    assert got == expected, (got, expected)


def quote_button(app: App, sentence: str) -> Locator:
    """The Quote button on the row of one instruction sentence (in the instruction's panel: an item that
    quotes the same sentence shows it too)."""
    row = app.main.locator('[class*="st-key-checklists-instruction-"] [data-testid="stHorizontalBlock"]').filter(
        has=app.page.get_by_text(sentence, exact=True)).last
    return row.get_by_role("button", name="Quote", exact=True)


@pytest.mark.timeout(480)  # four background jobs (import, judge, score) on a shared, loaded machine
def test_guided_path_from_import_to_audit_without_an_llm(fresh: App, skillsbench: Path) -> None:
    store = Store(fresh.server.db)
    fresh.open("runs")
    fresh.main.get_by_role("textbox", name="Tasks folder (Harbor task layout)").fill(str(skillsbench / "tasks"))
    trials = fresh.main.get_by_role("textbox", name="Trials folder (Harbor trial folders)")
    trials.fill(str(skillsbench / "trials"))
    fresh.rerun(lambda: trials.press("Enter"))
    fresh.click(fresh.button("Start import"))
    fresh.open("")
    until(fresh, lambda: task_row(fresh, TASK).count() > 0, what="the import to finish", timeout_s=120)
    row = task_row(fresh, TASK)
    expect(row.get_by_text("no checklist")).to_be_visible()
    expect(row.get_by_text(re.compile(r"checklist draft --db .* --task citation-check"))).to_be_visible()

    # next step: draft a checklist -> the editor opens on the offline draft of this task
    fresh.click(row.get_by_role("link", name="Draft a checklist"))
    expect(fresh.title()).to_have_text("Checklists")
    expect(fresh.combobox("Task")).to_have_value(TASK)
    # the page switch may be drawn before its run is over (the title and the task box come first, the draft
    # later): wait for the editor to hold the draft rather than read it at once
    expect(editor(fresh)).to_have_value(re.compile(r"source: draft:"), timeout=60_000)
    fresh.settled()
    text = editor_text(fresh)
    assert f"task: {TASK}" in text, text[:300]
    expect(fresh.text("Every gate passes: this can be saved as a new frozen version.")).to_be_visible()
    assert store.checklists.list(status=None) == []  # a draft is not stored until saved

    # edit: quote an instruction sentence as a new judge item
    fresh.select("Quote into", "a new judge item")
    sentence = "Sort titles alphabetically for consistency"
    fresh.click(quote_button(fresh, sentence))
    expect(fresh.text(re.compile(r"^Added C\d+ \(judge\) quoting the instruction\.$"))).to_be_visible()
    def quoted(items: list[dict]) -> None:
        assert items[-1]["route"] == "judge" and items[-1]["task_quote"] == sentence, items[-1]

    editor_items(fresh, quoted)
    expect(fresh.text("Every gate passes: this can be saved as a new frozen version.")).to_be_visible()
    fresh.click(fresh.button("Save as a new version"))
    expect(fresh.text(re.compile(r"^Stored as version 1 \(sha [0-9a-f]{12}\)\.$"))).to_be_visible()
    [stored] = store.checklists.list(task=TASK, status=None)
    assert stored.status == "frozen" and stored.source == f"human:{REVIEWER}"
    assert stored.checklist["items"][-1]["task_quote"] == sentence

    # next steps on the Overview: judge with probe (offline), score, audit
    fresh.open("")
    row = task_row(fresh, TASK)
    expect(row.get_by_text(f"v1 · {len(stored.checklist['items'])} items")).to_be_visible()
    fresh.click(row.get_by_role("button", name="Judge with probe (offline)"))
    until(fresh, lambda: task_row(fresh, TASK).get_by_role("button", name="Score").count() > 0,
          what="the probe judge to finish")
    expect(task_row(fresh, TASK).get_by_text("probe 4/4").first).to_be_visible()
    fresh.click(task_row(fresh, TASK).get_by_role("button", name="Score"))
    audit_link = "Audit the proposed verdicts"
    until(fresh, lambda: task_row(fresh, TASK).get_by_role("link", name=audit_link).count() > 0,
          what="scoring to finish")
    assert {s.task for s in store.judging.scores(judge="probe")} == {TASK}  # the only task with a checklist
    fresh.click(task_row(fresh, TASK).get_by_role("link", name=audit_link))
    expect(fresh.title()).to_have_text("Triage")
    fresh.rerun(fresh.main.get_by_role("link", name="Open in item audit").first.click)
    expect(fresh.title()).to_have_text("Item audit")
    fresh.click(fresh.button("Agree"))
    expect(fresh.text(re.compile(rf"{REVIEWER}: agree$")).first).to_be_visible()
    audits = store.annotations.list(kind="item_audit")
    assert len(audits) == 1 and audits[0].task == TASK and audits[0].rater == REVIEWER
    assert audits[0].value["selection"] == "random"  # opened from a proposal

    # one audit does not finish the task: the error-rate interval is still wider than its target
    fresh.open("")
    row = task_row(fresh, TASK)
    expect(row.get_by_text("1 item", exact=True)).to_be_visible()
    expect(row.get_by_role("link", name=audit_link)).to_be_visible()
    audited = {(a.trajectory_id, a.item_id) for a in audits}
    for j in store.judging.judgments(judge="probe"):
        if j.item_id != ENDPOINT_ITEM_ID and (j.trajectory_id, j.item_id) not in audited:
            record_item_audit(store, trajectory_id=j.trajectory_id, item_id=j.item_id, judge="probe",
                              reviewer=REVIEWER, agree=True, selection="random")
    fresh.open("")
    row = task_row(fresh, TASK)
    expect(row.get_by_text("done", exact=True)).to_be_visible()
    assert not fresh.watch.errors and not fresh.watch.dialogs
    # every job the pages started is in the run ledger, as the command line records it (a job closes its run
    # after writing its results, which the page shows first: wait for the ledger to say so)
    def ledger() -> dict:
        runs = {r.kind: r for r in store.runs.list()}
        assert {kind: runs[kind].status for kind in ("import", "judge-probe", "score")} == {
            "import": "done", "judge-probe": "done", "score": "done"}, {k: r.status for k, r in runs.items()}
        return runs

    runs = fresh.eventually(ledger, timeout=60_000)
    assert runs["import"].counts["trials_imported"] > 0 and runs["judge-probe"].counts["judged"] == 4
    assert runs["score"].counts["probe=" + store.judging.default_labels()["probe"]] > 0  # per labelled run


@pytest.mark.timeout(480)  # a dozen reruns of a heavy page on a shared, loaded machine
def test_editor_click_to_quote_and_click_to_ref_with_whole_gate_messages(real: App) -> None:
    store = Store(real.server.db)
    task = "dialogue-parser"
    versions = len(store.checklists.list(task=task, status=None))
    real.open("checklists", task=task)
    expect(real.combobox("Task")).to_have_value(task)
    real.tab("Edit by hand")
    real.select("Start from", "an empty skeleton")
    real.click(real.button("Load into the editor (replaces the text below)"))
    editor_items(real, lambda items: _equal([i["task_quote"] for i in items], [""] * len(items)))
    # the skeleton's empty quote: G1's message, whole, next to C1
    c1 = real.main.locator(".st-key-checklists-item-0")
    expect(c1.get_by_text("C1 · assertion", exact=True)).to_be_visible()
    expect(c1.get_by_role("textbox", name="Text of C1")).to_have_value("")
    expect(c1.get_by_text("G1 verbatim quote: task quote is empty")).to_be_visible()

    # click-to-quote: a sentence of the instruction becomes C1's task quote
    real.select("Quote into", "C1 · (no text yet)")  # items are listed by their text
    sentence = ("The constraints are: (1) All nodes must be reachable from the first node; (2) All edge targets must "
                "exist except the last node; (3) multiple paths can lead to the node \"End\".")
    real.click(quote_button(real, sentence))
    expect(real.text("Task quote of C1 set.")).to_be_visible()
    editor_items(real, lambda items: _equal(items[0]["task_quote"], sentence))
    expect(c1.get_by_text("G1 verbatim quote: task quote is empty")).to_have_count(0)

    # a trimmed span: checked verbatim live, then used as C2's quote
    span = real.main.get_by_role("textbox", name="Or quote part of a sentence: paste or trim a span of the instruction")
    span.fill("All nodes must be reachable from the first node")
    real.rerun(lambda: span.press("Enter"))
    expect(real.text("✓ verbatim in instruction.md")).to_be_visible()
    real.select("Quote into", "C2 · (no text yet)")
    real.click(real.button("Use as task quote"))
    editor_items(real, lambda items: _equal(items[1]["task_quote"], "All nodes must be reachable from the first node"))
    span.fill("All nodes must be reachable from the last node")
    real.rerun(lambda: span.press("Enter"))
    expect(real.text("✗ not a verbatim span of instruction.md (G1 would fail)")).to_be_visible()

    # click-to-ref: a verifier test becomes a new assertion item with its ref and docstring text ...
    tests = real.main.locator(f".st-key-checklists-tests-{task}")
    node = "test_outputs.py::test_graph_logic"
    card = tests.locator('[class*="st-key-checklists-test-"]').filter(
        has=real.page.get_by_text(f"{node} (parametrized)", exact=True))
    expect(card.get_by_text("Verify graph connectivity, validity, and branching logic.", exact=True)).to_be_visible()
    real.click(card.get_by_role("button", name="Add"))
    expect(real.text(re.compile(rf"^Added C\d+ \(assertion\) for {re.escape(node)}\.$"))).to_be_visible()
    def added(items: list[dict]) -> None:
        item = items[-1]
        assert item["route"] == "assertion" and item["verifier_refs"] == [node] and item["task_quote"], item

    editor_items(real, added)
    # ... or one more ref of an existing item
    real.select("Add the test to", "C1 · (no text yet)")
    other = "test_outputs.py::test_system_basics"
    card = tests.locator('[class*="st-key-checklists-test-"]').filter(
        has=real.page.get_by_text(f"{other} (parametrized)", exact=True))
    real.click(card.get_by_role("button", name="Add"))
    expect(real.text(f"{other} added to the refs of C1.")).to_be_visible()
    def referred(items: list[dict]) -> None:
        assert other in items[0]["verifier_refs"], items[0]

    editor_items(real, referred)
    assert len(store.checklists.list(task=task, status=None)) == versions  # nothing saved
    assert not real.watch.errors and not real.watch.dialogs
