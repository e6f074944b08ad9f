"""Freezing: a checklist's identity is the sha256 of its canonical JSON.

Canonical JSON is the validated model dumped with sorted keys, no insignificant whitespace and
every field (defaults included), so the same content always hashes alike whatever the source
file's key order, formatting or omitted defaults, and any change of content changes the sha.
A frozen checklist is never edited: an edit is a new checklist with a new sha.
"""

from __future__ import annotations

import hashlib
import json

from pydantic import BaseModel, ConfigDict, model_validator

from .schema import Checklist

__all__ = ["FrozenChecklist", "canonical_json", "checklist_sha", "checklist_to_json", "freeze"]


def canonical_json(checklist: Checklist) -> str:
    """Sorted keys, compact separators, UTF-8 kept as is: the bytes the sha is taken over."""
    return json.dumps(
        checklist.model_dump(mode="json"), sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )


def checklist_sha(checklist: Checklist) -> str:
    """Full sha256 hex of the canonical JSON: the checklist's identity."""
    return hashlib.sha256(canonical_json(checklist).encode("utf-8")).hexdigest()


def checklist_to_json(checklist: Checklist, indent: int = 2) -> str:
    """Readable JSON in the checklist-file schema, fields in the order docs/design.md#the-checklist-file lists them."""
    return json.dumps(checklist.model_dump(mode="json"), indent=indent, ensure_ascii=False) + "\n"


class FrozenChecklist(BaseModel):
    """An immutable checklist with its identity; judgments record `sha`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    sha: str
    """sha256 of `canonical_json(checklist)`; validated on construction."""
    checklist: Checklist
    """The content the sha identifies."""
    rules_version: str | None = None
    """Rules version the checklist passed the gates under (provenance; not part of the sha)."""

    @model_validator(mode="after")
    def _sha_matches(self) -> FrozenChecklist:
        """A stored frozen checklist whose content no longer matches its sha is refused."""
        actual = checklist_sha(self.checklist)
        if self.sha != actual:
            raise ValueError(f"sha {self.sha} does not match the checklist content ({actual})")
        return self


def freeze(checklist: Checklist, *, rules_version: str | None = None) -> FrozenChecklist:
    """Fix a checklist's identity; call it only on a checklist that passed every gate."""
    return FrozenChecklist(sha=checklist_sha(checklist), checklist=checklist, rules_version=rules_version)
