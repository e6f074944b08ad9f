"""Skill pairs: matched with/without-Skills trajectories, their transition and Δ per judge, and one
pair side by side item by item with changed items highlighted and links into the item audit.

Layout and widgets only: pairs and transitions come from `gcpc_core.analysis.skills` (through
`gcpc_core.review.pairs`), figures from `gcpc_core.analysis.figures`.
"""

from __future__ import annotations

import streamlit as st

from gcpc_core.analysis import TRANSITIONS, FrameContractError, delta_histogram_figure, ordered_judges
from gcpc_core.review.pairs import pair_label, pairs_table, transitions
from gcpc_core.review.text import md_escape
from gcpc_core.review.ui import cached_frames, cached_pair_items, highlight_rows, require_store

store = require_store()
st.title("Skill pairs")
st.caption("A matched pair: a with-Skills and a without-Skills trajectory of the same task, agent, model and trial "
           "index. Δ = score(with) − score(without); the transition is <without>→<with> official outcome.")
scores = cached_frames(store)["scores"]
if scores.empty:
    st.info("No scores yet: judge and score the project first (Runs page), then pairs can be compared.")
    st.stop()
try:
    everything = pairs_table(scores)
except FrameContractError as exc:  # e.g. two trials under one condition share a pair key
    st.error("The scores cannot be paired: " + md_escape(exc, limit=400))
    st.stop()
if everything.empty:
    st.info("No matched pairs: every trajectory's condition is unknown, or none has a partner under the other "
            "condition with the same task, agent, model and trial index.")
    st.stop()

threshold = st.slider("Improving / regressing when |Δ| exceeds", 0.0, 0.5, 0.10, 0.05, key="pairs:threshold")
st.subheader("Transitions and Δ per judge")
st.dataframe(transitions(everything, threshold=threshold), hide_index=True, width="stretch")
st.plotly_chart(delta_histogram_figure(everything), key="pairs:delta_hist")

st.subheader("Pairs")
cols = st.columns(2)
judge = cols[0].selectbox("Judge", ordered_judges(everything["judge"].unique()), key="pairs:judge")
transition = cols[1].selectbox("Transition", ["all", *TRANSITIONS], key="pairs:transition")
pairs = pairs_table(scores, judge=judge, transition=None if transition == "all" else transition)
st.dataframe(pairs, hide_index=True, width="stretch")
if pairs.empty:
    st.info("No pair with this transition for this judge.")
    st.stop()

index = st.selectbox("Pair", range(len(pairs)), key=f"pairs:pick:{judge}:{transition}",
                     format_func=lambda i: pair_label(pairs.iloc[i]))
pair = pairs.iloc[index]
sides = st.columns(2)
for col, side in zip(sides, ("without", "with")):
    traj_id = pair[f"trajectory_id_{side}"]
    score = pair[f"score_{side}"]
    with col:
        st.caption(f"{side.capitalize()} Skills")
        st.text(f"{traj_id}\nofficial {pair[f'outcome_{side}']} · score {'n/a' if score != score else f'{score:.3f}'}")
        st.page_link("pages/audit.py", label=f"Audit the {side}-Skills side", icon=":material/fact_check:",
                     query_params={"trajectory": traj_id, "judge": judge})

items = cached_pair_items(store, pair["trajectory_id_without"], pair["trajectory_id_with"], judge)
only_changed = st.toggle("Only changed items", key="pairs:only_changed")
shown = items[items["changed"]] if only_changed else items
st.text(f"{int(items['changed'].sum())} of {len(items)} items changed (postprocessed verdicts, which scores count)")
st.dataframe(highlight_rows(shown, "changed"), hide_index=True, width="stretch")
