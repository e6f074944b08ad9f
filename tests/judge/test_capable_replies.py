"""The capable model's own item-judge replies (../shared/capable-replies, read in place; skipped when
absent) fed through today's grounding: the stricter citation rules must not throw away what a strong
judge grounded properly.

Requests 5–16 are the `gcpc` item judge, one per real trial; replies 1–4 are the checklists it judged
against. Each request is matched to its trial of the real SkillsBench sample by the event ids and kinds
its evidence shows, and every citation of its reply is checked twice: with the bare primitive (an
evidence event, the quote verbatim in it — what grounding was before the citation rules) and with
`ground_citations` under the rules.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from gcpc_core.checklist import ChecklistItem, load_rules
from gcpc_core.evidence import EvidenceView, build_evidence_view
from gcpc_core.judge import ground_items
from gcpc_core.judge.grounding import ground_citations
from gcpc_core.judge.replies import ItemJudgeReply
from gcpc_core.store import Store

pytestmark = pytest.mark.skillsbench

REPLIES = Path(__file__).resolve().parents[2].parent / "shared" / "capable-replies"
SYNTHESIS = {1: "3d-scan-calc", 2: "citation-check", 3: "azure-bgp-oscillation-route-leak", 4: "dialogue-parser"}
ITEM_REQUESTS = range(5, 17)
_HEADER = re.compile(r"^### (E\d+) · (tool_call|tool_output|file_content)\b", re.M)
_TASK = re.compile(r"^# Task (\S+)", re.M)


def _load(name: str) -> object:
    return json.loads((REPLIES / name).read_text(encoding="utf-8"))


def _checklists() -> dict[str, list[ChecklistItem]]:
    out = {}
    for n, task in SYNTHESIS.items():
        reply = _load(f"reply-{n}.json")
        reply = json.loads(reply) if isinstance(reply, str) else reply
        out[task] = [ChecklistItem.model_validate(i) for i in reply["items"]]  # type: ignore[index]
    return out


def _trial_view(store: Store, task: str, shown: dict[str, str]) -> EvidenceView:
    """The evidence view of the trial of `task` whose events match the ids and kinds the request showed."""
    for traj in store.trials.trajectories():
        if traj.task != task:
            continue
        view = build_evidence_view(store.trials.events(traj.id))
        kinds = {e.event.id: e.event.kind for e in view.entries}
        if all(kinds.get(eid) == kind for eid, kind in shown.items()):
            return view
    raise AssertionError(f"no trial of {task} shows events {sorted(shown)[:5]}…")


@pytest.fixture(scope="module")
def judged(real_master: Path) -> list[tuple[list[ChecklistItem], ItemJudgeReply, EvidenceView]]:
    if not (REPLIES / "README.md").is_file():
        pytest.skip(f"capable-model replies not found at {REPLIES}")
    checklists = _checklists()
    store = Store(real_master)
    try:
        out = []
        for n in ITEM_REQUESTS:
            request = _load(f"request-{n}.json")
            user = next(m["content"] for m in request["messages"] if m["role"] == "user")  # type: ignore[index]
            task = _TASK.search(user).group(1)  # type: ignore[union-attr]
            shown = {m.group(1): m.group(2) for m in _HEADER.finditer(user)}
            raw = _load(f"reply-{n}.json")
            reply = ItemJudgeReply.model_validate_json(raw if isinstance(raw, str) else json.dumps(raw))
            out.append((checklists[task], reply, _trial_view(store, task, shown)))
        return out
    finally:
        store.close()


def test_capable_citations_stay_grounded(judged) -> None:
    """Before the rules all 286 citations of the capable replies were grounded; after them 282 are:
    the 4 refused quote a command's text (`cat /root/mass_report.json`) for an item about a value,
    beside a citation of the output it printed. Every one of the 136 decided verdicts keeps its
    verdict (a run whose report was written by a heredoc and never read back keeps its 13 Yes: what
    a heredoc writes to a file is citable when the command did not fail)."""
    counts: Counter[str] = Counter()
    for items, reply, view in judged:
        by_id = {i.id: i for i in items}
        for entry in reply.items:
            item = by_id[entry.item_id]
            before = [c for c in entry.citations if view.get(c.event_id) and view.quote_in_event(c.event_id, c.quote)]
            after, problems = ground_citations(view, entry.citations, item)
            counts.update(p.split(": ")[1] for p in problems)
            counts["citations"] += len(entry.citations)
            counts["before"] += len(before)
            counts["after"] += len(after)
        grounded = {j.item_id: j for j in ground_items(items, reply.items, view).items}
        for entry in reply.items:
            if entry.verdict != "Abstain":
                counts["decided"] += 1
                counts["decided_kept"] += grounded[entry.item_id].verdict_raw == entry.verdict
    print(dict(counts))
    assert counts["citations"] == counts["before"], "the capable replies were all grounded before"
    assert counts["after"] == 282 and counts["command_text"] == 4, dict(counts)
    assert counts["decided_kept"] == counts["decided"], dict(counts)
