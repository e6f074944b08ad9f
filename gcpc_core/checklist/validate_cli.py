"""`validate --task-dir DIR --checklist FILE`: the gates over a task folder and a checklist file.

`validate_files` does the work of `python -m gcpc_core validate`. Exit codes: 0 every gate
passes; 1 at least one gate failed (one `<item id> <gate id> <message>` line each, including G6
lines for files that are not valid JSON/YAML or do not match the schema); 2 the gates could not
run (task folder, checklist file or rules folder unreadable).
"""

from __future__ import annotations

from pathlib import Path

from ..ingest.tasks import TaskError, load_task
from .gates import check_checklist_data, failure_lines, schema_failures
from .rules import RulesError, load_rules
from .schema import ChecklistFileError, read_checklist_data

__all__ = ["EXIT_FAILED", "EXIT_OK", "EXIT_UNUSABLE", "validate_files"]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_UNUSABLE = 2


def validate_files(
    task_dir: Path, checklist_path: Path, rules_dir: Path | None = None
) -> tuple[int, list[str]]:
    """Run every gate; returns (exit code, output lines). Never raises for bad input files."""
    checklist_path = Path(checklist_path)
    try:
        rules = load_rules(rules_dir)
        task = load_task(Path(task_dir))
    except (RulesError, TaskError) as exc:
        return EXIT_UNUSABLE, [f"- error {exc}"]
    if not checklist_path.is_file():
        return EXIT_UNUSABLE, [f"- error {checklist_path}: checklist file not found"]
    try:
        data = read_checklist_data(checklist_path)
    except ChecklistFileError as exc:
        return EXIT_FAILED, failure_lines(schema_failures(exc))
    _, failures = check_checklist_data(data, task, rules, str(checklist_path))
    return (EXIT_FAILED if failures else EXIT_OK), failure_lines(failures)
