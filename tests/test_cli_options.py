"""One meaning per option name across every verb of `python -m gcpc_core`, and the old spellings.

The walk covers every (sub)parser that `build_parser` builds, so a verb added later is checked too:
an option name used by several verbs must take the same kind of value into the same destination
everywhere; the names listed in `GIST` must also say the same thing in their help.
"""

from __future__ import annotations

import argparse
import re
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest

from gcpc_core.analysis.sensitivity import SCOPES
from gcpc_core.cli import build_parser, main
from gcpc_core.cli.common import DEFAULT_SEED
from gcpc_core.export import EXPORTERS

GIST = {
    "--by": r"recorded",
    "--concurrency": r"parallel",
    "--db": r"project DB",
    "--force": r"again",
    "--format": r"format",
    "--json": r"\bJSON\b",
    "--judge": r"judge",
    "--limit": r"at most",
    "--model": r"model name",
    "--out": r"output|write",
    "--per-item": r"per(-| checklist )item",
    "--rater": r"rater",
    "--seed": r"seed",
    "--study": r"study",
    "--task": r"task",
}
"""Option name → what its help says wherever it appears (a regex, case-insensitive)."""


def _parsers(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> Iterator[
        tuple[tuple[str, ...], argparse.ArgumentParser]]:
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _parsers(sub, (*path, name))


def _options() -> dict[str, list[tuple[str, argparse.Action]]]:
    found: dict[str, list[tuple[str, argparse.Action]]] = defaultdict(list)
    for path, parser in _parsers(build_parser()):
        for action in parser._actions:
            if action.help == argparse.SUPPRESS or isinstance(action, argparse._HelpAction):
                continue  # deprecated spellings are hidden: checked below
            for name in action.option_strings:
                found[name].append((" ".join(path), action))
    return found


def _meaning(action: argparse.Action) -> tuple:
    takes_value = action.nargs != 0
    return action.dest, getattr(action.type, "__name__", action.type), takes_value


def test_every_option_name_has_one_meaning_across_verbs() -> None:
    options = _options()
    assert len({verb for uses in options.values() for verb, _ in uses}) > 15  # the walk reached the sub-verbs
    for name, uses in options.items():
        meanings = {_meaning(action) for _, action in uses}
        assert len(meanings) == 1, f"{name} means different things: {[(v, _meaning(a)) for v, a in uses]}"
        if name in GIST and len(uses) > 1:
            for verb, action in uses:
                assert re.search(GIST[name], action.help or "", re.I), f"{verb} {name}: {action.help!r}"


def test_the_walk_catches_an_option_with_two_meanings(monkeypatch: pytest.MonkeyPatch) -> None:
    """The check above fails on the kind of conflict it exists for: a folder in one verb, a count in another."""
    from gcpc_core.cli import study

    original = study.add_study

    def add_study(sub: argparse._SubParsersAction) -> None:
        original(sub)
        [actions] = [a for a in sub.choices["study"]._actions if isinstance(a, argparse._SubParsersAction)]
        actions.choices["create"].add_argument("--trials", type=int, help="trials to sample")

    monkeypatch.setattr(study, "add_study", add_study)
    with pytest.raises(AssertionError, match="--trials means different things"):
        test_every_option_name_has_one_meaning_across_verbs()


def test_choices_and_defaults_come_from_their_registries() -> None:
    options = _options()
    [(_, what)] = options["--what"]
    assert tuple(what.choices) == tuple(EXPORTERS)
    [(_, scope)] = options["--scope"]
    assert tuple(scope.choices) == SCOPES and scope.default == SCOPES[0]
    seeds = {verb: action for verb, action in options["--seed"]}
    assert {seeds[v].default for v in ("report", "perturb", "triage")} == {DEFAULT_SEED}
    assert seeds["study create"].required


@pytest.mark.parametrize(("old", "new"), [
    (["study", "create", "--db", "x.db", "--seed", "1", "--tasks", "5"], "--n-tasks"),
    (["study", "create", "--db", "x.db", "--seed", "1", "--raters", "a,b"], "--rater"),
    (["report", "--db", "x.db", "--out", "o", "--judges", "gcpc,probe"], "--judge"),
    (["info", "--db", "x.db", "--tasks"], "--task-status"),
])
def test_old_spellings_still_parse_with_a_warning(old: list[str], new: str, capsys: pytest.CaptureFixture[str]) -> None:
    args = build_parser().parse_args(old)
    assert f"is deprecated; use {new}" in capsys.readouterr().err
    replacement = {"--n-tasks": ["--n-tasks", "5"], "--rater": ["--rater", "a", "--rater", "b"],
                   "--judge": ["--judge", "gcpc", "--judge", "probe"], "--task-status": ["--task-status"]}[new]
    stripped = old[:-2] if new != "--task-status" else old[:-1]
    assert vars(build_parser().parse_args(stripped + replacement)) == vars(args)
    assert capsys.readouterr().err == ""


def test_report_judges_by_the_old_comma_list_and_the_repeated_flag_alike(
    demo_copy: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["report", "--db", str(demo_copy), "--no-figures", "--n-boot", "20"]
    assert main([*base, "--out", str(tmp_path / "a"), "--judge", "probe"]) == 0
    assert main([*base, "--out", str(tmp_path / "b"), "--judges", "probe"]) == 0
    assert "--judges is deprecated" in capsys.readouterr().err
    tables = {path.name: path.read_bytes() for path in (tmp_path / "a").glob("*.csv")}
    assert tables and tables == {path.name: path.read_bytes() for path in (tmp_path / "b").glob("*.csv")}
    assert main([*base, "--out", str(tmp_path / "c"), "--judge", "gcpc"]) == 2  # not scored on the demo
