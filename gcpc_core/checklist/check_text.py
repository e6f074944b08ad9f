"""Requirement text for an assertion group: what the checks require, with the literal each one checks.

The text is written from the structure `verifier_reader` found — the file, the key, the expected value,
the bound or tolerance — never from an assertion's failure message, its code or the test's name. Literals
(paths, keys, values) are put in backticks, so the gates treat them as data and a judge's Yes must show
one of them. `None` means the group says nothing the reader could put into words (an opaque check).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from typing import Any

from .verifier_reader import ANY, Check, Group, V

__all__ = ["MAX_LISTED", "check_text", "group_text", "literal", "subject_literals"]

MAX_LISTED = 8
"""Values listed in one text at most; more are counted ("and 5 more")."""
_AGGREGATES = {"min": "the minimum of", "max": "the maximum of", "mean": "the mean of", "sum": "the sum of",
               "std": "the standard deviation of", "median": "the median of", "nunique": "the number of distinct",
               "count": "the count of", "var": "the variance of"}
_MAX_LITERAL = 160


def literal(value: Any) -> str:
    """A value as an item literal: in backticks, JSON spelling for booleans and null."""
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif value is None:
        text = "null"
    elif isinstance(value, float):
        text = _number(value)
    else:
        text = str(value)
    text = " ".join(text.split())
    if len(text) > _MAX_LITERAL:
        text = text[:_MAX_LITERAL].rstrip() + "…"
    return f"`{text.replace('`', chr(39))}`"


def _number(value: float) -> str:
    if math.isfinite(value) and value == int(value) and abs(value) < 1e15:
        return str(int(value)) if abs(value) >= 1 or value == 0 else repr(value)
    return repr(value)


def _listed(values: Sequence[Any], conj: str = "and") -> str:
    shown = [literal(v) for v in values[:MAX_LISTED]]
    more = len(values) - len(shown)
    if more > 0:
        return ", ".join(shown) + f" {conj} {more} more"
    if len(shown) == 1:
        return shown[0]
    return ", ".join(shown[:-1]) + f" {conj} " + shown[-1]


def _str_keys(keys: Iterable[Any]) -> list[str]:
    return [k for k in keys if isinstance(k, str) and k != ANY]


def _where(v: V) -> str:
    return "".join(f" whose {literal(f)} is {literal(x)}" for f, x in v.where[:2])


def _flat(value: Any) -> list[Any]:
    if isinstance(value, (list, tuple, set, frozenset)):
        return [x for v in value for x in _flat(v)]
    return [value]


def _place(v: V, primary: str | None) -> str:
    """Where a value lives: `in `/path``, or the command whose output it is."""
    if v.fmt == "output" or v.kind in ("output", "returncode"):
        return f" in the output of {literal(v.name)}" if v.name else ""
    path = v.path or primary
    return f" in {literal(path)}" if path else ""


def _thing(v: V, primary: str | None) -> str | None:
    """The checked value as a noun phrase: "`key` in `/path`", "`/path`", "the output of `cmd`"."""
    if v.kind == "len" and v.inner is not None:
        return _thing(v.inner, primary)
    if v.kind == "path":
        return literal(v.path)
    if v.kind not in ("data",) or (v.path or "").startswith("/tests/"):
        return None  # a value of the verifier's own files is what is compared with, not what is checked
    keys = _str_keys(v.keys)
    agg = _AGGREGATES.get(v.name or "")
    place = _place(v, primary)
    if _row_keyed(v):
        text = literal(v.where[0][1]) + place
        return f"{agg} {text}" if agg else text
    if not keys:
        if v.fmt == "output":
            return f"the output of {literal(v.name)}" if v.name and " " in (v.name or "") else None
        path = v.path or primary
        if not path:
            return None
        return f"{agg} {literal(path)}" if agg else literal(path)
    key = keys[-1]
    if v.where and ANY in v.keys and len(keys) >= 2:
        text = f"{literal(key)} of the {literal(keys[-2])} entry{_where(v)}{place}"
        return f"{agg} {text}" if agg else text
    if len(keys) >= 2 and keys[-2] != keys[0] or (len(keys) >= 2 and ANY not in v.keys):
        text = f"{literal(key)} of {literal(keys[-2])}"
    elif ANY in v.keys and v.keys.index(ANY) < len(v.keys) - 1 and len(keys) >= 2:
        text = f"{literal(key)} of every {literal(keys[0])} entry"
    else:
        text = literal(key)
    text += _where(v) + place
    return f"{agg} {text}" if agg else text


def _row_keyed(v: V) -> bool:
    """A table read as {row key: value} (`{r["metric"]: r["value"] for r in csv.DictReader(f)}`): a row is
    named by its key, as the file shows it (`protocol_udp,310`)."""
    return v.fmt in ("csv", "xlsx", "text") and len(v.where) == 1 and isinstance(v.where[0][1], str)


def _collection(v: V, primary: str | None) -> str | None:
    """A collection as a noun phrase (for counts and membership): "`nodes` in `/path`"."""
    if v.kind == "len" and v.inner is not None:
        v = v.inner
    if (v.path or "").startswith("/tests/"):
        return None
    if v.kind != "data":
        return _thing(v, primary)
    keys = _str_keys(v.keys)
    if v.name == "mapping" and v.inner is not None:
        keys = _str_keys(v.inner.keys)[:-1] or keys
    place = _place(v, primary)
    if not keys:
        path = v.path or primary
        return literal(path) if path else None
    if ANY in v.keys and v.keys[-1] != ANY and isinstance(v.keys[-1], str) and v.name != "mapping":
        base = _str_keys(v.keys[:v.keys.index(ANY)])
        if base and base[-1] != keys[-1]:
            return f"the {literal(keys[-1])} values of {literal(base[-1])}{_where(v)}{place}"
    name = keys[-1] if ANY not in v.keys else (_str_keys(v.keys[:v.keys.index(ANY)]) or keys)[-1]
    return f"{literal(name)}{_where(v)}{place}"


def _expected(check: Check) -> str | None:
    e = check.expected
    if e is None:
        return None
    if e.is_lit:
        return literal(e.value)
    if e.kind == "data" and e.path and e.path != check.subject.path:
        return f"the value the verifier derives from {literal(e.path)}"
    return "the value the verifier computes"


def _percent(rel: float) -> str:
    pct = rel * 100
    text = f"{pct:.4g}"
    return f"{text}%"


def check_text(check: Check, primary: str | None) -> str | None:
    """One check as a requirement sentence; None when it cannot be said without code."""
    s = check.subject
    op = check.op
    if op in ("exists", "isdir", "not_exists"):
        if s.kind != "path" or not s.path:
            return None
        if op == "not_exists":
            return f"{literal(s.path)} does not exist"
        return f"{literal(s.path)} exists and is a directory" if op == "isdir" else f"{literal(s.path)} exists"
    if op == "valid_json":
        path = s.path or primary
        return f"{literal(path)} parses as valid JSON" if path else None
    if op == "returncode":
        return None
    if s.kind == "returncode":
        if op == "eq" and check.expected is not None and check.expected.is_lit and s.name:
            return f"The command {literal(s.name)} exits with status {literal(check.expected.value)}"
        return None
    if op == "defines":
        name = check.expected.value if check.expected is not None and check.expected.is_lit else None
        if not isinstance(name, str):
            return None
        path = s.path if s.kind == "data" and s.path else (primary if primary and primary.endswith(".py") else None)
        if path:
            return f"{literal(path)} defines {literal(name)}"
        if s.kind == "data" and s.fmt == "python" and s.name:
            return f"The module {literal(s.name)} defines {literal(name)}"
        return None
    if op in ("has_key", "lacks_key"):
        keys = check.expected.value if check.expected is not None and check.expected.is_lit else None
        if keys is None:
            return None
        keys = list(keys) if isinstance(keys, (list, tuple, set)) else [keys]
        owner = _owner(s, primary)
        if owner is None:
            return None
        noun = "column" if s.fmt in ("csv", "xlsx", "parquet") and not _str_keys(s.keys) else (
            "attribute" if s.fmt is None and s.kind == "unknown" else "key")
        noun += "s" if len(keys) > 1 else ""
        if op == "lacks_key":
            return f"{owner} has no {noun} {_listed(keys, 'or')}"
        return f"{owner} has the {noun} {_listed(keys)}"
    if op == "has_row":
        path = s.path or primary
        if check.expected is None or not check.expected.is_lit or not path:
            return None
        keys = _str_keys(s.keys)
        if s.fmt in ("json", "yaml") and len(keys) >= 2:
            return f"{literal(keys[-2])} in {literal(path)} has an entry whose {literal(keys[-1])} is " \
                   f"{literal(check.expected.value)}"
        return f"{literal(path)} has a row {literal(check.expected.value)}"
    if op in ("includes", "excludes"):
        if check.expected is None or not check.expected.is_lit:
            return None
        where = _collection(s, primary)
        values = check.expected.value
        values = list(values) if isinstance(values, (list, tuple, set)) else [values]
        if where is None:
            return None
        if op == "excludes":
            return f"{where} does not include {_listed(values, 'or')}"
        return f"{where} include{'s' if not where.startswith('the ') else ''} {_listed(values)}"
    if op in ("contains", "not_contains") and check.expected is not None and check.expected.kind == "data":
        where, e = _thing(s, primary), check.expected
        keys = _str_keys(e.keys)
        if where is None or not keys or not e.path:
            return None
        verb = "contains" if op == "contains" else "does not contain"
        return f"{where} {verb} the {literal(keys[-1])} value of {literal(e.path)}"
    if op in ("contains", "not_contains"):
        if check.expected is None or not check.expected.is_lit:
            return None
        values = _flat([check.expected.value, *(a.expected.value for a in check.get("alternatives", ())
                                                if a.expected is not None and a.expected.is_lit)])
        conj = "or" if check.get("alternatives") else "and"
        where = _thing(s, primary)
        if where is None:
            return None
        if op == "not_contains":
            return f"{where} does not contain {_listed(values, 'or')}"
        verb = {"startswith": "starts with", "endswith": "ends with"}.get(check.get("where"), "contains")
        return f"{where} {verb} {_listed(values, conj)}"
    if op == "matches":
        where = _thing(s, primary)
        pattern = check.get("pattern")
        if where is None or not isinstance(pattern, str):
            return None
        return f"{where} matches the pattern {literal(pattern)}"
    if s.kind in ("len", "occurrences"):
        inner = s.inner
        where = _collection(s, primary) if s.kind == "len" else (_thing(inner, primary) if inner is not None else None)
        if where is None:
            return None
        unit = "entries"
        if s.kind == "occurrences":
            unit = f"occurrences of {literal(s.value)}"
        elif inner is not None and inner.kind == "data" and inner.name in ("splitlines", "readlines", "lines"):
            unit = "lines"
        elif inner is not None and inner.kind == "data" and not _str_keys(inner.keys) and \
                inner.fmt in ("text", "output", "pdf", "docx", None) and inner.name not in ("collection", "mapping"):
            unit = "characters"
        if op == "range":
            phrase = f"has between {literal(check.get('lo'))} and {literal(check.get('hi'))} {unit}"
        else:
            if check.expected is None:
                return None
            if check.expected.is_lit:
                n = literal(check.expected.value)
                phrase = {"eq": f"has exactly {n} {unit}", "ne": f"does not have {n} {unit}",
                          "gt": f"has more than {n} {unit}", "ge": f"has at least {n} {unit}",
                          "lt": f"has fewer than {n} {unit}", "le": f"has at most {n} {unit}",
                          "approx": f"has about {n} {unit}"}.get(op)
            else:
                source = check.expected.path if check.expected.kind == "data" and check.expected.path != (
                    inner.path if inner is not None else None) else None
                ref = f"the verifier derives from {literal(source)}" if source else "the verifier computes"
                phrase = {"eq": f"has as many {unit} as {ref}", "ge": f"has at least as many {unit} as {ref}",
                          "le": f"has at most as many {unit} as {ref}", "gt": f"has more {unit} than {ref}",
                          "lt": f"has fewer {unit} than {ref}", "approx": f"has about as many {unit} as {ref}"}.get(op)
        if phrase is None:
            return None
        if where.startswith("the ") and where.endswith("values"):
            where = where[4:]
        return f"{where} {phrase}"
    if op in ("nonempty", "empty"):
        where = _collection(s, primary)
        if where is None:
            return None
        return f"{where} is {'not ' if op == 'nonempty' else ''}empty"
    thing = _thing(s, primary)
    if thing is None:
        return None
    if op == "type":
        label = check.get("type")
        if not label:
            return None
        if ANY in s.keys and _str_keys(s.keys) and " of every " not in thing:
            return f"Every {thing} is {label}"
        if not _str_keys(s.keys) and s.fmt in ("json", "yaml"):
            return f"{thing} is a {s.fmt.upper()} {label.split()[-1]}"
        return f"{thing} is {label}"
    if op in ("present", "truthy"):
        if not _str_keys(s.keys):
            return f"{thing} exists" if op == "present" and s.path else None
        return f"{thing} is set" if op == "present" else f"{thing} is true"
    if op == "absent":
        return f"{thing} is not set" if _str_keys(s.keys) else None
    if op == "one_of":
        values = check.expected.value if check.expected is not None and check.expected.is_lit else None
        if not isinstance(values, (list, tuple, set)) or not values:
            return None
        prefix = "Every " if ANY in s.keys and " of every " not in thing else ""
        return f"{prefix}{thing} is one of {_listed(sorted(values, key=str), 'or')}"
    if op == "range":
        return f"{thing} is between {literal(check.get('lo'))} and {literal(check.get('hi'))}"
    expected = _expected(check)
    if expected is None:
        return None
    if op == "eq":
        if check.expected is not None and check.expected.is_lit:
            value = check.expected.value
            if isinstance(value, (list, tuple, set, frozenset)) and value and \
                    all(isinstance(v, (str, int, float)) for v in value):
                ordered = list(value) if isinstance(value, (list, tuple)) else sorted(value, key=str)
                noun = {"columns": "the columns", "keys": "the keys"}.get(s.name or "", "")
                return f"{thing} has exactly {noun} {_listed(ordered)}" if noun else \
                    f"{thing} consists of exactly {_listed(ordered)}"
            if isinstance(value, dict):
                return None
            return f"{thing} is {expected}"
        return f"{thing} matches {expected}"
    if op == "ne":
        return f"{thing} is not {expected}"
    if op in ("gt", "ge", "lt", "le"):
        word = {"gt": "greater than", "ge": "at least", "lt": "less than", "le": "at most"}[op]
        return f"{thing} is {word} {expected}"
    if op == "approx":
        rel, tol = check.get("rel"), check.get("tol")
        if rel:
            return f"{thing} is within {_percent(rel)} of {expected}"
        if tol:
            return f"{thing} equals {expected} within {literal(tol)}"
        if check.expected is not None and check.expected.is_lit:
            return f"{thing} equals {expected} within the verifier's tolerance"
        return f"{thing} matches {expected} within the verifier's tolerance"
    return None


def _owner(s: V, primary: str | None) -> str | None:
    """What holds the keys of a `has_key` check."""
    if s.kind == "data":
        keys = _str_keys(s.keys)
        place = _place(s, primary)
        if not keys:
            path = s.path or primary
            return literal(path) if path else None
        if ANY in s.keys and s.keys[-1] == ANY:
            return f"Every {literal(keys[-1])} entry{place}"
        if isinstance(s.keys[-1], int):
            return f"The first {literal(keys[-1])} entry{place}"
        return f"{literal(keys[-1])}{place}"
    return None


def _merged(checks: Sequence[Check], primary: str | None) -> str | None:
    """One text for several checks of a group that share their form: keys listed, values listed, a range."""
    first = checks[0]
    if all(c.op == first.op for c in checks) and first.op in ("has_key", "includes", "contains", "lacks_key",
                                                               "not_contains", "excludes") and \
            all(c.subject == first.subject for c in checks) and \
            all(c.expected is not None and c.expected.is_lit for c in checks):
        values: list[Any] = []
        for c in checks:
            v = c.expected.value  # type: ignore[union-attr]
            for x in (v if isinstance(v, (list, tuple, set)) else [v]):
                if x not in values:
                    values.append(x)
        return check_text(Check(first.op, first.subject, V("lit", values), first.extra), primary)
    if all(c.op == "contains" and c.expected is not None and c.expected.kind == "data" for c in checks) and \
            len({c.expected.path for c in checks}) == 1 and all(c.subject == first.subject for c in checks):
        where = _thing(first.subject, primary)
        names = list(dict.fromkeys(k for c in checks for k in _str_keys(c.expected.keys)[-1:]))
        if where and names and first.expected.path:  # type: ignore[union-attr]
            return f"{where} contains the {_listed(names)} values of {literal(first.expected.path)}"  # type: ignore[union-attr]
    ops = {c.op for c in checks}
    if len(checks) == 2 and ops in ({"ge", "le"}, {"gt", "lt"}, {"ge", "lt"}, {"gt", "le"}) and \
            checks[0].subject == checks[1].subject and all(c.expected is not None and c.expected.is_lit for c in checks):
        lo = next(c for c in checks if c.op in ("ge", "gt")).expected.value  # type: ignore[union-attr]
        hi = next(c for c in checks if c.op in ("le", "lt")).expected.value  # type: ignore[union-attr]
        return check_text(Check("range", checks[0].subject, extra=(("lo", lo), ("hi", hi))), primary)
    if all(c.op == "eq" and c.expected is not None and c.expected.is_lit for c in checks) and len(checks) <= 3:
        parents = {tuple(_str_keys(c.subject.keys))[:-1] for c in checks}
        if len(parents) == 1 and all(_str_keys(c.subject.keys) for c in checks):
            parent = next(iter(parents))
            pairs = [f"{literal(_str_keys(c.subject.keys)[-1])} {literal(c.expected.value)}"  # type: ignore[union-attr]
                     for c in checks]
            owner = f"{literal(parent[-1])}{_place(checks[0].subject, primary)}" if parent else \
                (literal(checks[0].subject.path or primary) if (checks[0].subject.path or primary) else None)
            if owner:
                return f"{owner} has " + ", ".join(pairs[:-1]) + " and " + pairs[-1]
    return None


def group_text(group: Group, primary: str | None) -> str | None:
    """The requirement an assertion group states, or None when its checks cannot be put into words."""
    main = [c for c in group.main if c.op != "opaque"]
    if not main:
        return None
    if len(main) > 1:
        merged = _merged(main, primary)
        same = [c for c in main if c.op == main[0].op and c.subject == main[0].subject]
        if not merged and 1 < len(same) < len(main):
            merged = _merged(same, primary)
        if merged:
            return _capital(merged)
    for check in main:
        text = check_text(check, primary)
        if text:
            return _capital(text)
    for check in group.checks:
        text = check_text(check, primary)
        if text:
            return _capital(text)
    return None


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:] if text[:1].isalpha() else text


def subject_literals(group: Group) -> list[str]:
    """The literals a group names (keys, values, paths), most specific first: what its quote should name."""
    out: list[str] = []

    def add(x: Any) -> None:
        if isinstance(x, (list, tuple, set)):
            for y in x:
                add(y)
            return
        if isinstance(x, bool) or x is None:
            return
        text = str(x).strip()
        if text and text != ANY and text not in out and len(text) <= 200:
            out.append(text)

    for check in group.main:
        if check.expected is not None and check.expected.is_lit:
            add(check.expected.value)
        s = check.subject.inner if check.subject.kind == "len" and check.subject.inner is not None else check.subject
        for key in reversed(_str_keys(s.keys)):
            add(key)
    for check in group.checks:
        s = check.subject.inner if check.subject.kind == "len" and check.subject.inner is not None else check.subject
        if s.path:
            add(s.path)
            add(s.path.rsplit("/", 1)[-1])
    return [x for x in out if not re.fullmatch(r"[\W_]*", x)]
