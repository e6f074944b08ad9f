"""Import sqlite-utils without the pandas and numpy it loads only to name their scalar types.

sqlite-utils imports pandas and numpy, when they are installed, for one purpose: adding
`pandas.Timestamp` and numpy's scalars to the table of Python types it maps to column types when it
infers a schema. That costs about 0.5 s on every start (`python -X importtime`: most of what
`python -m gcpc_core info` took), and GCPC never has sqlite-utils infer a type: every table is created
with declared types (`migrations`) and rows are pydantic `Row` models of plain values. So the first
import of sqlite-utils in a process is made with both hidden; a process that loaded pandas earlier
(the app, an analysis) gets sqlite-utils' full table, which changes nothing GCPC writes either.
The package imports this module before any other, so every later `import sqlite_utils` is this one.
"""

from __future__ import annotations

import sys

__all__ = ["sqlite_utils"]

_HIDDEN = ("pandas", "numpy")

if "sqlite_utils" in sys.modules or any(name in sys.modules for name in _HIDDEN):
    import sqlite_utils
else:
    sys.modules.update(dict.fromkeys(_HIDDEN))  # None in sys.modules: `import pandas` raises ImportError
    try:
        import sqlite_utils
    finally:
        for name in _HIDDEN:
            del sys.modules[name]
