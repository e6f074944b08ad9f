"""gcpc_core.text: Markdown escaping of untrusted text, checked by how a Markdown reader sees it."""

from __future__ import annotations

import re

import pytest

from gcpc_core.text import md_escape


def test_md_escape_neutralises_markdown_and_html() -> None:
    hostile = "[link](javascript:alert(1)) ![img](x) <img src=x onerror=alert(1)> **b** :red[x]\nline"
    escaped = md_escape(hostile)
    assert "\n" not in escaped
    unescaped = re.findall(r"(?<!\\)[\[\]()!<>*:]", escaped)
    assert unescaped == []
    assert escaped.replace("\\", "") == " ".join(hostile.split())  # nothing lost, only escaped
    assert md_escape("x" * 500, limit=10) == "x" * 9 + "…"


# ---------------------------------------------------------------- md_escape, case by case

MD_CASES = {
    "image": "![x](http://127.0.0.1:9/p.png)",
    "relative image": "![x](p.png)",
    "link": "[click](http://evil)",
    "reference link": "[click][1]\n[1]: http://evil",
    "autolink": "<http://evil.test>",
    "bare url": "see http://evil.test/a now",
    "www": "www.evil.test",
    "email": "write to a.b@evil.test",
    "colour": ":red[x] :blue-background[y] :blue-badge[z]",
    "latex": "$x$ and $$y$$",
    "heading": "# H1\n## H2",
    "html": "<img src=x onerror=alert(1)><b>b</b>",
    "backticks": "`code` and ``more`` and a ` lone one",
    "backtick around url": "`http://evil` x``y",
    "emoji": ":smile: :+1: :-1: :streamlit:",
    "material icon": ":material/home: and :material/lock:",
    "entities": "&amp; &#58; &#x3a; &lt;b&gt;",
    "emphasis": "**b** _i_ ~~s~~ ~t~",
    "list and quote": "- a\n> b\n1. c",
}


@pytest.mark.parametrize("case", list(MD_CASES))
def test_md_escape_shows_each_kind_of_markup_as_text(case: str) -> None:
    from markdown_reader import live_markup, read

    hostile = MD_CASES[case]
    escaped = md_escape(hostile, limit=1000)
    assert live_markup(escaped) == []
    parsed = read(escaped)
    assert parsed.shown == " ".join(hostile.split())  # what the reader sees is the text itself, on one line
    for piece in parsed.plain:  # outside code spans every Markdown-significant character is escaped
        assert re.findall(r"(?<!\\)[\[\]()!<>*_~#`$&:]", re.sub(r"\\.", "", piece)) == [], piece
    inline = md_escape(hostile, limit=None, mid_line=True)  # for a line's middle (report.md): fewer escapes
    assert live_markup(inline) == [] and read(inline).shown == parsed.shown
    assert re.findall(r"(?<!\\)[*_~`&|<]", "".join(re.sub(r"\\.", "", p) for p in read(inline).plain)) == []


def test_md_escape_puts_only_rewritten_words_in_code_spans() -> None:
    from markdown_reader import read

    parsed = read(md_escape("Moved 3 items from ![x](http://127.0.0.1:9/p.png) to bob at 09:00:00 (run probe:offline:v1)."))
    assert parsed.code == ["![x](http://127.0.0.1:9/p.png)", "probe:offline:v1)."]
    assert md_escape("plain words, 0.994 [0.986, 1.000]") == r"plain words, 0\.994 \[0\.986, 1\.000\]"
    assert md_escape("``http://a`b``") == "``` ``http://a`b`` ```"  # a longer fence, padded: its backticks stay
