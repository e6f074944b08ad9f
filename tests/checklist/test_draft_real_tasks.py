"""Issue 26 on the 87 tasks of ../shared/skillsbench (skipped when absent): the offline draft of every task
passes every gate, no assertion item's text comes from a failure message, a code expression or a bare test
name, tests with several assertions average at least 1.4 items, and at least 60 % of assertion items carry a
probe. The figures are printed (`-rP`) and recorded as the test's property `draft_figures`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from gcpc_core.checklist import Rules, run_gates
from gcpc_core.checklist.draft import Draft, draft_checklist
from gcpc_core.ingest.tasks import find_task_dirs, load_task
from gcpc_core.models import Task

from .draft_quality import Figures

pytestmark = pytest.mark.skillsbench

MIN_ITEMS_PER_MULTI_ASSERT_TEST = 1.4
MIN_PROBE_SHARE = 0.6


@pytest.fixture(scope="module")
def drafts(skillsbench: Path, rules: Rules) -> list[tuple[Task, Draft]]:
    tasks = [load_task(d) for d in find_task_dirs(skillsbench / "tasks")]
    assert len(tasks) == 87
    return [(t, draft_checklist(t, rules)) for t in tasks]


@pytest.fixture(scope="module")
def figures(drafts: list[tuple[Task, Draft]]) -> Figures:
    out = Figures()
    for task, draft in drafts:
        out.add(task, draft.checklist)
    print(out.line())
    return out


def test_every_draft_passes_every_gate(drafts: list[tuple[Task, Draft]], rules: Rules) -> None:
    failing = {t.id: [f.line() for f in run_gates(d.checklist, t, rules)] for t, d in drafts}
    failing = {k: v for k, v in failing.items() if v}
    assert failing == {}


def test_no_assertion_text_from_a_message_code_or_test_name(figures: Figures,
                                                             record_property: Callable[[str, object], None]) -> None:
    record_property("draft_figures", figures.line())
    assert figures.bad == []


def test_multi_assert_tests_average_enough_items(figures: Figures) -> None:
    assert figures.multi_assert_tests > 250
    assert figures.items_per_multi_assert_test >= MIN_ITEMS_PER_MULTI_ASSERT_TEST, figures.line()


def test_most_assertion_items_carry_a_probe(figures: Figures) -> None:
    assert figures.probe_share >= MIN_PROBE_SHARE, figures.line()


def test_no_probe_matches_its_tasks_instruction(drafts: list[tuple[Task, Draft]]) -> None:
    """A probe never decides from the instruction text alone (its example values, its format block)."""
    matching = [(t.id, i.id, p.pattern[:80]) for t, d in drafts for i in d.checklist.items for p in i.probes
                if p.compile().search(t.instruction)]
    assert matching == []


def test_quotes_are_chosen_per_item(drafts: list[tuple[Task, Draft]]) -> None:
    """An item naming a key or value that an instruction sentence names quotes such a sentence (most do), and no
    quote is a hint sentence that states no requirement ("The repo is in /app/repo")."""
    from gcpc_core.checklist.draft import _HINT, _REQUIREMENT, instruction_sentences

    named = quoted = hints = 0
    for task, draft in drafts:
        sentences = [s.text.lower() for s in instruction_sentences(task.instruction)]
        for item in draft.checklist.items:
            spans = [s.lower() for s in __import__("re").findall(r"`([^`/]{3,})`", item.text)]
            spans = [s for s in spans if any(s in x for x in sentences)]
            if spans:
                named += 1
                quoted += any(s in item.task_quote.lower() for s in spans)
            hints += bool(_HINT.search(item.task_quote)) and not _REQUIREMENT.search(item.task_quote)
    assert quoted / named >= 0.8, (quoted, named)
    assert hints <= 10
