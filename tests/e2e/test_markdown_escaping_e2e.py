"""A data value in a Markdown-rendered message, in a real browser (issue 24, defect 5): a rater named with a
remote Markdown image and a link, moved items on the Human study page, fetches nothing and links nowhere;
the "Moved … from X to Y" message shows the name as text."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import copy_db
from playwright.sync_api import expect

from annotations import DEMO_STUDY_ID
from gcpc_core.store import Store

from .conftest import REVIEWER
from .helpers import App, Server, Watch, running, server_env

IMAGE_URL = "http://127.0.0.1:9/p.png"
"""A closed loopback port: a browser that renders the image shows up as a request to it, nothing leaves."""
RATER = f"rater ![x]({IMAGE_URL}) [click](http://evil.test/)"


@pytest.fixture(scope="module")
def hostile_rater_server(demo_master: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """The app on its own demo copy, whose demo study has a rater with a hostile name."""
    root = tmp_path_factory.mktemp("e2e-markdown")
    db = copy_db(demo_master, root / "demo.db")
    store = Store(db)
    # stored as a DB from before rater names were checked (or another tool) holds it: add_rater refuses it now
    store.studies.add_rater(DEMO_STUDY_ID, RATER, token_hash=None)
    store.close()
    with running(Server("markdown", db, root / "server.log", server_env(db, root / "home", GCPC_REVIEWER=REVIEWER))) as s:
        yield s


def test_a_hostile_rater_name_in_the_moved_message_fetches_no_image(hostile_rater_server: Server, page,  # noqa: ANN001
                                                                    watch: Watch) -> None:
    app = App(page, hostile_rater_server, watch)
    app.open("study_admin")
    expect(app.title()).to_have_text("Human study")
    app.tab("Raters and links")
    app.select("From", "sim-rater-1")
    app.select("To", RATER)
    app.click(app.button("Reassign"))
    expect(app.text(re.compile(r"^Moved \d+ items from sim-rater-1 to ")).first).to_be_visible()
    page.wait_for_load_state("networkidle")  # an image the message held has been asked for by now
    fetched = [url for url in watch.requests if "127.0.0.1:9" in url or "evil.test" in url]
    assert fetched == [], f"the browser requested {fetched}"
    dom = page.evaluate("""() => ({
        images: [...document.images].filter(i => (i.getAttribute('src') || '').includes('127.0.0.1:9')).length,
        links: [...document.querySelectorAll('a[href]')].filter(a => a.getAttribute('href').includes('evil')
                                                                 || a.getAttribute('href').includes('127.0.0.1:9')).length,
    })""")
    assert dom == {"images": 0, "links": 0}, dom
    expect(app.text(re.compile(rf"^Moved \d+ items from sim-rater-1 to {re.escape(RATER)}\.$"))).to_be_visible()
