"""The checklist editor's form: one row per item, read from the editor text and written back to it.

The editor text (YAML or JSON in the checklist-file schema, `review.checklists`) stays the one thing the
author edits and saves. The form is a view of it: `read_form` turns the text into rows (`FormItem`: text,
route, task quote, refs and the gate failures of that item), and every operation on a row returns new
text — `delete_item`, `duplicate_item`, `move_item`, `split_item`, `set_item_field`, `set_item_refs`,
`add_item` — so the form and the YAML view can never disagree. An operation names its row by position
and by the id the row showed; a text that changed under it (the id at that position is another one) is
refused with `EditError`, never applied to the wrong item.

Beside the rows, the choices the form offers: `sentence_marks` (which items already quote each instruction
sentence, whole or in part, shown on the quote picker and the sentence list), `coverage` / `ref_label`
(which verifier tests are covered by which items, waived, or still uncovered, shown on the refs picker), and
`target_label` ("Quote into" and "Add the test to" list items by their text). Text from a task or a
checklist is shown with its invisible characters made visible (`text.show_invisible`); `from_visible` maps an
edited field back, so a marker the author left in place stands for its character again.

Gate failures come from the gates themselves (`EditCheck`, i.e. `checklist.run_gates`); `item_failures`
sorts them into rows, and `failure_message` words one as the page shows it.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..checklist import GATES, ROUTES, GateFailure, Rules, split_ref
from ..checklist.draft import Sentence
from ..checklist.gates import normalize_whitespace
from ..models import Task
from ..text import INVISIBLE, show_invisible
from .checklists import EditCheck, EditError, _dump, _edit_data

__all__ = [
    "FIELDS",
    "Form",
    "FormItem",
    "add_item",
    "coverage",
    "delete_item",
    "duplicate_item",
    "failure_message",
    "from_visible",
    "item_failures",
    "move_item",
    "read_form",
    "ref_label",
    "ref_note",
    "ref_options",
    "route_options",
    "save_notice",
    "sentence_label",
    "sentence_marks",
    "sentence_of",
    "set_item_field",
    "set_item_refs",
    "split_item",
    "split_texts",
    "target_label",
]

FIELDS = ("text", "route", "task_quote")
"""The string fields of an item a form row edits directly (refs have their own picker)."""
LABEL_CHARS = 160
"""How much of an item's text or a sentence a choice label shows before it is cut with an ellipsis."""


# ---------------------------------------------------------------- reading the form


@dataclass(frozen=True)
class FormItem:
    """One row of the form: an entry of the text's `items` list, as the widgets show it."""

    index: int
    """Its position in the list (what the operations address)."""
    id: str
    route: str
    text: str
    task_quote: str
    verifier_refs: tuple[str, ...]
    failures: tuple[GateFailure, ...]
    """The gate failures naming this item's id."""
    readable: bool = True
    """False when the entry is not a mapping (only the YAML view can fix it; it can still be deleted or moved)."""


@dataclass(frozen=True)
class Form:
    """The editor text as a form: its rows, the failures that belong to no row, and the uncovered tests."""

    items: tuple[FormItem, ...]
    general: tuple[GateFailure, ...]
    """Checklist-level failures (coverage, budget, source) and those naming no row (a waiver's ref)."""
    uncovered: tuple[str, ...]
    """Verifier test nodes covered by no covering item's refs and not waived, in verifier order."""
    covered: dict[str, tuple[str, ...]]
    """Per verifier test node, the ids of the items covering it (`coverage`)."""
    waived: frozenset[str]
    """The verifier test nodes a waiver with a reason names."""


def _string(value: object) -> str:
    return "" if value is None else str(value)


def _refs(value: object) -> tuple[str, ...]:
    return tuple(str(r) for r in value) if isinstance(value, list) else ()


def read_form(text: str, check: EditCheck, task: Task, rules: Rules) -> Form:
    """The rows of the editor text `text`, with the failures of its gate check `check` sorted into them.

    Raises `EditError` when the text is not a checklist mapping with an `items` list (fix it in the YAML)."""
    data = _edit_data(text)
    rows: list[FormItem] = []
    for k, raw in enumerate(data["items"]):
        if not isinstance(raw, dict):
            rows.append(FormItem(k, f"items[{k}]", "", _string(raw), "", (), (), readable=False))
            continue
        rows.append(FormItem(k, _string(raw.get("id")), _string(raw.get("route")), _string(raw.get("text")),
                             _string(raw.get("task_quote")), _refs(raw.get("verifier_refs")), ()))
    by_item, general = item_failures(check.failures, [r.id for r in rows])
    rows = [FormItem(r.index, r.id, r.route, r.text, r.task_quote, r.verifier_refs, tuple(by_item.get(r.id, ())),
                     r.readable) for r in rows]
    covered, waived = coverage(data, task, rules)
    uncovered = tuple(n for n in task.test_ids if not covered.get(n) and n not in waived)
    return Form(tuple(rows), tuple(general), uncovered, covered, waived)


def item_failures(failures: Sequence[GateFailure], ids: Sequence[str]) -> tuple[dict[str, list[GateFailure]],
                                                                                 list[GateFailure]]:
    """Failures keyed by the item id they name, for the ids of the form's rows; the rest (checklist level,
    waivers, ids no row has) in order."""
    known = set(ids)
    by_item: dict[str, list[GateFailure]] = {}
    general: list[GateFailure] = []
    for f in failures:
        if f.item_id in known:
            by_item.setdefault(f.item_id, []).append(f)
        else:
            general.append(f)
    return by_item, general


def failure_message(failure: GateFailure) -> str:
    """A gate failure as the form shows it: gate id, gate name and the whole message."""
    return f"{failure.gate} {GATES.get(failure.gate, '')}: {failure.message}"


# ---------------------------------------------------------------- what the pickers offer


def sentence_marks(items: Sequence[FormItem], sentences: Sequence[Sentence], rules: Rules) -> list[tuple[str, ...]]:
    """Per instruction sentence, the items quoting it: `C1` when its task quote holds the whole sentence,
    `C2 (part)` when the quote is part of the sentence (a quote shorter than G1's minimum marks nothing).
    Compared as G1 compares, whitespace runs as one space."""
    min_chars = rules.contract.quote.min_chars
    quotes = [(item.id, normalize_whitespace(item.task_quote)) for item in items if item.readable]
    marks: list[tuple[str, ...]] = []
    for sentence in sentences:
        text = normalize_whitespace(sentence.text)
        found = []
        for item_id, quote in quotes:
            if len(quote) < min_chars:
                continue
            if text in quote:
                found.append(item_id)
            elif quote in text:
                found.append(f"{item_id} (part)")
        marks.append(tuple(found))
    return marks


def _cut(text: str, limit: int = LABEL_CHARS) -> str:
    text = " ".join(show_invisible(text).split())
    return text if len(text) <= limit else text[:limit - 1].rstrip() + "…"


def sentence_label(sentence: Sentence, marks: Sequence[str]) -> str:
    """A sentence as the quote picker lists it: `✓ quoted by C1, C2 (part) · ` before it when items quote
    it already; invisible characters shown."""
    mark = f"✓ quoted by {', '.join(marks)} · " if marks else ""
    return mark + _cut(sentence.text)


def sentence_of(quote: str, sentences: Sequence[Sentence]) -> int | None:
    """The position of the sentence `quote` is (whitespace-normalized), or None when it is a span of its own."""
    quote = normalize_whitespace(quote)
    return next((k for k, s in enumerate(sentences) if normalize_whitespace(s.text) == quote), None)


def target_label(item: FormItem) -> str:
    """An item as "Quote into" and "Add the test to" list it: its id and its text."""
    return f"{_cut(item.id, 40)} · {_cut(item.text) if item.text.strip() else '(no text yet)'}"


def route_options(route: str) -> list[str]:
    """The routes a row's route picker offers: the three routes, and the row's own value when it is none
    of them (G6 names it), so that showing the row does not change it."""
    return list(ROUTES) if route in ROUTES else [*ROUTES, route]


def coverage(data: dict, task: Task, rules: Rules) -> tuple[dict[str, tuple[str, ...]], frozenset[str]]:
    """Which items cover each verifier test node (by a covering route's refs, G5's rule; `[param]`
    refs count for their test) and which nodes are waived, read from the editor's data (a mapping with
    an `items` list, as `read_form` reads it)."""
    covered: dict[str, list[str]] = {}
    for raw in data.get("items") or []:
        if not isinstance(raw, dict):
            continue
        route = rules.contract.routes.get(_string(raw.get("route")))
        if route is None or not route.covers_tests:
            continue
        for ref in _refs(raw.get("verifier_refs")):
            ids = covered.setdefault(split_ref(ref)[0], [])
            if _string(raw.get("id")) not in ids:
                ids.append(_string(raw.get("id")))
    waivers = data.get("waivers") if isinstance(data.get("waivers"), list) else []
    waived = frozenset(split_ref(_string(w.get("verifier_ref")))[0] for w in waivers
                       if isinstance(w, dict) and _string(w.get("reason")).strip())
    return {n: tuple(ids) for n, ids in covered.items()}, waived


def ref_options(task: Task, refs: Sequence[str]) -> list[str]:
    """What a row's refs picker offers: every verifier test node, then the row's refs that are none of
    them (a `[param]` case, an unknown ref G2 names), so that showing the row does not drop them."""
    tests = list(task.test_ids)
    return tests + [r for r in refs if r not in tests]


def ref_note(ref: str, task: Task, covered: dict[str, tuple[str, ...]], waived: frozenset[str]) -> str:
    """Where a ref's test stands: `uncovered` when no item covers it and no waiver names it, else who covers
    it (`covered by C1, C4`), `waived`, or `not a test of this task`."""
    base = split_ref(ref)[0]
    if base not in set(task.test_ids):
        return "not a test of this task"
    if covered.get(base):
        return f"covered by {', '.join(_cut(i, 40) for i in covered[base])}"
    return "waived" if base in waived else "uncovered"


def ref_label(ref: str, task: Task, covered: dict[str, tuple[str, ...]], waived: frozenset[str]) -> str:
    """A ref as the refs picker lists it: the node id and where its test stands (`ref_note`)."""
    return f"{show_invisible(ref)} · {ref_note(ref, task, covered, waived)}"


_MARKER = re.compile(r"⟨U\+([0-9A-F]{4,6})⟩")


def from_visible(shown: str) -> str:
    """An edited field back to its text: each `⟨U+XXXX⟩` marker of an invisible character (as
    `text.show_invisible` writes them) becomes that character again; other text is kept as typed."""

    def char(match: re.Match[str]) -> str:
        c = chr(int(match[1], 16))
        return c if INVISIBLE.fullmatch(c) else match[0]

    return _MARKER.sub(char, shown)


# ---------------------------------------------------------------- operations on rows


def _at(data: dict, index: int, item_id: str) -> dict:
    """The item at `index`, which must be the one the form showed there (`item_id`)."""
    items = data["items"]
    if not 0 <= index < len(items):
        raise EditError(f"the checklist has {len(items)} items, none at position {index + 1}; it changed meanwhile")
    raw = items[index]
    shown = _string(raw.get("id")) if isinstance(raw, dict) else f"items[{index}]"
    if shown != item_id:
        raise EditError(f"item {index + 1} is now {shown!r}, not {item_id!r}: the checklist changed meanwhile; "
                        "look again and retry")
    return raw


_ID = re.compile(r"(?P<prefix>[A-Za-z][A-Za-z_.-]*?)(?P<number>\d+)")


def _new_id(data: dict, like: str = "C") -> str:
    """A free id in the style of `like` (`I3` → `I7` when I1–I6 are taken); `C<n>` for an id without a number."""
    match = _ID.fullmatch(like)
    prefix = match["prefix"] if match else "C"
    taken = {_string(i.get("id")) for i in data["items"] if isinstance(i, dict)}
    numbers = [int(m["number"]) for i in taken if (m := _ID.fullmatch(i)) and m["prefix"] == prefix]
    n = max(numbers, default=0) + 1
    while f"{prefix}{n}" in taken:
        n += 1
    return f"{prefix}{n}"


def _about(item: dict) -> str:
    text = _string(item.get("text")).strip()
    return f"{_string(item.get('id'))} ({_cut(text, 60)})" if text else _string(item.get("id"))


def delete_item(text: str, index: int, item_id: str) -> tuple[str, str]:
    """The text without the item at `index`; and what was done."""
    data = _edit_data(text)
    item = _at(data, index, item_id)
    del data["items"][index]
    about = _about(item) if isinstance(item, dict) else item_id
    return _dump(data), f"Deleted {about}. Undo brings it back; stored versions never change."


def duplicate_item(text: str, index: int, item_id: str) -> tuple[str, str]:
    """The text with a copy of the item at `index` right after it, under a new id; and what was done."""
    data = _edit_data(text)
    item = _at(data, index, item_id)
    if not isinstance(item, dict):
        raise EditError(f"{item_id} is not an item mapping; fix it in the YAML first")
    new = {**copy.deepcopy(item), "id": _new_id(data, item_id)}
    data["items"].insert(index + 1, new)
    return _dump(data), f"Duplicated {item_id} as {new['id']}: reword one of them (G4 flags a duplicate)."


def move_item(text: str, index: int, item_id: str, offset: int) -> tuple[str, str]:
    """The text with the item at `index` moved `offset` places (-1: up, 1: down); and what was done."""
    data = _edit_data(text)
    _at(data, index, item_id)
    target = index + offset
    if not 0 <= target < len(data["items"]):
        raise EditError(f"{item_id} is already the {'first' if offset < 0 else 'last'} item")
    items = data["items"]
    items.insert(target, items.pop(index))
    return _dump(data), f"Moved {item_id} to position {target + 1}."


_JOINT = re.compile(r"\s*;\s*|,?\s+and\s+(?:then\s+)?|,\s+then\s+", re.IGNORECASE)
"""Where an item's text joins two requirements: a semicolon, `and` (`, and`, `and then`), `, then`."""
_VERBS = frozenset("""is are was were has have holds hold contains contain lists list includes include matches match
equals equal uses use names name keeps keep removes remove exists exist does do reports report prints print parses
parse loads load returns return writes write sorts sort gives give shows show stays stay remains remain can must
should appears appear lies lie sets set starts start ends end""".split())
"""Words that start a predicate: a second half that starts with one gets the first half's subject."""


def split_texts(text: str, rules: Rules) -> tuple[str, str] | None:
    """`text` cut into two requirements at its first joint outside a literal (`;`, `and`, `, then`), or None
    when it has none. A second half that starts with a predicate ("… exists and is valid JSON") gets the
    first half's subject ("answer.json exists" / "answer.json is valid JSON")."""
    protected = [m.span() for m in rules.contract.literals.regex.finditer(text)]
    for joint in _JOINT.finditer(text):
        if any(a < joint.end() and joint.start() < b for a, b in protected):
            continue
        left, right = text[:joint.start()].rstrip(" ,;"), text[joint.end():].strip()
        if not left.strip() or not right:
            continue
        words = left.split()
        verb = next((k for k, w in enumerate(words) if k and w.lower() in _VERBS), None)
        first = right.split()[0]
        if verb is not None and first.lower() in _VERBS | {"not"} and first[:1].islower():
            right = f"{' '.join(words[:verb])} {right}"
        return left, right
    return None


def split_item(text: str, index: int, item_id: str, rules: Rules) -> tuple[str, str]:
    """The text with the item at `index` split in two at the joint of its text (`split_texts`): the first
    keeps its id, probes and everything else, the second, right after it under a new id, takes the same
    route, task quote and refs (no probes: they were written for the whole); and what was done."""
    data = _edit_data(text)
    item = _at(data, index, item_id)
    if not isinstance(item, dict):
        raise EditError(f"{item_id} is not an item mapping; fix it in the YAML first")
    halves = split_texts(_string(item.get("text")), rules)
    if halves is None:
        raise EditError(f"{item_id}'s text has no ';', 'and' or ', then' to split at: duplicate it and reword the copy")
    second = {k: copy.deepcopy(v) for k, v in item.items() if k != "probes"}
    second.update(id=_new_id(data, item_id), text=halves[1])
    item["text"] = halves[0]
    data["items"].insert(index + 1, second)
    return _dump(data), f"Split {item_id} into {item_id} and {second['id']}: check both texts and their refs."


def set_item_field(text: str, index: int, item_id: str, field: str, value: str) -> tuple[str, str | None]:
    """The text with the item at `index`'s `field` (text, route or task quote) set to `value`; a notice for a
    task quote (the other fields speak for themselves)."""
    if field not in FIELDS:
        raise EditError(f"the form does not edit {field!r}")
    data = _edit_data(text)
    item = _at(data, index, item_id)
    if not isinstance(item, dict):
        raise EditError(f"{item_id} is not an item mapping; fix it in the YAML first")
    item[field] = value
    return _dump(data), (f"Task quote of {item_id} set." if field == "task_quote" else None)


def set_item_refs(text: str, index: int, item_id: str, refs: Sequence[str]) -> tuple[str, str]:
    """The text with the item at `index`'s verifier refs set to `refs` (in that order, each once); and which
    refs were added and removed."""
    data = _edit_data(text)
    item = _at(data, index, item_id)
    if not isinstance(item, dict):
        raise EditError(f"{item_id} is not an item mapping; fix it in the YAML first")
    before = list(_refs(item.get("verifier_refs")))
    after = list(dict.fromkeys(str(r) for r in refs))
    item["verifier_refs"] = after
    added, removed = [r for r in after if r not in before], [r for r in before if r not in after]
    parts = ([f"added {', '.join(added)}"] if added else []) + ([f"removed {', '.join(removed)}"] if removed else [])
    return _dump(data), f"Refs of {item_id}: {'; '.join(parts) or 'unchanged'}."


def add_item(text: str, route: str = "generated") -> tuple[str, str]:
    """The text with a new, empty `route` item at the end (the gates then say what it still needs)."""
    if route not in ROUTES:
        raise EditError(f"route {route!r} is not one of {', '.join(ROUTES)}")
    data = _edit_data(text)
    like = next((_string(i.get("id")) for i in reversed(data["items"]) if isinstance(i, dict)), "C")
    item_id = _new_id(data, like)
    data["items"].append({"id": item_id, "route": route, "text": "", "task_quote": "", "verifier_refs": []})
    return _dump(data), f"Added {item_id} ({route}): write its text and pick its task quote."


def save_notice(row_version: int, row_sha: str, stored_shas: Sequence[str]) -> str:
    """What saving said: a new version, or that the same content was stored already (same sha: nothing new)."""
    if row_sha in stored_shas:
        return f"Identical to version {row_version} (sha {row_sha[:12]}), which is stored already: nothing new saved."
    return f"Stored as version {row_version} (sha {row_sha[:12]})."
