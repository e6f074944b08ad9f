"""End-to-end helpers: Streamlit servers as subprocesses, Debian's Chromium, and a small driver for
Streamlit pages in a real browser (waits on the app's own run state and on visible text, never sleeps).

Chromium is never downloaded: the suite drives `/usr/bin/chromium` (the Debian `chromium` package,
installed by `.ci/run`), or `$GCPC_CHROMIUM`.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar
from urllib.parse import urlencode

from playwright.sync_api import Locator, Page, expect
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = Path(os.environ.get("GCPC_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
SERVER_START_TIMEOUT = 90.0
"""Seconds a Streamlit server may take to answer /_stcore/health (a cold import of the app's stack)."""
RUN_TIMEOUT = 45_000
"""Milliseconds one script run may take before a wait fails (first runs compile caches)."""

expect.set_options(timeout=RUN_TIMEOUT)

T = TypeVar("T")


# ---------------------------------------------------------------- servers


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Server:
    """One `streamlit run app.py` subprocess on a loopback port."""

    name: str
    db: Path
    log: Path
    env: dict[str, str]
    port: int = 0
    proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def link(self, path: str = "", **query: str) -> str:
        return f"{self.url}/{path.lstrip('/')}" + (f"?{urlencode(query)}" if query else "")

    def log_tail(self, n: int = 40) -> str:
        try:
            lines = self.log.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            return "(no server log)"
        return "\n".join(lines[-n:])

    def start(self) -> Server:
        """Start on a free port and wait for /_stcore/health; a port lost to a race is retried."""
        for _ in range(3):
            self.port = free_port()
            cmd = [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
                   "--server.port", str(self.port), "--server.address", "127.0.0.1",
                   "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none",
                   "--server.runOnSave", "false"]
            with open(self.log, "ab") as out:
                self.proc = subprocess.Popen(cmd, cwd=REPO, env=self.env, stdout=out, stderr=subprocess.STDOUT,
                                             stdin=subprocess.DEVNULL, start_new_session=True,
                                             preexec_fn=_die_with_parent)
            if self._wait_healthy():
                return self
            if "already in use" not in self.log_tail():
                break
        raise RuntimeError(f"Streamlit server {self.name!r} did not become healthy on {self.url} within "
                           f"{SERVER_START_TIMEOUT:.0f} s (exit code {self.proc.poll() if self.proc else None}); "
                           f"log {self.log}:\n{self.log_tail()}")

    def _wait_healthy(self) -> bool:
        deadline = time.monotonic() + SERVER_START_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                return False
            try:
                with urllib.request.urlopen(f"{self.url}/_stcore/health", timeout=2) as response:
                    if response.status == 200:
                        return True
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.2)
        self.stop()
        return False

    def stop(self) -> None:
        """Terminate the server's process group (the server and any import workers it forked), then
        kill it if it lingers. Its own session keeps signals sent to its group away from the tests."""
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        except ProcessLookupError:
            pass


def _die_with_parent() -> None:
    """In the server's child process: be sent SIGTERM when the test process dies (killed by a timeout, say),
    so that no server outlives the run even when fixture teardown never runs (Linux)."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def server_env(db: Path, home: Path, **extra: str) -> dict[str, str]:
    """The server's environment: the project DB, no LLM endpoint, no admin token unless given."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "GCPC_MODEL", "GCPC_ADMIN_TOKEN", "GCPC_REVIEWER")}
    env.update(GCPC_DB=str(db), GCPC_HOME=str(home), PYTHONUNBUFFERED="1", **extra)
    return env


@contextmanager
def running(server: Server) -> Iterator[Server]:
    """Start `server`; always stop it."""
    try:
        yield server.start()
    finally:
        server.stop()


# ---------------------------------------------------------------- what the browser saw


@dataclass
class Watch:
    """What one page did beyond its DOM: dialogs (alert/confirm/prompt), console output, page errors,
    requests. Dialogs are dismissed and recorded: an executed `alert(1)` shows up here."""

    dialogs: list[str] = field(default_factory=list)
    console: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)

    def attach(self, page: Page) -> None:
        def on_dialog(dialog) -> None:  # noqa: ANN001 - playwright's Dialog
            self.dialogs.append(f"{dialog.type}: {dialog.message}")
            dialog.dismiss()

        page.on("dialog", on_dialog)
        page.on("console", lambda m: self.console.append(f"{m.type}: {m.text}"))
        page.on("pageerror", lambda e: self.errors.append(str(e)))
        page.on("request", lambda r: self.requests.append(r.url))


# ---------------------------------------------------------------- driving Streamlit


_SETTLED_JS = """() => {
  const app = document.querySelector('[data-testid="stApp"]');
  if (!app || app.dataset.testConnectionState !== 'CONNECTED' || app.dataset.testScriptState === 'running'
      || app.dataset.testScriptState === 'rerunRequested') return false;
  if (window.__gcpcRerunPending) return false;  // a run ended for st.rerun()/st.switch_page(): its next one is due
  // a page just (re)loaded is idle until its first run starts, which a loaded server can delay (no counter: a
  // tab without the init script)
  if (window.__gcpcAsked !== undefined && !window.__gcpcRuns) return false;
  if (document.querySelector('[data-testid="stStatusWidget"] [data-testid="stStatusWidgetRunningIcon"]')) return false;
  return !document.querySelector('[data-testid="stMain"] [data-stale="true"]');
}"""

_RUN_COUNTER_JS = """
(() => {
  // Counts changes of the app's script-run state (each run changes it at least twice), so that an action
  // can wait for the run it started even when that run is over before anyone looks.
  window.__gcpcRuns = 0;
  let restarted = false;  // the run after a pending rerun has begun (its new_session came)
  const observer = new MutationObserver((records) => {
    window.__gcpcRuns += records.length;
    const app = document.querySelector('[data-testid="stApp"]');
    if (restarted && app && app.dataset.testScriptState === 'running') window.__gcpcRerunPending = false;
  });
  const start = () => observer.observe(document.documentElement,
    {subtree: true, attributes: true, attributeFilter: ['data-test-script-state']});
  if (document.documentElement) start(); else document.addEventListener('DOMContentLoaded', start);

  // What the app's WebSocket carries, read from the top-level fields of its protobuf messages:
  // - __gcpcAsked counts the runs the page asked for (a BackMsg whose field is rerun_script, 11): the
  //   browser does not mark a run as requested until the server starts it, which on a loaded machine can
  //   be seconds after the click;
  // - __gcpcRerunPending is set when a run ends early for a rerun (ForwardMsg script_finished, field 6, =
  //   FINISHED_EARLY_FOR_RERUN, 2: st.rerun(), st.switch_page()) and cleared once the next run has started
  //   (its new_session, field 4, came and the page shows it running; or 500 ms after that new_session, should
  //   the page never show the state between the two runs): in between the page looks idle, with the first
  //   run's output.
  window.__gcpcAsked = 0;
  window.__gcpcRerunPending = false;
  let generation = 0;
  const fields = (data) => {
    const b = data instanceof ArrayBuffer ? new Uint8Array(data)
      : ArrayBuffer.isView(data) ? new Uint8Array(data.buffer, data.byteOffset, data.byteLength) : null;
    const out = [];
    if (!b) return out;
    let i = 0;
    const varint = () => {
      let r = 0, m = 1, x;
      do { x = b[i++]; r += (x & 0x7f) * m; m *= 128; } while (x & 0x80 && i < b.length);
      return r;
    };
    while (i < b.length) {
      const tag = varint(), field = Math.floor(tag / 8), wire = tag % 8;
      if (wire === 0) out.push([field, varint()]);
      else if (wire === 2) { const n = varint(); out.push([field, null]); i += n; }
      else if (wire === 1) i += 8;
      else if (wire === 5) i += 4;
      else break;
    }
    return out;
  };
  const Native = window.WebSocket;
  const send = Native.prototype.send;
  Native.prototype.send = function (data) {
    try { if (fields(data).some(([f]) => f === 11)) window.__gcpcAsked += 1; } catch (e) {}
    return send.call(this, data);
  };
  window.WebSocket = class extends Native {
    constructor(...args) {
      super(...args);
      this.addEventListener('message', (event) => {
        try {
          for (const [f, v] of fields(event.data)) {
            if (f === 6 && v === 2) { window.__gcpcRerunPending = true; restarted = false; generation += 1; }
            if (f === 4 && window.__gcpcRerunPending && !restarted) {
              restarted = true;
              const mine = generation;
              setTimeout(() => { if (generation === mine) window.__gcpcRerunPending = false; }, 500);
            }
          }
        } catch (e) {}
      });
    }
  };
})();
"""


class App:
    """A Streamlit page in the browser. Actions that rerun the script wait for the run to finish."""

    def __init__(self, page: Page, server: Server, watch: Watch) -> None:
        self.page, self.server, self.watch = page, server, watch

    # -- navigation and waiting

    def open(self, path: str = "", **query: str) -> App:
        self.page.goto(self.server.link(path, **query))
        self.settled()
        return self

    def settled(self, timeout: float = RUN_TIMEOUT) -> None:
        """Connected, a first run started since the page loaded, no script run in progress, no stale element
        left from the previous run, and no run due after one that ended early for st.rerun() or
        st.switch_page() (the page looks idle between the two, showing the first one's output; seen on the
        sign-in form, which reruns at once)."""
        self.page.wait_for_function(_SETTLED_JS, timeout=timeout, polling=100)
        # a run may be about to start (e.g. a page switch right after the first run): settle twice
        self.page.wait_for_timeout(150)
        self.page.wait_for_function(_SETTLED_JS, timeout=timeout, polling=100)

    def runs(self) -> int:
        return int(self.page.evaluate("() => window.__gcpcRuns || 0"))

    def asked(self) -> int:
        """Script runs this page has asked the server for (rerun messages sent on its WebSocket)."""
        return int(self.page.evaluate("() => window.__gcpcAsked || 0"))

    def rerun(self, action: Callable[[], object], *, start_timeout: float = 5_000) -> bool:
        """Do `action`, wait until it has started a script run (if it does), then until all runs end;
        True if it started one.

        The browser shows no sign of a run it asked for until the server starts it, which on a loaded
        machine can take longer than `start_timeout`: settling then would find the page idle, still showing
        the previous run, and the next read would see the old state (and `click(must_run=True)` would click
        again, doing the action twice). So a run the page has asked for (its rerun message went out) is
        waited for as long as a run may take; only an action that asked for none (the same value again, a
        click lost while the page was drawing) settles after `start_timeout`."""
        before, asked = self.runs(), self.asked()
        action()
        ran, sent = f"(window.__gcpcRuns || 0) > {before}", f"(window.__gcpcAsked || 0) > {asked}"
        try:
            self.page.wait_for_function(f"() => {ran} || {sent}", timeout=start_timeout, polling=50)
            started = True
        except PlaywrightTimeoutError:  # the action did not rerun (the same value again, say): settle anyway
            started = False
        if started and self.runs() <= before:  # asked for, not started yet: the server is slow, not idle
            try:
                self.page.wait_for_function(f"() => {ran}", timeout=RUN_TIMEOUT, polling=50)
            except PlaywrightTimeoutError:
                pass  # a run that never showed (asked for during another run, which took it): settle
        self.settled()
        return started

    # -- locators

    @property
    def main(self) -> Locator:
        return self.page.locator('[data-testid="stMain"]')

    @property
    def sidebar(self) -> Locator:
        return self.page.locator('[data-testid="stSidebar"]')

    def title(self) -> Locator:
        return self.main.locator("h1")

    def text(self, value: str | re.Pattern, *, exact: bool = False) -> Locator:
        """Visible elements of the main area holding `value`."""
        return self.main.get_by_text(value, exact=exact).locator("visible=true")

    def button(self, name: str | re.Pattern, *, scope: Locator | None = None) -> Locator:
        """The visible button labelled `name`: the whole label (a plain substring match would take
        "Disagree" for "Agree"), followed by the shortcut hint Streamlit adds to the accessible name."""
        if isinstance(name, str):
            name = re.compile(rf"^{re.escape(name)}(?: Shortcut .+)?$")
        return (scope or self.main).get_by_role("button", name=name).locator("visible=true").first

    def combobox(self, label: str, *, scope: Locator | None = None) -> Locator:
        return (scope or self.page).get_by_role("combobox", name=label).first

    # -- widgets

    def select(self, label: str, option: str | re.Pattern, *, scope: Locator | None = None,
               filter_text: str | None = None) -> None:
        """Pick `option` in the selectbox labelled `label` (typing `filter_text` narrows long lists).

        The open list re-renders while the filter applies, and an option can be replaced just as it is
        clicked ("element was detached"), or clicked as the list closes (nothing selected, no run): the
        list is then closed and opened again, at most 3 times."""
        box = self.combobox(label, scope=scope)
        choice = self.page.get_by_role("option", name=option).first
        for attempt in range(3):
            self.open_list(box)
            if filter_text:
                box.fill(filter_text)
            try:
                choice.wait_for(timeout=10_000)
                name = choice.inner_text(timeout=10_000)
                if self.rerun(lambda: choice.click(timeout=10_000)) or box.input_value() == name:
                    return
                # a click while the list was still closing or re-rendering selects nothing: try again
            except PlaywrightTimeoutError:
                pass
            if attempt == 2:
                raise AssertionError(f"could not pick {option!r} in {label!r}: the list shows "
                                     f"{self.page.get_by_role('option').all_inner_texts()}")
            self.page.keyboard.press("Escape")

    def open_list(self, box: Locator) -> None:
        """Open a selectbox's list. A click on a box that still has the focus (its list just closed by Escape or
        a pick) can leave the list shut; the box is then blurred and clicked again, and if that shows nothing
        either, ArrowDown opens it from the keyboard."""
        for step in ("click", "blur and click", "arrow"):
            if step == "blur and click":
                box.evaluate("el => el.blur()")
            if step == "arrow":
                box.press("ArrowDown")
            else:
                box.click()
            try:
                self.page.get_by_role("option").first.wait_for(timeout=3_000)
                return
            except PlaywrightTimeoutError:
                continue

    def selected(self, label: str, *, scope: Locator | None = None) -> str:
        """The value the selectbox `label` shows now: one read, which a run still on its way can change. To
        check a value, `expect(app.combobox(label)).to_have_value(...)`, which waits for it."""
        return self.combobox(label, scope=scope).input_value()

    def press(self, key: str) -> None:
        """A keyboard shortcut, typed with nothing focused (shortcuts are ignored inside inputs)."""
        self.page.evaluate("() => document.activeElement && document.activeElement.blur && document.activeElement.blur()")
        self.rerun(lambda: self.page.keyboard.press(key))

    def click(self, locator: Locator, *, must_run: bool = False) -> None:
        """Click `locator` and wait for the run it starts. `must_run`: the click has to start one (a form's
        submit button, say); a click lost while the page was still drawing (no run started, so nothing
        happened) is repeated, at most 3 times."""
        for _ in range(3):
            if self.rerun(locator.click) or not must_run:
                return
        raise AssertionError(f"clicking {locator} started no script run, 3 times")

    def eventually(self, check: Callable[[], T], *, timeout: float = RUN_TIMEOUT) -> T:
        """Call `check` (which reads the page or the store and asserts) until it passes, at most `timeout`
        ms, and return what it returns; at the deadline its last failure is raised as it is. For a check
        that no single `expect` states (a YAML text parsed, a query string compared as a whole, a row a
        background job writes): a read right after an action can see the state before the action's run, or
        before the job, has reached the page or the DB."""
        deadline = time.monotonic() + timeout / 1000
        while True:
            try:
                return check()
            except Exception:  # noqa: BLE001 - the check's own failure, raised once time is up
                if time.monotonic() > deadline:
                    raise
            self.page.wait_for_timeout(200)

    def tab(self, name: str) -> None:
        self.main.get_by_role("tab", name=name).first.click()

    def grid_cells(self, scope: Locator | None = None, *, containing: str | None = None,
                   timeout: float = RUN_TIMEOUT) -> list[str]:
        """The text of every cell of the st.dataframe grids in `scope`, read from their accessible
        table (the grid itself is drawn on a canvas, and only once it has been scrolled into view);
        with `containing`, waits until some cell holds that text."""
        frames = (scope or self.main).locator('[data-testid="stDataFrame"]')
        deadline = time.monotonic() + timeout / 1000
        while True:
            frames.evaluate_all("els => els.forEach(e => e.scrollIntoView({block: 'center'}))")
            cells = frames.locator('[role="gridcell"]').all_text_contents()
            if containing is None or any(containing in c for c in cells) or time.monotonic() > deadline:
                return cells
            self.page.wait_for_timeout(200)

    def toast(self, text: str | re.Pattern) -> Locator:
        return self.page.locator('[data-testid="stToast"]').filter(has_text=text)


# ---------------------------------------------------------------- highlighted evidence


HIGHLIGHT = "pre.gcpc-excerpt"
"""A located quote or citation, each source line once, the span in a `<mark>` (text.highlighted_html)."""


def highlighted(app: App, text: str) -> Locator:
    """Visible highlighted excerpts whose text (line numbers included, as the browser shows it) holds `text`."""
    return app.main.locator(HIGHLIGHT).filter(has_text=text).locator("visible=true")


def excerpt_rows(excerpt: Locator) -> list[dict]:
    """One highlighted excerpt as the browser holds it: per source line its number, its text, the marked
    part of it and the mark's computed background colour (None when nothing in the line is marked)."""
    return excerpt.evaluate("""pre => {
        const row = () => ({number: '', text: '', marked: '', background: null});
        const rows = [row()];
        for (const node of pre.childNodes) {
          if (node.nodeName === 'SPAN') { rows[rows.length - 1].number = node.textContent.split(' │ ')[0].trim(); continue; }
          node.textContent.split('\\n').forEach((part, i) => {
            if (i > 0) rows.push(row());
            const last = rows[rows.length - 1];
            last.text += part;
            if (node.nodeName === 'MARK') { last.marked += part; last.background = getComputedStyle(node).backgroundColor; }
          });
        }
        return rows;
      }""")
