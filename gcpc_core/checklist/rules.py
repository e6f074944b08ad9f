"""The human-governed rule files in `rules/`: loading, validation and the content-hash version.

Rules are data, not code: the gates read their thresholds and word lists from
`checklist_contract.yaml`, prompts embed the Markdown prose, and every artifact records
`rules_version` so a result can be traced to the exact rules it was produced under.
"""

from __future__ import annotations

import hashlib
import re
from functools import cached_property
from pathlib import Path
from typing import Any, Literal, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from .schema import ROUTES, Checklist, ChecklistItem, Route

__all__ = [
    "CONTRACT_FILE",
    "DEFAULT_RULES_DIR",
    "FIXED_CHECKLIST_FILE",
    "PROSE_FILES",
    "BudgetRule",
    "CompoundRule",
    "ContractRules",
    "DuplicateRule",
    "FixedQuestion",
    "ItemRule",
    "LiteralRule",
    "PhraseRule",
    "QuoteRule",
    "RouteRule",
    "Rules",
    "RulesError",
    "SameObjectRule",
    "fixed_checklist",
    "load_rules",
    "rules_version",
]

DEFAULT_RULES_DIR = Path(__file__).resolve().parents[2] / "rules"
"""The repository's `rules/` folder (beside the `gcpc_core` package)."""

CONTRACT_FILE = "checklist_contract.yaml"
FIXED_CHECKLIST_FILE = "fixed_checklist.yaml"
PROSE_FILES: tuple[str, ...] = ("checklist_contract.md", "evidence.md")
"""Markdown files that must exist; every other `*.md` in rules/ is loaded too."""

SHORT_VERSION_LEN = 12

_M = TypeVar("_M", bound=BaseModel)


class RulesError(ValueError):
    """A rules folder that cannot be loaded; the message names the file and the problem."""


class _Rule(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class BudgetRule(_Rule):
    """How many items one checklist may hold (G6)."""

    min_items: int = Field(ge=1)
    """Fewest items allowed."""
    max_items: int = Field(ge=1)
    """Most items allowed for a small verifier (the cap's floor; see `gcpc_core.checklist.gates.item_cap`)."""
    items_beyond_checks: int = Field(default=0, ge=0)
    """Items allowed beyond one per verifier check, for the instruction's generated and judge items."""
    max_items_ceiling: int | None = Field(default=None, ge=1)
    """The cap never exceeds this, however large the verifier; None: `max_items` is the cap."""

    @model_validator(mode="after")
    def _ordered(self) -> BudgetRule:
        if self.min_items > self.max_items:
            raise ValueError("min_items exceeds max_items")
        if self.max_items_ceiling is not None and self.max_items_ceiling < self.max_items:
            raise ValueError("max_items_ceiling is below max_items")
        return self

    @property
    def ceiling(self) -> int:
        """The largest cap any task can get."""
        return self.max_items if self.max_items_ceiling is None else self.max_items_ceiling


class ItemRule(_Rule):
    """Length bounds of an item's text (G3) and the shape of its id (G6)."""

    min_words: int = Field(ge=1)
    """Fewest whitespace-separated words of an item that names no literal."""
    min_words_with_literal: int = Field(ge=1)
    """Fewest words of an item that names a literal (a literal and a predicate: "`/app/x.csv` exists")."""
    max_words: int = Field(ge=1)
    """Most whitespace-separated words."""
    min_chars: int = Field(ge=1)
    """Fewest characters after stripping, for an item that names no literal."""
    max_chars: int = Field(ge=1)
    """Most characters of prose: the stripped text with its literals taken out."""
    max_raw_chars: int = Field(ge=1)
    """Most characters of the text as written, literals included: the hard cap on long literals, and the
    synthesis grammar's `maxLength` on `text`, so the gate rejects exactly what the grammar cannot emit."""
    id_pattern: str
    """Regex an item id must fully match."""
    predicate: str = ""
    """Regex (case-insensitive) for a word that states what must hold (a verb: "exists", "lists", "is", "sorted"): an
    item's prose with no match names a thing, not a requirement ("Answer file valid json", "Check numerical
    equality"); empty: not checked."""

    @field_validator("id_pattern", "predicate")
    @classmethod
    def _compiles(cls, value: str) -> str:
        re.compile(value, re.IGNORECASE)
        return value

    @cached_property
    def predicate_regex(self) -> re.Pattern[str] | None:
        """`predicate`, compiled; None when it is empty."""
        return re.compile(self.predicate, re.IGNORECASE) if self.predicate else None

    @model_validator(mode="after")
    def _raw_cap_holds_the_prose(self) -> ItemRule:
        if self.max_raw_chars < max(self.max_chars, self.min_chars):
            raise ValueError("max_raw_chars is below max_chars: an item of full-length prose could not be written")
        return self


class LiteralRule(_Rule):
    """What counts as a literal (task data inside an item): masked for G3, distinct content for G4."""

    patterns: dict[str, str] = Field(min_length=1)
    """Named Python regexes, tried in file order (quoted values, paths, file names, identifiers)."""
    numbers: str
    """Regex for numbers: literals for G4 only, so G3's outcome check still sees "a score of 1.0"."""
    kinds: dict[str, str] = Field(default_factory=dict)
    """Placeholder word → regex searched in a literal's text (quotes stripped): a literal of that kind is masked with
    the word instead of `LITERAL` (a code expression as `CODE`, a test name as `TEST`), so G3's phrase checks can
    tell "`x == 3` holds" from "`debug` is true"."""

    @field_validator("patterns")
    @classmethod
    def _compile_all(cls, value: dict[str, str]) -> dict[str, str]:
        for pattern in value.values():
            re.compile(pattern)
        return value

    @field_validator("kinds")
    @classmethod
    def _placeholders(cls, value: dict[str, str]) -> dict[str, str]:
        for word, pattern in value.items():
            if not re.fullmatch(r"[A-Z]+", word):
                raise ValueError(f"literal kind {word!r} must be one upper-case word (it stands in the masked text)")
            re.compile(pattern)
        return value

    @cached_property
    def kind_regexes(self) -> tuple[tuple[str, re.Pattern[str]], ...]:
        """(placeholder, compiled regex) of every kind, in file order (the first that matches wins)."""
        return tuple((word, re.compile(pattern)) for word, pattern in self.kinds.items())

    @field_validator("numbers")
    @classmethod
    def _compile_one(cls, value: str) -> str:
        re.compile(value)
        return value

    @cached_property
    def regex(self) -> re.Pattern[str]:
        """One alternation of every pattern, in file order (the first that matches at a position wins)."""
        return re.compile("|".join(f"(?:{p})" for p in self.patterns.values()))

    @cached_property
    def number_regex(self) -> re.Pattern[str]:
        """`numbers`, compiled."""
        return re.compile(self.numbers)


class QuoteRule(_Rule):
    """Task-quote requirements beyond verbatim-ness (G1)."""

    min_chars: int = Field(ge=1)
    """Shortest whitespace-normalized quote that counts as grounding."""


class PhraseRule(_Rule):
    """One family of banned wording (G3), matched on quote-masked text."""

    label: str
    """How a failure names the family, e.g. `vague phrase`."""
    why: str = ""
    """The reason, for humans and prompts."""
    phrases: list[str] = Field(default_factory=list)
    """Literal phrases: case-insensitive, whole words, any whitespace between words."""
    patterns: list[str] = Field(default_factory=list)
    """Python regexes (compiled case-insensitive) for word families."""
    allowed_routes: list[Route] = Field(default_factory=list)
    """Routes on which this wording is allowed (run phrasing on `judge`); empty: banned everywhere."""
    excused_by_literal: int = Field(0, ge=0)
    """When > 0: a hit followed, within this many words, by a literal or a number that says what is meant is
    allowed ("the expected exit code 0"); 0: never excused."""
    not_excused_across: list[str] = Field(default_factory=list)
    """Words that, standing between a hit and the literal after it, show that the literal names the subject, not
    what the word means ("the correct permissions for `/app/key`"): no excuse across them."""

    @field_validator("patterns")
    @classmethod
    def _compile(cls, value: list[str]) -> list[str]:
        for pattern in value:
            re.compile(pattern, re.IGNORECASE)
        return value

    @cached_property
    def matchers(self) -> tuple[tuple[str, re.Pattern[str]], ...]:
        """(shown text, compiled regex) for every phrase and pattern, in file order."""
        literal = [
            (p, re.compile(r"(?<!\w)" + r"\s+".join(map(re.escape, p.split())) + r"(?!\w)", re.IGNORECASE))
            for p in self.phrases
            if p.strip()
        ]
        return tuple(literal + [(p, re.compile(p, re.IGNORECASE)) for p in self.patterns])


class SameObjectRule(_Rule):
    """When a second predicate after "and" is another aspect of the same object, not a second
    requirement (G3); the YAML explains the two cases."""

    existence: list[str] = Field(min_length=1)
    """Predicates stating that an object exists ("exists", "is present")."""
    kind: str
    """Regex (case-insensitive) a whole second predicate must match to name only the object's kind."""
    complement: str
    """Regex (case-insensitive) found in a second predicate that states what happens to the rest."""

    @field_validator("kind", "complement")
    @classmethod
    def _compiles(cls, value: str) -> str:
        re.compile(value, re.IGNORECASE)
        return value

    @cached_property
    def kind_regex(self) -> re.Pattern[str]:
        return re.compile(self.kind, re.IGNORECASE)

    @cached_property
    def complement_regex(self) -> re.Pattern[str]:
        return re.compile(self.complement, re.IGNORECASE)


class CompoundRule(_Rule):
    """Signals that an item states more than one requirement (G3); see the YAML for the rule."""

    separators: list[str]
    """Substrings (lower case, spaces significant) that join clauses."""
    max_and: int = Field(ge=0)
    """More standalone "and"s than this makes an item compound."""
    sentence_boundary: bool = True
    """Whether more than one sentence makes an item compound."""
    same_object: SameObjectRule
    """Second predicates that are another aspect of the same object (not compound)."""
    and_spellings: list[str] = Field(default_factory=list)
    """Other spellings of a standalone "and" ("&"): read as "and" by every compound check."""


class GrammarRule(_Rule):
    """How G3 reads an item's sentence structure: the word classes and verbs `grammar.predicates` uses to find its
    predicates (finite verbs); the YAML explains the reading."""

    auxiliaries: list[str] = Field(min_length=1)
    """Finite auxiliaries, copulas and modals ("is", "has", "must", "doesn't"): each opens a predicate."""
    modals: list[str] = Field(default_factory=list)
    """Auxiliaries after which a coordinated base verb is a predicate of its own ("must exist and contain …")."""
    copulas: list[str] = Field(default_factory=list)
    """Copulas after which a list of participles states one predicate each ("are sorted, deduplicated …")."""
    nonfinite: list[str] = Field(default_factory=list)
    """Forms of "be" that continue a predicate but open none ("be", "been", "being")."""
    determiners: list[str] = Field(default_factory=list)
    """Words after which a verb form is a noun ("the output", "every match")."""
    prepositions: list[str] = Field(default_factory=list)
    """Words after which a verb form is a noun or an infinitive ("of results", "to parse")."""
    pronouns: list[str] = Field(default_factory=list)
    """Words that can stand as a subject ("it", "they", "none"): a restated subject opens a new clause."""
    adverbs: list[str] = Field(default_factory=list)
    """Words skipped when reading positions ("not", "also"); any word of more than four letters ending in -ly is one
    too."""
    coordinators: list[str] = Field(default_factory=list)
    """Words and marks that join clauses ("and", "plus", ",", ";")."""
    subordinate: list[str] = Field(default_factory=list)
    """Words that open a clause qualifying the one before it ("that", "which", "if"): its predicates are not
    requirements of their own, up to the next ";" or sentence end."""
    participle_preps: list[str] = Field(default_factory=list)
    """Prepositions after which an -ed form qualifies a noun ("the data stored in …") and states no predicate."""
    intransitive: list[str] = Field(default_factory=list)
    """Verbs (base form) that often end their clause ("exists", "appears"): before "and" or a comma, their -s form
    after a noun is a verb; any other -s form there is a plural noun ("action names and object names")."""
    means: list[str] = Field(default_factory=list)
    """-ing forms that, after a comma, say how or what, not a second requirement ("using", "including")."""
    irregular: dict[str, list[str]] = Field(default_factory=dict)
    """Irregular verbs: base form → past and participle forms."""
    verbs: list[str] = Field(default_factory=list)
    """Regular verbs, base form; -s, -ed and doubled-consonant forms are generated."""


class DuplicateRule(_Rule):
    """Near-duplicate detection between items (G4)."""

    method: Literal["sequence_matcher"]
    """`difflib.SequenceMatcher(autojunk=False).ratio()` over normalized text."""
    threshold: float = Field(gt=0.0, le=1.0)
    """Similarity at or above which the later item is rejected."""


class RouteRule(_Rule):
    """What one route means and how the gates treat its refs."""

    definition: str
    """One-paragraph definition, for humans and prompts."""
    requires_refs: bool
    """G2: items on this route need at least one verifier ref."""
    covers_tests: bool
    """G5: refs of items on this route count as covering test nodes."""
    examples: list[str] = Field(default_factory=list)
    """Example item texts."""


class ContractRules(_Rule):
    """`checklist_contract.yaml`: everything the gates read."""

    schema_version: int
    """Version of this file's layout (not of its content; the rules version hashes content)."""
    budget: BudgetRule
    item: ItemRule
    literals: LiteralRule
    quote: QuoteRule
    sources: list[str] = Field(min_length=1)
    """Allowed `source` prefixes (`human` in `human:alice`)."""
    unfrozen_sources: list[str] = Field(default_factory=list)
    """Source prefixes that pass the gates but are never frozen (`draft`: reviewed by a person first)."""
    banned: dict[str, PhraseRule]
    """Banned wording families; must include `vague`, `outcome` and `run_specific`."""
    compound: CompoundRule
    grammar: GrammarRule
    """How G3 finds an item's predicates (the one-requirement and predicate rules)."""
    duplicates: DuplicateRule
    routes: dict[Route, RouteRule]
    """Exactly the three routes."""

    @field_validator("banned")
    @classmethod
    def _required_families(cls, value: dict[str, PhraseRule]) -> dict[str, PhraseRule]:
        missing = {"vague", "outcome", "run_specific"} - set(value)
        if missing:
            raise ValueError(f"missing banned families: {', '.join(sorted(missing))}")
        return value

    @field_validator("routes")
    @classmethod
    def _all_routes(cls, value: dict[str, RouteRule]) -> dict[str, RouteRule]:
        if set(value) != set(ROUTES):
            raise ValueError(f"routes must define exactly {', '.join(ROUTES)}")
        return value


class FixedQuestion(_Rule):
    """One question of the task-agnostic fixed checklist (ablation baseline)."""

    id: str
    """`F1`, `F2`, …"""
    route: Literal["judge"] = "judge"
    """Always `judge`: the question needs the instruction and the run."""
    text: str
    """The question, phrased as a requirement."""


class _FixedFile(_Rule):
    items: list[FixedQuestion] = Field(min_length=1)


class Rules(_Rule):
    """Everything in one rules folder, with its content-hash version."""

    rules_dir: str
    """Absolute path the rules were loaded from."""
    version: str
    """First 12 hex digits of `version_full`; what artifacts show."""
    version_full: str
    """sha256 over every file in the folder (see `rules_version`)."""
    contract: ContractRules
    """The gate rules (`checklist_contract.yaml`)."""
    fixed: list[FixedQuestion]
    """The fixed checklist questions (`fixed_checklist.yaml`)."""
    prose: dict[str, str] = Field(repr=False)
    """Every Markdown file's text, keyed by file name, for prompts and the app."""


def _rule_files(rules_dir: Path) -> list[Path]:
    return sorted((p for p in rules_dir.rglob("*") if p.is_file()), key=lambda p: p.relative_to(rules_dir).as_posix())


def rules_version(rules_dir: Path | None = None, *, full: bool = False) -> str:
    """sha256 over the sorted (relative path, bytes) of every file under `rules_dir`.

    Each file contributes its POSIX relative path and its bytes, each length-prefixed, so no
    two different folders hash alike. Returns the 12-hex short form unless `full`.
    """
    root = Path(rules_dir or DEFAULT_RULES_DIR).resolve()
    if not root.is_dir():
        raise RulesError(f"{root}: rules folder not found")
    digest = hashlib.sha256()
    for path in _rule_files(root):
        for part in (path.relative_to(root).as_posix().encode("utf-8"), path.read_bytes()):
            digest.update(len(part).to_bytes(8, "big"))
            digest.update(part)
    hexdigest = digest.hexdigest()
    return hexdigest if full else hexdigest[:SHORT_VERSION_LEN]


_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's safe loader where PyYAML was built with it: loading the rules took a judge run ~60 ms
with the pure-Python one."""


def _load_yaml(path: Path) -> Any:
    if not path.is_file():
        raise RulesError(f"{path}: required rules file is missing")
    try:
        return yaml.load(path.read_text(encoding="utf-8"), Loader=_SAFE_LOADER)  # noqa: S506 - a safe loader
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise RulesError(f"{path}: invalid YAML: {' '.join(str(exc).split())}") from exc


def _validated(model: type[_M], path: Path) -> _M:
    try:
        return model.model_validate(_load_yaml(path))
    except ValidationError as exc:
        detail = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or '(root)'}: {e['msg']}" for e in exc.errors(include_url=False)
        )
        raise RulesError(f"{path}: {detail}") from exc


def load_rules(rules_dir: Path | None = None) -> Rules:
    """Load and validate a rules folder (default: the repository's `rules/`); raises RulesError."""
    root = Path(rules_dir or DEFAULT_RULES_DIR).resolve()
    full = rules_version(root, full=True)
    for name in PROSE_FILES:
        if not (root / name).is_file():
            raise RulesError(f"{root / name}: required rules file is missing")
    return Rules(
        rules_dir=str(root),
        version=full[:SHORT_VERSION_LEN],
        version_full=full,
        contract=_validated(ContractRules, root / CONTRACT_FILE),
        fixed=_validated(_FixedFile, root / FIXED_CHECKLIST_FILE).items,
        prose={p.name: p.read_text(encoding="utf-8") for p in sorted(root.glob("*.md"))},
    )


def fixed_checklist(rules: Rules, task_id: str) -> Checklist:
    """The fixed questions as a Checklist for `task_id`, so the fixed judge reuses checklist judging.

    Its items are task-agnostic, so they carry no task quote and are not gated.
    """
    return Checklist(
        task=task_id,
        source=f"fixed:rules-{rules.version}",
        items=[ChecklistItem(id=q.id, route=q.route, text=q.text, task_quote="") for q in rules.fixed],
    )
