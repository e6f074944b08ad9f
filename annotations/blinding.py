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
  of the project with its vendor prefixes and suffixes, and common model-family words such as
  Claude, Gemini, GPT) → `[model]`; agent harness names → `[agent]`; compound skill names
  (`mesh-analysis`; one-word ones such as `pdf` are ordinary vocabulary and stay) → `[hidden]`;
  trajectory ids, their random suffixes and trial folder paths → `[id]`.

What remains is the agent's own work, which can still hint at a condition (an agent with a skill
may work differently) or a harness (tool names such as `Bash` or `run_shell_command`): blinding
removes labels, not behaviour. The markers are the same words in every condition, though a run
that used a skill's files may show more `[hidden path]` markers than one that did not.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict

from gcpc_core.models import Event, Task, Trajectory

__all__ = [
    "MODEL_FAMILY_WORDS",
    "BlindStep",
    "BlindTrajectory",
    "BlindingTerms",
    "Scrubber",
    "blind_trajectory",
    "collect_terms",
    "preview",
]

MODEL_FAMILY_WORDS = (
    "claude", "anthropic", "gemini", "minimax", "openai", "chatgpt", "gpt", "haiku", "sonnet", "opus", "qwen",
    "deepseek", "llama", "mistral", "mixtral", "kimi", "moonshot", "grok", "glm", "codex", "copilot",
    "openhands", "terminus", "aider",
)
"""Words that name a model family or an agent harness on their own, whatever the project holds."""
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


class BlindingTerms(BaseModel):
    """Names to scrub from text shown to raters; frozen into a study when it is created."""

    model_config = ConfigDict(frozen=True)

    models: tuple[str, ...] = ()
    agents: tuple[str, ...] = ()
    skills: tuple[str, ...] = ()
    ids: tuple[str, ...] = ()


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


def _alternation(words: Iterable[str]) -> str | None:
    ordered = sorted(set(words), key=len, reverse=True)  # longest first: a full name before its tail
    return "|".join(map(re.escape, ordered)) or None


class Scrubber:
    """Compiled replacements for one set of terms."""

    def __init__(self, terms: BlindingTerms) -> None:
        self.terms = terms
        self._rules: list[tuple[re.Pattern[str], str]] = []
        for words, marker in ((terms.ids, "[id]"), (terms.models, "[model]"), (terms.agents, "[agent]"),
                              (terms.skills, "[hidden]"), (MODEL_FAMILY_WORDS, "[model]")):
            alt = _alternation(words)
            if alt:
                self._rules.append((re.compile(rf"(?i)(?<![A-Za-z0-9])(?:{alt})(?![A-Za-z])"), marker))
        skills = _alternation(terms.skills)
        self._skill_word = re.compile(rf"(?i)(?<![\w-])(?:{skills})(?![\w-])") if skills else None

    def mentions_skill(self, text: str) -> bool:
        return bool(_SKILL_REF.search(text) or (self._skill_word and self._skill_word.search(text)))

    def __call__(self, text: str) -> str:
        """Names replaced by markers; skills-folder paths hidden."""
        text = _SKILL_PATH.sub("[hidden path]", text)
        for pattern, marker in self._rules:
            text = pattern.sub(marker, text)
        return text

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


@dataclass(frozen=True)
class BlindTrajectory:
    """Everything a rater sees of one trajectory: an opaque code, the instruction, the steps."""

    code: str
    instruction: str
    steps: tuple[BlindStep, ...]

    def text(self) -> str:
        """The whole view as plain text (for tests and exports of what raters saw)."""
        body = "\n\n".join(f"[{s.number}] {s.title}\n{s.text}" for s in self.steps)
        return f"{self.code}\n\n{self.instruction}\n\n{body}"


def _is_skill_call(event: Event, scrub: Scrubber) -> bool:
    tool = (event.tool_name or "").lower()
    if tool in SKILL_TOOLS or "skill.md" in event.text.lower():
        return True
    return tool not in SHELL_TOOLS and scrub.mentions_skill(event.text)


def blind_trajectory(code: str, instruction: str, events: Sequence[Event], terms: BlindingTerms) -> BlindTrajectory:
    """The rater-visible view of one trajectory (see the module docstring for what is scrubbed)."""
    scrub = Scrubber(terms)
    dropped_calls: set[str] = set()
    steps: list[BlindStep] = []
    for e in events:
        if e.kind in HIDDEN_KINDS:
            continue
        text = e.text
        if e.kind == "tool_call":
            if _is_skill_call(e, scrub):
                dropped_calls.add(e.id)
                continue
        elif e.kind in ("tool_output", "file_content"):
            if e.call_id in dropped_calls or _INJECTION.search(text) or (e.path and scrub.mentions_skill(e.path)):
                continue
            text = scrub.drop_lines(text)
            if e.text.strip() and not text.strip():
                continue
        else:  # agent_message, agent_thinking
            text = scrub.drop_sentences(text)
            if not text.strip():
                continue
        title = STEP_TITLES.get(e.kind, e.kind)
        detail = " · ".join(scrub(x) for x in (e.tool_name, e.path) if x)
        steps.append(BlindStep(
            number=len(steps) + 1, kind=e.kind, title=f"{title} · {detail}" if detail else title,
            text=scrub(text), is_error=e.is_error,
        ))
    return BlindTrajectory(code=code, instruction=scrub(instruction), steps=tuple(steps))


def preview(text: str, limit: int = 4000) -> tuple[str, int]:
    """Head and tail of a long text with a marker saying how much is left out, and that count."""
    if len(text) <= limit:
        return text, 0
    head, tail = text[: limit * 2 // 3], text[-(limit // 3) :]
    hidden = len(text) - len(head) - len(tail)
    return f"{head}\n⟦… {hidden:,} characters not shown here; open the full text below …⟧\n{tail}", hidden
