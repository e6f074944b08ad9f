"""The item audit's item rows in a real browser: an item id and its badges are never broken mid-word. The id sat in
a fixed column a tenth of the row wide, where "ENDPOINT" wrapped as "ENDPOI" / "NT"; the row now sizes each part to
its content, so a part that does not fit moves to the next line whole."""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import expect

from gcpc_core.models import ENDPOINT_ITEM_ID
from gcpc_core.review.audit import item_views
from gcpc_core.store import Store

from .helpers import App

LINE_BOXES = """el => { const r = document.createRange(); r.selectNodeContents(el);
  return new Set(Array.from(r.getClientRects()).filter(b => b.width > 0).map(b => Math.round(b.top))).size; }"""
"""How many lines an element's text is laid out on (distinct tops of its line boxes)."""


def test_item_ids_and_badges_are_never_broken_mid_word(demo: App, tmp_path: Path) -> None:
    store = Store(demo.server.db)
    traj = next(t for t in store.trials.trajectories() if t.outcome == "FAIL"
                and any(v.item_id == ENDPOINT_ITEM_ID for v in item_views(store, t.id, "probe")))
    views = item_views(store, traj.id, "probe")
    for width in (1000, 1400):  # a narrow window is where the fixed column was narrowest
        demo.page.set_viewport_size({"width": width, "height": 1000})
        demo.open("audit", trajectory=traj.id, judge="probe")
        endpoint = demo.main.locator('[data-testid="stText"]').get_by_text(ENDPOINT_ITEM_ID, exact=True).first
        expect(endpoint).to_be_visible()
        endpoint.scroll_into_view_if_needed()
        demo.page.screenshot(path=str(tmp_path / f"items-{width}.png"), full_page=True)
        assert endpoint.inner_text().strip() == ENDPOINT_ITEM_ID  # one word, no break inserted
        assert endpoint.evaluate(LINE_BOXES) == 1, f"{ENDPOINT_ITEM_ID} laid out on several lines at {width}px"
        for view in views:  # every id and route badge of the list, each on one line
            for text in (view.item_id, view.route):
                part = demo.main.get_by_text(text, exact=True).first
                expect(part).to_be_visible()
                assert part.evaluate(LINE_BOXES) == 1, f"{text!r} wraps at {width}px"
