"""Outcome stage: apply the official verifier outcome to judged items, then score.

Pure functions, applied after judging and never inside it, so raw and
postprocessed verdicts can both be stored and every score variant can be
recomputed from the raw verdicts (the analysis ablations depend on that).

Partial credit and Perfect read the postprocessed verdicts; evidence coverage reads the raw
ones: an assertion item that the official PASS set to Yes has no execution-log evidence of its
own, so it must not count as covered. Every score variant (PASS propagation on or off) therefore
has the same coverage.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel

from .models import ENDPOINT_ITEM_ID, ItemJudgment, Outcome

__all__ = ["Score", "partial_credit", "partial_credit_of", "postprocess", "postprocessed_verdict", "score_items"]


def postprocessed_verdict(route: str, verdict_raw: str, outcome: Outcome, *, propagate_pass: bool = True) -> str:
    """The verdict `postprocess` gives a real item: Yes for an assertion item of an official PASS (with
    `propagate_pass`), else its raw verdict."""
    return "Yes" if propagate_pass and outcome == "PASS" and route == "assertion" else verdict_raw


def partial_credit(n_yes: int, n_no: int) -> float | None:
    """Yes / (Yes + No); None when nothing was decided."""
    return n_yes / (n_yes + n_no) if n_yes + n_no else None


def partial_credit_of(
    items: Sequence[tuple[str, str]], outcome: Outcome, *, propagate_pass: bool = True, add_endpoint: bool = True,
) -> float | None:
    """`score_items(postprocess(...)).partial_credit` of real items given as ``(route, verdict_raw)``, without
    building the judgments: triage scores thousands of candidate corrections this way."""
    verdicts = [postprocessed_verdict(r, v, outcome, propagate_pass=propagate_pass) for r, v in items]
    endpoint_no = int(add_endpoint and outcome == "FAIL")
    return partial_credit(verdicts.count("Yes"), verdicts.count("No") + endpoint_no)


def postprocess(
    items: Sequence[ItemJudgment],
    outcome: Outcome,
    *,
    propagate_pass: bool = True,
    add_endpoint: bool = True,
) -> list[ItemJudgment]:
    """Official PASS → every assertion item Yes; official FAIL → a virtual endpoint item judged No.

    The two switches exist for ablations (PASS propagation alone vs the endpoint item alone).
    """
    out: list[ItemJudgment] = []
    for item in items:
        if item.item_id == ENDPOINT_ITEM_ID:
            continue  # idempotent: an endpoint from an earlier pass is rebuilt below
        verdict = postprocessed_verdict(item.route, item.verdict_raw, outcome, propagate_pass=propagate_pass)
        if verdict != item.verdict_raw:
            out.append(item.model_copy(update={"verdict": verdict, "reason": "official_pass"}))
        else:
            out.append(item.model_copy(update={"verdict": verdict}))
    if add_endpoint and outcome == "FAIL":
        out.append(
            ItemJudgment(
                item_id=ENDPOINT_ITEM_ID,
                route="endpoint",
                verdict_raw="No",
                verdict="No",
                rationale="The official verifier reported FAIL.",
                reason="official_fail",
            )
        )
    return out


class Score(BaseModel):
    """Scores of one trajectory under one judge (see the module docstring for which verdicts each reads)."""

    partial_credit: float | None
    """Yes / (Yes + No) over all items, endpoint included; None when nothing was decided."""
    evidence_coverage: float | None
    """(Yes + No) of the raw verdicts (before postprocessing) / items, endpoint excluded; None for an
    empty checklist. Raw, because a verdict filled in by the official PASS is not log evidence."""
    perfect: int
    """1 when no real item is No (endpoint excluded)."""
    perfect_with_endpoint: int
    """1 when no item at all is No, endpoint included (so 0 for every official FAIL)."""
    n_items: int
    """Real items (endpoint excluded)."""
    n_yes: int
    """Yes verdicts, endpoint included."""
    n_no: int
    """No verdicts, endpoint included."""
    n_abstain: int
    """Abstain verdicts (the endpoint is never Abstain)."""


def score_items(items: Sequence[ItemJudgment]) -> Score:
    """Partial credit and Perfect from postprocessed verdicts, evidence coverage from the raw ones."""
    real = [i for i in items if i.item_id != ENDPOINT_ITEM_ID]
    n_yes = sum(i.verdict == "Yes" for i in items)
    n_no = sum(i.verdict == "No" for i in items)
    n_abstain = sum(i.verdict == "Abstain" for i in items)
    decided_raw = sum(i.verdict_raw != "Abstain" for i in real)
    return Score(
        partial_credit=partial_credit(n_yes, n_no),
        evidence_coverage=decided_raw / len(real) if real else None,
        perfect=int(not any(i.verdict == "No" for i in real)),
        perfect_with_endpoint=int(n_no == 0),
        n_items=len(real),
        n_yes=n_yes,
        n_no=n_no,
        n_abstain=n_abstain,
    )
