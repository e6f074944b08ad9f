"""Import benchmark: throughput on the real corpus and on 2,000 synthetic ~170 KB trials,
and the evidence view's size relative to the raw log per log format.

    python bench/import_bench.py [--synthetic 2000] [--log-kb 170] [--keep DIR]

Each import runs in a child process so its peak RSS can be read cleanly.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import random
import resource
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gcpc_core.evidence import build_evidence_view  # noqa: E402
from gcpc_core.ingest import find_trial_dirs, import_project  # noqa: E402
from gcpc_core.ingest.logs import find_log, parse_log  # noqa: E402
from gcpc_core.store import Store  # noqa: E402

SKILLSBENCH = Path(__file__).resolve().parents[1].parent / "shared" / "skillsbench"
WORDS = "the of parse value file output check mesh volume density error result table graph node edge".split()


def _text(rng: random.Random, n_chars: int) -> str:
    out, size = [], 0
    while size < n_chars:
        line = " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 14)))
        out.append(line)
        size += len(line) + 1
    return "\n".join(out)


def _envelope(rng: random.Random, role: str, content: list[dict], session: str) -> str:
    """One stream-json line with the usage/ids envelope real Claude Code logs carry."""
    msg = {"role": role, "content": content}
    if role == "assistant":
        msg |= {"id": f"msg_{rng.getrandbits(64):016x}", "type": "message", "model": "synthetic-model",
                "stop_reason": None, "usage": {"input_tokens": rng.randint(10, 900), "output_tokens": rng.randint(1, 400),
                                               "cache_creation_input_tokens": rng.randint(0, 5000),
                                               "cache_read_input_tokens": rng.randint(0, 90000)}}
    return json.dumps({"type": role, "message": msg, "parent_tool_use_id": None, "session_id": session,
                       "uuid": f"{rng.getrandbits(128):032x}"})


def synthetic_log(rng: random.Random, target_bytes: int) -> str:
    session = f"{rng.getrandbits(128):032x}"
    lines = [json.dumps({"type": "system", "subtype": "init", "model": "synthetic-model", "session_id": session,
                         "tools": ["Bash", "Read", "Write"], "skills": [], "gcpc_synthetic": True})]
    size, n = len(lines[0]), 0
    while size < target_bytes:
        n += 1
        call_id = f"toolu_{n:06d}"
        blocks = [
            _envelope(rng, "assistant", [{"type": "thinking", "thinking": _text(rng, rng.randint(300, 2500)),
                                          "signature": f"{rng.getrandbits(256):064x}"}], session),
            _envelope(rng, "assistant", [{"type": "text", "text": _text(rng, rng.randint(60, 400))}], session),
        ]
        if n % 4 == 0:
            path = f"/root/data_{n}.txt"
            body = "\n".join(f"{i + 1:>6}\u2192{line}" for i, line in enumerate(_text(rng, 1500).splitlines()))
            blocks += [
                _envelope(rng, "assistant", [{"type": "tool_use", "id": call_id, "name": "Read",
                                              "input": {"file_path": path}}], session),
                _envelope(rng, "user", [{"type": "tool_result", "tool_use_id": call_id, "content": body}], session),
            ]
        else:
            blocks += [
                _envelope(rng, "assistant", [{"type": "tool_use", "id": call_id, "name": "Bash",
                                              "input": {"command": f"python3 step_{n}.py --check",
                                                        "description": "run a step"}}], session),
                _envelope(rng, "user", [{"type": "tool_result", "tool_use_id": call_id,
                                         "content": _text(rng, rng.randint(200, 1800)), "is_error": False}], session),
            ]
        lines += blocks
        size += sum(len(b) + 1 for b in blocks)
    lines.append(json.dumps({"type": "result", "subtype": "success", "result": "done", "session_id": session}))
    return "\n".join(lines) + "\n"


def write_synthetic_corpus(root: Path, n_trials: int, log_kb: int, seed: int = 1) -> tuple[Path, Path]:
    rng = random.Random(seed)
    tasks, trials = root / "tasks", root / "trials"
    for k in range(5):
        t = tasks / f"synthetic-task-{k}"
        (t / "tests").mkdir(parents=True, exist_ok=True)
        (t / "instruction.md").write_text(f"Synthetic benchmark task {k}: write /root/out.json.\n")
        (t / "tests" / "test_outputs.py").write_text("def test_out():\n    assert True\n")
    for i in range(n_trials):
        task = f"synthetic-task-{i % 5}"
        d = trials / f"{task}__{i:05d}"
        (d / "agent").mkdir(parents=True)
        (d / "verifier").mkdir()
        reward = float(rng.random() < 0.4)
        (d / "result.json").write_text(json.dumps({
            "task_name": task, "trial_name": d.name, "agent_info": {"name": "claude-code", "version": "0"},
            "config": {"agent": {"model_name": "synthetic/model"}, "task": {"path": f"/tmp/noskills/{task}" if i % 2 else f"/x/tasks/{task}"}},
            "verifier_result": {"rewards": {"reward": reward}}, "exception_info": None,
            "started_at": f"2026-01-01T00:{i // 60 % 60:02d}:{i % 60:02d}Z"}))
        (d / "verifier" / "ctrf.json").write_text(json.dumps({"results": {"tests": [
            {"name": "test_outputs.py::test_out", "status": "passed" if reward else "failed"}]}}))
        (d / "agent" / "claude-code.txt").write_text(synthetic_log(rng, log_kb * 1024))
    return tasks, trials


def _child_import(tasks: str, trials: str, db: str, queue: mp.Queue) -> None:
    t0 = time.perf_counter()
    report = import_project(Store(db), tasks_dir=Path(tasks), trials_dir=Path(trials), progress=False)
    elapsed = time.perf_counter() - t0
    queue.put({"seconds": elapsed, "bytes": report.bytes_read, "trials": report.trials_imported,
               "unchanged": report.trials_unchanged, "skipped": len(report.skipped)})


def timed_import(tasks: Path, trials: Path, db: Path) -> dict:
    ctx = mp.get_context("spawn")
    queue: mp.Queue = ctx.Queue()
    proc = ctx.Process(target=_child_import, args=(str(tasks), str(trials), str(db), queue))
    proc.start()
    result = queue.get()
    proc.join()
    result["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return result


def _fmt(label: str, r: dict, corpus_bytes: int | None = None) -> str:
    """A re-import skips unchanged trials unparsed; its MB/s is over the corpus it checked."""
    mb = (corpus_bytes or r["bytes"]) / 2**20
    return (f"{label}: {r['trials']} imported, {r['unchanged']} unchanged, {r['skipped']} skipped; "
            f"{mb:.1f} MB of logs in {r['seconds']:.2f} s = {mb / r['seconds']:.1f} MB/s, "
            f"{(r['trials'] or r['unchanged']) / r['seconds']:.0f} trials/s; peak RSS (max over runs so far) {r['peak_rss_mb']:.0f} MB")


def raw_tool_io_chars(path: Path, fmt: str) -> int:
    """Tool input/output characters counted straight from the raw log, independently of the parsers."""
    def s(v) -> int:
        if isinstance(v, str):
            return len(v)
        if isinstance(v, list):
            return sum(s(x.get("text", "")) if isinstance(x, dict) else s(x) for x in v)
        if isinstance(v, dict):
            return sum(s(x) for x in v.values())
        return 0
    text = path.read_text(encoding="utf-8")
    total = 0
    if fmt == "claude-code":
        for line in text.splitlines():
            obj = json.loads(line)
            for b in (obj.get("message") or {}).get("content") or []:
                if isinstance(b, dict) and b.get("type") == "tool_use":
                    total += s(b.get("input"))
                elif isinstance(b, dict) and b.get("type") == "tool_result":
                    total += s(b.get("content"))
    elif fmt == "atif":
        for step in json.loads(text).get("steps", []):
            total += sum(s(c.get("arguments")) for c in step.get("tool_calls") or [])
            total += sum(s(r.get("content")) for r in (step.get("observation") or {}).get("results") or [])
    elif fmt == "terminus-2":
        for ep in json.loads(text)[1:]:
            total += len(ep.get("prompt") or "")
        for ep in json.loads(text):
            try:
                resp = json.loads(ep.get("response") or "")
                total += sum(len(c.get("keystrokes", "")) for c in resp.get("commands") or [])
            except (json.JSONDecodeError, AttributeError):
                pass
    return total


def evidence_sizes(trials_root: Path) -> None:
    per_format: dict[str, list[tuple[float, float]]] = {}
    for d in find_trial_dirs(trials_root):
        path, fmt = find_log(d)
        raw = len(path.read_text(encoding="utf-8"))
        view = build_evidence_view(parse_log(path, fmt).events)
        per_format.setdefault(fmt, []).append((view.shown_chars / raw, raw_tool_io_chars(path, fmt) / raw))
    print("evidence view size / raw log chars, real trials (independent tool-I/O share of the raw log beside it):")
    for fmt, pairs in sorted(per_format.items()):
        views = sorted(p[0] for p in pairs)
        tool = sorted(p[1] for p in pairs)
        p90 = views[min(len(views) - 1, round(0.9 * (len(views) - 1)))]
        print(f"  {fmt:12s} n={len(views):2d}  view median {statistics.median(views):.3f}  p90 {p90:.3f}   "
              f"raw tool I/O median {statistics.median(tool):.3f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--synthetic", type=int, default=2000, help="synthetic trials (default %(default)s)")
    ap.add_argument("--log-kb", type=int, default=170, help="synthetic log size (default %(default)s KB)")
    ap.add_argument("--keep", type=Path, help="keep the synthetic corpus and DBs here")
    args = ap.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="gcpc-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        if SKILLSBENCH.is_dir():
            real = timed_import(SKILLSBENCH / "tasks", SKILLSBENCH / "trials", work / "real.db")
            print(_fmt("real corpus", real))
            evidence_sizes(SKILLSBENCH / "trials")
        else:
            print(f"real corpus: not found at {SKILLSBENCH}, skipped")
        t0 = time.perf_counter()
        tasks, trials = write_synthetic_corpus(work / "synthetic", args.synthetic, args.log_kb)
        print(f"synthetic corpus: {args.synthetic} trials written in {time.perf_counter() - t0:.1f} s")
        first = timed_import(tasks, trials, work / "synthetic.db")
        print(_fmt("synthetic import", first))
        again = timed_import(tasks, trials, work / "synthetic.db")
        print(_fmt("synthetic re-import (idempotent)", again, corpus_bytes=first["bytes"]))
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
