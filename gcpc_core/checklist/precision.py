"""Gate precision on labelled checklists: good items the gates reject, and bad ones they let through.

Good checklists are hand-written files whose every item a careful author would keep (the documented
examples in docs/examples/checklists/, the test fixtures); any gate failure on one of their items is a
false rejection. Negative fixtures are files named `gN_<what>.{yaml,json}`, each built to break gate GN
and nothing else; each must be rejected by GN, and by GN only. Both counts are printed:

    python -m gcpc_core.checklist.precision --tasks ../shared/skillsbench/tasks \\
        --good docs/examples/checklists tests/fixtures/checklists \
        --negative tests/fixtures/checklists/negative --negative-task citation-check
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .schema import ChecklistFileError, load_checklist_file, read_checklist_data
from .validate_cli import validate_files

__all__ = ["PrecisionReport", "checklist_files", "main", "measure"]

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

    @property
    def rejected_items(self) -> int:
        """Distinct good items with at least one gate failure (checklist-level failures count as one)."""
        return len({tuple(line.split(" ", 2)[:2]) for line in self.rejected_good})

    @property
    def ok(self) -> bool:
        return not self.rejected_good and not self.missed

    def lines(self) -> list[str]:
        out = [f"good items: {self.good_items} in {self.good_checklists} checklists; rejected by a gate: "
               f"{self.rejected_items}"]
        out += [f"  rejected: {line}" for line in self.rejected_good]
        out.append(f"negative fixtures: {self.negatives}; rejected by their intended gate only: {self.caught}")
        out += [f"  missed: {line}" for line in self.missed]
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


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m gcpc_core.checklist.precision", description=__doc__.split("\n\n")[0])
    p.add_argument("--tasks", type=Path, required=True, help="folder of Harbor task folders")
    p.add_argument("--good", type=Path, nargs="+", default=[], help="folders of good checklists")
    p.add_argument("--negative", type=Path, nargs="*", default=[], help="folders of gN_ negative fixtures")
    p.add_argument("--negative-task", default="", help="the task the negative fixtures were built on")
    p.add_argument("--rules", type=Path, help="rules folder (default: the repository's rules/)")
    args = p.parse_args(argv)
    report = measure(args.tasks, checklist_files(args.good), checklist_files(args.negative),
                     negative_task=args.negative_task, rules_dir=args.rules)
    for line in report.lines():
        print(line)
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
