"""Windowing benchmark: does a judge's windowed evidence still hold the line that decides each item?

    python bench/window_bench.py [--skillsbench ../shared/skillsbench] [--replies ../shared/capable-replies]

On the 12 real SkillsBench trials of ../shared/skillsbench, with the four checklists a strong model
wrote for their tasks (../shared/capable-replies, replies 1–4, read in place), for every assertion item:
its *deciding line* is the line, in the latest tool output or file content (not an agent's echo) whose
full text names one of the item's literals, holding that literal's last occurrence (the item's own
literals first; the literals of the verifier tests it cites when its own occur nowhere). An item whose
literals occur in no evidence event has no deciding line and is not counted. The item is *kept* when
the view the judge is sent shows that line (±40 characters around the literal).

Views measured, each in the same run:
- `default`: the evidence view at the default window (`evidence.DEFAULT_WINDOW_CHARS` per text), as
  judged when no context window is set;
- `8k`: that view fitted by `judge.budget.fit_evidence` into an 8,192-token context window for the
  `gcpc` item judge's real prompt (tokens estimated, `llm.estimate_tokens`: no server is asked).
Each with the item-aware focus (`judge.focus.focus_for`, what judging uses) and without it (plain
head-and-tail windows: the baseline). Prints kept / counted, the share, and the ratio to the baseline.
Target (issue 27): ≥ 95 % kept at the default budget with focus.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gcpc_core.checklist import Checklist, ChecklistItem, Rules, load_rules  # noqa: E402
from gcpc_core.checklist.gates import split_ref  # noqa: E402
from gcpc_core.evidence import CITABLE_KINDS, EvidenceView, Focus, build_evidence_view  # noqa: E402
from gcpc_core.ingest import import_project  # noqa: E402
from gcpc_core.judge.budget import fit_evidence  # noqa: E402
from gcpc_core.judge.focus import item_terms, focus_for, literals_of_test  # noqa: E402
from gcpc_core.judge.prompts import items_messages  # noqa: E402
from gcpc_core.judge.replies import ItemJudgeReply  # noqa: E402
from gcpc_core.llm import LLM, LLMConfig  # noqa: E402
from gcpc_core.models import Event, Task  # noqa: E402
from gcpc_core.store import Store  # noqa: E402

CONTEXT = 40
"""Characters on each side of the literal that the shown text must hold for the line to count as kept."""
SYNTHESIS_REPLIES = range(1, 5)
WINDOW_8K = 8192


@dataclass(frozen=True)
class Deciding:
    item: str
    event_id: str
    snippet: str


def recorded_checklists(replies: Path) -> dict[str, Checklist]:
    """The four checklists the strong model wrote (its synthesis replies), by task."""
    out = {}
    for n in SYNTHESIS_REPLIES:
        request = json.loads((replies / f"request-{n}.json").read_text(encoding="utf-8"))
        user = next(m["content"] for m in request["messages"] if m["role"] == "user")
        task = user.split("\n", 1)[0].removeprefix("Task id: ").strip()
        reply = json.loads((replies / f"reply-{n}.json").read_text(encoding="utf-8"))
        items = [ChecklistItem.model_validate({k: v for k, v in item.items() if k in ChecklistItem.model_fields})
                 for item in reply["items"]]
        out[task] = Checklist(task=task, source="llm:recorded capable-model reply", items=items)
    return out


def deciding_line(item: ChecklistItem, task: Task, events: list[Event], view: EvidenceView, rules: Rules) -> Deciding | None:
    """The item's deciding line (module docstring), or None when its literals occur in no evidence."""
    tests = {t.node_id: t for t in task.tests}
    own = list(item_terms(item.text, rules))
    cited = [term for ref in item.verifier_refs if (test := tests.get(split_ref(ref)[0]))
             for term in literals_of_test(task, test)]
    citable = [e for e in events if e.kind in CITABLE_KINDS and not view.is_claim(e.id)]
    for terms in (own, cited):
        if not terms:
            continue
        focus = Focus(terms=tuple(terms))
        for event in reversed(citable):
            hits = focus.term_hits(event.text)
            if hits:
                start, end, _ = hits[-1]
                line_start = event.text.rfind("\n", 0, start) + 1
                line_end = event.text.find("\n", end)
                line_end = len(event.text) if line_end < 0 else line_end
                snippet = event.text[max(line_start, start - CONTEXT):min(line_end, end + CONTEXT)]
                return Deciding(item.id, event.id, snippet)
    return None


def shows(view: EvidenceView, deciding: Deciding) -> bool:
    """Whether the view sent to the judge shows the deciding snippet in its event (or in the earlier
    identical one a repeated read points to)."""
    entries = {e.event.id: e for e in view.entries}
    entry = entries.get(deciding.event_id)
    while entry is not None and entry.duplicate_of is not None:
        entry = entries.get(entry.duplicate_of)
    return entry is not None and deciding.snippet in entry.shown


async def fitted(llm: LLM, task: Task, checklist: Checklist, view: EvidenceView, rules: Rules) -> EvidenceView:
    fit = await fit_evidence(llm, view, lambda v: items_messages(task, checklist, v, rules), ItemJudgeReply)
    return fit.view


Counts = dict[tuple[str, bool], list[int]]
"""(view, with focus?) → [kept, counted]."""


def measure(skillsbench: Path, replies: Path) -> tuple[Counts, list[str], int]:
    """(kept/counted per view, the items not kept at the default budget with focus, trials measured)."""
    rules = load_rules()
    checklists = recorded_checklists(replies)
    counts: Counts = {(view, focused): [0, 0] for view in ("default", "8k") for focused in (True, False)}
    missed: list[str] = []
    trials = 0
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp) / "bench.db")
        import_project(store, tasks_dir=skillsbench / "tasks", trials_dir=skillsbench / "trials", progress=False)
        # a closed port: no server answers, so nothing is counted but by the estimate
        llm = LLM(LLMConfig(model="bench", base_url="http://127.0.0.1:9/v1", api_key="none", timeout=1.0,
                            max_retries=0, context_window=WINDOW_8K))
        for traj in store.trials.trajectories():
            checklist = checklists.get(traj.task)
            task = store.trials.get_task(traj.task)
            if checklist is None or task is None:
                continue
            trials += 1
            events = store.trials.events(traj.id)
            plain = build_evidence_view(events)
            views = {("default", False): plain,
                     ("default", True): build_evidence_view(events, focus=focus_for(task, checklist, rules))}
            for focused in (True, False):
                views[("8k", focused)] = llm.run_sync(
                    lambda v=views[("default", focused)]: fitted(llm, task, checklist, v, rules))
            for item in checklist.items:
                if item.route != "assertion":
                    continue
                deciding = deciding_line(item, task, events, plain, rules)
                if deciding is None:
                    continue
                for key, view in views.items():
                    kept = shows(view, deciding)
                    counts[key][0] += kept
                    counts[key][1] += 1
                    if not kept and key == ("default", True):
                        missed.append(f"{traj.id} {item.id}: {deciding.event_id} {deciding.snippet[:60]!r}")
        store.close()
    return counts, missed, trials


def main(argv: list[str] | None = None) -> Counts:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--skillsbench", type=Path, default=ROOT.parent / "shared" / "skillsbench")
    parser.add_argument("--replies", type=Path, default=ROOT.parent / "shared" / "capable-replies")
    args = parser.parse_args(argv)
    for folder in (args.skillsbench, args.replies):
        if not folder.is_dir():
            sys.exit(f"window_bench: {folder} not found (the shared real data this bench reads in place)")
    started = time.perf_counter()
    counts, missed, trials = measure(args.skillsbench, args.replies)
    print(f"window_bench: {trials} trials, assertion items with a deciding line counted per view "
          f"({time.perf_counter() - started:.1f} s)")
    print(f"{'view':<10}{'focus':<10}{'kept':>6}{'counted':>9}{'share':>8}{'vs baseline':>13}")
    for view in ("default", "8k"):
        base_kept, base_n = counts[(view, False)]
        for focused in (True, False):
            kept, n = counts[(view, focused)]
            share = kept / n if n else float("nan")
            ratio = share / (base_kept / base_n) if base_kept else float("inf")
            print(f"{view:<10}{'items' if focused else 'none':<10}{kept:>6}{n:>9}{share:>8.1%}{ratio:>12.2f}×")
    for line in missed:
        print(f"  not kept (default, focus): {line}")
    return counts


if __name__ == "__main__":
    main()
