"""Human answers as pandas frames: the contract the analysis package reads.

Only current answers (the latest version of each rater's answer) are returned. Simulated answers
are included and flagged (`simulated`), so an analysis can drop them. `pair_id` is prefixed with
its study (`<study>/<pair>`) so pairs of different studies never merge. Each rating carries its
study's declared scale (`scale_min`, `scale_max`), so a judge's score is mapped onto that scale,
not onto the range the raters happened to use. A stored rating that is not a whole number is
passed through as stored: the analysis reports such a row and goes on without it.
"""

from __future__ import annotations

import pandas as pd

from gcpc_core.store import Store

from .study import load_study

__all__ = ["PREFERENCE_COLUMNS", "RATING_COLUMNS", "preferences_frame", "ratings_frame"]

RATING_COLUMNS = ("trajectory_id", "task", "rater", "rating", "study_id", "unit_id", "note", "created_at", "simulated",
                  "scale_min", "scale_max")
PREFERENCE_COLUMNS = ("pair_id", "task", "left_id", "right_id", "rater", "choice", "confidence", "study_id", "note",
                      "created_at", "simulated")


def ratings_frame(store: Store, study_id: str | None = None) -> pd.DataFrame:
    """Current progress ratings: trajectory_id, task, rater, rating (+ study, unit, note, time, simulated, scale)."""
    rows, scales = [], {}
    for r in store.annotations.list(kind="progress_rating", study_id=study_id):
        sid = r.study_id
        if sid not in scales:
            values = load_study(store, sid).guidelines.scale_values
            scales[sid] = (min(values), max(values))
        rows.append({"trajectory_id": r.trajectory_id, "task": r.task, "rater": r.rater,
                     "rating": r.value.get("rating"), "study_id": sid, "unit_id": r.unit_id, "note": r.note,
                     "created_at": r.created_at, "simulated": r.is_simulated,
                     "scale_min": scales[sid][0], "scale_max": scales[sid][1]})
    frame = pd.DataFrame(rows, columns=list(RATING_COLUMNS)).astype({"simulated": "bool"})
    whole = frame["rating"].map(lambda v: isinstance(v, int) and not isinstance(v, bool)).all()
    return frame.astype({"rating": "int64"}) if whole else frame


def preferences_frame(store: Store, study_id: str | None = None) -> pd.DataFrame:
    """Current preferences: pair_id, task, left_id, right_id, rater, choice (A/B/tie), confidence (+ more)."""
    rows, studies = [], {}
    for r in store.annotations.list(kind="preference", study_id=study_id):
        sid = r.study_id
        study = studies.get(sid) or studies.setdefault(sid, load_study(store, sid))
        left, right = study.pair_sides(r.pair_id)
        rows.append({"pair_id": f"{sid}/{r.pair_id}", "task": r.task, "left_id": left, "right_id": right,
                     "rater": r.rater, "choice": r.value["choice"], "confidence": r.confidence,
                     "study_id": sid, "note": r.note, "created_at": r.created_at, "simulated": r.is_simulated})
    frame = pd.DataFrame(rows, columns=list(PREFERENCE_COLUMNS))
    return frame.astype({"simulated": "bool"})
