"""The checklists page's data: stored versions per task, gate results, and hand edits.

A hand edit is YAML (or JSON) text in the DESIGN.md checklist-file schema. `check_text` parses it
as strictly as a checklist file and runs every gate, so the page can show failures as the editor
types; `save_text` stores it through `register_checklist` as the task's next frozen version, which
refuses anything a gate objects to. A frozen version is never changed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd
import yaml

from ..checklist import GATES, Checklist, GateFailure, Rules, check_checklist_data, run_gates
from ..checklist.registry import register_checklist
from ..checklist.schema import _StrictLoader  # the checklist-file loader: duplicate keys are errors
from ..models import Task
from ..store import Store

__all__ = [
    "EditCheck",
    "check_text",
    "checklist_text",
    "failures_frame",
    "gate_table",
    "human_source",
    "save_text",
    "skeleton",
    "stored_gate_results",
    "task_table",
    "versions_frame",
]


def task_table(store: Store) -> pd.DataFrame:
    """One row per task: verifier tests, trajectories, stored versions, latest frozen version."""
    n_traj = Counter(t.task for t in store.trajectories())
    by_task: dict[str, list[dict]] = {}
    for row in store.checklists(status=None):
        by_task.setdefault(row["task"], []).append(row)
    rows = []
    for task in store.tasks():
        versions = by_task.get(task.id, [])
        frozen = [v for v in versions if v["status"] == "frozen"]
        latest = frozen[-1] if frozen else None
        rows.append({
            "task": task.id, "verifier_tests": len(task.tests), "trajectories": n_traj[task.id],
            "versions": len(versions), "failed_versions": len(versions) - len(frozen),
            "frozen_version": latest["version"] if latest else None,
            "items": len(latest["checklist"]["items"]) if latest else None,
            "source": latest["source"] if latest else None,
            "status": "frozen" if latest else ("failed only" if versions else "none"),
        })
    return pd.DataFrame(rows, columns=["task", "status", "frozen_version", "items", "source", "versions",
                                       "failed_versions", "verifier_tests", "trajectories"])


def versions_frame(rows: Sequence[dict]) -> pd.DataFrame:
    """Stored versions of one task, newest first, with provenance and the stored gate-failure count."""
    out = [{"version": r["version"], "status": r["status"], "sha": r["sha"][:12], "source": r["source"],
            "items": len(r["checklist"]["items"]) if r["checklist"] else None,
            "gate_failures": len(r["gate_failures"] or []), "rules_version": r["rules_version"],
            "model": r["model"], "created_at": r["created_at"], "created_by": r["created_by"]} for r in rows]
    frame = pd.DataFrame(out, columns=["version", "status", "sha", "source", "items", "gate_failures",
                                       "rules_version", "model", "created_at", "created_by"])
    return frame.sort_values("version", ascending=False).reset_index(drop=True)


def gate_table(failures: Sequence[GateFailure]) -> pd.DataFrame:
    """One row per gate G1–G6: its name, pass/fail and how many objections it raised."""
    counts = Counter(f.gate for f in failures)
    return pd.DataFrame([{"gate": g, "name": name, "result": "fail" if counts[g] else "pass", "failures": counts[g]}
                         for g, name in GATES.items()])


def failures_frame(failures: Sequence[GateFailure | dict]) -> pd.DataFrame:
    """Gate failures as rows: item id, gate, message (stored failures are dicts)."""
    rows = [f.model_dump() if isinstance(f, GateFailure) else dict(f) for f in failures]
    return pd.DataFrame(rows, columns=["item_id", "gate", "message"])


def stored_gate_results(row: dict, task: Task, rules: Rules) -> list[GateFailure]:
    """A stored version's gate failures under the current rules (a frozen one passed when frozen;
    rules may have changed since); a failed version without content keeps its stored failures."""
    if not row["checklist"]:
        return [GateFailure(**f) for f in row["gate_failures"] or []]
    return run_gates(Checklist.model_validate(row["checklist"]), task, rules)


def human_source(reviewer: str) -> str:
    """`human:<reviewer>`: the source a hand edit is stored under."""
    return f"human:{'_'.join(reviewer.split()) or 'reviewer'}"


def checklist_text(checklist: dict, *, source: str | None = None) -> str:
    """A stored checklist as editable YAML, in the file schema's field order; `source` replaces its source."""
    data = dict(checklist)
    if source is not None:
        data["source"] = source
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)


def skeleton(task: Task, *, source: str) -> str:
    """A starting point for a task without a checklist: one assertion item per verifier test,
    text and quote left for the author (the gates say what is still missing)."""
    items = [{"id": f"C{k}", "route": "assertion", "text": "", "task_quote": "", "verifier_refs": [t.node_id]}
             for k, t in enumerate(task.tests, 1)]
    return yaml.safe_dump({"task": task.id, "source": source, "items": items, "waivers": []},
                          sort_keys=False, allow_unicode=True, width=100)


@dataclass(frozen=True)
class EditCheck:
    """An edit, parsed and gated: `checklist` None when the text is not a checklist at all."""

    checklist: Checklist | None
    failures: tuple[GateFailure, ...]

    @property
    def ok(self) -> bool:
        return self.checklist is not None and not self.failures


def check_text(text: str, task: Task, rules: Rules) -> EditCheck:
    """Parse edited YAML/JSON text strictly and run every gate against `task`."""
    try:
        data = yaml.load(text, Loader=_StrictLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        return EditCheck(None, (GateFailure(item_id="-", gate="G6", message="invalid YAML: " + " ".join(str(exc).split())),))
    checklist, failures = check_checklist_data(data, task, rules, origin="edit")
    return EditCheck(checklist, tuple(failures))


def save_text(store: Store, text: str, task: Task, rules: Rules, *, reviewer: str) -> tuple[dict | None, EditCheck]:
    """Gate the edit and, when every gate passes, freeze it as the task's next version.

    Returns (stored row, check); the row is None when a gate failed. Identical content returns the
    version already stored (same sha).
    """
    check = check_text(text, task, rules)
    if not check.ok or check.checklist is None:
        return None, check
    row, failures = register_checklist(store, check.checklist, created_by=f"app:{reviewer}", rules=rules)
    return row, EditCheck(check.checklist, tuple(failures))
