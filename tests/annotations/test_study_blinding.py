"""Blinding: the rater-visible view carries no outcome, condition, model, agent, skill or id."""

from __future__ import annotations

import random
import re
import time
from pathlib import Path

import pytest
from study_helpers import SECRET_MODEL, SKILL, leaky_events, small_project

from annotations import create_study, open_rater_session
from annotations.blinding import BlindingTerms, Scrubber, blind_trajectory, collect_terms, known_names, normalise, preview
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
    bad = forbidden(store.trials.trajectories(), (SKILL,))
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
    trajs = store.trials.trajectories()
    events = {t.id: store.trials.events(t.id) for t in trajs}
    terms = collect_terms(trajs, events, store.trials.tasks())
    assert {"mesh-analysis", "citation-management"} <= set(terms.skills)
    bad = [w for w in forbidden(trajs, terms.skills) if w != "reward"]  # a citation-check log cites "Reward Models"
    for t in trajs:
        view = blind_trajectory("U-TEST", store.trials.get_task(t.task).instruction, events[t.id], terms)
        assert view.steps, t.id
        assert_blind(view.text(), bad)


def test_terms_round_trip_through_json() -> None:
    terms = BlindingTerms(models=("a/b",), agents=("x",), skills=("s",), ids=("i",))
    assert BlindingTerms.model_validate(terms.model_dump(mode="json")) == terms


# ---------------------------------------------------------------- markers, variants, normalisation


@pytest.mark.parametrize("leaky, blinded", [
    ("cd /tmp/skillsbench_noskills_a1b2c3/ && ls", "cd /tmp/[hidden]_[hidden]_a1b2c3/ && ls"),
    ("harbor run --job citation-check-noskills-2", "[agent] run --job citation-check-[hidden]-2"),
    ("copy tasks/pdf-task-with_skills/ .", "copy tasks/pdf-task-[hidden]/ ."),
    ("Model: M2.1", "Model: [model]"),
    ("Using Gemini 3 Flash today", "Using [model] today"),
    ("gemini3flash", "[model]"),
    ("ran claude-opus-4-1 then gpt-4o-mini", "ran [model] then [model]"),
    ("clau\u200bde says", "[model] says"),
    ("ｃｌａｕｄｅ ｈａｉｋｕ", "[model]"),
    ("\u202eedualc", "⟨U+202E⟩edualc"),  # a bidi control is shown; the reversed word is not a name
    ("run\u200b.sh cla\u200bude\u202e", "run⟨U+200B⟩.sh [model]⟨U+202E⟩"),
    ("I am Claude Code", "I am [agent]"),
])
def test_markers_and_spelling_variants_are_blinded(leaky: str, blinded: str) -> None:
    assert Scrubber(BlindingTerms())(leaky) == blinded


@pytest.mark.parametrize("plain", ["gcc -O3 main.c", "m2 = m1 @ x", "piano skills", "claudette", "a gemstone",
                                   "the process exited", "openair quality"])
def test_ordinary_words_stay(plain: str) -> None:
    assert Scrubber(BlindingTerms())(plain) == plain


def _variants(name: str, rng: random.Random) -> str:
    """A random spelling of `name`: case, separators between its letter and digit runs (or none),
    full-width letters, zero-width and bidi characters inside."""
    runs = re.findall(r"[a-z]+|\d+", name.lower())
    text = rng.choice(["", " ", "-", "_", ".", "\u2011"]).join(runs) if len(runs) > 1 else runs[0]
    out = []
    for ch in text:
        ch = ch.upper() if rng.random() < 0.4 else ch
        if ch.isalnum() and rng.random() < 0.15:
            ch = chr(ord(ch) + 0xFEE0)  # the full-width form
        out.append(ch)
        if rng.random() < 0.1:
            out.append(rng.choice(["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u202e", "\u2066"]))
    return "".join(out)


def _skeleton(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", normalise(text).lower())


def test_fuzz_every_listed_name_in_every_spelling_is_blinded() -> None:
    rng = random.Random(15)
    names = known_names()
    scrub = Scrubber(BlindingTerms())
    listed = [*names.condition_markers, *names.agents, *names.model_families, *names.models]
    contexts = ["{}", "Using {} now.", "/tmp/job_{}_x/log.txt", '{{"model": "{}"}}', "--agent={} --n 3", "({})"]
    for name in listed:
        for _ in range(40):
            spelled = _variants(name, rng)
            context = rng.choice(contexts)
            shown = scrub(context.format(spelled))
            assert _skeleton(name) not in _skeleton(shown.replace("[", " ").replace("]", " ")), (name, spelled, shown)
            assert "[" in shown, (name, spelled, shown)


def test_normalise_folds_compatibility_forms_and_drops_invisibles() -> None:
    assert normalise("ｃｌａｕｄｅ\u200b \u202eABC\u202c ﬁle") == "claude ABC file"


def test_blinding_is_linear_on_megabyte_lines() -> None:
    scrub = Scrubber(BlindingTerms(models=("claude-haiku-4-5",), agents=("claude-code",), ids=("t__Zq81kLm",),
                                   skills=("mesh-analysis",)))
    for line in ("a" * 1_000_000, "-" * 1_000_000, "gemini" + "1." * 500_000 + "x", "gemini pro " * 100_000,
                 "/a" * 500_000, "xclaude" * 150_000, "no" + " " * 1_000_000 + "x"):
        started = time.perf_counter()
        scrub(line)
        took = time.perf_counter() - started
        assert took < 5.0, f"{line[:12]!r}…: {took:.1f} s (a quadratic scan takes hours)"
