"""Plotly figures of the report, built from the analysis tables (pure: frames in, figures out).

Every label that comes from data (judge, task, item ids) is HTML-escaped before it reaches
plotly, because plotly.js renders a subset of HTML in text; escaped, a task named
``<b>x</b>`` shows literally instead of being interpreted.
"""

from __future__ import annotations

import html
import re

import pandas as pd
import plotly.graph_objects as go
from plotly.colors import qualitative
from plotly.subplots import make_subplots

from .skills import TRANSITIONS

__all__ = ["agreement_figure", "delta_histogram_figure", "item_change_heatmap", "natural_key", "roc_figure",
           "sensitivity_figure"]

PALETTE = qualitative.Plotly


def _label(value: object) -> str:
    return html.escape(str(value))


def natural_key(value: object) -> tuple:
    """Sort key reading digit runs as numbers: C1, C2, …, C10 (not C1, C10, C2)."""
    return tuple((0, int(part), "") if part.isdigit() else (1, 0, part)
                 for part in re.split(r"(\d+)", str(value)) if part)


def _rgba(hex_color: str, alpha: float) -> str:
    r, g, b = (int(hex_color[i:i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r},{g},{b},{alpha})"


def roc_figure(curves: pd.DataFrame, bands: pd.DataFrame, aucs: pd.DataFrame) -> go.Figure:
    """ROC curve per judge with its bootstrap TPR band; legend shows AUC [CI]."""
    fig = go.Figure()
    auc = aucs.set_index("judge")
    for k, (judge, c) in enumerate(curves.groupby("judge", sort=False)):
        color = PALETTE[k % len(PALETTE)]
        b = bands[bands["judge"] == judge]
        fig.add_trace(go.Scatter(x=b["fpr"], y=b["tpr_high"], mode="lines", line={"width": 0}, hoverinfo="skip",
                                 showlegend=False, legendgroup=_label(judge)))
        fig.add_trace(go.Scatter(x=b["fpr"], y=b["tpr_low"], mode="lines", line={"width": 0}, fill="tonexty",
                                 fillcolor=_rgba(color, 0.18), hoverinfo="skip", showlegend=False,
                                 legendgroup=_label(judge)))
        r = auc.loc[judge]
        fig.add_trace(go.Scatter(x=c["fpr"], y=c["tpr"], mode="lines", line={"color": color, "width": 2},
                                 legendgroup=_label(judge),
                                 name=f"{_label(judge)}: AUC {r['auc']:.3f} [{r['ci_low']:.3f}, {r['ci_high']:.3f}]"))
    fig.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", line={"dash": "dot", "color": "grey"}, name="chance"))
    fig.update_layout(title="ROC vs official PASS (bands: task-clustered bootstrap)", xaxis_title="false positive rate",
                      yaxis_title="true positive rate", width=720, height=560)
    return fig


def delta_histogram_figure(pairs: pd.DataFrame) -> go.Figure:
    """Histogram of Δ = score(with) − score(without) per transition, one colour per judge; the four
    panels share both axes (Δ from −1 to 1, one count scale) so they can be compared at a glance."""
    fig = make_subplots(rows=2, cols=2, subplot_titles=TRANSITIONS, shared_xaxes="all", shared_yaxes="all")
    for k, judge in enumerate(pairs["judge"].unique()):
        for t, transition in enumerate(TRANSITIONS):
            d = pairs.loc[(pairs["judge"] == judge) & (pairs["transition"] == transition), "delta"].dropna()
            fig.add_trace(go.Histogram(x=d, name=_label(judge), legendgroup=_label(judge), showlegend=t == 0,
                                       marker_color=PALETTE[k % len(PALETTE)], opacity=0.6,
                                       xbins={"start": -1.025, "end": 1.025, "size": 0.05}),
                          row=t // 2 + 1, col=t % 2 + 1)
    fig.update_xaxes(range=[-1.05, 1.05], showticklabels=True)
    fig.update_yaxes(showticklabels=True, rangemode="nonnegative")
    fig.update_layout(barmode="overlay", title="Δ score (with − without Skills) by outcome transition (without→with)",
                      height=620, width=900)
    return fig


def agreement_figure(agreement: pd.DataFrame) -> go.Figure:
    """Pairwise agreement with human preferences, with and without ties, per judge and human–human."""
    fig = go.Figure()
    who = [_label(j) for j in agreement["judge"]]
    for column, name in (("agreement_with_ties", "with ties"), ("agreement_without_ties", "without ties")):
        fig.add_trace(go.Bar(x=who, y=agreement[column], name=name))
    fig.update_layout(barmode="group", yaxis={"range": [0, 1], "title": "agreement"},
                      title="Agreement with human pairwise preferences (MT-Bench convention)", width=720, height=440)
    return fig


def sensitivity_figure(table: pd.DataFrame) -> go.Figure:
    """Shares of perturbed Yes items judged No and No-or-Abstain, per judge run and setting, with bootstrap
    CIs. A bar names its run's label when its judge has results from several runs."""
    several = table.duplicated("judge", keep=False)
    runs = table.groupby("judge")["label"].transform("nunique")
    who = [_label(r.judge if not dup else f"{r.judge} ("
                  + (f"run {r.label}, " if n_runs > 1 else "") + f"{r.scope}, seed {r.seed}"
                  + (f", {r.model}" if isinstance(r.model, str) else "") + ")")
           for r, dup, n_runs in zip(table.itertuples(index=False), several, runs)]
    fig = go.Figure()
    for column, name in (("share_no", "→ No"), ("share_no_or_abstain", "→ No or Abstain")):
        fig.add_trace(go.Bar(x=who, y=table[column], name=name, error_y={
            "type": "data", "symmetric": False, "array": table[f"{column}_high"] - table[column],
            "arrayminus": table[column] - table[f"{column}_low"]}))
    fig.update_layout(barmode="group", yaxis={"range": [0, 1], "title": "share of perturbed Yes items"},
                      title="Evidence sensitivity: verdicts after the cited span was perturbed", width=720, height=440)
    return fig


def item_change_heatmap(changes: pd.DataFrame, judge: str) -> go.Figure:
    """Task × item heatmap of net item change (gained − lost) / pairs, for one judge; items in natural
    order (C1, C2, …, C10)."""
    c = changes[changes["judge"] == judge]
    grid = c.pivot(index="task", columns="item_id", values="net_share")
    grid = grid[sorted(grid.columns, key=natural_key)]
    counts = c.pivot(index="task", columns="item_id", values="n_pairs").reindex_like(grid)
    fig = go.Figure(go.Heatmap(
        z=grid.to_numpy(), x=[_label(i) for i in grid.columns], y=[_label(t) for t in grid.index],
        zmin=-1, zmax=1, colorscale="RdBu", colorbar={"title": "net share"}, customdata=counts.to_numpy(),
        hovertemplate="task %{y}<br>item %{x}<br>net share %{z:.2f}<br>pairs %{customdata}<extra></extra>"))
    fig.update_layout(title=f"Item changes with − without Skills, per task ({_label(judge)})",
                      height=max(360, 22 * len(grid) + 160), width=max(560, 40 * grid.shape[1] + 320))
    return fig
