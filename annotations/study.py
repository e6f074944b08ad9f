"""Human studies over the project DB: create a frozen study, and the rater's token-scoped session.

`create_study` samples a design (`annotations.design`), freezes it with its seed, the rater
guidelines and the blinding terms into the DB, and returns each rater's secret token (only hashes
and the nonces tokens are derived from are stored: `rater_link` shows a link again with the
project's link key, `annotations.tokens`). `open_rater_session` turns a token into a `RaterSession`, the only door the rate
page has into study data: every read and write is checked against that rater's own active
assignments (writes inside the same transaction), so a rater can neither read nor answer another
rater's queue, whatever the page does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property

from gcpc_core.store import (
    AnnotationRow,
    Store,
    StudyAssignmentRow,
    StudyPairRow,
    StudyRaterRow,
    StudyRow,
    StudyUnitRow,
    utcnow,
)

from .blinding import BlindingTerms, BlindTrajectory, blind_trajectory, collect_terms
from .design import KIND_ORDER, Candidate, DesignParams, StudyDesign, check_rater_name, make_design
from .guidelines import Guidelines, load_guidelines
from .limits import ANSWER_VERSIONS_MAX, COMMENT_MAX_CHARS, free_text
from .tokens import derive_token, hash_token, invite_link, link_key, new_token
from .targets import add_annotation, annotation_target

__all__ = [
    "CHOICES",
    "HISTORY_PAGE_SIZE",
    "Answer",
    "CreatedStudy",
    "HistoryPage",
    "QueueItem",
    "RaterSession",
    "StudyInfo",
    "SubmitResult",
    "candidates",
    "create_study",
    "load_study",
    "mint_token",
    "open_rater_session",
    "preference_value",
    "project_terms",
    "rater_link",
    "rating_value",
]

CHOICES = ("A", "B", "tie")
"""Preference answers: A is the left trajectory of the pair as designed, B the right one."""
HISTORY_PAGE_SIZE = 5
"""Versions of an answer shown per page of the rater's answer history."""


def rating_value(rating: object, guidelines: Guidelines) -> dict:
    """The stored value of a progress rating, validated against the study's frozen scale."""
    if isinstance(rating, bool) or not isinstance(rating, int) or rating not in guidelines.scale_values:
        raise ValueError(f"rating must be one of {list(guidelines.scale_values)}, not {rating!r}")
    return {"rating": rating}


def preference_value(choice: object, confidence: object, guidelines: Guidelines) -> dict:
    """The stored value of a preference (confidence goes in its own column), validated."""
    if choice not in CHOICES:
        raise ValueError(f"choice must be one of {list(CHOICES)}, not {choice!r}")
    if isinstance(confidence, bool) or not isinstance(confidence, int) or confidence not in guidelines.confidence_values:
        raise ValueError(f"confidence must be one of {list(guidelines.confidence_values)}, not {confidence!r}")
    return {"choice": choice}


def _nonce_key(study_id: str, rater: str) -> str:
    return f"rater_link_nonce\0{study_id}\0{rater}"


def mint_token(store: Store, study_id: str, rater: str, apply: Callable[[str], object]) -> str:
    """A new secret for a rater: `apply(hash)` stores its hash (the rater's old link stops working),
    then the nonce it was derived from is kept so that `rater_link` can show it again."""
    nonce = new_token()
    token = derive_token(link_key(store.path), study_id, rater, nonce)
    apply(hash_token(token))
    store.project.set_meta(_nonce_key(study_id, rater), nonce)
    return token


def rater_link(store: Store, study_id: str, rater: str, base_url: str | None = None) -> str | None:
    """The rater's current link again, or None when it cannot be rebuilt (no token yet, another link key,
    a token issued some other way): then issue a new one."""
    nonce = store.project.get_meta(_nonce_key(study_id, rater))
    if nonce is None:
        return None
    token = derive_token(link_key(store.path), study_id, rater, nonce)
    found = store.studies.rater_by_token_hash(hash_token(token))
    if found is None or (found.study_id, found.rater) != (study_id, rater):
        return None
    return invite_link(token, base_url)


def project_terms(store: Store, design: StudyDesign) -> BlindingTerms:
    """The blinding terms this project's own data gives a design: every model, agent and id of the project
    (not only the sampled ones), and the skills named by the sampled trajectories and their tasks."""
    trajectories = [t for t in (store.trials.get_trajectory(u.trajectory_id) for u in design.units) if t is not None]
    return collect_terms(
        store.trials.trajectories(),
        {t.id: store.trials.events(t.id) for t in trajectories},
        [task for task in (store.trials.get_task(n) for n in design.tasks) if task is not None],
    )


def candidates(store: Store) -> list[Candidate]:
    """Every trajectory of the project as the sampler sees it."""
    return [Candidate(trajectory_id=t.id, task=t.task, outcome=t.outcome, condition=t.condition)
            for t in store.trials.trajectories()]


@dataclass(frozen=True)
class CreatedStudy:
    """A stored study and its rater tokens (rebuilt later only with the link key: `rater_link`)."""

    study_id: str
    design: StudyDesign
    tokens: dict[str, str]

    def links(self, base_url: str | None = None) -> dict[str, str]:
        return {rater: invite_link(token, base_url) for rater, token in self.tokens.items()}


def create_study(
    store: Store,
    params: DesignParams,
    *,
    study_id: str | None = None,
    name: str | None = None,
    simulated_raters: Iterable[str] = (),
    created_by: str | None = None,
    guidelines: Guidelines | None = None,
) -> CreatedStudy:
    """Sample, freeze and store a study; one transaction, so a failure stores nothing."""
    for rater in params.raters:
        check_rater_name(rater)
    design = make_design(candidates(store), params)
    simulated = set(simulated_raters)
    unknown = simulated - set(params.raters)
    if unknown:
        raise ValueError(f"simulated raters not among the raters: {sorted(unknown)}")
    study_id = study_id or f"study-{design.sha[:8]}"
    guidelines = guidelines or load_guidelines()
    terms = project_terms(store, design)
    key = link_key(store.path)
    nonces = {r: new_token() for r in params.raters if r not in simulated}
    tokens = {r: derive_token(key, study_id, r, nonce) for r, nonce in nonces.items()}
    now = utcnow()
    store.studies.insert(
        StudyRow(
            id=study_id,
            name=name or study_id,
            seed=params.seed,
            params=params.model_dump(mode="json"),
            design={"design": design.model_dump(mode="json"), "guidelines": guidelines.model_dump(mode="json"),
                    "blinding": terms.model_dump(mode="json")},
            design_sha=design.sha,
            is_simulated=bool(simulated),
            created_at=now,
            created_by=created_by,
        ),
        units=[StudyUnitRow(study_id=study_id, **u.model_dump()) for u in design.units],
        pairs=[StudyPairRow(study_id=study_id, **p.model_dump()) for p in design.pairs],
        raters=[StudyRaterRow(study_id=study_id, rater=r, token_hash=hash_token(tokens[r]) if r in tokens else None,
                              is_simulated=r in simulated, created_at=now) for r in params.raters],
        assignments=[StudyAssignmentRow(study_id=study_id, assigned_at=now, **a.model_dump())
                     for a in design.assignments],
    )
    for rater, nonce in nonces.items():
        store.project.set_meta(_nonce_key(study_id, rater), nonce)
    return CreatedStudy(study_id=study_id, design=design, tokens=tokens)


@dataclass(frozen=True)
class StudyInfo:
    """A stored study, decoded: its frozen design, guidelines and blinding terms, and its tables."""

    id: str
    name: str
    status: str
    is_simulated: bool
    created_at: str
    design: StudyDesign
    guidelines: Guidelines
    terms: BlindingTerms
    units: dict[str, StudyUnitRow] = field(repr=False)
    pairs: dict[str, StudyPairRow] = field(repr=False)

    @property
    def params(self) -> DesignParams:
        return self.design.params

    @cached_property
    def unit_of_trajectory(self) -> dict[str, str]:
        return {u.trajectory_id: uid for uid, u in self.units.items()}

    def pair_sides(self, pair_id: str) -> tuple[str, str]:
        """(left, right) trajectory ids of a pair."""
        p = self.pairs[pair_id]
        return self.units[p.left_unit].trajectory_id, self.units[p.right_unit].trajectory_id

    def task_of(self, kind: str, target: str) -> str:
        return (self.units if kind == "progress_rating" else self.pairs)[target].task


def load_study(store: Store, study_id: str) -> StudyInfo:
    row = store.studies.get(study_id)
    if row is None:
        raise KeyError(f"no study {study_id!r}")
    frozen = row.design
    return StudyInfo(
        id=row.id, name=row.name, status=row.status, is_simulated=row.is_simulated,
        created_at=row.created_at, design=StudyDesign.model_validate(frozen["design"]),
        guidelines=Guidelines.model_validate(frozen["guidelines"]), terms=BlindingTerms.model_validate(frozen["blinding"]),
        units={u.unit_id: u for u in store.studies.units(study_id)},
        pairs={p.pair_id: p for p in store.studies.pairs(study_id)},
    )


@dataclass(frozen=True)
class QueueItem:
    index: int
    kind: str
    target: str
    answered: bool


@dataclass(frozen=True)
class Answer:
    """One version of a rater's answer as the rater sees it: no row ids, tokens or other raters' data."""

    value: dict
    note: str | None
    confidence: int | None
    created_at: str

    @classmethod
    def of(cls, row: AnnotationRow) -> Answer:
        return cls(value=row.value, note=row.note, confidence=row.confidence, created_at=row.created_at)


@dataclass(frozen=True)
class HistoryPage:
    """One page of a rater's answer history, newest first."""

    versions: tuple[tuple[int, Answer], ...]
    """(version number, 1 for the first answer; the answer) of each version on the page."""
    total: int
    """How many versions the answer has."""
    page: int
    """0-based page number."""
    pages: int
    """How many pages there are (at least 1)."""


@dataclass(frozen=True)
class SubmitResult:
    row: AnnotationRow
    created: bool
    """False when the submit was a repeat (same client token, or same answer as the current one)."""


class RaterSession:
    """One rater's access to their own queue and nothing else.

    Pages get one only from `open_rater_session(token)`; trusted server code (the demo's rater
    simulator) may build one directly for a rater of its choice.
    """

    def __init__(self, store: Store, study: StudyInfo, rater: str, *, simulated: bool = False,
                 token_hash: str | None = None) -> None:
        self._store = store
        self._study = study
        self.rater = rater
        self._simulated = simulated
        self._token_hash = token_hash
        """The hash of the token the session was opened with: every save re-checks it is still the rater's."""

    @property
    def guidelines(self) -> Guidelines:
        return self._study.guidelines

    @property
    def is_open(self) -> bool:
        return self._study.status == "open"

    def _assigned(self) -> list[StudyAssignmentRow]:
        rows = self._store.studies.assignments(self._study.id, rater=self.rater)
        return sorted(rows, key=lambda a: (KIND_ORDER.index(a.kind), a.position))

    def _answered(self) -> set[tuple[str, str]]:
        rows = self._store.annotations.list(study_id=self._study.id, rater=self.rater)
        return {(r.kind, r.unit_id if r.kind == "progress_rating" else r.pair_id) for r in rows}

    def _require(self, kind: str, target: str) -> None:
        if not any(a.kind == kind and a.target == target for a in self._assigned()):
            raise PermissionError(f"{kind} {target} is not in your queue")

    def queue(self) -> list[QueueItem]:
        """Ratings first, then pairs, each in this rater's own random order."""
        done = self._answered()
        return [QueueItem(i, a.kind, a.target, (a.kind, a.target) in done)
                for i, a in enumerate(self._assigned())]

    def progress(self) -> tuple[int, int]:
        q = self.queue()
        return sum(i.answered for i in q), len(q)

    def resume_index(self, queue: Sequence[QueueItem] | None = None) -> int:
        """Where to pick up: the first unanswered item, else the last one."""
        q = self.queue() if queue is None else queue
        return next((i.index for i in q if not i.answered), max(len(q) - 1, 0))

    def _unit_ids(self, kind: str, target: str) -> tuple[str, ...]:
        if kind == "progress_rating":
            return (target,)
        p = self._study.pairs[target]
        return (p.left_unit, p.right_unit)

    def _view(self, unit_id: str, code: str) -> BlindTrajectory:
        unit = self._study.units[unit_id]
        task = self._store.trials.get_task(unit.task)
        events = self._store.trials.events(unit.trajectory_id)
        return blind_trajectory(code, task.instruction if task else "", events, self._study.terms)

    def unit_view(self, unit_id: str) -> BlindTrajectory:
        """The blinded trajectory behind a rating unit of this rater's queue."""
        self._require("progress_rating", unit_id)
        return self._view(unit_id, unit_id)

    def pair_view(self, pair_id: str) -> tuple[BlindTrajectory, BlindTrajectory]:
        """(A, B): the left and right blinded trajectories of a pair of this rater's queue."""
        self._require("preference", pair_id)
        left, right = self._unit_ids("preference", pair_id)
        return self._view(left, f"{pair_id} · A"), self._view(right, f"{pair_id} · B")

    def _target_keys(self, kind: str, target: str) -> dict:
        if kind == "progress_rating":
            return {"trajectory_id": self._study.units[target].trajectory_id, "unit_id": target}
        return {"pair_id": target}

    def _chain(self, kind: str, target: str) -> dict:
        """The store's key of this rater's versions of their answer on an item of their queue."""
        self._require(kind, target)
        return {"kind": kind, "study_id": self._study.id, "rater": self.rater,
                "target": annotation_target(kind, self._target_keys(kind, target))}

    def history(self, kind: str, target: str) -> list[Answer]:
        """This rater's versions of their answer, oldest first."""
        return [Answer.of(r) for r in self._store.annotations.history(**self._chain(kind, target))]

    def history_page(self, kind: str, target: str, page: int = 0, per_page: int = HISTORY_PAGE_SIZE) -> HistoryPage:
        """One page of this rater's versions of their answer, newest first: only that page is read, so a
        long history opens as fast as a short one."""
        chain = self._chain(kind, target)
        total = self._store.annotations.versions(**chain)
        pages = max(1, -(-total // per_page))
        page = min(max(page, 0), pages - 1)
        rows = self._store.annotations.history(**chain, newest_first=True, limit=per_page, offset=page * per_page)
        return HistoryPage(versions=tuple((total - page * per_page - i, Answer.of(r)) for i, r in enumerate(rows)),
                           total=total, page=page, pages=pages)

    def answer(self, kind: str, target: str) -> Answer | None:
        """This rater's current answer, or None."""
        rows = self._store.annotations.history(**self._chain(kind, target), newest_first=True, limit=1)
        return Answer.of(rows[0]) if rows else None

    def _submit(self, kind: str, target: str, value: dict, note: str | None, confidence: int | None,
                client_token: str | None) -> SubmitResult:
        if not self.is_open:
            raise PermissionError("this study is closed: answers can no longer be changed")
        note = free_text(note, "comment", COMMENT_MAX_CHARS)
        row, created = add_annotation(
            self._store,
            kind=kind, rater=self.rater, value=value, study_id=self._study.id, task=self._study.task_of(kind, target),
            note=note, confidence=confidence, client_token=client_token, assignment=(kind, target),
            token_hash=self._token_hash, max_versions=ANSWER_VERSIONS_MAX,
            source="simulated" if self._simulated else "app", is_simulated=self._simulated,
            **self._target_keys(kind, target),
        )
        return SubmitResult(row=row, created=created)

    def submit_rating(self, unit_id: str, rating: int, *, note: str | None = None,
                      client_token: str | None = None) -> SubmitResult:
        """Store (or revise) this rater's progress rating of a unit in their queue."""
        self._require("progress_rating", unit_id)
        return self._submit("progress_rating", unit_id, rating_value(rating, self.guidelines), note, None, client_token)

    def submit_preference(self, pair_id: str, choice: str, confidence: int, *, note: str | None = None,
                          client_token: str | None = None) -> SubmitResult:
        """Store (or revise) this rater's A/B/tie choice on a pair in their queue."""
        self._require("preference", pair_id)
        value = preference_value(choice, confidence, self.guidelines)
        return self._submit("preference", pair_id, value, note, confidence, client_token)


def open_rater_session(store: Store, token: str | None) -> RaterSession | None:
    """The session of the rater whose invitation token this is, or None for a missing or wrong token."""
    if not token or not token.strip():
        return None
    found = store.studies.rater_by_token_hash(hash_token(token))
    if found is None:
        return None
    return RaterSession(store, load_study(store, found.study_id), found.rater, simulated=found.is_simulated,
                        token_hash=hash_token(token))
