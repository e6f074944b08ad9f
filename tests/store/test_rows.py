"""Row models are their tables: on a freshly migrated DB each model's fields are its table's columns,
in order, each documented; so a migration and the model that reads and writes its table cannot drift."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import ClassVar

import pytest
from pydantic import ValidationError
from sqlite_utils import Database

from gcpc_core.models import Event, Task, Trajectory
from gcpc_core.store import EventRow, JudgmentRow, Store, StoredRowError
from gcpc_core.store.common import Row

from .helpers import replace_trajectory

STORE = Path(__file__).resolve().parents[2] / "gcpc_core" / "store"


def row_models() -> list[type[Row]]:
    """Every row model of the store that names a table (subclasses found by walking `Row`)."""
    found, todo = [], list(Row.__subclasses__())
    while todo:
        cls = todo.pop()
        todo += cls.__subclasses__()
        if getattr(cls, "TABLE", None):
            found.append(cls)
    return sorted(found, key=lambda c: c.TABLE)


def drift(model: type[Row], db: Database) -> list[str]:
    """What differs between a model and its table: a missing table, or the two column lists."""
    if not db[model.TABLE].exists():
        return [f"{model.__name__}: no table {model.TABLE!r}"]
    columns = [c.name for c in db[model.TABLE].columns]
    fields = list(model.model_fields)
    return [] if fields == columns else [f"{model.__name__}: fields {fields} != {model.TABLE} columns {columns}"]


@pytest.fixture(scope="module")
def fresh(tmp_path_factory: pytest.TempPathFactory) -> Store:
    return Store(tmp_path_factory.mktemp("rows") / "fresh.db")


def test_every_row_model_has_its_tables_columns(fresh: Store) -> None:
    models = row_models()
    assert {m.TABLE for m in models} >= {"judgments", "judge_units", "judge_replies", "scores", "judge_labels",
                                         "judge_batches", "perturbations", "runs", "llm_modes", "llm_calls", "checklists",
                                         "import_issues", "annotations", "studies", "study_units",
                                         "study_pairs", "study_raters", "study_assignments"}
    problems = [p for m in models for p in drift(m, fresh.db)]
    assert not problems, "\n".join(problems)


def test_every_table_has_a_row_model(fresh: Store) -> None:
    modelled = {m.TABLE for m in row_models()}
    tables = set(fresh.db.table_names()) - {"_sqlite_migrations"}  # sqlite-utils' record of the migrations
    assert tables - modelled == set() and modelled - tables == set()


def hand_written_columns(source: str, columns: dict[str, set[str]]) -> list[str]:
    """`line: names` for every tuple, list or set literal of three or more strings that are all columns of
    one table: a column list copied by hand rather than taken from the table's `Row` model."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)) and len(node.elts) >= 3 and all(
            isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts
        ):
            names = {e.value for e in node.elts}  # type: ignore[attr-defined]
            if any(names <= cols for cols in columns.values()):
                found.append(f"{node.lineno}: {sorted(names)}")
    return found


def test_no_column_list_is_written_by_hand_in_the_store() -> None:
    columns = {m.TABLE: set(m.columns()) for m in row_models()}
    found = {p.name: hand_written_columns(p.read_text(encoding="utf-8"), columns) for p in sorted(STORE.glob("*.py"))
             if p.name != "migrations.py"}  # the migrations are the schema as each was written
    assert {name: lines for name, lines in found.items() if lines} == {}


def test_the_column_list_check_finds_a_planted_list() -> None:
    columns = {"events": {"trajectory_id", "seq", "id", "kind"}}
    planted = 'COLUMNS = ("trajectory_id", "seq", "kind")\nTABLES = ("events", "seq", "id")\nPAIR = ("seq", "id")\n'
    assert hand_written_columns(planted, columns) == ["1: ['kind', 'seq', 'trajectory_id']"]


def test_stored_events_are_the_event_row_models_values(tmp_path: Path) -> None:
    """Import stores events from packs (`pack_event_values`), not from `EventRow`s: the rows are the same."""
    events = [Event(id="E1", seq=1, kind="tool_call", text="ls", tool_name="Bash", is_error=True, source="line 3"),
              Event(id="E2", seq=2, kind="tool_output", text="a\nb", call_id="E1", path="/x")]
    store = Store(tmp_path / "p.db")
    store.trials.upsert_task(Task(id="t", instruction="Do it.", source_path="/tasks/t"))
    replace_trajectory(store, Trajectory(id="t__1", task="t", agent="a", model="m", outcome="PASS", source_path="/t__1",
                                         log_path="agent/claude-code.txt", log_format="claude-code"), events)
    stored = store.db.execute(f"SELECT {', '.join(EventRow.columns())} FROM events ORDER BY seq").fetchall()
    assert stored == [EventRow(trajectory_id="t__1", **e.model_dump()).db_values() for e in events]


def test_a_verdict_other_than_yes_no_or_abstain_is_refused_when_read(demo_copy: Path) -> None:
    """Every GCPC writer stores an `ItemJudgment`'s verdicts, never a model's reply text (that is in
    `judge_replies.raw`): a judgments row holding another value was edited outside GCPC, and is refused
    rather than counted as no verdict at all."""
    store = Store(demo_copy)
    judged = store.judging.judgments()
    assert {r.verdict_raw for r in judged} | {r.verdict for r in judged} <= {"Yes", "No", "Abstain"}
    row = judged[0]
    with store.atomic() as db:
        db.execute("UPDATE judgments SET verdict_raw = 'Probably' WHERE trajectory_id = ? AND judge = ? AND item_id = ?",
                   [row.trajectory_id, row.judge, row.item_id])
    with pytest.raises(StoredRowError, match="verdict_raw"):
        store.judging.judgments()
    with pytest.raises(ValidationError, match="route"):
        JudgmentRow(**{**row.model_dump(), "route": "elsewhere"})
    store.close()


def test_every_field_is_documented() -> None:
    undocumented = [f"{m.__name__}.{name}" for m in row_models() for name, f in m.model_fields.items()
                    if not f.description]
    assert not undocumented


def test_the_drift_check_sees_a_missing_and_an_extra_column(fresh: Store, tmp_path: Path) -> None:
    class Short(Row):
        TABLE: ClassVar[str] = "meta"
        key: str
        """The key."""

    class Nowhere(Row):
        TABLE: ClassVar[str] = "no_such_table"

    assert drift(Short, fresh.db) == ["Short: fields ['key'] != meta columns ['key', 'value']"]
    assert drift(Nowhere, fresh.db) == ["Nowhere: no table 'no_such_table'"]


def test_a_write_naming_no_column_is_refused_and_json_round_trips(fresh: Store) -> None:
    from gcpc_core.store import JudgmentRow

    with pytest.raises(ValueError, match=r"judgments has no column\(s\) \['outcome'\]"):
        JudgmentRow.values_of({"trajectory_id": "t", "outcome": "PASS"})
    values = JudgmentRow.values_of({"trajectory_id": "t", "citations": [{"event_id": "E1", "quote": "q"}]})
    row = JudgmentRow.from_db({**dict(zip(JudgmentRow.columns(), values)), "judge": "j", "item_id": "I1", "task": "x",
                               "route": "judge", "verdict_raw": "Yes", "verdict": "Yes", "created_at": "now",
                               "label": "l"})
    assert row.citations == [{"event_id": "E1", "quote": "q"}]
