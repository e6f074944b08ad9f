"""`grammar.predicates`: where an item's finite verbs stand, whatever joins its clauses."""

from __future__ import annotations

import pytest

from gcpc_core.checklist import load_rules
from gcpc_core.checklist.gates import first_requirement, requirement_problems
from gcpc_core.checklist.grammar import predicates, tokens

RULES = load_rules()


def _main(text: str) -> list[str]:
    return [p.words[0] for p in predicates(text, RULES) if p.main]


def test_a_literal_is_one_token_so_a_verb_inside_it_is_data() -> None:
    toks = tokens("`python -m json.tool /root/a.json` exits with status 0", RULES)
    assert [t.low for t in toks][:2] == ["LITERAL", "exits"]
    assert _main("`python -m json.tool /root/a.json` exits with status 0") == ["exits"]


@pytest.mark.parametrize(("text", "verbs"), [
    ("/root/answer.json is present plus it holds the key fake_citations", ["is", "holds"]),
    ("/root/answer.json gets created, then it is parsed without errors", ["gets", "is"]),
    ("The list has three items and none of them repeats", ["has", "repeats"]),
    ("`/root/answer.json` is non-empty and decodes as UTF-8", ["is", "decodes"]),
    ("The titles are sorted, deduplicated, and stripped", ["are", "deduplicated", "stripped"]),
    ("The agent parsed /root/test.bib, then queried Crossref for every DOI", ["parsed", "queried"]),
    ("fake_citations is sorted alphabetically, removing any duplicate titles", ["is", "removing"]),
    ("must exist and contain the key x", ["must", "contain"]),
])
def test_second_predicates_are_found_however_they_are_joined(text: str, verbs: list[str]) -> None:
    assert _main(text) == verbs


@pytest.mark.parametrize(("text", "verbs"), [
    ("The test results show 3 failures", ["show"]),            # "results" is a noun before a verb
    ("The agent used the data stored in /app/x", ["used"]),   # a participle qualifying a noun
    ("Action names and object names match the domain", ["match"]),
    ("X is `Gizmo`, spelled as in the CSV", ["is"]),           # a participle qualifying a value
    ("Each title in fake_citations appears exactly once", ["appears"]),
    ("Titles in fake_citations keep their wording", ["keep"]),  # a plural head noun before a phrase
    ("The agent verified at least one title with a web search", ["verified"]),
    ("The required sheets (Task and Data) still exist", ["exist"]),
    ("Sort titles alphabetically for consistency", ["sort"]),   # an imperative states what to do
])
def test_nouns_and_qualifiers_are_not_predicates(text: str, verbs: list[str]) -> None:
    assert _main(text) == verbs


def test_a_subordinate_clause_is_not_main_unless_a_comma_and_a_restated_subject_open_it() -> None:
    assert [p.main for p in predicates("The agent kept X so that it could compare", RULES)] == [True, False]
    assert _main("/root/answer.json is saved, after which it validates against the schema") == ["is", "validates"]


@pytest.mark.parametrize("text", [
    "Alphabetical ordering of fake citation titles",
    "Use of external lookups for suspicious citations",
    "Three fake titles, sorted",
    "MIN calculation values",
    "Use of employee_data.json as the data source",
])
def test_a_label_has_no_predicate_and_g3_says_so(text: str) -> None:
    assert predicates(text, RULES) == []
    assert any(p.startswith("no predicate") for p in requirement_problems(text, RULES, "generated"))


@pytest.mark.parametrize(("text", "why"), [
    ("/root/answer.json is present plus it holds the key fake_citations", "'plus it'"),
    ("Titles contain no braces and they contain no backslashes", "'and they'"),
    ("`/root/answer.json` is non-empty and decodes as UTF-8", "'and decodes'"),
])
def test_g3_names_where_the_second_requirement_starts(text: str, why: str) -> None:
    problems = requirement_problems(text, RULES, "assertion")
    assert any(p.startswith("compound item") and why in p for p in problems), problems


@pytest.mark.parametrize("text", [
    "`A` contains \"x\", `B` contains \"y\" and `C` contains \"z\"",  # one check over a list of subjects
    "`/root/answer.json` exists and is a directory",
    "The script updates the header and leaves the remaining lines unchanged",
    "Folders named LLM, trapped_ion_and_qc, black_hole, DNA, music_history exist side by side",
    "The agent produced every output file the instruction names, at the path the instruction gives",
])
def test_one_requirement_stays_one(text: str) -> None:
    assert not [p for p in requirement_problems(text, RULES, "judge") if p.startswith("compound")]


def test_first_requirement_cuts_before_the_coordinator_of_the_second() -> None:
    assert first_requirement("/root/a.json exists, parses as JSON, and has the key k", RULES) == "/root/a.json exists"
    assert first_requirement("/root/a.json holds the keys a and b", RULES) == "/root/a.json holds the keys a and b"
