"""GCPC review app: `streamlit run app.py`. Opens $GCPC_DB, or the embedded demo project."""

from __future__ import annotations

import os
from pathlib import Path
from typing import NoReturn

import streamlit as st

from annotations.tokens import RATE_PATH
from gcpc_core.demo import ensure_demo_project
from gcpc_core.llm import llm_status
from gcpc_core.text import md_escape
from gcpc_core.review.ui import RESUME_PAGE_KEY, SIGN_IN_PROBLEM_KEY, access, sign_in, signed_in
from gcpc_core.store import SchemaTooNew, Store, StoredRowError

st.set_page_config(page_title="GCPC", layout="wide")


@st.cache_resource(show_spinner="Opening project…")
def open_store(db_path: str) -> Store:
    """One Store per DB path for the whole server; it hands each thread its own connection."""
    return Store(db_path)


@st.cache_resource(show_spinner="Building the demo project (simulated data)…")
def demo_db_path() -> str:
    return str(ensure_demo_project())


def stop_with_error(message: str, detail: str | None = None) -> NoReturn:
    """Show only `message` (Markdown) as an error, with `detail` (plain text: it may quote the file) under it,
    and stop: the project cannot be opened."""
    def project_problem() -> None:
        st.error(message)
        if detail:
            st.text(detail)

    # a navigation of this page alone: otherwise Streamlit lists the files of pages/ in a sidebar
    st.navigation([st.Page(project_problem, title="GCPC", default=True)], position="hidden").run()
    st.stop()


db_path = os.environ.get("GCPC_DB") or demo_db_path()
if not Path(db_path).is_file():
    stop_with_error(f"Project DB not found: {md_escape(db_path, limit=1000)}. Create it with `python -m gcpc_core import --db FILE "
                    "--tasks … --trials …` (or `python -m gcpc_core demo --db FILE`), then set GCPC_DB to it.")
try:
    store = open_store(db_path)
except SchemaTooNew as exc:  # a newer GCPC's DB: named with both versions, left unchanged
    stop_with_error("This project DB was written by a newer version of GCPC, so this one does not open it:",
                    str(exc))
st.session_state["db_path"] = db_path
st.session_state["store"] = store

# Access (annotations.tokens; the policy is in its docstring). A visitor with `?token=` is a study rater and
# gets the rate page only — no sidebar, no other page — unless the app is open to everyone (no admin token,
# not bound to loopback), when rater links are refused. Everyone else needs admin rights.
mode = access()
presented = st.query_params.get("admin")
if presented is not None:  # a secret never stays in the address bar (nor in links pages build from the query)
    del st.query_params["admin"]
if st.query_params.get("token"):
    if mode == "open":
        def links_refused() -> None:
            st.error("This app is not set up for study raters yet. Please tell the study organisers.")

        st.navigation([st.Page(links_refused, title="Rate", url_path=path, default=not path)
                       for path in ("", RATE_PATH)], position="hidden").run()
        st.stop()
    # Streamlit serves the default page at the root URL only: the link's `/rate` needs a page of its own (else
    # the rater lands on a "page not found" dialog); a bare `/?token=` runs the same script.
    st.navigation([st.Page("pages/rate.py", title="Rating study", url_path="rate-start", default=True),
                   st.Page("pages/rate.py", title="Rating study", url_path=RATE_PATH)], position="hidden").run()
    st.stop()
if presented is not None:
    problem = sign_in(presented)
    if problem:
        st.session_state[SIGN_IN_PROBLEM_KEY] = problem
ADMIN_PAGES = {  # URL path → (script, title); "" is the default page, served at the root URL
    "": ("pages/overview.py", "Overview"),
    "audit": ("pages/audit.py", "Item audit"),
    "triage": ("pages/triage.py", "Triage"),
    "compare": ("pages/compare.py", "Compare runs"),
    "checklists": ("pages/checklists.py", "Checklists"),
    "pairs": ("pages/pairs.py", "Skill pairs"),
    "agreement": ("pages/agreement.py", "Agreement"),
    "runs": ("pages/runs.py", "Runs"),
    "study_admin": ("pages/study_admin.py", "Human study"),
}
if not signed_in():
    # Every admin URL shows the sign-in form (not a "page not found" dialog) and keeps its path, so signing in
    # lands on the page that was asked for.
    st.navigation([st.Page("pages/sign_in.py", title="Sign in", default=True),
                   *(st.Page("pages/sign_in.py", title="Sign in", url_path=path) for path in ADMIN_PAGES if path)],
                  position="hidden").run()
    st.stop()

with st.sidebar:
    st.caption("Project DB")
    st.code(db_path, language=None)
    if store.project.get_meta("is_demo") == "1":
        st.warning("DEMO project: simulated data, not real agent runs.")
    # Reviewer identity: every item audit and hand-edited checklist is recorded under this name.
    st.session_state.setdefault("reviewer", os.environ.get("GCPC_REVIEWER") or os.environ.get("USER") or "")
    st.text_input("Reviewer", key="reviewer", help="Your name: audits and checklist edits are recorded under it")
    llm_ok, llm_reason = llm_status(store=store)
    st.caption("LLM endpoint")
    st.text(("ready: " if llm_ok else "") + llm_reason + ("" if llm_ok else " — LLM actions are disabled."))

page = st.navigation([st.Page(script, title=title, **({"url_path": path} if path else {"default": True}))
                      for path, (script, title) in ADMIN_PAGES.items()])
resume = st.session_state.pop(RESUME_PAGE_KEY, None)  # a page asked for before this script had run
if resume:
    st.switch_page(resume, query_params=dict(st.query_params))
try:
    page.run()
except StoredRowError as exc:  # a row edited outside GCPC: named, shown as text, and nothing is written
    st.error("This page cannot be shown: the project DB holds a row that GCPC did not write (edited outside it "
             "or damaged). Fix or remove that row, or re-create the data with GCPC.")
    st.text(f"{db_path}: {exc}")
except Exception as exc:  # noqa: BLE001 - admins get the details; raters get Streamlit's generic message
    st.exception(exc)
