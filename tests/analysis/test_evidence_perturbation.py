"""Evidence perturbation: deterministic, plausible, recorded."""

from __future__ import annotations

import re

import pytest

from gcpc_core.analysis import perturb_span


def test_same_inputs_same_output_and_seed_matters() -> None:
    text = "wrote 1,250 rows to /root/out.csv in 3.75 s"
    a, b = perturb_span(text, "1,250 rows", 7), perturb_span(text, "1,250 rows", 7)
    assert a == b
    outs = {perturb_span(text, "1,250 rows", s)[0] for s in range(10)}
    assert len(outs) > 1


def test_numbers_are_shifted_keeping_format() -> None:
    new, recipe = perturb_span("score=0.95 count=007 total=-12", "score=0.95 count=007 total=-12", 1)
    assert recipe["kind"] == "number"
    subs = {s["from"]: s["to"] for s in recipe["substitutions"]}
    assert set(subs) == {"0.95", "007", "-12"}
    assert re.fullmatch(r"\d\.\d\d", subs["0.95"]) and subs["0.95"] != "0.95"
    assert re.fullmatch(r"\d{3}", subs["007"]) and subs["007"] != "007"
    assert subs["-12"] != "-12"
    assert new == recipe["replacement"]


def test_thousands_separators_are_one_number() -> None:
    _, recipe = perturb_span("n = 1,000", "1,000", 0)
    assert [s["from"] for s in recipe["substitutions"]] == ["1,000"]
    assert "," in recipe["substitutions"][0]["to"]


def test_numbers_inside_paths_are_left_to_the_path_rule() -> None:
    new, recipe = perturb_span("cat /root/run_2/out.json", "/root/run_2/out.json", 3)
    assert recipe["kind"] == "path"
    assert recipe["substitutions"][0]["op"] in {"rename", "extension", "directory"}
    assert "/root/run_2/out.json" not in new


@pytest.mark.parametrize("seed", range(6))
def test_paths_change_and_the_old_path_is_gone(seed: int) -> None:
    new, recipe = perturb_span("saved answer.json", "answer.json", seed)
    assert recipe["kind"] == "path" and not recipe["quote_still_present"]
    assert "answer.json" not in new


def test_strings_swap_opposites_then_words() -> None:
    new, recipe = perturb_span("5 tests PASSED: True", "PASSED: True", 0)
    assert recipe["kind"] == "string" and recipe["replacement"] == "FAILED: False"
    new, recipe = perturb_span("status green light", "green light", 0)
    assert recipe["replacement"] == "light green" and [s["op"] for s in recipe["substitutions"]] == ["swap", "swap"]
    _, recipe = perturb_span("ab", "ab", 0)
    assert recipe["replacement"] == "ba"


def test_whitespace_insensitive_match_and_every_occurrence_replaced() -> None:
    text = "value 42\nlater: value   42 again"
    new, recipe = perturb_span(text, "value 42", 2)
    assert recipe["occurrences"] == 2 and recipe["span"] == "value 42"
    assert "42" not in new and not recipe["quote_still_present"]
    assert recipe["seed"] == 2 and recipe["quote"] == "value 42"


def test_errors() -> None:
    with pytest.raises(ValueError, match="not found"):
        perturb_span("abc", "xyz", 0)
    with pytest.raises(ValueError, match="empty"):
        perturb_span("abc", "  ", 0)
