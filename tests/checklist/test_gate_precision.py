"""Gate precision on the real SkillsBench tasks (skipped when ../shared/skillsbench is absent): no good
hand-written item rejected (the documented examples in docs/examples/checklists/ and the positive fixtures),
every negative fixture rejected by its intended gate only. The counts are recorded as test properties
(`--junitxml` keeps them) and shown on failure; `python -m gcpc_core.checklist.precision` prints them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from gcpc_core.checklist import load_checklist_file
from gcpc_core.checklist.precision import RECALL_TARGET, checklist_files, main, measure, measure_items

from .toy import FIXTURES

pytestmark = pytest.mark.skillsbench

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples" / "checklists"


def test_documented_examples_cover_real_tasks_with_at_least_30_items() -> None:
    examples = checklist_files([EXAMPLES])
    items = [i for p in examples for i in load_checklist_file(p).items]
    assert len(items) >= 30 and len(examples) >= 3
    assert all(load_checklist_file(p).task == p.stem for p in examples)  # named after their task


def test_gate_precision(skillsbench: Path, record_property: Callable[[str, object], None]) -> None:
    report = measure(skillsbench / "tasks", checklist_files([EXAMPLES, FIXTURES]),
                     checklist_files([FIXTURES / "negative"]), negative_task="citation-check")
    summary = "\n".join(report.lines())
    record_property("gate_precision", summary)
    assert report.rejected_good == [] and report.good_items >= 100, summary
    assert report.missed == [] and report.caught == report.negatives >= 24, summary


def test_precision_cli_exit_code_says_whether_both_targets_hold(skillsbench: Path, tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    good = tmp_path / "good"
    good.mkdir()
    text = (EXAMPLES / "video-silence-remover.yaml").read_text()
    (good / "video-silence-remover.yaml").write_text(text.replace("text: compressed_video.mp4 exists",
                                                                  "text: compressed_video.mp4 exists properly"))
    assert main(["--tasks", str(skillsbench / "tasks"), "--good", str(good)]) == 1
    out = capsys.readouterr().out
    assert "rejected by a gate: 1" in out and "C1 G3 vague phrase 'properly'" in out
    assert main(["--tasks", str(skillsbench / "tasks"), "--good", str(EXAMPLES)]) == 0


LABELLED = FIXTURES / "labelled" / "bad_items.yaml"


def test_a_labelled_set_with_a_malformed_entry_is_named_not_a_traceback(
        skillsbench: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    broken = tmp_path / "mine.yaml"  # a bad entry without its rule, and an unknown route
    broken.write_text(f"base: {LABELLED.parent.resolve() / LABELLED.read_text().split('base: ')[1].split()[0]}\n"
                      "replace: {assertion: C2, generated: C11, judge: C12}\n"
                      "bad:\n  - {gate: G3, route: assertion, text: 'x exists and y is written'}\n"
                      "good:\n  - {route: pipeline, text: 'x exists'}\n")
    assert main(["--tasks", str(skillsbench / "tasks"), "--items", str(broken)]) == 2
    err = capsys.readouterr().err
    assert f"{broken}: not a labelled item set" in err and "bad.0.rule: Field required" in err
    assert "good.0.route" in err


def test_gate_recall_on_labelled_bad_items_of_every_rule(skillsbench: Path,
                                                         record_property: Callable[[str, object], None]) -> None:
    """At least 60 bad item texts written from the contract's rules (every rule, several spellings each) are
    rejected by their intended gate on their item only (≥ 95 %; before the spelling-independent gates 36 of 65 got
    through: backticks, "its", comma lists, vague words, run phrasing, failure messages, code, test names), and no
    near miss of a rule (one requirement as the contract counts them) is rejected. The set holds a held-out half,
    78 spellings written after those gates (14 of them rejected then), so the figure is not of the gates' own
    examples only."""
    report = measure_items(skillsbench / "tasks", LABELLED)
    summary = "\n".join(report.lines())
    record_property("gate_recall", summary)
    assert report.bad_items >= 140 and len(report.by_rule) >= 20 and report.near_misses >= 25, summary
    assert report.recall >= RECALL_TARGET and report.rejected_near_misses == [], summary
    assert all(total >= 1 for _, total in report.by_rule.values())


@pytest.mark.parametrize("text", [
    "`/app/ssl/server.key` exists and `openssl rsa -in /app/ssl/server.key -check` reports RSA key ok",
    "`/app/x.py` exists, `python /app/x.py` exits 0, and its output includes `done`",
    "`/app/server.key` has the correct permissions",
    "`/app/out.csv` holds the expected number of records",
    "`/app/out.json` has the correct structure",
    "The agent successfully creates `/app/ssl/server.key`",
    "Python verification script does not exist",
    "Timeout while checking RStan package",
    "`abs(out - 7) < 1e-06` holds",
    "Pipeline parallel (`test_pipeline_parallel`)",
])
def test_the_issues_examples_are_rejected_by_g3_on_an_assertion_item(text: str) -> None:
    from gcpc_core.checklist import load_rules
    from gcpc_core.checklist.gates import requirement_problems

    assert requirement_problems(text, load_rules(), "assertion"), text


@pytest.mark.parametrize(("route", "text"), [
    ("assertion", "/root/answer.json exists and validates against the schema"),  # any verb after "exists and"
    ("assertion", "/root/answer.json exists & is valid JSON"),  # "&" is an "and"
    ("generated", "The titles are sorted, deduplicated, and stripped of braces"),  # a list of participles
    ("assertion", "/root/answer.json starts with `{` and ends with `}`"),
    ("assertion", "The correct permissions for `/app/server.key` are set"),  # the literal names the subject
    ("generated", "The titles are in the right order"),
    ("generated", "The titles are formatted as specified"),
    ("assertion", "Agent writes /root/answer.json"),
    ("assertion", "The coding agent creates `/root/answer.json`"),
    ("generated", "Claude sorts the titles alphabetically"),
    ("assertion", "Found 2 fake citations, expected 3"),
    ("assertion", "/root/answer.json should have 3 entries but has 2"),
    ("assertion", "No such file: /root/answer.json"),
    ("assertion", "`abs(out - 7) < 1e-06` is true"),
    ("assertion", "`test_answer_file_exists` passes"),
    ("assertion", "Answer file valid json"),
    ("assertion", "Check numerical equality (within tolerance)"),
    ("generated", "`/root/answer.json` `fake_citations`"),
    ("assertion", "The grader accepts /root/answer.json"),
    ("judge", "According to the agent, every DOI was checked"),
    ("judge", "The agent's final message says the titles are sorted"),
])
def test_held_out_spellings_are_rejected_by_g3(route: str, text: str) -> None:
    """Spellings written after the first 65 labelled items, which the gates that passed those let through: the
    rules are enforced whatever the spelling, not for the spellings the set happened to hold."""
    from gcpc_core.checklist import load_rules
    from gcpc_core.checklist.gates import requirement_problems

    assert requirement_problems(text, load_rules(), route), text


@pytest.mark.parametrize(("route", "text"), [
    ("assertion", "`/root/answer.json` exists and is a non-empty file"),
    ("generated", "fake_citations lists the invented and misattributed titles"),  # participles before a noun
    ("generated", "The titles in fake_citations are sorted alphabetically"),
    ("assertion", "/root/answer.json has the correct mode `0600`"),
    ("assertion", "The titles match the expected output in `/root/expected.json`"),
    ("assertion", "The user agent string in `/root/answer.json` is `gcpc/1.0`"),
    ("assertion", "`len(fake_citations)` equals 3"),  # code as a value, with a predicate of its own
    ("generated", "`/root/tests/test_answer.py` defines `test_answer_is_json`"),  # a test file the task asks for
    ("generated", "Missing DOIs in /root/test.bib are reported as `null`"),
    ("assertion", "`top_product` is `Gizmo`, spelled as in the CSV"),  # a participle qualifying a value
    ("judge", "The agent ran `python -m json.tool /root/answer.json` before finishing"),
])
def test_near_misses_of_the_held_out_rules_pass_g3(route: str, text: str) -> None:
    from gcpc_core.checklist import load_rules
    from gcpc_core.checklist.gates import requirement_problems

    assert requirement_problems(text, load_rules(), route) == []


BLIND = sorted((FIXTURES / "labelled").glob("blind_*.yaml"))


def test_gate_recall_on_sets_written_without_sight_of_the_gates(skillsbench: Path,
                                                                record_property: Callable[[str, object], None]) -> None:
    """Five labelled sets (362 bad texts, 129 near misses, four tasks) written by someone who read the contract's
    prose but not the gates. The first three were measured on the gates before the predicate reading
    (`grammar.py`) and the wider word families: 102 of 178 rejected; the last two were held out until those were
    built: 156 of 184 rejected, 5 of 62 near misses too. Each set was then used to widen the gates, so this guards
    the result (≥ 95 % per set, no near miss rejected); it does not measure held-out recall."""
    assert len(BLIND) == 5
    lines: list[str] = []
    for path in BLIND:
        report = measure_items(skillsbench / "tasks", path)
        lines += [f"{path.name}:", *report.lines()]
        assert report.bad_items >= 58 and report.near_misses >= 20, "\n".join(lines)
        assert report.recall >= RECALL_TARGET and report.rejected_near_misses == [], "\n".join(lines)
    record_property("gate_recall_blind", "\n".join(lines))
