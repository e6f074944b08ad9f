"""Importer fuzz drill: mutated copies of real trial folders through `gcpc_core.ingest.import_project`.

Each case copies one real trial folder (read in place from ../shared/skillsbench/trials) into a
temporary folder, mutates one of its files — mostly the agent log, sometimes result.json,
config.json or the CTRF report — and imports it beside an untouched good trial into a fresh copy of
a project DB that already holds the real tasks. A case passes when no exception escapes the
importer; the mutated trial is either imported or reported with its path and a reason (also kept in
`import_issues`); nothing of a reported trial is stored (no trajectory row, no events); and the good
trial is imported whole. Seeded and bounded: the same seed gives the same cases.

`run_hostile_drill` adds the folders a red-team pass built (`HOSTILE`): named pipes, 1 GB sparse
files and link loops where the importer reads, a verifier that is a folder, a task.toml nested
100,000 deep, a 300,000-term verifier expression. Each must be reported with its path and reason
(never as an unexpected error), never hang, leave the good trials imported whole, and a second
import must change nothing.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import time
import traceback
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gcpc_core.ingest import UNEXPECTED, UNEXPECTED_TASK, import_project
from gcpc_core.store import Store

__all__ = ["HOSTILE", "MUTATIONS", "FuzzFigures", "mutate", "run_fuzz_drill", "run_hostile_drill"]

CONTENT_KEYS = frozenset({
    "content", "text", "message", "input", "output", "result", "thinking", "tool_use_id", "steps", "observation",
    "results", "response", "prompt", "tool_calls", "arguments", "exception_info", "verifier_result", "rewards",
    "reward", "tests", "name", "status", "trial_name", "task_name", "agent_info", "agent_result", "config",
    "task", "agent", "source", "type", "id", "skills", "tools", "model_name", "metrics", "extra",
})
"""Keys whose values the type-swap mutation targets: content fields and the fields import reads."""


def _json_lines(data: bytes) -> list[bytes] | None:
    """The lines of a JSON-lines file, or None when the file is one JSON document."""
    lines = data.split(b"\n")
    try:
        json.loads(data)
        return None
    except ValueError:
        return lines


def _nodes(value: Any, path: tuple = ()) -> list[tuple[tuple, Any]]:
    """Every (path, value) inside a decoded JSON value."""
    out = [(path, value)]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _nodes(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _nodes(v, (*path, i))
    return out


def _set(root: Any, path: tuple, value: Any) -> Any:
    if not path:
        return value
    parent = root
    for key in path[:-1]:
        parent = parent[key]
    parent[path[-1]] = value
    return root


def _swap(value: Any, rng: random.Random) -> Any:
    """A value of another JSON type: string ↔ list ↔ null, and numbers, objects, booleans."""
    if isinstance(value, str):
        options: list[Any] = [[value], None, 7, {"text": value}, True]
    elif isinstance(value, list):
        options = [json.dumps(value)[:200], None, {}, 0]
    elif isinstance(value, dict):
        options = [[value], "swapped", None, 3.5]
    elif value is None:
        options = ["swapped", ["swapped"], {"swapped": 1}, 0]
    else:
        options = [str(value), [value], None, {"value": value}]
    return rng.choice(options)


def _edit_json(data: bytes, rng: random.Random, edit: Callable[[Any, random.Random], Any | None]) -> bytes | None:
    """Apply `edit` to one decoded JSON value (the document, or one line of a JSON-lines file)."""
    lines = _json_lines(data)
    if lines is None:
        doc = json.loads(data)
        new = edit(doc, rng)
        return None if new is None else json.dumps(new, indent=2).encode()
    candidates = [i for i, line in enumerate(lines) if line.strip()]
    rng.shuffle(candidates)
    for i in candidates[:20]:
        new = edit(json.loads(lines[i]), rng)
        if new is not None:
            lines[i] = json.dumps(new).encode()
            return b"\n".join(lines)
    return None


def _type_swap(doc: Any, rng: random.Random) -> Any | None:
    """Swap the type of one field named in `CONTENT_KEYS`; the key is drawn first, so rare keys get hit."""
    by_key: dict[str, list[tuple]] = {}
    for p, _ in _nodes(doc):
        if p and isinstance(p[-1], str) and p[-1] in CONTENT_KEYS:
            by_key.setdefault(p[-1], []).append(p)
    if not by_key:
        return None
    path = rng.choice(by_key[rng.choice(sorted(by_key))])
    value = doc
    for key in path:
        value = value[key]
    return _set(doc, path, _swap(value, rng))


def _missing_key(doc: Any, rng: random.Random) -> Any | None:
    holders = [(p, v) for p, v in _nodes(doc) if isinstance(v, dict) and v]
    if not holders:
        return None
    _, holder = rng.choice(holders)
    del holder[rng.choice(sorted(holder))]
    return doc


def _lone_surrogate(doc: Any, rng: random.Random) -> Any | None:
    """A lone UTF-16 surrogate escape (`\\udc80`) in a string: valid JSON, not encodable as UTF-8."""
    strings = [(p, v) for p, v in _nodes(doc) if p and isinstance(v, str)]
    if not strings:
        return None
    path, value = rng.choice(strings)
    cut = rng.randrange(len(value) + 1)
    return _set(doc, path, value[:cut] + rng.choice(["\udc80", "\ud800", "\udfff"]) + value[cut:])


def _huge_value(doc: Any, rng: random.Random) -> Any | None:
    """One string value grown to a single 1–3 MB line (JSON escapes keep it on one line)."""
    strings = [(p, v) for p, v in _nodes(doc) if p and isinstance(v, str)]
    if not strings:
        return None
    path, value = rng.choice(strings)
    return _set(doc, path, value + "x" * rng.randrange(2**20, 3 * 2**20))


def _lines(data: bytes, rng: random.Random, duplicate: bool) -> bytes:
    lines = data.split(b"\n")
    i = rng.randrange(len(lines))
    n = rng.randint(1, 3)
    return b"\n".join(lines[:i] + (lines[i:i + n] * 2 if duplicate else []) + lines[i + n:])


def _insert(data: bytes, rng: random.Random, what: bytes) -> bytes:
    i = rng.randrange(len(data) + 1)
    return data[:i] + what + data[i:]


def _flip(data: bytes, rng: random.Random) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        i = rng.randrange(len(out))
        out[i] ^= rng.randrange(1, 256)
    return bytes(out)


MUTATIONS: dict[str, Callable[[bytes, random.Random], bytes | None]] = {
    "truncate": lambda d, r: d[: r.randrange(len(d))],
    "byte_flip": _flip,
    "delete_lines": lambda d, r: _lines(d, r, duplicate=False),
    "duplicate_lines": lambda d, r: _lines(d, r, duplicate=True),
    "invalid_utf8": lambda d, r: _insert(d, r, r.choice([b"\xff", b"\xc3\x28", b"\xe2\x82", b"\xed\xa0\x80"])),
    "nul_byte": lambda d, r: _insert(d, r, b"\x00"),
    "huge_line": lambda d, r: _edit_json(d, r, _huge_value),
    "garbage_huge_line": lambda d, r: _insert(d, r, b"\n" + b"A" * r.randrange(2**20, 2**21) + b"\n"),
    "type_swap": lambda d, r: _edit_json(d, r, _type_swap),
    "missing_key": lambda d, r: _edit_json(d, r, _missing_key),
    "lone_surrogate": lambda d, r: _edit_json(d, r, _lone_surrogate),
}
"""Mutation name → function(bytes, rng) → mutated bytes (None: not applicable to this file)."""


def mutate(data: bytes, kind: str, rng: random.Random) -> bytes | None:
    """`data` mutated by `kind`; None when the mutation does not apply (or changes nothing)."""
    if not data:
        return None
    out = MUTATIONS[kind](data, rng)
    return None if out is None or out == data else out


@dataclass
class FuzzFigures:
    cases: int = 0
    imported: int = 0
    """Mutated trials the importer accepted."""
    reported: int = 0
    """Mutated trials skipped with their path and a reason."""
    crashes: list[str] = field(default_factory=list)
    """Exceptions that escaped the importer."""
    violations: list[str] = field(default_factory=list)
    """Broken promises: unreported skips, partial storage, a good trial lost."""
    by_mutation: Counter = field(default_factory=Counter)
    by_file: Counter = field(default_factory=Counter)
    reasons: Counter = field(default_factory=Counter)
    """First words of the reported reasons (after the path)."""
    wall_s: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.crashes and not self.violations and self.cases == self.imported + self.reported

    def lines(self) -> list[str]:
        return [
            f"importer fuzz drill: {self.cases} cases run "
            f"({', '.join(f'{k} {v}' for k, v in sorted(self.by_mutation.items()))})",
            f"  files mutated: {', '.join(f'{k} {v}' for k, v in sorted(self.by_file.items()))}",
            f"  imported {self.imported}, reported with path and reason {self.reported}, crashes {len(self.crashes)}, "
            f"violations {len(self.violations)}; wall {self.wall_s:.1f} s",
        ]


def _trial_dirs(trials: Path) -> list[Path]:
    return sorted(p for p in trials.iterdir() if p.is_dir() and (p / "result.json").is_file())


def _target_files(trial: Path, rng: random.Random) -> Path:
    """Mostly the agent log; else result.json, config.json or the CTRF report."""
    agent = sorted(p for p in (trial / "agent").iterdir() if p.is_file())
    others = [trial / n for n in ("result.json", "config.json", "verifier/ctrf.json") if (trial / n).is_file()]
    return rng.choice(agent) if rng.random() < 0.7 or not others else rng.choice(others)


def _template(skillsbench: Path, work: Path) -> tuple[Path, dict[str, int]]:
    """A project DB holding the real tasks; and the event count of every real trial imported clean."""
    db = work / "template.db"
    store = Store(db)
    import_project(store, tasks_dir=skillsbench / "tasks", progress=False)
    store.close()
    probe = work / "clean.db"
    shutil.copy(db, probe)
    clean = Store(probe)
    report = import_project(clean, trials_dir=skillsbench / "trials", progress=False, workers=1)
    if report.skipped:
        raise RuntimeError(f"the real trials do not import cleanly: {report.skipped}")
    counts = clean.trials.event_counts()
    clean.close()
    return db, {t: counts.get(t, 0) for t in _names(skillsbench / "trials")}


def _names(trials: Path) -> list[str]:
    return [str(json.loads((d / "result.json").read_bytes()).get("trial_name") or d.name) for d in _trial_dirs(trials)]


def _check_case(store: Store, report: Any, bad_dir: Path, good_id: str, good_events: int, figures: FuzzFigures,
                label: str) -> None:
    """Imported or reported; nothing partial of a reported trial; the good trial whole."""
    bad = str(bad_dir.resolve())
    mine = [(p, r) for p, r in report.skipped if p == bad]
    others = [(p, r) for p, r in report.skipped if p != bad]
    rows = {t.source_path: t.id for t in store.trials.trajectories()}
    counts = store.trials.event_counts()
    if others:
        figures.violations.append(f"{label}: unexpected skips {others}")
    if [t for p, t in rows.items() if p != bad] != [good_id] or counts.get(good_id) != good_events:
        figures.violations.append(f"{label}: good trial {good_id} not imported whole "
                                  f"({counts.get(good_id)} events, want {good_events})")
    orphans = set(counts) - set(rows.values())
    if orphans:
        figures.violations.append(f"{label}: events without a trajectory: {sorted(orphans)}")
    if mine:
        figures.reported += 1
        _, reason = mine[0]
        if not reason.strip() or UNEXPECTED in reason:  # an importer bug caught by its safety net
            figures.violations.append(f"{label}: skipped without a proper reason: {reason[:300]}")
        if bad in rows:
            figures.violations.append(f"{label}: reported trial still stored")
        if not any(i.path == bad and i.reason == reason for i in store.trials.import_issues()):
            figures.violations.append(f"{label}: skip not kept in import_issues")
        after_path = reason.split(": ", 1)[-1] if reason.startswith(("/", bad)) else reason
        figures.reasons[" ".join(after_path.split()[:3])] += 1
    elif bad in rows:
        figures.imported += 1
    else:
        figures.violations.append(f"{label}: neither imported nor reported")


def run_fuzz_drill(skillsbench: Path, work: Path, *, cases: int = 300, seed: int = 8) -> FuzzFigures:
    """Run `cases` seeded fuzz cases in `work` (a temporary folder); nothing is written elsewhere."""
    start = time.monotonic()
    trials = _trial_dirs(skillsbench / "trials")
    template, clean_events = _template(skillsbench, work)
    names = dict(zip(trials, _names(skillsbench / "trials")))
    rng = random.Random(seed)
    kinds = sorted(MUTATIONS)
    figures = FuzzFigures()
    case = 0
    while figures.cases < cases:
        case += 1
        kind = kinds[case % len(kinds)]
        source = rng.choice(trials)
        target = _target_files(source, rng)
        mutated = mutate(target.read_bytes(), kind, rng)
        if mutated is None:
            continue
        good = rng.choice([t for t in trials if names[t] != names[source]])
        case_dir = work / f"case-{case:04d}"
        bad_dir, good_dir = case_dir / "trials" / source.name, case_dir / "trials" / good.name
        shutil.copytree(source, bad_dir)
        shutil.copytree(good, good_dir)
        for copy in (bad_dir, good_dir):  # the shared corpus is read-only; its copies need not be
            for p in [copy, *copy.rglob("*")]:
                p.chmod(0o755 if p.is_dir() else 0o644)
        rel = target.relative_to(source)
        (bad_dir / rel).write_bytes(mutated)
        db = case_dir / "project.db"
        shutil.copy(template, db)
        label = f"case {case} ({kind} of {source.name}/{rel.as_posix()})"
        figures.cases += 1
        figures.by_mutation[kind] += 1
        figures.by_file[rel.name] += 1
        store = Store(db)
        try:
            report = import_project(store, trials_dir=case_dir / "trials", progress=False, workers=1)
        except Exception:  # noqa: BLE001 — the drill counts what escapes
            figures.crashes.append(f"{label}: {traceback.format_exc(limit=4)}")
        else:
            _check_case(store, report, bad_dir, names[good], clean_events[names[good]], figures, label)
        finally:
            store.close()
        shutil.rmtree(case_dir)
    figures.wall_s = time.monotonic() - start
    return figures


# ---- hostile folders: what a red-team pass put beside real tasks and trials ----

def _fifo(path: Path) -> None:
    path.unlink(missing_ok=True)
    os.mkfifo(path)


def _sparse(path: Path) -> None:
    with open(path, "wb") as fh:
        fh.truncate(2**30)


def _loop(path: Path) -> None:
    path.unlink(missing_ok=True)
    path.symlink_to(path.name)


def _verifier_folder(path: Path) -> None:
    path.mkdir()


def _nested_toml(path: Path) -> None:
    path.write_text("x = " + "[" * 100_000 + "]" * 100_000 + "\n")


def _huge_expression(path: Path) -> None:
    path.write_text("def test_x():\n    assert " + "1 + " * 300_000 + "1\n")


HOSTILE: dict[str, tuple[str, Callable[[Path], None]]] = {
    "fifo_verifier": ("task:tests/test_fifo.py", _fifo),
    "verifier_is_a_folder": ("task:tests/test_x.py", _verifier_folder),
    "nested_task_toml": ("task:task.toml", _nested_toml),
    "huge_verifier_expression": ("task:tests/test_outputs.py", _huge_expression),
    "fifo_reward": ("trial:verifier/reward.txt", _fifo),
    "fifo_log": ("trial:LOG", _fifo),
    "fifo_result": ("trial:result.json", _fifo),
    "sparse_1gb_reward": ("trial:verifier/reward.txt", _sparse),
    "sparse_1gb_log": ("trial:LOG", _sparse),
    "sparse_1gb_ctrf": ("trial:verifier/ctrf.json", _sparse),
    "looping_log_link": ("trial:LOG", _loop),
    "looping_result_link": ("trial:result.json", _loop),
}
"""Case → (`task:` or `trial:` file to replace, relative to the folder; LOG is the trial's agent log; how)."""


def _hostile_case(skillsbench: Path, case_dir: Path, target: str, make: Callable[[Path], None],
                  rng: random.Random) -> tuple[Path, list[Path]]:
    """Copy a real task (with one of its trials) and another real task with its trials; break one file.

    Returns the folder expected to be reported and the good trial folders expected to import.
    """
    by_task: dict[str, list[Path]] = {}
    for trial in _trial_dirs(skillsbench / "trials"):
        task = json.loads((trial / "result.json").read_bytes())["task_name"]
        by_task.setdefault(task, []).append(trial)
    bad_task, good_task = rng.sample(sorted(by_task), 2)
    for task in (bad_task, good_task):
        shutil.copytree(skillsbench / "tasks" / task, case_dir / "tasks" / task)
    good = [shutil.copytree(t, case_dir / "trials" / t.name) for t in by_task[good_task]]
    bad_trial = shutil.copytree(rng.choice(by_task[bad_task]), case_dir / "trials" / "hostile-trial")
    for p in [case_dir, *case_dir.rglob("*")]:  # the shared corpus is read-only; its copies need not be
        p.chmod(0o755 if p.is_dir() else 0o644)
    kind, rel = target.split(":", 1)
    if kind == "task":
        folder = case_dir / "tasks" / bad_task
        shutil.rmtree(bad_trial)  # its task is left out: the trial would be reported as of an unknown task
    else:
        folder = bad_trial
        if rel == "LOG":
            rel = next(p.relative_to(folder).as_posix() for p in sorted((folder / "agent").iterdir()))
        if rel == "verifier/reward.txt":  # read only when result.json holds no reward
            result = json.loads((folder / "result.json").read_bytes())
            (folder / "result.json").write_text(json.dumps({**result, "verifier_result": None}))
    make(folder / rel)
    return folder, good


def run_hostile_drill(skillsbench: Path, work: Path, *, seed: int = 14) -> FuzzFigures:
    """Each `HOSTILE` case beside real tasks and trials: reported (never an unexpected error), the good
    trials imported whole, memory bounded, and a second import changing nothing."""
    start = time.monotonic()
    rng = random.Random(seed)
    figures = FuzzFigures()
    for case, (target, make) in sorted(HOSTILE.items()):
        case_dir = work / f"hostile-{case}"
        bad, good = _hostile_case(skillsbench, case_dir, target, make, rng)
        figures.cases += 1
        figures.by_mutation[case] += 1
        figures.by_file[target.split(":", 1)[1].split("/")[-1]] += 1
        store = Store(case_dir / "project.db")
        try:
            reports = [import_project(store, tasks_dir=case_dir / "tasks", trials_dir=case_dir / "trials",
                                      progress=False, workers=1) for _ in range(2)]
        except Exception:  # noqa: BLE001 — the drill counts what escapes
            figures.crashes.append(f"{case}: {traceback.format_exc(limit=4)}")
        else:
            _check_hostile(store, reports, bad, good, figures, case)
        finally:
            store.close()
        shutil.rmtree(case_dir)
    figures.wall_s = time.monotonic() - start
    return figures


def _check_hostile(store: Store, reports: list[Any], bad: Path, good: list[Path], figures: FuzzFigures,
                   case: str) -> None:
    first, second = reports
    mine = [r for p, r in first.skipped if p == str(bad.resolve()) or p.startswith(f"{bad.resolve()}/")]
    if not mine or any(UNEXPECTED in r or UNEXPECTED_TASK in r for _, r in first.skipped):
        figures.violations.append(f"{case}: not reported as it should be: {first.skipped}")
    else:
        figures.reported += 1
        figures.reasons[" ".join(mine[0].split(": ", 1)[-1].split()[:3])] += 1
    stored = {t.source_path for t in store.trials.trajectories()}
    if stored != {str(g.resolve()) for g in good}:
        figures.violations.append(f"{case}: stored trials {sorted(stored)} are not the good ones")
    if (second.tasks_imported, second.trials_imported, second.trials_updated) != (0, 0, 0) or \
            sorted(second.skipped) != sorted(first.skipped):
        figures.violations.append(f"{case}: a second import changed something: {second.summary_lines()}")
