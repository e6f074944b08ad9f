"""Gates G1–G6 on the in-memory toy task: each rule, its edge cases and the failure format."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest

from gcpc_core.checklist import (
    GATES,
    Checklist,
    ChecklistItem,
    GateFailure,
    Probe,
    Rules,
    check_checklist_data,
    parse_checklist,
    requirement_problems,
    run_gates,
    split_ref,
)
from gcpc_core.checklist.gates import literals, mask_literals, normalize_whitespace, similarity
from gcpc_core.models import Task

from .toy import TOY_REFS, toy_checklist, toy_data


def gates_of(failures: list[GateFailure]) -> set[str]:
    return {f.gate for f in failures}


def mutated(change: Any) -> dict[str, Any]:
    """A fresh copy of the toy data after `change(data)`."""
    data = copy.deepcopy(toy_data())
    change(data)
    return data


def gate(data: dict[str, Any], task: Task, rules: Rules) -> list[GateFailure]:
    checklist, failures = check_checklist_data(data, task, rules)
    return failures


def test_toy_checklist_passes_every_gate(toy_task: Task, rules: Rules) -> None:
    assert run_gates(toy_checklist(), toy_task, rules) == []


def test_run_gates_is_deterministic_and_does_not_mutate(toy_task: Task, rules: Rules) -> None:
    data = mutated(lambda d: d["items"][0].update(task_quote="made up words here"))
    checklist = parse_checklist(data)
    before = checklist.model_dump()
    first, second = run_gates(checklist, toy_task, rules), run_gates(checklist, toy_task, rules)
    assert first == second and first
    assert checklist.model_dump() == before


# ---------------------------------------------------------------- G1


def test_g1_quote_matches_across_line_breaks(toy_task: Task, rules: Rules) -> None:
    # the instruction breaks the line inside this span; a single-line quote must still match
    data = mutated(lambda d: d["items"][2].update(task_quote='/out/report.json` as {"words": <int>,'))
    assert gate(data, toy_task, rules) == []


@pytest.mark.parametrize(
    ("quote", "needle"),
    [
        ("", "empty"),
        ("   \n\t", "empty"),
        ("Sort", "shorter than"),
        ("Do not modify `/data/input.txt`.", "not found verbatim"),  # markdown ** dropped
        ("sort the keys alphabetically.", "not found verbatim"),  # case differs
        ("Count the words in /data/input.txt", "not found verbatim"),  # backticks dropped
    ],
)
def test_g1_rejects_non_verbatim_quotes(quote: str, needle: str, toy_task: Task, rules: Rules) -> None:
    failures = gate(mutated(lambda d: d["items"][3].update(task_quote=quote)), toy_task, rules)
    assert [(f.item_id, f.gate) for f in failures] == [("T4", "G1")]
    assert needle in failures[0].message


def test_g1_hint_shows_where_the_quote_diverges(toy_task: Task, rules: Rules) -> None:
    failures = gate(
        mutated(lambda d: d["items"][0].update(task_quote="write the result to `/out/summary.json`")), toy_task, rules
    )
    assert "then differs at 'summary.json`'" in failures[0].message


# ---------------------------------------------------------------- G2


def test_split_ref() -> None:
    assert split_ref("f.py::T::t[a-b]") == ("f.py::T::t", "a-b")
    assert split_ref("f.py::t[x[0]]") == ("f.py::t", "x[0]")
    assert split_ref(" f.py::t ") == ("f.py::t", None)


def test_g2_param_suffix_resolves_to_parametrized_node(toy_task: Task, rules: Rules) -> None:
    data = mutated(lambda d: d["items"][2].update(verifier_refs=[f"{TOY_REFS['ints']}[anything-at-all]"]))
    assert gate(data, toy_task, rules) == []


def test_g2_unknown_ref_suggests_close_match(toy_task: Task, rules: Rules) -> None:
    bad = "test_outputs.py::TestReport::test_report_exist"
    failures = gate(mutated(lambda d: d["items"][0]["verifier_refs"].append(bad)), toy_task, rules)
    assert [(f.item_id, f.gate) for f in failures] == [("T1", "G2")]
    assert f"did you mean {TOY_REFS['exists']!r}" in failures[0].message


def test_g2_ref_without_file_prefix_is_unknown(toy_task: Task, rules: Rules) -> None:
    failures = gate(
        mutated(lambda d: d["items"][0].update(verifier_refs=["TestReport::test_report_exists"])), toy_task, rules
    )
    assert gates_of(failures) == {"G2", "G5"}  # unresolved, so test_report_exists is also uncovered


def test_g2_param_suffix_on_plain_test(toy_task: Task, rules: Rules) -> None:
    failures = gate(mutated(lambda d: d["items"][0].update(verifier_refs=[TOY_REFS["exists"] + "[x]"])), toy_task, rules)
    assert [f.gate for f in failures] == ["G2"] and "not parametrized" in failures[0].message


def test_g2_assertion_needs_refs_other_routes_do_not(toy_task: Task, rules: Rules) -> None:
    failures = gate(mutated(lambda d: d["items"][3].update(route="assertion")), toy_task, rules)
    assert [(f.item_id, f.gate) for f in failures] == [("T4", "G2")]


def test_g2_refs_on_generated_and_judge_must_resolve(toy_task: Task, rules: Rules) -> None:
    ok = mutated(lambda d: d["items"][3].update(verifier_refs=[TOY_REFS["words"]]))
    assert gate(ok, toy_task, rules) == []
    bad = mutated(lambda d: d["items"][4].update(verifier_refs=["test_outputs.py::test_nope"]))
    assert [(f.item_id, f.gate) for f in gate(bad, toy_task, rules)] == [("T5", "G2")]


def test_g2_task_without_test_nodes(toy_task: Task, rules: Rules) -> None:
    """Script-style verifiers (no pytest nodes) allow no assertion items, and need no coverage."""
    scriptlike = toy_task.model_copy(update={"tests": []})
    failures = run_gates(toy_checklist(), scriptlike, rules)
    assert gates_of(failures) == {"G2"}
    assert all("has no pytest test nodes" in f.message or "unknown verifier ref" in f.message for f in failures)
    generated_only = mutated(  # the judge item stays: its run phrasing belongs on the judge route
        lambda d: [it.update(route="generated", verifier_refs=[]) for it in d["items"] if it["route"] != "judge"]
    )
    assert gate(generated_only, scriptlike, rules) == []


def test_g2_unparsable_verifier_is_reported(toy_task: Task, rules: Rules) -> None:
    broken = toy_task.model_copy(update={"parse_errors": ["/t/tests/test_x.py: line 3: invalid syntax"]})
    failures = run_gates(toy_checklist(), broken, rules)
    assert [(f.item_id, f.gate) for f in failures] == [("-", "G2")]
    assert "could not be parsed" in failures[0].message


# ---------------------------------------------------------------- G3


@pytest.mark.parametrize(
    "text",
    [
        "report.json contains the keys words and lines",  # "and" joining nouns: one requirement
        "fake_citations contains 'Search and Rescue and Recovery and More'",  # quoted literal masked
        "The user's report.json doesn't list duplicate keys",  # apostrophes are not quotes
        "The report lists values, e.g. The first key is words",  # e.g. is no sentence end
        "The file /root/answer.json exists",
        "oscillation_cycle lists ASNs 65002 and 65003 in either order",
    ],
)
def test_g3_accepts_requirement_level_text(text: str, rules: Rules) -> None:
    assert requirement_problems(text, rules) == []


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("report.json exists and is valid JSON", "compound item: 'and is'"),
        ("report.json exists and it holds two keys", "compound item: 'and it'"),
        ("report.json holds words; lines is an integer", "compound item: separator ';'"),
        ("report.json holds words as well as a sorted key list", "compound item: separator 'as well as'"),
        ("The report has words and lines and bytes and chars", "compound item: 3 standalone 'and's"),
        ("report.json exists. The keys are sorted", "compound item: more than one sentence"),
        ("The report is properly formatted", "vague phrase 'properly'"),
        ("The output uses appropriate key names", "vague phrase 'appropriate'"),
        ("The report gives the correct answer for words", "vague phrase 'the correct answer'"),
        ("The script makes all tests pass", "outcome phrasing 'all tests pass'"),
        ("The task is completed by the written report", "outcome phrasing 'The task is completed'"),
        ("The run earns a reward of one point", "outcome phrasing 'reward'"),
        ("In this run the report file was written", "run-specific phrasing 'In this run'"),
        ("The trajectory shows report.json being written", "run phrasing outside the judge route 'trajectory'"),
        ("The agent ran wc on the input file", "run phrasing outside the judge route 'The agent ran'"),
        ("The agent claimed the report was written", "run-specific phrasing 'The agent claimed'"),
        ("`/app/a.csv` exists and is valid CSV", "compound item: 'and is'"),
        ("/app/out exists and is a directory and has two files", "compound item: 'and has'"),
        ("writes report.json and prints the word total", "compound item: 'and prints'"),
        ("`/app/x.csv`", "text has 1 words"),
        ("The output shown at E17 lists the words", "run-specific phrasing 'E17'"),
        ("Words counted", "text has 2 words"),
        ("x " * 50, "text has 50 words"),
        ("a" * 330 + " b c", "text has 334 characters"),
    ],
)
def test_g3_rejects(text: str, needle: str, rules: Rules) -> None:
    problems = requirement_problems(text, rules)
    assert any(needle in p for p in problems), problems


def test_g3_reports_each_item_with_its_id(toy_task: Task, rules: Rules) -> None:
    failures = gate(mutated(lambda d: d["items"][3].update(text="The keys are sorted properly and also deduplicated")),
                    toy_task, rules)
    assert [(f.item_id, f.gate) for f in failures] == [("T4", "G3"), ("T4", "G3")]


@pytest.mark.parametrize(
    "text",
    [
        "`/app/x.csv` exists",  # a literal and a predicate: short, observable
        "/app/learned_dag.csv exists",
        "`a.csv` exists",  # under min_chars, but the literal makes it specific
        "/app/out exists and is a directory",  # existence and kind: one object, one requirement
        "The intervened DAG removes every edge into Y and keeps the other learned edges",  # complement
        "sorted.txt holds the sorted lines and leaves the remaining files unchanged",
        "reward.txt holds the number of processed rows",  # a file name is data, not outcome phrasing
        "The file /app/trajectory.csv has a header row",  # ... nor run phrasing
        "The file '" + "very long title " * 35 + "' is listed",  # literals do not count against the prose bound
    ],
)
def test_g3_accepts_short_and_same_object_items(text: str, rules: Rules) -> None:
    assert requirement_problems(text, rules, "assertion") == []


@pytest.mark.parametrize(
    "text",
    ["The agent ran pytest on tests/ before finishing", "During the run the agent never edited /data/input.txt",
     "The agent tried the provided script before writing its own"],
)
def test_g3_allows_run_phrasing_on_the_judge_route_only(text: str, rules: Rules) -> None:
    assert requirement_problems(text, rules, "judge") == []
    assert any("run phrasing outside the judge route" in p for p in requirement_problems(text, rules, "generated"))


def test_g3_run_specific_phrasing_is_banned_on_every_route(rules: Rules) -> None:
    for text in ("In this run the agent opened /root/test.bib", "The agent opened the bib file at E17"):
        assert any("run-specific phrasing" in p for p in requirement_problems(text, rules, "judge")), text


def test_mask_literals(rules: Rules) -> None:
    assert mask_literals("lists 'A and B' and `c; d` and \"e\"", rules) == "lists LITERAL and LITERAL and LITERAL"
    assert mask_literals("the agent's file isn't here", rules) == "the agent's file isn't here"
    assert mask_literals("/app/a.csv and out.json and main_part_mass, e.g. and/or", rules) == (
        "LITERAL and LITERAL and LITERAL, e.g. and/or")


def test_literals_are_normalized_content(rules: Rules) -> None:
    assert literals("`/app/a.csv` holds 3 rows within 0.1%", rules) == {"/app/a.csv", "3", "0.1%"}
    assert literals("The report is sorted", rules) == frozenset()


# ---------------------------------------------------------------- G4


def test_similarity_normalizes_case_and_punctuation() -> None:
    assert similarity("Report.JSON exists!", "report json exists") == 1.0
    assert normalize_whitespace(" a \n\t b\u00a0c ") == "a b c"


def test_g4_rejects_near_duplicate_and_names_the_earlier_item(toy_task: Task, rules: Rules) -> None:
    dup = {"id": "T6", "route": "generated", "text": "Keys of report.json appear in alphabetical order",
           "task_quote": "Sort the keys alphabetically."}
    failures = gate(mutated(lambda d: d["items"].append(dup)), toy_task, rules)
    assert [(f.item_id, f.gate) for f in failures] == [("T6", "G4")]
    assert failures[0].message.startswith("duplicates T4 (similarity 0.9")


def test_g4_keeps_items_that_differ_in_their_values(toy_task: Task, rules: Rules) -> None:
    a = "fake_citations contains the title 'Blockchain Applications in Supply Chain Management'"
    b = "fake_citations contains the title 'Advances in Artificial Intelligence for Natural Language Processing'"
    assert similarity(a, b) < rules.contract.duplicates.threshold


def test_g4_items_naming_different_files_are_distinct(toy_task: Task, rules: Rules) -> None:
    def change(d: dict[str, Any]) -> None:
        d["items"][4:4] = [
            {"id": "T8", "route": "generated", "text": "The file /out/learned_dag.csv exists", "task_quote": "Sort the keys"},
            {"id": "T9", "route": "generated", "text": "The file /out/intervened_dag.csv exists", "task_quote": "Sort the keys"},
            {"id": "T10", "route": "generated", "text": "The file /out/learned_dag.csv exists.", "task_quote": "Sort the keys"},
        ]
    failures = gate(mutated(change), toy_task, rules)
    assert [(f.item_id, f.gate) for f in failures] == [("T10", "G4")]
    assert failures[0].message.startswith("duplicates T8")


def test_g4_threshold_comes_from_rules(toy_task: Task, rules: Rules) -> None:
    strict = rules.model_copy(update={"contract": rules.contract.model_copy(
        update={"duplicates": rules.contract.duplicates.model_copy(update={"threshold": 0.3})})})
    assert "G4" in gates_of(run_gates(toy_checklist(), toy_task, strict))


# ---------------------------------------------------------------- G5


def test_g5_uncovered_node(toy_task: Task, rules: Rules) -> None:
    failures = gate(mutated(lambda d: d["items"].pop(0)), toy_task, rules)
    assert [(f.item_id, f.gate) for f in failures] == [("-", "G5")]
    assert TOY_REFS["exists"] in failures[0].message


def test_g5_waiver_with_reason_covers(toy_task: Task, rules: Rules) -> None:
    def change(d: dict[str, Any]) -> None:
        d["items"][0].update(route="generated", verifier_refs=[])
        d["waivers"] = [{"verifier_ref": TOY_REFS["exists"], "reason": "T2 cannot pass without the file"}]
    assert gate(mutated(change), toy_task, rules) == []


def test_g5_generated_refs_do_not_cover(toy_task: Task, rules: Rules) -> None:
    failures = gate(mutated(lambda d: d["items"][0].update(route="generated")), toy_task, rules)
    assert [(f.item_id, f.gate) for f in failures] == [("-", "G5")]


@pytest.mark.parametrize(
    ("waiver", "needle"),
    [
        ({"verifier_ref": "test_outputs.py::test_ghost", "reason": "gone"}, "unknown verifier test"),
        ({"verifier_ref": TOY_REFS["words"], "reason": "  "}, "no reason"),
    ],
)
def test_g5_bad_waivers(waiver: dict[str, str], needle: str, toy_task: Task, rules: Rules) -> None:
    failures = gate(mutated(lambda d: d["waivers"].append(waiver)), toy_task, rules)
    assert [(f.item_id, f.gate) for f in failures] == [(waiver["verifier_ref"], "G5")]
    assert needle in failures[0].message


def test_g5_duplicate_waiver(toy_task: Task, rules: Rules) -> None:
    w = {"verifier_ref": TOY_REFS["words"], "reason": "also checked by T2"}
    failures = gate(mutated(lambda d: d["waivers"].extend([w, w])), toy_task, rules)
    assert [f.message for f in failures] == ["test node is waived more than once"]


# ---------------------------------------------------------------- G6


def test_g6_schema_errors_become_g6_lines_with_item_ids(toy_task: Task, rules: Rules) -> None:
    def change(d: dict[str, Any]) -> None:
        d["items"][1]["route"] = "bonus"
        del d["items"][2]["task_quote"]
        d["items"][3]["verifier_ref"] = "typo for verifier_refs"
    checklist, failures = check_checklist_data(mutated(change), toy_task, rules)
    assert checklist is None
    lines = [f.line() for f in failures]
    assert "T2 G6 items[1].route: Input should be 'assertion', 'generated' or 'judge' (got 'bonus')" in lines
    assert "T3 G6 items[2].task_quote: Field required" in lines
    assert any(line.startswith("T4 G6 items[3].verifier_ref: Extra inputs are not permitted") for line in lines)


def test_g6_not_a_mapping(toy_task: Task, rules: Rules) -> None:
    checklist, failures = check_checklist_data(["not", "a", "checklist"], toy_task, rules)
    assert checklist is None and gates_of(failures) == {"G6"}


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        (lambda d: d.update(task="other-task"), "checklist is for task 'other-task'"),
        (lambda d: d.update(source="alice"), "source 'alice' must look like"),
        (lambda d: d.update(source="robot:x"), "source 'robot:x' must look like"),
        (lambda d: d["items"][4].update(id="T1"), "duplicate item id 'T1'"),
        (lambda d: d["items"][4].update(id="5 five"), "does not match"),
        (lambda d: d.update(items=d["items"][:3]), "3 items; the budget is 4-15"),
        (lambda d: d["items"][1]["probes"].append({"pattern": "(", "polarity": "no"}), "probes[1] pattern '('"),
        (lambda d: d["items"][1]["probes"].append({"pattern": "a", "polarity": "no", "flags": "q"}), "unknown probe flag"),
    ],
)
def test_g6_rejects(change: Any, needle: str, toy_task: Task, rules: Rules) -> None:
    data = mutated(change)
    if len(data["items"]) == 3:  # keep coverage intact so that only G6 objects
        data["items"][0]["verifier_refs"] = [TOY_REFS["exists"]]
    failures = gate(data, toy_task, rules)
    assert gates_of(failures) == {"G6"}, failures
    assert any(needle in f.message for f in failures), failures


def test_g6_over_budget(toy_task: Task, rules: Rules) -> None:
    extra = [
        {"id": f"X{i}", "route": "judge", "text": f"The agent kept backup number {i} of /data/input.txt",
         "task_quote": "Do **not** modify `/data/input.txt`."}
        for i in range(11)
    ]
    # these differ only in one digit, so G4 also (rightly) objects; the budget line must be there
    failures = gate(mutated(lambda d: d["items"].extend(extra)), toy_task, rules)
    assert GateFailure(item_id="-", gate="G6", message="16 items; the budget is 4-15 for this task (4 verifier checks)") in failures


def test_g6_route_checked_for_models_built_in_code(toy_task: Task, rules: Rules) -> None:
    items = list(toy_checklist().items)
    items[3] = ChecklistItem.model_construct(**{**items[3].model_dump(), "route": "bonus", "probes": []})
    checklist = Checklist.model_construct(**{**toy_checklist().model_dump(), "items": items})
    failures = run_gates(checklist, toy_task, rules)
    assert ("T4", "G6") in {(f.item_id, f.gate) for f in failures}


# ---------------------------------------------------------------- output


def test_failures_come_in_gate_order_with_the_cli_line_format(toy_task: Task, rules: Rules) -> None:
    def change(d: dict[str, Any]) -> None:
        d["source"] = "nobody"
        d["items"][3]["task_quote"] = "not in the instruction at all"
        d["items"][4]["text"] = "The agent properly kept\n/data/input.txt"
    failures = gate(mutated(change), toy_task, rules)
    assert [f.gate for f in failures] == ["G1", "G3", "G6"]
    pattern = re.compile(r"^\S+ G[1-6] \S.*$")
    assert all(pattern.match(f.line()) and "\n" not in f.line() for f in failures)
    assert list(GATES) == ["G1", "G2", "G3", "G4", "G5", "G6"]


def test_probe_yaml_booleans_and_flags() -> None:
    assert Probe.model_validate({"pattern": "x", "polarity": True}).polarity == "yes"
    assert Probe.model_validate({"pattern": "x", "polarity": "No"}).polarity == "no"
    probe = Probe(pattern="^abc", polarity="yes", flags="im")
    assert probe.compile().search("x\nABC")


def test_line_keeps_two_clean_leading_fields() -> None:
    failure = GateFailure(item_id="test_x.py::t[a b]", gate="G5", message="waiver has\nno reason")
    assert failure.line() == "test_x.py::t[a_b] G5 waiver has no reason"
    assert GateFailure(item_id="", gate="G6", message="m").line() == "- G6 m"
