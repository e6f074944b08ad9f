"""Evidence perturbation for RQ4's sensitivity test: replace a cited span with a plausible wrong value.

Pure and deterministic: the same (text, quote, seed) always gives the same output, so a
perturbed log can be rebuilt from its recipe. Re-judging the perturbed log through the LLM
layer is wired elsewhere; this module only edits text.

What changes, by the first kind the span contains:

* ``number`` — every number outside a path is shifted by 10–50 % of its value (at least one unit
  in its last decimal place), keeping its decimals and zero padding; non-negative stays non-negative;
* ``path`` — every path (a token with a ``/``, or a file name with a common extension) is altered:
  its stem renamed, its extension swapped, or its parent directory changed;
* ``string`` — opposite words are swapped (passed↔failed, True↔False, …); failing that, two
  distinct words of the span trade places; a single word is reversed.

A draw that would leave the quote findable inside its own replacement is redrawn (up to five
times, still deterministic); the recipe says whether the quote survived anyway. The quote is
matched up to whitespace (citations are verbatim up to whitespace) and every
occurrence in the text is replaced, so the evidence is not still visible elsewhere in it.
"""

from __future__ import annotations

import random
import re
from typing import Any

__all__ = ["perturb_span"]

_EXT = ("py|json|jsonl|csv|tsv|txt|md|yaml|yml|toml|log|sh|xlsx|xls|pdf|png|jpg|html|xml|ipynb|tex|bib|"
        "c|cpp|h|js|ts|rs|go|java|sql|db|npy|parquet|zip|gz|tar")
_PATH = re.compile(rf"(?:~|\.{{1,2}})?/?(?:[\w.\-]+/)+[\w.\-]+|\b[\w\-]+\.(?i:{_EXT})\b")
_NUMBER = re.compile(r"(?<![\w.,])-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?!\w|[.,]\d)")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_OPPOSITES = {
    "true": "false", "yes": "no", "passed": "failed", "pass": "fail", "success": "failure", "succeeded": "failed",
    "ok": "error", "correct": "incorrect", "valid": "invalid", "enabled": "disabled", "found": "missing",
    "present": "absent", "open": "closed", "on": "off", "min": "max", "left": "right", "before": "after",
    "accepted": "rejected", "complete": "incomplete", "matches": "differs", "increase": "decrease",
}
_OPPOSITES |= {v: k for k, v in list(_OPPOSITES.items())}
_EXT_SWAP = {"csv": "tsv", "tsv": "csv", "json": "yaml", "jsonl": "json", "txt": "log", "log": "txt", "yaml": "json",
             "yml": "json", "md": "txt", "py": "sh", "sh": "py", "xlsx": "csv", "xls": "csv", "png": "jpg", "jpg": "png",
             "pdf": "docx", "html": "md"}
"""Plausible wrong extensions; none extends the original, so the old name cannot survive as a prefix."""
_ATTEMPTS = 5


def _case_like(word: str, model: str) -> str:
    if model.isupper() and len(model) > 1:
        return word.upper()
    return word.capitalize() if model[:1].isupper() else word


def _shift_number(token: str, rng: random.Random) -> str:
    negative, digits = token.startswith("-"), token.lstrip("-").replace(",", "")
    decimals = len(digits.partition(".")[2])
    unit = 10 ** -decimals
    value = float(token.replace(",", ""))
    delta = max(unit, round(abs(value) * rng.uniform(0.1, 0.5), decimals))
    new = value - delta if rng.random() < 0.5 and (negative or value - delta >= 0) else value + delta
    text = f"{abs(new):,.{decimals}f}" if "," in token else f"{abs(new):.{decimals}f}"
    whole = digits.partition(".")[0]
    if len(whole) > 1 and whole.startswith("0"):  # zero-padded: keep the width
        head, dot, tail = text.partition(".")
        text = head.zfill(len(whole)) + dot + tail
    return ("-" if new < 0 else "") + text


def _alter_path(path: str, rng: random.Random) -> tuple[str, str]:
    head, slash, name = path.rpartition("/")
    stem, dot, ext = name.rpartition(".") if "." in name.lstrip(".") else (name, "", "")
    ops = ["rename", "extension" if ext.lower() in _EXT_SWAP else "rename", "directory"]
    op = rng.choice(ops)
    if op == "rename":
        return f"{head}{slash}{stem}{rng.choice(['_old', '_backup', '_tmp', '2'])}{dot}{ext}", op
    if op == "extension":
        return f"{head}{slash}{stem}.{_case_like(_EXT_SWAP[ext.lower()], ext)}", op
    parts = head.split("/")
    if parts and parts[-1] not in ("", "~", ".", ".."):
        parts[-1] = "tmp" if parts[-1] != "tmp" else "var"
        return "/".join(parts) + "/" + name, op
    return f"{head}{slash}old/{name}", op


def _substitute(span: str, edits: list[tuple[int, int, str]]) -> str:
    out, last = [], 0
    for start, end, new in sorted(edits):
        out += [span[last:start], new]
        last = end
    return "".join(out) + span[last:]


def _perturb(span: str, rng: random.Random) -> tuple[str, str, list[dict[str, Any]]]:
    """Perturb one matched span: ``(new_span, kind, substitutions)``."""
    paths = [m.span() for m in _PATH.finditer(span)]
    numbers = [m for m in _NUMBER.finditer(span) if not any(a <= m.start() < b for a, b in paths)]
    if numbers:
        edits = [(m.start(), m.end(), _shift_number(m.group(), rng)) for m in numbers]
        subs = [{"op": "shift", "offset": a, "from": span[a:b], "to": new} for a, b, new in edits]
        return _substitute(span, edits), "number", subs
    if paths:
        edits, subs = [], []
        for a, b in paths:
            new, op = _alter_path(span[a:b], rng)
            edits.append((a, b, new))
            subs.append({"op": op, "offset": a, "from": span[a:b], "to": new})
        return _substitute(span, edits), "path", subs
    words = list(_WORD.finditer(span))
    opposite = [m for m in words if m.group().lower() in _OPPOSITES]
    if opposite:
        edits = [(m.start(), m.end(), _case_like(_OPPOSITES[m.group().lower()], m.group())) for m in opposite]
        subs = [{"op": "opposite", "offset": a, "from": span[a:b], "to": new} for a, b, new in edits]
        return _substitute(span, edits), "string", subs
    distinct = {m.group() for m in words}
    if len(distinct) >= 2:
        first = rng.choice(words)
        second = rng.choice([m for m in words if m.group() != first.group()])
        edits = [(first.start(), first.end(), second.group()), (second.start(), second.end(), first.group())]
        subs = [{"op": "swap", "offset": a, "from": span[a:b], "to": new} for a, b, new in edits]
        return _substitute(span, edits), "string", subs
    target = words[0] if words else re.search(r"\S+", span)
    token = target.group()
    new = token[::-1] if token[::-1] != token else token + "_x"
    return _substitute(span, [(target.start(), target.end(), new)]), "string", [
        {"op": "reverse", "offset": target.start(), "from": token, "to": new}]


def perturb_span(text: str, quote: str, seed: int) -> tuple[str, dict[str, Any]]:
    """Replace every occurrence of `quote` (matched up to whitespace) in `text` with a plausible wrong value.

    Returns ``(new_text, recipe)``; the recipe records the kind, the matched span, its
    replacement, each substitution (op, offset in the span, from, to), the number of
    occurrences replaced, the seed, and whether the quote can still be found afterwards.
    Raises ValueError for an empty quote or one that does not occur in `text`.
    """
    tokens = quote.split()
    if not tokens:
        raise ValueError("cannot perturb an empty or whitespace-only quote")
    pattern = re.compile(r"\s+".join(map(re.escape, tokens)))
    first = pattern.search(text)
    if first is None:
        raise ValueError(f"quote not found in text: {quote[:80]!r}")
    results: dict[str, tuple[str, str, list[dict[str, Any]]]] = {}

    def replace(m: re.Match[str]) -> str:
        span = m.group()
        if span not in results:  # same span, same seed → same perturbation, wherever it occurs
            rng = random.Random(f"gcpc-perturb|{seed}|{span}")
            for _ in range(_ATTEMPTS):  # redraw while the quote would survive inside its own replacement
                results[span] = _perturb(span, rng)
                if pattern.search(results[span][0]) is None:
                    break
        return results[span][0]

    new_text, n = pattern.subn(replace, text)
    new_span, kind, subs = results[first.group()]
    recipe = {
        "kind": kind, "seed": seed, "quote": quote, "span": first.group(), "replacement": new_span,
        "substitutions": subs, "occurrences": n, "quote_still_present": pattern.search(new_text) is not None,
    }
    return new_text, recipe
