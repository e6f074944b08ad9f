"""What every repository of the store shares: timestamps, JSON columns, derived labels, and the
connection a repository borrows from its `Store`."""

from __future__ import annotations

import json
from collections.abc import Mapping
from contextlib import AbstractContextManager
from datetime import datetime, timezone
from functools import cache
from typing import Any, ClassVar, Protocol, Self, get_args

from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic.fields import FieldInfo
from sqlite_utils import Database

PAGE_SIZE = 16384
"""Page size of a new project DB. Events (log text, ~1 KB a row on average) are most of it; with
16 KiB pages instead of SQLite's default 4 KiB, storing the import benchmark's synthetic events took
~15% less CPU and a ~12% smaller file. Import's event packs (`trials.pack_event_values`) use it too. An existing DB keeps the page size it was created with."""


def utcnow() -> str:
    """ISO-8601 UTC timestamp used for every `created_at` column."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def derive_label(judge: str, model: str | None, prompt_version: str | None, rules_version: str | None) -> str:
    """The label a judge run gets when nobody names it: what makes two runs of one judge kind different.

    Deterministic, so a rerun of the same judge, model, prompt and rules resumes the same label.
    """
    return f"{judge}:{model or 'offline'}:{prompt_version or '-'}:rules-{(rules_version or '-')[:12]}"


_JSON_COLUMN = json.JSONEncoder(ensure_ascii=False, sort_keys=True)
"""`json.dumps` with these settings builds an encoder per call; rows are encoded on hot paths."""


def dumps(value: Any) -> str:
    """The JSON text of a JSON column: keys sorted, so equal values store equal text."""
    return _JSON_COLUMN.encode(value)


def insert_sql(table: str, columns: tuple[str, ...], verb: str = "INSERT") -> str:
    """A fixed insert statement, prepared once and reused by executemany on the hot paths."""
    return f"{verb} INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"


def select_columns(model: type[BaseModel]) -> tuple[str, tuple[Any, ...]]:
    """The SELECT list that reads `model`'s fields by name, and its parameters: a column whose field has
    a default reads a NULL as that default (`coalesce(col, ?)`), so a row written by hand, or before a
    migration added the column, validates. Built once for a statement on a hot path."""
    parts, defaults = [], []
    for name, field in model.model_fields.items():
        if field.is_required() or field.default is None:
            parts.append(name)
        else:
            parts.append(f"coalesce({name}, ?) AS {name}")
            defaults.append(field.default)
    return ", ".join(parts), tuple(defaults)


class Connection(Protocol):
    """What a repository needs of its `Store`: this thread's connection and one write transaction."""

    @property
    def db(self) -> Database: ...

    def atomic(self) -> AbstractContextManager[Database]: ...


class Repository:
    """One stage's tables, read and written through the `Store` it hangs off."""

    def __init__(self, store: Connection):
        self._store = store

    @property
    def db(self) -> Database:
        return self._store.db

    def atomic(self) -> AbstractContextManager[Database]:
        return self._store.atomic()


class _Json:
    """Marks a row field stored as JSON text: `Annotated[list[dict], JSON]`."""


JSON = _Json()


@cache
def _layout(cls: type[Row]) -> tuple[tuple[str, ...], frozenset[str], frozenset[str]]:
    """A row model's columns, JSON columns and column set, worked out once per model (writes sit on
    hot paths)."""
    fields = cls.model_fields
    return tuple(fields), frozenset(n for n, f in fields.items() if any(m is JSON for m in f.metadata)), frozenset(fields)


@cache
def _json_positions(cls: type[Row]) -> tuple[int, ...]:
    """Positions of a row model's JSON columns in column order (rows are encoded on hot paths)."""
    columns, json_cols, _ = _layout(cls)
    return tuple(i for i, c in enumerate(columns) if c in json_cols)


def is_bool(field: FieldInfo) -> bool:
    """A `bool` (or `bool | None`) field: stored as the integer 0 or 1."""
    return field.annotation is bool or set(get_args(field.annotation)) == {bool, type(None)}


@cache
def _bool_positions(cls: type[Row]) -> tuple[int, ...]:
    """Positions of a row model's bool columns in column order: written as ints, which sqlite3 binds
    directly (a bool it first tries to adapt, which cost ~10% of the events' write time)."""
    return tuple(i for i, f in enumerate(cls.model_fields.values()) if is_bool(f))


class StoredRowError(ValueError):
    """A stored row GCPC would not have written (edited outside it, or damaged): named by table, column and
    value, so a page or command can say which row of which DB it cannot use instead of a traceback."""


class Row(BaseModel):
    """One table row, declared once: its fields are the table's columns (in table order), each with a
    docstring; JSON fields are marked `JSON`. Reads build a row from the stored values, writes take
    its values in column order, so no column list is written anywhere else."""

    model_config = ConfigDict(use_attribute_docstrings=True, extra="forbid")

    TABLE: ClassVar[str]

    @classmethod
    def columns(cls) -> tuple[str, ...]:
        return _layout(cls)[0]

    @classmethod
    def json_columns(cls) -> frozenset[str]:
        return _layout(cls)[1]

    @classmethod
    def decode(cls, row: Mapping[str, Any]) -> dict[str, Any]:
        """A stored row's values with its JSON columns decoded (NULL or empty text reads as None); text
        that is no JSON is refused with a StoredRowError naming the table and column."""
        data = dict(row)
        for c in cls.json_columns():
            try:
                data[c] = json.loads(data[c]) if data.get(c) else None
            except json.JSONDecodeError as exc:
                raise StoredRowError(f"{cls.TABLE}.{c} is not valid JSON ({exc})") from None
        return data

    @classmethod
    def from_db(cls, row: Mapping[str, Any]) -> Self:
        """The row as read: JSON columns decoded, 0/1 columns typed `bool` become booleans. A row edited
        outside GCPC is refused with a StoredRowError naming the table and column: text that is no JSON,
        or a value the model does not allow (with the value, shown as its repr, and pydantic's reason)."""
        data = cls.decode(row)
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            problems = "; ".join(f"{cls.TABLE}.{'.'.join(map(str, e['loc']))} = {e.get('input')!r}: {e['msg']}"
                                 for e in exc.errors())
            raise StoredRowError(f"a row edited outside GCPC: {problems}") from exc

    @classmethod
    def insert_sql(cls, verb: str = "INSERT") -> str:
        """The insert statement of every column, built from the fields (prepared once by sqlite)."""
        return insert_sql(cls.TABLE, cls.columns(), verb)

    @classmethod
    def upsert_sql(cls, *key: str) -> str:
        """The insert of every column that, when a row with the same `key` exists, updates that row in
        place instead: `INSERT OR REPLACE` would delete it first, which the rows referring to it forbid."""
        updates = ", ".join(f"{c} = excluded.{c}" for c in cls.columns() if c not in key)
        return f"{cls.insert_sql()} ON CONFLICT({', '.join(key)}) DO UPDATE SET {updates}"

    @classmethod
    def update_sql(cls, *key: str) -> str:
        """The update of every column but `key` of the row named by `key`; its parameters are
        `update_values`."""
        return (f"UPDATE {cls.TABLE} SET {', '.join(f'{c} = ?' for c in cls.columns() if c not in key)} "
                f"WHERE {' AND '.join(f'{c} = ?' for c in key)}")

    def update_values(self, *key: str) -> tuple:
        """The parameters of `update_sql(*key)`: every other column's value, then the key's."""
        values = dict(zip(self.columns(), self.db_values()))
        return (*(v for c, v in values.items() if c not in key), *(values[c] for c in key))

    @classmethod
    def values_of(cls, row: Mapping[str, Any]) -> tuple:
        """A row given as a mapping, as values in column order (JSON columns encoded, bools as 0/1); a
        key that is no column is an error, a column left out is NULL."""
        columns, json_cols, known = _layout(cls)
        if not row.keys() <= known:
            raise ValueError(f"{cls.TABLE} has no column(s) {sorted(set(row) - known)}")
        values = [row.get(c) for c in columns]
        for i in _json_positions(cls):
            if values[i] is not None:
                values[i] = dumps(values[i])
        for i in _bool_positions(cls):
            if values[i] is not None:
                values[i] = int(values[i])
        return tuple(values)

    def replaced(self, **changes: Any) -> Self:
        """A copy with `changes`, validated (pydantic's `model_copy(update=…)` is not)."""
        return self.model_validate({**self.__dict__, **changes})

    def db_values(self) -> tuple:
        """This row's values in column order, JSON columns encoded, bools as 0/1."""
        return self.values_of(self.__dict__)
