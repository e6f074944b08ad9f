"""What every repository of the store shares: timestamps, JSON columns, derived labels, and the
connection a repository borrows from its `Store`."""

from __future__ import annotations

import json
from collections.abc import Iterable
from contextlib import AbstractContextManager
from datetime import datetime, timezone
from typing import Any, Protocol

from sqlite_utils import Database


def utcnow() -> str:
    """ISO-8601 UTC timestamp used for every `created_at` column."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def derive_label(judge: str, model: str | None, prompt_version: str | None, rules_version: str | None) -> str:
    """The label a judge run gets when nobody names it: what makes two runs of one judge kind different.

    Deterministic, so a rerun of the same judge, model, prompt and rules resumes the same label.
    """
    return f"{judge}:{model or 'offline'}:{prompt_version or '-'}:rules-{(rules_version or '-')[:12]}"


def dumps(value: Any) -> str:
    """The JSON text of a JSON column: keys sorted, so equal values store equal text."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def decode(row: dict, *columns: str) -> dict:
    """Row with its JSON columns decoded."""
    return {**row, **{c: json.loads(row[c]) if row.get(c) else None for c in columns}}


def insert_sql(table: str, columns: tuple[str, ...], verb: str = "INSERT") -> str:
    """A fixed insert statement, prepared once and reused by executemany on the hot paths."""
    return f"{verb} INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"


def values(rows: Iterable[dict], columns: tuple[str, ...]) -> list[tuple]:
    """Row dicts as value tuples; list/dict values become JSON."""
    out = []
    for r in rows:
        vals = [r.get(c) for c in columns]
        out.append(tuple(dumps(v) if isinstance(v, (list, dict)) else v for v in vals))
    return out


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

