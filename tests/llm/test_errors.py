"""`errors.quote_server`, the one shortener of a server's words: one line, no traceback but its final
exception, no file-system path, at most `SERVER_QUOTE_CHARS` characters."""

from __future__ import annotations

import pytest

from gcpc_core.llm.errors import SERVER_QUOTE_CHARS, quote_server


@pytest.mark.parametrize(("said", "quoted"), [
    ("no  such\n\tmodel", "no such model"),
    ("open /usr/lib/python3/site-packages/llama_cpp/server/app.py failed", "open …/app.py failed"),
    ("model /root/.cache/gcpc/gemma.gguf:12 missing", "model …/gemma.gguf:12 missing"),
    ("--model=/home/alice/m.gguf", "--model=…/m.gguf"),
    ("open C:\\Users\\alice\\models\\g.gguf failed", "open …/g.gguf failed"),
    ("at C:/Users/alice/g.gguf", "at …/g.gguf"),
    ("share \\\\srv\\models\\g.gguf", "share …/g.gguf"),
    ('File "C:\\Program Files\\Python311\\Lib\\app.py", line 9', 'File "…/app.py", line 9'),
    ("No such file: '/root/my models/x.gguf'", "No such file: '…/x.gguf'"),
    ("see http://127.0.0.1:8765/v1/models or https://errors.pydantic.dev/2.11/v/x", None),  # URLs are kept
    ("a /tmp b, 1/2 and and/or", None),  # one part is no path; a fraction or a word with a slash neither
    ("no route for GET /v1/models", None),  # an API route, not the server's file system
])
def test_paths_become_their_last_part(said: str, quoted: str | None) -> None:
    assert quote_server(said) == (quoted if quoted is not None else said)


def test_a_traceback_becomes_its_final_exception() -> None:
    chained = ("Exception: boom\nTraceback (most recent call last):\n  File \"/srv/app/a.py\", line 1, in f\n"
               "    g()\nKeyError: 'x'\n\nDuring handling of the above exception, another exception occurred:\n\n"
               "Traceback (most recent call last):\n  File \"/srv/app/b.py\", line 7, in h\n    raise ValueError(msg)\n"
               "    ^^^^^^^^^^^^^^^^^^^^^^\nValueError: response_format.type\n  Input should be 'text'\n")
    assert quote_server(chained) == "Exception: boom ValueError: response_format.type Input should be 'text'"
    flat = 'Traceback (most recent call last): File "/srv/app/a.py", line 1, in f ValueError: bad'
    assert quote_server(flat) == 'File "…/a.py", line 1, in f ValueError: bad'  # no line breaks: paths still go


def test_a_long_quote_is_cut_with_an_ellipsis() -> None:
    quoted = quote_server("word " * 200)
    assert len(quoted) == SERVER_QUOTE_CHARS and quoted.endswith("word…")
    assert quote_server("x" * SERVER_QUOTE_CHARS) == "x" * SERVER_QUOTE_CHARS
    assert quote_server("abcdef", limit=4) == "abc…"
