"""Security in a real browser, on a server exposed to raters ($GCPC_ADMIN_TOKEN set) whose only trial
carries hostile text (tests/drills/hostile.py): markup, script, `javascript:` links, remote markdown
images, ANSI escapes and a 1 MB single line are shown as text, run nothing, load nothing, and the
pages stay responsive. Rater tokens and admin rights are enforced by what the browser gets to see. A page
of another site whose name resolves to 127.0.0.1 (DNS rebinding) is never the local owner."""

from __future__ import annotations

import io
import re
import tarfile
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import copy_db
from playwright.sync_api import expect

from drills.hostile import HOSTILE, TRIAL_ID
from gcpc_core.demo import write_demo_corpus
from gcpc_core.ingest.archive import uploads_dir
from gcpc_core.store import Store

from .conftest import ADMIN_TOKEN, HOSTILE_RATER, REVIEWER
from .helpers import CHROMIUM, CHROMIUM_ARGS, App, Server, Watch, running, server_env

RENDER_BOUND_S = 30.0
"""A page holding the 1 MB line must finish rendering (script run done, DOM settled) within this."""
HOSTILE_NEEDLES = ("alert(1)", "127.0.0.1:1", "javascript:")


def assert_inert(app: App, where: str) -> None:
    """Nothing hostile ran or loaded: no dialog, no page error, no console output mentioning the
    payloads, no request to the image's closed port; no element the markup would have created."""
    page, watch = app.page, app.watch
    assert not watch.dialogs, f"{where}: a dialog opened: {watch.dialogs}"
    assert not watch.errors, f"{where}: page errors: {watch.errors}"
    noisy = [m for m in watch.console if any(n in m for n in HOSTILE_NEEDLES)]
    assert not noisy, f"{where}: console mentions the payload: {noisy}"
    fetched = [u for u in watch.requests if "127.0.0.1:1/" in u or u.startswith("javascript:") or u.endswith("/x")]
    assert not fetched, f"{where}: the browser requested {fetched}"
    dom = page.evaluate("""() => ({
        imgX: [...document.images].filter(i => /(^|\\/)x(\\.png)?$/.test(i.getAttribute('src') || '')
                                          || (i.getAttribute('src') || '').includes('127.0.0.1:1')).length,
        jsLinks: [...document.querySelectorAll('a[href]')].filter(a => /^\\s*javascript:/i.test(a.getAttribute('href'))).length,
        handlers: [...document.querySelectorAll('*')].filter(e => [...e.attributes].some(
                     a => /^on/i.test(a.name) && /alert/.test(a.value))).length,
        scripts: [...document.scripts].filter(s => /alert\\(1\\)/.test(s.textContent)).length,
        iframes: document.querySelectorAll('iframe[srcdoc]').length,
    })""")
    assert dom == {"imgX": 0, "jsLinks": 0, "handlers": 0, "scripts": 0, "iframes": 0}, f"{where}: {dom}"


def shows_as_text(app: App, text: str) -> None:
    """`text` is on screen literally (so it was escaped, not interpreted)."""
    expect(app.main.get_by_text(text).locator("visible=true").first).to_be_visible()


def timed_open(app: App, path: str, **query: str) -> float:
    start = time.monotonic()
    app.open(path, **query)
    return time.monotonic() - start


# ---------------------------------------------------------------- hostile text, admin pages


def test_hostile_trial_in_the_item_audit_is_text_only_and_responsive(protected: App) -> None:
    took = timed_open(protected, "audit", admin=ADMIN_TOKEN, trajectory=TRIAL_ID, judge="probe")
    expect(protected.main.get_by_role("heading", name=TRIAL_ID)).to_be_visible()
    assert took < RENDER_BOUND_S, f"the audit page took {took:.1f} s"
    # the focused item: its text, task quote, verifier refs (docstrings and source), citations
    shows_as_text(protected, HOSTILE["script"])
    assert_inert(protected, "audit, first item")
    for item in ("H2", "H3", "H4"):
        protected.select("Item", re.compile(rf"^{item} · "))
        expect(protected.main.get_by_text(re.compile(rf"^{item}$")).locator("visible=true").first).to_be_visible()
        assert_inert(protected, f"audit, item {item}")
    shows_as_text(protected, HOSTILE["markdown_image"])

    # the whole instruction around the quote (the 1 MB line included), one toggle away
    start = time.monotonic()
    whole = protected.main.get_by_text("Whole instruction", exact=True).locator("visible=true").first
    protected.click(whole)
    expect(protected.main.locator('[data-testid="stCode"]').filter(has_text="AAAAAAAAAAAAAAAA").locator(
        "visible=true").first).to_be_visible()
    took = time.monotonic() - start
    assert took < RENDER_BOUND_S, f"the whole instruction took {took:.1f} s"
    assert_inert(protected, "audit, whole instruction")

    # the whole instruction (1 MB line included) and the full log
    start = time.monotonic()
    protected.tab("Instruction")
    expect(protected.main.locator('[data-testid="stCode"]').filter(has_text="AAAAAAAAAAAAAAAA").locator(
        "visible=true").first).to_be_visible()
    protected.tab("Log")
    expect(protected.text(re.compile(r"^\d+ of \d+ events shown"))).to_be_visible()
    big = protected.main.get_by_text(re.compile(r"^Show all 1,0\d\d,\d\d\d characters")).locator("visible=true").first
    expect(big).to_be_visible()
    protected.click(big)
    protected.settled(timeout=RENDER_BOUND_S * 1000)
    took = time.monotonic() - start
    assert took < RENDER_BOUND_S, f"showing the 1 MB event took {took:.1f} s"
    # still responsive: a click on another tab is answered promptly
    start = time.monotonic()
    protected.tab("Items")
    expect(protected.main.get_by_text(re.compile(r"^\d+ of \d+ items$")).locator("visible=true")).to_be_visible(
        timeout=10_000)
    assert time.monotonic() - start < 10
    assert protected.page.evaluate("() => 1 + 1") == 2
    assert_inert(protected, "audit, log and instruction")


@pytest.mark.parametrize("page_path, title", [("", "Overview"), ("checklists", "Checklists"), ("pairs", "Skill pairs"),
                                              ("agreement", "Agreement"), ("runs", "Runs"),
                                              ("study_admin", "Human study")])
def test_every_admin_page_on_the_hostile_project_is_inert(protected: App, page_path: str, title: str) -> None:
    took = timed_open(protected, page_path, admin=ADMIN_TOKEN)
    expect(protected.title()).to_have_text(title)
    assert took < RENDER_BOUND_S, f"{title} took {took:.1f} s"
    assert_inert(protected, title)


def test_hostile_trial_on_the_rate_page_is_text_only(protected: App, hostile_project) -> None:  # noqa: ANN001
    _, token = hostile_project
    took = timed_open(protected, "rate", token=token)
    expect(protected.title()).to_have_text("Rating study")
    assert took < RENDER_BOUND_S, f"the rate page took {took:.1f} s"
    shows_as_text(protected, HOSTILE["javascript_link"])
    toggle = protected.main.get_by_text(re.compile(r"^Show all 1,0\d\d,\d\d\d characters")).locator("visible=true")
    expect(toggle.first).to_be_visible()
    protected.click(toggle.first)
    protected.settled(timeout=RENDER_BOUND_S * 1000)
    assert_inert(protected, "rate page")


# ---------------------------------------------------------------- access


def sign_in_only(app: App) -> None:
    """The sign-in form and nothing else of the app."""
    expect(app.main.get_by_text("This app is protected.")).to_be_visible()
    assert app.page.locator('[data-testid="stSidebarNav"]').count() == 0
    assert app.page.locator('[data-testid="stSidebar"]').count() == 0
    expect(app.main.locator("h1")).to_have_text(["GCPC"], use_inner_text=True)  # one h1, that one
    assert TRIAL_ID not in app.page.content()


@pytest.mark.parametrize("page_path", ["", "audit", "study_admin", "runs"])
def test_admin_pages_are_refused_without_the_admin_token(protected: App, page_path: str) -> None:
    protected.open(page_path)
    sign_in_only(protected)
    protected.open(page_path, admin="not-the-token")
    sign_in_only(protected)
    assert not [m for m in protected.watch.console if "does not seem to exist" in m], protected.watch.console


def test_sign_in_form_refuses_a_wrong_token_and_admits_the_right_one(protected: App) -> None:
    protected.open("study_admin")
    sign_in_only(protected)
    box = protected.main.get_by_label("Admin token")
    box.fill("wrong")
    protected.click(protected.button("Sign in"))
    expect(protected.main.get_by_text("Wrong admin token.")).to_be_visible()
    sign_in_only(protected)
    box.fill(ADMIN_TOKEN)
    protected.click(protected.button("Sign in"))
    expect(protected.title()).to_have_text("Human study")  # the page asked for, now admitted
    expect(protected.page.locator('[data-testid="stSidebarNav"]')).to_be_visible()


def rate_page_only(app: App) -> None:
    expect(app.title()).to_have_text("Rating study")
    assert app.page.locator('[data-testid="stSidebarNav"]').count() == 0
    assert app.page.locator('[data-testid="stSidebar"]').count() == 0
    content = app.page.content()
    assert TRIAL_ID not in content and "Human study" not in content


def test_a_rater_sees_only_the_rate_page_even_with_the_admin_token(protected: App, hostile_project) -> None:  # noqa: ANN001
    _, token = hostile_project
    protected.open("rate", token=token)
    rate_page_only(protected)
    for path in ("audit", "study_admin", ""):
        protected.open(path, token=token, admin=ADMIN_TOKEN)
        rate_page_only(protected)


@pytest.mark.parametrize("token", ["not-a-token", "x" * 32])
def test_a_wrong_rater_token_sees_only_an_error(protected: App, token: str) -> None:
    protected.open("rate", token=token)
    expect(protected.main.get_by_text("This link is not valid. Please ask the study organisers for a new one.")
           ).to_be_visible()
    assert protected.main.locator("h1, h2, h3").count() == 0
    assert protected.page.locator('[data-testid="stSidebar"]').count() == 0
    visible = [t.strip() for t in protected.main.locator('[data-testid="stElementContainer"]').all_inner_texts()
               if t.strip()]
    assert visible == ["This link is not valid. Please ask the study organisers for a new one."], visible
    assert HOSTILE_RATER not in protected.page.content()


# ---------------------------------------------------------------- uploaded archives


@pytest.fixture
def empty(page, watch: Watch, tmp_path: Path) -> Iterator[App]:  # noqa: ANN001 - playwright's Page
    """The app on a new, empty project of its own (uploads add trials: no shared project is touched)."""
    db = tmp_path / "empty.db"
    Store(db).close()  # a new project: the schema, no task, no trial
    env = server_env(db, tmp_path / "home", GCPC_REVIEWER=REVIEWER)
    with running(Server("upload", db, tmp_path / "server.log", env)) as server:
        yield App(page, server, watch)


def upload(app: App, name: str, data: bytes, holds: str) -> None:
    app.main.locator('input[type="file"]').set_input_files(
        files=[{"name": name, "mimeType": "application/octet-stream", "buffer": data}])
    expect(app.main.get_by_text(name, exact=True)).to_be_visible()
    app.click(app.main.get_by_role("radiogroup", name="The archive holds").get_by_text(holds, exact=True))
    app.click(app.button("Unpack and import"))


def test_an_uploaded_archive_climbing_out_is_refused_and_a_good_one_imports(empty: App, tmp_path: Path) -> None:
    empty.open("runs")
    expect(empty.title()).to_have_text("Runs")
    evil = io.BytesIO()
    with zipfile.ZipFile(evil, "w") as zf:
        zf.writestr("trials/t1/result.json", "{}")
        zf.writestr("trials/../../../escaped.txt", "<script>alert(1)</script>")
    upload(empty, "evil.zip", evil.getvalue(), "trials")
    expect(empty.text(re.compile(r"^Not started: evil\.zip: archive refused: member 'trials/\.\./\.\./\.\./escaped\.txt'"
                                 r": '\.\.' would climb out"))).to_be_visible()
    uploads = uploads_dir(empty.server.db)
    assert not list(tmp_path.parents[1].rglob("escaped.txt"))  # nowhere near the upload folder either
    assert not uploads.exists() or not any(uploads.iterdir())

    tasks, trials = write_demo_corpus(tmp_path / "corpus", seed=3)
    packed = io.BytesIO()
    with tarfile.open(fileobj=packed, mode="w:gz") as tf:
        tf.add(tasks, arcname="tasks")
        tf.add(trials, arcname="trials")
    upload(empty, "job.tar.gz", packed.getvalue(), "tasks and trials")
    expect(empty.text(re.compile(r"^Unpacked job\.tar\.gz; started import job \w+\.$"))).to_be_visible()
    expect(empty.main.locator('[data-testid="stCode"]').filter(has_text="trials: 36 imported").first).to_be_visible(
        timeout=120_000)
    assert len(Store(empty.server.db).trials.trajectories()) == 36
    assert_inert(empty, "runs, uploads")


# ---------------------------------------------------------------- DNS rebinding


REBINDING_HOST = "attacker.test"
"""A foreign name the rebinding browser resolves to 127.0.0.1, as a DNS-rebinding attacker's name would."""
WEBSOCKET_PROBE_JS = """async (url) => new Promise(resolve => {
  // What a script of the page's origin gets when it opens the app's WebSocket itself.
  const ws = new WebSocket(url, ['streamlit']);
  const seen = {opened: false, closeCode: null};
  ws.onopen = () => { seen.opened = true; ws.close(); };
  ws.onclose = (event) => { seen.closeCode = event.code; resolve(seen); };
  setTimeout(() => resolve(seen), 10000);
})"""


@pytest.fixture
def rebinding(chromium, watch: Watch) -> Iterator[object]:  # noqa: ANN001 - the package's browser launcher
    """A tab of a browser of its own that resolves `attacker.test` to 127.0.0.1."""
    browser = chromium().browser_type.launch(
        executable_path=str(CHROMIUM), headless=True,
        args=[*CHROMIUM_ARGS, f"--host-resolver-rules=MAP {REBINDING_HOST} 127.0.0.1"])
    try:
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        context.set_default_timeout(30_000)
        tab = context.new_page()
        watch.attach(tab)
        yield tab
    finally:
        browser.close()


def websocket_probe(tab, host: str, port: int) -> dict:  # noqa: ANN001 - playwright's Page
    return tab.evaluate(WEBSOCKET_PROBE_JS, f"ws://{host}:{port}/_stcore/stream")


def test_a_dns_rebinding_page_gets_no_admin_page_and_no_websocket(demo_server: Server, rebinding) -> None:  # noqa: ANN001
    """The demo server has no admin token (local mode): the committed `server.allowedHosts` refuses the
    WebSocket of a foreign Host, so the page never connects, and a script of that origin cannot open one."""
    events: list[str] = []  # what became of the app's own WebSockets (it retries after a refusal)

    def record(socket) -> None:  # noqa: ANN001 - playwright's WebSocket
        socket.on("socketerror", lambda error: events.append(f"error: {error}"))
        socket.on("close", lambda _: events.append("closed"))
        socket.on("framereceived", lambda _: events.append("frame"))

    rebinding.on("websocket", record)
    rebinding.goto(f"http://{REBINDING_HOST}:{demo_server.port}/runs")
    deadline = time.monotonic() + 20
    while "closed" not in events and time.monotonic() < deadline:
        rebinding.wait_for_timeout(100)
    assert events[:2] == ["error: Error during WebSocket handshake: Unexpected response code: 403", "closed"], events
    assert rebinding.locator('[data-testid="stSidebar"]').count() == 0
    assert rebinding.locator('[data-testid="stMain"] h1').count() == 0
    assert "Runs" not in rebinding.locator("body").inner_text()
    assert websocket_probe(rebinding, REBINDING_HOST, demo_server.port) == {"opened": False, "closeCode": 1006}

    rebinding.goto(f"{demo_server.url}/runs")  # the control: the app's own address connects, and is the owner
    expect(rebinding.locator('[data-testid="stMain"] h1')).to_have_text("Runs")
    assert websocket_probe(rebinding, "127.0.0.1", demo_server.port)["opened"] is True


@pytest.fixture
def any_host_server(demo_master: Path, tmp_path: Path) -> Iterator[Server]:
    """The demo project served (no admin token, loopback) with `server.allowedHosts` opened to every name,
    as an owner who overrode the committed config would: the app's own Host check is all that is left."""
    db = copy_db(demo_master, tmp_path / "demo.db")
    env = server_env(db, tmp_path / "home", GCPC_REVIEWER=REVIEWER, STREAMLIT_SERVER_ALLOWED_HOSTS="*")
    with running(Server("any-host", db, tmp_path / "server.log", env)) as server:
        yield server


def test_a_foreign_host_name_is_never_the_local_owner(any_host_server: Server, rebinding) -> None:  # noqa: ANN001
    app = App(rebinding, any_host_server, Watch())
    for path in ("runs", "study_admin", ""):
        rebinding.goto(f"http://{REBINDING_HOST}:{any_host_server.port}/{path}")
        app.settled()  # this time the WebSocket is let in
        expect(app.main.get_by_text(re.compile("has no admin token, so no page is open"))).to_be_visible()
        assert rebinding.locator('[data-testid="stSidebar"]').count() == 0
        expect(app.main.locator("h1")).to_have_text(["GCPC"], use_inner_text=True)  # one h1, that one
    app.open("runs")  # the control: at 127.0.0.1 the same server is the owner's
    expect(app.title()).to_have_text("Runs")
