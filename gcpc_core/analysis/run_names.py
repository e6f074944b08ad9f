"""Labelled judge runs named for a reader, in one place: every page, the report and the Runs table name a run
with `run_name` and keep its full label beside it (a tooltip, a column), since a derived label such as
`probe:offline:probe-v1:rules-b8e112b25397` is exact but unreadable."""

from __future__ import annotations

from ..store import JudgeRun, Store

__all__ = ["run_name", "run_names"]


def run_name(run: JudgeRun) -> str:
    """A labelled run as a person reads it: ``judge · model · prompt version · date`` (the day of its latest
    write), the label itself only when a person chose it (a derived label such as
    `probe:offline:probe-v1:rules-b8e112b25397` says nothing the other parts do not), SIMULATED when it is.
    Every page and the report name runs this way, with the full label beside it (a tooltip, a column)."""
    name = " · ".join([run.judge, *([run.label] if run.named else []), run.model or "offline",
                       run.prompt_version or "no prompt version", run.last_at[:10]])
    return name + (" · SIMULATED" if run.simulated and "SIMULATED" not in name else "")  # once (a model may say so)


def run_names(store: Store) -> dict[str, dict[str, str]]:
    """judge → label → `run_name` of every labelled run of the project (nested, not keyed by pairs: the
    loader keeps it in a frame's `attrs`, which Streamlit serialises as JSON when the frame is shown)."""
    names: dict[str, dict[str, str]] = {}
    for r in store.judging.labels():
        names.setdefault(r.judge, {})[r.label] = run_name(r)
    return names
