"""Review-app benchmark: server-side render time per page with Streamlit's AppTest.

    python bench/app_bench.py [--repeat 5] [--scale 1000] [--json OUT]

For each page, on the demo project, on the demo cloned to `--scale` trajectories, and on the real
SkillsBench corpus (../shared/skillsbench, imported with the hand-written checklists of
tests/fixtures/checklists, probe-judged and scored; skipped when absent), the time of one full
script run (app.py + the page) is measured:

* cold — the first run of the page in this process: its `st.cache_data` frames are computed;
* warm — the median and worst of `--repeat` further runs (new sessions, caches filled), which is
  what a reviewer clicking through the app waits for.

The item audit page is opened on the largest real trial (by log size), on an item with a citation,
so its focused panel renders quotes, verifier sources and located citations. Target: ≤ 1 s warm.

The rate page is timed on a study over trajectories of `--rate-steps` steps (10,000 by default;
tests/drills/long_log.py): its first render through a rater link (blinding the first record) and a
click on Next (the next record, blinded then). Targets: ≤ 5 s and ≤ 2 s. `--rate-only` runs only this.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from streamlit.runtime.pages_manager import PagesManager  # noqa: E402
from streamlit.testing.v1 import AppTest  # noqa: E402
from streamlit.testing.v1 import app_test as app_test_module  # noqa: E402

from gcpc_core.checklist import load_checklist_file, load_rules  # noqa: E402
from gcpc_core.checklist.registry import register_checklist  # noqa: E402
from gcpc_core.demo import build_demo_project  # noqa: E402
from gcpc_core.ingest import import_project  # noqa: E402
from gcpc_core.judge import judge_project, score_project  # noqa: E402
from gcpc_core.store import Store  # noqa: E402
from drills.long_log import add_long_log_study  # noqa: E402
from store.helpers import replace_trajectory  # noqa: E402

SKILLSBENCH = REPO.parent / "shared" / "skillsbench"
PAGES = ("overview", "audit", "checklists", "pairs", "agreement", "runs", "study_admin")
TARGET_S = 1.0
RATE_FIRST_TARGET_S, RATE_NEXT_TARGET_S = 5.0, 2.0


class _EntrypointPagesManager(PagesManager):
    """Rerun app.py on every AppTest run, as the server does (see tests/app/conftest.py)."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)
        PagesManager.uses_pages_directory = False


def real_project(db: Path) -> Path:
    store = Store(db)
    import_project(store, tasks_dir=SKILLSBENCH / "tasks", trials_dir=SKILLSBENCH / "trials", progress=False)
    rules = load_rules()
    for path in sorted((REPO / "tests" / "fixtures" / "checklists").glob("*.yaml")):
        register_checklist(store, load_checklist_file(path), created_by="bench", rules=rules)
    judge_project(store, judge="probe", progress=False, rules=rules)
    score_project(store)
    return db


def scaled_project(db: Path, n: int) -> Path:
    """The demo with its trials cloned under new ids (and new trial indexes, so matched pairs stay
    pairs) up to `n` trajectories, then probe-judged and scored: page cost as a project grows."""
    build_demo_project(db)
    store = Store(db)
    originals = store.trials.trajectories()
    events = {t.id: store.trials.events(t.id) for t in originals}
    total, copy = len(originals), 0
    while total < n:
        copy += 1
        for t in originals[: n - total]:
            clone = t.model_copy(update={"id": f"{t.id}-c{copy}", "source_path": f"{t.source_path}-c{copy}",
                                         "trial_index": t.trial_index + 1000 * copy})
            replace_trajectory(store, clone, events[t.id])
            total += 1
    judge_project(store, judge="probe", progress=False)
    score_project(store)
    return db


def audit_query(store: Store) -> dict[str, str]:
    """The largest trial (by log size), on its first item with a citation."""
    largest = max(store.trials.trajectories(), key=lambda t: t.log_bytes)
    rows = store.judging.judgments(trajectory_id=largest.id, judge="probe")
    item = next((r.item_id for r in rows if r.citations), rows[0].item_id if rows else "")
    return {"trajectory": largest.id, "judge": "probe", "item": item}


def render(page: str, query: dict[str, str]) -> float:
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=120)
    for key, value in query.items():
        at.query_params[key] = value
    at.session_state["reviewer"] = "bench"
    at.switch_page(f"pages/{page}.py")
    started = time.perf_counter()
    at.run()
    elapsed = time.perf_counter() - started
    if at.exception:
        raise RuntimeError(f"{page}: {at.exception[0].value}")
    return elapsed


def bench_project(name: str, db: Path, repeat: int) -> list[dict[str, Any]]:
    os.environ["GCPC_DB"] = str(db)
    store = Store(db)
    query = audit_query(store)
    rows = []
    for page in PAGES:
        q = query if page == "audit" else {}
        cold = render(page, q)
        warm = [render(page, q) for _ in range(repeat)]
        rows.append({"project": name, "page": page, "cold_s": round(cold, 3),
                     "warm_median_s": round(statistics.median(warm), 3), "warm_max_s": round(max(warm), 3),
                     **({"trajectory": query["trajectory"], "item": query["item"],
                         "log_bytes": store.trials.get_trajectory(query["trajectory"]).log_bytes,
                         "events": len(store.trials.events(query["trajectory"]))} if page == "audit" else {})})
    return rows


def bench_rate(db: Path, steps: int, repeat: int) -> dict[str, Any]:
    """First render of the rate page through a rater link, and Next, on records of `steps` steps."""
    token = add_long_log_study(Store(db), steps=steps, trajectories=3)
    os.environ["GCPC_DB"] = str(db)
    first, nexts = [], []
    for _ in range(repeat):
        at = AppTest.from_file(str(REPO / "app.py"), default_timeout=300)
        at.query_params["token"] = token
        started = time.perf_counter()
        at.run()
        first.append(time.perf_counter() - started)
        if at.exception or not at.title or at.title[0].value != "Rating study":
            raise RuntimeError(f"rate page: {at.exception[0].value if at.exception else 'not shown'}")
        shown = at.subheader[0].value
        button = next(b for b in at.button if b.label == "Next")
        started = time.perf_counter()
        button.click().run()
        nexts.append(time.perf_counter() - started)
        if at.exception or at.subheader[0].value == shown:
            raise RuntimeError(f"rate page Next: {at.exception[0].value if at.exception else 'did not move'}")
    return {"steps": steps, "first_median_s": round(statistics.median(first), 3), "first_max_s": round(max(first), 3),
            "next_median_s": round(statistics.median(nexts), 3), "next_max_s": round(max(nexts), 3)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5, help="warm runs per page (default 5)")
    parser.add_argument("--scale", type=int, default=1000,
                        help="also time a demo cloned to this many trajectories (0: skip; default 1000)")
    parser.add_argument("--json", type=Path, help="also write the figures as JSON here")
    parser.add_argument("--rate-steps", type=int, default=10_000, help="steps per record on the rate page (default 10000)")
    parser.add_argument("--rate-only", action="store_true", help="time only the rate page")
    args = parser.parse_args()
    logging.getLogger("streamlit").setLevel(logging.ERROR)
    app_test_module.PagesManager = _EntrypointPagesManager
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "GCPC_MODEL", "GCPC_ADMIN_TOKEN"):
        os.environ.pop(name, None)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="gcpc-app-bench-") as tmp:
        rate = bench_rate(Path(tmp) / "long.db", args.rate_steps, max(1, min(args.repeat, 3)))
        print(f"rate page, records of {rate['steps']:,} steps: first render {rate['first_median_s']:.2f} s "
              f"(max {rate['first_max_s']:.2f}, target ≤ {RATE_FIRST_TARGET_S:.0f} s), Next {rate['next_median_s']:.2f} s "
              f"(max {rate['next_max_s']:.2f}, target ≤ {RATE_NEXT_TARGET_S:.0f} s)")
        rate_ok = rate["first_median_s"] <= RATE_FIRST_TARGET_S and rate["next_median_s"] <= RATE_NEXT_TARGET_S
        if args.rate_only:
            if args.json:
                args.json.write_text(json.dumps({"rate": rate}, indent=2), encoding="utf-8")
            return 0 if rate_ok else 1
        demo = Path(tmp) / "demo.db"
        build_demo_project(demo)
        rows += bench_project("demo", demo, args.repeat)
        if args.scale:
            rows += bench_project(f"demo×{args.scale}", scaled_project(Path(tmp) / "scaled.db", args.scale), args.repeat)
        if (SKILLSBENCH / "trials").is_dir():
            rows += bench_project("skillsbench", real_project(Path(tmp) / "real.db"), args.repeat)
        else:
            print(f"real corpus not found at {SKILLSBENCH}: demo only", file=sys.stderr)
    print(f"{'project':<12} {'page':<12} {'cold s':>8} {'warm med s':>11} {'warm max s':>11}")
    for r in rows:
        flag = "" if r["warm_median_s"] <= TARGET_S else "  (over the 1 s target)"
        print(f"{r['project']:<12} {r['page']:<12} {r['cold_s']:>8.3f} {r['warm_median_s']:>11.3f} "
              f"{r['warm_max_s']:>11.3f}{flag}")
    audit = [r for r in rows if r["page"] == "audit"]
    for r in audit:
        print(f"item audit on {r['project']}: {r['trajectory']} ({r['log_bytes']:,} log bytes, {r['events']} events), "
              f"item {r['item']}")
    if args.json:
        args.json.write_text(json.dumps({"pages": rows, "rate": rate}, indent=2), encoding="utf-8")
    return 0 if rate_ok and all(r["warm_median_s"] <= TARGET_S for r in audit) else 1


if __name__ == "__main__":
    sys.exit(main())
