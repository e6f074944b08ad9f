"""The checklists page's data: stored versions per task, gate results, and hand edits.

A hand edit is YAML (or JSON) text in the checklist-file schema (docs/design.md#the-checklist-file).
`check_text` parses it as strictly as a checklist file and runs every gate, so the page can show
failures as the editor types; `save_text` stores it through `register_checklist` as the task's next
frozen version, which refuses anything a gate objects to. A frozen version is never changed.

The editor's tools work on that text too, so the text stays the one thing the author edits and saves:
`set_quote` / `add_quoted_item` take a span of the instruction as an item's task quote, `add_test_item` /
`add_ref` turn a verifier test into an assertion item or a ref. Each returns the new text, or raises
`EditError` when the text is not a checklist mapping the tool can change (the author fixes it by hand).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd
import yaml

from ..checklist import GATES, Checklist, ChecklistItem, GateFailure, Rules, check_checklist_data, run_gates
from ..checklist.draft import Sentence, assertion_item, draft_checklist, draft_yaml, instruction_sentences, requirement_text
from ..checklist.gates import normalize_whitespace
from ..checklist.registry import human_source, register_checklist, reviewed
from ..checklist.schema import _StrictLoader  # the checklist-file loader: duplicate keys are errors
from ..models import Task, VerifierTest
from ..store import ChecklistRow, Store

__all__ = [
    "EditCheck",
    "EditError",
    "add_quoted_item",
    "add_ref",
    "add_test_item",
    "check_text",
    "checklist_text",
    "draft_text",
    "failures_by_item",
    "failures_frame",
    "gate_table",
    "human_source",
    "instruction_spans",
    "is_verbatim",
    "item_ids",
    "save_text",
    "set_quote",
    "skeleton",
    "stored_gate_results",
    "task_table",
    "verifier_source",
    "versions_frame",
]


def task_table(store: Store) -> pd.DataFrame:
    """One row per task: verifier tests, trajectories, stored versions, latest frozen version."""
    n_traj = Counter(t.task for t in store.trials.trajectories())
    by_task: dict[str, list[ChecklistRow]] = {}
    for row in store.checklists.list(status=None):
        by_task.setdefault(row.task, []).append(row)
    rows = []
    for task in store.trials.tasks():
        versions = by_task.get(task.id, [])
        frozen = [v for v in versions if v.status == "frozen"]
        latest = frozen[-1] if frozen else None
        rows.append({
            "task": task.id, "verifier_tests": len(task.tests), "trajectories": n_traj[task.id],
            "versions": len(versions), "failed_versions": len(versions) - len(frozen),
            "frozen_version": latest.version if latest else None,
            "items": len(latest.checklist["items"]) if latest else None,
            "source": latest.source if latest else None,
            "status": "frozen" if latest else ("failed only" if versions else "none"),
        })
    return pd.DataFrame(rows, columns=["task", "status", "frozen_version", "items", "source", "versions",
                                       "failed_versions", "verifier_tests", "trajectories"])


def versions_frame(rows: Sequence[ChecklistRow]) -> pd.DataFrame:
    """Stored versions of one task, newest first, with provenance and the stored gate-failure count."""
    out = [{"version": r.version, "status": r.status, "sha": r.sha[:12], "source": r.source,
            "items": len(r.checklist["items"]) if r.checklist else None,
            "gate_failures": len(r.gate_failures or []), "rules_version": r.rules_version,
            "model": r.model, "created_at": r.created_at, "created_by": r.created_by} for r in rows]
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


def stored_gate_results(row: ChecklistRow, task: Task, rules: Rules) -> list[GateFailure]:
    """A stored version's gate failures under the current rules (a frozen one passed when frozen;
    rules may have changed since); a failed version without content keeps its stored failures."""
    if not row.checklist:
        return [GateFailure(**f) for f in row.gate_failures or []]
    return run_gates(Checklist.model_validate(row.checklist), task, rules)


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


def save_text(
    store: Store, text: str, task: Task, rules: Rules, *, reviewer: str
) -> tuple[ChecklistRow | None, EditCheck]:
    """Gate the edit and, when every gate passes, freeze it as the task's next version.

    Saving is the reviewer's decision: a draft (`draft:` source, never frozen as such) is stored under
    `human:<reviewer>`. Returns (stored row, check); the row is None when a gate failed. Identical
    content returns the version already stored (same sha).
    """
    check = check_text(text, task, rules)
    if not check.ok or check.checklist is None:
        return None, check
    checklist = check.checklist
    checklist = reviewed(checklist, reviewer, rules)
    row, failures = register_checklist(store, checklist, created_by=f"app:{reviewer}", rules=rules)
    return row, EditCheck(checklist, tuple(failures))


# ---------------------------------------------------------------- the editor's tools


class EditError(ValueError):
    """The editor text is not a checklist mapping a tool can change; the message says what to fix."""


def draft_text(task: Task, rules: Rules) -> str:
    """The offline draft (`gcpc_core.checklist.draft`) as editor text."""
    return draft_yaml(draft_checklist(task, rules))


def instruction_spans(task: Task, rules: Rules) -> list[Sentence]:
    """The instruction's sentences and list entries: what the editor offers as task quotes."""
    return instruction_sentences(task.instruction, rules.contract.quote.min_chars)


def is_verbatim(quote: str, task: Task, rules: Rules) -> bool:
    """Whether `quote` would pass G1: long enough and a whitespace-normalized span of instruction.md."""
    quote = normalize_whitespace(quote)
    return len(quote) >= rules.contract.quote.min_chars and quote in normalize_whitespace(task.instruction)


def verifier_source(task: Task, test: VerifierTest) -> str:
    """The test function's source lines, from the verifier file it was parsed from (a script: all of it)."""
    lines = task.verifier_text(test.file).splitlines()
    return "\n".join(lines[test.lineno - 1:test.end_lineno])


def _edit_data(text: str) -> dict:
    try:
        data = yaml.load(text, Loader=_StrictLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        raise EditError("the checklist text is not valid YAML; fix it first: " + " ".join(str(exc).split())) from exc
    if not isinstance(data, dict) or not isinstance(data.get("items", []), list):
        raise EditError("the checklist text must be a mapping with an 'items' list; fix it first")
    data.setdefault("items", [])
    return data


def _dump(data: dict) -> str:
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)


def item_ids(text: str) -> list[str]:
    """Ids of the items in the editor text, in order (empty when the text cannot be read)."""
    try:
        items = _edit_data(text)["items"]
    except EditError:
        return []
    return [str(i["id"]) for i in items if isinstance(i, dict) and i.get("id") is not None]


def _item(data: dict, item_id: str) -> dict:
    for item in data["items"]:
        if isinstance(item, dict) and str(item.get("id")) == item_id:
            return item
    raise EditError(f"no item {item_id!r} in the checklist text")


def _next_id(data: dict) -> str:
    numbers = [int(m[1]) for i in data["items"] if isinstance(i, dict)
               for m in [re.fullmatch(r"C(\d+)", str(i.get("id", "")))] if m]
    return f"C{max(numbers, default=0) + 1}"


def set_quote(text: str, item_id: str, quote: str) -> str:
    """The text with item `item_id`'s task quote replaced by `quote`."""
    data = _edit_data(text)
    _item(data, item_id)["task_quote"] = quote
    return _dump(data)


def add_quoted_item(text: str, route: str, quote: str) -> tuple[str, str]:
    """The text with a new `route` item quoting `quote` (its text a first rewrite of the quote); and its id."""
    data = _edit_data(text)
    item_id = _next_id(data)
    data["items"].append({"id": item_id, "route": route, "text": requirement_text(quote), "task_quote": quote,
                          "verifier_refs": []})
    return _dump(data), item_id


def _parsed_items(data: dict) -> list[ChecklistItem]:
    """The items of the text that are valid items (for the duplicate check of a new item's text)."""
    out = []
    for raw in data["items"]:
        try:
            out.append(ChecklistItem.model_validate(raw))
        except ValueError:
            continue
    return out


def add_test_item(text: str, task: Task, node_id: str, rules: Rules) -> tuple[str, str]:
    """The text with a new assertion item for verifier test `node_id` (ref set; text and quote as the
    draft builds them); and its id."""
    test = next((t for t in task.tests if t.node_id == node_id), None)
    if test is None:
        raise EditError(f"{node_id!r} is not a verifier test of {task.id}")
    data = _edit_data(text)
    item = assertion_item(task, test, rules, item_id=_next_id(data), taken=_parsed_items(data))
    data["items"].append(item.model_dump(mode="json"))
    return _dump(data), item.id


def add_ref(text: str, item_id: str, node_id: str) -> str:
    """The text with `node_id` added to item `item_id`'s verifier refs (once)."""
    data = _edit_data(text)
    item = _item(data, item_id)
    refs = item.get("verifier_refs") or []
    if not isinstance(refs, list):
        raise EditError(f"item {item_id}: verifier_refs is not a list; fix it first")
    if node_id not in refs:
        refs.append(node_id)
    item["verifier_refs"] = refs
    return _dump(data)


def failures_by_item(failures: Sequence[GateFailure]) -> dict[str, list[GateFailure]]:
    """Gate failures keyed by the item (or waiver ref) they concern; `-` for the checklist as a whole."""
    out: dict[str, list[GateFailure]] = {}
    for f in failures:
        out.setdefault(f.item_id, []).append(f)
    return out
