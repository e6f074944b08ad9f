"""Trial folders: result.json, config.json, the verifier's CTRF report and reward.

A trial is read whole into memory and validated before anything is stored, so a
broken folder is reported and skipped and never half-imported. Besides Harbor's own layout
(`result.json` with `verifier_result.rewards.reward`), the flat `result.json` other runners write
(`rewards.reward`, `timing`, `n_tool_calls`) is read, and a trial that never wrote a
`result.json` but whose verifier left a report is imported as `unscored`: its outcome is never
guessed (`derive_outcome` turns the CTRF report into PASS/FAIL on request, and says so).
"""

from __future__ import annotations

import csv
import hashlib
import json
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..defaults import DEFAULT_MAX_LOG_BYTES, DEFAULT_PASS_THRESHOLD
from ..models import Condition, CtrfTest, Outcome, Trajectory
from .bounded import FileRefused, hash_regular, is_regular, read_regular
from .confine import first_escape, refusal, walk
from .files import read_utf8, resolved_folder
from .logs import LogError, ParsedLog, find_log, log_files, parse_log
from .logs._io import has_surrogate_escape, lone_surrogate

__all__ = [
    "DEFAULT_MAX_LOG_BYTES",
    "DEFAULT_PASS_THRESHOLD",
    "TrialError",
    "check_confined",
    "find_trial_dirs",
    "load_condition_map",
    "load_trial",
    "trial_fingerprint",
]

_MAX_JSON_BYTES = 8 * 2**20
_MAX_REWARD_BYTES = 4096
INGEST_VERSION = "2"
"""Bumped when parsing changes, so a re-import refreshes every stored trial."""
_NOSKILL_MARKERS = ("noskills", "no-skills", "no_skills", "without-skills", "without_skills", "noskill")
_SKILL_MARKERS = ("with-skills", "with_skills", "skills")


class TrialError(ValueError):
    """A trial folder that cannot be imported; the message names the path and the problem."""


_LOG_FOLDERS = ("agent", "trajectory")
"""Sub-folders where harnesses write their logs: Harbor's `agent/`, ACP runners' `trajectory/`."""
_VERIFIER_REPORTS = ("verifier/ctrf.json", "verifier/reward.txt")


def _present(path: Path) -> bool:
    """Whether something is at `path` (a broken or looping link included), so it is reported, not ignored."""
    return path.is_symlink() or path.exists()


def find_trial_dirs(root: Path) -> list[Path]:
    """Every folder under `root` (itself included) holding a trial: a `result.json` or a log folder."""
    found: set[str] = set()
    # one walk (links to folders are listed, never entered; unreadable folders are passed over)
    for dirpath, dirs, files in walk(Path(root)):  # as a Path, so its name is normalized like the results
        if any(f.name == "result.json" and is_regular(f.path) for f in files) or any(
                d.name in _LOG_FOLDERS for d in dirs):
            found.add(dirpath)
    # a job folder holding trials also has a result.json: keep only the innermost trial folders
    ancestors: set[str] = set()
    for folder in found:
        parent = os.path.dirname(folder)
        while parent != folder and parent not in ancestors:
            ancestors.add(parent)
            folder, parent = parent, os.path.dirname(parent)
    return sorted(Path(d) for d in found if d not in ancestors)


def _read_json(path: Path) -> Any:
    text = read_utf8(path, max_bytes=_MAX_JSON_BYTES, error=TrialError, what=f"a {path.name}", newline="")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TrialError(f"{path}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from exc
    except RecursionError:
        raise TrialError(f"{path}: JSON nested too deeply") from None
    bad = lone_surrogate(json.dumps(data, ensure_ascii=False)) if has_surrogate_escape(text) else None
    if bad:  # valid JSON, but the DB cannot store it
        raise TrialError(f"{path}: lone surrogate {bad} from a \\u escape: not valid Unicode text")
    return data


def _dict(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def _ctrf(path: Path) -> list[CtrfTest]:
    data = _read_json(path)
    tests = _dict(_dict(data).get("results")).get("tests")
    if not isinstance(tests, list):
        raise TrialError(f"{path}: no results.tests list (not a CTRF report)")
    out = []
    for i, t in enumerate(tests):
        if not isinstance(t, dict) or "name" not in t or "status" not in t:
            raise TrialError(f"{path}: results.tests[{i}] lacks name or status")
        message = t.get("message") or t.get("trace")
        duration = t.get("duration")
        out.append(
            CtrfTest(
                name=str(t["name"]),
                status=str(t["status"]),
                message=str(message) if message else None,
                duration=float(duration) if isinstance(duration, (int, float)) else None,
            )
        )
    return out


def _number(value: Any) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


def _reward(trial_dir: Path, result: dict) -> tuple[float | None, str]:
    """The official reward and where it came from: Harbor's `verifier_result`, a flat `rewards`,
    else `verifier/reward.txt` (read bounded: a reward is a number, not a file of gigabytes)."""
    for source, rewards in (("result.json", _dict(_dict(result.get("verifier_result")).get("rewards"))),
                            ("result.json", _dict(result.get("rewards")))):
        value = _number(rewards.get("reward"))
        if value is not None:
            return value, source
    reward_txt = trial_dir / "verifier" / "reward.txt"
    if _present(reward_txt):
        try:
            raw = read_regular(reward_txt, _MAX_REWARD_BYTES, what="a reward")
        except FileRefused as exc:
            raise TrialError(str(exc)) from None
        text = raw.decode("utf-8", errors="replace").strip()
        try:
            value = float(text)
        except ValueError:
            raise TrialError(f"{reward_txt}: not a number: {text[:40]!r}") from None
        if not math.isfinite(value):
            raise TrialError(f"{reward_txt}: not a finite number: {text[:40]!r}")
        return value, "verifier/reward.txt"
    return None, "missing"


def _outcome(reward: float | None, source: str, ctrf: list[CtrfTest], ctrf_present: bool, *,
             pass_threshold: float, derive_outcome: bool) -> tuple[Outcome, str]:
    """The official outcome and the evidence for it; `unscored` when no reward was recorded."""
    if reward is not None:
        op = ">=" if reward >= pass_threshold else "<"
        return ("PASS" if reward >= pass_threshold else "FAIL"), f"reward {reward:g} from {source} {op} {pass_threshold:g}"
    failed = sum(t.status in ("failed", "error") for t in ctrf)
    passed = sum(t.status == "passed" for t in ctrf)
    if derive_outcome and ctrf:
        outcome: Outcome = "PASS" if failed == 0 and passed > 0 else "FAIL"
        return outcome, (f"derived on request from verifier/ctrf.json ({passed} passed, {failed} failed of "
                         f"{len(ctrf)}): no reward was recorded")
    report = f"verifier/ctrf.json: {passed} passed, {failed} failed of {len(ctrf)}" if ctrf_present else "no CTRF report"
    return "unscored", f"no reward recorded ({report})"


def load_condition_map(path: Path) -> dict[str, Condition]:
    """A user-supplied mapping trial → condition: CSV/TSV with `trial` and `condition` columns, or JSON."""
    path = Path(path)
    if path.suffix == ".json":
        data = _read_json(path)
        if not isinstance(data, dict):
            raise TrialError(f"{path}: expected a JSON object mapping trial name to condition")
        rows = list(data.items())
    else:
        text = path.read_text(encoding="utf-8")
        dialect = csv.excel_tab if "\t" in text.splitlines()[0] else csv.excel
        reader = csv.DictReader(text.splitlines(), dialect=dialect)
        key = next((k for k in ("trial", "trial_name", "trial_folder", "trajectory_id") if k in (reader.fieldnames or [])), None)
        if key is None or "condition" not in (reader.fieldnames or []):
            raise TrialError(f"{path}: needs a 'trial' (or trial_name/trial_folder) column and a 'condition' column")
        rows = [(r[key], r["condition"]) for r in reader]
    out: dict[str, Condition] = {}
    for trial, cond in rows:
        norm = _normalize_condition(str(cond))
        if norm is None:
            raise TrialError(f"{path}: condition {cond!r} for {trial!r} is not with-skills / without-skills")
        out[str(trial)] = norm
    return out


def _normalize_condition(value: str) -> Condition | None:
    v = value.strip().lower().replace("_", "-")
    if v in ("with-skills", "with-skill", "skills", "skill", "with"):
        return "with-skills"
    if v in ("without-skills", "without-skill", "noskills", "no-skills", "noskill", "without", "none"):
        return "without-skills"
    return None


def _has_marker(text: str, markers: tuple[str, ...]) -> bool:
    parts = text.lower().replace("_", "-").replace("/", "-").split("-")
    joined = "-" + "-".join(parts) + "-"
    return any(f"-{m.replace('_', '-')}-" in joined for m in markers) or any(
        m in text.lower() for m in markers if m.startswith("no")
    )


def _task_path(result: dict, config: dict) -> str:
    """The task folder the run used: Harbor's `config.task.path`, or a flat config's `task_path`."""
    for cfg in (_dict(result.get("config")), config):
        path = _dict(cfg.get("task")).get("path") or cfg.get("task_path")
        if isinstance(path, str) and path:
            return path
    return ""


def _condition(
    trial_dir: Path, trial_name: str, result: dict, config: dict, log: ParsedLog, mapping: Mapping[str, Condition]
) -> tuple[Condition, str]:
    """Decide with/without skills from the strongest evidence available, and say which."""
    for key in (trial_name, trial_dir.name):
        if key in mapping:
            return mapping[key], "condition mapping file"
    task_path = _task_path(result, config)
    if task_path and _has_marker(task_path, _NOSKILL_MARKERS):
        return "without-skills", f"config task.path is a no-skills copy ({task_path})"
    if "skills_dir" in config:  # runners that mount Skills from a folder say which, or null for none
        skills_dir = config["skills_dir"]
        if isinstance(skills_dir, str) and skills_dir.strip():
            return "with-skills", f"config.json skills_dir={skills_dir}"
        if skills_dir is None or skills_dir == "":
            return "without-skills", "config.json skills_dir is null"
    meta = _dict(_dict(result.get("agent_result")).get("metadata"))
    if isinstance(meta.get("skills_loaded"), list):
        loaded = meta["skills_loaded"]
        return ("with-skills", f"skills_loaded={loaded}") if loaded else ("without-skills", "skills_loaded=[]")
    if log.skills_offered is not None:
        offered = log.skills_offered
        if offered:
            return "with-skills", f"agent log offers skills {offered}"
        return "without-skills", "agent log offers no skills"
    if log.skills_used:
        return "with-skills", f"agent activated skills {log.skills_used}"
    for part in reversed(trial_dir.parts):
        if _has_marker(part, _NOSKILL_MARKERS):
            return "without-skills", f"folder name {part!r}"
        if _has_marker(part, _SKILL_MARKERS):
            return "with-skills", f"folder name {part!r}"
    if "skillsbench" in task_path.lower() and "/tasks/" in task_path:
        return "with-skills", f"SkillsBench convention: task.path is the original tasks/ folder with skills ({task_path})"
    return "unknown", "no condition evidence in trial metadata, log or folder name"


def _text(value: Any) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip() else None


def _model(result: dict, config: dict, log: ParsedLog) -> str:
    agent_cfg = _dict(config.get("agent")) or _dict(_dict(result.get("config")).get("agent"))
    if agent_cfg.get("model_name"):
        return str(agent_cfg["model_name"])
    info = _dict(_dict(result.get("agent_info")).get("model_info"))
    if info.get("name"):
        provider = info.get("provider")
        return f"{provider}/{info['name']}" if provider else str(info["name"])
    return _text(result.get("model")) or _text(config.get("model")) or str(log.metadata.get("model") or "unknown")


def _agent(result: dict, config: dict, log: ParsedLog) -> str:
    named = _dict(result.get("agent_info")).get("name") or _dict(config.get("agent")).get("name")
    return str(named or _text(result.get("agent")) or _text(config.get("agent")) or log.metadata.get("agent")
               or "unknown")


def _timings(result: dict) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in ("started_at", "finished_at"):
        if result.get(key):
            out[key] = result[key]
    for phase in ("environment_setup", "agent_setup", "agent_execution", "verifier"):
        span = _dict(result.get(phase))
        if span:
            out[phase] = {k: span.get(k) for k in ("started_at", "finished_at")}
    durations = {k: v for k, v in _dict(result.get("timing")).items() if _number(v) is not None}
    if durations:  # a flat result.json gives each phase's length in seconds
        out["durations_s"] = durations
    return out


def _usage(result: dict) -> dict[str, Any]:
    """Token and tool-call counts as the harness recorded them (`agent_result`, or a flat result.json)."""
    out = {}
    for source in (result, _dict(result.get("agent_result"))):
        out.update({k: v for k, v in source.items()
                    if (k.startswith("n_") or k == "cost_usd") and (_number(v) is not None or v is None)})
    return out


def _exception(result: dict) -> dict[str, Any] | None:
    info = result.get("exception_info")
    if info:
        return info  # of the wrong type, the model refuses it and the trial is reported
    flat = {k: result[k] for k in ("error", "verifier_error") if result.get(k)}
    return flat or None


def _trial_files(trial_dir: Path, logs: list[Path]) -> list[Path]:
    candidates = ("result.json", "config.json", *_VERIFIER_REPORTS)
    return [p for p in (trial_dir / c for c in candidates) if _present(p)] + logs


def check_confined(trial_dir: Path, root: Path) -> None:
    """TrialError when the trial folder, or a file import reads in it, leads outside `root` (resolved)."""
    trial_dir = Path(trial_dir)
    paths = [trial_dir, *(trial_dir / n for n in ("result.json", "config.json", "verifier", *_VERIFIER_REPORTS,
                                                   *_LOG_FOLDERS))]
    escaped = first_escape(paths, root)
    for name in _LOG_FOLDERS if escaped is None else ():
        # the folder itself was checked above; of its entries only links can lead elsewhere, and
        # the listing says which entries are links without an lstat each
        try:
            with os.scandir(trial_dir / name) as listing:
                links = sorted(Path(e.path) for e in listing if e.is_symlink())
        except OSError:  # not a folder, or unreadable: nothing is read through it
            continue
        escaped = first_escape([trial_dir, *links], root) if links else None
        if escaped is not None:
            break
    if escaped is not None:
        raise TrialError(refusal(escaped, root))


def trial_fingerprint(trial_dir: Path, settings: str, max_log_bytes: int = DEFAULT_MAX_LOG_BYTES, *,
                      logs: list[Path] | None = None) -> str:
    """sha256 of the trial's files and of the import settings that shape its stored row.

    Cheap next to parsing, so a re-import can skip unchanged trials without parsing them. Files are
    hashed in bounded chunks, and one over its limit (it will be refused) by its size and mtime only.
    Raises TrialError when the folder has no recognizable agent log. `logs`: the log's files
    (`log_files`) of the resolved `trial_dir`, when the caller has found them already.
    """
    trial_dir = Path(trial_dir).resolve()
    if logs is None:
        try:
            log_path, fmt = find_log(trial_dir)
            logs = log_files(log_path, fmt)
        except LogError as exc:
            raise TrialError(str(exc)) from exc
    h = hashlib.sha256(f"{INGEST_VERSION}|{settings}".encode())
    for p in _trial_files(trial_dir, logs):
        h.update(b"\0" + p.relative_to(trial_dir).as_posix().encode("utf-8", "surrogateescape") + b"\0")
        limit = max_log_bytes if p in logs else _MAX_REWARD_BYTES if p.name == "reward.txt" else _MAX_JSON_BYTES
        hash_regular(p, limit, h)
    return h.hexdigest()


def _task_name(trial_dir: Path, result: dict, config: dict, known_tasks: set[str] | None) -> tuple[str | None, str]:
    """The task a trial ran and where that was read; the `<task>__<id>` folder-name convention only
    counts when it names a known task."""
    named = result.get("task_name") or _dict(config.get("task")).get("name")
    if named:
        return str(named), "task_name"
    task_path = _task_path(result, config)
    if task_path:
        return Path(task_path).name, "task path"
    prefix = trial_dir.name.split("__")[0]
    if "__" in trial_dir.name and known_tasks is not None and prefix in known_tasks:
        return prefix, "folder name"
    return None, ""


def load_trial(
    trial_dir: Path,
    *,
    known_tasks: set[str] | None = None,
    condition_map: Mapping[str, Condition] | None = None,
    pass_threshold: float = DEFAULT_PASS_THRESHOLD,
    max_log_bytes: int = DEFAULT_MAX_LOG_BYTES,
    is_demo: bool = False,
    derive_outcome: bool = False,
    settings: str = "",
    root: Path | None = None,
) -> tuple[Trajectory, ParsedLog]:
    """Read and validate one trial folder: its trajectory and its parsed log (whose `event_values`
    import stores; `events` are its models); raises TrialError naming the file and the problem.

    `settings` is folded into the stored fingerprint (see `trial_fingerprint`). With `root` (a
    resolved folder), nothing is read through a link leading outside it (see `confine`). A trial
    without a reward is `unscored` unless `derive_outcome` asks for PASS/FAIL from its CTRF report.
    """
    if root is not None:
        check_confined(trial_dir, root)
    trial_dir = resolved_folder(trial_dir, TrialError)
    result_path = trial_dir / "result.json"
    ctrf_path = trial_dir / "verifier" / "ctrf.json"
    finished = _present(result_path)
    if not finished and not any(_present(trial_dir / r) for r in _VERIFIER_REPORTS):
        raise TrialError(f"{trial_dir}: no result.json and no verifier report (verifier/ctrf.json or "
                         f"verifier/reward.txt): the trial did not reach its verifier")
    result = _read_json(result_path) if finished else {}
    if not isinstance(result, dict):
        raise TrialError(f"{result_path}: expected a JSON object")
    config_path = trial_dir / "config.json"
    config = _dict(_read_json(config_path)) if _present(config_path) else {}
    task, _ = _task_name(trial_dir, result, config, known_tasks)
    if not task:
        where = result_path if finished else trial_dir
        raise TrialError(f"{where}: no task_name (nor a config task path or a known <task>__<id> folder name)")
    if known_tasks is not None and task not in known_tasks:
        raise TrialError(f"{trial_dir}: task {task!r} is unknown (import its task folder first)")
    try:
        log_path, fmt = find_log(trial_dir)
        log = parse_log(log_path, fmt, max_bytes=max_log_bytes)
    except LogError as exc:
        raise TrialError(str(exc)) from exc
    ctrf = _ctrf(ctrf_path) if _present(ctrf_path) else []
    reward, reward_source = _reward(trial_dir, result)
    outcome, outcome_basis = _outcome(reward, reward_source, ctrf, _present(ctrf_path),
                                      pass_threshold=pass_threshold, derive_outcome=derive_outcome)
    if not finished:
        outcome_basis += "; no result.json (an unfinished trial)"
    trial_name = str(result.get("trial_name") or trial_dir.name)
    condition, basis = _condition(trial_dir, trial_name, result, config, log, condition_map or {})
    agent_info = _dict(result.get("agent_info"))
    logs = log_files(log_path, fmt)
    try:
        traj = Trajectory(
            id=trial_name,
            task=task,
            agent=_agent(result, config, log),
            agent_version=str(agent_info["version"]) if agent_info.get("version") else None,
            model=_model(result, config, log),
            condition=condition,
            condition_basis=basis,
            outcome=outcome,
            outcome_basis=outcome_basis,
            reward=reward,
            reward_source=reward_source,
            ctrf=ctrf,
            timings=_timings(result),
            exception=_exception(result),
            tokens=_usage(result),
            source_path=str(trial_dir),
            log_path=log_path.relative_to(trial_dir).as_posix(),
            log_format=fmt,
            log_bytes=sum(p.stat().st_size for p in logs if is_regular(p)),
            content_hash=trial_fingerprint(trial_dir, settings, max_log_bytes, logs=logs),
            is_demo=is_demo or bool(result.get("demo")),
        )
    except ValidationError as exc:  # a field of result.json / config.json of the wrong JSON type
        wrong = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()[:3])
        raise TrialError(f"{result_path}: unexpected value ({wrong})") from None
    return traj, log
