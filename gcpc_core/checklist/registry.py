"""Checklists in the project DB: gate, freeze and store a checklist, or list the stored ones.

The same gates guard a hand-written file, an edit made in the app and an LLM synthesis,
so a checklist is only ever frozen after passing every gate.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..store import ChecklistRow, Store
from .freeze import freeze
from .gates import GateFailure, run_gates
from .rules import Rules, load_rules
from .schema import Checklist

__all__ = ["export_checklists", "human_source", "register_checklist", "reviewed"]


def human_source(reviewer: str) -> str:
    """`human:<reviewer>`: the source a checklist a person wrote or reviewed is stored under (blanks become `_`)."""
    return f"human:{'_'.join(reviewer.split()) or 'reviewer'}"


def reviewed(checklist: Checklist, reviewer: str, rules: Rules) -> Checklist:
    """`checklist` as `reviewer` signs it off: a draft (a source in `unfrozen_sources`, which is never frozen
    as such) becomes `human:<reviewer>`, so the person who read it answers for it; any other source is kept
    (a human's or a model's checklist keeps its author)."""
    if checklist.source.partition(":")[0] in rules.contract.unfrozen_sources:
        return checklist.model_copy(update={"source": human_source(reviewer)})
    return checklist


def register_checklist(
    store: Store, checklist: Checklist, *, created_by: str, rules: Rules | None = None
) -> tuple[ChecklistRow | None, list[GateFailure]]:
    """Gate and freeze `checklist` as its task's next version; nothing is stored when a gate fails
    or when its source is an unreviewed draft (`unfrozen_sources` in the rules).

    Storing identical content again returns the stored row (same sha), so this is idempotent.
    """
    task = store.trials.get_task(checklist.task)
    if task is None:
        raise KeyError(f"unknown task {checklist.task!r}: import its task folder first")
    rules = rules or load_rules()
    failures = run_gates(checklist, task, rules)
    prefix = checklist.source.partition(":")[0]
    if prefix in rules.contract.unfrozen_sources:
        failures.append(GateFailure(
            item_id="-", gate="G6",
            message=f"source {checklist.source!r} marks an unreviewed {prefix}: review it and store it with "
                    "`checklist add --review <your name>` (or save it under 'human:<your name>') to freeze it"))
    if failures:
        return None, failures
    frozen = freeze(checklist, rules_version=rules.version)
    row = store.checklists.add(ChecklistRow(
        sha=frozen.sha,
        task=checklist.task,
        status="frozen",
        source=checklist.source,
        checklist=checklist.model_dump(mode="json"),
        rules_version=frozen.rules_version,
        created_by=created_by,
    ))
    return row, []


def export_checklists(store: Store) -> Iterator[dict]:
    """Every frozen checklist in the checklist-file schema (docs/design.md#the-checklist-file), plus its identity and provenance."""
    for row in store.checklists.list(status="frozen"):
        checklist = Checklist.model_validate(row.checklist)
        yield {
            "sha": row.sha,
            "version": row.version,
            "rules_version": row.rules_version,
            "created_at": row.created_at,
            "created_by": row.created_by,
            **checklist.model_dump(mode="json"),
        }
