"""What a judge's view is windowed for (`judge.focus`) and how the budget leaves events out for it
(`judge.budget.elision_order`): the lines and events that decide an item are the last to go."""

from __future__ import annotations

from fake_openai import FakeOpenAI
from pydantic import BaseModel

from gcpc_core.checklist import Checklist, ChecklistItem, load_rules
from gcpc_core.checklist.schema import Probe
from gcpc_core.evidence import Focus, build_evidence_view
from gcpc_core.judge.budget import elision_order, fit_evidence, items_shown
from gcpc_core.judge.focus import focus_for, literals_of_test
from gcpc_core.models import Event, Task, VerifierTest

VERIFIER = '''\
EXPECTED_TOTAL = 1234.56
OUTPUT = "/root/report.json"


def test_total():
    """The report's total is right."""
    data = json.load(open(OUTPUT))
    assert abs(data["total"] - EXPECTED_TOTAL) < 0.01, f"total is {data['total']}, expected the sum of all invoices"
    assert data["currency"] == "EUR", "the currency must be euro as stated in the instruction"


def test_other():
    assert os.path.exists("/root/unrelated.txt")
'''
TASK = Task(id="t", instruction="Write /root/report.json with the total.", verifier_files={"test_outputs.py": VERIFIER},
            tests=[VerifierTest(node_id="test_outputs.py::test_total", file="test_outputs.py", name="test_total",
                                lineno=5, end_lineno=9),
                   VerifierTest(node_id="test_outputs.py::test_other", file="test_outputs.py", name="test_other",
                                lineno=12, end_lineno=13)],
            source_path="/nowhere")
ITEM = ChecklistItem(id="C1", route="assertion", text="`/root/report.json` holds the right total",
                     task_quote="Write /root/report.json with the total.",
                     verifier_refs=["tests/test_outputs.py::test_total"],
                     probes=[Probe(pattern=r"\"total\": 1234\.56", polarity="yes")])
CHECKLIST = Checklist(task="t", source="human:test", items=[ITEM])


def test_a_verifier_tests_literals_are_its_values_not_its_messages() -> None:
    found = literals_of_test(TASK, TASK.tests[0])
    assert {"1234.56", "/root/report.json", "EUR", "total", "currency"} <= set(found)
    assert not any("expected" in f or "euro" in f or "right" in f for f in found)  # messages and docstring
    assert "/root/unrelated.txt" not in found  # another test's


def test_focus_names_the_items_literals_the_cited_tests_values_and_the_probes() -> None:
    focus = focus_for(TASK, CHECKLIST, load_rules())
    terms = {t.lower() for t in focus.terms}
    assert {"/root/report.json", "report.json", "1234.56", "eur"} <= terms
    assert "/root/unrelated.txt" not in terms  # a test no item cites
    assert [p.pattern for p in focus.patterns] == [ITEM.probes[0].pattern]
    holistic = focus_for(TASK, None, load_rules())  # no checklist: every test's values
    assert "/root/unrelated.txt" in {t.lower() for t in holistic.terms} and not holistic.patterns


def ev(seq: int, kind: str, text: str, **kw) -> Event:
    return Event(id=f"E{seq}", seq=seq, kind=kind, text=text, **kw)


def run() -> list[Event]:
    """A run whose decisive event (the report read back) lies in its middle, among bulk: where
    middle-out elision cut first."""
    out = [ev(1, "tool_call", "cat /skills/SKILL.md", tool_name="Bash"),
           ev(2, "tool_output", "# skill\n" + "how to do it\n" * 300, tool_name="Bash", call_id="E1")]
    for i in range(3, 23, 2):
        out += [ev(i, "tool_call", f"python step{i}.py", tool_name="Bash"),
                ev(i + 1, "tool_output", f"step {i} log\n" + "progress line\n" * 200, tool_name="Bash", call_id=f"E{i}")]
    out += [ev(23, "tool_call", "cat /root/report.json", tool_name="Bash"),
            ev(24, "tool_output", '{"total": 1234.56, "currency": "EUR"}', tool_name="Bash", call_id="E23"),
            ev(25, "tool_call", "ls /root", tool_name="Bash"),
            ev(26, "tool_output", "notes.txt\n" * 300, tool_name="Bash", call_id="E25")]
    for i in range(27, 47, 2):
        out += [ev(i, "tool_call", f"python tidy{i}.py", tool_name="Bash"),
                ev(i + 1, "tool_output", f"tidy {i} log\n" + "cleanup line\n" * 200, tool_name="Bash", call_id=f"E{i}")]
    return out


def test_elision_order_leaves_the_deciding_event_for_last() -> None:
    view = build_evidence_view(run(), focus=focus_for(TASK, CHECKLIST, load_rules()))
    order = [view.entries[i].event.id for i in elision_order(view)]
    assert order[0] == "E2"  # boilerplate first
    assert order[-1] == "E24"  # the read-back the probe matches and that decides C1
    assert order.index("E26") < order.index("E23")  # naming nothing goes before naming the report


class Reply_(BaseModel):
    answer: str


def test_a_tight_window_still_shows_what_decides_the_item(fake_openai: FakeOpenAI, make_llm) -> None:
    """Middle-out elision dropped an event in the middle of a run whatever it held; the budget now
    keeps the event that decides the item and leaves bulk out instead."""
    fake_openai.serve_tokenizer(chars_per_token=4)
    view = build_evidence_view(run(), focus=focus_for(TASK, CHECKLIST, load_rules()))
    llm = make_llm(context_window=2000, max_completion_tokens=300)

    def prompt(v):
        return [{"role": "user", "content": "Judge this.\n" + v.render()}]

    fit = llm.run_sync(lambda: fit_evidence(llm, view, prompt, Reply_))
    assert fit.overflow is None and fit.view.gaps, fit.note
    assert '{"total": 1234.56, "currency": "EUR"}' in fit.view.render()
    assert items_shown(view, fit.view) == 1
    assert "evidence events left out" in fit.note and "(counted by the server)" in fit.note
    plain = build_evidence_view(run())  # the same run without focus: the decisive event is not protected
    assert items_shown(plain, plain) == 0 and Focus() == plain.focus
