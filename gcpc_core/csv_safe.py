"""CSV that a spreadsheet shows as text and never runs: every CSV the project writes goes through here.

A spreadsheet opening a CSV evaluates a cell that starts with ``=``, ``+``, ``-`` or ``@`` as a
formula (``=HYPERLINK("http://…"&A1,"Click")`` leaks other cells; DDE payloads run programs),
and a rater comment, a trial name, an agent or a model name is exactly such untrusted text.
Following OWASP's CSV-injection guidance, `csv_cell`:

* prefixes with a single quote every text cell whose first character is ``=``, ``+``, ``-``,
  ``@``, a tab (0x09) or a carriage return (0x0D); also a line feed or NUL, the full-width forms
  ``＝ ＋ － ＠`` (which spreadsheets fold to the ASCII ones) and a trigger hidden behind leading
  whitespace (``"  =1+1"``), the variants the guidance and its test payloads list;
* and the writers quote every text field and double embedded quotes (``csv.QUOTE_NONNUMERIC``),
  so a payload such as ``=1+2";=1+2`` cannot close its field and start a new cell behind a
  separator. Header cells are quoted the same way unless they are plain names
  (``trajectory_id``), so readers that split a header on commas keep working.

Only text is escaped: numbers are written as numbers, so a negative score stays a number.

To keep an export → import round trip exact, a text cell that already starts with a single
quote gets one more; `csv_value` removes one leading quote only where `csv_cell` would have put
it (before a formula trigger or another quote), so reading a neutralised file back gives the
original text, and a hand-written cell such as ``'tis fine`` is read as it stands. JSONL exports are never neutralised: they are exact by design.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TextIO

import pandas as pd

__all__ = ["FORMULA_TRIGGERS", "csv_cell", "csv_value", "frame_csv", "write_csv_rows"]

FORMULA_TRIGGERS = frozenset("=+-@\t\r\n\0＝＋－＠")
"""First characters that make a spreadsheet read a cell as a formula (or hide one behind them)."""
_LEADING_BLANKS = " \t\r\n\0\x0b\x0c\u3000"
QUOTE = "'"
_QUOTED_START = FORMULA_TRIGGERS | {QUOTE}
_PLAIN_NAME = re.compile(r"[A-Za-z0-9_.]+")


def _needs_quote(text: str) -> bool:
    return text[:1] in _QUOTED_START or (text[:1] in _LEADING_BLANKS and text.lstrip(_LEADING_BLANKS)[:1] in
                                         FORMULA_TRIGGERS)


def csv_cell(value: object) -> object:
    """`value` as a CSV cell that no spreadsheet evaluates; non-text values are returned unchanged."""
    if isinstance(value, str) and value and _needs_quote(value):
        return QUOTE + value
    return value


def csv_value(text: str) -> str:
    """The original text of a cell `csv_cell` wrote: the quote it prefixed is removed, any other kept."""
    return text[1:] if text.startswith(QUOTE) and _needs_quote(text[1:]) else text


def _neutralised(values: pd.Series) -> pd.Series:
    """`csv_cell` over a column without a pandas call per cell (report tables hold up to ~10⁵ cells)."""
    cells = values.to_numpy(dtype=object, copy=True)
    risky = [k for k, v in enumerate(cells) if type(v) is str and v and _needs_quote(v)]
    if not risky:
        return values
    cells[risky] = [QUOTE + v for v in cells[risky]]
    return pd.Series(cells, index=values.index, dtype=object)


def _header(names: Sequence[object]) -> str:
    """The header line: plain names as they are, any other name neutralised and quoted."""
    cells = [str(csv_cell(str(n))) for n in names]
    return ",".join(c if _PLAIN_NAME.fullmatch(c) else '"' + c.replace('"', '""') + '"' for c in cells) + "\n"


def write_csv_rows(out: TextIO, rows: Iterable[Mapping[str, object]], fieldnames: Sequence[str]) -> int:
    """Write a header and `rows` as neutralised CSV to `out`; returns the number of rows written."""
    out.write(_header(fieldnames))
    writer = csv.writer(out, quoting=csv.QUOTE_NONNUMERIC, lineterminator="\n")
    count = 0
    for row in rows:
        writer.writerow([csv_cell(row.get(name)) for name in fieldnames])
        count += 1
    return count


def frame_csv(frame: pd.DataFrame) -> str:
    """A frame as neutralised CSV text (header included, no index)."""
    safe = frame.copy()
    for k, column in enumerate(frame.columns):
        values = frame.iloc[:, k]
        if values.dtype == object or isinstance(values.dtype, pd.StringDtype):
            safe.iloc[:, k] = _neutralised(values)
    body = safe.to_csv(index=False, header=False, quoting=csv.QUOTE_NONNUMERIC, lineterminator="\n")
    return _header(list(frame.columns)) + body
