"""The context budget: prompts counted before sending (the server's tokenizer, else the estimate),
evidence windowed to fit with explicit markers recorded on the judgment, and Abstain
`context_overflow` when even that cannot fit — never a silent truncation."""

from __future__ import annotations

import re

from fake_openai import FakeOpenAI, Reply
from pydantic import BaseModel

from gcpc_core.evidence import build_evidence_view
from gcpc_core.judge import judge_project
from gcpc_core.judge.budget import WINDOW_STEPS, fit_evidence
from gcpc_core.llm import count_prompt_tokens, estimate_tokens
from gcpc_core.models import Event

from .conftest import holistic_reply, is_items_request, items_reply

TRAJ = "ini-config-repair__0KnwxjT"


class Reply_(BaseModel):
    answer: str


def events(n: int, chars: int) -> list[Event]:
    return [Event(id=f"E{i}", seq=i, kind="tool_output", text=f"output {i}\n" + "x" * chars) for i in range(1, n + 1)]


def prompt(view) -> list[dict[str, str]]:
    return [{"role": "user", "content": "Judge this.\n" + view.render()}]


def fit(llm, view):
    return llm.run_sync(lambda: fit_evidence(llm, view, prompt, Reply_))


def test_without_a_window_nothing_is_counted_or_probed(fake_openai: FakeOpenAI, make_llm) -> None:
    view = build_evidence_view(events(5, 10_000))
    result = fit(make_llm(), view)
    assert result.view is view and result.note is None and result.overflow is None
    assert fake_openai.paths == []  # no tokenizer or models probe


def test_fits_as_is(fake_openai: FakeOpenAI, make_llm) -> None:
    fake_openai.serve_tokenizer()
    view = build_evidence_view(events(3, 100))
    result = fit(make_llm(context_window=8192), view)
    assert result.view is view and result.note is None
    assert "POST /extras/tokenize/count" in fake_openai.paths  # counted by the server


def test_long_outputs_are_cut_first(fake_openai: FakeOpenAI, make_llm) -> None:
    fake_openai.serve_tokenizer(chars_per_token=4)
    view = build_evidence_view(events(4, 5_000))  # ~20k chars ≈ 5k tokens
    result = fit(make_llm(context_window=4096, max_completion_tokens=512), view)
    assert result.overflow is None and "long outputs cut to" in result.note and "counted by the server" in result.note
    assert len(result.view.entries) == 4 and all(e.elided_chars for e in result.view.entries)
    assert "⟦gcpc cut: line 2 of 2 (" in result.view.render()
    assert result.note.count("(counted by the server)") == 2  # the full prompt's count and the fitted one's
    assert result.view.quote_in_event("E1", "x" * 3000)  # a windowed event stays citable in full


def test_whole_events_elided_from_the_middle_with_a_marker(fake_openai: FakeOpenAI, make_llm) -> None:
    view = build_evidence_view(events(60, 400))  # no tokenizer: the estimate
    llm = make_llm(context_window=3000, max_completion_tokens=500)
    result = fit(llm, view)
    assert result.overflow is None and "evidence events left out" in result.note
    assert result.note.count("(estimated)") == 2  # no tokenizer: both counts say they are estimates
    rendered = result.view.render()
    (gap,) = result.view.gaps  # events naming nothing in focus go oldest first: one run from the start
    assert gap.marker in rendered and "left out to fit the model's 3,000-token context window" in gap.marker
    assert gap.ids[0] == "E1" and rendered.index(gap.marker) < rendered.index("### ")  # outside every fence
    shown = [e.event.id for e in result.view.entries]
    assert shown[-1] == "E60" and not set(shown) & set(gap.ids)  # the run's end (its final state) kept
    count, exact = llm.run_sync(lambda: count_prompt_tokens(llm, prompt(result.view), Reply_))
    assert not exact and count <= 2500
    assert all(result.view.get(i) is None for i in gap.ids)  # not shown to the judge: not citable


def test_nothing_fits_is_overflow(fake_openai: FakeOpenAI, make_llm) -> None:
    view = build_evidence_view(events(3, 100))
    tiny = [{"role": "user", "content": "rules " * 5000}]
    llm = make_llm(context_window=2048)
    result = llm.run_sync(lambda: fit_evidence(llm, view, lambda v: tiny, Reply_))
    assert result.overflow and "do not fit" in result.overflow


def test_estimate_is_documented_and_pessimistic() -> None:
    assert estimate_tokens("abc" * 100) == 100
    assert WINDOW_STEPS == tuple(sorted(WINDOW_STEPS, reverse=True))


def test_judge_run_records_the_windowing_on_every_item(fake_openai: FakeOpenAI, project, make_llm) -> None:
    fake_openai.on(is_items_request, items_reply("Yes"))
    baseline = judge_project(project, judge="gcpc", llm=make_llm(), limit=1, progress=False)
    full = len(fake_openai.requests[0]["messages"][1]["content"])
    fake_openai.reset()
    fake_openai.serve_tokenizer(chars_per_token=4)
    scripted = items_reply("Yes")

    def reported(request: dict) -> Reply:
        reply = scripted(request)
        reply.usage = {"prompt_tokens": 4321, "completion_tokens": 50, "total_tokens": 4371}
        return reply

    fake_openai.on(is_items_request, reported)
    window = (full // 4) * 3 // 4 + 2048 + 1500  # the system prompt and schema fit, the evidence does not all fit
    report = judge_project(project, judge="gcpc", llm=make_llm(context_window=window, max_completion_tokens=2048),
                           limit=1, force=True, progress=False)
    assert baseline.judged == report.judged == [TRAJ]
    sent = fake_openai.requests[0]["messages"]
    # a real marker, not the prompt's explanation of one
    assert re.search(r"⟦gcpc cut: (?:lines? [\d,]+|[\d,]+ evidence events)", sent[-1]["content"])
    assert len(sent[-1]["content"]) < full
    [reply] = project.judging.replies(trajectory_id=TRAJ, judge="gcpc")[-1:]
    notes = [p for p in reply.problems if "context budget" in p]
    assert len(notes) == 8 and notes[0].startswith("I1: context budget: ")
    # the count made before sending is followed by what the server reported counting (usage)
    assert notes[0].endswith("; the server counted 4,321 prompt tokens"), notes[0]


def test_judge_run_overflow_abstains_without_sending(fake_openai: FakeOpenAI, project, make_llm) -> None:
    report = judge_project(project, judge="gcpc", llm=make_llm(context_window=600, max_completion_tokens=100),
                           limit=1, progress=False)
    assert report.judged == [TRAJ] and fake_openai.request_count == 0
    rows = project.judging.judgments(judge="gcpc", trajectory_id=TRAJ)
    assert {(r.verdict_raw, r.reason_raw) for r in rows} == {("Abstain", "context_overflow")}
    assert "do not fit" in rows[0].rationale
    [reply] = project.judging.replies(trajectory_id=TRAJ, judge="gcpc")
    assert reply.status == "context_overflow"


def test_holistic_is_budgeted_too(fake_openai: FakeOpenAI, project, make_llm) -> None:
    fake_openai.default = holistic_reply(0.5)
    report = judge_project(project, judge="holistic", llm=make_llm(context_window=600, max_completion_tokens=100),
                           limit=1, progress=False)
    assert report.verdicts == {"unrated:context_overflow": 1} and fake_openai.request_count == 0


def test_a_prompt_is_tokenized_once(fake_openai: FakeOpenAI, make_llm) -> None:
    """The server's count of a prompt is remembered: counting it again (a recount while windowing, a
    forced rerun) makes no second tokenizer request, and another prompt is counted afresh."""
    fake_openai.serve_tokenizer()
    llm = make_llm(context_window=8192)
    view = build_evidence_view(events(3, 100))
    first = llm.run_sync(lambda: count_prompt_tokens(llm, prompt(view), Reply_))
    again = llm.run_sync(lambda: count_prompt_tokens(llm, prompt(view), Reply_))
    assert first == again and first[1]
    assert fake_openai.paths.count("POST /extras/tokenize/count") == 2  # the probe's and this prompt's
    other = llm.run_sync(lambda: count_prompt_tokens(llm, prompt(build_evidence_view(events(4, 100))), Reply_))
    assert other[0] > first[0] and fake_openai.paths.count("POST /extras/tokenize/count") == 3
