"""The checklist file contract (docs/design.md#the-checklist-file): pydantic models and a strict JSON/YAML loader.

The same models carry LLM-synthesized and hand-written checklists, so the loader is strict
(unknown keys, duplicate YAML keys and bad types are errors naming the file and field path):
a typo in a hand-written file must not silently drop a verifier ref.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

__all__ = [
    "PROBE_FLAGS",
    "ROUTES",
    "Checklist",
    "ChecklistFileError",
    "ChecklistItem",
    "Polarity",
    "Probe",
    "Route",
    "SchemaProblem",
    "Waiver",
    "load_checklist_file",
    "parse_checklist",
    "read_checklist_data",
]

Route = Literal["assertion", "generated", "judge"]
ROUTES: tuple[str, ...] = Route.__args__  # type: ignore[attr-defined]

Polarity = Literal["yes", "no"]

PROBE_FLAGS: dict[str, re.RegexFlag] = {
    "i": re.IGNORECASE,
    "m": re.MULTILINE,
    "s": re.DOTALL,
    "x": re.VERBOSE,
}
"""Letters allowed in `Probe.flags`, as in Python's inline `(?imsx)` flags."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Probe(_Model):
    """A regular expression over the evidence view that supports one verdict when it matches."""

    pattern: str = Field(min_length=1)
    """Python regular expression searched in each evidence event's text."""
    polarity: Polarity
    """Verdict a match supports: `yes` (requirement met) or `no` (requirement violated)."""
    flags: str = ""
    """Regex flag letters from `imsx` (ignore case, multiline, dot-all, verbose); empty for none."""

    @field_validator("polarity", mode="before")
    @classmethod
    def _yaml_bool(cls, value: Any) -> Any:
        """YAML 1.1 reads a bare `yes`/`no` as a boolean; hand-written files do exactly that."""
        if isinstance(value, bool):
            return "yes" if value else "no"
        return value.lower() if isinstance(value, str) else value

    def compile(self) -> re.Pattern[str]:
        """The compiled pattern; raises ValueError for unknown flags, re.error for bad syntax."""
        bad = sorted(set(self.flags) - set(PROBE_FLAGS))
        if bad:
            raise ValueError(f"unknown probe flag(s) {''.join(bad)!r}; allowed: {''.join(PROBE_FLAGS)}")
        flags = re.RegexFlag(0)
        for letter in self.flags:
            flags |= PROBE_FLAGS[letter]
        return re.compile(self.pattern, flags)


class ChecklistItem(_Model):
    """One atomic, observable requirement of one task, answerable Yes/No from evidence."""

    id: str
    """Short id, unique within the checklist, e.g. `C1`; judgments refer to it."""
    route: Route
    """`assertion` (mirrors verifier tests), `generated` (an output requirement) or `judge`
    (a requirement about the run); decides G2/G5 handling and postprocessing."""
    text: str
    """The requirement, phrased so Yes/No can be decided from tool outputs and file contents."""
    task_quote: str
    """Verbatim span of instruction.md the item is grounded in (whitespace-normalized match)."""
    verifier_refs: list[str] = Field(default_factory=list)
    """Pytest node ids of this task's verifier the item mirrors; `[param]` suffixes allowed."""
    probes: list[Probe] = Field(default_factory=list)
    """Optional regexes for the deterministic probe judge."""


class Waiver(_Model):
    """An explicit decision not to cover one verifier test node, with the reason."""

    verifier_ref: str
    """The waived pytest node id."""
    reason: str
    """Why no assertion item covers it; auditors read this, so it must not be empty."""


class Checklist(_Model):
    """The checklist file: one task's items plus waivers (the contract of docs/design.md#the-checklist-file)."""

    task: str = Field(min_length=1)
    """Task id (the task folder's name), e.g. `citation-check`."""
    source: str = Field(min_length=1)
    """Who wrote it: `human:<name>` or `llm:<model>`."""
    items: list[ChecklistItem]
    """The items, in display order."""
    waivers: list[Waiver] = Field(default_factory=list)
    """Verifier test nodes deliberately left uncovered, each with a reason."""


class SchemaProblem(BaseModel):
    """One reason a checklist file could not be read as a `Checklist`."""

    item_id: str
    """The item's id (or a waiver's ref) the problem sits in; `-` for the file as a whole."""
    field: str
    """Field path such as `items[3].route`; empty for syntax errors."""
    message: str
    """What is wrong, in one line."""


class ChecklistFileError(ValueError):
    """A checklist file that cannot be read; `problems` lists each error with its field path."""

    def __init__(self, path: str, problems: list[SchemaProblem]) -> None:
        self.path = path
        self.problems = problems
        detail = "; ".join(f"{p.field}: {p.message}" if p.field else p.message for p in problems)
        super().__init__(f"{path}: {detail}")


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that rejects duplicate mapping keys, which plain YAML silently overwrites."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r}", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


_StrictLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _StrictLoader.construct_mapping
)


def read_checklist_data(path: Path) -> Any:
    """Parse a `.json`, `.yaml` or `.yml` file into plain data; raises ChecklistFileError."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ChecklistFileError(str(path), [SchemaProblem(item_id="-", field="", message=f"cannot read: {exc}")]) from exc
    suffix = path.suffix.lower()
    try:
        if suffix == ".json":
            return json.loads(text)
        if suffix in (".yaml", ".yml"):
            return yaml.load(text, Loader=_StrictLoader)  # noqa: S506 - a SafeLoader subclass
    except json.JSONDecodeError as exc:
        msg = f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        raise ChecklistFileError(str(path), [SchemaProblem(item_id="-", field="", message=msg)]) from exc
    except yaml.YAMLError as exc:
        msg = "invalid YAML: " + " ".join(str(exc).split())
        raise ChecklistFileError(str(path), [SchemaProblem(item_id="-", field="", message=msg)]) from exc
    msg = f"unsupported file type {suffix or '(none)'!r}; use .json, .yaml or .yml"
    raise ChecklistFileError(str(path), [SchemaProblem(item_id="-", field="", message=msg)])


def _field_path(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _owner(data: Any, loc: tuple[int | str, ...]) -> str:
    """The item id (or waiver ref) a validation error sits in, read from the raw data."""
    if len(loc) >= 2 and loc[0] in ("items", "waivers") and isinstance(loc[1], int) and isinstance(data, dict):
        entries = data.get(loc[0])
        key = "id" if loc[0] == "items" else "verifier_ref"
        if isinstance(entries, list) and loc[1] < len(entries) and isinstance(entries[loc[1]], dict):
            value = entries[loc[1]].get(key)
            if isinstance(value, str) and value.strip() and " " not in value.strip():
                return value.strip()
    return "-"


def _error_message(err: Any) -> str:
    """Pydantic's message, plus the offending value when it is a short scalar."""
    message = " ".join(str(err["msg"]).split())
    value = err.get("input")
    if err["type"] != "missing" and isinstance(value, (str, int, float, bool)) and len(repr(value)) <= 60:
        message += f" (got {value!r})"
    return message


def parse_checklist(data: Any, origin: str = "<data>") -> Checklist:
    """Validate plain data as a Checklist; raises ChecklistFileError with one problem per error."""
    try:
        return Checklist.model_validate(data)
    except ValidationError as exc:
        problems = [
            SchemaProblem(
                item_id=_owner(data, tuple(err["loc"])),
                field=_field_path(tuple(err["loc"])) or "(root)",
                message=_error_message(err),
            )
            for err in exc.errors(include_url=False)
        ]
        raise ChecklistFileError(origin, problems) from exc


def load_checklist_file(path: Path) -> Checklist:
    """Read and validate one checklist file; errors name the file and each field path."""
    return parse_checklist(read_checklist_data(path), str(path))
