"""Study admin: create a study, watch progress and agreement, adjudicate, reassign, links, export, import.

Layout only: every number and every action comes from `annotations` (admin, study, exchange).
Admins see the unblinded design (trajectory ids, strata); raters never reach this page.
"""

from __future__ import annotations

import math
import os

import pandas as pd
import streamlit as st
from pydantic import ValidationError

from annotations import (
    DesignError,
    DesignParams,
    LinkRefused,
    add_rater,
    agreement,
    check_links_allowed,
    create_study,
    disagreements,
    export_csv,
    export_jsonl,
    import_responses,
    invite_link,
    issue_link,
    load_study,
    rater_link,
    rater_progress,
    reassign,
    unit_progress,
)
from annotations.exchange import DesignRecordError
from annotations.tokens import ADMIN_TOKEN_ENV
from gcpc_core.text import md_escape
from gcpc_core.review.ui import app_base_url, pin_choice, require_store

# app.py only shows this page to admins; require_store checks again, so the page never relies on how it was reached
store = require_store()
st.title("Human study")
st.caption("Blinded progress ratings and pairwise preferences. Rater links open a page that shows only that "
           "rater's queue, with no outcomes, judge scores, conditions, model or agent names.")

base_url = st.text_input("App URL for rater links", value=app_base_url(), key="study_base_url",
                         help="Where raters reach this app: $GCPC_PUBLIC_URL, else the address you opened it at")
try:
    check_links_allowed(base_url, os.environ.get(ADMIN_TOKEN_ENV))
    links_refused = None
except LinkRefused as exc:
    links_refused = str(exc)
    st.warning("Rater links are not shown: " + md_escape(links_refused, limit=600))


def show_links(links: dict[str, str | None]) -> None:
    if links_refused:
        return
    for rater, link in links.items():
        st.text(rater)
        if link is None:
            st.text("(this link cannot be shown again: issue a new one)")
        else:
            st.code(link, language=None)


studies = store.studies.list()
with st.expander("Create a study", expanded=not studies):
    with st.form("create_study"):
        c = st.columns(4)
        n_tasks = c[0].number_input("Tasks", min_value=1, value=12)
        per_task = c[1].number_input("Trajectories per task", min_value=1, value=8)
        k = c[2].number_input("Raters per unit", min_value=1, value=3)
        seed = c[3].number_input("Seed", min_value=0, value=0)
        raters_text = st.text_input("Raters (comma-separated names)", value="rater-01, rater-02, rater-03")
        pairs = st.number_input("Pairs per task (empty: every within-task pair; 0: none)", min_value=0, value=None)
        name = st.text_input("Study name (optional)")
        if st.form_submit_button("Create and freeze"):
            try:
                params = DesignParams(tasks=int(n_tasks), per_task=int(per_task), raters_per_unit=int(k),
                                      seed=int(seed), raters=tuple(r.strip() for r in raters_text.split(",")),
                                      pairs_per_task=None if pairs is None else int(pairs))
                created = create_study(store, params, name=name or None, created_by="app")
            except (ValidationError, DesignError, ValueError) as exc:
                st.error(md_escape(exc, limit=2000))
            else:
                st.session_state["study_admin_new_links"] = created.links(base_url)
                st.session_state["study_admin_study"] = created.study_id
                st.rerun()

new_links = st.session_state.pop("study_admin_new_links", None)
if new_links:
    st.success("Study created and frozen.")
    show_links(new_links)

studies = store.studies.list()
if not studies:
    st.info("No study yet. Create one above, or run `python -m gcpc_core study create --help`.")
    st.stop()

labels = {s.id: f"{s.name} · {s.id} · {s.status}" + (" · SIMULATED raters" if s.is_simulated else "")
          for s in studies}
ids = list(labels)
chosen = st.session_state.pop("study_admin_study", None)  # a study just created
if chosen in ids:
    st.session_state["study_admin_pick"] = chosen
pin_choice("study_admin_pick", ids)  # labels carry the status: closing a study must not switch to another
study_id = st.selectbox("Study", ids, key="study_admin_pick", format_func=labels.get)
study = load_study(store, study_id)
if study.is_simulated:
    st.warning("SIMULATED raters: the answers of raters marked simulated were produced by GCPC's rater "
               "simulator for the demo, not by people.")

with st.expander("Frozen design"):
    st.text("\n".join(study.design.summary_lines()))
    st.text(f"created {study.created_at}; guidelines sha {study.guidelines.sha[:12]}")
if st.button("Close study (answers become read-only)" if study.status == "open" else "Reopen study"):
    store.studies.set_status(study_id, "closed" if study.status == "open" else "open")
    st.rerun()

progress, agree, adjudicate, raters_tab, data_tab = st.tabs(
    ["Progress", "Agreement", "Disagreements", "Raters and links", "Export and import"])

with progress:
    rows = rater_progress(store, study_id)
    done, total = sum(r["done"] for r in rows), sum(r["total"] for r in rows)
    st.progress(done / total if total else 1.0, text=f"{done} of {total} assigned answers in")
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
    units = pd.DataFrame(unit_progress(store, study_id))
    only_open = st.toggle("Only units and pairs still waiting for answers", key="study_admin_open_only")
    st.dataframe(units[~units["complete"]] if only_open else units, hide_index=True, width="stretch")

with agree:
    st.caption("Krippendorff's α over current answers, as in the report: ordinal for progress ratings, nominal for "
               "preferences (each vote: the pair's first or second trajectory in id order, or a tie). Only units with two or more answers count.")
    cols = st.columns(2)
    for col, a in zip(cols, agreement(store, study_id)):
        col.metric(f"α {a.kind.replace('_', ' ')} ({a.level})", "n/a" if math.isnan(a.alpha) else f"{a.alpha:.3f}")
        col.text(f"{a.units} units with ≥2 answers, {a.raters} raters, {a.answers} answers" +
                 (f"\n{a.note}" if a.note else ""))

with adjudicate:
    spread = st.slider("Flag ratings that span at least this many scale points", 1, 4, 2, key="study_admin_spread")
    rows = disagreements(store, study_id, min_spread=spread)
    if rows:
        st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
    else:
        st.info("No unit or pair with high disagreement.")

with raters_tab:
    names = [r.rater for r in store.studies.raters(study_id)]
    st.subheader("Invitation links")
    c = st.columns([2, 1, 1])
    who = c[0].selectbox("Rater", names, key="study_admin_link_rater")
    if c[1].button("Show link", disabled=bool(links_refused)):
        show_links({who: rater_link(store, study_id, who, base_url)})
    if c[2].button("Issue a new link", help="The rater's old link stops working.", disabled=bool(links_refused)):
        show_links({who: invite_link(issue_link(store, study_id, who), base_url)})
    with st.form("add_rater", clear_on_submit=True):
        newcomer = st.text_input("Add a rater (empty queue: reassign items to them below)")
        if st.form_submit_button("Add rater") and newcomer.strip():
            try:
                show_links({newcomer.strip(): invite_link(add_rater(store, study_id, newcomer), base_url)})
            except ValueError as exc:
                st.error(md_escape(exc, limit=600))
    st.subheader("Reassign")
    c = st.columns(2)
    source = c[0].selectbox("From", names, key="study_admin_from")
    target = c[1].selectbox("To", [n for n in names if n != source], key="study_admin_to")
    held = [(a.kind, a.target) for a in store.studies.assignments(study_id, rater=source)]
    picked = st.multiselect("Items (empty: every item the first rater has not answered yet)", held,
                            format_func=lambda h: f"{h[0]} {h[1]}", key="study_admin_items")
    if st.button("Reassign", disabled=target is None):
        report = reassign(store, study_id, source, target, targets=picked or None)
        st.success(md_escape(f"Moved {len(report.moved)} items from {source} to {target}.", limit=600))
        for kind, item, reason in report.skipped:
            st.text(f"skipped {kind} {item}: {reason}")

with data_tab:
    st.caption("Every version of every answer, with the design (task, trajectories, strata, sides); "
               "`is_current` marks live answers.")
    c = st.columns(2)
    # on_click="ignore": a download must not rerun the page. A rerun re-registers these deferred exports
    # under new ids, and a second click landing before the browser has them fails ("file not found").
    c[0].download_button("Download CSV", data=lambda: export_csv(store, study_id),
                         file_name=f"{study_id}-responses.csv", mime="text/csv", on_click="ignore")
    c[1].download_button("Download JSONL (design + responses)", data=lambda: export_jsonl(store, study_id),
                         file_name=f"{study_id}.jsonl", mime="application/jsonl", on_click="ignore")
    upload = st.file_uploader("Import responses collected elsewhere (CSV or JSONL, the export's shape)",
                              type=["csv", "jsonl", "json"], key="study_admin_upload")
    allow = st.checkbox("Accept answers on items never assigned to that rater", key="study_admin_unassigned")
    if upload is not None and st.button("Import"):
        try:
            report = import_responses(store, upload.getvalue().decode("utf-8"), study_id=study_id,
                                      allow_unassigned=allow, source=upload.name)
        except DesignRecordError as exc:  # names the file, the line and the problem; nothing was written
            st.error("The file was refused.")
            st.text(str(exc))
        else:
            (st.success if report.ok else st.warning)("Import done." if report.ok else "Some rows were rejected.")
            st.text("\n".join(report.lines()))
