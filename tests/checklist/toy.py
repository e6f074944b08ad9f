"""The toy task and toy checklist shared by the checklist unit tests (no real data needed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gcpc_core.checklist import Checklist, parse_checklist
from gcpc_core.ingest.tasks import parse_verifier_source
from gcpc_core.models import Task

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "checklists"
"""tests/fixtures/checklists: hand-written positive fixtures, `negative/`, node counts."""

TOY_INSTRUCTION = """\
Count the words in `/data/input.txt` and write the result to `/out/report.json` as
{"words": <int>, "lines": <int>}.

Notes:
- Do **not** modify `/data/input.txt`.
- Sort the keys alphabetically.
"""

TOY_VERIFIER = '''
import pytest

class TestReport:
    def test_report_exists(self):
        """The report file exists."""

    def test_words_correct(self):
        """words equals the true word count."""

@pytest.mark.parametrize("key", ["words", "lines"])
def test_key_is_int(key):
    """Both keys hold integers."""
'''

TOY_REFS = {
    "exists": "test_outputs.py::TestReport::test_report_exists",
    "words": "test_outputs.py::TestReport::test_words_correct",
    "ints": "test_outputs.py::test_key_is_int",
}


def make_toy_task() -> Task:
    """A small task with three verifier nodes, one of them parametrized."""
    return Task(
        id="toy-count",
        instruction=TOY_INSTRUCTION,
        verifier_files={"test_outputs.py": TOY_VERIFIER},
        tests=parse_verifier_source("test_outputs.py", TOY_VERIFIER),
        source_path="/nonexistent/toy-count",
    )


def toy_data() -> dict[str, Any]:
    """Plain data of a toy checklist that passes every gate; tests mutate a fresh copy."""
    return {
        "task": "toy-count",
        "source": "human:test",
        "items": [
            {
                "id": "T1",
                "route": "assertion",
                "text": "The file /out/report.json exists",
                "task_quote": "write the result to `/out/report.json`",
                "verifier_refs": [TOY_REFS["exists"]],
            },
            {
                "id": "T2",
                "route": "assertion",
                "text": "words in report.json equals the number of words in /data/input.txt",
                "task_quote": "Count the words in `/data/input.txt`",
                "verifier_refs": [TOY_REFS["words"]],
                "probes": [{"pattern": r'"words"\s*:\s*\d+', "polarity": "yes"}],
            },
            {
                "id": "T3",
                "route": "assertion",
                "text": "report.json holds the keys words and lines with integer values",
                "task_quote": 'as {"words": <int>, "lines": <int>}',
                "verifier_refs": [f"{TOY_REFS['ints']}[words]", f"{TOY_REFS['ints']}[lines]"],
            },
            {
                "id": "T4",
                "route": "generated",
                "text": "The keys of report.json appear in alphabetical order",
                "task_quote": "Sort the keys alphabetically.",
            },
            {
                "id": "T5",
                "route": "judge",
                "text": "The agent left /data/input.txt unmodified",
                "task_quote": "Do **not** modify `/data/input.txt`.",
            },
        ],
        "waivers": [],
    }


def toy_checklist(**changes: Any) -> Checklist:
    """The toy checklist with top-level fields replaced."""
    return parse_checklist({**toy_data(), **changes})
