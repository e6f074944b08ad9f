"""The rate page and the app's doors in a real browser, on a protected server ($GCPC_ADMIN_TOKEN set)
whose study holds 10,000-step records (tests/drills/long_log.py) and one record whose stored log is
corrupt: the admin token leaves the URL at once, a rater without a token reaches no admin page,
invisible characters are shown and searchable, raters never see a traceback, long records are paged
with the answer controls on the first screen, rater links name the address the app is served at, and
no Deploy button is shown. Behind a real reverse proxy (tests/reverse_proxy.py, adding X-Forwarded-For to
HTTP and WebSocket requests), an app without an admin token has no admin and refuses rater links, a forged
X-Forwarded-For buys no fresh sign-in budget, and a trusted proxy's forwarded client is what is counted."""

from __future__ import annotations

import re
import sqlite3
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import copy_db
from playwright.sync_api import expect
from reverse_proxy import running_proxy

from annotations import DesignParams, create_study
from annotations.tokens import SignInLimiter
from drills.long_log import BIDI_TEXT, LONG_TASK, add_long_log_study, long_events
from gcpc_core.models import Task, Trajectory
from gcpc_core.text import show_invisible
from gcpc_core.store import Store
from store.helpers import replace_trajectory

from .conftest import ADMIN_TOKEN, REVIEWER
from .helpers import App, Server, Watch, running, server_env

FIRST_RENDER_BOUND_S = 15.0
NEXT_BOUND_S = 10.0
"""Browser-side bounds for a 10,000-step record on this shared machine (bench/app_bench.py measures the
server side against the 5 s / 2 s targets)."""
BROKEN_TASK, BROKEN_TRIAL = "broken-log", "broken-log__c0rrupt"


@pytest.fixture(scope="module")
def long_project(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    """(DB, token of the long-log rater, token of a rater whose only record has a corrupt log)."""
    root = tmp_path_factory.mktemp("e2e-long")
    db = root / "long.db"

    def build() -> tuple[str, str]:
        store = Store(db)
        long_token = add_long_log_study(store, steps=10_000, trajectories=3)
        store.trials.upsert_task(Task(id=BROKEN_TASK, instruction="Do it.", source_path="/t"))
        replace_trajectory(store, Trajectory(id=BROKEN_TRIAL, task=BROKEN_TASK, agent="a", model="m", outcome="FAIL",
                                            source_path="/x", log_path="l", log_format="gcpc-jsonl"),
                                 long_events(5))
        broken = create_study(store, DesignParams(tasks=None, per_task=1, raters_per_unit=1, seed=0, raters=("b-rater",),
                                                  pairs_per_task=0, task_ids=(BROKEN_TASK,)),
                              study_id="broken-study", created_by="e2e")
        store.close()
        with sqlite3.connect(db) as conn:  # a log the app cannot read back (as a damaged or crafted DB would be)
            conn.execute("UPDATE events SET kind = 'bogus' WHERE trajectory_id = ?", [BROKEN_TRIAL])
        return long_token, broken.tokens["b-rater"]

    with ThreadPoolExecutor(1) as pool:  # off Playwright's running event loop
        long_token, broken_token = pool.submit(build).result()
    return db, long_token, broken_token


@pytest.fixture(scope="module")
def long_server(long_project: tuple[Path, str, str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    db = long_project[0]
    root = tmp_path_factory.mktemp("e2e-long-server")
    env = server_env(db, root / "home", GCPC_ADMIN_TOKEN=ADMIN_TOKEN, GCPC_REVIEWER=REVIEWER)
    with running(Server("long", db, root / "server.log", env)) as server:
        yield server


@pytest.fixture
def long(long_server: Server, page, watch: Watch) -> App:  # noqa: ANN001 - playwright's Page
    return App(page, long_server, watch)


def no_deploy_button(app: App) -> None:
    assert app.page.locator('[data-testid="stAppDeployButton"]').count() == 0
    expect(app.page.get_by_role("button", name="Deploy")).to_have_count(0)


# ---------------------------------------------------------------- secrets and doors


def test_the_admin_token_leaves_the_url_at_once_and_no_link_carries_it(long: App) -> None:
    trial = f"{LONG_TASK}__run0000x"
    long.open("audit", admin=ADMIN_TOKEN, trajectory=trial)
    expect(long.main.get_by_role("heading", name=trial)).to_be_visible()
    expect(long.page).not_to_have_url(re.compile("admin|" + re.escape(ADMIN_TOKEN)))
    expect(long.page).to_have_url(re.compile(re.escape(f"trajectory={trial}")))  # what is shown can still be shared
    hrefs = long.page.evaluate("() => [...document.querySelectorAll('a[href]')].map(a => a.href)")
    assert not [h for h in hrefs if ADMIN_TOKEN in h], hrefs
    assert ADMIN_TOKEN not in long.page.content()
    long.click(long.sidebar.get_by_role("link", name="Human study"))  # signed in for the session, not by the URL
    expect(long.title()).to_have_text("Human study")
    assert ADMIN_TOKEN not in long.page.url
    no_deploy_button(long)


def test_a_rater_who_drops_the_token_reaches_no_admin_page(long: App, long_project: tuple[Path, str, str]) -> None:
    long.open("rate", token=long_project[1])
    expect(long.title()).to_have_text("Rating study")
    no_deploy_button(long)
    for path in ("", "runs", "study_admin"):
        long.open(path)
        expect(long.main.get_by_text("This app is protected.")).to_be_visible()
        assert long.page.locator('[data-testid="stSidebar"]').count() == 0
        expect(long.main.locator("h1")).to_have_text(["GCPC"], use_inner_text=True)  # one h1, that one


def test_rater_links_name_the_served_address_and_are_shown_again(long: App) -> None:
    long.open("study_admin", admin=ADMIN_TOKEN)
    expect(long.title()).to_have_text("Human study")
    expect(long.main.get_by_role("textbox", name="App URL for rater links")).to_have_value(long.server.url)
    long.select("Study", re.compile(r"long-study"))
    long.tab("Raters and links")
    long.click(long.button("Show link"))
    code = long.main.locator('[data-testid="stCode"]').filter(has_text="/rate?token=").locator("visible=true").first
    expect(code).to_be_visible()
    link = code.inner_text().strip()
    assert link.startswith(f"{long.server.url}/rate?token="), link
    long.page.goto(link)
    long.settled()
    expect(long.title()).to_have_text("Rating study")


# ---------------------------------------------------------------- what raters see


def test_long_record_is_paged_with_the_controls_on_the_first_screen(long: App, long_project: tuple[Path, str, str]) -> None:
    started = time.monotonic()
    long.open("rate", token=long_project[1])
    expect(long.title()).to_have_text("Rating study")
    expect(long.text(re.compile(r"^Steps 1–25 of 10,000"))).to_be_visible()
    first = time.monotonic() - started
    assert first < FIRST_RENDER_BOUND_S, f"first render took {first:.1f} s"
    elements = long.page.evaluate("() => document.querySelectorAll('*').length")
    assert elements < 6_000, f"{elements} DOM elements: the whole record was rendered"

    viewport = long.page.viewport_size["height"]
    for control in (long.button(re.compile(r"^1 · ")), long.button(re.compile(r"^5 · ")), long.button("Save and next"),
                    long.main.get_by_role("textbox", name="Comment (optional)")):
        box = control.bounding_box()
        assert box is not None and box["y"] >= 0 and box["y"] + box["height"] <= viewport, (control, box, viewport)

    heading = long.main.locator("h3").first
    before = heading.inner_text()
    started = time.monotonic()
    long.click(long.button("Next"))
    expect(heading).not_to_have_text(before)
    expect(long.text(re.compile(r"^Steps 1–25 of 10,000"))).to_be_visible()
    took = time.monotonic() - started
    assert took < NEXT_BOUND_S, f"Next took {took:.1f} s"
    long.click(long.button("Later steps"))
    expect(long.text(re.compile(r"^Steps 26–50 of 10,000"))).to_be_visible()


def test_invisible_characters_are_shown_to_raters_and_searchable_by_admins(long: App,
                                                                           long_project: tuple[Path, str, str]) -> None:
    long.open("rate", token=long_project[1])
    visible = show_invisible(BIDI_TEXT)  # report_⟨U+202E⟩TXT.EXE⟨U+202C⟩
    expect(long.main.get_by_text(visible, exact=False).locator("visible=true").first).to_be_visible()
    assert "\u202e" not in long.main.inner_text()

    trial = f"{LONG_TASK}__run0000x"
    long.open("audit", admin=ADMIN_TOKEN, trajectory=trial)
    long.tab("Log")
    search = long.main.get_by_label("Search the log")
    search.fill("password")
    long.rerun(lambda: search.press("Enter"))
    expect(long.text(re.compile(r"^1 of 10000 events shown, 1 search hits"))).to_be_visible()
    expect(long.main.get_by_text("pass⟨U+200B⟩word", exact=False).locator("visible=true").first).to_be_visible()


def test_raters_never_see_error_details_and_admins_do(long: App, long_project: tuple[Path, str, str]) -> None:
    long.open("rate", token=long_project[2])
    expect(long.page.get_by_text(re.compile("This app has encountered an error"))).to_be_visible()
    content = long.page.content()
    for leak in ("Traceback", "validation error", "bogus", str(Path(__file__).resolve().parents[2]), ".py"):
        assert leak not in content, f"a rater sees {leak!r}"

    long.open("audit", admin=ADMIN_TOKEN, trajectory=BROKEN_TRIAL)
    expect(long.page.get_by_text(re.compile("validation error")).first).to_be_visible()  # the admin gets the details


# ---------------------------------------------------------------- an app open to everyone


@dataclass
class Front:
    """A server as a reverse proxy in front of it serves it (what `App` needs of a server)."""

    url: str
    db: Path
    link = Server.link


@pytest.fixture
def proxied(demo_server: Server, page, watch: Watch, tmp_path: Path) -> Iterator[App]:  # noqa: ANN001
    """The demo server (no admin token, loopback) reached through a real reverse proxy that adds
    X-Forwarded-For to every request, the WebSocket upgrade included: open to everyone."""
    with running_proxy(demo_server.url, "203.0.113.7", tmp_path / "proxy.log") as url:
        yield App(page, Front(url, demo_server.db), watch)


def test_without_an_admin_token_an_app_open_to_everyone_has_no_admin_and_no_raters(proxied: App) -> None:
    from annotations import DEMO_STUDY_ID, issue_link

    for path in ("", "runs", "study_admin"):
        proxied.open(path)
        expect(proxied.main.get_by_text(re.compile("has no admin token, so no page is open"))).to_be_visible()
        assert proxied.page.locator('[data-testid="stSidebar"]').count() == 0
        assert proxied.main.get_by_label("Admin token").count() == 0
    token = issue_link(Store(proxied.server.db), DEMO_STUDY_ID, "demo-you")
    proxied.open("rate", token=token)
    expect(proxied.main.get_by_text("This app is not set up for study raters yet. Please tell the study organisers.")
           ).to_be_visible()
    assert proxied.main.locator("h1").count() == 0


# ---------------------------------------------------------------- the sign-in limit behind proxies


GUESSES = SignInLimiter().max_failures
"""Failed sign-ins a client gets at full speed (the server's default limiter)."""
THROTTLED = re.compile(r"^Wrong admin token\. Many sign-ins from (\S+) failed lately, so each check now waits")


@pytest.fixture
def guarded(demo_master: Path, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Server]:
    """The demo project with an admin token, on a server of its own (a fresh sign-in limiter); the test's
    `trusted_proxies` parameter is its $GCPC_TRUSTED_PROXIES."""
    db = copy_db(demo_master, tmp_path / "demo.db")
    extra = {"GCPC_TRUSTED_PROXIES": request.param} if getattr(request, "param", None) else {}
    env = server_env(db, tmp_path / "home", GCPC_ADMIN_TOKEN=ADMIN_TOKEN, GCPC_REVIEWER=REVIEWER, **extra)
    with running(Server("guarded", db, tmp_path / "server.log", env)) as server:
        yield server


def guess(app: App, value: str) -> str:
    """Sign in with `value` in a fresh session (a page load) and return what the sign-in page says."""
    app.open("", admin=value)
    alert = app.main.locator('[data-testid="stAlert"]').first
    expect(alert).to_be_visible()
    return alert.inner_text().strip()


def test_a_forged_x_forwarded_for_buys_no_fresh_budget_and_guessers_never_lock_the_admin_out(
        guarded: Server, page, watch: Watch, tmp_path: Path) -> None:  # noqa: ANN001 - playwright's Page
    """Guessers on the server's machine (an SSH tunnel, socat: loopback peers, as the admin is) use up the
    fast budget; one that writes a new X-Forwarded-For on every guess (the proxy here reports a fresh
    address per request; no trusted proxy is configured) is counted as what it is, a loopback peer, and
    waits its turn; and the real admin on loopback is then delayed, not locked out."""
    direct = App(page, guarded, watch)
    for i in range(GUESSES):
        assert guess(direct, f"guess-{i}") == "Wrong admin token.", i
    with running_proxy(guarded.url, "random", tmp_path / "proxy.log") as url:
        message = guess(App(page, Front(url, guarded.db), watch), "forged")
        assert THROTTLED.match(message) and THROTTLED.match(message)[1] == "loopback", message
    direct.open("runs", admin=ADMIN_TOKEN)
    expect(direct.title()).to_have_text("Runs")


@pytest.mark.parametrize("guarded", ["127.0.0.1"], indirect=True)
def test_behind_a_trusted_proxy_the_limit_counts_the_forwarded_client(guarded: Server, page, watch: Watch,  # noqa: ANN001
                                                                      tmp_path: Path) -> None:
    """With $GCPC_TRUSTED_PROXIES naming the proxy, its X-Forwarded-For entry is the client: a guesser
    behind it is throttled by its own address, a client elsewhere is not, and the admin behind the same
    proxy is let in."""
    with running_proxy(guarded.url, "203.0.113.7", tmp_path / "proxy.log") as url:
        remote = App(page, Front(url, guarded.db), watch)
        for i in range(GUESSES):
            assert guess(remote, f"guess-{i}") == "Wrong admin token.", i
        message = guess(remote, "one-more")
        assert THROTTLED.match(message) and THROTTLED.match(message)[1] == "203.0.113.7", message
        assert guess(App(page, guarded, watch), "a-typo") == "Wrong admin token."  # loopback: another client
        remote.open("runs", admin=ADMIN_TOKEN)
        expect(remote.title()).to_have_text("Runs")
