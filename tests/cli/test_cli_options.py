"""One meaning per option name across every verb of `python -m gcpc_core`, hidden options included; the
old spellings; and an `Example:` in every verb's help that parses with that verb's parser.

`problems` walks every (sub)parser that `build_parser` builds, so a verb added later is checked too:

1. an option name takes the same kind of value into the same destination wherever it appears, deprecated
   (hidden) spellings included — never excused;
2. its default, whether it is required, its choices, whether it repeats and its help text are the same in
   every verb, except the fields `VARIES` lists for that name with the reason; an entry that no longer
   varies is reported too, so the table stays true;
3. where its help varies, every help still says the name's gist (`GIST`);
4. within one verb, no two options differ by a trailing "s" unless one is the deprecated spelling of the
   other (same destination): `--seed` beside `--seeds` was two seeds;
5. a hidden spelling is not a live option in another verb (`info --tasks` beside `import --tasks`).

Comparing destination and type alone (the check this replaced) passed on the conflicts issue 25 named:
`--limit` was an int into `limit` everywhere, 0 meaning none in `judge` and all in `triage`; `--label` took a
string into `label` in `judge` (the run written) and in `report` (runs read). The planted tests below put
each of those back and see `problems` name it.
"""

from __future__ import annotations

import argparse
import re
import shlex
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest

from gcpc_core.analysis.sensitivity import SCOPES
from gcpc_core.cli import build_parser, main, parse_args
from gcpc_core.cli.common import DEFAULT_SEED, EXAMPLE_HEADING, LIMIT_MEANING, add_deprecated, add_verb, count
from gcpc_core.demo import DEMO_SIMULATED_LABEL
from gcpc_core.export import EXPORTERS

FIXED = ("dest", "type", "takes value")
"""What an option name means, never allowed to differ between verbs."""

VARIES: dict[str, tuple[frozenset[str], str]] = {
    "--base-url": (frozenset({"help"}), "rater links (study) vs item-audit links (triage): both the app's address"),
    "--by": (frozenset({"default", "help"}), "checklist add records 'human' unless told; a study's creator is optional"),
    "--concurrency": (frozenset({"help"}), "batch collect's are repairs; the default (None: "
                      "GCPC_LLM_CONCURRENCY, else 8) is the same everywhere"),
    "--db": (frozenset({"required", "help"}), "demo, app, llm check, triage --simulate and checklist draft "
             "--task-dir work without a DB; import creates it; the help says what it must hold"),
    "--force": (frozenset({"help"}), "says what is done again"),
    "--json": (frozenset({"help"}), "says what the JSON holds"),
    "--judge": (frozenset({"required", "choices", "repeatable", "help"}),
                "judge and perturb need one (perturb: an item judge); score and triage narrow to one; "
                "report compares several"),
    "--limit": (frozenset({"help"}), "says what is counted; the default and 0 (LIMIT_MEANING) are the same"),
    "--model": (frozenset({"help"}), "perturb must use the model the items were judged with"),
    "--out": (frozenset({"required", "help"}), "a report needs a folder; the others default to stdout or are "
              "one of two outputs (demo)"),
    "--per-item": (frozenset({"help"}), "judge chooses per-item calls; perturb says the items were judged so"),
    "--rater": (frozenset({"required", "repeatable", "help"}), "study create names several (optional), study "
                "link exactly one"),
    "--run": (frozenset({"repeatable", "default", "help"}), "perturb works on one judge's run; report, export "
              "and triage read every judge, one --run each"),
    "--seed": (frozenset({"required", "default", "help"}), "a study design is frozen with the seed given; the "
               "demo corpus has its own (DEMO_SEED); the help says what the seed drives"),
    "--study": (frozenset({"help"}), "study import: the study of rows naming none"),
    "--task": (frozenset({"repeatable", "help"}), "study create samples from several tasks"),
    "--task-dir": (frozenset({"required"}), "checklist draft takes --task-dir or --db --task"),
}
"""Option name → the fields (besides `FIXED`) that differ between its verbs, and why."""

GIST = {
    "--base-url": r"app",
    "--by": r"recorded",
    "--concurrency": r"parallel",
    "--db": r"project DB",
    "--force": r"again",
    "--json": r"\bJSON\b",
    "--judge": r"judge",
    "--limit": r"^\w+ at most N .*" + re.escape(LIMIT_MEANING) + "$",
    "--model": r"model name",
    "--out": r"output|write",
    "--per-item": r"per(-| checklist )item",
    "--rater": r"rater",
    "--run": r"judge run \(its label\) instead of its judge's default",
    "--seed": r"seed",
    "--study": r"study",
    "--task": r"task",
}
"""Option name → what its help says wherever it appears (a regex, case-insensitive)."""

Uses = dict[str, list[tuple[str, argparse.Action]]]


def _parsers(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> Iterator[
        tuple[tuple[str, ...], argparse.ArgumentParser]]:
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _parsers(sub, (*path, name))


def _verb(parser: argparse.ArgumentParser, path: str) -> argparse.ArgumentParser:
    return dict((" ".join(p), sub) for p, sub in _parsers(parser))[path]


def _options(parser: argparse.ArgumentParser) -> Uses:
    """Option name → (verb, action) wherever it appears, hidden spellings included."""
    found: Uses = defaultdict(list)
    for path, sub in _parsers(parser):
        for action in sub._actions:
            if not isinstance(action, argparse._HelpAction):
                for name in action.option_strings:
                    found[name].append((" ".join(path), action))
    return found


def _hidden(action: argparse.Action) -> bool:
    return action.help == argparse.SUPPRESS


def _fields(action: argparse.Action) -> dict[str, object]:
    return {
        "dest": action.dest,
        "type": getattr(action.type, "__name__", action.type),
        "takes value": action.nargs != 0,
        "default": action.default,
        "required": action.required,
        "choices": None if action.choices is None else tuple(action.choices),
        "repeatable": isinstance(action, argparse._AppendAction) or getattr(action, "kind", "") == "comma list",
        "help": action.help,
    }


def problems(parser: argparse.ArgumentParser) -> list[str]:
    """Every break of the rules in the module docstring, one line each."""
    found: list[str] = []
    options = _options(parser)
    for name, uses in sorted(options.items()):
        fields = [(verb, _fields(action)) for verb, action in uses]
        for field in FIXED:
            if len({repr(f[field]) for _, f in fields}) > 1:
                found.append(f"{name}: {field} differs: {[(verb, f[field]) for verb, f in fields]}")
        visible = [(verb, f) for (verb, f), (_, action) in zip(fields, uses) if not _hidden(action)]
        if visible and len(visible) < len(uses):
            found.append(f"{name}: hidden in {[v for v, a in uses if _hidden(a)]} but live in {[v for v, _ in visible]}")
        allowed, _ = VARIES.get(name, (frozenset(), ""))
        varying = {field for field in _fields(uses[0][1]) if field not in FIXED
                   and len({repr(f[field]) for _, f in visible}) > 1}
        for field in sorted(varying - allowed):
            found.append(f"{name}: {field} differs without a reason in VARIES: {[(v, f[field]) for v, f in visible]}")
        for field in sorted(allowed - varying):
            found.append(f"{name}: VARIES excuses {field}, which no longer differs")
        if "help" in varying:
            if name not in GIST:
                found.append(f"{name}: help differs between verbs and GIST does not say what they share")
            for verb, f in visible:
                if not re.search(GIST.get(name, ""), str(f["help"]), re.I):
                    found.append(f"{verb} {name}: help {f['help']!r} does not say {GIST.get(name)!r}")
    for path, sub in _parsers(parser):
        dests = {name: action.dest for action in sub._actions for name in action.option_strings}
        for name, dest in dests.items():
            if f"{name}s" in dests and dests[f"{name}s"] != dest:
                found.append(f"{' '.join(path)}: {name} and {name}s are two options")
    return found


def test_every_option_name_has_one_meaning_across_verbs() -> None:
    options = _options(build_parser())
    assert len({verb for uses in options.values() for verb, _ in uses}) > 15  # the walk reached the sub-verbs
    assert any(_hidden(a) for uses in options.values() for _, a in uses)  # and the hidden spellings
    assert problems(build_parser()) == []
    assert set(VARIES) <= set(options) and set(GIST) <= set(options)


def _plant_limit_meaning_all(parser: argparse.ArgumentParser) -> None:
    _verb(parser, "labels").add_argument("--limit", type=count, default=30, metavar="N",
                                         help="print at most N runs (default 30; 0: all)")


def _plant_reading_label(parser: argparse.ArgumentParser) -> None:
    _verb(parser, "report").add_argument("--label", action="append", default=[],
                                         help="read this labelled judge run instead of its judge's default")


def _plant_hidden_reading_label(parser: argparse.ArgumentParser) -> None:
    add_deprecated(_verb(parser, "report"), "--label", use="--run", dest="run", kind="comma list")


def _plant_second_seed(parser: argparse.ArgumentParser) -> None:
    _verb(parser, "triage").add_argument("--seeds", type=int, default=5, help="simulation seeds")


def _plant_hidden_tasks_flag(parser: argparse.ArgumentParser) -> None:
    add_deprecated(_verb(parser, "info"), "--tasks", use="--task-status", dest="task_status", kind="flag")


def _plant_tasks_count(parser: argparse.ArgumentParser) -> None:
    _verb(parser, "study create").add_argument("--tasks", type=int, help="tasks to sample")


@pytest.mark.parametrize(("plant", "expected"), [
    (_plant_limit_meaning_all, r"--limit: default differs"),
    (_plant_limit_meaning_all, r"labels --limit: help .*0: all.* does not say"),
    (_plant_reading_label, r"--label: (default|repeatable|help) differs without a reason"),
    (_plant_hidden_reading_label, r"--label: dest differs"),
    (_plant_second_seed, r"triage: --seed and --seeds are two options"),
    (_plant_hidden_tasks_flag, r"--tasks: dest differs"),
    (_plant_hidden_tasks_flag, r"--tasks: hidden in \['info'\] but live in \['import'\]"),
    (_plant_tasks_count, r"--tasks: type differs"),
])
def test_the_check_names_each_conflict_issue_25_found(plant, expected: str) -> None:  # noqa: ANN001 - a planter
    """Each conflict the previous check let pass, planted back into the real parser, is named."""
    parser = build_parser()
    plant(parser)
    assert any(re.search(expected, line) for line in problems(parser)), problems(parser)


def test_a_stale_excuse_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(VARIES, "--quiet", (frozenset({"help"}), "planted"))
    assert problems(build_parser()) == ["--quiet: VARIES excuses help, which no longer differs"]


def test_limit_is_all_when_absent_and_none_at_0(demo_copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`--limit` never means "all" at 0: the parser says so, and triage and compare print accordingly."""
    import json

    limits = _options(build_parser())["--limit"]
    assert {verb for verb, _ in limits} == {"judge", "perturb", "triage", "compare"}
    assert all(a.default is None and a.help.endswith(LIMIT_MEANING) for _, a in limits)
    with pytest.raises(SystemExit):
        build_parser().parse_args(["triage", "--limit", "-1"])
    assert "must be 0 or more" in capsys.readouterr().err

    def triage(*limit: str) -> dict:
        assert main(["triage", "--db", str(demo_copy), "--json", *limit]) == 0
        return json.loads(capsys.readouterr().out)

    every = triage()
    assert every["n_disagreements"] > 2 and len(every["disagreements"]) == every["n_disagreements"]
    assert triage("--limit", "0")["disagreements"] == [] and len(triage("--limit", "2")["disagreements"]) == 2

    from gcpc_core.store import Store

    default_probe = Store(demo_copy).judging.default_labels()["probe"]
    base = ["compare", "--db", str(demo_copy), "--a", default_probe, "--b", DEMO_SIMULATED_LABEL, "--n-boot", "20"]
    assert main([*base, "--limit", "0"]) == 0
    n = int(re.search(r"(\d+) items differ \(showing 0\)", capsys.readouterr().out)[1])
    assert n > 0 and main(base) == 0 and f"{n} items differ (showing {n})" in capsys.readouterr().out


def test_choices_and_defaults_come_from_their_registries() -> None:
    options = _options(build_parser())
    [(_, what)] = options["--what"]
    assert tuple(what.choices) == tuple(EXPORTERS)
    [(_, scope)] = options["--scope"]
    assert tuple(scope.choices) == SCOPES and scope.default == SCOPES[0]
    seeds = {verb: action for verb, action in options["--seed"]}
    assert {seeds[v].default for v in ("report", "perturb", "triage", "compare")} == {DEFAULT_SEED}
    assert seeds["study create"].required


def _example_argv(path: tuple[str, ...], verb: argparse.ArgumentParser) -> list[str]:
    """The command line after the program name in the `Example:` block of the verb's help."""
    lines = verb.format_help().splitlines()
    assert EXAMPLE_HEADING in lines, f"{verb.prog}: no {EXAMPLE_HEADING} block"
    example = lines[lines.index(EXAMPLE_HEADING) + 1]
    prefix = f"  {verb.prog} "
    assert example.startswith(prefix), example
    return [*path, *shlex.split(example[len(prefix):])]


@pytest.mark.parametrize(("path", "verb"), [pytest.param(path, verb, id=" ".join(path))
                                            for path, verb in _parsers(build_parser()) if path])
def test_every_verb_shows_an_example_that_parses(path: tuple[str, ...], verb: argparse.ArgumentParser) -> None:
    """The help ends with `Example:` and a whole command line of this verb, which parses as `main` parses it."""
    assert callable(parse_args(build_parser(), _example_argv(path, verb)).func)


def test_examples_name_the_installed_command_too() -> None:
    assert "\n  gcpc judge --db project.db" in _verb(build_parser("gcpc"), "judge").format_help()


def test_the_example_check_fails_without_an_example_or_on_one_that_does_not_parse(
        capsys: pytest.CaptureFixture[str]) -> None:
    parser = build_parser()
    [verbs] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    with pytest.raises(AssertionError, match="no Example: block"):
        _example_argv(("bare",), verbs.add_parser("bare"))
    wrong = _example_argv(("wrong",), add_verb(verbs, "wrong", help="", description="", example="--nope 1"))
    with pytest.raises(SystemExit):
        parse_args(parser, wrong)
    assert "unrecognized arguments: --nope 1" in capsys.readouterr().err


@pytest.mark.parametrize(("old", "new"), [
    (["study", "create", "--db", "x.db", "--seed", "1", "--raters", "a,b"], "--rater"),
    (["report", "--db", "x.db", "--out", "o", "--judges", "gcpc,probe"], "--judge"),
])
def test_old_spellings_still_parse_with_a_warning(old: list[str], new: str, capsys: pytest.CaptureFixture[str]) -> None:
    args = build_parser().parse_args(old)
    assert f"is deprecated; use {new}" in capsys.readouterr().err
    replacement = {"--rater": ["--rater", "a", "--rater", "b"], "--judge": ["--judge", "gcpc", "--judge", "probe"]}[new]
    assert vars(build_parser().parse_args(old[:-2] + replacement)) == vars(args)
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize(("old", "removed"), [
    (["report", "--db", "x.db", "--out", "o", "--label", "run-a"], "--label run-a"),
    (["export", "--db", "x.db", "--what", "scores", "--label", "run-a"], "--label run-a"),
    (["triage", "--db", "x.db", "--label", "run-a"], "--label run-a"),
    (["perturb", "--db", "x.db", "--judge", "probe", "--label", "run-a"], "--label run-a"),
    (["triage", "--simulate", "--seeds", "3"], "--seeds 3"),
    (["info", "--db", "x.db", "--tasks"], "--tasks"),
    (["study", "create", "--db", "x.db", "--seed", "1", "--tasks", "5"], "--tasks 5"),
])
def test_spellings_that_clashed_with_another_meaning_are_refused(old: list[str], removed: str,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """Reading runs is `--run` (`--label` names the run `judge` writes), `triage --n-seeds`, `info --task-status`,
    `study create --n-tasks`: the old spellings stop with a usage error rather than mean something else."""
    with pytest.raises(SystemExit) as stop:
        parse_args(build_parser(), old)
    assert stop.value.code == 2 and f"unrecognized arguments: {removed}" in capsys.readouterr().err


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
