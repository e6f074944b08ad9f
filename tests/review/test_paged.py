"""`review.ui.paged`: a long list a page at a time, in a Streamlit script run by AppTest."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest


def _script() -> None:
    import streamlit as st

    from gcpc_core.review.ui import paged

    rows = list(range(st.session_state.get("n", 250)))
    shown = paged(rows, "t", 100, "rows")
    st.text(f"shown {shown[0]}..{shown[-1]}")


def test_a_long_list_is_paged_with_buttons_and_a_page_past_the_end_is_clamped() -> None:
    at = AppTest.from_function(_script).run()
    assert at.text[0].value == "Rows 1–100 of 250 · page 1 of 3" and at.text[1].value == "shown 0..99"
    assert at.button(key="t:prev").disabled and not at.button(key="t:next").disabled
    at.button(key="t:next").click().run()
    at.button(key="t:next").click().run()
    assert at.text[1].value == "shown 200..249" and at.button(key="t:next").disabled
    at.session_state["n"] = 120  # the list shrank below the page the reader was on
    at.run()
    assert at.text[0].value == "Rows 101–120 of 120 · page 2 of 2" and at.text[1].value == "shown 100..119"


def test_a_list_of_one_page_has_no_buttons() -> None:
    at = AppTest.from_function(_script)
    at.session_state["n"] = 40
    at.run()
    assert [t.value for t in at.text] == ["shown 0..39"] and not at.button
