"""Item audits: an auditor's agree / disagree (with a corrected verdict) on one judge's item verdict.

The review app records these in the same append-only annotations store as the study answers: a
new audit of the same (trajectory, item, judge, label) by the same reviewer supersedes the previous one and
the history is kept. An audit names the labelled judge run whose verdict it checked; without a label it
is of the judge's default run. These helpers only validate and shape; the app owns the page.
"""

from __future__ import annotations

from gcpc_core.models import AuditSelection, Verdict
from gcpc_core.store import AnnotationRow, Store

from .limits import free_text
from .targets import add_annotation, annotation_target

__all__ = ["SELECTIONS", "VERDICTS", "audit_value", "item_audit_history", "item_audits", "record_item_audit"]

VERDICTS: tuple[str, ...] = Verdict.__args__  # type: ignore[attr-defined]
SELECTIONS: tuple[str, ...] = AuditSelection.__args__  # type: ignore[attr-defined]


def audit_value(agree: bool, corrected_verdict: str | None, selection: str | None = None) -> dict:
    """`{"agree": bool, "verdict": corrected or None, "selection": …}`: a disagreement must say what the verdict
    should be. ``selection`` (`AuditSelection`) is how the verdict came to be audited: ``random`` when it was
    opened from the triage page's proposals (a seeded random draw within its stratum), ``chosen`` otherwise
    (the disagreement list, browsing); only random audits estimate the error rate of verdicts nobody audited.
    Left out when not given (an audit recorded outside the app)."""
    if agree and corrected_verdict is not None:
        raise ValueError("an agreeing audit carries no corrected verdict")
    if not agree and corrected_verdict not in VERDICTS:
        raise ValueError(f"a disagreeing audit needs a corrected verdict, one of {VERDICTS}")
    if selection is not None and selection not in SELECTIONS:
        raise ValueError(f"an audit's selection is one of {SELECTIONS}, not {selection!r}")
    return {"agree": bool(agree), "verdict": corrected_verdict} | ({"selection": selection} if selection else {})


def record_item_audit(
    store: Store, *, trajectory_id: str, item_id: str, judge: str, reviewer: str, agree: bool,
    corrected_verdict: str | None = None, note: str | None = None, task: str | None = None,
    client_token: str | None = None, label: str | None = None, selection: str | None = None,
) -> tuple[AnnotationRow, bool]:
    """Append an audit (`selection`: see `audit_value`); returns (stored row, whether a new row was written —
    False for a repeat)."""
    label = label or _default_label(store, judge)
    if task is None:
        traj = store.trials.get_trajectory(trajectory_id)
        if traj is None:
            raise KeyError(f"no trajectory {trajectory_id!r}")
        task = traj.task
    return add_annotation(
        store,
        kind="item_audit", rater=reviewer, value=audit_value(agree, corrected_verdict, selection), task=task,
        trajectory_id=trajectory_id, item_id=item_id, judge=judge, label=label, note=free_text(note),
        client_token=client_token,
    )


def _default_label(store: Store, judge: str) -> str | None:
    """The judge's default run; None when the judge has no run (the audit then names no run)."""
    return store.judging.default_labels().get(judge)


def item_audits(
    store: Store, *, trajectory_id: str | None = None, judge: str | None = None, label: str | None = None
) -> list[AnnotationRow]:
    """Current audits (latest per reviewer and item), optionally for one trajectory and/or judge; of the
    judge's run `label` (default: each judge's default run)."""
    labels = {judge: label} if judge and label else None
    rows = store.annotations.list(kind="item_audit", trajectory_id=trajectory_id, labels=labels)
    return [r for r in rows if judge is None or r.judge == judge]


def item_audit_history(
    store: Store, *, trajectory_id: str, item_id: str, judge: str, label: str | None = None
) -> list[AnnotationRow]:
    """Every audit version of one item verdict (of run `label`, default the judge's default run) by every
    reviewer, oldest first."""
    label = label or _default_label(store, judge)
    target = annotation_target("item_audit", {"trajectory_id": trajectory_id, "item_id": item_id,
                                                    "judge": judge, "label": label})
    rows = store.annotations.list(kind="item_audit", target=target, current=False, all_labels=True)
    return sorted(rows, key=lambda r: r.id)
