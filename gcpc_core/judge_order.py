"""What the analysis knows of the registered judges, as data: `JudgeOrder`.

The judges are registered in `judge.registry`, whose package imports every judge and the LLM layer they
call. The analysis only orders judges for display, picks the judges with item verdicts and names the
checklist-ablation pair, so it takes those facts as a value (`judge.registry.judge_order()` builds it;
the loader attaches it to the frames it reads, `analysis.frames.judge_order_of` reads it back) and
imports nothing of the judges. A leaf module: both sides import it.
"""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict

__all__ = ["JudgeOrder"]


class JudgeOrder(BaseModel):
    """The registered judges as the analysis needs them; the empty value knows no judge (names are then
    shown alphabetically, none has item verdicts and there is no checklist ablation)."""

    model_config = ConfigDict(frozen=True)

    names: tuple[str, ...] = ()
    """Registered judges in display order (the method first, then its baselines)."""
    item_judges: frozenset[str] = frozenset()
    """Registered judges with item verdicts (a rating judge has none)."""
    checklist_ablation: tuple[str, str] | None = None
    """(task-checklist judge, its fixed-checklist variant): the pair the checklist ablation compares."""

    def ordered(self, names: Iterable[str]) -> list[str]:
        """Distinct judge names in display order: registered judges first, the rest alphabetically."""
        distinct = set(names)
        known = [j for j in self.names if j in distinct]
        return known + sorted(distinct - set(known))

    def item_judges_among(self, names: Iterable[str]) -> list[str]:
        """The registered judges with item verdicts among `names`, in display order."""
        return [j for j in self.ordered(names) if j in self.item_judges]
