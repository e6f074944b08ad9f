"""Free selection as a task quote, in a real browser: on a task whose instruction holds invisible
characters, a span dragged over with the mouse in the quote-selection component's frame (markers included),
or selected from the keyboard (Shift+arrows from a click, Ctrl+A inside the text), becomes an item's task
quote — the exact span of instruction.md, once per selection — and gate G1 passes for it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from conftest import copy_db
from playwright.sync_api import expect

from gcpc_core.checklist import load_rules
from gcpc_core.models import Task
from gcpc_core.review.checklists import check_text
from gcpc_core.store import Store

from .conftest import REVIEWER
from .helpers import App, Server, Watch, running, server_env

EDITOR = "Checklist (YAML or JSON, the checklist-file schema)"
TASK_ID = "quote-select"
INSTRUCTION = ("# Report\n\nWrite the file /app/report\u200b.csv with one line per node, sorted by name.\n"
               "Every line names its node\u202e and its degree.\n")
SHOWN = "/app/report⟨U+200B⟩.csv with one line per node"
"""What the user drags over, as the component shows it."""
QUOTE = "/app/report\u200b.csv with one line per node"
"""The span of instruction.md it stands for."""

_RECT_JS = """(box, target) => {
  // the viewport rectangles of the first and last character of `target` in the shown text
  const nodes = [...box.querySelectorAll('span')].map(s => s.firstChild).filter(Boolean);
  const whole = nodes.map(n => n.data).join('');
  const begin = whole.indexOf(target);
  if (begin < 0) return null;
  const at = (pos) => { let k = pos; for (const n of nodes) { if (k < n.data.length) return [n, k]; k -= n.data.length; }
                         return null; };
  const rect = (pos) => { const [n, k] = at(pos); const r = document.createRange(); r.setStart(n, k); r.setEnd(n, k + 1);
                          return r.getBoundingClientRect(); };
  const first = rect(begin), last = rect(begin + target.length - 1);
  return {x1: first.left + 1, y1: first.top + first.height / 2, x2: last.right - 1, y2: last.top + last.height / 2};
}"""


@pytest.fixture(scope="module")
def quote_server(demo_master: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """The app on a private copy of the demo project plus one task whose instruction holds a zero-width space
    and a right-to-left override."""
    root = tmp_path_factory.mktemp("e2e-quote-select")
    db = copy_db(demo_master, root / "demo.db")
    store = Store(db)
    store.trials.upsert_task(Task(id=TASK_ID, instruction=INSTRUCTION, source_path=str(root / "tasks" / TASK_ID)))
    store.close()
    with running(Server("quote-select", db, root / "server.log", server_env(db, root / "home",
                                                                             GCPC_REVIEWER=REVIEWER))) as server:
        yield server


@pytest.fixture
def app(quote_server: Server, page, watch: Watch) -> App:  # noqa: ANN001 - playwright's Page
    return App(page, quote_server, watch)


def _open_selector(app: App):  # noqa: ANN202 - (frame element, text locator, the rectangles of SHOWN)
    app.open("checklists", task=TASK_ID)
    app.select("Quote into", "a new judge item")
    frame_element = app.main.locator('iframe[title*="quote_select"]')
    frame = app.main.frame_locator('iframe[title*="quote_select"]')
    text = frame.locator('[data-testid="quote-select-text"]')
    expect(text).to_contain_text("⟨U+200B⟩")  # invisible characters shown the app's way
    expect(text).to_contain_text("⟨U+202E⟩")
    frame_element.scroll_into_view_if_needed()
    rects = text.evaluate(_RECT_JS, SHOWN)
    assert rects is not None
    origin = frame_element.bounding_box()
    assert origin is not None
    return origin, text, rects


def _items(app: App) -> list[dict]:
    return yaml.safe_load(app.main.get_by_role("textbox", name=EDITOR, include_hidden=True).input_value())["items"]


def test_a_mouse_selection_becomes_the_task_quote_and_passes_g1(app: App) -> None:
    origin, _, rects = _open_selector(app)

    def drag() -> None:
        mouse = app.page.mouse
        mouse.move(origin["x"] + rects["x1"], origin["y"] + rects["y1"])
        mouse.down()
        mouse.move(origin["x"] + rects["x2"], origin["y"] + rects["y2"], steps=12)
        mouse.up()

    app.rerun(drag)
    expect(app.text("quoting the instruction. (characters")).to_be_visible()
    editor = app.main.get_by_role("textbox", name=EDITOR, include_hidden=True)

    def quoted() -> dict:  # the editor is filled by the same run: wait for it rather than read it once
        added = _items(app)[-1]
        assert added["route"] == "judge" and added["task_quote"] == QUOTE, added
        return added

    added = app.eventually(quoted)
    assert added["task_quote"] in INSTRUCTION  # the exact span, the invisible character itself included
    task = Store(app.server.db).trials.get_task(TASK_ID)
    assert task is not None
    g1 = [f for f in check_text(editor.input_value(), task, load_rules()).failures if f.gate == "G1"]
    assert g1 == [], g1
    card = app.main.locator('[class*="st-key-checklists-item-"]').filter(has_text=f"{added['id']} · judge")
    expect(card).to_be_visible()
    expect(card.get_by_text("G1 verbatim quote")).to_have_count(0)  # no G1 message beside the new item
    assert not app.watch.errors, app.watch.errors


def test_a_keyboard_selection_becomes_one_task_quote(app: App) -> None:
    """A click before the span, then Shift+ArrowRight once per character shown (a marker counts as its
    characters): one new item whose quote is the span of instruction.md — not one per key press."""
    origin, _, rects = _open_selector(app)
    before = len(_items(app))

    def select_with_keys() -> None:
        app.page.mouse.click(origin["x"] + rects["x1"] - 1, origin["y"] + rects["y1"])  # the caret before "/app"
        keyboard = app.page.keyboard
        keyboard.down("Shift")
        for _ in SHOWN:
            keyboard.press("ArrowRight")
        keyboard.up("Shift")

    app.rerun(select_with_keys)
    expect(app.text("quoting the instruction. (characters")).to_be_visible()
    app.page.wait_for_timeout(1_000)  # longer than the component's settling time: nothing more is sent
    app.settled()
    items = _items(app)
    assert len(items) == before + 1, items[before:]
    assert items[-1]["route"] == "judge" and items[-1]["task_quote"] == QUOTE, items[-1]
    assert not app.watch.errors, app.watch.errors


def test_ctrl_a_inside_the_instruction_quotes_the_whole_instruction(app: App) -> None:
    _, text, _ = _open_selector(app)
    before = len(_items(app))

    def select_all() -> None:
        text.focus()
        app.page.keyboard.press("Control+a")

    app.rerun(select_all)
    expect(app.text("quoting the instruction. (characters 0–")).to_be_visible()

    def quoted() -> None:  # the editor is filled by the same run: wait for it rather than read it once
        items = _items(app)
        assert len(items) == before + 1, items[before:]
        assert items[-1]["task_quote"] == INSTRUCTION.strip(), items[-1]  # the whole file, its invisible characters too

    app.eventually(quoted)
    assert not app.watch.errors, app.watch.errors
