"""`study import` trusts a design record only as far as it checks out: crafted records (guidelines with
remote images and links, emptied blinding terms, assignments to units or raters that do not exist, rater
names that are markup) are refused naming the file, the line and the problem, with nothing written, or,
for blinding terms, merged into the project's own."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from study_helpers import SKILL, small_project

from annotations import create_study, export_jsonl, import_responses, load_study, open_rater_session
from annotations.design import DesignParams, check_rater_name
from annotations.exchange import DesignRecordError
from annotations.guidelines import load_guidelines, parse_guidelines, safe_markdown
from annotations.study import RaterSession
from gcpc_core.store import Store

PROBE = "http://127.0.0.1:9/probe.png"


def source_study(store: Store) -> str:
    """A study with one answer per rater, exported from `store`."""
    small_project(store, tasks=2, per_stratum=2)
    created = create_study(store, DesignParams(tasks=None, per_task=4, raters_per_unit=1, seed=3,
                                               raters=("ann", "ben"), pairs_per_task=1), study_id="s1")
    for token in created.tokens.values():
        s = open_rater_session(store, token)
        s.submit_rating(s.queue()[0].target, 3)
    return created.study_id


def crafted(store: Store, change: Callable[[dict], None]) -> str:
    """The study's JSONL export with its design record changed by `change` (design and design_sha untouched)."""
    if store.studies.get("s1") is None:
        source_study(store)
    lines = export_jsonl(store, "s1").splitlines()
    record = json.loads(lines[0])
    change(record)
    return "\n".join([json.dumps(record, ensure_ascii=False, sort_keys=True), *lines[1:]]) + "\n"


@pytest.fixture
def other(store: Store, tmp_path: Path) -> Store:
    """A second project with the same trajectories (the study is not there yet)."""
    target = Store(tmp_path / "other.db")
    small_project(target, tasks=2, per_stratum=2)
    return target


def refused(other: Store, text: str, problem: str) -> str:
    """Import `text` as file `crafted.jsonl`: refused with `problem`, and nothing of it is stored."""
    before = other.project.counts()
    with pytest.raises(DesignRecordError) as err:
        import_responses(other, text, source="crafted.jsonl")
    message = str(err.value)
    assert message.startswith("crafted.jsonl: line 1: design record of study 's1' refused: "), message
    assert problem in message and message.endswith("nothing was imported"), message
    assert other.studies.get("s1") is None and other.project.counts() == before  # nothing written
    return message


def test_an_honest_export_still_round_trips(store: Store, other: Store) -> None:
    text = crafted(store, lambda r: None)
    report = import_responses(other, text, source="honest.jsonl")
    assert report.ok and report.created_studies == ["s1"] and report.added == 2
    assert export_jsonl(other, "s1") == text


def test_an_assignment_to_a_unit_that_does_not_exist_is_refused(store: Store, other: Store) -> None:
    def ghost(record: dict) -> None:
        record["assignments"].append({"rater": "ann", "kind": "progress_rating", "target": "U-GHOST", "position": 9,
                                      "active": 1, "assigned_at": "2026-01-01T00:00:00+00:00",
                                      "reassigned_from": None})

    refused(other, crafted(store, ghost), "(progress_rating 'U-GHOST' to 'ann'): no such unit in the design")


def test_an_assignment_to_a_rater_not_in_the_study_is_refused(store: Store, other: Store) -> None:
    def stranger(record: dict) -> None:
        record["assignments"][0]["rater"] = "mallory"

    refused(other, crafted(store, stranger), "'mallory' is not a rater of the study")


def test_an_assignment_given_twice_or_to_a_pair_that_does_not_exist_is_refused(store: Store, other: Store) -> None:
    refused(other, crafted(store, lambda r: r["assignments"].append(dict(r["assignments"][0]))), "assigned twice")

    def no_pair(record: dict) -> None:
        pair = next(a for a in record["assignments"] if a["kind"] == "preference")
        pair["target"] = "P-GHOST"

    refused(other, crafted(store, no_pair), "no such pair in the design")


@pytest.mark.parametrize("name", ["[click me](http://evil.test)", "![x](http://127.0.0.1:9/p.png)", "", "  ",
                                  "ann\u202eb", "a" * 65, "<b>x</b>", "ann@phish.test"])
def test_a_rater_name_that_is_not_a_name_is_refused(store: Store, other: Store, name: str) -> None:
    def rename(record: dict) -> None:
        record["raters"].append({"rater": name, "is_simulated": False})

    refused(other, crafted(store, rename), "is not allowed")


def test_rater_names_are_checked_where_raters_are_made_too(store: Store) -> None:
    from annotations import add_rater

    sid = source_study(store)
    with pytest.raises(ValueError, match="is not allowed"):
        add_rater(store, sid, "[x](http://evil.test)")
    with pytest.raises(ValueError, match="is not allowed"):
        create_study(store, DesignParams(tasks=None, per_task=2, raters_per_unit=1, seed=1, raters=("ok", "a<b>")))
    assert check_rater_name(" Dr. O'Brien ") == "Dr. O'Brien"


def test_guidelines_whose_scale_is_not_their_text_are_refused(store: Store, other: Store) -> None:
    def nine_points(record: dict) -> None:
        scale = record["design"]["guidelines"]["scale"]
        scale.append({"value": 9, "label": "Beyond", "description": "not in the text"})

    refused(other, crafted(store, nine_points), "guidelines do not match their own text")


def test_guidelines_over_the_size_limit_are_refused(store: Store, other: Store) -> None:
    def huge(record: dict) -> None:
        text = load_guidelines().text + "\n" + "x" * 100_000
        record["design"]["guidelines"] = parse_guidelines(text).model_dump(mode="json")

    refused(other, crafted(store, huge), "over the limit of 100,000")


def test_a_study_that_exists_here_with_another_design_is_refused(store: Store, other: Store) -> None:
    text = crafted(store, lambda r: None)
    import_responses(other, text)
    other_design = text.replace(json.loads(text.splitlines()[0])["design_sha"], "0" * 64)
    with pytest.raises(DesignRecordError, match=r"^x\.jsonl: line 1: .*with a different design"):
        import_responses(other, other_design, source="x.jsonl")


def test_guidelines_with_remote_images_and_links_are_stored_but_shown_without_them(store: Store,
                                                                                  other: Store) -> None:
    """The text is the study's (a rater must read what the organisers wrote), but it is only ever shown as
    `safe_markdown`: no image, link, HTML or autolinked address survives."""
    lure = (f"\n\n![x]({PROBE}) Read [the new rules](http://phish.test/login) first, <img src='{PROBE}'>, "
            "visit www.phish.test or http://phish.test/a, write to help@phish.test, :red[urgent] `[code](x)`\n")

    def phishing(record: dict) -> None:
        record["design"]["guidelines"] = parse_guidelines(load_guidelines().text + lure).model_dump(mode="json")

    assert import_responses(other, crafted(store, phishing)).ok
    text = load_study(other, "s1").guidelines.text
    assert PROBE in text  # stored as written ...
    shown = safe_markdown(text)
    code = re.findall(r"`([^`]*)`", shown)
    for literal in ("http://phish.test/login", PROBE, "www.phish.test", "http://phish.test/a", "help@phish.test"):
        assert any(literal in span for span in code), literal  # addresses are shown as code, never linked
    assert "[code](x)" in code  # the text's own inline code stays code
    outside_code = re.sub(r"`[^`]*`", "", shown)
    for live in ("![", "](", "<img", "://", "www.", "@", ":red["):
        assert not re.search(r"(?<!\\)" + re.escape(live), outside_code), live  # ... never shown live
    assert "## Progress scale" in shown  # headings and bold still read as such
    assert "- **1 · No progress** — " in shown


def test_emptied_blinding_terms_are_merged_with_the_projects_own(store: Store, other: Store) -> None:
    def unblind(record: dict) -> None:
        record["design"]["blinding"] = {"models": [], "agents": [], "skills": [], "ids": []}

    assert import_responses(other, crafted(store, unblind)).ok
    study = load_study(other, "s1")
    own = load_study(store, "s1").terms
    assert SKILL in study.terms.skills and set(own.models) <= set(study.terms.models)
    assert set(own.ids) <= set(study.terms.ids)
    unit = next(u for u in study.units.values() if other.trials.get_trajectory(u.trajectory_id).condition
                == "with-skills")
    rater = next(a.rater for a in other.studies.assignments("s1") if a.target == unit.unit_id)
    shown = RaterSession(other, study, rater).unit_view(unit.unit_id).text()
    assert SKILL not in shown
    assert "secret-model" not in shown and "[model]" in shown


def test_extra_blinding_terms_of_the_record_are_kept(store: Store, other: Store) -> None:
    def widen(record: dict) -> None:
        record["design"]["blinding"]["skills"].append("extra-secret-skill")

    assert import_responses(other, crafted(store, widen)).ok
    assert "extra-secret-skill" in load_study(other, "s1").terms.skills


def test_the_cli_names_the_file_and_the_problem_and_exits_2(store: Store, other: Store, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    from gcpc_core.cli import main

    def ghost(record: dict) -> None:
        record["assignments"][0]["target"] = "U-GHOST"

    path = tmp_path / "crafted.jsonl"
    path.write_text(crafted(store, ghost), encoding="utf-8")
    assert main(["study", "import", "--db", str(other.path), str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}: line 1: design record of study 's1' refused: " in err and "no such unit" in err
    assert other.studies.get("s1") is None and other.project.counts()["annotations"] == 0
