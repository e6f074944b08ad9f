"""Skill pairs: matched with/without-Skills trajectories, their transition and Δ per judge, and one
pair side by side item by item with changed items highlighted, a changed item's evidence from both
sides, and links into the item audit. It opens on the most informative pair: the largest |Δ| where
the official outcome did not change.

Layout and widgets only: pairs and transitions come from `gcpc_core.analysis.skills` (through
`gcpc_core.review.pairs`), figures from `gcpc_core.analysis.figures`.
"""

from __future__ import annotations

import streamlit as st

from gcpc_core.analysis import TRANSITIONS, FrameContractError, delta_histogram_figure
from gcpc_core.judge.registry import ordered_judges
from gcpc_core.review.audit import explain_reason
from gcpc_core.review.pairs import (
    item_choice_label,
    most_informative_pair,
    pair_label,
    pairs_table,
    side_by_side,
    transitions,
)
from gcpc_core.review.scores import SCORE_HELP
from gcpc_core.text import md_escape
from gcpc_core.review.ui import (
    badge,
    cached_frames,
    cached_item_views,
    cached_pair_items,
    highlight_rows,
    render_citations,
    require_store,
    visible_frame,
)

store = require_store()
st.title("Skill pairs")
st.caption("A matched pair: a with-Skills and a without-Skills trajectory of the same task, agent, model and trial "
           "index. Δ = score(with) − score(without), where a score is the judge's partial credit: "
           + SCORE_HELP["partial_credit"] + " The transition is <without>→<with> official outcome.")
scores = cached_frames(store)["scores"]
if scores.empty:
    st.info("No scores yet: each task needs a frozen checklist, then judging and scoring, before pairs can be "
            "compared.")
    st.page_link("pages/overview.py", label="Overview: the next step of each task", icon=":material/route:")
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
st.dataframe(visible_frame(transitions(everything, threshold=threshold)), hide_index=True, width="stretch")
st.plotly_chart(delta_histogram_figure(everything), key="pairs:delta_hist")

st.subheader("Pairs")
cols = st.columns(2)
judge = cols[0].selectbox("Judge", ordered_judges(everything["judge"].unique()), key="pairs:judge")
transition = cols[1].selectbox("Transition", ["all", *TRANSITIONS], key="pairs:transition")
pairs = pairs_table(scores, judge=judge, transition=None if transition == "all" else transition)
st.dataframe(visible_frame(pairs), hide_index=True, width="stretch")
if pairs.empty:
    st.info("No pair with this transition for this judge.")
    st.stop()

index = st.selectbox("Pair", range(len(pairs)), key=f"pairs:pick:{judge}:{transition}",
                     index=most_informative_pair(pairs), format_func=lambda i: pair_label(pairs.iloc[i]),
                     help="Opens on the largest |Δ| among pairs whose official outcome did not change")
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
st.dataframe(highlight_rows(visible_frame(shown), "changed"), hide_index=True, width="stretch")

# ---- one item's evidence from both sides -----------------------------------------------------------------
st.subheader("Evidence side by side")
changed = items[items["changed"]]
if changed.empty:
    st.info("No item changed between the two sides: pick another pair to compare evidence.")
    st.stop()
rows = {r["item_id"]: r for r in changed.to_dict("records")}
item_id = st.selectbox("Changed item", list(rows), key=f"pairs:item:{pair['trajectory_id_without']}:{judge}",
                       format_func=lambda i: item_choice_label(rows[i]))
st.text(rows[item_id]["text"])
views = side_by_side(cached_item_views(store, pair["trajectory_id_without"], judge),
                     cached_item_views(store, pair["trajectory_id_with"], judge), item_id)
for col, side in zip(st.columns(2), ("without", "with")):
    view = views[side]
    with col, st.container(border=True):
        st.caption(f"{side.capitalize()} Skills")
        if view is None:
            st.text("(this side has no verdict on this item)")
            continue
        verdicts = st.columns(2)
        with verdicts[0]:
            badge(f"judge {view.verdict_raw}", view.verdict_raw)
        with verdicts[1]:
            if view.overwritten:
                badge(f"scored {view.verdict}", view.verdict)
        for reason in dict.fromkeys(r for r in (view.reason_raw, view.reason) if r):
            st.text("Why: " + explain_reason(reason))
        if view.rationale:
            st.text(view.rationale)
        render_citations(view.citations, f"pairs:{side}:{pair[f'trajectory_id_{side}']}:{judge}:{item_id}")
