"""The checklist editor's form (gcpc_core.review.checklist_form): rows read from the editor text with their
gate failures, the row operations (delete, duplicate, move, split, set a field or the refs, add), the quote
picker's already-quoted marks, the refs picker's uncovered tests, and the text staying the one source both
the form and the YAML view show."""

from __future__ import annotations

import pytest
import yaml

from gcpc_core.checklist import Rules
from gcpc_core.models import Task
from gcpc_core.review import checklist_form as cf
from gcpc_core.review.checklists import EditError, check_text, instruction_spans, save_text
from gcpc_core.store import Store
from gcpc_core.text import show_invisible

from .toy import TOY_REFS, toy_data


def dump(data: dict) -> str:
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True)


def items(text: str) -> list[dict]:
    return yaml.safe_load(text)["items"]


def form_of(text: str, task: Task, rules: Rules):  # noqa: ANN201 - the Form
    return cf.read_form(text, check_text(text, task, rules), task, rules)


@pytest.fixture
def toy_text() -> str:
    return dump(toy_data())


# ---------------------------------------------------------------- rows and their gate messages


def test_rows_carry_their_own_gate_failures_and_the_rest_is_general(toy_task: Task, rules: Rules) -> None:
    data = toy_data()
    data["items"][1]["task_quote"] = "nowhere in the instruction at all"
    data["items"][3]["text"] = "The keys are properly sorted"
    data["items"] = data["items"][:4]
    del data["items"][0]["verifier_refs"]
    form = form_of(dump(data), toy_task, rules)
    assert [r.id for r in form.items] == ["T1", "T2", "T3", "T4"]
    by_id = {r.id: [(f.gate, f.message) for f in r.failures] for r in form.items}
    assert [g for g, _ in by_id["T2"]] == ["G1"] and by_id["T3"] == []
    assert ("G3", "vague phrase 'properly'") in by_id["T4"]
    assert [g for g, _ in by_id["T1"]] == ["G2"]  # an assertion item without refs
    # coverage of T1's test is checklist-level: the form lists it on top, and as uncovered
    assert [f.gate for f in form.general] == ["G5"]
    assert form.uncovered == (TOY_REFS["exists"],)
    assert cf.failure_message(form.items[1].failures[0]).startswith("G1 verbatim quote: task quote not found verbatim")


def test_an_entry_that_is_no_mapping_is_a_row_the_yaml_must_fix(toy_task: Task, rules: Rules) -> None:
    data = toy_data()
    data["items"].insert(1, "just a string")
    text = dump(data)
    form = form_of(text, toy_task, rules)
    row = form.items[1]
    assert not row.readable and row.id == "items[1]"
    with pytest.raises(EditError, match="not an item mapping"):
        cf.duplicate_item(text, 1, "items[1]")
    assert len(items(cf.delete_item(text, 1, "items[1]")[0])) == 5  # it can still be deleted


def test_text_the_form_cannot_read_raises(toy_task: Task, rules: Rules) -> None:
    for bad in ("items: [unclosed", "- a list"):
        with pytest.raises(EditError):
            form_of(bad, toy_task, rules)


# ---------------------------------------------------------------- operations


def test_delete_removes_that_item_only(toy_text: str) -> None:
    text, notice = cf.delete_item(toy_text, 1, "T2")
    assert [i["id"] for i in items(text)] == ["T1", "T3", "T4", "T5"]
    assert notice.startswith("Deleted T2 (words in report.json equals")
    assert items(text)[1] == toy_data()["items"][2]  # the others are untouched


def test_an_operation_on_a_row_that_moved_is_refused(toy_text: str) -> None:
    with pytest.raises(EditError, match="now 'T3', not 'T2'"):
        cf.delete_item(toy_text, 2, "T2")
    with pytest.raises(EditError, match="none at position 9"):
        cf.delete_item(toy_text, 8, "T9")


def test_duplicate_inserts_a_copy_with_a_fresh_id_of_the_same_style(toy_text: str, toy_task: Task, rules: Rules) -> None:
    text, notice = cf.duplicate_item(toy_text, 1, "T2")
    got = items(text)
    assert [i["id"] for i in got] == ["T1", "T2", "T6", "T3", "T4", "T5"]
    assert {**got[2], "id": "T2"} == got[1]  # probes included: a duplicate is a copy
    assert "G4" in notice
    assert [f.gate for f in form_of(text, toy_task, rules).items[2].failures] == ["G4"]


def test_move_up_and_down_and_not_past_the_ends(toy_text: str) -> None:
    text, notice = cf.move_item(toy_text, 2, "T3", -1)
    assert [i["id"] for i in items(text)] == ["T1", "T3", "T2", "T4", "T5"] and notice == "Moved T3 to position 2."
    text, _ = cf.move_item(text, 1, "T3", 1)
    assert text == toy_text
    with pytest.raises(EditError, match="already the first"):
        cf.move_item(toy_text, 0, "T1", -1)
    with pytest.raises(EditError, match="already the last"):
        cf.move_item(toy_text, 4, "T5", 1)


@pytest.mark.parametrize("text, halves", [
    ("answer.json exists and is valid JSON", ("answer.json exists", "answer.json is valid JSON")),
    ("The report lists words; lines is sorted", ("The report lists words", "lines is sorted")),
    ("The agent read the logs, and then wrote /out/x.csv", ("The agent read the logs", "wrote /out/x.csv")),
    ("The title 'Search and Rescue' is listed and it is first", ("The title 'Search and Rescue' is listed", "it is first")),
    ("Sort titles alphabetically for consistency", None),
    ("The file `a and b.txt` exists", None),  # the only 'and' sits in a literal
])
def test_split_texts_cuts_at_the_first_joint_outside_literals(text: str, halves: tuple[str, str] | None,
                                                             rules: Rules) -> None:
    assert cf.split_texts(text, rules) == halves


def test_split_makes_two_items_sharing_quote_and_refs(toy_task: Task, rules: Rules) -> None:
    data = toy_data()
    data["items"][1]["text"] = "report.json exists and holds the true word count"
    text, notice = cf.split_item(dump(data), 1, "T2", rules)
    got = items(text)
    assert [i["id"] for i in got] == ["T1", "T2", "T6", "T3", "T4", "T5"]
    first, second = got[1], got[2]
    assert first["text"] == "report.json exists" and second["text"] == "report.json holds the true word count"
    assert first["probes"] and "probes" not in second  # probes were written for the whole
    assert second["task_quote"] == first["task_quote"] and second["verifier_refs"] == first["verifier_refs"]
    assert second["route"] == first["route"] and notice == "Split T2 into T2 and T6: check both texts and their refs."
    # the compound G3 failure the split answers is gone from both rows
    form = form_of(text, toy_task, rules)
    assert not [f for r in form.items[1:3] for f in r.failures if f.gate == "G3"]
    with pytest.raises(EditError, match="no ';', 'and' or ', then'"):
        cf.split_item(text, 5, "T5", rules)


def test_fields_and_refs_are_set_on_that_row(toy_text: str) -> None:
    text, notice = cf.set_item_field(toy_text, 0, "T1", "text", "The report /out/report.json exists")
    assert items(text)[0]["text"] == "The report /out/report.json exists" and notice is None
    text, notice = cf.set_item_field(text, 0, "T1", "task_quote", "Sort the keys alphabetically.")
    assert items(text)[0]["task_quote"] == "Sort the keys alphabetically." and notice == "Task quote of T1 set."
    text, _ = cf.set_item_field(text, 3, "T4", "route", "judge")
    assert items(text)[3]["route"] == "judge"
    with pytest.raises(EditError, match="does not edit 'id'"):
        cf.set_item_field(text, 0, "T1", "id", "X")
    text, notice = cf.set_item_refs(text, 0, "T1", [TOY_REFS["exists"], TOY_REFS["words"], TOY_REFS["words"]])
    assert items(text)[0]["verifier_refs"] == [TOY_REFS["exists"], TOY_REFS["words"]]
    assert notice == f"Refs of T1: added {TOY_REFS['words']}."
    text, notice = cf.set_item_refs(text, 0, "T1", [TOY_REFS["words"]])
    assert notice == f"Refs of T1: removed {TOY_REFS['exists']}."


def test_add_item_appends_an_empty_item_the_gates_then_name(toy_text: str, toy_task: Task, rules: Rules) -> None:
    text, notice = cf.add_item(toy_text, "judge")
    new = items(text)[-1]
    assert new == {"id": "T6", "route": "judge", "text": "", "task_quote": "", "verifier_refs": []}
    assert notice.startswith("Added T6 (judge)")
    gates = {f.gate for f in form_of(text, toy_task, rules).items[-1].failures}
    assert {"G1", "G3"} <= gates
    with pytest.raises(EditError, match="not one of"):
        cf.add_item(toy_text, "check")


def test_the_form_and_the_yaml_view_are_one_text(toy_text: str, toy_task: Task, rules: Rules) -> None:
    """Each operation returns the text the YAML view shows; reading it back gives the rows the form shows."""
    text, _ = cf.duplicate_item(toy_text, 0, "T1")
    text, _ = cf.set_item_field(text, 1, "T6", "text", "The report file /out/report.json is written")
    text, _ = cf.move_item(text, 1, "T6", -1)
    form = form_of(text, toy_task, rules)
    assert [(r.id, r.text) for r in form.items[:2]] == [("T6", "The report file /out/report.json is written"),
                                                          ("T1", "The file /out/report.json exists")]
    assert check_text(text, toy_task, rules).ok  # no longer a duplicate, and nothing else broke


# ---------------------------------------------------------------- the pickers


def test_sentence_marks_name_the_items_quoting_each_sentence(toy_task: Task, rules: Rules) -> None:
    data = toy_data()
    data["items"][0]["task_quote"] = "Do **not** modify `/data/input.txt`."  # T1 quotes T5's sentence too
    form = form_of(dump(data), toy_task, rules)
    spans = instruction_spans(toy_task, rules)
    marks = dict(zip((s.text for s in spans), cf.sentence_marks(form.items, spans, rules)))
    assert marks["Do **not** modify `/data/input.txt`."] == ("T1", "T5")
    assert marks["Sort the keys alphabetically."] == ("T4",)
    first = spans[0].text  # the first paragraph: T2 and T3 quote parts of it
    assert marks[first] == ("T2 (part)", "T3 (part)")
    label = cf.sentence_label(spans[1], marks[spans[1].text])
    assert label == "✓ quoted by T1, T5 · Do **not** modify `/data/input.txt`."
    assert cf.sentence_label(spans[1], ()) == "Do **not** modify `/data/input.txt`."
    assert cf.sentence_of("Sort the keys\n  alphabetically.", spans) == 2 and cf.sentence_of("Sort the keys", spans) is None


def test_a_quote_under_the_minimum_marks_nothing(toy_task: Task, rules: Rules) -> None:
    data = toy_data()
    for item in data["items"]:
        item["task_quote"] = "the"
    form = form_of(dump(data), toy_task, rules)
    spans = instruction_spans(toy_task, rules)
    assert cf.sentence_marks(form.items, spans, rules) == [()] * len(spans)


def test_refs_picker_shows_uncovered_tests_and_the_list_shrinks(toy_task: Task, rules: Rules) -> None:
    data = toy_data()
    data["items"] = data["items"][2:]  # T3 (both cases of test_key_is_int), T4, T5: two tests uncovered
    data["waivers"] = []
    text = dump(data)
    form = form_of(text, toy_task, rules)
    assert form.uncovered == (TOY_REFS["exists"], TOY_REFS["words"])
    label = lambda r, f: cf.ref_label(r, toy_task, f.covered, f.waived)  # noqa: E731
    assert label(TOY_REFS["exists"], form) == f"{TOY_REFS['exists']} · uncovered"
    assert label(TOY_REFS["ints"], form) == f"{TOY_REFS['ints']} · covered by T3"
    assert label("test_outputs.py::nope", form) == "test_outputs.py::nope · not a test of this task"
    # picking an uncovered test into T3's refs: one fewer uncovered
    text, _ = cf.set_item_refs(text, 0, "T3", [*items(text)[0]["verifier_refs"], TOY_REFS["words"]])
    form = form_of(text, toy_task, rules)
    assert form.uncovered == (TOY_REFS["exists"],)
    assert label(TOY_REFS["words"], form) == f"{TOY_REFS['words']} · covered by T3"
    # a ref on a route that covers nothing (generated) does not count; a waiver with a reason does
    text, _ = cf.set_item_refs(text, 1, "T4", [TOY_REFS["exists"]])
    assert form_of(text, toy_task, rules).uncovered == (TOY_REFS["exists"],)
    data = yaml.safe_load(text)
    data["waivers"] = [{"verifier_ref": TOY_REFS["exists"], "reason": "checked by T4's file"}]
    form = form_of(dump(data), toy_task, rules)
    assert form.uncovered == () and label(TOY_REFS["exists"], form) == f"{TOY_REFS['exists']} · waived"


def test_pickers_keep_values_that_are_not_among_their_choices(toy_task: Task) -> None:
    refs = [f"{TOY_REFS['ints']}[words]", "test_outputs.py::gone"]
    assert cf.ref_options(toy_task, refs) == [*toy_task.test_ids, *refs]
    assert cf.ref_options(toy_task, [TOY_REFS["exists"]]) == toy_task.test_ids
    assert cf.route_options("judge") == ["assertion", "generated", "judge"]
    assert cf.route_options("check") == ["assertion", "generated", "judge", "check"]


def test_quote_into_lists_items_by_their_text(toy_task: Task, rules: Rules) -> None:
    data = toy_data()
    data["items"][0]["text"] = ""
    data["items"][1]["text"] = "x" * 300
    form = form_of(dump(data), toy_task, rules)
    assert cf.target_label(form.items[0]) == "T1 · (no text yet)"
    assert cf.target_label(form.items[2]) == "T3 · report.json holds the keys words and lines with integer values"
    assert cf.target_label(form.items[1]).endswith("…") and len(cf.target_label(form.items[1])) < 180


def test_invisible_characters_are_shown_and_come_back_from_an_edit() -> None:
    raw = "Write /app/report\u200b.csv\u202e now"
    shown = show_invisible(raw)
    assert shown == "Write /app/report⟨U+200B⟩.csv⟨U+202E⟩ now"
    assert cf.from_visible(shown) == raw
    assert cf.from_visible("see ⟨U+0041⟩ and ⟨U+200B⟩") == "see ⟨U+0041⟩ and \u200b"  # only invisible characters


# ---------------------------------------------------------------- saving


def test_saving_the_forms_text_adds_a_version_and_never_changes_a_stored_one(store: Store, toy_task: Task,
                                                                            rules: Rules) -> None:
    store.trials.upsert_task(toy_task)
    text = dump(toy_data())
    first, _ = save_text(store, text, toy_task, rules, reviewer="alice")
    assert first is not None and first.version == 1
    again, _ = save_text(store, text, toy_task, rules, reviewer="alice")
    assert again is not None and again.sha == first.sha
    assert cf.save_notice(again.version, again.sha, [first.sha]).startswith("Identical to version 1")
    edited, _ = cf.move_item(text, 4, "T5", -1)
    second, _ = save_text(store, edited, toy_task, rules, reviewer="alice")
    assert second is not None and second.version == 2 and second.sha != first.sha
    assert cf.save_notice(second.version, second.sha, [first.sha]) == f"Stored as version 2 (sha {second.sha[:12]})."
    assert store.checklists.get(first.sha).checklist == first.checklist  # v1 as it was
    broken, _ = cf.delete_item(edited, 0, "T1")
    row, check = save_text(store, broken, toy_task, rules, reviewer="alice")
    assert row is None and {f.gate for f in check.failures} == {"G5"}
    assert len(store.checklists.list(task=toy_task.id, status=None)) == 2
