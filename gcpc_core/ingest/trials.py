"""Harbor trial folders: result.json, config.json, the verifier's CTRF report and reward.

A trial is read whole into memory and validated before anything is stored, so a
broken folder is reported and skipped and never half-imported.
"""

from __future__ import annotations

import csv
import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..models import Condition, CtrfTest, Event, Trajectory
from .confine import first_escape, refusal
from .files import read_utf8, resolved_folder
from .logs import LogError, ParsedLog, find_log, parse_log
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

DEFAULT_PASS_THRESHOLD = 1.0
DEFAULT_MAX_LOG_BYTES = 25 * 2**20
_MAX_JSON_BYTES = 8 * 2**20
INGEST_VERSION = "1"
"""Bumped when parsing changes, so a re-import refreshes every stored trial."""
_NOSKILL_MARKERS = ("noskills", "no-skills", "no_skills", "without-skills", "without_skills", "noskill")
_SKILL_MARKERS = ("with-skills", "with_skills", "skills")


class TrialError(ValueError):
    """A trial folder that cannot be imported; the message names the path and the problem."""


def find_trial_dirs(root: Path) -> list[Path]:
    """Every folder under `root` (itself included) holding a trial: a `result.json` or an `agent/` log."""
    root = Path(root)
    found = {p.parent for p in root.rglob("result.json") if p.is_file()}
    found |= {p.parent for p in root.rglob("agent") if p.is_dir() and p.parent not in found}
    # a job folder holding trials also has a result.json: keep only the innermost trial folders
    ancestors = {parent for d in found for parent in d.parents}
    return sorted(d for d in found if d not in ancestors)


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


def _reward(trial_dir: Path, result: dict) -> tuple[float | None, str]:
    rewards = _dict(_dict(result.get("verifier_result")).get("rewards"))
    value = rewards.get("reward")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value), "result.json"
    reward_txt = trial_dir / "verifier" / "reward.txt"
    if reward_txt.is_file():
        text = reward_txt.read_text(encoding="utf-8", errors="replace").strip()
        try:
            return float(text), "verifier/reward.txt"
        except ValueError as exc:
            raise TrialError(f"{reward_txt}: not a number: {text[:40]!r}") from exc
    return None, "missing"


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


def _condition(
    trial_dir: Path, trial_name: str, result: dict, log: ParsedLog, mapping: Mapping[str, Condition]
) -> tuple[Condition, str]:
    """Decide with/without skills from the strongest evidence available, and say which."""
    for key in (trial_name, trial_dir.name):
        if key in mapping:
            return mapping[key], "condition mapping file"
    task_path = str(_dict(_dict(result.get("config")).get("task")).get("path") or "")
    if task_path and _has_marker(task_path, _NOSKILL_MARKERS):
        return "without-skills", f"config task.path is a no-skills copy ({task_path})"
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


def _model(result: dict, config: dict, log: ParsedLog) -> str:
    agent_cfg = _dict(config.get("agent")) or _dict(_dict(result.get("config")).get("agent"))
    if agent_cfg.get("model_name"):
        return str(agent_cfg["model_name"])
    info = _dict(_dict(result.get("agent_info")).get("model_info"))
    if info.get("name"):
        provider = info.get("provider")
        return f"{provider}/{info['name']}" if provider else str(info["name"])
    return str(log.metadata.get("model") or "unknown")


def _timings(result: dict) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in ("started_at", "finished_at"):
        if result.get(key):
            out[key] = result[key]
    for phase in ("environment_setup", "agent_setup", "agent_execution", "verifier"):
        span = _dict(result.get(phase))
        if span:
            out[phase] = {k: span.get(k) for k in ("started_at", "finished_at")}
    return out


def _trial_files(trial_dir: Path, log_path: Path) -> list[Path]:
    candidates = ("result.json", "config.json", "verifier/ctrf.json", "verifier/reward.txt")
    return [p for p in (*(trial_dir / c for c in candidates), log_path) if p.is_file()]


def check_confined(trial_dir: Path, root: Path) -> None:
    """TrialError when the trial folder, or a file import reads in it, leads outside `root` (resolved)."""
    trial_dir = Path(trial_dir)
    agent = trial_dir / "agent"
    paths = [trial_dir, *(trial_dir / n for n in ("result.json", "config.json", "verifier", "verifier/ctrf.json",
                                                   "verifier/reward.txt", "agent"))]
    if agent.is_dir() and first_escape([agent], root) is None:
        paths += sorted(agent.iterdir())
    escaped = first_escape(paths, root)
    if escaped is not None:
        raise TrialError(refusal(escaped, root))


def trial_fingerprint(trial_dir: Path, settings: str) -> str:
    """sha256 of the trial's files and of the import settings that shape its stored row.

    Cheap next to parsing, so a re-import can skip unchanged trials without parsing them.
    Raises TrialError when the folder has no recognizable agent log.
    """
    trial_dir = Path(trial_dir).resolve()
    try:
        log_path, _ = find_log(trial_dir)
    except LogError as exc:
        raise TrialError(str(exc)) from exc
    h = hashlib.sha256(f"{INGEST_VERSION}|{settings}".encode())
    for p in _trial_files(trial_dir, log_path):
        h.update(p.relative_to(trial_dir).as_posix().encode() + b"\0")
        h.update(p.read_bytes())
    return h.hexdigest()


def load_trial(
    trial_dir: Path,
    *,
    known_tasks: set[str] | None = None,
    condition_map: Mapping[str, Condition] | None = None,
    pass_threshold: float = DEFAULT_PASS_THRESHOLD,
    max_log_bytes: int = DEFAULT_MAX_LOG_BYTES,
    is_demo: bool = False,
    settings: str = "",
    root: Path | None = None,
) -> tuple[Trajectory, list[Event]]:
    """Read and validate one trial folder; raises TrialError naming the file and the problem.

    `settings` is folded into the stored fingerprint (see `trial_fingerprint`). With `root` (a
    resolved folder), nothing is read through a link leading outside it (see `confine`).
    """
    if root is not None:
        check_confined(trial_dir, root)
    trial_dir = resolved_folder(trial_dir, TrialError)
    result_path = trial_dir / "result.json"
    if not result_path.is_file():
        raise TrialError(f"{trial_dir}: no result.json (not a finished Harbor trial)")
    result = _read_json(result_path)
    if not isinstance(result, dict):
        raise TrialError(f"{result_path}: expected a JSON object")
    config_path = trial_dir / "config.json"
    config = _dict(_read_json(config_path)) if config_path.is_file() else {}
    task = result.get("task_name") or _dict(config.get("task")).get("name")
    if not task:
        task_path = _dict(config.get("task")).get("path") or ""
        task = Path(task_path).name if task_path else None
    if not task:
        raise TrialError(f"{result_path}: no task_name")
    task = str(task)
    if known_tasks is not None and task not in known_tasks:
        raise TrialError(f"{trial_dir}: task {task!r} is unknown (import its task folder first)")
    try:
        log_path, fmt = find_log(trial_dir)
        log = parse_log(log_path, fmt, max_bytes=max_log_bytes)
    except LogError as exc:
        raise TrialError(str(exc)) from exc
    ctrf_path = trial_dir / "verifier" / "ctrf.json"
    ctrf = _ctrf(ctrf_path) if ctrf_path.is_file() else []
    reward, reward_source = _reward(trial_dir, result)
    trial_name = str(result.get("trial_name") or trial_dir.name)
    condition, basis = _condition(trial_dir, trial_name, result, log, condition_map or {})
    agent_info = _dict(result.get("agent_info"))
    agent = agent_info.get("name") or _dict(config.get("agent")).get("name") or log.metadata.get("agent") or "unknown"
    agent_result = _dict(result.get("agent_result"))
    try:
        traj = Trajectory(
            id=trial_name,
            task=task,
            agent=str(agent),
            agent_version=str(agent_info["version"]) if agent_info.get("version") else None,
            model=_model(result, config, log),
            condition=condition,
            condition_basis=basis,
            outcome="PASS" if reward is not None and reward >= pass_threshold else "FAIL",
            reward=reward,
            reward_source=reward_source,
            ctrf=ctrf,
            timings=_timings(result),
            exception=result.get("exception_info") or None,
            tokens={k: v for k, v in agent_result.items() if k.startswith("n_") or k == "cost_usd"},
            source_path=str(trial_dir),
            log_path=log_path.relative_to(trial_dir).as_posix(),
            log_format=fmt,
            log_bytes=log_path.stat().st_size,
            content_hash=trial_fingerprint(trial_dir, settings),
            is_demo=is_demo or bool(result.get("demo")),
        )
    except ValidationError as exc:  # a field of result.json / config.json of the wrong JSON type
        wrong = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()[:3])
        raise TrialError(f"{result_path}: unexpected value ({wrong})") from None
    return traj, log.events
