"""Judging and scores (gcpc_core.judge): labelled judge runs, their units, item judgments, replies,
scores and Batch-API submissions.

A (trajectory, judge, label) is judged once its `judge_units` row exists. That row, its item
judgments and its replies are written in one transaction, so a kill -9 never leaves half a
trajectory. Scoring rewrites postprocessed verdicts and scores; raw verdicts stay as judged.
Plain SQL with executemany here: these writes sit on the judging hot path.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Annotated, Any, ClassVar, NamedTuple

from ..models import Condition, Outcome, Route, Verdict
from .common import JSON, Repository, Row

Citations = Annotated[list[dict] | None, JSON]


class JudgeUnitRow(Row):
    """One judged (trajectory, judge, label): its row existing means the trajectory is judged."""

    TABLE: ClassVar[str] = "judge_units"

    trajectory_id: str
    """The judged trial."""
    judge: str
    """Judge kind (`gcpc`, `holistic`, `fixed`, `probe`, …)."""
    task: str
    """Task of the trial."""
    checklist_sha: str | None = None
    """Checklist judged against (None for judges without one)."""
    model: str | None = None
    """The judge's model (None offline)."""
    prompt_version: str
    """Version of the judge's prompt."""
    rules_version: str | None = None
    """Hash of `rules/` when judged."""
    content_hash: str | None = None
    """Hash of the trial's content when judged: a changed trial is stale."""
    n_items: int | None = None
    """Items judged (0 for the holistic judge)."""
    progress: float | None = None
    """Holistic progress score (0–1), None for item judges."""
    rationale: str | None = None
    """The holistic judge's rationale."""
    citations: Citations = None
    """The holistic judge's citations (`{event_id, quote}`)."""
    reason: str | None = None
    """Why the unit has no verdict of its own (e.g. `context_overflow`)."""
    run_id: str | None = None
    """The `runs` row that judged it."""
    created_at: str
    """When it was judged."""
    label: str
    """The labelled judge run it belongs to."""


class JudgmentRow(Row):
    """One judge's verdict on one item of one trajectory, raw and postprocessed."""

    TABLE: ClassVar[str] = "judgments"

    trajectory_id: str
    """The judged trial."""
    judge: str
    """Judge kind."""
    item_id: str
    """Checklist item id (`endpoint` for the virtual endpoint item)."""
    position: int | None = None
    """Position of the item in its checklist."""
    task: str
    """Task of the trial."""
    route: Route
    """Item route: `assertion`, `generated`, `judge` or `endpoint`."""
    verdict_raw: Verdict
    """Verdict as judged (after the grounding check), before postprocessing: always `Yes`, `No` or
    `Abstain`, never a model's own words. Every writer since the first schema stores an `ItemJudgment`'s
    verdict (a judge's reply is parsed into one, and kept as text only in `judge_replies.raw`), so a
    stored DB holds no other value; a row edited to another is refused on read (ValidationError)
    rather than counted as none of the three."""
    reason_raw: str | None = None
    """Reason of the raw verdict (e.g. `ungrounded`)."""
    verdict: Verdict
    """Verdict after postprocessing (the official outcome applied); `Yes`, `No` or `Abstain` as above."""
    reason: str | None = None
    """Reason of the postprocessed verdict."""
    citations: Citations = None
    """Cited evidence spans (`{event_id, quote}`)."""
    rationale: str | None = None
    """The judge's rationale."""
    checklist_sha: str | None = None
    """Checklist the item belongs to."""
    model: str | None = None
    """The judge's model."""
    prompt_version: str | None = None
    """Version of the judge's prompt."""
    rules_version: str | None = None
    """Hash of `rules/` when judged."""
    run_id: str | None = None
    """The `runs` row that judged it."""
    created_at: str
    """When it was judged."""
    scored_at: str | None = None
    """When postprocessing last wrote `verdict` (None until scored)."""
    label: str
    """The labelled judge run it belongs to."""


class JudgeReplyRow(Row):
    """One stored judge reply (the audit trail): every attempt, parsed or not."""

    TABLE: ClassVar[str] = "judge_replies"

    id: int | None = None
    """Row id (assigned on insert)."""
    trajectory_id: str
    """The judged trial."""
    judge: str
    """Judge kind."""
    run_id: str | None = None
    """The `runs` row of the call."""
    attempt: str
    """Which attempt this reply was (`first`, `repair`, …)."""
    item_id: str | None = None
    """The item a per-item request judged (None for whole-checklist requests)."""
    llm_key: str | None = None
    """Key of the request in the LLM cache."""
    cache_hit: bool | None = None
    """True when the reply came from the cache."""
    status: str
    """`ok`, or what was wrong with the reply."""
    problems: Annotated[list | None, JSON] = None
    """What validation found wrong with the reply."""
    raw: str | None = None
    """The reply's text as received."""
    created_at: str
    """When it was stored."""
    label: str
    """The labelled judge run it belongs to."""


class ScoreRow(Row):
    """Partial credit and friends of one (trajectory, judge, label), after postprocessing."""

    TABLE: ClassVar[str] = "scores"

    trajectory_id: str
    """The scored trial."""
    judge: str
    """Judge kind."""
    task: str
    """Task of the trial."""
    outcome: Outcome
    """Official outcome of the trial when scored (PASS, FAIL or unscored)."""
    condition: Condition | None = None
    """with-skills, without-skills or unknown."""
    partial_credit: float | None = None
    """Yes / (Yes + No) over postprocessed items, endpoint included (None without any)."""
    evidence_coverage: float | None = None
    """(Yes + No) of the raw verdicts / items, endpoint excluded."""
    perfect: int | None = None
    """1 when no real item is No."""
    perfect_with_endpoint: int | None = None
    """1 when no item, endpoint included, is No."""
    n_items: int | None = None
    """Items scored, endpoint included."""
    n_yes: int | None = None
    """Postprocessed Yes verdicts."""
    n_no: int | None = None
    """Postprocessed No verdicts."""
    n_abstain: int | None = None
    """Postprocessed Abstain verdicts."""
    checklist_sha: str | None = None
    """Checklist scored against."""
    model: str | None = None
    """The judge's model."""
    prompt_version: str | None = None
    """Version of the judge's prompt."""
    rules_version: str | None = None
    """Hash of `rules/` when judged."""
    run_id: str | None = None
    """The `runs` row that scored it."""
    scored_at: str
    """When it was scored."""
    label: str
    """The labelled judge run it belongs to."""


class _RunProvenance(Row):
    """What names and describes a labelled judge run."""

    judge: str
    """Judge kind."""
    label: str
    """The run's label."""
    model: str | None = None
    """The judge's model."""
    prompt_version: str | None = None
    """Version of the judge's prompt."""
    rules_version: str | None = None
    """Hash of `rules/`."""
    named: bool = False
    """A person chose the label (else it was derived from the provenance)."""
    simulated: bool = False
    """The run's verdicts were simulated, not judged (the demo's second model)."""
    note: str | None = None
    """Free text about the run."""


class JudgeLabelRow(_RunProvenance):
    """A labelled judge run, recorded once on its first save."""

    TABLE: ClassVar[str] = "judge_labels"

    created_at: str
    """When the label was first used."""


class JudgeRun(_RunProvenance):
    """A labelled run as `JudgingRepository.labels` reads it (units joined with their label row)."""

    n_trajectories: int
    """Trajectories the run judged."""
    first_at: str
    """Its first write."""
    last_at: str
    """Its latest write."""


class TrajectorySave(NamedTuple):
    """One trajectory's save (`JudgingRepository.save_trajectory_judgments`): its unit row, item
    judgment rows and replies, and how its label is recorded."""

    unit: JudgeUnitRow
    """The unit row: its label is the label of every row of the save."""
    judgments: list[JudgmentRow]
    """The item judgments."""
    replies: list[JudgeReplyRow]
    """The judge's replies (appended to the audit trail)."""
    named: bool = False
    """A person chose the label."""
    simulated: bool = False
    """The verdicts were simulated, not judged."""
    note: str | None = None
    """Free text about the run."""


class JudgeBatchRow(Row):
    """A submitted Batch-API job of one judge."""

    TABLE: ClassVar[str] = "judge_batches"

    id: str
    """The provider's batch id."""
    judge: str
    """Judge kind."""
    model: str
    """The judge's model."""
    prompt_version: str | None = None
    """Version of the judge's prompt."""
    rules_version: str | None = None
    """Hash of `rules/`."""
    status: str
    """The provider's status of the job, or ours once collected."""
    input_path: str | None = None
    """The JSONL file uploaded."""
    input_file_id: str | None = None
    """The provider's id of the uploaded file."""
    output_file_id: str | None = None
    """The provider's id of the results file."""
    error_file_id: str | None = None
    """The provider's id of the errors file."""
    n_requests: int | None = None
    """Requests in the job."""
    requests: Annotated[dict, JSON]
    """custom_id → what the request judges."""
    run_id: str | None = None
    """The `runs` row of the submission."""
    created_at: str
    """When it was submitted."""
    collected_at: str | None = None
    """When its results were stored."""
    note: str | None = None
    """What went wrong, when something did."""


_INSERT_JUDGMENT = JudgmentRow.insert_sql()
_INSERT_REPLY = JudgeReplyRow.insert_sql()
_INSERT_UNIT = JudgeUnitRow.insert_sql()
_INSERT_LABEL = JudgeLabelRow.insert_sql("INSERT OR IGNORE")
_REPLACE_SCORE = ScoreRow.insert_sql("INSERT OR REPLACE")
_INSERT_BATCH = JudgeBatchRow.insert_sql()
_UPDATE_BATCH = JudgeBatchRow.update_sql("id")
"""Judging writes are batched on the hot path: statements built once from the row models."""


def _labelled(row: JudgmentRow | JudgeReplyRow, label: str) -> tuple:
    """The row's values under `label` (copied only when it names another)."""
    return (row if row.label == label else row.replaced(label=label)).db_values()


_PROVENANCE = ", ".join(
    f"u.{name}" if name in ("judge", "label") else f"coalesce(l.{name}, 0) AS {name}" if f.annotation is bool
    else f"l.{name}" for name, f in _RunProvenance.model_fields.items())
"""`labels()` reads a run's provenance from its `judge_labels` row (a unit without one reads as not named
nor simulated); each column is named as its `JudgeRun` field."""


class JudgingRepository(Repository):
    """Labelled judge runs and everything they wrote."""

    # ---- labelled judge runs ------------------------------------------------------
    # Several labelled runs of one judge kind coexist. Reads that do not name labels see one run per
    # kind: its default label (see `default_labels`), so every view and figure shows one set per judge
    # unless a label is chosen (`labels={judge: label}`) or every run is asked for (`all_labels`).

    def labels(self) -> list[JudgeRun]:
        """Every labelled run, oldest first by its latest write: judge, label, provenance, `named`,
        `simulated`, `note`, `n_trajectories`, `first_at`, `last_at`."""
        rows = self.db.query(
            f"SELECT {_PROVENANCE}, count(*) AS n_trajectories, min(u.created_at) AS first_at,"
            " max(u.created_at) AS last_at"
            " FROM judge_units AS u LEFT JOIN judge_labels AS l ON l.judge = u.judge AND l.label = u.label"
            " GROUP BY u.judge, u.label ORDER BY max(u.created_at), max(u.rowid)"
        )
        return [JudgeRun.model_validate(r) for r in rows]

    def default_labels(self) -> dict[str, str]:
        """judge kind → its default label: the most recently written run whose verdicts a judge produced.

        A simulated run (the demo's second model) is the default only when its kind has no other run,
        so simulated verdicts never silently replace a judge's figures.
        """
        chosen: dict[str, tuple[bool, str]] = {}
        for row in self.labels():  # oldest first: a later real run wins, a simulated one never beats a real one
            held = chosen.get(row.judge)
            if held is None or not (row.simulated and not held[0]):
                chosen[row.judge] = (row.simulated, row.label)
        return {judge: label for judge, (_, label) in chosen.items()}

    def resolve_labels(self, names: Iterable[str]) -> dict[str, str]:
        """judge kind → label for labels a user typed (`NAME`, or `KIND=NAME` when NAME is ambiguous).

        Raises ValueError naming the unknown or ambiguous label and listing the labels there are.
        """
        known = self.labels()
        out: dict[str, str] = {}
        for name in names:
            kind, sep, label = name.partition("=")
            hits = [r for r in known if (r.judge, r.label) == (kind, label)] if sep else []
            hits = hits or [r for r in known if r.label == name]
            listing = ", ".join(f"{r.judge}={r.label}" for r in known) or "none: run `judge` first"
            if not hits:
                raise ValueError(f"no judge run labelled {name!r} (labels: {listing})")
            if len(hits) > 1:
                raise ValueError(f"label {name!r} names runs of several judges: write KIND=LABEL (labels: {listing})")
            hit = hits[0]
            if hit.judge in out and out[hit.judge] != hit.label:
                raise ValueError(f"two labels chosen for judge {hit.judge!r}: {out[hit.judge]!r} and {hit.label!r}")
            out[hit.judge] = hit.label
        return out

    def label_clause(self, labels: Mapping[str, str] | None, all_labels: bool) -> tuple[str | None, list[str]]:
        """WHERE clause keeping the chosen run of each judge kind (defaults, overridden by `labels`)."""
        if all_labels:
            return None, []
        chosen = {**self.default_labels(), **(labels or {})}
        if not chosen:
            return "0", []
        clause = "(" + " OR ".join("(judge = ? AND label = ?)" for _ in chosen) + ")"
        return clause, [v for pair in chosen.items() for v in pair]

    def where(self, filters: Iterable[tuple[str, Any]], labels: Mapping[str, str] | None,
               all_labels: bool) -> tuple[str | None, list[Any]]:
        clauses = [(c, v) for c, v in filters if v is not None]
        where, args = [c for c, _ in clauses], [v for _, v in clauses]
        label_where, label_args = self.label_clause(labels, all_labels)
        if label_where is not None:
            where.append(label_where)
            args += label_args
        return " AND ".join(where) or None, args

    def units(
        self, judge: str | None = None, *, labels: Mapping[str, str] | None = None,
    ) -> dict[tuple[str, str], JudgeUnitRow]:
        """(trajectory id, judge) → unit row of each judge's chosen run: what is judged already."""
        where, args = self.where([("judge = ?", judge)], labels, False)
        return {
            (r["trajectory_id"], r["judge"]): JudgeUnitRow.from_db(r)
            for r in self.db["judge_units"].rows_where(where, args, order_by="trajectory_id, judge")
        }

    def save_trajectory_judgment(
        self, unit: JudgeUnitRow, judgments: list[JudgmentRow], replies: list[JudgeReplyRow], *,
        named: bool = False, simulated: bool = False, note: str | None = None,
    ) -> None:
        """Replace one (trajectory, judge, label)'s judgments, unit row and score; append its replies.
        One transaction. Every row is stored under the unit's label (one save is one run's). The label
        is recorded on first use (`named`: a person chose it; `simulated`: the verdicts were simulated,
        not judged)."""
        self.save_trajectory_judgments([TrajectorySave(unit, judgments, replies, named, simulated, note)])

    def save_trajectory_judgments(self, saves: Iterable[TrajectorySave]) -> None:
        """`save_trajectory_judgment` for several trajectories in one transaction: a judging run stores
        its finished trajectories a group at a time (one commit each cost more than judging them).
        A (trajectory, judge, label) saved twice keeps its last save's rows and both saves' replies, as
        two saves in a row would."""
        latest: dict[tuple[str, str, str], TrajectorySave] = {}
        replies: list[tuple] = []
        labels: dict[tuple[str, str], tuple] = {}
        for save in saves:
            unit = save.unit
            key = (unit.trajectory_id, unit.judge, unit.label)
            latest.pop(key, None)  # a later save goes last, as it would have been written
            latest[key] = save
            replies += [_labelled(r, unit.label) for r in save.replies]
            if (unit.judge, unit.label) not in labels:  # recorded on first use: a later save's is ignored anyway
                labels[unit.judge, unit.label] = JudgeLabelRow(
                    judge=unit.judge, label=unit.label, model=unit.model, prompt_version=unit.prompt_version,
                    rules_version=unit.rules_version, named=save.named, simulated=save.simulated,
                    note=save.note, created_at=unit.created_at).db_values()
        units, judgments = [], []
        for save in latest.values():
            units.append(save.unit.db_values())
            judgments += [_labelled(r, save.unit.label) for r in save.judgments]
        keys = list(latest)
        with self.atomic() as db:
            for table in ("judgments", "scores", "judge_units"):
                db.conn.executemany(f"DELETE FROM {table} WHERE trajectory_id = ? AND judge = ? AND label = ?", keys)
            db.conn.executemany(_INSERT_JUDGMENT, judgments)
            db.conn.executemany(_INSERT_REPLY, replies)
            db.conn.executemany(_INSERT_UNIT, units)
            db.conn.executemany(_INSERT_LABEL, labels.values())

    def judgments(
        self, *, judge: str | None = None, trajectory_id: str | None = None,
        labels: Mapping[str, str] | None = None, all_labels: bool = False,
    ) -> list[JudgmentRow]:
        """Item judgment rows of each judge's chosen run (every run with `all_labels`),
        by trajectory, judge, label and checklist position."""
        where, args = self.where([("judge = ?", judge), ("trajectory_id = ?", trajectory_id)], labels, all_labels)
        rows = self.db["judgments"].rows_where(where, args, order_by="trajectory_id, judge, label, position")
        return [JudgmentRow.from_db(r) for r in rows]

    def replies(
        self, *, trajectory_id: str | None = None, judge: str | None = None,
        labels: Mapping[str, str] | None = None,
    ) -> list[JudgeReplyRow]:
        """Every stored reply of each judge's chosen run (the audit trail), oldest first."""
        where, args = self.where([("trajectory_id = ?", trajectory_id), ("judge = ?", judge)], labels, False)
        return [JudgeReplyRow.from_db(r) for r in self.db["judge_replies"].rows_where(where, args, order_by="id")]

    def save_scores(self, scored: Iterable[tuple[ScoreRow, list[JudgmentRow]]]) -> int:
        """Write postprocessed verdicts and scores: each entry is (score row, postprocessed judgment
        rows, endpoint included) of one (trajectory, judge, label). Raw verdicts are never touched.
        One transaction; returns the count."""
        n = 0
        with self.atomic() as db:
            for score, rows in scored:
                key = [score.trajectory_id, score.judge, score.label]
                db.execute("DELETE FROM judgments WHERE trajectory_id = ? AND judge = ? AND label = ? "
                           "AND route = 'endpoint'", key)
                real = [r for r in rows if r.route != "endpoint"]
                db.conn.executemany(
                    "UPDATE judgments SET verdict = ?, reason = ?, scored_at = ? "
                    "WHERE trajectory_id = ? AND judge = ? AND label = ? AND item_id = ?",
                    [(r.verdict, r.reason, r.scored_at, r.trajectory_id, r.judge, r.label, r.item_id) for r in real],
                )
                db.conn.executemany(_INSERT_JUDGMENT, [r.db_values() for r in rows if r.route == "endpoint"])
                db.conn.execute(_REPLACE_SCORE, score.db_values())
                n += 1
        return n

    def scores(
        self, *, judge: str | None = None, labels: Mapping[str, str] | None = None, all_labels: bool = False,
    ) -> list[ScoreRow]:
        """Score rows of each judge's chosen run (every run with `all_labels`), by trajectory, judge, label."""
        where, args = self.where([("judge = ?", judge)], labels, all_labels)
        return [ScoreRow.from_db(r) for r in self.db["scores"].rows_where(where, args, order_by="trajectory_id, judge, label")]

    def add_batch(self, row: JudgeBatchRow) -> None:
        """Record a submitted Batch-API job (`requests` maps custom_id → what it judges)."""
        with self.atomic() as db:
            db.conn.execute(_INSERT_BATCH, row.db_values())

    def update_batch(self, row: JudgeBatchRow) -> None:
        """Rewrite a recorded batch row (a new status, its output files, when it was collected, …);
        KeyError for a batch never recorded."""
        with self.atomic() as db:
            if not db.conn.execute(_UPDATE_BATCH, row.update_values("id")).rowcount:
                raise KeyError(f"no batch {row.id!r} recorded")

    def batches(self, *, status: str | None = None) -> list[JudgeBatchRow]:
        where, args = ("status = ?", [status]) if status else (None, [])
        rows = self.db["judge_batches"].rows_where(where, args, order_by="created_at, id")
        return [JudgeBatchRow.from_db(r) for r in rows]

    def get_batch(self, batch_id: str) -> JudgeBatchRow | None:
        rows = list(self.db["judge_batches"].rows_where("id = ?", [batch_id]))
        return JudgeBatchRow.from_db(rows[0]) if rows else None
