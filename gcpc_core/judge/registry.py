"""The judges, one `JudgeSpec` each: what every stage needs to know about a judge, in one place.

A judge lives in its own module (`gcpc`, `holistic`, `fixed`, `probe`), which declares its spec
and registers it with `register_judge`; the package imports those modules in registration order,
so the registry is complete before any stage asks it. Stages never compare judge names: they ask
the spec (`calls_llm`, `has_items`, `checklist`, `version`, `judge`, `first_request`).

`JUDGES`, `LLM_JUDGES`, `ITEM_JUDGES`, `TASK_CHECKLIST_JUDGES` (registration order) and
`JUDGE_ORDER` (display order) are live views: a judge registered later appears in them at once.
`judge_order()` is the same knowledge as data (`JudgeOrder`), for the analysis, which imports no judge.
Names stored in a project DB but not registered (a judge since removed) are still shown, scored
(from their stored item verdicts) and exported; `find_judge` returns None for them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, overload

from pydantic import BaseModel

from ..checklist import Checklist, Rules
from ..evidence import EvidenceView
from ..judge_order import JudgeOrder
from ..models import Citation, ItemJudgment, Task
from .calls import Outcome
from .prompts import Messages
from .results import ReplyRecord

if TYPE_CHECKING:
    from ..llm import LLM

__all__ = [
    "ITEM_JUDGES",
    "JUDGES",
    "JUDGE_ORDER",
    "LLM_JUDGES",
    "TASK_CHECKLIST_JUDGES",
    "ChecklistKind",
    "JudgeCall",
    "JudgeSpec",
    "Verdicts",
    "checklist_ablation",
    "checklist_kind",
    "find_judge",
    "get_judge",
    "item_judges_among",
    "judge_order",
    "judge_specs",
    "ordered_judges",
    "register_judge",
    "unregister_judge",
]

ChecklistKind = Literal["task", "fixed", "none"]
"""`task`: the task's latest frozen checklist; `fixed`: the task-agnostic one of `rules/`; `none`."""


@dataclass(frozen=True)
class JudgeCall:
    """Everything one judge needs to judge one trajectory."""

    task: Task
    checklist: Checklist | None
    """The checklist its `checklist` kind names (None for `none`)."""
    view: EvidenceView
    rules: Rules
    llm: LLM | None
    """None for a judge that does not call an LLM."""
    tag: str
    """The trajectory id: labels the LLM calls."""
    per_item: bool = False
    first: Outcome | None = None
    """The first reply obtained elsewhere (a Batch-API result), validated like a live one."""


@dataclass
class Verdicts:
    """What a judge returns for one trajectory: item verdicts or a rating, and every reply."""

    items: list[ItemJudgment] = field(default_factory=list)
    replies: list[ReplyRecord] = field(default_factory=list)
    progress: float | None = None
    """A rating judge's progress in [0, 1]; None when it has none."""
    rationale: str = ""
    citations: list[Citation] = field(default_factory=list)
    reason: str | None = None
    """Why a rating is missing."""


FirstRequest = Callable[[Task, Checklist | None, EvidenceView, Rules], tuple[Messages, type[BaseModel], str]]


@dataclass(frozen=True)
class JudgeSpec:
    """One judge: how it is run, stored, scored and shown."""

    name: str
    """The name stored in every row the judge writes, and given to `--judge`."""
    order: int
    """Display order in reports and tables (lower first)."""
    calls_llm: bool
    """Whether it needs an LLM endpoint (else it runs offline and records no model)."""
    checklist: ChecklistKind
    """Which checklist it judges; a judge with none rates the trajectory as a whole (`progress`)."""
    prompt_version: str
    """Recorded with every verdict; a change re-judges (the version of the judge's semantics offline)."""
    judge: Callable[[JudgeCall], Awaitable[Verdicts]]
    """Judge one trajectory: build the requests, read and ground the replies. Raises LLMCallError when
    the endpoint fails before a usable reply."""
    first_request: FirstRequest | None = None
    """(messages, reply schema, prompt version) of the first request in the default mode: what a live
    run sends first and a Batch-API line carries. Required for an LLM judge."""
    per_item_prompt_version: str | None = None
    """The prompt version in per-item mode (`--per-item`); None when the judge has no such mode."""
    variant_of: str | None = None
    """The judge this one repeats over another checklist: the checklist ablation compares the two."""

    @property
    def has_items(self) -> bool:
        """Item verdicts (scored by partial credit) rather than one progress rating."""
        return self.checklist != "none"

    def version(self, *, per_item: bool = False) -> str:
        """The prompt version a run in this mode records."""
        return self.per_item_prompt_version if per_item and self.per_item_prompt_version else self.prompt_version


_REGISTRY: dict[str, JudgeSpec] = {}


def register_judge(spec: JudgeSpec) -> JudgeSpec:
    """Add a judge; refuses a name taken or a spec that could not run."""
    if not spec.name or not spec.name.replace("-", "").replace("_", "").isalnum():
        raise ValueError(f"judge name {spec.name!r}: use letters, digits, '-' and '_'")
    if spec.name in _REGISTRY:
        raise ValueError(f"judge {spec.name!r} is already registered")
    if spec.calls_llm and spec.first_request is None:
        raise ValueError(f"judge {spec.name!r} calls an LLM but has no first_request (Batch-API runs need it)")
    if spec.variant_of is not None and spec.variant_of not in _REGISTRY:
        raise ValueError(f"judge {spec.name!r} varies {spec.variant_of!r}, which is not registered")
    _REGISTRY[spec.name] = spec
    return spec


def unregister_judge(name: str) -> None:
    """Remove a judge (its stored rows stay and are still shown and exported)."""
    if name not in _REGISTRY:
        raise KeyError(f"judge {name!r} is not registered")
    del _REGISTRY[name]


def judge_specs() -> list[JudgeSpec]:
    """Every registered judge, in registration order."""
    return list(_REGISTRY.values())


def find_judge(name: str | None) -> JudgeSpec | None:
    """The spec of `name`, or None for a name not registered (e.g. read from an older project)."""
    return _REGISTRY.get(name or "")


def checklist_kind(name: str | None) -> ChecklistKind | None:
    """Which checklist judge `name` judges; None for a name not registered."""
    spec = find_judge(name)
    return spec.checklist if spec is not None else None


def get_judge(name: str | None) -> JudgeSpec:
    """The spec of `name`; ValueError naming the registered judges otherwise."""
    spec = find_judge(name)
    if spec is None:
        raise ValueError(f"unknown judge {name!r}; one of {', '.join(JUDGES)}")
    return spec


class _Names(Sequence[str]):
    """Names of the registered judges that satisfy `keep`, read from the registry on every use."""

    def __init__(self, keep: Callable[[JudgeSpec], bool], *, display: bool = False) -> None:
        self._keep = keep
        self._display = display

    def _names(self) -> tuple[str, ...]:
        specs = [s for s in _REGISTRY.values() if self._keep(s)]
        if self._display:
            specs.sort(key=lambda s: s.order)
        return tuple(s.name for s in specs)

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[str, ...]: ...

    def __getitem__(self, index: int | slice) -> str | tuple[str, ...]:
        return self._names()[index]

    def __len__(self) -> int:
        return len(self._names())

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __repr__(self) -> str:
        return repr(self._names())


JUDGES: Sequence[str] = _Names(lambda s: True)
LLM_JUDGES: Sequence[str] = _Names(lambda s: s.calls_llm)
ITEM_JUDGES: Sequence[str] = _Names(lambda s: s.has_items)
"""Judges with item verdicts; a rating judge cites evidence for a score, not for items."""
TASK_CHECKLIST_JUDGES: Sequence[str] = _Names(lambda s: s.checklist == "task")
"""Judges of the task's own frozen checklist: a new checklist version makes their verdicts stale."""
JUDGE_ORDER: Sequence[str] = _Names(lambda s: True, display=True)
"""Registered judges in display order (the method first, then its baselines)."""


def ordered_judges(names: Iterable[str]) -> list[str]:
    """Distinct judge names in display order: registered judges first, the rest alphabetically."""
    return judge_order().ordered(names)


def item_judges_among(names: Iterable[str]) -> list[str]:
    """The registered judges with item verdicts among `names`, in display order."""
    return judge_order().item_judges_among(names)


def _ablation() -> tuple[str, str] | None:
    for spec in _REGISTRY.values():
        base = find_judge(spec.variant_of)
        if base is not None and base.checklist == "task" and spec.checklist == "fixed":
            return base.name, spec.name
    return None


def checklist_ablation() -> tuple[str, str]:
    """(task-checklist judge, its fixed-checklist variant): the pair the checklist ablation compares."""
    pair = _ablation()
    if pair is None:
        raise LookupError("no registered judge repeats a task-checklist judge over the fixed checklist")
    return pair


def judge_order() -> JudgeOrder:
    """The registered judges now, as the data the analysis takes."""
    return JudgeOrder(names=tuple(JUDGE_ORDER), item_judges=frozenset(ITEM_JUDGES), checklist_ablation=_ablation())
