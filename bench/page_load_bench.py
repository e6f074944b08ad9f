"""Browser benchmark: how long a review page takes to load in Chromium, first and again, against the
Overview's load in the same run.

    python bench/page_load_bench.py [--pages agreement,pairs,audit | --pages all] [--repeat 3] [--json OUT]
    python bench/page_load_bench.py --project paper [--db paper.db] --pages all

A Streamlit server is started on a private copy of the demo project (or, with ``--project paper``, of the
SIMULATED paper-scale project that `paper_project.py` builds: 4,455 trajectories over 85 tasks; ``--db``
reuses one already built, copied first so the bench never writes to it); the Overview is opened once so the
server has imported the app's stack (a cost every page shares, paid once per server). Then the Overview
(the baseline) and each page are opened in fresh browser contexts (a new Streamlit session each time).
Each visit is timed from navigation to two moments:

* visible — what the user came for is on screen: the Agreement page's whole headline
  (`READY`: the heading after the last headline statistic), the Triage page down to its last section, the
  page title elsewhere;
* settled — the script run has finished and no stale element is left (the e2e suite's "settled" state).

and each page is visited twice over:

* first — the first visit of the page on this server: its cached computations (the Agreement
  page's analysis, say) are computed;
* again — the median and worst of `--repeat` further visits (caches filled).

Every figure is also given as a ratio to the Overview's median load (visible) in the same run, so runs
on machines under different load can be compared. Target for the Agreement and Triage pages: first visible ≤ 3 s
on the demo; at paper scale every page visible ≤ 2 s and settled ≤ 3 s, first visit and again (`PAPER_TARGET_S`).
Uses Debian's Chromium (/usr/bin/chromium or $GCPC_CHROMIUM) through Playwright, never a
downloaded browser. Figures depend on the machine's load: the load average is printed with them.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "bench"))

from playwright.sync_api import sync_playwright  # noqa: E402

from e2e.helpers import CHROMIUM, CHROMIUM_ARGS, App, Server, Watch, running, server_env  # noqa: E402
from gcpc_core.demo import build_demo_project  # noqa: E402
from paper_project import build_paper_project  # noqa: E402

TARGET_S = {"agreement": 3.0, "triage": 3.0}
"""Most seconds until the page is visible on its first load."""
READY = {"agreement": '[data-testid="stMain"] h3:has-text("Details")',
         "triage": '[data-testid="stMain"] [data-testid="stExpander"] summary:has-text("Raw and audited figures")'}
"""What a user waits for on a page (default: its title)."""
PAPER_TARGET_S = {"visible": 2.0, "settled": 3.0}
"""At paper scale: most seconds until every page is visible, and settled, on the first visit and again."""
BASELINE = ""
"""The Overview, the baseline every page is compared with."""
ALL_PAGES = ("audit", "triage", "compare", "checklists", "pairs", "agreement", "runs", "study_admin")
"""`--pages all`: every page of the app but the rater's (which needs a study link, and is timed on its own)."""


@dataclass(frozen=True)
class Visit:
    visible_s: float
    settled_s: float


def visit(browser, server: Server, path: str) -> Visit:  # noqa: ANN001 - playwright's Browser
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        app = App(context.new_page(), server, Watch())
        started = time.perf_counter()
        app.page.goto(server.link(path))
        target = app.page.locator(READY[path]) if path in READY else app.title()
        target.first.wait_for(state="visible", timeout=120_000)
        visible = time.perf_counter() - started
        app.settled()
        return Visit(visible, time.perf_counter() - started)
    finally:
        context.close()


def measure(browser, server: Server, path: str, repeat: int) -> dict:  # noqa: ANN001
    first = visit(browser, server, path)
    again = [visit(browser, server, path) for _ in range(repeat)]
    return {"page": path or "overview", "first_visible_s": round(first.visible_s, 2),
            "first_settled_s": round(first.settled_s, 2),
            "again_visible_median_s": round(statistics.median(v.visible_s for v in again), 2),
            "again_visible_max_s": round(max(v.visible_s for v in again), 2),
            "again_settled_median_s": round(statistics.median(v.settled_s for v in again), 2),
            "again_settled_max_s": round(max(v.settled_s for v in again), 2)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", default="agreement,pairs,audit", help="URL paths, comma-separated")
    parser.add_argument("--repeat", type=int, default=3, help="visits after the first (default 3)")
    parser.add_argument("--json", type=Path, help="also write the figures as JSON here")
    parser.add_argument("--project", choices=("demo", "paper"), default="demo",
                        help="the demo project (36 trajectories) or the SIMULATED paper-scale one (4,455)")
    parser.add_argument("--db", type=Path, help="with --project paper: a paper-scale DB built before (copied)")
    args = parser.parse_args()
    if not CHROMIUM.exists():
        print(f"Chromium not found at {CHROMIUM} (apt-get install chromium, or set GCPC_CHROMIUM)", file=sys.stderr)
        return 2
    rows = []
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="gcpc-page-bench-") as tmp:
        db = Path(tmp) / f"{args.project}.db"
        if args.project == "demo":
            build_demo_project(db)
        elif args.db:
            shutil.copyfile(args.db, db)
        else:
            started = time.perf_counter()
            build_paper_project(db)
            print(f"paper-scale project built in {time.perf_counter() - started:.0f} s")
        with running(Server("bench", db, Path(tmp) / "server.log", server_env(db, Path(tmp) / "home"))) as server, \
                sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
            warmup = visit(browser, server, BASELINE)
            print(f"server warm-up (Overview, imports the app's stack): {warmup.settled_s:.2f} s")
            asked = ALL_PAGES if args.pages == "all" else args.pages.split(",")
            pages = [p.strip() for p in asked if p.strip() and p.strip() != "overview"]
            rows.append(measure(browser, server, BASELINE, args.repeat))
            rows += [measure(browser, server, page, args.repeat) for page in pages]
            browser.close()
    base = rows[0]["again_visible_median_s"]
    print(f"{'page':<12} {'first visible':>14} {'first settled':>14} {'again visible med/max':>22} "
          f"{'again settled':>14} {'first/base':>11} {'again/base':>11}")
    for r in rows:
        r["first_ratio"] = round(r["first_visible_s"] / base, 2)
        r["again_ratio"] = round(r["again_visible_median_s"] / base, 2)
        missed = _missed(r, args.project)
        r["missed"] = missed
        flag = f"  (over target: {', '.join(missed)})" if missed else ""
        print(f"{r['page']:<12} {r['first_visible_s']:>14.2f} {r['first_settled_s']:>14.2f} "
              f"{r['again_visible_median_s']:>11.2f} / {r['again_visible_max_s']:<8.2f} {r['again_settled_median_s']:>14.2f} "
              f"{r['first_ratio']:>10.2f}x {r['again_ratio']:>10.2f}x{flag}")
    load_after = os.getloadavg()
    print(f"base = the Overview's median visible load again ({base:.2f} s); load average (1, 5, 15 min) "
          f"before {', '.join(f'{x:.2f}' for x in load_before)}, after {', '.join(f'{x:.2f}' for x in load_after)}")
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "load_before": load_before, "load_after": load_after}, indent=2),
                             encoding="utf-8")
    return 0 if not any(r["missed"] for r in rows) else 1


def _missed(row: dict, project: str) -> list[str]:
    """The targets a page's figures miss: on the demo the first visible load of the pages `TARGET_S` names; at
    paper scale every page's visible and settled loads, first and again (`PAPER_TARGET_S`)."""
    if project == "demo":
        target = TARGET_S.get(row["page"])
        return [f"first visible > {target:g} s"] if target and row["first_visible_s"] > target else []
    checks = {"first visible": row["first_visible_s"], "again visible": row["again_visible_max_s"]}
    out = [f"{k} > {PAPER_TARGET_S['visible']:g} s" for k, v in checks.items() if v > PAPER_TARGET_S["visible"]]
    settled = {"first settled": row["first_settled_s"], "again settled": row["again_settled_max_s"]}
    return out + [f"{k} > {PAPER_TARGET_S['settled']:g} s" for k, v in settled.items() if v > PAPER_TARGET_S["settled"]]


if __name__ == "__main__":
    sys.exit(main())
