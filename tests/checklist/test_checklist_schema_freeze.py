"""The checklist file schema (JSON/YAML loading, errors) and freezing (canonical JSON, sha)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from gcpc_core.checklist import (
    Checklist,
    ChecklistFileError,
    FrozenChecklist,
    canonical_json,
    checklist_sha,
    checklist_to_json,
    freeze,
    load_checklist_file,
    parse_checklist,
)

from .toy import toy_data


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


# ---------------------------------------------------------------- loading


def test_json_and_yaml_load_to_the_same_checklist(tmp_path: Path) -> None:
    data = toy_data()
    a = load_checklist_file(write(tmp_path / "c.json", json.dumps(data)))
    b = load_checklist_file(write(tmp_path / "c.yaml", yaml.safe_dump(data)))
    c = load_checklist_file(write(tmp_path / "c.yml", yaml.safe_dump(data, default_flow_style=True)))
    assert a == b == c == parse_checklist(data)


def test_bare_yaml_yes_no_polarity(tmp_path: Path) -> None:
    text = yaml.safe_dump(toy_data(), sort_keys=False).replace("polarity: 'yes'", "polarity: yes")
    assert "polarity: yes" in text
    assert load_checklist_file(write(tmp_path / "c.yaml", text)).items[1].probes[0].polarity == "yes"


@pytest.mark.parametrize(
    ("name", "text", "needle"),
    [
        ("bad.yaml", "task: [unclosed\n", "invalid YAML"),
        ("bad.json", '{"task": "x",}', "invalid JSON at line 1 column 14"),
        ("dup.yaml", "task: a\ntask: b\nsource: human:x\nitems: []\n", "duplicate key 'task'"),
        ("c.txt", "{}", "unsupported file type '.txt'"),
        ("empty.yaml", "", "(root): Input should be a valid dictionary"),
    ],
)
def test_unreadable_files_name_file_and_problem(tmp_path: Path, name: str, text: str, needle: str) -> None:
    path = write(tmp_path / name, text)
    with pytest.raises(ChecklistFileError) as info:
        load_checklist_file(path)
    assert str(info.value).startswith(str(path)) and needle in str(info.value)


def test_schema_errors_carry_field_paths_and_item_ids(tmp_path: Path) -> None:
    data = toy_data()
    data["items"][2]["probes"] = [{"pattern": "x", "polarity": "maybe"}]
    data["waivers"] = [{"verifier_ref": "test_outputs.py::t"}]
    with pytest.raises(ChecklistFileError) as info:
        load_checklist_file(write(tmp_path / "c.json", json.dumps(data)))
    problems = {(p.item_id, p.field) for p in info.value.problems}
    assert problems == {("T3", "items[2].probes[0].polarity"), ("test_outputs.py::t", "waivers[0].reason")}
    assert "items[2].probes[0].polarity: Input should be 'yes' or 'no' (got 'maybe')" in str(info.value)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ChecklistFileError, match="cannot read"):
        load_checklist_file(tmp_path / "absent.yaml")


# ---------------------------------------------------------------- freezing


def test_sha_ignores_key_order_whitespace_and_omitted_defaults(tmp_path: Path) -> None:
    data = toy_data()
    reordered = json.loads(json.dumps(data), object_pairs_hook=lambda pairs: dict(reversed(pairs)))
    assert list(reordered) != list(data)
    compact = load_checklist_file(write(tmp_path / "a.json", json.dumps(data, separators=(",", ":"))))
    pretty = load_checklist_file(write(tmp_path / "b.json", json.dumps(reordered, indent=7)))
    as_yaml = load_checklist_file(write(tmp_path / "c.yaml", yaml.safe_dump(data, indent=4, width=40)))
    no_defaults = dict(data)
    del no_defaults["waivers"]
    assert len({checklist_sha(c) for c in (compact, pretty, as_yaml, parse_checklist(no_defaults))}) == 1


def _edit(change: Any) -> Checklist:
    data = toy_data()
    change(data)
    return parse_checklist(data)


@pytest.mark.parametrize(
    "change",
    [
        lambda d: d.update(task="toy-count-2"),
        lambda d: d.update(source="human:someone-else"),
        lambda d: d["items"][0].update(text=d["items"][0]["text"] + " "),
        lambda d: d["items"][0].update(id="T1a"),
        lambda d: d["items"][3].update(route="judge"),
        lambda d: d["items"][0].update(task_quote="write the result to"),
        lambda d: d["items"][2]["verifier_refs"].reverse(),
        lambda d: d["items"][1]["probes"][0].update(flags="i"),
        lambda d: d["items"][1]["probes"][0].update(polarity="no"),
        lambda d: d["items"].reverse(),
        lambda d: d["waivers"].append({"verifier_ref": "a::b", "reason": "r"}),
    ],
)
def test_any_content_change_changes_the_sha(change: Any) -> None:
    assert checklist_sha(_edit(change)) != checklist_sha(parse_checklist(toy_data()))


def test_canonical_json_is_compact_and_sorted() -> None:
    text = canonical_json(parse_checklist(toy_data()))
    assert text == json.dumps(json.loads(text), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert text.startswith('{"items":[{"id":"T1","probes":[],"route":"assertion",')


def test_freeze_records_identity_and_refuses_tampering() -> None:
    checklist = parse_checklist(toy_data())
    frozen = freeze(checklist, rules_version="abc123")
    assert frozen.sha == checklist_sha(checklist)
    assert FrozenChecklist.model_validate(frozen.model_dump()) == frozen
    with pytest.raises(ValueError, match="does not match the checklist content"):
        FrozenChecklist(sha=frozen.sha, checklist=_edit(lambda d: d.update(source="human:mallory")))
    with pytest.raises(Exception):
        frozen.sha = "0" * 64  # type: ignore[misc]


def test_checklist_to_json_round_trips_in_the_design_schema(tmp_path: Path) -> None:
    checklist = parse_checklist(toy_data())
    text = checklist_to_json(checklist)
    data = json.loads(text)
    assert list(data) == ["task", "source", "items", "waivers"]
    assert list(data["items"][0]) == ["id", "route", "text", "task_quote", "verifier_refs", "probes"]
    assert load_checklist_file(write(tmp_path / "out.json", text)) == checklist
