"""Row models are their tables: on a freshly migrated DB each model's fields are its table's columns,
in order, each documented; so a migration and the model that reads and writes its table cannot drift."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import pytest
from sqlite_utils import Database

from gcpc_core.store import Store
from gcpc_core.store.common import Row


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
