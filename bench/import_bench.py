"""Import benchmark: throughput on the real corpus, on 2,000 synthetic ~170 KB Claude Code trials,
on a synthetic corpus of every supported log format (MB/s and trials/s per format), peak RSS with a
1 GB sparse file in the corpus, and the evidence view's size relative to the raw log per log format.

    python bench/import_bench.py [--synthetic 2000] [--log-kb 170] [--per-format 200] [--formats acp,codex] [--workers 1,2] [--keep DIR]
    python bench/import_bench.py --synthetic 0 --per-format 50   # quicker: the mixed corpus only, smaller
    python bench/import_bench.py --profile 200   # cProfile of parsing and of writing, apart

It ends with one table, a row per format and parse-worker count (`--workers`, default the import's
own, `default_workers`): the import's MB/s beside the `json.loads` baseline's over the same bytes in
the same run (one process, single-threaded, whatever the workers), their ratio, CPU ms per MB (the
workers' included) and the import's peak RSS.

Each import runs in a child process so its peak RSS (its own and its workers') is its own.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import multiprocessing as mp
import os
import pstats
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
from gcpc_core.ingest import default_workers, find_trial_dirs, import_project  # noqa: E402
from gcpc_core.ingest.logs import find_log, log_files, parse_log  # noqa: E402
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


def _cpu() -> float:
    return sum(getattr(u, f) for u in map(resource.getrusage, (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
               for f in ("ru_utime", "ru_stime"))


def _child_import(tasks: str, trials: str, db: str, queue: mp.Queue, workers: int | None) -> None:
    """One timed import. Opening the project DB (on a fresh DB: creating its schema, ~0.2 s) is a
    project's set-up, not import work: it is timed apart and left out of the rates."""
    t0 = time.perf_counter()
    store = Store(db)
    opened = time.perf_counter() - t0
    load0 = os.getloadavg()[0]
    cpu0 = _cpu()
    t0 = time.perf_counter()
    report = import_project(store, tasks_dir=Path(tasks), trials_dir=Path(trials), progress=False, workers=workers)
    elapsed = time.perf_counter() - t0
    usage = [resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
    peak_kb = max(u.ru_maxrss for u in usage)
    cpu = _cpu() - cpu0  # parse workers included; less sensitive than wall time to a shared machine
    queue.put({"seconds": elapsed, "cpu_seconds": cpu, "bytes": report.bytes_read, "trials": report.trials_imported,
               "unchanged": report.trials_unchanged, "skipped": len(report.skipped), "peak_rss_mb": peak_kb / 1024,
               "reasons": [r for _, r in report.skipped][:5], "db_open_seconds": opened,
               "load": (load0, os.getloadavg()[0]), "workers": workers or default_workers()})


def timed_import(tasks: Path, trials: Path, db: Path, workers: int | None = None) -> dict:
    ctx = mp.get_context("spawn")
    queue: mp.Queue = ctx.Queue()
    proc = ctx.Process(target=_child_import, args=(str(tasks), str(trials), str(db), queue, workers))
    proc.start()
    result = queue.get()
    proc.join()
    return result


def _fmt(label: str, r: dict, corpus_bytes: int | None = None) -> str:
    """A re-import skips unchanged trials unparsed; its MB/s is over the corpus it checked."""
    mb = (corpus_bytes or r["bytes"]) / 2**20
    return (f"{label}: {r['trials']} imported, {r['unchanged']} unchanged, {r['skipped']} skipped; "
            f"{mb:.1f} MB of logs in {r['seconds']:.2f} s = {mb / r['seconds']:.1f} MB/s, "
            f"{(r['trials'] or r['unchanged']) / r['seconds']:.0f} trials/s; {r['cpu_seconds']:.2f} CPU s = "
            f"{1000 * r['cpu_seconds'] / mb:.1f} CPU ms per MB; peak RSS {r['peak_rss_mb']:.0f} MB; "
            f"load average {r['load'][0]:.1f} -> {r['load'][1]:.1f} (DB opened in {r['db_open_seconds']:.2f} s, apart)")


_LINE_FORMATS = frozenset({"claude-code", "codex", "acp", "gcpc-jsonl"})


def decode_baseline(trials: Path) -> dict:
    """The reference an import is measured against in the same run: the standard library's
    `json.loads` of the same log bytes (each line of a JSON-lines log, else the whole file), in
    this one process, with no checks, no events and no DB."""
    paths = []
    for d in find_trial_dirs(trials):
        try:
            path, fmt = find_log(d)
        except ValueError:
            continue  # the import reports it; nothing to decode
        paths += [(p, fmt in _LINE_FORMATS) for p in log_files(path, fmt) if p.stat().st_size <= 2**25]
    cpu0, t0, size = _cpu(), time.perf_counter(), 0
    for path, lines in paths:
        data = path.read_bytes()
        size += len(data)
        text = data.decode("utf-8")
        if lines:
            for line in text.split("\n"):
                if line.strip():
                    json.loads(line)
        else:
            json.loads(text)
    return {"seconds": time.perf_counter() - t0, "cpu_seconds": _cpu() - cpu0, "bytes": size}


def _row(label: str, r: dict, base: dict) -> str:
    """One line of the closing table (see `main`)."""
    mb, base_mb = r["bytes"] / 2**20, base["bytes"] / 2**20
    rate, base_rate = mb / r["seconds"], base_mb / base["seconds"]
    return (f"{label:32s} {r['workers']:7d} {mb:7.1f} {rate:9.1f} {base_rate:12.1f} {rate / base_rate:6.2f} "
            f"{1000 * r['cpu_seconds'] / mb:9.1f} {r['peak_rss_mb']:8.0f}")


TABLE_HEAD = (f"{'format':32s} {'workers':>7s} {'MB':>7s} {'MB/s':>9s} {'json.loads':>12s} {'ratio':>6s} "
              f"{'CPU ms/MB':>9s} {'RSS MB':>8s}")


def _vs(label: str, r: dict, base: dict) -> str:
    """The import's throughput as a multiple of the decoding baseline's, wall and CPU."""
    mb, base_mb = r["bytes"] / 2**20, base["bytes"] / 2**20
    return (f"{label}: baseline json.loads of the same {base_mb:.1f} MB: {base_mb / base['seconds']:.1f} MB/s, "
            f"{base['cpu_seconds']:.2f} CPU s; import/baseline = {(mb / r['seconds']) / (base_mb / base['seconds']):.2f} "
            f"wall, {(mb / r['cpu_seconds']) / (base_mb / base['cpu_seconds']):.2f} per CPU s")


# ---- one synthetic log per supported format, each about `target_bytes` ----

def _codex_log(rng: random.Random, target_bytes: int) -> str:
    lines = [json.dumps({"type": "thread.started", "thread_id": f"{rng.getrandbits(64):016x}"}),
             json.dumps({"type": "turn.started"})]
    n = 0
    while sum(map(len, lines)) < target_bytes:
        n += 1
        cmd = {"id": f"item_{n}", "type": "command_execution", "command": f"bash -lc 'python3 step_{n}.py'",
               "aggregated_output": "", "exit_code": None, "status": "in_progress"}
        lines += [json.dumps({"type": "item.completed", "item": {"id": f"r{n}", "type": "reasoning",
                                                                 "text": _text(rng, rng.randint(300, 1500))}}),
                  json.dumps({"type": "item.started", "item": cmd}),
                  json.dumps({"type": "item.completed", "item": {**cmd, "aggregated_output": _text(rng, 1500),
                                                                 "exit_code": 0, "status": "completed"}}),
                  json.dumps({"type": "item.completed", "item": {"id": f"m{n}", "type": "agent_message",
                                                                 "text": _text(rng, 200)}})]
    lines.append(json.dumps({"type": "turn.completed", "usage": {"input_tokens": 1, "cached_input_tokens": 0,
                                                                 "output_tokens": 1}}))
    return "\n".join(lines) + "\n"


def _acp_log(rng: random.Random, target_bytes: int) -> str:
    lines = [json.dumps({"type": "user_message", "text": _text(rng, 500)})]
    n = 0
    while sum(map(len, lines)) < target_bytes:
        n += 1
        text = {"type": "content", "content": {"type": "text", "text": _text(rng, 1500)}}
        lines += [json.dumps({"type": "agent_thought", "text": _text(rng, rng.randint(300, 1500))}),
                  json.dumps({"type": "tool_call", "tool_call_id": f"c{n}", "kind": "execute", "title": "bash",
                              "status": "completed", "content": [text, text]}),
                  json.dumps({"type": "tool_call", "tool_call_id": f"w{n}", "kind": "edit", "title": "write",
                              "status": "completed", "content": [
                                  {"type": "content", "content": {"type": "text", "text": "Wrote file successfully."}},
                                  {"type": "diff", "path": f"/root/f{n}.py", "oldText": "",
                                   "newText": _text(rng, 800)}]})]
    lines.append(json.dumps({"type": "agent_message", "text": "done"}))
    return "\n".join(lines) + "\n"


def _atif_steps(rng: random.Random, target_bytes: int, first: int) -> list[dict]:
    steps, size = [], 0
    while size < target_bytes:
        k = first + len(steps)
        step = {"step_id": k, "source": "agent", "message": _text(rng, 200),
                "reasoning_content": _text(rng, rng.randint(300, 1500)),
                "tool_calls": [{"tool_call_id": f"call_{k}", "function_name": "bash_command",
                                "arguments": {"keystrokes": f"python3 step_{k}.py\n", "duration": 1.0}}],
                "observation": {"results": [{"source_call_id": f"call_{k}", "content": _text(rng, 1500)}]}}
        steps.append(step)
        size += len(json.dumps(step))
    return steps


def _atif_run(rng: random.Random, target_bytes: int) -> dict[str, str]:
    """A terminus-2 style ATIF run split by summarization into trajectory.json and trajectory.cont-1.json."""
    head = {"schema_version": "ATIF-v1.6", "session_id": "s", "agent": {"name": "terminus-2", "version": "2",
                                                                          "model_name": "synthetic/model"}}
    user = {"step_id": 1, "source": "user", "message": _text(rng, 500)}
    first = {**head, "steps": [user, *_atif_steps(rng, target_bytes // 2, 2)],
             "continued_trajectory_ref": "trajectory.cont-1.json"}
    copied = [{**user, "is_copied_context": True}]
    second = {**head, "session_id": "s-cont-1", "steps": [*copied, *_atif_steps(rng, target_bytes // 2, 2)]}
    return {"agent/trajectory.json": json.dumps(first), "agent/trajectory.cont-1.json": json.dumps(second)}


def _terminus_log(rng: random.Random, target_bytes: int) -> str:
    episodes, size = [], 0
    while size < target_bytes:
        reply = {"analysis": _text(rng, 600), "plan": _text(rng, 200),
                 "commands": [{"keystrokes": f"python3 step_{len(episodes)}.py\n", "duration": 1.0}],
                 "task_complete": False}
        episodes.append({"episode": len(episodes), "prompt": _text(rng, 1500), "response": json.dumps(reply)})
        size += len(json.dumps(episodes[-1]))
    return json.dumps(episodes)


def _gcpc_log(rng: random.Random, target_bytes: int) -> str:
    lines = [json.dumps({"gcpc_log": 1, "agent": "synthetic", "model": "synthetic/model"})]
    n = 0
    while sum(map(len, lines)) < target_bytes:
        n += 1
        lines += [json.dumps({"kind": "agent_thinking", "text": _text(rng, 800)}),
                  json.dumps({"kind": "tool_call", "text": f"python3 step_{n}.py", "tool_name": "shell",
                              "call": f"c{n}"}),
                  json.dumps({"kind": "tool_output", "text": _text(rng, 1500), "call_ref": f"c{n}"})]
    return "\n".join(lines) + "\n"


FORMATS = {
    "claude-code": lambda rng, n: {"agent/claude-code.txt": synthetic_log(rng, n)},
    "atif (2 files)": _atif_run,
    "terminus-2": lambda rng, n: {"agent/trajectory.json": _terminus_log(rng, n)},
    "codex": lambda rng, n: {"agent/codex.txt": _codex_log(rng, n)},
    "acp": lambda rng, n: {"trajectory/acp_trajectory.jsonl": _acp_log(rng, n)},
    "gcpc-jsonl": lambda rng, n: {"agent/run.jsonl": _gcpc_log(rng, n)},
}
"""Format label -> writer of one trial's log files (relative path -> text) of about n bytes."""


def write_mixed_corpus(root: Path, per_format: int, log_kb: int, writers: dict | None = None,
                       seed: int = 2) -> dict[str, Path]:
    """`per_format` synthetic trials of every format of `writers` (default `FORMATS`), one trials
    folder each, all under `root/tasks`."""
    rng = random.Random(seed)
    tasks, _ = write_synthetic_corpus(root, 0, log_kb)
    folders = {}
    for label, make in (writers or FORMATS).items():
        folders[label] = root / "by-format" / label.split()[0]
        for i in range(per_format):
            task = f"synthetic-task-{i % 5}"
            d = folders[label] / f"{task}__{label.split()[0]}-{i:05d}"
            (d / "verifier").mkdir(parents=True)
            (d / "result.json").write_text(json.dumps({
                "task_name": task, "trial_name": d.name, "verifier_result": {"rewards": {"reward": float(i % 2)}},
                "config": {"agent": {"model_name": "synthetic/model"}}, "started_at": f"2026-01-01T00:00:{i % 60:02d}Z"}))
            for rel, text in make(rng, log_kb * 1024).items():
                (d / rel).parent.mkdir(parents=True, exist_ok=True)
                (d / rel).write_text(text)
    return folders


def add_sparse_trials(trials: Path) -> None:
    """Two trials holding a 1 GB sparse file where import reads: the agent log, and reward.txt."""
    for name, rel in (("synthetic-task-0__sparse-log", "agent/claude-code.txt"),
                      ("synthetic-task-0__sparse-reward", "verifier/reward.txt")):
        d = trials / name
        (d / "agent").mkdir(parents=True)
        (d / "verifier").mkdir()
        (d / "result.json").write_text(json.dumps({"task_name": "synthetic-task-0", "trial_name": name}))
        if rel != "agent/claude-code.txt":
            (d / "agent" / "claude-code.txt").write_text(synthetic_log(random.Random(0), 4096))
        with open(d / rel, "wb") as fh:
            fh.truncate(2**30)


def profile_import(n_trials: int, log_kb: int, work: Path) -> None:
    """cProfile of the two halves of an import of the Claude Code synthetic corpus, apart: parsing
    (what each parse worker runs, here in one process) and writing (what the importing process
    runs on the parsed trials, in batches). Which half bounds throughput depends on the cores."""
    from gcpc_core import ingest

    tasks, trials = write_synthetic_corpus(work / "profile", n_trials, log_kb)
    store = Store(work / "profile.db")
    import_project(store, tasks_dir=tasks, progress=False)
    dirs = find_trial_dirs(trials)
    options = {"known_tasks": store.trials.task_ids(), "condition_map": {}, "pass_threshold": 1.0,
               "max_log_bytes": ingest.DEFAULT_MAX_LOG_BYTES, "is_demo": False, "derive_outcome": False,
               "settings": "bench", "root": trials.resolve()}
    prof, cpu0 = cProfile.Profile(), _cpu()
    prof.enable()
    loaded = [ingest._load_or_reason(d, **options) for d in dirs]
    prof.disable()
    _print_profile("parse (the parse workers' share)", prof, _cpu() - cpu0, loaded)
    batches = list(ingest._batches(iter(zip(dirs, loaded))))
    prof, cpu0 = cProfile.Profile(), _cpu()
    prof.enable()
    for batch in batches:
        store.trials.replace_trajectories([outcome for _, outcome in batch])
    prof.disable()
    _print_profile("write (the importing process's share)", prof, _cpu() - cpu0, loaded)


def _print_profile(label: str, prof, cpu: float, loaded: list) -> None:
    mb = sum(outcome[0].log_bytes for outcome in loaded if not isinstance(outcome, str)) / 2**20
    print(f"== {label}: {cpu:.2f} CPU s for {mb:.1f} MB of logs, under the profiler")
    pstats.Stats(prof).sort_stats("tottime").print_stats(20)


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


def _synthetic(args: argparse.Namespace, work: Path) -> str:
    """The Claude Code synthetic corpus: first import, re-import, and import beside two sparse files;
    returns the first import's table row."""
    t0 = time.perf_counter()
    tasks, trials = write_synthetic_corpus(work / "synthetic", args.synthetic, args.log_kb)
    print(f"synthetic corpus: {args.synthetic} trials written in {time.perf_counter() - t0:.1f} s")
    first = timed_import(tasks, trials, work / "synthetic.db", args.workers[-1])
    base = decode_baseline(trials)
    print(_fmt("synthetic import", first))
    print(_vs("  vs", first, base))
    again = timed_import(tasks, trials, work / "synthetic.db", args.workers[-1])
    print(_fmt("synthetic re-import (idempotent)", again, corpus_bytes=first["bytes"]))
    add_sparse_trials(trials)
    sparse = timed_import(tasks, trials, work / "synthetic-sparse.db", args.workers[-1])
    print(_fmt("synthetic import with two 1 GB sparse files in the corpus (fresh DB)", sparse))
    print(f"  skipped: {sparse['reasons']}")
    return _row(f"claude-code ({args.synthetic} synthetic)", first, base)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--synthetic", type=int, default=2000, help="synthetic trials (default %(default)s)")
    ap.add_argument("--log-kb", type=int, default=170, help="synthetic log size (default %(default)s KB)")
    ap.add_argument("--per-format", type=int, default=200, help="mixed corpus: trials per format (default %(default)s)")
    ap.add_argument("--formats", help=f"mixed corpus: only these, comma-separated (of {', '.join(FORMATS)})")
    ap.add_argument("--workers", type=lambda v: [int(n) for n in v.split(",")], default=[None],
                    help="parse workers, comma-separated counts, each measured (default: the import's own); the "
                         "Claude Code corpus uses the last")
    ap.add_argument("--profile", type=int, metavar="N", help="only profile a single-process import of N trials")
    ap.add_argument("--keep", type=Path, help="keep the synthetic corpus and DBs here")
    args = ap.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="gcpc-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    if args.profile:
        try:
            profile_import(args.profile, args.log_kb, work)
        finally:
            if args.keep is None:
                shutil.rmtree(work, ignore_errors=True)
        return
    table: list[str] = []
    try:
        if SKILLSBENCH.is_dir():
            real = timed_import(SKILLSBENCH / "tasks", SKILLSBENCH / "trials", work / "real.db")
            print(_fmt("real corpus", real))
            evidence_sizes(SKILLSBENCH / "trials")
        else:
            print(f"real corpus: not found at {SKILLSBENCH}, skipped")
        if args.synthetic:
            table.append(_synthetic(args, work))
        chosen = args.formats.split(",") if args.formats else list(FORMATS)
        writers = {label: make for label, make in FORMATS.items() if label.split()[0] in chosen or label in chosen}
        folders = write_mixed_corpus(work / "mixed", args.per_format, args.log_kb, writers)
        print(f"mixed corpus: {args.per_format} trials of each of {len(folders)} formats, ~{args.log_kb} KB logs")
        for label, folder in folders.items():
            base = decode_baseline(folder)
            for workers in args.workers:
                r = timed_import(work / "mixed" / "tasks", folder, work / f"mixed-{label.split()[0]}-{workers}.db", workers)
                print(_fmt(f"  {label}, {r['workers']} parse workers", r))
                print(_vs("    vs", r, base))
                table.append(_row(label, r, base))
        print(f"\nimport vs json.loads of the same bytes, each measured in this run (load average "
              f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}, {os.cpu_count()} CPUs):")
        print(TABLE_HEAD)
        print("\n".join(table))
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
