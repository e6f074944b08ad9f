"""A study imported from a crafted export, in a real browser: its guidelines carry a remote image (aimed at a
tiny HTTP server of the test that counts requests), a phishing link, raw HTML and bare addresses, and the
rater's Guidelines dialog shows them as text: nothing is fetched and nothing can be clicked."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from conftest import copy_db
from playwright.sync_api import expect

from annotations import DEMO_STUDY_ID, export_jsonl, load_guidelines
from annotations.guidelines import parse_guidelines
from annotations.simulate import DEMO_HUMAN_RATER
from gcpc_core.store import Store

from .helpers import REPO, App, Server, Watch, running, server_env

STUDY = "imported-study"


class Probe(ThreadingHTTPServer):
    """A loopback HTTP server that records every path asked of it (and answers 404)."""

    hits: list[str]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self.server.hits.append(self.path)  # type: ignore[attr-defined]
        self.send_error(404)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def probe() -> Iterator[Probe]:
    server = Probe(("127.0.0.1", 0), _Handler)
    server.hits = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def cli(*args: str) -> str:
    return subprocess.run([sys.executable, "-m", "gcpc_core", "study", *args], cwd=REPO, capture_output=True,
                          text=True, timeout=120, check=True).stdout


@pytest.fixture(scope="module")
def imported(demo_master: Path, probe: Probe, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, str]]:
    """The demo project with the demo study exported, its guidelines made hostile, and imported back (as
    `study import` does it) under another id; the app on it and the imported study's rater link."""
    root = tmp_path_factory.mktemp("e2e-import")
    db = copy_db(demo_master, root / "demo.db")
    lines = export_jsonl(Store(db), DEMO_STUDY_ID).splitlines()
    record = json.loads(lines[0])
    lure = (f"\n\n## Important\n\n![probe]({probe.url}/probe.png) Read [the new rules]({probe.url}/phish) first. "
            f"<img src=\"{probe.url}/html.png\"> Or visit {probe.url}/bare and www.phish.test, "
            "mail help@phish.test.\n")
    record["design"]["guidelines"] = parse_guidelines(load_guidelines().text + lure).model_dump(mode="json")
    record["study_id"] = STUDY
    path = root / "crafted.jsonl"
    path.write_text(json.dumps(record, ensure_ascii=False) + "\n", encoding="utf-8")
    cli("import", "--db", str(db), str(path))
    env = server_env(db, root / "home")
    with running(Server("imported", db, root / "server.log", env)) as server:
        out = cli("link", "--db", str(db), "--study", STUDY, "--rater", DEMO_HUMAN_RATER, "--base-url", server.url)
        link = re.search(rf"^{re.escape(DEMO_HUMAN_RATER)}: (\S+)$", out, re.M).group(1)
        yield server, link


def test_imported_guidelines_fetch_nothing_and_show_no_live_link(imported: tuple[Server, str], page, watch: Watch,  # noqa: ANN001
                                                                 probe: Probe) -> None:
    server, link = imported
    app = App(page, server, watch)
    page.goto(link)
    app.settled()
    expect(app.title()).to_have_text("Rating study")
    app.click(app.button("Guidelines"))  # (its G shortcut is tested in test_rater_e2e)
    dialog = page.get_by_role("dialog")
    expect(dialog.get_by_text("Rater guidelines", exact=True)).to_be_visible()
    expect(dialog.locator("h2").filter(has_text="Important")).to_be_visible()  # headings still read as such
    expect(dialog.get_by_text(f"![probe]({probe.url}/probe.png) Read [the new rules]({probe.url}/phish)",
                              exact=False)).to_be_visible()  # the syntax is shown as text
    expect(dialog.locator("code").filter(has_text=f"{probe.url}/phish")).to_be_visible()  # an address: code
    page.wait_for_timeout(1_000)  # time for any image the dialog asked for to be requested
    assert dialog.locator("a").count() == 0, dialog.locator("a").evaluate_all("els => els.map(e => e.href)")
    assert dialog.locator("img").count() == 0
    assert probe.hits == [], probe.hits
    assert not [u for u in watch.requests if probe.url in u or "phish.test" in u], watch.requests
