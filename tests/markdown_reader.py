"""What a Markdown string handed to Streamlit shows, read the way Streamlit's renderer reads it, for tests of
escaping (there is no Markdown parser among the requirements, and the checks need only this much).

`read` splits a string into code spans (CommonMark: a run of n backticks up to the next run of exactly n,
one padding space stripped from each side when both are there) and the rest, where a backslash before ASCII
punctuation is an escape. `live_markup` lists what in the rest would still act as Markdown or as one of
Streamlit's rewrites: unescaped link, image and directive brackets, entities, autolinks, LaTeX, autolink literals, emoji shortcodes and `:material/` icons (rewritten in the raw source, code
spans included).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Read", "live_markup", "read"]

_PUNCT = re.escape("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
_ACTIVE = set("[]")
"""Characters that, unescaped outside a code span, make a link, an image or a `:color[…]` directive."""
_ENTITY = re.compile(r"&(#\d+|#x[0-9a-f]+|\w+);", re.IGNORECASE)
_AUTOLINK = re.compile(r"<[a-z][a-z0-9+.-]*:[^\s<>]*>|<[^\s<>@]+@[^\s<>]+>", re.IGNORECASE)
_LATEX = re.compile(r"\$[^$]+\$")
"""`$…$`: raw HTML is not rendered (Streamlit shows it as text unless `unsafe_allow_html`), but autolinks and
LaTeX are."""
_BADGE = re.compile(r":[a-z]+-badge\[(.*)\]", re.DOTALL)
"""`st.badge`'s own Markdown around its (escaped) label."""
_REWRITTEN = re.compile(r"https?://|www\.|[\w.+-]@[\w-]+\.\w|:(?=[\w+-]*[a-z+-])[\w+-]+:", re.IGNORECASE)


@dataclass(frozen=True)
class Read:
    shown: str
    """The text a reader sees (escapes resolved, code spans' content as is)."""
    plain: list[str]
    """Each piece outside code spans, as written (escapes kept)."""
    code: list[str]
    """Each code span's content."""


def read(markdown: str) -> Read:
    shown, plain, code = [], [], []
    k, start = 0, 0
    while k < len(markdown):
        c = markdown[k]
        if c == "\\" and k + 1 < len(markdown) and re.fullmatch(f"[{_PUNCT}]", markdown[k + 1]):
            shown.append(markdown[k + 1])
            k += 2
            continue
        if c == "`":
            run = re.match("`+", markdown[k:]).group()
            close = re.compile(f"(?<!`){run}(?!`)").search(markdown, k + len(run))
            if close is None:  # an unmatched run is literal text
                shown.append(run)
                k += len(run)
                continue
            plain.append(markdown[start:k])
            body = markdown[k + len(run) : close.start()]
            if len(body) > 2 and body.startswith(" ") and body.endswith(" ") and body.strip():
                body = body[1:-1]
            shown.append(body)
            code.append(body)
            k = start = close.end()
            continue
        shown.append(c)
        k += 1
    plain.append(markdown[start:])
    return Read("".join(shown), plain, code)


def live_markup(markdown: str) -> list[str]:
    """What in `markdown` would still be read as Markdown or rewritten by Streamlit (empty: it shows as text)."""
    found = [f"{markdown!r} holds ':material/' (Streamlit rewrites it into an icon)"] if ":material/" in markdown else []
    badge = _BADGE.fullmatch(markdown)
    parsed = read(badge.group(1) if badge else markdown)
    for piece in parsed.plain:
        unescaped = re.sub(f"\\\\[{_PUNCT}]", "", piece)
        found += [f"unescaped {c!r} in {piece!r}" for c in sorted(set(unescaped) & _ACTIVE)]
        found += [f"{m.group()!r} in {piece!r}" for pattern in (_ENTITY, _AUTOLINK, _LATEX)
                  for m in pattern.finditer(unescaped)]
        found += [f"{m.group()!r} in {piece!r} (rewritten after parsing)" for m in _REWRITTEN.finditer(
            re.sub(f"\\\\([{_PUNCT}])", r"\1", piece))]
    return found
