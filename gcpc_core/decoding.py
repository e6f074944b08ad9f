"""Decoding bounds: tighter JSON-schema limits (`maxItems`, `maxLength`) a reply model declares for
servers that compile the schema into a grammar and constrain decoding to it.

Why: under grammar-constrained decoding a small model can keep emitting schema-valid text — a
citation list that repeats itself, a rationale that never ends — until the token bound cuts the reply
(`truncated`), at a few tokens a second on a CPU. Bounds in the grammar end a list or a string where a
useful reply ends anyway, so a reply closes well inside its token bound.

The bounds are sent only in `json_object` mode's `schema` extension field (llama-cpp-python, whose
grammar converter honours `maxItems` and `maxLength`) and in that mode's schema prompt. `parse` and
`json_schema` keep the plain schema: strict servers accept only a subset of JSON Schema, and the
length keywords are not in every server's subset. Validation never applies them either — a longer
reply from a server that was not bounded is as good a reply — so a bound can only shorten what a
bounded server writes, never turn a reply into an error.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, ClassVar

__all__ = ["ANNOTATIONS", "DecodingBounds", "bounded_schema"]


def _bound(prop: dict[str, Any], limit: int) -> None:
    if prop.get("type") == "array":
        prop["maxItems"] = limit
    elif prop.get("type") == "string":
        prop["maxLength"] = limit


ANNOTATIONS = ("title", "description")
"""Schema keywords that only annotate. Pydantic fills them from class and field names and docstrings,
which are written for developers; a small model shown them in the schema prompt copies them into its
reply as if they were evidence (seen: quotes of a reply class's docstring), so the bounded schema
leaves them out. They constrain nothing, so the grammar is the same without them."""


def _strip_annotations(node: Any) -> None:
    if isinstance(node, list):
        for value in node:
            _strip_annotations(value)
    elif isinstance(node, dict):
        for keyword in ANNOTATIONS:
            node.pop(keyword, None)
        for key in ("properties", "$defs"):  # mappings of names to schemas: a property named `title` stays
            for value in node.get(key, {}).values():
                _strip_annotations(value)
        for key in ("items", "anyOf", "allOf", "oneOf", "prefixItems"):
            if key in node:
                _strip_annotations(node[key])


def bounded_schema(schema: Mapping[str, Any], bounds: Mapping[str, int]) -> dict[str, Any]:
    """A copy of `schema` without annotations (`ANNOTATIONS`) where every object property named in
    `bounds` — at the root and in `$defs` — gets that limit: `maxItems` for an array, `maxLength` for
    a string. Properties of other types (a `$ref`, an enum) are left as they are."""
    bounded = copy.deepcopy(dict(schema))
    _strip_annotations(bounded)
    for node in (bounded, *bounded.get("$defs", {}).values()):
        for name, prop in node.get("properties", {}).items():
            if name in bounds:
                _bound(prop, bounds[name])
    return bounded


class DecodingBounds:
    """Mixin for a pydantic reply model: `decoding_bounds` maps property names to limits, and
    `decoding_schema()` is the model's JSON schema with them applied (see the module docstring)."""

    decoding_bounds: ClassVar[Mapping[str, int]] = {}

    @classmethod
    def decoding_schema(cls) -> dict[str, Any]:
        return bounded_schema(cls.model_json_schema(), cls.decoding_bounds)  # type: ignore[attr-defined]
