"""Sign in: shown instead of every page when $GCPC_ADMIN_TOKEN is set and not yet presented."""

from __future__ import annotations

import os

import streamlit as st

from annotations.tokens import ADMIN_TOKEN_ENV, is_admin

st.title("GCPC")
st.write("This app is protected. Study raters: please open the personal link you were sent.")
with st.form("sign_in"):
    token = st.text_input("Admin token", type="password")
    if st.form_submit_button("Sign in"):
        if is_admin(token, os.environ.get(ADMIN_TOKEN_ENV)):
            st.session_state["admin_token"] = token
            st.rerun()
        st.error("Wrong admin token.")
