"""The checklist editor's form in a real browser: one row per item, edited without touching the YAML.

On a task of its own (a small instruction with an invisible character, four verifier tests, a frozen v1
checklist), each test starts the editor from v1 and

- deletes an item (its test becomes uncovered, the coverage failure shows, Save is disabled; Undo brings it back);
- rewords an item into a compound (its row shows G3's message), then splits it into two rows that pass G3;
- quotes a sentence into an item with its row's quote picker (the already-quoted marks move with it, an invisible
  character is shown as its marker and quoted as itself), and through "Quote into", which lists items by text;
- routes two assertion items elsewhere (two tests uncovered) and picks an uncovered test into an item's refs:
  the uncovered list shrinks;
- edits in the form and in the YAML view, which stay one text, and saves: a new version, v1 unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml
from conftest import copy_db
from playwright.sync_api import Locator, expect

from gcpc_core.checklist import load_rules, parse_checklist
from gcpc_core.checklist.registry import register_checklist
from gcpc_core.ingest.tasks import parse_verifier_source
from gcpc_core.models import Task
from gcpc_core.store import Store

from .conftest import REVIEWER
from .helpers import App, Server, Watch, running, server_env

EDITOR = "Checklist (YAML or JSON, the checklist-file schema)"
ADVANCED = "Advanced: the checklist as YAML (stays in sync with the form)"
TASK_ID = "form-editor"
INSTRUCTION = """# Word report

Count the words in `/data/input.txt` and write the result to `/out/report.json`.
The report lists the words and the lines of the file.

- Sort the keys alphabetically.
- Write one key per line.
- Keep the report\u200b small.
- Do **not** modify `/data/input.txt`.
"""
VERIFIER = '''
class TestReport:
    def test_report_exists(self):
        """The report file exists."""

    def test_words_correct(self):
        """words equals the true word count."""

    def test_lines_correct(self):
        """lines equals the true line count."""


def test_keys_sorted():
    """The keys are sorted."""
'''
REPORT = "test_outputs.py::TestReport::"
KEYS, LINES = "test_outputs.py::test_keys_sorted", REPORT + "test_lines_correct"
V1 = {"task": TASK_ID, "source": "human:form-author", "items": [
    {"id": "F1", "route": "assertion", "text": "`/out/report.json` exists",
     "task_quote": "write the result to `/out/report.json`", "verifier_refs": [REPORT + "test_report_exists"]},
    {"id": "F2", "route": "assertion", "text": "The `words` value of report.json counts the words of /data/input.txt",
     "task_quote": "Count the words in `/data/input.txt`", "verifier_refs": [REPORT + "test_words_correct"]},
    {"id": "F3", "route": "assertion", "text": "The `lines` value of report.json counts the lines of /data/input.txt",
     "task_quote": "The report lists the words and the lines of the file.", "verifier_refs": [LINES]},
    {"id": "F4", "route": "assertion", "text": "The keys of report.json appear in alphabetical order",
     "task_quote": "Sort the keys alphabetically.", "verifier_refs": [KEYS]},
    {"id": "F5", "route": "judge", "text": "The agent left /data/input.txt unmodified",
     "task_quote": "Do **not** modify `/data/input.txt`.", "verifier_refs": []},
], "waivers": []}
PASSES = "Every gate passes: this can be saved as a new frozen version."


@pytest.fixture(scope="module")
def form_server(demo_master: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """The app on a private copy of the demo project plus the form-editor task and its frozen v1."""
    root = tmp_path_factory.mktemp("e2e-checklist-form")
    db = copy_db(demo_master, root / "demo.db")
    store = Store(db)
    store.trials.upsert_task(Task(id=TASK_ID, instruction=INSTRUCTION, verifier_files={"test_outputs.py": VERIFIER},
                                  tests=parse_verifier_source("test_outputs.py", VERIFIER),
                                  source_path=str(root / "tasks" / TASK_ID)))
    row, failures = register_checklist(store, parse_checklist(V1), created_by="e2e", rules=load_rules())
    assert row is not None and row.version == 1, failures
    store.close()
    with running(Server("checklist-form", db, root / "server.log",
                        server_env(db, root / "home", GCPC_REVIEWER=REVIEWER))) as server:
        yield server


@pytest.fixture
def app(form_server: Server, page, watch: Watch) -> App:  # noqa: ANN001 - playwright's Page
    """The editor of the form-editor task, loaded from v1."""
    app = App(page, form_server, watch)
    app.open("checklists", task=TASK_ID)
    app.tab("Edit by hand")
    if app.selected("Start from") != "v1 (human:form-author)":
        app.select("Start from", re.compile(r"^v1 \(human:form-author\)$"))
    app.click(app.button("Load into the editor (replaces the text below)"))
    expect(app.text(PASSES)).to_be_visible()
    items_show(app, ids, ["F1", "F2", "F3", "F4", "F5"])
    return app


def items(app: App) -> list[dict]:
    """The items of the YAML view (the advanced editor; its value whether or not it is open)."""
    return yaml.safe_load(app.main.get_by_role("textbox", name=EDITOR, include_hidden=True).input_value())["items"]


def items_show(app: App, part: Callable[[list[dict]], object], expected: object) -> list[dict]:
    """The items of the YAML view once `part(items) == expected`: the view is filled by the action's run, which can
    still be on its way to the page when the action returns (at the deadline, the assertion fails with both)."""
    def check() -> list[dict]:
        got = items(app)
        assert part(got) == expected, (part(got), expected)
        return got
    return app.eventually(check)


def ids(got: list[dict]) -> list[str]:
    return [i["id"] for i in got]


def row(app: App, k: int) -> Locator:
    return app.main.locator(f".st-key-checklists-item-{k}")


def rows(app: App) -> Locator:
    return app.main.locator('[class*="st-key-checklists-item-"]')


def fill(app: App, box: Locator, value: str) -> None:
    box.fill(value)
    app.rerun(lambda: box.press("Enter") if box.evaluate("e => e.tagName") == "INPUT" else box.press("Control+Enter"))


def options(app: App, label: str, scope: Locator) -> list[str]:
    """The option labels of the picker `label` in `scope`, as its open list shows them (then closed again)."""
    box = app.combobox(label, scope=scope)
    box.scroll_into_view_if_needed()
    app.open_list(box)
    app.page.get_by_role("option").first.wait_for(timeout=5_000)
    shown = app.page.get_by_role("option").all_inner_texts()
    app.page.keyboard.press("Escape")
    return shown


def uncovered(app: App) -> Locator:
    return app.main.locator(".st-key-checklists-uncovered")


def versions(app: App) -> list:
    return Store(app.server.db).checklists.list(task=TASK_ID, status=None)


def sentence_mark(app: App, sentence: str) -> Locator:
    """The mark beside one sentence of the instruction's list (which items quote it)."""
    line = app.main.locator(f".st-key-checklists-instruction-{TASK_ID}").locator(
        '[data-testid="stHorizontalBlock"]').filter(has=app.page.get_by_text(sentence, exact=True)).last
    return line.locator('[data-testid="stCaptionContainer"]')


def test_delete_an_item_and_undo(app: App) -> None:
    expect(rows(app)).to_have_count(5)
    expect(uncovered(app).get_by_text("Every verifier test is covered by an assertion item or waived.")).to_be_visible()
    app.click(app.button("Delete", scope=row(app, 3)))
    expect(app.text(re.compile(r"^Deleted F4 \(The keys of report\.json appear in alphabetical order\)\."))).to_be_visible()
    expect(rows(app)).to_have_count(4)
    items_show(app, ids, ["F1", "F2", "F3", "F5"])  # the YAML view follows
    expect(row(app, 3).get_by_text("F5 · judge", exact=True)).to_be_visible()
    # its test is uncovered now: listed, and G5 says so on top; nothing can be saved
    expect(uncovered(app).get_by_text(re.compile(r"^1 verifier test\(s\) still uncovered"))).to_be_visible()
    expect(uncovered(app).get_by_text(KEYS)).to_be_visible()
    expect(app.main.locator(".st-key-checklists-general").get_by_text(
        f"Checklist as a whole · G5 coverage: verifier test {KEYS} is neither covered by an assertion item nor waived",
        exact=True)).to_be_visible()
    expect(app.button("Save as a new version")).to_be_disabled()

    app.click(app.button("Undo"))
    expect(rows(app)).to_have_count(5)
    items_show(app, ids, ["F1", "F2", "F3", "F4", "F5"])
    expect(app.text(PASSES)).to_be_visible()
    assert len(versions(app)) == 1  # nothing stored
    assert not app.watch.errors and not app.watch.dialogs


def test_reword_into_a_compound_then_split_it(app: App) -> None:
    text = row(app, 0).get_by_role("textbox", name="Text of F1")
    fill(app, text, "`/out/report.json` exists and is valid JSON")
    items_show(app, lambda got: got[0]["text"], "`/out/report.json` exists and is valid JSON")
    # the row's own gate message, live
    expect(row(app, 0).get_by_text(
        "G3 requirement level: compound item: 'and is' starts a second requirement (2 predicates joined); split it "
        "into one item per requirement", exact=True)).to_be_visible()
    expect(row(app, 1).get_by_text("passes every item gate")).to_be_visible()

    app.click(app.button("Split", scope=row(app, 0)))
    expect(app.text("Split F1 into F1 and F6: check both texts and their refs.")).to_be_visible()
    expect(rows(app)).to_have_count(6)
    first, second = items_show(app, lambda got: [(i["id"], i["text"]) for i in got[:2]],
                               [("F1", "`/out/report.json` exists"), ("F6", "`/out/report.json` is valid JSON")])[:2]
    assert second["task_quote"] == first["task_quote"] and second["verifier_refs"] == first["verifier_refs"]
    expect(row(app, 1).get_by_role("textbox", name="Text of F6")).to_have_value("`/out/report.json` is valid JSON")
    for k in (0, 1):
        expect(row(app, k).get_by_text("passes every item gate")).to_be_visible()
    expect(app.text(PASSES)).to_be_visible()
    # move the new item to the end, then duplicate it: G4 names the copy in its row
    app.click(app.button("Move down", scope=row(app, 1)))
    items_show(app, ids, ["F1", "F2", "F6", "F3", "F4", "F5"])
    app.click(app.button("Duplicate", scope=row(app, 2)))
    items_show(app, ids, ["F1", "F2", "F6", "F7", "F3", "F4", "F5"])
    expect(row(app, 3).get_by_text(re.compile(r"^G4 duplicates: duplicates F6 \(similarity 1\.00"))).to_be_visible()
    assert len(versions(app)) == 1
    assert not app.watch.errors and not app.watch.dialogs


def test_quote_a_sentence_with_the_row_picker_and_through_quote_into(app: App) -> None:
    # the sentence list marks what is quoted already
    expect(sentence_mark(app, "Do **not** modify `/data/input.txt`.")).to_have_text("✓ F5")
    expect(sentence_mark(app, "Write one key per line.")).to_have_text("not quoted")
    # F5's picker shows its own sentence; the others are listed with their marks
    picker = "Quote a sentence into F5"
    expect(app.combobox(picker, scope=row(app, 4))).to_have_value(
        "✓ quoted by F5 · Do **not** modify `/data/input.txt`.")
    shown = options(app, picker, row(app, 4))
    assert shown == ["Word report",
                     "✓ quoted by F1 (part), F2 (part) · Count the words in `/data/input.txt` and write the result to "
                     "`/out/report.json`.",
                     "✓ quoted by F3 · The report lists the words and the lines of the file.",
                     "✓ quoted by F4 · Sort the keys alphabetically.", "Write one key per line.",
                     "Keep the report⟨U+200B⟩ small.", "✓ quoted by F5 · Do **not** modify `/data/input.txt`."], shown
    app.select(picker, re.compile(r"^Write one key per line\.$"), scope=row(app, 4))
    expect(app.text("Task quote of F5 set.")).to_be_visible()
    items_show(app, lambda got: got[4]["task_quote"], "Write one key per line.")
    expect(row(app, 4).get_by_role("textbox", name="Task quote of F5")).to_have_value("Write one key per line.")
    expect(sentence_mark(app, "Write one key per line.")).to_have_text("✓ F5")
    expect(sentence_mark(app, "Do **not** modify `/data/input.txt`.")).to_have_text("not quoted")
    expect(row(app, 4).get_by_text("passes every item gate")).to_be_visible()

    # an invisible character: shown as its marker, quoted as itself (G1 passes)
    app.select("Quote a sentence into F4", "Keep the report⟨U+200B⟩ small.", scope=row(app, 3))
    items_show(app, lambda got: got[3]["task_quote"], "Keep the report\u200b small.")
    expect(row(app, 3).get_by_role("textbox", name="Task quote of F4")).to_have_value("Keep the report⟨U+200B⟩ small.")
    expect(row(app, 3).get_by_text("passes every item gate")).to_be_visible()

    # "Quote into" lists the items by their text; a sentence's Quote button sets that item's quote
    app.select("Quote into", "F2 · The `words` value of report.json counts the words of /data/input.txt")
    line = app.main.locator(f".st-key-checklists-instruction-{TASK_ID}").locator(
        '[data-testid="stHorizontalBlock"]').filter(has=app.page.get_by_text("Sort the keys alphabetically.", exact=True))
    app.click(line.last.get_by_role("button", name="Quote"))
    expect(app.text("Task quote of F2 set.")).to_be_visible()
    items_show(app, lambda got: got[1]["task_quote"], "Sort the keys alphabetically.")
    expect(sentence_mark(app, "Sort the keys alphabetically.")).to_have_text("✓ F2")
    assert len(versions(app)) == 1
    assert not app.watch.errors and not app.watch.dialogs


def test_pick_an_uncovered_test_into_an_items_refs(app: App) -> None:
    # route F3 and F4 elsewhere: their refs cover nothing now, two tests are uncovered
    app.select("Route of F3", re.compile("^generated$"), scope=row(app, 2))
    app.select("Route of F4", re.compile("^generated$"), scope=row(app, 3))
    items_show(app, lambda got: [i["route"] for i in got],
               ["assertion", "assertion", "generated", "generated", "judge"])
    expect(uncovered(app).get_by_text(re.compile(r"^2 verifier test\(s\) still uncovered"))).to_be_visible()
    expect(uncovered(app).get_by_text(LINES)).to_be_visible()
    expect(uncovered(app).get_by_text(KEYS)).to_be_visible()
    expect(app.button("Save as a new version")).to_be_disabled()

    # F1's refs picker marks them uncovered; picking one covers it and the list shrinks
    shown = options(app, "Verifier refs of F1", row(app, 0))
    assert shown == ["Select all",  # Streamlit's own; F1's ref to test_report_exists is picked already
                     f"{REPORT}test_words_correct · covered by F2", f"{LINES} · uncovered", f"{KEYS} · uncovered"], shown
    app.select("Verifier refs of F1", f"{KEYS} · uncovered", scope=row(app, 0))
    app.page.keyboard.press("Escape")
    expect(app.text(f"Refs of F1: added {KEYS}.")).to_be_visible()
    items_show(app, lambda got: got[0]["verifier_refs"], [REPORT + "test_report_exists", KEYS])
    expect(uncovered(app).get_by_text(re.compile(r"^1 verifier test\(s\) still uncovered"))).to_be_visible()
    expect(uncovered(app).get_by_text(KEYS)).to_have_count(0)
    expect(uncovered(app).get_by_text(LINES)).to_be_visible()
    card = app.main.locator('[class*="st-key-checklists-test-"]').filter(has=app.page.get_by_text(KEYS, exact=True))
    expect(card.get_by_text("covered by F1", exact=True)).to_be_visible()

    # the last one through "Add the test to", which lists items by their text
    app.select("Add the test to", "F2 · The `words` value of report.json counts the words of /data/input.txt")
    lines_card = app.main.locator('[class*="st-key-checklists-test-"]').filter(has=app.page.get_by_text(LINES, exact=True))
    app.click(lines_card.get_by_role("button", name="Add"))
    expect(uncovered(app).get_by_text("Every verifier test is covered by an assertion item or waived.")).to_be_visible()
    expect(app.text(PASSES)).to_be_visible()
    assert len(versions(app)) == 1
    assert not app.watch.errors and not app.watch.dialogs


def test_the_form_and_the_yaml_view_stay_in_sync_and_saving_adds_a_version(app: App) -> None:
    fill(app, row(app, 4).get_by_role("textbox", name="Text of F5"), "The agent never wrote to /data/input.txt")
    # the YAML view holds the form's change; an edit there shows in the form
    app.main.get_by_text(ADVANCED).click()
    editor = app.main.get_by_role("textbox", name=EDITOR)
    expect(editor).to_be_visible()
    expect(editor).to_have_value(re.compile(re.escape("text: The agent never wrote to /data/input.txt")))
    text = editor.input_value()
    assert "text: The agent never wrote to /data/input.txt" in text
    fill(app, editor, text.replace("counts the lines of", "holds the line count of"))
    expect(row(app, 2).get_by_role("textbox", name="Text of F3")).to_have_value(
        "The `lines` value of report.json holds the line count of /data/input.txt")
    expect(app.text(PASSES)).to_be_visible()

    app.click(app.button("Save as a new version"))
    expect(app.text(re.compile(r"^Stored as version 2 \(sha [0-9a-f]{12}\)\.$"))).to_be_visible()
    v1, v2 = versions(app)
    assert v1.checklist == parse_checklist(V1).model_dump(mode="json")  # the frozen version as it was
    assert v2.status == "frozen" and v2.source == f"human:{REVIEWER}" and v2.created_by == f"app:{REVIEWER}"
    assert [i["text"] for i in v2.checklist["items"]][2:] == [
        "The `lines` value of report.json holds the line count of /data/input.txt",
        "The keys of report.json appear in alphabetical order", "The agent never wrote to /data/input.txt"]
    # the same text again stores nothing new
    app.click(app.button("Save as a new version"))
    expect(app.text(re.compile(r"^Identical to version 2 \(sha [0-9a-f]{12}\), which is stored already"))).to_be_visible()
    assert len(versions(app)) == 2
    assert not app.watch.errors and not app.watch.dialogs
