"""Compare judge runs: two labelled runs (e.g. two models of one judge) side by side — AUC of each vs
official PASS with the paired ΔAUC, agreement of their raw item verdicts, and every item where they
differ, each linking into the item audit (which shows both verdicts with their citations).

Layout and widgets only: `gcpc_core.review.compare` and `gcpc_core.analysis.compare` compute everything.
Data values are shown through st.dataframe / st.text only.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from gcpc_core.analysis import FrameContractError
from gcpc_core.analysis.compare import run_key
from gcpc_core.review.compare import default_pair, differing_table, run_choices, run_title
from gcpc_core.text import md_escape
from gcpc_core.review.ui import app_base_url, cached_compare, require_store, run_labels_help

store = require_store()
st.title("Compare runs")
runs = run_choices(store)
pair = default_pair(runs)
if pair is None:
    st.info("Comparing needs two labelled judge runs: run `judge` again with another model or `--label`.")
    st.stop()
titles = {r["key"]: run_title(r) for r in runs}
names = {r["key"]: r["name"] for r in runs}
RUN_HELP = run_labels_help(store.judging.labels())
keys = [r["key"] for r in runs]
if any(r["simulated"] for r in runs):
    st.warning("A run marked SIMULATED holds simulated verdicts (the demo's second model), not a judge's.")
cols = st.columns(2)
a = cols[0].selectbox("Run A", keys, index=keys.index(pair[0]), format_func=titles.get, key="compare:a", help=RUN_HELP)
b = cols[1].selectbox("Run B", keys, index=keys.index(pair[1]), format_func=titles.get, key="compare:b", help=RUN_HELP)
if a == b:
    st.info("Choose two different runs.")
    st.stop()
try:
    with st.spinner("Comparing…"):
        result = cached_compare(store, a, b)
except (ValueError, FrameContractError) as exc:
    st.error("These runs cannot be compared: " + md_escape(exc, limit=400))
    st.stop()

st.subheader("Headline")
st.text(result.headline(names))
for note in result.notes:
    st.text("Note: " + note)
m = st.columns(4)
delta = result.delta.iloc[0]
m[0].metric("ΔAUC (A − B)", "n/a" if pd.isna(delta["delta_auc"]) else f"{delta['delta_auc']:+.3f}")
m[1].metric("Items both judged", result.n_items)
m[2].metric("Same raw verdict", "n/a" if not result.n_items else f"{100 * result.agreement:.1f}%")
m[3].metric("Cohen's κ", "n/a" if pd.isna(result.kappa) else f"{result.kappa:.3f}")

st.subheader("AUC vs official PASS, on the trajectories both runs scored")
RUN_COLUMN = st.column_config.TextColumn(help=RUN_HELP)
st.dataframe(result.auc[["judge", "n", "n_pass", "n_fail", "n_tasks", "auc", "ci_low", "ci_high", "note"]]
             .assign(judge=lambda t: t["judge"].map(names)).rename(columns={"judge": "run"}),
             hide_index=True, width="stretch", column_config={"run": RUN_COLUMN})
st.dataframe(result.delta[["judge_a", "judge_b", "n", "delta_auc", "ci_low", "ci_high", "share_draws_gt_0", "note"]]
             .assign(judge_a=lambda t: t["judge_a"].map(names), judge_b=lambda t: t["judge_b"].map(names))
             .rename(columns={"judge_a": "run A", "judge_b": "run B"}), hide_index=True, width="stretch",
             column_config={"run A": RUN_COLUMN, "run B": RUN_COLUMN})

st.subheader("Raw item verdicts on the items both judged (rows A, columns B)")
st.dataframe(result.confusion, width="stretch")

st.subheader("Evidence sensitivity of each run")
if result.sensitivity.empty:
    st.text("Neither run has perturbation results. This command perturbs the cited evidence of a run's Yes verdicts "
            "and judges them again:")
    st.code("python -m gcpc_core perturb --db FILE --judge KIND --run LABEL", language="bash")
else:
    st.text("Shares of each run's perturbed Yes verdicts judged No, and No or Abstain, once the cited span was "
            "replaced by a wrong value (task-clustered intervals).")
    st.dataframe(result.sensitivity.assign(run=[names.get(run_key(j, lab), lab) for j, lab in
                                                zip(result.sensitivity["judge"], result.sensitivity["label"])]),
                 hide_index=True, width="stretch", column_config={"run": RUN_COLUMN})

st.subheader(f"Items where the runs differ ({len(result.differing)})")
differ = differing_table(result, app_base_url())
st.dataframe(differ, hide_index=True, width="stretch", column_config={
    "audit_a": st.column_config.LinkColumn("audit A", display_text="open A", help="Open run A's verdict in the item audit"),
    "audit_b": st.column_config.LinkColumn("audit B", display_text="open B", help="Open run B's verdict in the item audit"),
})
if len(differ):
    rows = differ.to_dict("records")
    pick = st.columns([4, 1, 1])
    chosen = pick[0].selectbox("Open a differing item", range(len(rows)), key="compare:open",
                               format_func=lambda k: f"{rows[k]['trajectory_id']} · {rows[k]['item_id']} · "
                               f"A {rows[k]['verdict_a']} / B {rows[k]['verdict_b']}")
    row = rows[chosen]
    for col, (judge, label), name in ((pick[1], result.a, "A"), (pick[2], result.b, "B")):
        col.page_link("pages/audit.py", label=f"Audit {name}'s verdict", icon=":material/fact_check:",
                      query_params={"trajectory": row["trajectory_id"], "judge": judge, "item": row["item_id"],
                                    "label": label})
