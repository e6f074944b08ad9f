"""Gate precision and recall on labelled checklists and items: good items the gates reject, and bad ones they
let through.

Good checklists are hand-written files whose every item a careful author would keep (the documented
examples in docs/examples/checklists/, the test fixtures); any gate failure on one of their items is a
false rejection. Negative fixtures are files named `gN_<what>.{yaml,json}`, each built to break gate GN
and nothing else; each must be rejected by GN, and by GN only. A labelled item set (`--items`, e.g.
tests/fixtures/checklists/labelled/bad_items.yaml) lists single item texts, each labelled with the contract rule it
breaks and the gate that must reject it (`bad`), or a near miss no gate may reject (`good`); each is put
into a good base checklist of the same task in place of one of its items, and the gates run on the whole.
Recall is the share of bad items rejected by their gate on their item only, per rule and overall:

    python -m gcpc_core.checklist.precision --tasks ../shared/skillsbench/tasks \\
        --good docs/examples/checklists tests/fixtures/checklists \
        --negative tests/fixtures/checklists/negative --negative-task citation-check \
        --items tests/fixtures/checklists/labelled/bad_items.yaml
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from ..ingest.tasks import load_task
from .gates import run_gates
from .rules import load_rules
from .schema import ChecklistFileError, Route, load_checklist_file, read_checklist_data
from .validate_cli import validate_files

__all__ = ["RECALL_TARGET", "PrecisionReport", "checklist_files", "main", "measure", "measure_items"]

RECALL_TARGET = 0.95
"""Share of the labelled bad items the gates must reject by their intended gate."""
_NEGATIVE_NAME = re.compile(r"^(g[1-6])_", re.IGNORECASE)
_LINE = re.compile(r"^(?P<item>\S+) (?P<gate>G[1-6]) (?P<message>.*)$")


@dataclass
class PrecisionReport:
    """Counts and the lines behind them."""

    good_checklists: int = 0
    good_items: int = 0
    rejected_good: list[str] = field(default_factory=list)
    """`<file> <item> <gate> <message>` for every gate failure on a good checklist."""
    negatives: int = 0
    caught: int = 0
    """Negative fixtures rejected by their intended gate."""
    missed: list[str] = field(default_factory=list)
    """Negative fixtures not rejected by their gate, or also rejected by another one, with the lines."""
    by_rule: dict[str, list[int]] = field(default_factory=dict)
    """Labelled bad items per contract rule: ``[caught, total]``."""
    missed_items: list[str] = field(default_factory=list)
    """`<rule> <text>: <what the gates said>` for every bad item not rejected by its gate on its item only."""
    near_misses: int = 0
    """Labelled good items (near misses of a rule) checked."""
    rejected_near_misses: list[str] = field(default_factory=list)
    """`<rule> <text>: <line>` for every gate failure on a labelled good item."""

    @property
    def rejected_items(self) -> int:
        """Distinct good items with at least one gate failure (checklist-level failures count as one)."""
        return len({tuple(line.split(" ", 2)[:2]) for line in self.rejected_good})

    @property
    def bad_items(self) -> int:
        return sum(total for _, total in self.by_rule.values())

    @property
    def recall(self) -> float:
        """Share of the labelled bad items rejected by their intended gate (1.0 when there are none)."""
        total = self.bad_items
        return sum(caught for caught, _ in self.by_rule.values()) / total if total else 1.0

    @property
    def ok(self) -> bool:
        return (not self.rejected_good and not self.missed and not self.rejected_near_misses
                and self.recall >= RECALL_TARGET)

    def lines(self) -> list[str]:
        out = [f"good items: {self.good_items} in {self.good_checklists} checklists; rejected by a gate: "
               f"{self.rejected_items}"]
        out += [f"  rejected: {line}" for line in self.rejected_good]
        out.append(f"negative fixtures: {self.negatives}; rejected by their intended gate only: {self.caught}")
        out += [f"  missed: {line}" for line in self.missed]
        if self.by_rule:
            caught = sum(c for c, _ in self.by_rule.values())
            out.append(f"labelled bad items: {self.bad_items} over {len(self.by_rule)} rules; rejected by their "
                       f"intended gate on their item only: {caught} (recall {self.recall:.3f}, target "
                       f"{RECALL_TARGET:g})")
            out += [f"  {rule}: {c}/{t}" for rule, (c, t) in sorted(self.by_rule.items())]
            out += [f"  missed: {line}" for line in self.missed_items]
        if self.near_misses:
            out.append(f"labelled near misses (good): {self.near_misses}; rejected by a gate: "
                       f"{len({line.split(':', 1)[0] for line in self.rejected_near_misses})}")
            out += [f"  rejected: {line}" for line in self.rejected_near_misses]
        return out


def checklist_files(folders: Sequence[Path]) -> list[Path]:
    """The `.yaml`, `.yml` and `.json` checklist files directly in `folders` (data files such as
    `verifier_node_counts.json`, which hold no `items`, are left out)."""
    out = []
    for folder in folders:
        for path in sorted(Path(folder).iterdir()):
            if path.suffix.lower() in (".yaml", ".yml", ".json") and path.is_file():
                try:
                    data = read_checklist_data(path)
                except ChecklistFileError:
                    data = {"items": []}  # a malformed file: a negative fixture of G6
                if isinstance(data, dict) and "items" in data:
                    out.append(path)
    return out


def measure(tasks_dir: Path, good: Sequence[Path], negative: Sequence[Path], *, negative_task: str = "",
            rules_dir: Path | None = None) -> PrecisionReport:
    """Run every gate on each good checklist file against the task it names, and on each negative fixture
    against `negative_task` (the task they were built on: a fixture naming another task is one of G6's)."""
    report = PrecisionReport()
    for path in good:
        checklist = load_checklist_file(path)
        report.good_checklists += 1
        report.good_items += len(checklist.items)
        _, lines = validate_files(Path(tasks_dir) / checklist.task, path, rules_dir)
        report.rejected_good += [f"{path.name} {line}" for line in lines]
    for path in negative:
        match = _NEGATIVE_NAME.match(path.name)
        if match is None:
            raise ValueError(f"{path}: a negative fixture's name must start with the gate it breaks, e.g. g3_…")
        if not negative_task:
            raise ValueError("negative fixtures need the task they were built on (--negative-task)")
        report.negatives += 1
        _, lines = validate_files(Path(tasks_dir) / negative_task, path, rules_dir)
        gates = {m["gate"] for line in lines if (m := _LINE.match(line))}
        if gates == {match[1].upper()}:
            report.caught += 1
        else:
            report.missed.append(f"{path.name}: expected {match[1].upper()} only, got {sorted(gates) or 'no failure'}: "
                                 + " | ".join(lines))
    return report


class NearMiss(BaseModel):
    """A labelled item text no gate may reject."""

    model_config = ConfigDict(extra="forbid")
    route: Route
    """The route it is tried on (the base item of that route is replaced)."""
    text: str
    """The item text."""
    rule: str = "near miss"
    """The rule it comes near to (a label for the report)."""


class BadItem(NearMiss):
    """A labelled item text that `gate` must reject, on its item only."""

    rule: str
    """The contract rule it breaks: its recall is counted per rule."""
    gate: str
    """The gate that must reject it (G3 for every phrasing rule)."""


class LabelledSet(BaseModel):
    """An `--items` file: labelled texts tried one at a time in a base checklist."""

    model_config = ConfigDict(extra="forbid")
    base: str
    """The good checklist they are put into, relative to the file."""
    replace: dict[Route, str]
    """Route → the id of the base item an entry of that route replaces."""
    bad: list[BadItem] = []
    """Texts the gates must reject."""
    good: list[NearMiss] = []
    """Near misses the gates must pass."""


def measure_items(tasks_dir: Path, items_file: Path, report: PrecisionReport | None = None, *,
                  rules_dir: Path | None = None) -> PrecisionReport:
    """Run the gates on each labelled item of `items_file` put into its base checklist (see the module docstring);
    the counts are added to `report` (a new one by default). The base must pass every gate by itself."""
    report = report or PrecisionReport()
    items_file = Path(items_file)
    try:
        spec = LabelledSet.model_validate(read_checklist_data(items_file))
    except ValidationError as exc:
        raise ValueError(f"{items_file}: not a labelled item set: "
                         + "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())) from None
    base = load_checklist_file(items_file.parent / spec.base)
    rules = load_rules(rules_dir)
    task = load_task(Path(tasks_dir) / base.task)
    if failures := run_gates(base, task, rules):
        raise ValueError(f"{items_file}: the base checklist {spec.base} fails its gates: "
                         + " | ".join(f.line() for f in failures))
    at = {item.id: k for k, item in enumerate(base.items)}

    def gates_on(entry: NearMiss) -> tuple[str, list]:
        target = spec.replace[entry.route]
        items = list(base.items)
        items[at[target]] = items[at[target]].model_copy(update={"text": entry.text, "route": entry.route})
        return target, run_gates(base.model_copy(update={"items": items}), task, rules)

    for entry in spec.bad:
        target, failures = gates_on(entry)
        counts = report.by_rule.setdefault(entry.rule, [0, 0])
        counts[1] += 1
        if failures and all(f.gate == entry.gate and f.item_id == target for f in failures):
            counts[0] += 1
        else:
            report.missed_items.append(f"{entry.rule} {entry.text!r}: expected {entry.gate} on {target}, got "
                                       + (" | ".join(f.line() for f in failures) or "no failure"))
    for entry in spec.good:
        report.near_misses += 1
        _, failures = gates_on(entry)
        report.rejected_near_misses += [f"{entry.rule} {entry.text!r}: {f.line()}" for f in failures]
    return report


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m gcpc_core.checklist.precision", description=__doc__.split("\n\n")[0])
    p.add_argument("--tasks", type=Path, required=True, help="folder of Harbor task folders")
    p.add_argument("--good", type=Path, nargs="+", default=[], help="folders of good checklists")
    p.add_argument("--negative", type=Path, nargs="*", default=[], help="folders of gN_ negative fixtures")
    p.add_argument("--negative-task", default="", help="the task the negative fixtures were built on")
    p.add_argument("--items", type=Path, nargs="*", default=[], help="labelled item sets (bad and near-miss texts)")
    p.add_argument("--rules", type=Path, help="rules folder (default: the repository's rules/)")
    args = p.parse_args(argv)
    try:
        report = measure(args.tasks, checklist_files(args.good), checklist_files(args.negative),
                         negative_task=args.negative_task, rules_dir=args.rules)
        for items_file in args.items:
            measure_items(args.tasks, items_file, report, rules_dir=args.rules)
    except ValueError as exc:  # a broken input file (ChecklistFileError too): named, not a traceback
        print(f"precision: {exc}", file=sys.stderr)
        return 2
    for line in report.lines():
        print(line)
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
