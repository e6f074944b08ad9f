"""Reliability drill figures (issue 8) for the closing note.

    python bench/drills.py [--annotators 16] [--writes 500] [--processes 4] [--kills 5] [--cases 300]
                           [--seed 8] [--json OUT]

1. Load: `--annotators` simulated annotators (spread over `--processes` processes, threads within
   each) × `--writes` writes through the pages' code path (item audits, rater-session answers) on
   one demo project DB: writes attempted and stored, lost, duplicated, "database is locked".
2. Kill -9 resume: `python -m gcpc_core judge --judge gcpc` against the fake OpenAI server, SIGKILLed
   at `--kills` seeded random points and resumed each time: equality of exported judgments and
   scores with an uninterrupted run, duplicates, missing.
3. Importer fuzz: `--cases` mutated copies of the real trials in ../shared/skillsbench (read in
   place, copies in a temporary folder): cases run, imported, reported with path and reason, crashes.

The drill code lives in tests/drills/ (the `drill` tests assert on the same figures). Exit status 1
when any drill fails its checks.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from drills.fuzz import run_fuzz_drill  # noqa: E402
from drills.load import run_load_drill  # noqa: E402
from drills.resume import run_resume_drill  # noqa: E402

from gcpc_core.demo import build_demo_project  # noqa: E402

SKILLSBENCH = REPO.parent / "shared" / "skillsbench"


def _figures(drill: object) -> dict:
    """A drill's figures as JSON-ready fields (not `asdict`: it turns a Counter into tuple keys)."""
    return {k: dict(v) if isinstance(v, dict) else v for k, v in vars(drill).items()} | {"ok": drill.ok}


def _copy_project(source: Path, target: Path) -> Path:
    """A copy of a project DB with its WAL file: the demo project's writes may all still be in the WAL
    (its connection is open), and a copy of the main file alone is then an empty project."""
    for suffix in ("", "-wal"):
        if Path(f"{source}{suffix}").exists():
            shutil.copy(f"{source}{suffix}", f"{target}{suffix}")
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--annotators", type=int, default=16)
    parser.add_argument("--writes", type=int, default=500, help="writes per annotator")
    parser.add_argument("--processes", type=int, default=4)
    parser.add_argument("--kills", type=int, default=5)
    parser.add_argument("--cases", type=int, default=300, help="fuzz cases")
    parser.add_argument("--seed", type=int, default=8)
    parser.add_argument("--json", type=Path, help="also write the figures as JSON")
    args = parser.parse_args(argv)
    out: dict[str, dict] = {}
    ok = True
    with tempfile.TemporaryDirectory(prefix="gcpc-drills-") as tmp:
        work = Path(tmp)
        demo = work / "demo.db"
        build_demo_project(demo)

        load_db = _copy_project(demo, work / "load.db")
        load = run_load_drill(load_db, annotators=args.annotators, writes=args.writes, processes=args.processes)
        print("\n".join(load.lines()), flush=True)
        out["load"] = _figures(load) | {"errors": load.errors[:20]}
        ok &= load.ok

        for name in ("clean.db", "killed.db"):
            _copy_project(demo, work / name)
        resume = run_resume_drill(work / "clean.db", work / "killed.db", kills=args.kills, seed=args.seed)
        print("\n".join(resume.lines()), flush=True)
        out["resume"] = _figures(resume)
        ok &= resume.ok

        if (SKILLSBENCH / "trials").is_dir():
            fuzz_dir = work / "fuzz"
            fuzz_dir.mkdir()
            fuzz = run_fuzz_drill(SKILLSBENCH, fuzz_dir, cases=args.cases, seed=args.seed)
            print("\n".join(fuzz.lines()), flush=True)
            for line in (fuzz.crashes + fuzz.violations)[:10]:
                print(f"  ! {line}")
            out["fuzz"] = _figures(fuzz)
            ok &= fuzz.ok
        else:
            print(f"importer fuzz drill: skipped, no real SkillsBench sample at {SKILLSBENCH}")
    print(f"drills: {'all passed' if ok else 'FAILED'}")
    if args.json:
        args.json.write_text(json.dumps(out, indent=2, default=str))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
