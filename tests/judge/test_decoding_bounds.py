"""Grammar bounds on the judges' and synthesis' reply schemas: sent only in `json_object` mode's
schema field and prompt (a server that constrains decoding to it, like llama-cpp-python), never in
the strict `parse` schema or the plain `json_schema` one; and never applied when a reply is
validated, so a longer reply from an unbounded server is as good a reply."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from fake_openai import Reply, format_type

from gcpc_core.checklist.synthesis import ChecklistDraft
from gcpc_core.decoding import bounded_schema
from gcpc_core.judge import judge_project
from gcpc_core.judge.replies import (
    HOLISTIC_MAX_CITATIONS,
    ITEM_MAX_CITATIONS,
    MAX_QUOTE_CHARS,
    MAX_RATIONALE_CHARS,
    HolisticReply,
    ItemJudgeReply,
    SingleItemReply,
)
from gcpc_core.llm import chat_request_body

from .conftest import first_citation, is_items_request, item_ids

TRAJ = "ini-config-repair__0KnwxjT"
BOUND_KEYWORDS = ("maxItems", "maxLength")
REPLY_MODELS = (SingleItemReply, ItemJudgeReply, HolisticReply, ChecklistDraft)


def keywords(schema: Any) -> Iterator[str]:
    """Every key anywhere in a JSON schema."""
    if isinstance(schema, dict):
        for key, value in schema.items():
            yield key
            yield from keywords(value)
    elif isinstance(schema, list):
        for value in schema:
            yield from keywords(value)


def body(model: type, mode: str) -> dict[str, Any]:
    return chat_request_body(model="m", messages=[{"role": "user", "content": "judge"}], response_model=model,
                             mode=mode, temperature=None)  # type: ignore[arg-type]


@pytest.mark.parametrize("model", REPLY_MODELS, ids=lambda m: m.__name__)
def test_bounds_only_in_the_json_object_schema(model: type) -> None:
    parse = body(model, "parse")["response_format"]["json_schema"]["schema"]
    plain = body(model, "json_schema")["response_format"]["json_schema"]["schema"]
    assert not set(BOUND_KEYWORDS) & set(keywords(parse))
    assert not set(BOUND_KEYWORDS) & set(keywords(plain))
    assert plain == model.model_json_schema()
    bounded = body(model, "json_object")
    schema = bounded["response_format"]["schema"]
    assert schema == model.decoding_schema() and set(BOUND_KEYWORDS) <= set(keywords(schema))
    assert '"maxItems"' in bounded["messages"][0]["content"]  # the schema prompt shows the same bounds


def test_judge_bounds_are_where_the_loops_were() -> None:
    single = SingleItemReply.decoding_schema()
    assert single["properties"]["citations"]["maxItems"] == ITEM_MAX_CITATIONS
    assert single["properties"]["rationale"]["maxLength"] == MAX_RATIONALE_CHARS
    assert single["$defs"]["Citation"]["properties"]["quote"]["maxLength"] == MAX_QUOTE_CHARS
    items = ItemJudgeReply.decoding_schema()
    assert items["$defs"]["ItemVerdictReply"]["properties"]["citations"]["maxItems"] == ITEM_MAX_CITATIONS
    assert HolisticReply.decoding_schema()["properties"]["citations"]["maxItems"] == HOLISTIC_MAX_CITATIONS
    assert "maxLength" not in HolisticReply.decoding_schema()["properties"]["progress"]  # a number: untouched


def test_the_bounded_schema_drops_annotations_a_small_model_would_copy() -> None:
    """Docstrings become schema descriptions; the tiny model quoted them as evidence."""
    assert "description" in json.dumps(HolisticReply.model_json_schema())
    for model in REPLY_MODELS:
        assert not {"title", "description"} & set(keywords(model.decoding_schema()))
    named = bounded_schema({"type": "object", "title": "T", "properties": {"title": {"type": "string", "title": "Title"}}},
                           {"title": 5})
    assert named == {"type": "object", "properties": {"title": {"type": "string", "maxLength": 5}}}


def test_validation_does_not_apply_the_bounds() -> None:
    long = {"event_id": "E1", "quote": "q" * (3 * MAX_QUOTE_CHARS)}
    reply = SingleItemReply.model_validate(
        {"citations": [long] * (ITEM_MAX_CITATIONS + 4), "rationale": "r" * (3 * MAX_RATIONALE_CHARS), "verdict": "No"})
    assert len(reply.citations) == ITEM_MAX_CITATIONS + 4


def verbose_reply(request: dict[str, Any]) -> Reply:
    """What an unbounded server may write: more citations and a longer rationale than the bounds."""
    citation = first_citation(request)
    assert citation is not None
    items = [{"item_id": i, "citations": [citation] * (ITEM_MAX_CITATIONS + 2),
              "rationale": "because " * MAX_RATIONALE_CHARS, "verdict": "Yes"} for i in item_ids(request)]
    return Reply.json({"items": items})


def test_an_unbounded_server_negotiated_to_parse_is_not_sent_bounds(fake_openai, project, make_llm) -> None:
    fake_openai.on(is_items_request, verbose_reply)
    report = judge_project(project, judge="gcpc", llm=make_llm(structured_mode="auto"), limit=1, progress=False)
    assert report.judged == [TRAJ] and [format_type(r) for r in fake_openai.requests] == ["json_schema"]
    assert not set(BOUND_KEYWORDS) & set(keywords(fake_openai.requests[0]["response_format"]))
    verdicts = {(j.verdict_raw, j.reason_raw) for j in project.judging.judgments(judge="gcpc", trajectory_id=TRAJ)}
    assert verdicts == {("Yes", None)}  # the long reply is a good reply, not a schema error


def test_a_llama_cpp_python_like_server_gets_the_bounds(fake_openai, project, make_llm) -> None:
    fake_openai.accept_formats({"text", "json_object"})
    fake_openai.on(is_items_request, verbose_reply)
    report = judge_project(project, judge="gcpc", llm=make_llm(structured_mode="auto", max_retries=0), limit=1,
                           progress=False)
    assert report.judged == [TRAJ]
    assert [format_type(r) for r in fake_openai.requests] == ["json_schema", "json_schema", "json_object"]
    sent = fake_openai.requests[-1]
    assert sent["response_format"]["schema"] == ItemJudgeReply.decoding_schema()
    assert json.dumps(ItemJudgeReply.decoding_schema(), sort_keys=True, separators=(",", ":")) in sent["messages"][0]["content"]


def test_an_item_over_five_entries_can_cite_each_one() -> None:
    """Issue 27: an item naming five titles needs five quotes; the grammar, both item prompts and the
    reply models allow five citations, and the item prompt versions moved on (no cached v3 reply reused)."""
    from gcpc_core.judge import prompts

    assert ITEM_MAX_CITATIONS == 5
    assert SingleItemReply.decoding_schema()["properties"]["citations"]["maxItems"] == 5
    assert ItemJudgeReply.decoding_schema()["$defs"]["ItemVerdictReply"]["properties"]["citations"]["maxItems"] == 5
    for template in (prompts.ITEMS_USER_PROMPT, prompts.PER_ITEM_USER_PROMPT):
        assert "{max_citations} citations" in template
    assert prompts.ITEMS_PROMPT_VERSION == "judge-items-v5"
    assert prompts.PER_ITEM_PROMPT_VERSION == "judge-per-item-v5"
