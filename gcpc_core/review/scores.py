"""What the scores mean, in the words the pages show beside them.

`SCORE_HELP` defines each score column in one line (the same definitions as docs/scores.md);
`score_explanation` reads one trajectory's score row back as sentences, so a reader sees why a FAIL
run can be Perfect, why Yes + No + Abstain can exceed the item count, and why a PASS run can reach
partial credit 1.0 with many items Abstain.
"""

from __future__ import annotations


from ..store import ScoreRow, Store

__all__ = ["SCORE_HELP", "score_explanation", "trajectory_score"]

SCORE_HELP: dict[str, str] = {
    "partial_credit": "Yes / (Yes + No) over the scored (postprocessed) verdicts, the endpoint item included; "
                      "Abstain is left out of the denominator.",
    "evidence_coverage": "Items the judge decided (Yes or No) from log evidence, over all items: computed from the "
                         "raw verdicts, before the official outcome is applied; the endpoint item is left out.",
    "perfect": "1 when no real item is No (the endpoint item is left out), else 0.",
    "perfect_with_endpoint": "1 when no item at all is No, the endpoint item included: 0 for every official FAIL.",
    "endpoint": "A virtual item that an official FAIL adds, judged No: the verifier's verdict counts once in partial "
                "credit.",
    "n_items": "Real checklist items (the endpoint item is not counted).",
    "n_yes": "Yes verdicts after postprocessing, the endpoint item included.",
    "n_no": "No verdicts after postprocessing, the endpoint item included.",
    "n_abstain": "Abstain verdicts (not enough evidence either way; never the endpoint).",
    "score": "The judge's partial credit for that trajectory (the holistic judge: its 0–1 progress).",
}
"""One-line definitions of the score columns, for captions and column help."""


def trajectory_score(store: Store, trajectory_id: str, judge: str, label: str | None = None) -> ScoreRow | None:
    """The stored score row of one (trajectory, judge) in its run `label` (default: the judge's default
    run); None when it has not been scored."""
    chosen = {judge: label} if label else None
    return next((r for r in store.judging.scores(judge=judge, labels=chosen) if r.trajectory_id == trajectory_id), None)


def _share(value: object) -> str:
    return "n/a" if value is None or value != value else f"{float(value):.3f}"  # type: ignore[arg-type]


def score_explanation(score: ScoreRow) -> list[str]:
    """One trajectory's scores in sentences: each value with how it was computed from the counts."""
    if not score.n_items:  # the holistic judge rates progress, with no items
        return [f"Partial credit {_share(score.partial_credit)}: the judge's overall progress rating (0–1); "
                "this judge has no checklist items."]
    n, yes, no, abstain = score.n_items, score.n_yes, score.n_no, score.n_abstain
    endpoint = score.outcome == "FAIL"
    counted = yes + no + abstain
    lines = [f"Partial credit {_share(score.partial_credit)} = {yes} Yes / ({yes} Yes + {no} No)"
             + (", the endpoint item's No included" if endpoint else "")
             + (f"; the {abstain} Abstain {'is' if abstain == 1 else 'are'} left out." if abstain else ".")]
    if endpoint:
        lines.append(f"{n} items, yet Yes + No + Abstain = {counted}: the official FAIL adds the endpoint item, a "
                     "virtual item judged No, so the verifier's verdict counts once.")
    elif score.outcome == "PASS":
        lines.append("The official PASS counts every assertion item (one mirroring a verifier test) as Yes, whatever "
                     "the judge found in the log; the other items keep the judge's verdict.")
    coverage = score.evidence_coverage
    lines.append(f"Evidence coverage {_share(coverage)}: the share of the {n} items the judge decided (Yes or No) from "
                 "log evidence, before the official outcome was applied. Low coverage means partial credit rests on "
                 "few items.")
    perfect = "1: no real item is No" if score.perfect else "0: some real item is No"
    with_end = ("0: the endpoint item is No" if endpoint and not score.perfect_with_endpoint
                else f"{score.perfect_with_endpoint}")
    lines.append(f"Perfect {perfect} (the endpoint item is left out); Perfect with endpoint {with_end}."
                 + (" A FAIL run can be Perfect: every item the checklist names is met or undecided, yet the "
                    "verifier failed it." if endpoint and score.perfect else ""))
    return lines
