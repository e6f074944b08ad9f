"""End-to-end fixtures: Streamlit servers (demo, hostile + admin token, real corpus) and Debian's
Chromium driven by Playwright; a screenshot, the page HTML and the server log on every failure.

Servers and the browser live for this package only (package scope), so nothing browser-related stays
alive while the rest of the suite runs. No browser is ever downloaded: when Chromium cannot start,
every e2e test fails with the reason (only the real-corpus tests skip, when the corpus is absent).
"""

from __future__ import annotations

import os
import re
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from conftest import copy_db

from gcpc_core.store import Store

from .helpers import CHROMIUM, CHROMIUM_ARGS, App, Server, Watch, _RUN_COUNTER_JS, running, server_env

ADMIN_TOKEN = "e2e-admin-7Hq2-secret"
"""$GCPC_ADMIN_TOKEN of the protected (hostile) server."""
REVIEWER = "e2e-reviewer"
E2E_TIMEOUT = 240
"""Seconds one e2e test may take (setup included) before pytest-timeout fails it: a hung browser tab fails
the test instead of stalling the run."""
ARTIFACTS = Path(os.environ.get("GCPC_E2E_ARTIFACTS") or Path(tempfile.gettempdir()) / "gcpc-e2e-artifacts")
"""Where screenshots of failed e2e tests go (named in the failure message)."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.e2e)
            item.add_marker(pytest.mark.timeout(E2E_TIMEOUT))


# ---------------------------------------------------------------- browser


@pytest.fixture(scope="package", autouse=True)
def projects_before_browser(request: pytest.FixtureRequest) -> None:
    """Build the session's demo and real-corpus projects before the browser starts: building judges with
    asyncio.run(), which refuses to run inside Playwright's running event loop. (The real corpus may be
    absent: its tests then skip with the reason.)"""
    request.getfixturevalue("demo_master")
    try:
        request.getfixturevalue("real_master")
    except pytest.skip.Exception:
        pass


@pytest.fixture(scope="package")
def chromium() -> Iterator[object]:
    """Debian's Chromium (never downloaded) under Playwright, for this package; Playwright gives it a
    fresh temporary user-data dir. Relaunched if it dies, so one crashed tab cannot fail every later test."""
    if not CHROMIUM.exists():
        pytest.fail(f"e2e: Chromium not found at {CHROMIUM}. Install Debian's package "
                    f"(`apt-get install -y chromium`, as .ci/run does) or set GCPC_CHROMIUM; "
                    f"never `playwright install`.", pytrace=False)
    from playwright.sync_api import sync_playwright

    pw = sync_playwright().start()
    holder = {"browser": None}

    def browser():  # noqa: ANN202 - playwright's Browser
        if holder["browser"] is None or not holder["browser"].is_connected():
            try:
                holder["browser"] = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS,
                                                       headless=True)
            except Exception as exc:  # noqa: BLE001 - say why the browser did not start, loudly
                pytest.fail(f"e2e: cannot start Chromium at {CHROMIUM}: {exc}", pytrace=False)
        return holder["browser"]

    browser()  # fail here, once, when the browser cannot start at all
    try:
        yield browser
    finally:
        if holder["browser"] is not None:
            holder["browser"].close()
        pw.stop()


@pytest.fixture
def watch() -> Watch:
    return Watch()


@pytest.fixture
def page(chromium, watch: Watch) -> Iterator[object]:  # noqa: ANN001 - the `chromium` fixture's launcher
    """A tab in a fresh browser context (no shared cookies or storage; a fresh Streamlit session), its
    dialogs, console, page errors and requests recorded."""
    context = chromium().new_context(viewport={"width": 1400, "height": 1000}, accept_downloads=True)
    context.set_default_timeout(30_000)
    context.add_init_script(_RUN_COUNTER_JS)
    tab = context.new_page()
    watch.attach(tab)
    try:
        yield tab
    finally:
        try:
            context.close()
        except Exception:  # noqa: BLE001 - a dead browser is relaunched by the next test
            pass


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    """On a failed e2e test: a full-page screenshot and the page HTML, named in the failure message,
    plus the tail of every running server's log."""
    outcome = yield
    report = outcome.get_result()
    tab = item.funcargs.get("page") if hasattr(item, "funcargs") else None
    if not report.failed or tab is None or report.when not in ("setup", "call"):
        return
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    stem = ARTIFACTS / (re.sub(r"[^\w.-]+", "_", item.nodeid.split("::", 1)[-1])[:120] + time.strftime("-%H%M%S"))
    lines = []
    try:  # Streamlit scrolls inside its main container: grow the viewport to show the whole page
        height = tab.evaluate("() => Math.max(...[...document.querySelectorAll("
                              "'[data-testid=stMain], [data-testid=stAppViewContainer], body')].map(e => e.scrollHeight))")
        tab.set_viewport_size({"width": 1400, "height": max(1000, min(int(height), 12_000))})
        tab.screenshot(path=f"{stem}.png", full_page=True, timeout=15_000)
        lines.append(f"screenshot: {stem}.png")
    except Exception as exc:  # noqa: BLE001 - a broken page must not hide the test's own failure
        lines.append(f"screenshot failed: {exc}")
    try:
        Path(f"{stem}.html").write_text(tab.content(), encoding="utf-8")
        lines.append(f"page HTML: {stem}.html  (URL {tab.url})")
    except Exception as exc:  # noqa: BLE001
        lines.append(f"page HTML failed: {exc}")
    watch = item.funcargs.get("watch")
    if watch is not None and (watch.console or watch.errors or watch.dialogs):
        lines.append("browser console:\n" + "\n".join([*watch.console[-20:], *watch.errors, *watch.dialogs]))
    for name in ("demo_server", "protected_server", "real_server"):
        server = item.funcargs.get(name)
        if isinstance(server, Server):
            lines.append(f"server {server.name} log ({server.log}):\n{server.log_tail(25)}")
    text = "\n".join(lines)
    if hasattr(report.longrepr, "addsection"):
        report.longrepr.addsection("e2e artifacts", text)
    else:
        report.sections.append(("e2e artifacts", text))


# ---------------------------------------------------------------- servers


@pytest.fixture(scope="package")
def demo_server(demo_master: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """The app on a private copy of the demo project; no admin token (local owner use)."""
    root = tmp_path_factory.mktemp("e2e-demo")
    db = copy_db(demo_master, root / "demo.db")
    env = server_env(db, root / "home", GCPC_REVIEWER=REVIEWER)
    with running(Server("demo", db, root / "server.log", env)) as server:
        yield server


HOSTILE_RATER = "h-rater"


@pytest.fixture(scope="package")
def hostile_project(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A project with only the hostile-text task and trial (tests/drills/hostile.py: script tags,
    onerror images, javascript: links, remote markdown images, ANSI escapes, a 1 MB line) and a
    one-rater study over it. Returns the DB and that rater's token."""
    from annotations import DesignParams, create_study
    from drills.hostile import TASK_ID, add_hostile_project

    root = tmp_path_factory.mktemp("e2e-hostile")

    def build() -> str:
        store = Store(root / "hostile.db")
        _, report = add_hostile_project(store, root / "corpus")
        assert report.trials_imported == 1 and not report.skipped, report.summary_lines()
        created = create_study(store, DesignParams(tasks=None, per_task=1, raters_per_unit=1, seed=0,
                                                   raters=(HOSTILE_RATER,), pairs_per_task=0, task_ids=(TASK_ID,)),
                               study_id="hostile-study", name="Hostile study", created_by="e2e")
        store.close()
        return created.tokens[HOSTILE_RATER]

    # The judge runs on asyncio.run(), which refuses to start inside Playwright's running loop (the
    # browser may be up already): build in a thread of its own.
    with ThreadPoolExecutor(1) as pool:
        token = pool.submit(build).result()
    return root / "hostile.db", token


@pytest.fixture(scope="package")
def protected_server(hostile_project: tuple[Path, str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """The app on the hostile project, with $GCPC_ADMIN_TOKEN set (exposed to raters)."""
    db, _ = hostile_project
    root = tmp_path_factory.mktemp("e2e-protected")
    env = server_env(db, root / "home", GCPC_ADMIN_TOKEN=ADMIN_TOKEN, GCPC_REVIEWER=REVIEWER)
    with running(Server("protected", db, root / "server.log", env)) as server:
        yield server


REAL_RATER = "r-real"


@pytest.fixture(scope="package")
def real_project(real_master: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A private copy of the real SkillsBench project (skipped when the corpus is absent) with a small
    one-rater study over real logs. Returns the DB and that rater's token."""
    from annotations import DesignParams, create_study

    root = tmp_path_factory.mktemp("e2e-real")
    db = copy_db(real_master, root / "real.db")

    def build() -> str:
        store = Store(db)
        created = create_study(store, DesignParams(tasks=2, per_task=2, raters_per_unit=1, seed=0, raters=(REAL_RATER,),
                                                   pairs_per_task=1), study_id="real-study", name="Real study",
                               created_by="e2e")
        store.close()
        return created.tokens[REAL_RATER]

    with ThreadPoolExecutor(1) as pool:  # off Playwright's running event loop, like hostile_project
        return db, pool.submit(build).result()


@pytest.fixture(scope="package")
def real_study_token(real_project: tuple[Path, str]) -> str:
    return real_project[1]


@pytest.fixture(scope="package")
def real_server(real_project: tuple[Path, str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """The app on the real-corpus project."""
    db, _ = real_project
    root = db.parent
    env = server_env(db, root / "home", GCPC_REVIEWER=REVIEWER)
    with running(Server("real", db, root / "server.log", env)) as server:
        yield server


# ---------------------------------------------------------------- apps


@pytest.fixture
def demo(demo_server: Server, page, watch: Watch) -> App:  # noqa: ANN001 - servers first: built before the browser
    return App(page, demo_server, watch)


@pytest.fixture
def protected(protected_server: Server, page, watch: Watch) -> App:  # noqa: ANN001
    return App(page, protected_server, watch)


@pytest.fixture
def real(real_server: Server, page, watch: Watch) -> App:  # noqa: ANN001
    return App(page, real_server, watch)
