"""What an annotation is about: its `target`, the key under which one rater's answers on one thing
form a supersession chain (the store keeps the chain; this module decides what the key is made of)."""

from __future__ import annotations

from typing import Any

from gcpc_core.store import AnnotationRow, Store

TARGET_KEYS: dict[str, tuple[str, ...]] = {
    "item_audit": ("trajectory_id", "item_id", "judge"),
    "progress_rating": ("trajectory_id",),
    "preference": ("pair_id",),
}
"""Columns that say what an annotation is about; joined with `|` they form its `target`."""
TARGET_OPTIONAL: dict[str, tuple[str, ...]] = {"item_audit": ("label",)}
"""Appended to the target when set: the judge run an audit checked (an audit of a judge with no run has none)."""


def annotation_target(kind: str, keys: dict[str, Any]) -> str:
    """The `target` key of an annotation of `kind` from its key columns."""
    if kind not in TARGET_KEYS:
        raise ValueError(f"annotation kind must be one of {tuple(TARGET_KEYS)}, not {kind!r}")
    names = TARGET_KEYS[kind]
    missing = [n for n in names if not keys.get(n)]
    if missing:
        raise ValueError(f"a {kind} annotation needs {', '.join(missing)}")
    names += tuple(n for n in TARGET_OPTIONAL.get(kind, ()) if keys.get(n))
    return "|".join(str(keys[n]) for n in names)


def add_annotation(
    store: Store, *, kind: str, rater: str, value: dict, assignment: tuple[str, str] | None = None,
    token_hash: str | None = None, max_versions: int | None = None, **fields: Any,
) -> tuple[AnnotationRow, bool]:
    """Append one annotation (`fields`: its other `AnnotationRow` columns; None leaves one to its default)
    under the target its key columns make (see `store.annotations.add`, which the options go to)."""
    keys = {k: fields.get(k) for k in ("trajectory_id", "pair_id", "item_id", "judge", "label")}
    if not rater:
        raise ValueError("an annotation needs a rater")
    row = AnnotationRow(kind=kind, target=annotation_target(kind, keys), rater=rater, value=value,
                        **{k: v for k, v in fields.items() if v is not None})
    return store.annotations.add(row, assignment=assignment, token_hash=token_hash, max_versions=max_versions)
