"""The verifier-reading draft (issue 26) on small synthetic verifiers: assertion groups, parameter groups,
texts that state the checked literal (never a failure message, code or the test's name), probes that decide
Yes on the expected value and No on another, probes refused when they would match the instruction alone,
constraints as items, generated items only for outputs, no background padding."""

from __future__ import annotations

import re

import pytest

from gcpc_core.checklist import Checklist, ChecklistItem, Probe, Rules, run_gates
from gcpc_core.checklist.draft import Sentence, draft_checklist
from gcpc_core.checklist.probes import compare, number_band, refused
from gcpc_core.checklist.verifier_reader import read_tests
from gcpc_core.evidence import build_evidence_view
from gcpc_core.ingest.tasks import parse_verifier_source
from gcpc_core.judge import probe_item
from gcpc_core.models import Event, Task


def make_task(instruction: str, verifier: str, task_id: str = "synthetic") -> Task:
    return Task(id=task_id, instruction=instruction, verifier_files={"test_outputs.py": verifier},
                tests=parse_verifier_source("test_outputs.py", verifier), source_path=f"/nonexistent/{task_id}")


def assertions(task: Task, rules: Rules) -> list[ChecklistItem]:
    """The draft's assertion items; every gate passes but the budget's minimum (these tasks are tiny)."""
    draft = draft_checklist(task, rules)
    failures = run_gates(draft.checklist, task, rules)
    assert failures == draft.failures
    assert [f for f in failures if not (f.gate == "G6" and "the budget is" in f.message)] == [], \
        [f.line() for f in failures]
    return [i for i in draft.checklist.items if i.route == "assertion"]


def verdict(item: ChecklistItem, *texts: str) -> str:
    """The probe judge's raw verdict on `item` over tool outputs showing `texts`, in order."""
    events = []
    for k, text in enumerate(texts):
        events += [Event(id=f"E{2 * k + 1}", seq=2 * k + 1, kind="tool_call", text=f"cat /root/report_{k}.txt",
                         tool_name="Bash"),
                   Event(id=f"E{2 * k + 2}", seq=2 * k + 2, kind="tool_output", text=text, tool_name="Bash",
                         call_id=f"E{2 * k + 1}")]
    return probe_item(item, build_evidence_view(events)).verdict_raw


REPORT_INSTRUCTION = """\
Measure the sample in `/root/sample.bin` and save the results to `/root/report.json` with the keys
`mass` (grams) and `material` (a name).

The mass must be within 1% of the true value.
"""

REPORT_VERIFIER = '''
import json
import os

REPORT = "/root/report.json"
EXPECTED = {"mass": 12.5, "material": "steel"}


class TestReport:
    def test_report_exists(self):
        assert os.path.exists(REPORT), "Report file does not exist"

    def test_report_values(self):
        with open(REPORT) as f:
            data = json.load(f)
        assert "mass" in data, "Missing mass"
        assert abs(data["mass"] - EXPECTED["mass"]) <= 0.125, f"mass mismatch: got {data['mass']}"
        assert "material" in data, "Missing material"
        assert data["material"] == EXPECTED["material"], "Timeout while checking the material"
'''


def test_one_item_per_assertion_group_sharing_the_tests_ref(rules: Rules) -> None:
    """The second test holds two independent groups (a key guard folded into each value check): two items,
    both citing the test; each text names the key, the file and the literal the test compares with."""
    task = make_task(REPORT_INSTRUCTION, REPORT_VERIFIER)
    items = assertions(task, rules)
    values = "test_outputs.py::TestReport::test_report_values"
    assert [i.verifier_refs for i in items] == [["test_outputs.py::TestReport::test_report_exists"], [values], [values]]
    assert items[0].text == "`/root/report.json` exists"
    assert items[1].text == "`mass` in `/root/report.json` equals `12.5` within `0.125`"
    assert items[2].text == "`material` in `/root/report.json` is `steel`"
    # each quote is the sentence naming the item's key, not the same sentence for every item
    assert "`mass`" in items[1].task_quote and "`material`" in items[2].task_quote


def test_failure_messages_code_and_test_names_never_become_text(rules: Rules) -> None:
    items = assertions(make_task(REPORT_INSTRUCTION, REPORT_VERIFIER), rules)
    texts = " ".join(i.text for i in items).lower()
    for forbidden in ("does not exist", "timeout", "mismatch", "missing", "abs(", "==", "test_report", "holds"):
        assert forbidden not in texts, forbidden


def test_a_test_the_reader_cannot_word_falls_back_to_its_docstring_not_its_messages(rules: Rules) -> None:
    verifier = '''
import subprocess

def test_pipeline_parallel():
    """The pipeline runs its stages in parallel."""
    result = subprocess.run(["python3", "/app/run.py"], capture_output=True)
    assert result.returncode == 0, "Python verification script does not exist"
    assert check_overlap(result.stdout), "stages did not overlap"
'''
    task = make_task("Make `/app/run.py` run the pipeline stages in parallel and write `/app/out.log`.", verifier)
    [item] = assertions(task, rules)
    # the exit status is put into words, but the test's last assertion is not: the docstring states it
    assert item.text == "The pipeline runs its stages in parallel"
    assert "does not exist" not in item.text and "test_pipeline_parallel" not in item.text
    assert "Pipeline parallel" not in item.text
    bare = make_task("Make `/app/run.py` run the pipeline stages in parallel.", verifier.replace(
        '    """The pipeline runs its stages in parallel."""\n', ""))
    [item] = assertions(bare, rules)
    assert item.text == "The command `python3 /app/run.py` exits with status `0`"


PARAM_VERIFIER = '''
import csv
import pytest

EXPECTED = {"total_packets": 1200, "protocol_udp": 310, "is_benign": "true"}


def load():
    with open("/root/stats.csv") as f:
        return {row["metric"]: row["value"] for row in csv.DictReader(f)}


@pytest.mark.parametrize("metric", ["total_packets", "protocol_udp"])
def test_count(metric):
    results = load()
    assert metric in results, f"Missing metric: {metric}"
    assert float(results[metric]) == EXPECTED[metric], f"{metric}: expected {EXPECTED[metric]}"


@pytest.mark.parametrize("check", ["header", "edges"])
def test_dot(check):
    content = open("/root/graph.dot").read()
    if check == "header":
        assert "digraph" in content
    elif check == "edges":
        assert "->" in content and "label=" in content


@pytest.mark.parametrize("n", [1, 2, 3])
def test_repeat(n):
    """The tool runs repeatably."""
'''

PARAM_INSTRUCTION = """\
Count the packets of `/root/capture.pcap` and fill in the `value` column of `/root/stats.csv`:

- `total_packets`: every packet
- `protocol_udp`: UDP packets

Also draw the flow graph in `/root/graph.dot`.
"""


def test_parametrized_tests_get_one_item_per_parameter_group(rules: Rules) -> None:
    """Cases with their own literal (a metric and its value) or their own branch of the body are distinct
    requirements, one item each with the case's ref; cases the body does not tell apart stay one item."""
    items = assertions(make_task(PARAM_INSTRUCTION, PARAM_VERIFIER), rules)
    by_ref = {tuple(i.verifier_refs): i for i in items}
    udp = by_ref[("test_outputs.py::test_count[protocol_udp]",)]
    assert udp.text == "`protocol_udp` in `/root/stats.csv` is `310`"
    assert "`protocol_udp`" in udp.task_quote
    assert by_ref[("test_outputs.py::test_count[total_packets]",)].text == \
        "`total_packets` in `/root/stats.csv` is `1200`"
    assert by_ref[("test_outputs.py::test_dot[header]",)].text == "`/root/graph.dot` contains `digraph`"
    assert by_ref[("test_outputs.py::test_dot[edges]",)].text == "`/root/graph.dot` contains `->` and `label=`"
    assert by_ref[("test_outputs.py::test_repeat",)].text == "The tool runs repeatably"


def test_reader_resolves_constants_helpers_and_cases(rules: Rules) -> None:
    task = make_task(PARAM_INSTRUCTION, PARAM_VERIFIER)
    reading = read_tests(task)["test_outputs.py::test_count"]
    assert [c.id for c in reading.cases] == ["total_packets", "protocol_udp"]
    [check] = [c for c in reading.checks["protocol_udp"] if c.op == "eq"]
    # the helper reads the CSV into {metric: value}: the check is on the row whose metric is protocol_udp
    assert (check.subject.path, check.subject.where, check.expected.value) == (
        "/root/stats.csv", (("metric", "protocol_udp"),), 310)
    [group] = reading.groups(reading.cases[1])
    assert [c.op for c in group.checks] == ["has_row", "eq"]  # the row's presence guards its value
    assert reading.files == ["/root/stats.csv"]


def test_a_probe_decides_yes_on_the_value_and_no_on_a_different_one(rules: Rules) -> None:
    items = assertions(make_task(PARAM_INSTRUCTION, PARAM_VERIFIER), rules)
    udp = next(i for i in items if i.verifier_refs == ["test_outputs.py::test_count[protocol_udp]"])
    assert verdict(udp, "metric,value\nprotocol_udp,310\n") == "Yes"
    assert verdict(udp, "metric,value\nprotocol_udp,311\n") == "No"
    assert verdict(udp, "protocol_udp    310.0") == "Yes"  # a printed table
    assert verdict(udp, "protocol_udp,299", "protocol_udp,310") == "Yes"  # the latest event decides
    assert verdict(udp, "protocol_udp,310", "protocol_udp,299") == "No"
    assert verdict(udp, "the total is 310") == "Abstain"  # the value without its key decides nothing
    assert verdict(udp, "results['protocol_udp'] = 0") == "Abstain"  # code initializing it is no result
    items = assertions(make_task(REPORT_INSTRUCTION, REPORT_VERIFIER), rules)
    mass, material = items[1], items[2]
    assert verdict(mass, '{"mass": 12.44, "material": "steel"}') == "Yes"  # within the test's tolerance
    assert verdict(mass, '{"mass": 13.9}') == "No"
    assert verdict(material, '{"mass": 12.44, "material": "steel"}') == "Yes"
    assert verdict(material, '{"material": "iron"}') == "No"
    exists = items[0]
    assert verdict(exists, "-rw-r--r-- 1 root root 64 Dec  2 10:00 /root/report.json") == "Yes"
    assert verdict(exists, "cat: /root/report.json: No such file or directory") == "No"


OSCILLATION_TEST = '''
import json

def test_oscillation():
    data = json.load(open("/app/report.json"))
    assert data["oscillating"] is True
'''


def test_a_probe_that_would_match_the_instruction_alone_is_refused(rules: Rules) -> None:
    """The instruction's example shows the expected value itself: a probe for it would decide Yes from the
    instruction text (an agent echoing the example), so it is narrowed past the example or dropped; an event
    showing only the instruction decides nothing."""
    instruction = ('Decide whether the network oscillates and save `/app/report.json` in this format:\n\n'
                   '```json\n{"oscillating": true, "cycle": [65002, 65003]}\n```\n')
    task = make_task(instruction, OSCILLATION_TEST)
    [item] = assertions(task, rules)
    assert item.text == "`oscillating` in `/app/report.json` is `true`"
    assert all(not refused(p, instruction) for p in item.probes)
    assert all(p.compile().search(instruction) is None for p in item.probes)
    assert verdict(item, instruction) == "Abstain"
    assert refused(Probe(pattern=r'"oscillating":\s*true', polarity="yes"), instruction)


def test_anchored_probe_needs_a_value_the_instruction_never_shows(rules: Rules) -> None:
    """When the example equals the answer, the probe is kept only in events that also show another value the
    verifier expects in the same file (here a solution name the instruction does not list)."""
    instruction = ('Save `/app/report.json` in this format:\n\n```json\n'
                   '{"oscillating": true, "solutions": {"Restart the router": false}}\n```\n')
    verifier = OSCILLATION_TEST + '''
def test_solution():
    data = json.load(open("/app/report.json"))
    assert data["solutions"]["Enable route dampening"] is True
'''
    task = make_task(instruction, verifier)
    oscillating = assertions(task, rules)[0]
    assert verdict(oscillating, instruction) == "Abstain"
    run = '{"oscillating": true, "solutions": {"Enable route dampening": true}}'
    assert verdict(oscillating, run) == "Yes"
    assert verdict(oscillating, run.replace("true,", "false,")) == "No"


def test_constraints_become_items_and_outputs_are_generated_declaratively(rules: Rules) -> None:
    instruction = """\
I have a database in WAL (Write-Ahead Logging) mode at `/data/app.db`; requests are in `requests_bucket_1.jsonl`.

Fix the query planner and save the summary as `/app/summary.txt`. The config `/app/config.yaml` (DO NOT MODIFY) sets the limits.

- Do not modify `/data/app.db`.
- Lines starting with `#` are comments—leave them.
- Keep the column order unchanged.
"""
    verifier = '''
def test_summary():
    """The summary names the slowest query."""
    assert "slowest" in open("/app/summary.txt").read()
'''
    task = make_task(instruction, verifier)
    draft = draft_checklist(task, rules)
    assert draft.failures == []
    by_route: dict[str, list[str]] = {}
    for item in draft.checklist.items:
        by_route.setdefault(item.route, []).append(item.text)
    assert by_route["judge"] == [
        "The agent does not modify `/app/config.yaml`",
        "The agent does not modify `/data/app.db`",
        "The agent leaves lines starting with `#` unchanged",
        "The agent keeps the column order unchanged",
    ]
    generated = by_route.get("generated", [])
    # the summary is checked by a test: no generated item repeats it; inputs and fragments never are outputs
    assert not any("summary.txt" in t or "app.db" in t or "requests_bucket_1" in t for t in generated)
    assert not any(re.match(r"(?i)(?:save|write|fix)\b", t) for t in draft.checklist.items[0].text.split("\n"))


def test_no_background_sentences_pad_a_short_draft(rules: Rules) -> None:
    instruction = """\
You are helping a research team. The repo is in /app/repo and it has a long history.

Write the answer to `/app/answer.txt`. The answer should be a single integer.
"""
    verifier = '''
def test_answer():
    assert open("/app/answer.txt").read().strip() == "42"
'''
    task = make_task(instruction, verifier)
    draft = draft_checklist(task, rules)
    texts = [i.text for i in draft.checklist.items]
    assert "`/app/answer.txt` is `42`" in texts
    # the instruction asks for too little to reach the budget's minimum: the draft says so instead of padding
    assert [f.gate for f in draft.failures] == ["G6"]
    assert not any("research team" in t or "/app/repo" in t or "long history" in t for t in texts), texts
    assert not any("research team" in i.task_quote or "repo is in" in i.task_quote for i in draft.checklist.items)


@pytest.mark.parametrize(("sentence", "artifact", "output"), [
    ("I have a database in WAL (Write-Ahead Logging) mode at `/data/app.db`.", "/data/app.db", False),
    ("Save it as `/app/ssl/server.key`.", "/app/ssl/server.key", True),
    ("The results should be written to `/app/out.csv`.", "/app/out.csv", True),
    ("Read `/app/in.csv`, then write `/app/out.csv`.", "/app/in.csv", False),
])
def test_an_output_verb_must_govern_the_artifact(sentence: str, artifact: str, output: bool) -> None:
    assert Sentence(sentence, 0, len(sentence)).is_output(artifact) is output


@pytest.mark.parametrize(("x", "op", "inside", "outside"), [
    (0.1, "gt", ["0.11", "5", "10.0"], ["0.1", "0.05", "-3", "0"]),
    (100, "ge", ["100", "100.0", "250", "1000"], ["99", "99.99", "-100"]),
    (-8.01, "ge", ["-8", "-8.01", "0", "3"], ["-8.02", "-9", "-80"]),
    (5, "lt", ["4.99", "0", "-1"], ["5", "5.0", "50"]),
])
def test_number_comparisons_are_exact(x: float, op: str, inside: list[str], outside: list[str]) -> None:
    pattern = re.compile(compare(x, op) or "")
    assert all(pattern.fullmatch(v) for v in inside), [v for v in inside if not pattern.fullmatch(v)]
    assert not any(pattern.fullmatch(v) for v in outside), [v for v in outside if pattern.fullmatch(v)]
    band = re.compile(number_band(4.067, 4.495) or "")
    assert band.search("entropy: 4.2811") and not band.search("entropy: 4.5") and not band.search("entropy: 14.2")


def test_the_draft_file_keeps_its_probes(rules: Rules) -> None:
    import yaml

    from gcpc_core.checklist import parse_checklist
    from gcpc_core.checklist.draft import draft_yaml

    draft = draft_checklist(make_task(PARAM_INSTRUCTION, PARAM_VERIFIER), rules)
    again = parse_checklist(yaml.safe_load(draft_yaml(draft)))
    assert again == draft.checklist and any(i.probes for i in again.items)
    assert isinstance(again, Checklist)
