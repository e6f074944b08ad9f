"""Browser benchmark: how long a review page takes to load in Chromium, first and again.

    python bench/page_load_bench.py [--pages agreement,pairs,audit] [--repeat 3] [--json OUT]

A Streamlit server is started on a private copy of the demo project; the Overview is opened once so the
server has imported the app's stack (a cost every page shares, paid once per server). Then each page is
opened in fresh browser contexts (a new Streamlit session each time), timed from navigation until the
script run has finished and no stale element is left (the e2e suite's "settled" state):

* first — the first visit of the page on this server: its cached computations (the Agreement
  page's analysis, say) are computed;
* again — the median and worst of `--repeat` further visits (caches filled).

Target for the Agreement page: first ≤ 3 s on the demo. Uses Debian's Chromium (/usr/bin/chromium or
$GCPC_CHROMIUM) through Playwright, never a downloaded browser. Figures depend on the machine's load.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

from playwright.sync_api import sync_playwright  # noqa: E402

from e2e.helpers import CHROMIUM, CHROMIUM_ARGS, App, Server, Watch, running, server_env  # noqa: E402
from gcpc_core.demo import build_demo_project  # noqa: E402

TARGET_S = {"agreement": 3.0}


def visit(browser, server: Server, path: str) -> float:  # noqa: ANN001 - playwright's Browser
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        app = App(context.new_page(), server, Watch())
        started = time.perf_counter()
        app.open(path)
        app.title().first.wait_for()
        return time.perf_counter() - started
    finally:
        context.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", default="agreement,pairs,audit", help="URL paths, comma-separated")
    parser.add_argument("--repeat", type=int, default=3, help="visits after the first (default 3)")
    parser.add_argument("--json", type=Path, help="also write the figures as JSON here")
    args = parser.parse_args()
    if not CHROMIUM.exists():
        print(f"Chromium not found at {CHROMIUM} (apt-get install chromium, or set GCPC_CHROMIUM)", file=sys.stderr)
        return 2
    rows = []
    with tempfile.TemporaryDirectory(prefix="gcpc-page-bench-") as tmp:
        db = Path(tmp) / "demo.db"
        build_demo_project(db)
        with running(Server("bench", db, Path(tmp) / "server.log", server_env(db, Path(tmp) / "home"))) as server, \
                sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
            warmup = visit(browser, server, "")
            print(f"server warm-up (Overview, imports the app's stack): {warmup:.2f} s")
            for page in [p.strip() for p in args.pages.split(",") if p.strip()]:
                first = visit(browser, server, page)
                again = [visit(browser, server, page) for _ in range(args.repeat)]
                rows.append({"page": page, "first_s": round(first, 2), "again_median_s": round(statistics.median(again), 2),
                             "again_max_s": round(max(again), 2)})
            browser.close()
    print(f"{'page':<12} {'first s':>8} {'again med s':>12} {'again max s':>12}")
    for r in rows:
        target = TARGET_S.get(r["page"])
        flag = f"  (over the {target:g} s target)" if target and r["first_s"] > target else ""
        print(f"{r['page']:<12} {r['first_s']:>8.2f} {r['again_median_s']:>12.2f} {r['again_max_s']:>12.2f}{flag}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2), encoding="utf-8")
    return 0 if all(r["first_s"] <= TARGET_S.get(r["page"], float("inf")) for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
