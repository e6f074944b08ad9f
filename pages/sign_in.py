"""Sign in: shown instead of every admin page to a visitor without admin rights (`annotations.tokens`)."""

from __future__ import annotations

import streamlit as st

from annotations.tokens import ADMIN_TOKEN_ENV
from gcpc_core.review.ui import SIGN_IN_PROBLEM_KEY, access, sign_in

st.title("GCPC")
if access() == "open":
    st.error(f"This app is reachable from other machines but has no admin token, so no page is open. The owner "
             f"must set {ADMIN_TOKEN_ENV} (then sign in with it), or serve the app on 127.0.0.1 only "
             "(the default of this repository's .streamlit/config.toml).")
    st.stop()
st.write("This app is protected. Study raters: please open the personal link you were sent.")
problem = st.session_state.pop(SIGN_IN_PROBLEM_KEY, None)
with st.form("sign_in"):
    token = st.text_input("Admin token", type="password")
    if st.form_submit_button("Sign in"):
        problem = sign_in(token)
        if problem is None:
            st.rerun()
if problem:
    st.error(problem)
