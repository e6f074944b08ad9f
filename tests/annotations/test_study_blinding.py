"""Blinding: the rater-visible view carries no outcome, condition, model, agent, skill or id."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from study_helpers import SECRET_MODEL, SKILL, leaky_events, small_project

from annotations import create_study, open_rater_session
from annotations.blinding import BlindingTerms, blind_trajectory, collect_terms, preview
from annotations.design import DesignParams
from gcpc_core.ingest import import_project
from gcpc_core.models import Task, Trajectory
from gcpc_core.store import Store


def forbidden(trajectories: list[Trajectory], skills: tuple[str, ...] = ()) -> list[str]:
    """Substrings (case-insensitive) a rater must never see for these trajectories."""
    words = {"with-skills", "without-skills", "reward", ".claude/skills", "skill.md", "claude", "gemini", "minimax"}
    for t in trajectories:
        words |= {t.id, t.model, t.model.split("/")[-1], t.agent, t.source_path}
        if "__" in t.id:
            words.add(t.id.split("__", 1)[1])
    return sorted(w.lower() for w in words | set(skills) if w)


def assert_blind(text: str, bad: list[str]) -> None:
    low = text.lower()
    leaks = [w for w in bad if w in low]
    assert not leaks, f"blinded view leaks {leaks}"
    assert not re.search(r"\bPASS(ED)?\b|\bFAIL(ED)?\b", text), "an outcome label leaks"
    assert not re.search(r"\bskills?\b", low), "a skill mention leaks"


def test_crafted_leaky_log_is_scrubbed() -> None:
    traj = Trajectory(id="pdf-task__Zq81kLm", task="pdf-task", agent="claude-code", model=SECRET_MODEL,
                      condition="with-skills", outcome="PASS", source_path="/data/trials/pdf-task__Zq81kLm",
                      log_path="agent/claude-code.txt", log_format="claude-code")
    events = leaky_events(traj.id, traj.model, traj.condition)
    task = Task(id="pdf-task", instruction="Convert report.pdf.", source_path="/t", metadata={"m": {"skill": SKILL}})
    terms = collect_terms([traj], {traj.id: events}, [task])
    assert SKILL in terms.skills and "secret-model-x9" in terms.models and traj.id in terms.ids
    view = blind_trajectory("U-ABCD", task.instruction, events, terms)
    text = view.text()
    assert_blind(text, forbidden([traj], (SKILL,)))
    # the agent's own work stays readable, paths into the skills folder are hidden, not the command
    assert "python3 [hidden path] report.pdf" in text and "Converted 12 pages." in text
    assert "I am [model] running in [agent]." in text and "Done: 12 pages converted." in text
    kinds = {s.kind for s in view.steps}
    assert "system" not in kinds and "user" not in kinds
    assert not any(s.title.endswith("Skill") for s in view.steps)  # the Skill call and its output are gone
    assert view.code == "U-ABCD" and [s.number for s in view.steps] == list(range(1, len(view.steps) + 1))


def test_without_skills_view_has_the_same_markers() -> None:
    """Markers must not differ by condition: a without-skills view shows the same kind of redaction."""
    trajs = [Trajectory(id=f"t__{c[:4]}00000", task="t", agent="claude-code", model=SECRET_MODEL, condition=c,
                        outcome="FAIL", source_path=f"/x/{c}", log_path="a", log_format="claude-code")
             for c in ("with-skills", "without-skills")]
    events = {t.id: leaky_events(t.id, t.model, t.condition) for t in trajs}
    terms = collect_terms(trajs, events)
    views = [blind_trajectory("U", "Do it.", events[t.id], terms).text() for t in trajs]
    for v in views:
        assert "[model]" in v and "[agent]" in v
        assert_blind(v, forbidden(trajs, (SKILL,)))


def test_rater_session_views_are_blind(store: Store) -> None:
    small_project(store, tasks=2, per_stratum=2)
    created = create_study(store, DesignParams(tasks=None, per_task=8, raters_per_unit=1, seed=1, raters=("r",),
                                               pairs_per_task=4))
    session = open_rater_session(store, created.tokens["r"])
    bad = forbidden(store.trajectories(), (SKILL,))
    for item in session.queue():
        views = [session.unit_view(item.target)] if item.kind == "progress_rating" else list(session.pair_view(item.target))
        for view in views:
            assert_blind(view.text(), bad)
            assert re.fullmatch(r"[UP]-[A-Z0-9]{4,}( · [AB])?", view.code)


def test_preview_marks_what_it_cuts() -> None:
    assert preview("short") == ("short", 0)
    shown, hidden = preview("x" * 10_000, limit=900)
    assert hidden == 10_000 - 600 - 300 and f"{hidden:,} characters not shown" in shown


@pytest.mark.skillsbench
def test_real_trajectories_are_blind(skillsbench: Path, store: Store) -> None:
    """Real Claude Code, gemini-cli and terminus-2 logs: no model, agent, skill or id survives."""
    import_project(store, tasks_dir=skillsbench / "tasks", trials_dir=skillsbench / "trials", progress=False)
    trajs = store.trajectories()
    events = {t.id: store.events(t.id) for t in trajs}
    terms = collect_terms(trajs, events, store.tasks())
    assert {"mesh-analysis", "citation-management"} <= set(terms.skills)
    bad = [w for w in forbidden(trajs, terms.skills) if w != "reward"]  # a citation-check log cites "Reward Models"
    for t in trajs:
        view = blind_trajectory("U-TEST", store.get_task(t.task).instruction, events[t.id], terms)
        assert view.steps, t.id
        assert_blind(view.text(), bad)


def test_terms_round_trip_through_json() -> None:
    terms = BlindingTerms(models=("a/b",), agents=("x",), skills=("s",), ids=("i",))
    assert BlindingTerms.model_validate(terms.model_dump(mode="json")) == terms
