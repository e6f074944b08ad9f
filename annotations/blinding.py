"""Blinding: the rater-visible view of a trajectory.

A rating seen next to a model's verdict is not an independent rating, so raters get a view built
here and nothing else. The view carries an opaque unit code, the task instruction and the steps of
the log. It never carries the official outcome or reward, judge scores or verdicts, the skill
condition, model or agent names, trajectory ids or paths — those fields are simply not copied.

Log text can leak them too, so it is scrubbed (all of this is what `blind_trajectory` does):

- **Not shown at all:** `system` events (harness banner: model, tool list, installed skills, session
  id) and `user` events (the instruction, shown once above the log, harness prompts, and skill
  injections); calls of skill-loading tools (`Skill`, `activate_skill`, …) and non-shell calls that
  touch a skills folder or a `SKILL.md`, together with every output and file content they produced;
  outputs that are skill injections (`<activated_skill …>`, "Base directory for this skill").
- **Lines removed:** output and file lines that mention a skills folder, `SKILL.md` or a skill;
  sentences of agent messages and reasoning that mention a skill.
- **Replaced:** skills-folder paths in shell commands → `[hidden path]`; model names (every model
  of the project with its vendor prefixes and suffixes, and the model families, vendors and names of
  `blinding_terms.yaml`, with the version and size words that follow them: "Gemini 3 Flash" →
  `[model]`) → `[model]`; agent harness names → `[agent]`; the condition markers the importer reads
  (`noskills` in task copies and job folders) → `[hidden]`; compound skill names (`mesh-analysis`;
  one-word ones such as `pdf` are ordinary vocabulary and stay) → `[hidden]`; trajectory ids, their
  random suffixes and trial folder paths → `[id]`.

Names are looked for in the text NFKC-normalised and without its zero-width and bidi characters
(`normalise`), so full-width letters ("ｃｌａｕｄｅ") and split words ("clau\u200bde") are matched too;
model, agent and marker names also match their spelling variants (`gemini3flash`, `Gemini-3-Flash`).
Raters get the NFKC text with the invisible characters left outside the replaced names shown as
`⟨U+202E⟩`, as everywhere in the app. Every pattern
is linear in the text's length (a 1 MB line is scrubbed in well under a second).

What remains is the agent's own work, which can still hint at a condition (an agent with a skill
may work differently) or a harness (tool names such as `Bash` or `run_shell_command`): blinding
removes labels, not behaviour. The markers are the same words in every condition, though a run
that used a skill's files may show more `[hidden path]` markers than one that did not.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict

from gcpc_core.models import Event, Task, Trajectory
from gcpc_core.text import INVISIBLE, show_invisible

__all__ = [
    "TERMS_PATH",
    "BlindStep",
    "BlindSteps",
    "BlindTrajectory",
    "BlindingTerms",
    "KnownNames",
    "Scrubber",
    "blind_trajectory",
    "collect_terms",
    "known_names",
    "normalise",
    "preview",
]

TERMS_PATH = Path(__file__).with_name("blinding_terms.yaml")
"""Condition markers, agent names, model families, names and suffixes blinded in every project."""
SKILL_TOOLS = frozenset({"skill", "activate_skill", "load_skill", "use_skill", "read_skill"})
SHELL_TOOLS = frozenset({"bash", "run_shell_command", "shell", "terminal", "execute_command", "exec", "run_command"})
HIDDEN_KINDS = frozenset({"system", "user"})
STEP_TITLES = {
    "agent_message": "Agent",
    "agent_thinking": "Agent reasoning",
    "tool_call": "Action",
    "tool_output": "Result",
    "file_content": "File",
}

_SKILL_REF = re.compile(r"(?i)skill\.md|activated?_skill|[/\\]skills?(?:[/\\]|\b)|\bskills?\b")
# A path token holding a skills folder. The lookbehind starts matches at token starts only: without it every
# position of a long token is a start and the scan is quadratic (a 1 MB log line took hours).
_SKILL_PATH = re.compile(r"(?i)(?<![^\s'\"`()<>])[^\s'\"`()<>]*[/\\]skills?(?:[/\\][^\s'\"`()<>]*|(?=[\s'\"`()<>]|$))")
_INJECTION = re.compile(r"(?i)<activated_skill|base directory for this skill|^launching skill:")
_SENTENCE_END = re.compile(r"(?<=[.!?])(\s+)")


def normalise(text: str) -> str:
    """`text` as blinding sees and shows it: NFKC (full-width and other compatibility forms folded),
    zero-width and bidi characters removed."""
    return INVISIBLE.sub("", unicodedata.normalize("NFKC", text))


class KnownNames(BaseModel):
    """The names of `blinding_terms.yaml` (see its comments)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    condition_markers: tuple[str, ...]
    agents: tuple[str, ...]
    model_families: tuple[str, ...]
    models: tuple[str, ...]
    model_suffixes: tuple[str, ...]


@cache
def known_names(path: Path = TERMS_PATH) -> KnownNames:
    """The blinding name list (read once per process)."""
    try:
        return KnownNames.model_validate(yaml.safe_load(path.read_text(encoding="utf-8")))
    except (OSError, yaml.YAMLError, ValueError) as exc:
        raise ValueError(f"{path}: not a valid blinding name list: {exc}") from exc


_SEP = r"[\s._\-\u2010-\u2015]*"
"""What may stand between the letter and digit runs of a name: "gemini 3 flash" ~ "gemini3flash"."""


def _flex(name: str) -> str:
    """A pattern matching `name` (normalised) and its spelling variants: runs of letters, of digits and of
    other characters, in order, joined by any separators or none."""
    runs = re.findall(r"[^\W\d_]+|\d+|[^\w\s.\-\u2010-\u2015]+", normalise(name))
    return _SEP.join(map(re.escape, runs))


class BlindingTerms(BaseModel):
    """Names to scrub from text shown to raters; frozen into a study when it is created."""

    model_config = ConfigDict(frozen=True)

    models: tuple[str, ...] = ()
    agents: tuple[str, ...] = ()
    skills: tuple[str, ...] = ()
    ids: tuple[str, ...] = ()

    def merged(self, other: BlindingTerms) -> BlindingTerms:
        """Every name of either set: terms that come from elsewhere (a study's design record) are only ever
        added to the project's own, so an import can widen blinding but never narrow it."""
        return BlindingTerms(**{name: tuple(sorted(set(getattr(self, name)) | set(getattr(other, name))))
                                for name in type(self).model_fields})


def _model_variants(name: str) -> set[str]:
    """`bedrock/us.anthropic.claude-haiku-4-5-v1:0` → itself, and every `/`- and `.`-suffix, with and without `:N`."""
    out: set[str] = set()
    for part in [name] + [name.split("/", i + 1)[-1] for i in range(name.count("/"))]:
        pieces = part.split(".")
        for i in range(len(pieces)):
            tail = ".".join(pieces[i:])
            out |= {tail, re.sub(r":\d+$", "", tail)}
    return {v for v in out if len(v) >= 3 and not v.replace(".", "").isdigit()}


def _agent_variants(name: str) -> set[str]:
    return {v for v in (name, name.replace("-", " "), name.replace("-", "_")) if len(v) >= 3}


def _skill_names(text: str) -> set[str]:
    names = set(re.findall(r"(?i)[/\\]skills[/\\]([\w.-]+)", text))
    names |= set(re.findall(r"<activated_skill\s+name=\"([^\"]+)\"", text))
    names |= set(re.findall(r"(?m)^(?:skill|name):\s*([\w.-]+)\s*$", text))
    for line in re.findall(r"(?mi)^skills:\s*(.+)$", text):
        names |= {s.strip() for s in line.split(",")}
    return {n for n in names if re.fullmatch(r"[\w.-]{3,}", n) and n.lower() not in {"skill", "skills", "scripts"}}


def _distinctive(skill: str) -> bool:
    """Only compound names (`mesh-analysis`) are scrubbed: a one-word skill (`pdf`, `xlsx`) is ordinary
    vocabulary that any run may use, so it reveals nothing and scrubbing it would maim the log."""
    return bool(re.fullmatch(r"[\w.]+(?:[-_][\w.]+)+", skill)) and len(skill) >= 5


def collect_terms(
    trajectories: Sequence[Trajectory], events: Mapping[str, Sequence[Event]], tasks: Iterable[Task] = ()
) -> BlindingTerms:
    """Every model, agent, skill and id name raters must not see, from the project's own data.

    Skill names come from task metadata (any `*skill*` key), harness banners (`skills: …`), skill
    tool calls and paths under a `skills/` folder in the given events.
    """
    skills: set[str] = set()
    for task in tasks:
        stack: list[object] = [task.metadata]
        while stack:  # nested TOML tables
            node = stack.pop()
            if isinstance(node, dict):
                for key, value in node.items():
                    if "skill" in str(key).lower() and isinstance(value, (str, list)):
                        skills |= {v for v in ([value] if isinstance(value, str) else value) if isinstance(v, str)}
                    stack.append(value)
    for evs in events.values():
        for e in evs:
            if e.kind == "system" or (e.tool_name or "").lower() in SKILL_TOOLS or "skill" in e.text.lower():
                skills |= _skill_names(e.text)
    ids: set[str] = set()
    for t in trajectories:
        ids |= {t.id, t.source_path}
        ids |= {t.id.split("__", 1)[1]} if "__" in t.id and len(t.id.split("__", 1)[1]) >= 5 else set()
        ids |= {p for p in t.source_path.replace("\\", "/").split("/")[-1:] if len(p) >= 5}
    return BlindingTerms(
        models=tuple(sorted({v for t in trajectories for v in _model_variants(t.model)})),
        agents=tuple(sorted({v for t in trajectories for v in _agent_variants(t.agent)})),
        skills=tuple(sorted(s for s in skills if _distinctive(s))),
        ids=tuple(sorted(i for i in ids if i)),
    )


def _alternation(words: Iterable[str], variant: Callable[[str], str] = re.escape) -> str | None:
    """One alternation of `words` (longest first: a full name before its tail)."""
    ordered = sorted({normalise(w) for w in words if normalise(w).strip()}, key=len, reverse=True)
    return "|".join(dict.fromkeys(map(variant, ordered))) or None


_AFTER = r"(?![^\W\d_])"
"""A name ends where no letter follows ("claude3" is a hit, "claudette" is not). It must also start where no
letter or digit precedes it (`_`, `-`, `/` and `.` separate names): `Scrubber` checks that for each match,
since a look-behind in front of the alternation would cost the regex engine its fast scan for first letters."""
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
"""Case folding that keeps every offset: names are matched in `text.translate(_ASCII_LOWER)` (NFKC has
already turned full-width letters into ASCII), and replaced at the same spans of the text."""


class Scrubber:
    """Compiled replacements for one set of terms and the known names: one regex over every name, in
    priority order (ids, the project's models and agents, skills, condition markers, known agents, model
    families, known models; the first that matches at the leftmost position wins). It runs in linear time:
    alternations of literals, and runs whose ends are unambiguous (digits are matched atomically)."""

    def __init__(self, terms: BlindingTerms, names: KnownNames | None = None) -> None:
        self.terms = terms
        names = names or known_names()
        suffixes = _alternation(names.model_suffixes, _flex)
        tail = rf"(?:{_SEP}(?:(?>\d+(?:\.\d+)*+)[^\W\d_]?{'|' + suffixes if suffixes else ''}))*"
        self._markers: list[str] = []
        groups = []
        for words, variant, marker, after in (
            (terms.ids, re.escape, "[id]", _AFTER),
            (terms.models, _flex, "[model]", tail + _AFTER),
            (terms.agents, _flex, "[agent]", _AFTER),
            (terms.skills, re.escape, "[hidden]", _AFTER),
            (names.condition_markers, lambda w: _flex(w) + "s?", "[hidden]", _AFTER),
            (names.agents, _flex, "[agent]", _AFTER),
            (names.model_families, _flex, "[model]", tail + _AFTER),
            (names.models, _flex, "[model]", _AFTER),
        ):
            alt = _alternation((w.translate(_ASCII_LOWER) for w in words), variant)
            if alt:
                groups.append(f"(?P<g{len(self._markers)}>(?:{alt}){after})")
                self._markers.append(marker)
        self._names = re.compile("|".join(groups)) if groups else None
        skills = _alternation(terms.skills)
        self._skill_word = re.compile(rf"(?i)(?<![\w-])(?:{skills})(?![\w-])") if skills else None

    def _name_spans(self, text: str) -> Iterator[tuple[int, int, str]]:
        """(start, end, marker) of every name in `text`, left to right, not overlapping."""
        if self._names is None:
            return
        lowered = text.translate(_ASCII_LOWER)
        at = 0
        while (m := self._names.search(lowered, at)) is not None:
            start = m.start()
            if start and lowered[start - 1].isalnum():  # inside a word: try again one character on
                at = start + 1
                continue
            yield start, m.end(), self._markers[int(m.lastgroup[1:])]
            at = m.end()

    def mentions_skill(self, text: str) -> bool:
        text = normalise(text)
        return bool(_SKILL_REF.search(text) or (self._skill_word and self._skill_word.search(text)))

    def __call__(self, text: str) -> str:
        """`text` NFKC-normalised, skills-folder paths hidden and names replaced by markers (both found in
        the text without its invisible characters); the invisible characters outside what was replaced
        stay, shown as `⟨U+XXXX⟩` so that the rater sees them."""
        text = unicodedata.normalize("NFKC", text)
        marks = [(m.start(), m.group()) for m in INVISIBLE.finditer(text)]
        plain = INVISIBLE.sub("", text)
        paths = [(m.start(), m.end(), "[hidden path]") for m in _SKILL_PATH.finditer(plain)]
        spans, k = list(paths), 0
        for a, b, marker in self._name_spans(plain):
            while k < len(paths) and paths[k][1] <= a:
                k += 1
            if k == len(paths) or b <= paths[k][0]:  # a name inside a hidden path is hidden with it
                spans.append((a, b, marker))
        spans.sort()
        # invisible characters at their offsets in `plain`: the i-th one removed sat before plain[start - i]
        shown = [(start - i, show_invisible(ch)) for i, (start, ch) in enumerate(marks)]
        out, done, m = [], 0, 0
        for a, b, marker in [*spans, (len(plain), len(plain), "")]:
            while m < len(shown) and shown[m][0] <= a:
                at, visible = shown[m]
                out += [plain[done:at], visible]
                done = at
                m += 1
            while m < len(shown) and shown[m][0] < b:  # inside the replaced span: gone with it
                m += 1
            out += [plain[done:a], marker]
            done = b
        return "".join(out)

    def drop_lines(self, text: str) -> str:
        """Output and file text without the lines that mention a skill."""
        return "\n".join(line for line in text.split("\n") if not self.mentions_skill(line))

    def drop_sentences(self, text: str) -> str:
        """Narration without the sentences that mention a skill."""
        lines = []
        for line in text.split("\n"):
            parts = _SENTENCE_END.split(line)
            sentences = ["".join(parts[i : i + 2]) for i in range(0, len(parts), 2)]
            kept = "".join(s for s in sentences if not self.mentions_skill(s)).rstrip()
            if kept or not line.strip():
                lines.append(kept)
        return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip("\n")


@dataclass(frozen=True)
class BlindStep:
    """One shown step of a blinded trajectory."""

    number: int
    kind: str
    title: str
    text: str
    is_error: bool = False


class BlindSteps(Sequence[BlindStep]):
    """The steps of a blinded trajectory, each scrubbed when first read: which events become steps is
    decided for the whole log at once (cheap), while scrubbing names, the costly part, is done only for
    the steps a page shows (25 of a 10,000-step record)."""

    def __init__(self, raw: Sequence[tuple[str, str, str, bool]], scrub: Scrubber) -> None:
        self._raw, self._scrub = raw, scrub
        self._done: dict[int, BlindStep] = {}

    def __len__(self) -> int:
        return len(self._raw)

    def _step(self, i: int) -> BlindStep:
        if i not in self._done:
            kind, title, text, is_error = self._raw[i]
            self._done[i] = BlindStep(number=i + 1, kind=kind, title=self._scrub(title), text=self._scrub(text),
                                      is_error=is_error)
        return self._done[i]

    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return tuple(self._step(i) for i in range(*index.indices(len(self))))
        if not -len(self) <= index < len(self):
            raise IndexError(index)
        return self._step(index % len(self))


@dataclass(frozen=True)
class BlindTrajectory:
    """Everything a rater sees of one trajectory: an opaque code, the instruction, the steps."""

    code: str
    instruction: str
    steps: Sequence[BlindStep]

    def text(self) -> str:
        """The whole view as plain text (for tests and exports of what raters saw)."""
        body = "\n\n".join(f"[{s.number}] {s.title}\n{s.text}" for s in self.steps)
        return f"{self.code}\n\n{self.instruction}\n\n{body}"


def _is_skill_call(event: Event, scrub: Scrubber) -> bool:
    tool = (event.tool_name or "").lower()
    if tool in SKILL_TOOLS or "skill.md" in normalise(event.text).lower():
        return True
    return tool not in SHELL_TOOLS and scrub.mentions_skill(event.text)


def blind_trajectory(code: str, instruction: str, events: Sequence[Event], terms: BlindingTerms) -> BlindTrajectory:
    """The rater-visible view of one trajectory (see the module docstring for what is scrubbed)."""
    scrub = Scrubber(terms)
    dropped_calls: set[str] = set()
    steps: list[tuple[str, str, str, bool]] = []
    for e in events:
        if e.kind in HIDDEN_KINDS:
            continue
        text = e.text
        if e.kind == "tool_call":
            if _is_skill_call(e, scrub):
                dropped_calls.add(e.id)
                continue
        elif e.kind in ("tool_output", "file_content"):
            if (e.call_id in dropped_calls or _INJECTION.search(normalise(text))
                    or (e.path and scrub.mentions_skill(e.path))):
                continue
            shown = scrub.drop_lines(text)
            if text.strip() and not shown.strip():
                continue
            text = shown
        else:  # agent_message, agent_thinking
            text = scrub.drop_sentences(text)
            if not text.strip():
                continue
        title = " · ".join([STEP_TITLES.get(e.kind, e.kind), *(x for x in (e.tool_name, e.path) if x)])
        steps.append((e.kind, title, text, e.is_error))
    return BlindTrajectory(code=code, instruction=scrub(instruction), steps=BlindSteps(steps, scrub))


def preview(text: str, limit: int = 4000) -> tuple[str, int]:
    """Head and tail of a long text with a marker saying how much is left out, and that count."""
    if len(text) <= limit:
        return text, 0
    head, tail = text[: limit * 2 // 3], text[-(limit // 3) :]
    hidden = len(text) - len(head) - len(tail)
    return f"{head}\n⟦… {hidden:,} characters not shown here; open the full text below …⟧\n{tail}", hidden
