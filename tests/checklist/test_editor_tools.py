"""The checklist editor's tools (gcpc_core.review.checklists): quote a span, mirror a test, add a ref, gates
per item, and saving a draft under the reviewer's name. They change the editor text, which stays what the
author edits and saves."""

from __future__ import annotations

import pytest
import yaml

from gcpc_core.checklist import Rules
from gcpc_core.models import Task
from gcpc_core.review.checklists import (
    EditError,
    add_quoted_item,
    add_ref,
    add_test_item,
    check_text,
    draft_text,
    failures_by_item,
    instruction_spans,
    is_verbatim,
    item_ids,
    save_text,
    set_quote,
    skeleton,
    verifier_source,
)
from gcpc_core.checklist.draft import assertion_item
from gcpc_core.ingest.tasks import parse_verifier_source
from gcpc_core.store import Store

from .toy import TOY_REFS


def items(text: str) -> list[dict]:
    return yaml.safe_load(text)["items"]


def test_quote_a_sentence_into_an_item_and_into_a_new_item(toy_task: Task, rules: Rules) -> None:
    text = skeleton(toy_task, source="human:alice")
    spans = instruction_spans(toy_task, rules)
    assert spans[1].text == "Do **not** modify `/data/input.txt`."
    text = set_quote(text, "C1", spans[0].text)
    assert items(text)[0]["task_quote"] == spans[0].text
    text, new_id = add_quoted_item(text, "judge", spans[1].text)
    assert new_id == "C4" and items(text)[-1] == {"id": "C4", "route": "judge", "text": "Do **not** modify `/data/input.txt`",
                                                  "task_quote": spans[1].text, "verifier_refs": []}
    failures = failures_by_item(list(check_text(text, toy_task, rules).failures))
    assert "C1" not in {i for i, fs in failures.items() if any(f.gate == "G1" for f in fs)}
    assert "C4" not in failures
    assert item_ids(text) == ["C1", "C2", "C3", "C4"]


def test_a_test_becomes_an_assertion_item_or_a_ref(toy_task: Task, rules: Rules) -> None:
    text, new_id = add_test_item(skeleton(toy_task, source="human:alice"), toy_task, TOY_REFS["words"], rules)
    item = items(text)[-1]
    assert new_id == "C4" and item["route"] == "assertion" and item["verifier_refs"] == [TOY_REFS["words"]]
    assert item["text"] == "Words equals the true word count" and is_verbatim(item["task_quote"], toy_task, rules)
    text = add_ref(add_ref(text, "C4", TOY_REFS["ints"]), "C4", TOY_REFS["ints"])
    assert items(text)[-1]["verifier_refs"] == [TOY_REFS["words"], TOY_REFS["ints"]]
    with pytest.raises(EditError, match="not a verifier test"):
        add_test_item(text, toy_task, "test_outputs.py::nope", rules)
    with pytest.raises(EditError, match="no item 'C9'"):
        add_ref(text, "C9", TOY_REFS["ints"])


def test_a_test_that_checks_a_literal_keeps_its_probes(toy_task: Task, rules: Rules) -> None:
    """The item a click on a test adds is the draft's, probes included: without them the probe judge abstains."""
    verifier = toy_task.verifier_files["test_outputs.py"] + (
        "\ndef test_total():\n    assert open('/out/report.json').read().strip() == '{\"words\": 42}'\n")
    task = toy_task.model_copy(update={"verifier_files": {"test_outputs.py": verifier},
                                       "tests": parse_verifier_source("test_outputs.py", verifier)})
    text, new_id = add_test_item(skeleton(task, source="human:alice"), task, "test_outputs.py::test_total", rules)
    item = items(text)[-1]
    drafted = assertion_item(task, task.tests[-1], rules, item_id=new_id).model_dump(mode="json")
    assert item["id"] == new_id and item["probes"] and item["probes"] == drafted["probes"], item


def test_tools_refuse_text_they_cannot_read(toy_task: Task) -> None:
    for bad, needle in (("items: [unclosed", "not valid YAML"), ("- just a list", "mapping with an 'items' list")):
        with pytest.raises(EditError, match=needle):
            set_quote(bad, "C1", "Sort the keys alphabetically.")
    assert item_ids("items: [unclosed") == []


def test_is_verbatim_follows_g1(toy_task: Task, rules: Rules) -> None:
    assert is_verbatim("Count the words in `/data/input.txt` and write", toy_task, rules)
    assert is_verbatim("Count the words in\n   `/data/input.txt`", toy_task, rules)  # whitespace is normalized
    assert not is_verbatim("Count the words in /data/input.txt", toy_task, rules)  # backticks are characters
    assert not is_verbatim("Sort", toy_task, rules)  # under the quote minimum


def test_verifier_source_is_the_test_function(toy_task: Task) -> None:
    test = next(t for t in toy_task.tests if t.node_id == TOY_REFS["ints"])
    source = verifier_source(toy_task, test)
    assert source.startswith("def test_key_is_int(key):") and "Both keys hold integers" in source


def test_saving_a_draft_stores_it_under_the_reviewer(store: Store, toy_task: Task, rules: Rules) -> None:
    store.trials.upsert_task(toy_task)
    text = draft_text(toy_task, rules)
    assert f"source: draft:{rules.version}" in text and check_text(text, toy_task, rules).ok
    row, check = save_text(store, text, toy_task, rules, reviewer="alice")
    assert row is not None and row.source == "human:alice" and row.created_by == "app:alice"
    assert check.checklist is not None and check.checklist.source == "human:alice"
