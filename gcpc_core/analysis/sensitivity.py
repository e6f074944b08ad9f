"""Evidence sensitivity (RQ4): does a Yes verdict rest on the evidence it cites?

For every Yes item with grounded citations, each cited span is replaced in its event by a
plausible wrong value (`perturb.perturb_span`: numbers shifted, paths altered, strings swapped;
the recipe is stored), the evidence view is rebuilt from the perturbed events, and the trajectory
is judged again through the judge's own path (`judge.units.judge_unit`: same prompts, LLM layer,
response cache, repair policy and grounding check). A judge that reads its evidence should now say
No, or at least no longer Yes; one that keeps saying Yes was not looking at what it cited.

Only the item's own verdict on the perturbed log is read: one perturbation per (trajectory, item),
so a flip is attributable to that item's evidence. The re-judge uses the model and prompt version
of the original verdict (a different model would confound sensitivity with model differences);
items judged otherwise are skipped with the reason. The probe judge runs offline, which makes the
test a deterministic check of the probes themselves (does a probe still fire on a wrong value?).

`scope` says where the span is replaced: ``cited`` — only in the cited event (the judge could still
find the span in another event; such rows are counted in ``span_remaining``), or ``log`` — in every
evidence event that contains it, so the evidence is gone from the whole log.

Pure parts: `perturb_events`, `sensitivity_table`; `perturbation_frame` reads the stored rows for the
loader. Running the perturbations (LLM calls, one stored row per item) is the `gcpc_core.perturb` stage.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd

from ..defaults import PERTURB_SCOPES
from ..evidence import EVIDENCE_KINDS, quote_occurs
from ..models import Citation, Event
from ..store import Store
from .bootstrap import (
    FEW_CLUSTERS_NOTE,
    MIN_CLUSTERS,
    cluster_counts,
    clustered_ci,
    draw_clusters,
    few_clusters_note,
    ratio_draws,
)
from .frames import judge_order_of, require_columns
from .perturb import perturb_span

__all__ = [
    "FRAME_COLUMNS",
    "SCOPES",
    "PerturbationError",
    "perturb_events",
    "perturbation_frame",
    "recipe_kind",
    "sensitivity_table",
]

Scope = Literal["cited", "log"]
SCOPES = PERTURB_SCOPES
FRAME_COLUMNS = (
    "trajectory_id", "task", "judge", "label", "item_id", "route", "model", "prompt_version", "seed", "scope", "status",
    "kind", "original_verdict", "verdict", "reason", "span_remaining", "recipe", "run_id",
)
"""The `perturbations` analysis frame (one row per perturbed item; `recipe` as a JSON string)."""
SETTING = ("judge", "label", "model", "scope", "seed")
"""What makes two perturbation rows comparable: pooled only when all of these agree (the same labelled
judge run, model, scope and seed)."""


class PerturbationError(ValueError):
    """A citation cannot be perturbed (its quote is not in the event it cites)."""


# ---------------------------------------------------------------- pure: perturbing a log


def perturb_events(
    events: Sequence[Event], citations: Sequence[Citation], *, seed: int, scope: Scope = "cited"
) -> tuple[list[Event], list[dict[str, Any]], list[str]]:
    """Replace every cited span (see module doc for `scope`); return ``(events, recipes, still)``.

    `recipes` holds one `perturb_span` recipe per replaced (citation, event), with ``citation``
    (its index), ``event_id`` and ``cited``; a citation whose span an earlier citation of the same
    item already altered is recorded with ``skipped``. `still` lists evidence events in which some
    cited quote can still be found afterwards. Raises PerturbationError when a quote is not in
    the event it cites (the log changed since it was judged).
    """
    if scope not in SCOPES:
        raise ValueError(f"scope must be one of {SCOPES}, got {scope!r}")
    texts = {e.id: e.text for e in events}
    evidence = [e.id for e in events if e.kind in EVIDENCE_KINDS]
    recipes: list[dict[str, Any]] = []
    for index, c in enumerate(citations):
        if c.event_id not in texts or not quote_occurs(c.quote, texts[c.event_id]):
            original = next((e.text for e in events if e.id == c.event_id), None)
            if original is not None and quote_occurs(c.quote, original):
                recipes.append({"citation": index, "event_id": c.event_id, "cited": True, "quote": c.quote,
                                "skipped": "span already altered by an earlier citation of this item"})
                continue
            raise PerturbationError(f"quote of citation {index} is not in {c.event_id}: {c.quote[:80]!r}")
        targets = [c.event_id]
        if scope == "log":
            targets += [eid for eid in evidence if eid != c.event_id and quote_occurs(c.quote, texts[eid])]
        for eid in targets:
            texts[eid], recipe = perturb_span(texts[eid], c.quote, seed)
            recipes.append({"citation": index, "event_id": eid, "cited": eid == c.event_id, **recipe})
    still = [eid for eid in evidence if any(quote_occurs(c.quote, texts[eid]) for c in citations)]
    changed = [e if e.text == texts[e.id] else e.model_copy(update={"text": texts[e.id]}) for e in events]
    return changed, recipes, still


def recipe_kind(recipes: Sequence[dict[str, Any]]) -> str | None:
    """The one kind of edit made to an item's cited spans (`mixed` when they differ), as stored per row."""
    kinds = sorted({r["kind"] for r in recipes if r.get("cited") and "kind" in r})
    return kinds[0] if len(kinds) == 1 else ("mixed" if kinds else None)


# ---------------------------------------------------------------- pure: the statistic


def sensitivity_table(
    perturbations: pd.DataFrame,
    *,
    by: Sequence[str] = (),
    n_boot: int = 10_000,
    seed: int = 0,
    ci: float = 0.95,
) -> pd.DataFrame:
    """Shares of perturbed Yes items now judged No, and No-or-Abstain, per setting (+ `by`).

    Rows with status ``judged`` count; ``not_perturbed`` rows are counted beside them. CIs are
    percentile intervals of a task-clustered bootstrap (tasks resampled with replacement, all
    their items kept), vectorized: each draw's share is a ratio of count-weighted task sums (`bootstrap.ratio_draws`);
    a group with fewer than two tasks has no interval (NaN), since one cluster says nothing about variation, and
    one with fewer than `bootstrap.RELIABLE_CLUSTERS` has its interval flagged unreliable in ``note``.
    ``span_remaining`` counts judged rows whose cited span could still be found in the perturbed
    evidence (another event under scope ``cited``): a Yes there may be right.
    """
    require_columns(perturbations, ("trajectory_id", "task", *SETTING, "status", "verdict", *by), "perturbations")
    keys = [*SETTING, *by]
    columns = [*keys, "n", "to_no", "share_no", "share_no_low", "share_no_high", "to_no_or_abstain",
               "share_no_or_abstain", "share_no_or_abstain_low", "share_no_or_abstain_high", "still_yes",
               "span_remaining", "tasks", "not_perturbed", "note"]
    rows = []
    frame = perturbations.assign(model=perturbations["model"].fillna("—"))
    for values, g in frame.groupby(keys, sort=False, dropna=False):
        judged = g[g["status"] == "judged"]
        no = (judged["verdict"] == "No").to_numpy(float)
        noa = judged["verdict"].isin(["No", "Abstain"]).to_numpy(float)
        codes, tasks = pd.factorize(judged["task"])
        counts = cluster_counts(draw_clusters(len(tasks), n_boot, seed), len(tasks))
        draws = ratio_draws(np.stack([no, noa]), np.ones(len(no)), codes, counts)
        low, high, _ = clustered_ci(draws, len(tasks), ci)
        n = len(judged)
        remaining = judged["span_remaining"] if "span_remaining" in judged else pd.Series(0, index=judged.index)
        rows.append({
            **dict(zip(keys, values if isinstance(values, tuple) else (values,))),
            "n": n, "to_no": int(no.sum()), "share_no": no.mean() if n else np.nan,
            "share_no_low": low[0], "share_no_high": high[0],
            "to_no_or_abstain": int(noa.sum()), "share_no_or_abstain": noa.mean() if n else np.nan,
            "share_no_or_abstain_low": low[1], "share_no_or_abstain_high": high[1],
            "still_yes": int((judged["verdict"] == "Yes").sum()),
            "span_remaining": int((remaining.fillna(0).astype(int) > 0).sum()), "tasks": len(tasks),
            "not_perturbed": int((g["status"] == "not_perturbed").sum()),
            "note": FEW_CLUSTERS_NOTE if 0 < len(tasks) < MIN_CLUSTERS else few_clusters_note(len(tasks)),
        })
    out = pd.DataFrame(rows, columns=columns)
    if out.empty:
        return out
    order = {j: i for i, j in enumerate(judge_order_of(perturbations).ordered(out["judge"]))}
    out = out.sort_values(keys, key=lambda s: s.map(order) if s.name == "judge" else s, kind="stable")
    out["model"] = out["model"].replace("—", None)
    return out.reset_index(drop=True)


def perturbation_frame(
    store: Store, *, judges: Iterable[str] | None = None, labels: Mapping[str, str] | None = None,
    all_labels: bool = False,
) -> pd.DataFrame:
    """The `perturbations` analysis frame of a project (empty, with its columns, when none ran): the
    results on each judge's chosen run (its default label, or `labels`; every run with `all_labels`)."""
    wanted = set(judges) if judges is not None else None
    rows = []
    for r in store.perturbations.list(labels=labels, all_labels=all_labels):
        if wanted is not None and r.judge not in wanted:
            continue
        recipe = r.recipe or {}
        fields = r.model_dump()
        rows.append({**{c: fields.get(c) for c in FRAME_COLUMNS},
                     "span_remaining": len(recipe.get("still_in", [])) if isinstance(recipe, dict) else 0,
                     "recipe": json.dumps(recipe, ensure_ascii=False, sort_keys=True)})
    frame = pd.DataFrame(rows, columns=list(FRAME_COLUMNS))
    return frame.astype({"seed": "int64", "span_remaining": "int64"}) if len(frame) else frame
