"""The holistic judge's own prompt (judge-holistic-v4): no item rules, a scale with a point for "every
step done, correctness not checkable", what counts as evidence of correctness; and a reply at that
point parsed, stored, scored and mapped onto the human rating scale.

The prompt assertions read the messages as sent, so they hold whichever constants build them (on
judge-holistic-v3, built from rules/holistic.md and the item judge's rules/evidence.md, each fails).
"""

from __future__ import annotations

import pandas as pd
import pytest

from gcpc_core.analysis import alpha_table
from gcpc_core.checklist import load_rules
from gcpc_core.judge import judge_project, score_project
from gcpc_core.judge.prompts import holistic_messages, items_messages

from .conftest import holistic_reply
from .test_grounding_parsing import CHECKLIST, TASK, VIEW

UNCHECKED_LINE = ("- **0.9**: every step the task needs is visibly done, but whether the result is correct cannot "
                  "be checked from the evidence")
CORRECT_LINE = "- **1.0**: every step is visibly done and the evidence shows the results correct."


def _text() -> str:
    return "\n".join(m["content"] for m in holistic_messages(TASK, VIEW))


def test_holistic_messages_carry_no_item_rules() -> None:
    text, rules = _text(), load_rules()
    for item_rule in ("Abstain", "Yes or No", "Yes/No", "verdict", "checklist item", "each item",
                      "the item's literal value", "for an item about", "Judge the item as written"):
        assert item_rule not in text, item_rule
    for name in ("judge.md", "evidence.md"):  # no paragraph of the item judge's rules files
        paragraphs = [p.strip() for p in rules.prose[name].split("\n\n") if len(p.strip()) > 40]
        assert not [p for p in paragraphs if p in text], name
    assert "own knowledge of the right answer" not in text  # the line that collided with rating correctness
    assert "There is no checklist" in text and "Rate this run's progress" in text


def test_the_scale_has_a_point_for_done_but_unchecked_below_shown_correct() -> None:
    text = _text()
    assert UNCHECKED_LINE in text and CORRECT_LINE in text
    anchors = [float(line.split("**")[1]) for line in text.splitlines() if line.startswith("- **")
               and line.split("**")[1].replace(".", "").isdigit()]
    assert anchors == [0.0, 0.25, 0.5, 0.75, 0.9, 1.0]
    assert "a run whose every step is done stays at 0.9 when its results are unchecked" in text
    assert "A result nothing shows is unchecked, not wrong" in text


def test_the_prompt_says_what_shows_a_result_correct() -> None:
    text = " ".join(_text().split())
    shown_correct = ["a read-back of the written file", "the output of a test, a checker or a verifier-like run",
                     "a command's output showing the value"]
    not_correct = ["A tool's input (the command line, the script, the text sent to a tool) shows what was attempted",
                   "a script that exited 0 (a fill script, a converter) shows that the step ran, not that the file "
                   "it produced (a PDF, an image, a table) is right",
                   "A file written by a shell heredoc (`cat > f <<EOF`) or by a Write or Edit call and never read "
                   "back is evidence of what was written",
                   "the agent's narration", "headed \"agent's claim\""]
    for phrase in shown_correct + not_correct:
        assert phrase in text, phrase
    assert "Your own knowledge** is how you read the evidence" in text  # knowledge reads evidence, never replaces it


def test_item_prompts_keep_their_citing_rules() -> None:
    """The evidence block is shared; only its citing sentence differs, so the item prompts are unchanged."""
    user = items_messages(TASK, CHECKLIST, VIEW, load_rules())[1]["content"]
    assert ("A tool call's text shows what was attempted; for an item about an artifact or a value, cite the output "
            "or file content that shows it. Quote at least 8 non-space characters, or the item's literal value, copied "
            "from an event's text (never from a header or fence).") in user
    holistic_user = holistic_messages(TASK, VIEW)[1]["content"]
    assert user[user.index("## Evidence of the run"):user.index("A tool call's text")] == \
        holistic_user[holistic_user.index("## Evidence of the run"):holistic_user.index("A tool call's text")]


def test_a_reply_at_the_unchecked_anchor_is_parsed_stored_and_scored(fake_openai, project, make_llm) -> None:
    fake_openai.on(lambda req: "Rate this run's progress" in req["messages"][1]["content"], holistic_reply(0.9))
    report = judge_project(project, judge="holistic", llm=make_llm(), progress=False, limit=3)
    assert report.counts() == {"judged": 3, "errors": 0, "skipped": 0} and report.prompt_version == "judge-holistic-v4"
    assert {u.progress for u in project.judging.units("holistic").values()} == {0.9}
    score_project(project)
    scores = project.judging.scores(judge="holistic")
    assert len(scores) == 3 and {s.partial_credit for s in scores} == {0.9}


def test_each_anchor_lands_on_the_human_point_its_words_describe() -> None:
    """alpha_table maps a judge's 0–1 score onto the raters' 1–5 scale: the unchecked anchor is a 5 (the
    study guidelines' "every requirement appears met, as far as the record shows"), 0.75 a 4."""
    anchors, points = [0.0, 0.25, 0.5, 0.75, 0.9, 1.0], [1, 2, 3, 4, 5, 5]
    ids = [f"t{n}" for n in range(len(anchors))]
    ratings = pd.DataFrame([(t, "t", rater, point) for t, point in zip(ids, points) for rater in ("r1", "r2")],
                           columns=["trajectory_id", "task", "rater", "rating"]).assign(scale_min=1, scale_max=5)
    scores = pd.DataFrame({"trajectory_id": ids, "task": "t", "judge": "holistic", "outcome": "FAIL",
                           "partial_credit": anchors})
    alpha = alpha_table(ratings, None, scores).set_index("coders")["alpha"]
    assert alpha["humans"] == 1.0 and alpha["humans + holistic"] == pytest.approx(1.0)
    shifted = scores.assign(partial_credit=[0.0, 0.25, 0.5, 0.75, 0.85, 1.0])  # not at the anchor: a 4
    assert alpha_table(ratings, None, shifted).set_index("coders")["alpha"]["humans + holistic"] < 1.0
