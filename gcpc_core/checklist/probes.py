"""Probes derived from verifier checks: regular expressions over the evidence that decide an assertion item.

Where a test checks a literal in an output file or a command's output, the file or output, when a run shows
it (a written file, a `cat`, a printed table), holds that literal next to its key. A probe looks for exactly
that: `yes` when the key is followed by the expected value (a number within the test's tolerance, the
expected string, `true`), `no` when the same key is followed by a different value of the same kind. The
probe judge lets the latest matching event decide (`gcpc_core/judge/probe.py`).

Forms (`K` the key, `V` the expected value; between them one of `: = , |`, a tab or spaces on one line,
quotes allowed, so JSON, a Python dict, a CSV row, YAML and a printed table all match):

- a value: `K` then `V` (yes), `K` then another value of the same kind (no; a zero, what code initializes a
  value with, is never a no); inside a named parent object (`"solution X": {… "resolved": false`) when the key
  occurs under several parents; a table row by its key (`protocol_udp,310`);
- a number within a tolerance, a range or a bound: an exact decimal comparison written out as a regex
  (`compare`, `number_band`), and no for a number outside (a wider band when the tolerance is the verifier's
  own helper);
- an element of a list (`"fake_citations": [… "A title"`), a field of list entries (`"speaker": "Kira"`), a
  count of a short list, keys (all of them in one event), CSV columns (one header line), a name a module
  defines (`def sinkhorn_knopp`);
- a file's existence: its full path listed (`ls -l`) or reported saved, its JSON content shown (yes), shown
  missing (`No such file`, no); any check of an output file: the file shown missing, the key shown `null`
  (no);
- a text a file must contain, when the text is specific (not a short word), and a regex the test searches for.

A group whose requirements do not all have a yes keeps only its no probes. A probe is refused when it
matches instruction.md: the instruction's own example (`"material_id": 42`) is no evidence of a run. A probe
matching the example is first narrowed past the example's value; when the example is the answer, anchored to
an event that also shows a value the verifier expects in the same file and the instruction never shows; else
it is dropped.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from decimal import Decimal
from typing import Any

from .schema import Probe
from .verifier_reader import ANY, Check, Group, TestReading, V

__all__ = ["MAX_PROBES", "check_probes", "compare", "file_anchors", "file_probes", "group_probes", "number_band", "refused",
           "value_pattern"]

MAX_PROBES = 8
"""Probes per assertion group at most (a group of many checks keeps the first ones)."""

_SEP = r"""["']?[ \t]*(?:[:=,|\t][ \t]*|[ \t]+)["']?"""
"""Between a key and its value: JSON `": "`, a dict `': '`, CSV `,`, YAML `: `, a table's spaces."""
_BEFORE_KEY = r"(?<![\w.-])[\"']?"
_MISSING = r"(?:No such file or directory|cannot access|can't open|cannot open|does not exist|not found)"
_SAVED = r"(?:[Ss]aved|[Ww]ritten|[Ww]rote|[Cc]reated|[Gg]enerated|[Ee]xported)"
_START = r"(?<![\w.-])"
_END = r"(?!\.?\d)"
_ANY_NUMBER = _START + r"-?\d+(?:\.\d+)?" + _END
_UNSIGNED = r"\d+(?:\.\d+)?"


def _esc(text: str) -> str:
    """`re.escape`, spaces left as they are (probes are read by people reviewing a draft)."""
    return re.escape(text).replace("\\ ", " ")


def _key(key: str) -> str:
    return _BEFORE_KEY + _esc(key)


def _digits(x: float | int) -> tuple[str, str]:
    """A non-negative number as (integer digits, fraction digits without trailing zeros)."""
    text = format(Decimal(x) if isinstance(x, int) else Decimal(repr(float(x))), "f")
    whole, _, frac = text.partition(".")
    return whole.lstrip("0") or "0", frac.rstrip("0")


def _int_greater(whole: str) -> str:
    n = len(whole)
    parts = [rf"[1-9]\d{{{n},}}"]
    for p in range(n):
        d = int(whole[p])
        if d < 9:
            parts.append(re.escape(whole[:p]) + f"[{d + 1}-9]" + (rf"\d{{{n - p - 1}}}" if n - p - 1 else ""))
    return "|".join(parts)


def _int_less(whole: str) -> str | None:
    n = len(whole)
    parts = []
    if n > 1:
        parts += ["0", rf"[1-9]\d{{0,{n - 2}}}" if n > 2 else "[1-9]"]
    for p in range(n):
        d = int(whole[p])
        lo = 1 if p == 0 and n > 1 else 0
        if d > lo:
            parts.append(re.escape(whole[:p]) + (f"[{lo}-{d - 1}]" if d - 1 > lo else f"{lo}")
                         + (rf"\d{{{n - p - 1}}}" if n - p - 1 else ""))
    return "|".join(parts) or None


def _frac_greater(frac: str, strict: bool) -> str:
    parts = [re.escape(frac[:p]) + f"[{int(frac[p]) + 1}-9]" + r"\d*" for p in range(len(frac)) if frac[p] != "9"]
    parts.append(re.escape(frac) + (r"\d*[1-9]\d*" if strict else r"\d*"))
    return "|".join(parts)


def _frac_less(frac: str, strict: bool) -> str:
    parts = []
    for p in range(len(frac)):
        d = int(frac[p])
        if d > 0:
            parts.append(re.escape(frac[:p]) + (f"[0-{d - 1}]" if d > 1 else "0") + r"\d*")
        parts.append(re.escape(frac[:p]) + "0*")
    if not strict:
        parts.append(re.escape(frac) + "0*")
    return "|".join(parts)


def _magnitude(x: float | int, op: str) -> str | None:
    """Unsigned decimal numbers whose value compares to `x` ≥ 0 as `op` (`ge`, `gt`, `le`, `lt`)."""
    whole, frac = _digits(x)
    w = re.escape(whole)
    if op in ("ge", "gt"):
        strict = op == "gt"
        alts = [f"(?:{_int_greater(whole)})(?:\\.\\d+)?",
                w + (rf"\.(?:{_frac_greater(frac, strict)})" if frac else
                     (r"\.\d*[1-9]\d*" if strict else r"(?:\.\d+)?"))]
        return "|".join(alts)
    strict = op == "lt"
    alts = []
    less = _int_less(whole)
    if less:
        alts.append(f"(?:{less})(?:\\.\\d+)?")
    if frac:
        alts.append(w + rf"(?:\.(?:{_frac_less(frac, strict)}))?")
    elif not strict:
        alts.append(w + r"(?:\.0+)?")
    return "|".join(alts) or None


def compare(x: float | int, op: str) -> str | None:
    """A regex matching exactly the decimal numbers (optional sign and fraction, no exponent) that compare to
    `x` as `op` (`ge`, `gt`, `le`, `lt`), each as a whole number of the text (not digits inside another)."""
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x) or abs(x) >= 1e15:
        return None
    if x >= 0:
        mag = _magnitude(x, op)
        alts = [mag] if op in ("ge", "gt") else ["-" + _UNSIGNED, mag]
    else:
        mag = _magnitude(-x, {"ge": "le", "gt": "lt", "le": "ge", "lt": "gt"}[op])
        signed = f"-(?:{mag})" if mag else None
        alts = [_UNSIGNED, signed] if op in ("ge", "gt") else [signed]
    alts = [a for a in alts if a]
    return _START + "(?:" + "|".join(alts) + ")" + _END if alts else None


def number_band(lo: float, hi: float) -> str | None:
    """A regex matching exactly the decimal numbers in [lo, hi], each as a whole number of the text."""
    low, high = compare(lo, "ge"), compare(hi, "le")
    if low is None or high is None or hi < lo:
        return None
    return f"(?={low}){high}"


_ZERO = _START + r"-?0(?:\.0+)?" + _END


def _outside(lo: float, hi: float) -> str | None:
    """Numbers below `lo` or above `hi`, zero left out unless it is in range's neighbourhood: a 0 is what code
    initializes a value with (`'count': 0,`), not what a run reports."""
    parts = [f"(?={b}){_ANY_NUMBER}" for b in (compare(lo, "lt"), compare(hi, "gt")) if b]
    if not parts:
        return None
    return f"(?!{_ZERO})(?:" + "|".join(parts) + ")"


def _exact_number(value: float | int) -> str:
    """The number itself, trailing zeros of its fraction allowed (`26092`, `26092.0`)."""
    return number_band(value, value) or re.escape(str(value))


def value_pattern(check: Check) -> tuple[str, str | None] | None:
    """(yes value regex, no value regex) for a check's expected value; None when the value cannot be matched."""
    e = check.expected
    op = check.op
    if op == "range":
        lo, hi = check.get("lo"), check.get("hi")
        if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (lo, hi)):
            return None
        strict = check.get("strict")
        low, high = compare(lo, "gt" if strict else "ge"), compare(hi, "lt" if strict else "le")
        if low is None or high is None:
            return None
        return f"(?={low}){high}", _outside(lo, hi)
    if e is None or not e.is_lit:
        return None
    v = e.value
    if isinstance(v, bool):
        if op not in ("eq", "approx"):
            return None
        return (r"(?:true|True|TRUE)\b", r"(?:false|False|FALSE)\b") if v else (
            r"(?:false|False|FALSE)\b", r"(?:true|True|TRUE)\b")
    if isinstance(v, (int, float)) and math.isfinite(v):
        if op == "eq":
            return _exact_number(v), _outside(v, v)
        if op in ("gt", "ge", "lt", "le"):
            yes = compare(v, op)
            no = compare(v, {"gt": "le", "ge": "lt", "lt": "ge", "le": "gt"}[op])
            return (yes, no) if yes else None
        if op == "approx":
            rel, tol = check.get("rel"), check.get("tol")
            width = abs(v) * rel if rel else (tol if isinstance(tol, (int, float)) and not isinstance(tol, bool)
                                              and tol > 0 else None)
            if width is None:
                # the tolerance is the verifier's own: yes for a value that rounds to the expected digits,
                # no only 10 % away
                far = max(abs(v) * 0.1, 1.0)
                decimals = len(_digits(abs(v))[1]) if isinstance(v, float) else 0
                half = 0.5 * 10.0 ** -decimals if decimals else 0
                yes = number_band(v - half, v + half * 0.999) if half else _exact_number(v)
                return yes or _exact_number(v), _outside(v - far, v + far)
            band = number_band(v - width, v + width)
            return (band, _outside(v - width * 1.2, v + width * 1.2)) if band else None
        return None
    if isinstance(v, str) and v and len(v) <= 200 and "\n" not in v:
        if op in ("eq", "approx"):
            esc = _esc(v)
            if v.lower() in ("true", "false", "yes", "no"):
                other = {"true": "false", "false": "true", "yes": "no", "no": "yes"}[v.lower()]
                return rf"{esc}(?![\w])", rf"{other}(?![\w])"
            quoted = rf"(?<=[\"'])(?!{esc}[\"'])[^\"'\n]{{1,80}}[\"']"
            bare = rf"(?<![\"'])(?!{esc}(?![\w]))[A-Za-z][\w.-]{{0,40}}(?=\s*(?:,|$|\n|\|))"
            return rf"{esc}(?![\w])", (quoted if check.subject.fmt in ("json", "yaml", None) else f"{quoted}|{bare}")
    return None


def _parent(check: Check) -> str | None:
    """The string key of the object holding the checked key, when that object is one of several siblings."""
    keys = [k for k in check.subject.keys if isinstance(k, str)]
    if len(keys) >= 3 and keys[-2] != ANY:
        return keys[-2]
    return None


_TYPE_START = {"a list": r"\[", "an object": r"\{", "a string": r"[\"']", "a number": r"-?\d",
               "an integer": r"-?\d+(?![.\d])", "a boolean": r"(?:true|false|True|False)\b"}
_JSON_COLON = r"[\"']?\s*:\s*"


def _scalar_text(v: Any) -> str | None:
    if isinstance(v, bool) or not isinstance(v, (str, int, float)):
        return None
    return _esc(str(v))


def _conjunction(values: Sequence[str]) -> str:
    """One event holding every value (in any order): lookaheads from the start of the text."""
    if len(values) == 1:
        return values[0]
    return r"\A" + "".join(f"(?=[\\s\\S]*?{v})" for v in values) + r"[\s\S]{1,80}"


def check_probes(check: Check) -> list[Probe]:
    """Probes for one check, before the instruction filter; empty when the check names no literal to look for."""
    s = check.subject
    op = check.op
    out: list[Probe] = []
    keys = [k for k in s.keys if isinstance(k, str) and k != ANY]
    if op in ("eq", "approx", "range", "gt", "ge", "lt", "le") and s.kind == "data" and keys and \
            s.fmt not in ("text", "output", "docx", "pdf"):
        pattern = value_pattern(check)
        if pattern is None:
            return []
        yes, no = pattern
        key = _key(keys[-1]) + _SEP
        parent = _parent(check)
        prefix = (_key(parent) + _JSON_COLON + r"\{[^{}]*?") if parent else ""
        if s.where and s.fmt in ("csv", "xlsx", "text") and isinstance(s.where[0][1], str):
            key, prefix = _key(s.where[0][1]) + _SEP, ""  # the row `protocol_udp,310`
        elif s.where:
            field, value = s.where[0]
            text = _scalar_text(value)
            if text is None:
                return []
            prefix = _key(str(field)) + _JSON_COLON + rf"[\"']?{text}[\"']?[^{{}}]*?"
        flags = "i" if check.expected is not None and isinstance(check.expected.value, str) else ""
        out.append(Probe(pattern=prefix + key + yes, polarity="yes", flags=flags))
        if no:
            out.append(Probe(pattern=prefix + key + no, polarity="no", flags=flags))
        return out
    if op == "includes" and s.kind == "data" and check.expected is not None and check.expected.is_lit:
        values = check.expected.value if isinstance(check.expected.value, (list, tuple)) else [check.expected.value]
        for v in values[:6]:
            text = _scalar_text(v)
            if text is None:
                continue
            value = rf"[\"']{text}[\"']" if isinstance(v, str) else rf"(?<![\d.]){text}(?![\d.]*\d)"
            if s.keys and isinstance(s.keys[-1], str) and s.keys[-1] != ANY and ANY in s.keys:
                out.append(Probe(pattern=_key(s.keys[-1]) + _JSON_COLON + value, polarity="yes"))
            elif keys:
                out.append(Probe(pattern=_key(keys[-1]) + _JSON_COLON + r"\[[^\]]*?" + value, polarity="yes",
                                 flags="is" if isinstance(v, str) else ""))
        return out
    if op == "has_key" and s.kind == "data" and s.fmt in ("json", "yaml", None) and check.expected is not None and \
            check.expected.is_lit:
        names = check.expected.value if isinstance(check.expected.value, (list, tuple)) else [check.expected.value]
        names = [n for n in names if isinstance(n, str) and n][:6]
        if names:
            patterns = [_key(n) + r"[\"']\s*:" for n in names]
            out.append(Probe(pattern=_conjunction(patterns), polarity="yes"))
        return out
    if op == "defines" and check.expected is not None and isinstance(check.expected.value, str) and \
            re.fullmatch(r"[A-Za-z_]\w*", check.expected.value):
        name = re.escape(check.expected.value)
        out.append(Probe(pattern=rf"(?m)^[ \t]*(?:async[ \t]+def|def|class)[ \t]+{name}\b|^{name}[ \t]*=", polarity="yes"))
        return out
    if op == "has_key" and s.kind == "data" and s.fmt in ("csv", "xlsx", "parquet") and not keys and \
            check.expected is not None and check.expected.is_lit:
        names = check.expected.value if isinstance(check.expected.value, (list, tuple)) else [check.expected.value]
        names = [n for n in names if isinstance(n, str) and n][:8]
        if names:
            heads = "".join(rf"(?=[^\n]*(?<![\w]){_esc(n)}(?![\w]))" for n in names)
            out.append(Probe(pattern=rf"(?m)^{heads}[^\n]*[,\t|][^\n]*$", polarity="yes"))
        return out
    if op == "type" and s.kind == "data" and keys and s.fmt in ("json", "yaml", None):
        start = _TYPE_START.get(check.get("type"))
        if start is None:
            return out
        head = _key(keys[-1]) + r"[\"']\s*:\s*"
        out.append(Probe(pattern=head + start, polarity="yes"))
        literal_start = r"(?:\"|\[|\{|-?\d|true\b|false\b)"
        out.append(Probe(pattern=head + rf"(?!{start}){literal_start}", polarity="no"))
        return out
    if op == "truthy" and s.kind == "data" and keys and s.keys[-1] == ANY and s.fmt in ("json", "yaml", None):
        head = _key(keys[-1]) + r"[\"']\s*:\s*\["
        out.append(Probe(pattern=head + r"\s*\"[^\"\n]*\S[^\"\n]*\"(?:\s*,\s*\"[^\"\n]*\S[^\"\n]*\")*\s*\]", polarity="yes"))
        out.append(Probe(pattern=head + r"[^\]]*?\"\s*\"", polarity="no"))
        return out
    if s.kind == "len" and op in ("ge", "gt") and s.inner is not None and check.expected is not None and \
            isinstance(check.expected.value, (int, float)) and not isinstance(check.expected.value, bool) and \
            check.expected.value >= (0 if op == "gt" else 1):
        ikeys = [k for k in s.inner.keys if isinstance(k, str) and k != ANY]
        if ikeys and s.inner.fmt in ("json", "yaml", None) and not s.inner.where:
            out.append(Probe(pattern=_key(ikeys[-1]) + r"[\"']\s*:\s*(?:\[\s*\]|\{\s*\})", polarity="no"))
        return out
    if op == "nonempty" and s.kind == "data" and keys and s.fmt in ("json", "yaml", None):
        head = _key(keys[-1]) + r"[\"']\s*:\s*"
        out.append(Probe(pattern=head + r"[\[{]\s*[^\]}\s]", polarity="yes"))
        out.append(Probe(pattern=head + r"(?:\[\s*\]|\{\s*\})", polarity="no"))
        return out
    if op == "contains" and check.expected is not None and check.expected.is_lit:
        values = [v for v in [check.expected.value, *(a.expected.value for a in check.get("alternatives", ())
                                                      if a.expected is not None)] for v in
                  (v if isinstance(v, (list, tuple)) else [v])]
        values = [v for v in values if isinstance(v, str)]
        if not values or not all(_specific(v) for v in values):
            return out
        if s.where and keys:
            field, wv = s.where[0]
            text = _scalar_text(wv)
            if text is not None and len(values) == 1:
                inner = rf"[\"'][^\"'\n]*?{_esc(values[0])}"
                one = _key(str(field)) + _JSON_COLON + rf"[\"']?{text}[\"']?[^{{}}]*?" + _key(keys[-1]) + \
                    _JSON_COLON + inner
                two = _key(keys[-1]) + _JSON_COLON + inner + r"[^{}]*?" + _key(str(field)) + _JSON_COLON + \
                    rf"[\"']?{text}[\"']?(?![\w])"
                out.append(Probe(pattern=f"{one}|{two}", polarity="yes"))
                return out
        escaped = [_esc(v) for v in values]
        if check.get("alternatives"):
            out.append(Probe(pattern="|".join(escaped), polarity="yes"))
        else:
            out.append(Probe(pattern=_conjunction(escaped[:5]), polarity="yes"))
        return out
    if op == "matches" and isinstance(check.get("pattern"), str):
        try:
            re.compile(check.get("pattern"))
        except re.error:
            return []
        if len(check.get("pattern")) >= 6:
            out.append(Probe(pattern=check.get("pattern"), polarity="yes"))
        return out
    if op == "valid_json":
        out.append(Probe(pattern=r"JSONDecodeError|Expecting (?:value|property name enclosed in double quotes)",
                         polarity="no"))
        return out
    if s.kind == "len" and op == "eq" and s.inner is not None and check.expected is not None and \
            isinstance(check.expected.value, int) and not isinstance(check.expected.value, bool):
        inner = s.inner
        ikeys = [k for k in inner.keys if isinstance(k, str) and k != ANY]
        n = check.expected.value
        if ikeys and 0 < n <= 12 and inner.fmt in ("json", None):
            item = r"\s*(?:\"[^\"]*\"|-?\d[\d.]*)\s*"
            exact = r"\[" + ",".join([item] * n) + r"\]"
            out.append(Probe(pattern=_key(ikeys[-1]) + _JSON_COLON + exact, polarity="yes"))
            more = r"\[" + ",".join([item] * (n + 1))
            fewer = r"\[" + (",".join([item] * (n - 1)) if n > 1 else r"\s*") + r"\]"
            out.append(Probe(pattern=_key(ikeys[-1]) + _JSON_COLON + "(?:" + more + "|" + fewer + ")", polarity="no"))
        return out
    return out


def _specific(text: str) -> bool:
    """Whether a text is specific enough that finding it shows the file holds it: not a short word (`Start`,
    `name`, `->`)."""
    t = text.strip()
    if len(t) < 4 or not re.search(r"[A-Za-z0-9]", t):
        return False
    if re.fullmatch(r"[A-Za-z][a-z]*", t):
        return len(t) >= 6
    return True


def file_probes(path: str, keys: Sequence[str]) -> list[Probe]:
    """Probes for a file's existence: its full path listed or reported saved (yes), shown missing (no), and
    its content shown — a key the verifier reads from it (yes)."""
    esc = _esc(path)
    out = [
        Probe(pattern=rf"(?m)^[-l][rwxsStT-]{{9}}\S*\s.*{esc}\s*$", polarity="yes"),
        Probe(pattern=rf"{_SAVED}\b[^\n]{{0,60}}{esc}(?![\w/.-])", polarity="yes"),
        Probe(pattern=rf"{esc}['\"`]?:?\s*{_MISSING}|{_MISSING}[^\n]{{0,40}}{esc}(?![\w/.-])", polarity="no"),
    ]
    for key in list(keys)[:2]:
        out.append(Probe(pattern=r"^\s*[\[{][\s\S]{0,200}?" + _key(key) + r"[\"']?\s*:\s*[-\w\"\[{.]", polarity="yes"))
    return out


def refused(probe: Probe, instruction: str) -> bool:
    """Whether a probe would match the instruction text: the instruction alone must never decide an item."""
    try:
        return probe.compile().search(instruction) is not None
    except (re.error, ValueError):
        return True


def _narrowed(probe: Probe, instruction: str) -> Probe | None:
    """The probe, narrowed so it no longer matches the instruction's example; None when it cannot be."""
    for _ in range(3):
        try:
            match = probe.compile().search(instruction)
        except (re.error, ValueError):
            return None
        if match is None:
            return probe
        rest = instruction[match.end():match.end() + 40]
        token = re.match(r"\s*(\"[^\"\n]{1,40}\"|'[^'\n]{1,40}'|-?\d[\d.]*|\w+)", rest)
        if token is None or probe.polarity != "yes":
            return None
        probe = Probe(pattern=probe.pattern + rf"(?!\s*{re.escape(token.group(1))})", polarity=probe.polarity,
                      flags=probe.flags)
    return None if refused(probe, instruction) else probe


def _anchored(probe: Probe, anchors: Sequence[str]) -> Probe:
    """The probe, required to match in an event that also holds one of `anchors` (values the verifier expects in
    the same file that the instruction never shows): the event is then the run's file, not the instruction's example."""
    pattern, flags = probe.pattern, probe.flags
    lead = re.match(r"\(\?([imsx]+)\)", pattern)
    if lead:
        pattern = pattern[lead.end():]
        flags = "".join(sorted(set(flags) | set(lead.group(1))))
    body = "|".join(_esc(a) for a in anchors[:2])
    return Probe(pattern=rf"(?:{pattern})(?=[\s\S]*?(?:{body}))|(?:{body})[\s\S]*?(?:{pattern})", polarity=probe.polarity,
                 flags=flags)


def _admitted(probe: Probe, instruction: str, anchors: Sequence[str] = ()) -> Probe | None:
    """The probe if it does not match the instruction; else narrowed past the instruction's example value, else
    anchored to values the instruction never shows; None when none of that keeps it off the instruction."""
    kept = _narrowed(probe, instruction)
    if kept is not None:
        return kept
    if anchors:
        anchored = _anchored(probe, anchors)
        if not refused(anchored, instruction):
            return anchored
    return None


def group_probes(group: Group, reading: TestReading, instruction: str,
                 file_keys: dict[str, list[str]] | None = None,
                 anchors: dict[str, list[str]] | None = None,
                 outputs: Sequence[str] = ()) -> list[Probe]:
    """Every probe of a group's checks that does not match the instruction (see `_admitted`). `outputs`: the
    files the instruction asks for; a group whose checks name no file reads the test's output files."""
    found: list[Probe] = []
    anchors = anchors or {}

    def admit(probes: Iterable[Probe], path: str | None) -> None:
        for probe in probes:
            kept = _admitted(probe, instruction, anchors.get(path or "", []))
            if kept is not None and kept not in found:
                found.append(kept)

    strong = [c for c in group.checks if not c.guard and c.op != "opaque"]
    partial = False
    for check in strong or group.checks:
        s = check.subject.inner if check.subject.kind in ("len", "occurrences") and check.subject.inner is not None \
            else check.subject
        before = len(found)
        admit([*check_probes(check), *_absent_value(check)], s.path)
        partial |= bool(strong) and not any(p.polarity == "yes" for p in found[before:])
    if partial:
        # a yes for one of the group's requirements is no yes for the group: keep only what decides No
        found = [p for p in found if p.polarity == "no"]
    paths = [c.subject.path for c in group.checks
             if c.op in ("exists", "present", "valid_json") and c.subject.path]
    if paths and not any(p.polarity == "yes" for p in found):
        admit(file_probes(paths[0], (file_keys or {}).get(paths[0], [])), paths[0])
    if any(c.op == "valid_json" for c in group.checks):
        for check in group.checks:
            if check.op == "valid_json":
                admit(check_probes(check), check.subject.path)
    if not any(c.op in ("exists", "not_exists") for c in group.checks):
        missing = _missing_file(group)
        if not missing:
            read = [f for f in reading.files if f in outputs]
            missing = _missing_file(Group([Check("opaque", V("path", path=read[0]))], group.cases)) if read else []
        admit(missing, None)
    return _balanced(found)


def file_anchors(readings: Iterable[TestReading], instruction: str) -> dict[str, list[str]]:
    """Per file, values the verifier expects in it that instruction.md never shows (specific strings, in order)."""
    low = instruction.lower()
    out: dict[str, list[str]] = {}
    for reading in readings:
        for check in reading.all_checks:
            s = check.subject.inner if check.subject.kind in ("len", "occurrences") and check.subject.inner is not None \
                else check.subject
            if not s.path or check.expected is None or not check.expected.is_lit:
                continue
            values = check.expected.value if isinstance(check.expected.value, (list, tuple)) else [check.expected.value]
            values = [*values, *(k for k in s.keys if isinstance(k, str) and k != ANY)]
            for v in values:
                if not isinstance(v, str) or len(v) < 6 or not _specific(v):
                    continue
                short = v if len(v) <= 40 else v[:40].rsplit(" ", 1)[0]
                if len(short) >= 6 and short.lower() not in low and short not in out.setdefault(s.path, []):
                    out[s.path].append(short)
    return out


def _absent_value(check: Check) -> list[Probe]:
    """No for a checked key shown without a value (`null`, `None`, `NaN`, an empty string): whatever the verifier
    compares it with, an absent value fails the check."""
    s = check.subject.inner if check.subject.kind == "len" and check.subject.inner is not None else check.subject
    keys = [k for k in s.keys if isinstance(k, str) and k != ANY]
    if s.kind != "data" or not keys or s.fmt not in ("json", "yaml", None) or s.where or _parent(check) or \
            ANY in s.keys:
        return []
    if check.op not in ("eq", "approx", "range", "gt", "ge", "lt", "le", "present", "truthy", "type", "nonempty",
                        "includes", "one_of", "matches", "contains"):
        return []
    return [Probe(pattern=_key(keys[-1]) + r"[\"']\s*:\s*(?:null|None|NaN|\"\")(?![\w\"])", polarity="no")]


def _missing_file(group: Group) -> list[Probe]:
    """No for the file a group's checks read, shown missing (a check reading a file that does not exist fails)."""
    paths = []
    for c in group.checks:
        s = c.subject.inner if c.subject.kind in ("len", "occurrences") and c.subject.inner is not None else c.subject
        if s.kind in ("data", "path") and s.path and s.path.startswith("/") and s.path not in paths and \
                not any(ch in s.path for ch in "*?{}"):
            paths.append(s.path)
    out = []
    for path in paths[:1]:
        esc = _esc(path)
        out.append(Probe(pattern=rf"{esc}['\"`]?:?\s*{_MISSING}|{_MISSING}[^\n]{{0,40}}{esc}(?![\w/.-])",
                         polarity="no"))
    return out


def _balanced(probes: list[Probe]) -> list[Probe]:
    """At most MAX_PROBES, in the order found (a value's yes before its no)."""
    return probes[:MAX_PROBES]


def read_keys(readings: Iterable[TestReading]) -> dict[str, list[str]]:
    """Per file, the top-level keys the verifier reads from it (in order): what shows the file's content."""
    out: dict[str, list[str]] = {}
    for reading in readings:
        for check in reading.all_checks:
            s = check.subject.inner if check.subject.kind == "len" and check.subject.inner is not None else check.subject
            if s.kind != "data" or not s.path or s.fmt not in ("json", "yaml"):
                continue
            key = next((k for k in s.keys if isinstance(k, str) and k != ANY), None)
            if key is None and check.op == "has_key" and check.expected is not None and \
                    isinstance(check.expected.value, str):
                key = check.expected.value
            if key and key not in out.setdefault(s.path, []):
                out[s.path].append(key)
    return out
