"""Untrusted text (logs, task instructions, verifier sources, study records) made safe to show.

Invisible characters are made visible before anything is shown (`show_invisible`): a right-to-left
override (`\u202e`) reorders what a reader sees ("\u202eTXT.EXE" reads "EXE.TXT"), and zero-width
characters split words so that a human and a search see different text from the judge and the probes.
Every bidi control, zero-width and other format character (Unicode category Cf, listed in
`INVISIBLE`) is shown as `⟨U+202E⟩`. Searches compare text with them removed (`search_fold`), so
"password" finds "pass\u200bword".

`md_escape` is for the places where Streamlit reads a string as Markdown (widget labels, captions,
headers, report.md, a study's guidelines) and a data value must still appear there literally.

A leaf module: the review pages, the study package (`annotations`) and the report all show untrusted
text, so what they share imports nothing of this project.
"""

from __future__ import annotations

import re

__all__ = ["INVISIBLE", "invisible_marker", "md_escape", "search_fold", "search_pattern", "show_invisible"]

INVISIBLE = re.compile(
    "[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e\u2060-\u206f"
    "\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufffb\U0001d173-\U0001d17a\U000e0000-\U000e0fff]"
)
"""Characters that change how text reads without showing themselves: bidi embeddings, overrides,
isolates and marks; zero-width space, joiners and word joiner; byte-order mark; soft hyphen; Hangul
and Mongolian fillers; variation selectors; interlinear annotation controls; tag characters."""


def invisible_marker(char: str) -> str:
    """How an invisible or direction-changing character is shown: `⟨U+XXXX⟩`."""
    return f"⟨U+{ord(char):04X}⟩"


def show_invisible(text: str) -> str:
    """`text` with every invisible or direction-changing character replaced by a visible `⟨U+XXXX⟩`."""
    return INVISIBLE.sub(lambda m: invisible_marker(m.group()), text)


def search_fold(text: str) -> str:
    """`text` as searches compare it: invisible characters removed, case folded."""
    return INVISIBLE.sub("", text).casefold()


def search_pattern(query: str) -> re.Pattern[str] | None:
    """A case-insensitive pattern finding `query` (stripped, invisibles removed) in a text that may
    hold invisible characters between any two of its characters; None for an empty query.
    Each query character is followed by a run of invisibles only, so matching stays linear."""
    chars = INVISIBLE.sub("", query.strip())
    if not chars:
        return None
    gap = f"{INVISIBLE.pattern}*"
    return re.compile(gap.join(map(re.escape, chars)), re.IGNORECASE)


_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$:=^&/])")
_MD_MID_LINE = re.compile(r"([\\`*_\[\]<>&~|$]|(?<=:material)/)", re.IGNORECASE)
"""What acts as Markdown inside a line (after other text: a table cell, a sentence of a report): emphasis,
code, links and images (their brackets), HTML, entities, strikethrough, table pipes, LaTeX, Streamlit's
`:material/` icons."""
_TEXT_TRANSFORMS = re.compile(
    r"\S*(?:https?://|www\.|[\w.+-]@[\w-]+\.\w|:(?=[\w+-]*[a-z+-])[\w+-]+:)\S*", re.IGNORECASE)
"""A word that Streamlit's Markdown rewrites after parsing, where a backslash escape no longer counts: GFM
autolink literals (`http://…`, `www.…`, `a@b.c` become links) and emoji shortcodes (`:+1:`, `:streamlit:`
become pictures). Such a word is shown as a code span instead, which neither rewrites. (`:material/…:` is
rewritten in the raw source, code spans included: escaping its `/` is what stops it.)"""


def _code_span(word: str) -> str:
    """`word` as an inline code span: fenced by one more backtick than its longest run of backticks, padded
    with a space when it starts or ends with one (CommonMark strips that space again)."""
    fence = "`" * (max(map(len, re.findall("`+", word)), default=0) + 1)
    pad = " " if word.startswith("`") or word.endswith("`") else ""
    return f"{fence}{pad}{word}{pad}{fence}"


def md_escape(text: object, *, limit: int | None = 200, mid_line: bool = False) -> str:
    """`text` for a string Streamlit renders as Markdown (a caption, an alert, a metric, a widget label), so that
    it shows literally: on one line, invisible characters made visible, cut to `limit` characters; every
    Markdown-significant character backslash-escaped (links, images, emphasis, headings, HTML, entities,
    `:red[…]` directives, `$…$` LaTeX), and a word that would still become a link or an icon (see
    `_TEXT_TRANSFORMS`) put in a code span. `limit=None` keeps the whole text; `mid_line` escapes only what acts
    inside a line (`_MD_MID_LINE`), for text that never starts one (a file read raw as well: report.md)."""
    flat = show_invisible(" ".join(str(text).split()))
    if limit is not None and len(flat) > limit:
        flat = flat[: limit - 1] + "…"
    special = _MD_MID_LINE if mid_line else _MD_SPECIAL
    out, done = [], 0
    for match in _TEXT_TRANSFORMS.finditer(flat):
        out += [special.sub(r"\\\1", flat[done : match.start()]), _code_span(match.group())]
        done = match.end()
    out.append(special.sub(r"\\\1", flat[done:]))
    return "".join(out)
