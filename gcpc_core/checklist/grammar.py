"""The predicates of an item text: where its finite verbs stand, for G3's one-requirement and predicate rules.

G3 must tell "X exists plus it holds Y" from "X holds Y and Z" however the author joins the two halves. A list of
joining words never ends ("and", "plus", ", then", "; ", "not only … but"), but every second requirement needs a
second predicate: a finite verb with its subject. This module finds them with a lexicon and word positions
(`grammar` in `rules/checklist_contract.yaml`), not a parser: no tagger model ships with the project's dependencies,
and a rule a reviewer can read in one YAML section is what the gates are made of. Literals are single tokens, so
a verb inside a quoted command or title is data, never a predicate.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from .rules import GrammarRule, Rules

__all__ = ["Predicate", "Token", "predicates", "tokens"]

_WORD = re.compile(r"\b(?:e\.g|i\.e)\.|[A-Za-z][\w'’-]*|[-+]?\d[\d.,]*%?|[,;:()!?&.]", re.IGNORECASE)


@dataclass(frozen=True)
class Token:
    """One token of an item text."""

    text: str
    """As written (a literal with its quotes)."""
    low: str
    """Lower case; a literal reads `LITERAL`, a number `N`."""
    start: int
    """Offset of its first character in the text."""
    end: int
    """Offset after its last character."""


@dataclass(frozen=True)
class Predicate:
    """One finite verb (with the auxiliaries and verbs chained to it) of an item text."""

    words: tuple[str, ...]
    """Its first word and the word after it, lower case (a literal reads LITERAL, a number N): what tells the same
    check stated over several subjects ("`A` contains …, `B` contains …") from two different requirements."""
    main: bool
    """False when a subordinate word ("that", "which", "if", …) opens the clause it stands in: it qualifies the
    clause before it and is no requirement of its own."""
    subject_pronoun: bool
    """Whether a pronoun ("it", "they") stands directly before it: the same subject restated, a new clause."""
    coordinated: bool
    """Whether a coordinator (`grammar.coordinators`) stands between the previous predicate and this one."""
    clause_start: int
    """Offset in the text where its clause starts (after the coordinator before it, or 0)."""
    join_start: int
    """Offset where the coordinator before its clause starts (the text before it ends there; 0 for the first)."""


def tokens(text: str, rules: Rules) -> list[Token]:
    """`text` as tokens: each literal (`rules.contract.literals`) one token, then words, numbers and punctuation."""
    out: list[Token] = []
    pos = 0
    for match in rules.contract.literals.regex.finditer(text):
        out += _plain_tokens(text, pos, match.start())
        out.append(Token(match[0], "LITERAL", match.start(), match.end()))
        pos = match.end()
    out += _plain_tokens(text, pos, len(text))
    return out


def _plain_tokens(text: str, start: int, end: int) -> list[Token]:
    """The words, numbers and marks of `text[start:end]` (no literal in it); a full stop after a word is a token
    of its own, "e.g." and "i.e." stay whole."""
    found = []
    for m in _WORD.finditer(text, start, end):
        word = m[0].rstrip(".") if m[0][0].isalpha() and m[0] not in ("e.g.", "i.e.") else m[0]
        low = "N" if word[0] in "+-0123456789" else word.lower().replace("’", "'")
        found.append(Token(word, low, m.start(), m.start() + len(word)))
        if len(word) < len(m[0]):
            found.append(Token(".", ".", m.start() + len(word), m.end()))
    return found


@dataclass(frozen=True)
class _Lexicon:
    """`GrammarRule` as sets, with every inflection of its verbs."""

    aux: frozenset[str]
    nonfinite: frozenset[str]
    det: frozenset[str]
    prep: frozenset[str]
    pron: frozenset[str]
    adv: frozenset[str]
    coord: frozenset[str]
    sub: frozenset[str]
    participle_preps: frozenset[str]
    base: frozenset[str]
    third: frozenset[str]
    past: frozenset[str]
    modals: frozenset[str]
    copulas: frozenset[str]
    intransitive: frozenset[str]
    gerund: frozenset[str]
    closed: frozenset[str]
    pure_past: frozenset[str]
    """Irregular past forms that are never participles ("wrote", "ran"): finite wherever a subject precedes them."""
    """Every word of a closed class (auxiliaries, determiners, prepositions, coordinators, subordinators)."""


def _third(verb: str) -> str:
    if re.search(r"(?:s|x|z|ch|sh|o)$", verb):
        return verb + "es"
    if re.search(r"[^aeiou]y$", verb):
        return verb[:-1] + "ies"
    return verb + "s"


def _ings(verb: str) -> set[str]:
    if verb.endswith("ie"):
        return {verb[:-2] + "ying"}
    if verb.endswith("e") and not verb.endswith(("ee", "ye", "oe")):
        return {verb[:-1] + "ing"}
    forms = {verb + "ing"}
    if re.search(r"[^aeiou][aeiou][bdgklmnprt]$", verb):
        forms.add(verb + verb[-1] + "ing")
    return forms


def _pasts(verb: str) -> set[str]:
    if verb.endswith("e"):
        return {verb + "d"}
    if re.search(r"[^aeiou]y$", verb):
        return {verb[:-1] + "ied"}
    forms = {verb + "ed"}
    if re.search(r"[^aeiou][aeiou][bdgklmnprt]$", verb):
        forms.add(verb + verb[-1] + "ed")  # stop → stopped, commit → committed; both spellings of "labelled"
    return forms


_LEXICONS: dict[int, tuple[GrammarRule, _Lexicon]] = {}
"""Built lexicons by rule object (kept with it, so an id is never reused while cached)."""


def _lexicon(rule: GrammarRule) -> _Lexicon:
    cached = _LEXICONS.get(id(rule))
    if cached is not None and cached[0] is rule:
        return cached[1]
    lexicon = _build_lexicon(rule)
    if len(_LEXICONS) > 16:
        _LEXICONS.clear()
    _LEXICONS[id(rule)] = (rule, lexicon)
    return lexicon


def _build_lexicon(rule: GrammarRule) -> _Lexicon:
    def low(words: Sequence[str]) -> frozenset[str]:
        return frozenset(w.lower() for w in words)

    bases = low([*rule.verbs, *rule.irregular])
    past = {p for v in rule.verbs for p in _pasts(v.lower())}
    past |= {p.lower() for forms in rule.irregular.values() for p in forms}
    third = {_third(v) for v in bases}
    return _Lexicon(aux=low(rule.auxiliaries), nonfinite=low(rule.nonfinite), det=low(rule.determiners),
                    prep=low(rule.prepositions), pron=low(rule.pronouns), adv=low(rule.adverbs),
                    coord=low(rule.coordinators), sub=low(rule.subordinate),
                    participle_preps=low(rule.participle_preps), base=bases, third=frozenset(third),
                    past=frozenset(past), modals=low(rule.modals), copulas=low(rule.copulas),
                    intransitive=frozenset(_third(v.lower()) for v in rule.intransitive),
                    gerund=frozenset(g for v in bases for g in _ings(v)) - low(rule.means),
                    closed=low([*rule.auxiliaries, *rule.nonfinite, *rule.determiners, *rule.prepositions,
                                *rule.coordinators, *rule.subordinate]),
                    pure_past=frozenset(f[0].lower() for f in rule.irregular.values()
                                        if len(f) > 1 and f[0].lower() not in f[1:] and f[0].lower() not in bases))


def _adverb(low: str, lex: _Lexicon) -> bool:
    """Whether a word is skipped when reading positions: a listed adverb, a quantifier ("at least"), or a word of
    more than four letters ending in -ly that is no verb ("apply") or determiner."""
    return low in lex.adv or low in _QUANTIFIERS or (
        low.endswith("ly") and len(low) > 4 and low not in lex.base and low not in lex.det)


_QUANTIFIERS = frozenset({"at-least", "at-most", "least", "most"})
"""How "at least" and "at most" read (`_read` joins them): adverbs before a number."""


def _subject_end(low: str, lex: _Lexicon) -> bool:
    """Whether a word can end a subject: a noun (any word of no closed class), a literal, a number, a pronoun."""
    if low in ("LITERAL", "N", ")") or low in lex.pron:
        return True
    return low[:1].isalpha() and low not in lex.closed and not _adverb(low, lex)


def _object_start(low: str, lex: _Lexicon) -> bool:
    """Whether a word can open a verb's object or complement: what tells "`X` deduplicates the titles" (a verb)
    from "three titles," (a noun)."""
    return low in ("LITERAL", "N") or low in lex.det or low in lex.pron or _adverb(low, lex) or (
        low in lex.prep and low != "of")


def predicates(text: str, rules: Rules) -> list[Predicate]:
    """The predicates of `text`, in order (see the module docstring and `grammar` in the rules)."""
    return _read(text, _lexicon(rules.contract.grammar), rules)


def _read(text: str, lex: _Lexicon, rules: Rules) -> list[Predicate]:
    """`predicates` for one text: one pass over its tokens, left to right, with one token of look-ahead."""
    toks = tokens(text, rules)
    lows = [t.low for t in toks]
    for k in range(len(lows) - 1):
        if lows[k] == "at" and lows[k + 1] in ("least", "most"):
            lows[k] = "at-" + lows[k + 1]  # "at least two": a quantifier, not the preposition "at"
    # the next token that is not an adverb, for every token
    following, ahead = [""] * len(lows), ""
    for k in range(len(lows) - 1, -1, -1):
        following[k] = ahead
        if not _adverb(lows[k], lex) or lows[k] in lex.det or lows[k] in lex.pron:
            ahead = lows[k]
    found: list[Predicate] = []
    state = _State()
    for i, low in enumerate(lows):
        nxt = following[i]
        if low in (";", ".", "!", "?"):
            state = _State(prev=low, coordinated=True, join_start=toks[i].start, clause_start=toks[i].end,
                           last=state.last)
            continue
        if low in lex.coord and not (low in lex.adv and state.in_chain) and not (
                state.prev in ("LITERAL", "N") and lows[i + 1:i + 2] in (["LITERAL"], ["N"])):
            if not state.coordinated or state.prev not in lex.coord:
                state.join_start = toks[i].start  # ", and then": the join starts at the comma
            if (state.contrast and low == ",") or (state.prev == "," and low in ("then", "plus", "besides")):
                # ", not copied," ends at its comma; ", then …" after a subordinate clause opens a main one
                state.subordinate = state.contrast = False
            state.coordinated, state.in_chain, state.prev = True, False, low
            state.clause_start = toks[i].end
            continue
        if low in lex.prep and low not in lex.sub and state.prev in lex.coord and not state.in_chain:
            state.coordinated = False  # ", at the path the instruction gives": a phrase, not a clause
        if low == "(" or (low == "not" and state.prev == ","):
            # a parenthesis, or a contrast (", not invented"), qualifies what comes before it
            state.subordinate, state.in_chain, state.sub_after_comma, state.prev = True, False, False, low
            state.contrast = low == "not"
            continue
        if low == ")":
            state.subordinate, state.prev = False, low
            continue
        if low in lex.sub:
            state.subordinate, state.in_chain = True, False
            state.sub_after_comma = state.prev == "," or (state.prev in lex.sub and state.sub_after_comma)
            state.sequel = state.prev in ("after", "whereupon") and low in ("which", "that")  # ", after which …"
            state.prev = low
            continue
        if low in ("both", "each") and not state.in_chain and _subject_end(state.prev, lex) and \
                state.prev not in lex.pron and state.prev != "":
            continue  # "`X` both loads … and holds …", "the folders … each contain …": an adverb here
        if _adverb(low, lex) and low not in lex.det and low not in lex.pron:
            if state.in_chain and low in ("not", "never"):
                state.negated = True  # "is never restarted, stopped or reconfigured": none of them, one requirement
            continue  # adverbs keep the chain as it is ("is not sorted", "also contains")
        verb = _finite(i, lows, state, nxt, lex)
        if verb or low in lex.coord:
            state.in_phrase = False
        elif low in lex.prep:
            state.in_phrase = True
        elif not state.in_phrase and not state.subordinate and _subject_end(low, lex) and low not in lex.det:
            state.subject_plural = _plural(low, state.prev, lex)
        pronoun = state.prev in lex.pron and state.prev not in ("all", "each", "both", "one")
        # ", after which it validates …": a clause of its own behind a subordinate word, its subject restated
        restated = state.sub_after_comma and (state.prev in ("it", "they") or state.sequel)
        if verb and not state.in_chain:
            found.append(Predicate(
                words=tuple(lows[i:i + 2]), main=not state.subordinate or restated,
                subject_pronoun=pronoun,
                coordinated=state.coordinated, clause_start=state.clause_start, join_start=state.join_start))
            # a participle coordinated after "are sorted" continues the list; any other predicate ends it
            state.copula_participle = state.copula_participle and state.coordinated and (
                low in lex.past or low.endswith("ed"))
            state.coordinated = False
            state.last = low
            state.negated = False
        elif verb and state.last in lex.copulas and not state.negated and (low in lex.past or low.endswith("ed")):
            state.copula_participle = True  # "are sorted": a list of participles may follow
        state.in_chain = verb or (state.in_chain and (low in lex.nonfinite or low in lex.base or low in lex.past
                                                      or low.endswith("ed") or low.endswith("ing")))
        state.prev2, state.prev = state.prev, low
    return found


@dataclass
class _State:
    """Where `predicates` stands in the text."""

    prev: str = ""
    """The last token that is not an adverb, lower case."""
    prev2: str = ""
    """The token before `prev` (adverbs skipped)."""
    in_chain: bool = False
    """Whether the previous word belongs to a predicate (an auxiliary or a verb)."""
    subordinate: bool = False
    """Whether a subordinate word, a parenthesis or a contrast opened the clause being read."""
    contrast: bool = False
    """Whether the subordinate clause is a contrast (", not copied,"), which ends at the next comma."""
    sequel: bool = False
    """Whether the subordinate words are ", after which": what follows is a step of its own, whatever its subject."""
    sub_after_comma: bool = False
    """Whether a comma stands right before the subordinate word that opened the current clause."""
    coordinated: bool = False
    """Whether a coordinator stands between the last predicate and here."""
    clause_start: int = 0
    """Offset after the last coordinator: where the clause being read starts."""
    join_start: int = 0
    """Offset of the last coordinator (the first of a run such as ", and then")."""
    last: str = ""
    """The first word of the last predicate."""
    in_phrase: bool = False
    """Whether a prepositional phrase is open (a preposition read since the last predicate or coordinator)."""
    subject_plural: bool = False
    """Whether the head noun of the subject being read (the last noun outside a prepositional phrase) is plural:
    "Titles in `x` keep …" takes a base-form verb."""
    negated: bool = False
    """Whether "not" or "never" stands in the last predicate's chain."""
    copula_participle: bool = False
    """Whether the last predicate is a copula and a participle ("are sorted"), which a list of participles may
    continue ("are sorted, deduplicated, and stripped"), each a predicate of its own."""


def _plural(low: str, prev: str, lex: _Lexicon) -> bool:
    """Whether a subject word is plural: a plural noun, a plural pronoun, or a literal opening its clause or
    joined to another ("`a` and `b` exist"; not "…, `x`" in a list)."""
    if low == "LITERAL":
        return prev in ("", "and", ";", ".")
    if prev == "and":
        return True  # "`a`, `b` and DNA contain …": a coordinated subject
    return (low.endswith("s") and not low.endswith(("ss", "'s")) and low not in lex.aux) or low in (
        "they", "both", "all", "these", "those", "we", "you", "i")


def _finite(i: int, lows: Sequence[str], state: _State, nxt: str, lex: _Lexicon) -> bool:
    """Whether word `i` is a finite verb or continues the predicate before it (`state.in_chain`)."""
    low, prev = lows[i], state.prev
    if low in lex.aux:
        return True
    if low == "LITERAL" or low == "N" or not low[:1].isalpha():
        return False
    if state.in_chain:  # "is sorted", "has been deduplicated", "must exist", "gets created"
        return low in lex.base or low in lex.past or low in lex.third or low in lex.nonfinite or \
            low.endswith(("ed", "ing"))
    if prev in lex.det or prev in lex.prep:
        return False  # "the output", "of results", "to parse"
    start = prev in ("", ";", ".")
    after_subject = _subject_end(prev, lex) or start
    coordinated = prev in lex.coord
    # a noun right after a preposition ends a prepositional phrase, and a verb form after it is a noun too
    # ("on file names"); a literal there is the subject's own qualifier ("each title in `x` appears once")
    in_phrase = state.prev2 in lex.prep and prev != "LITERAL" and prev not in lex.pron and not coordinated
    if low in lex.gerund:
        # ", removing any duplicate titles": after a comma behind a predicate, a participle clause of its own
        # (after "besides", "plus" or "then", any object: "besides never hardcoding node ids")
        return state.last != "" and not state.subordinate and (
            (prev == "," and (nxt in ("LITERAL", "N") or nxt in lex.det or nxt in lex.pron)) or
            (prev in lex.coord and prev not in (",", "and", "&") and nxt not in ("", ".", ";")))
    if low in lex.third:
        # "results show": a noun before a verb; "lists of titles": a noun before "of"; "names alone": no object
        # "results show": a noun before a verb; "lists of titles": a noun before "of"; "action names and object
        # names", "the risk checks": a plural noun before "and" or the end, unless the verb often ends its clause
        # ("exists and …") or its subject is a literal or a pronoun
        strong = prev == "LITERAL" or prev in lex.pron or low in lex.intransitive
        return (after_subject or coordinated) and not in_phrase and (nxt != "of" or low in lex.intransitive) and \
            not (nxt in lex.aux or nxt in lex.third or (nxt in lex.base and nxt not in lex.det)) and \
            (strong or nxt not in (*lex.coord, "", ".", ";", ")"))  # "… and risk checks": a noun ends the text
    if low in lex.pure_past and (after_subject or coordinated) and not start:
        return True  # "The agent never wrote to `/data/input.txt`"
    if low in lex.past or (low.endswith("ed") and len(low) > 4):
        if coordinated:  # "are sorted, deduplicated": a participle list after a copula; "…, and created `X`";
            # "parsed `X`, then queried …": past tenses in a row
            return state.copula_participle or (_object_start(nxt, lex) and nxt not in lex.participle_preps) or (
                state.last in lex.past or state.last.endswith("ed")) and nxt not in ("", ",", ".", ";")
        # "The agent verified the citations"; not "the data stored in …", "three titles, sorted", "compressed plus"
        return not start and after_subject and not in_phrase and nxt not in lex.participle_preps and \
            nxt not in ("", ",", ".", ";", ")")
    if low in lex.base:
        if coordinated:  # "must exist and contain …": after a modal or a plural subject's verb
            # after "and" any word but the end may be its object ("exist and contain only pdf files"); after a comma
            # only a clear object start ("…, base salary, …" is a list of nouns)
            follows = _object_start(nxt, lex) if prev == "," else nxt not in (*lex.coord, "", ".", ";")
            return (state.last in lex.modals or state.last in lex.base) and follows
        if start:  # an imperative: "Sort titles alphabetically", "Save it as …"; not "Use of …"
            return _object_start(nxt, lex) or (_subject_end(nxt, lex) and nxt not in lex.pron)
        plural = (state.subject_plural if prev == ")" else _plural(prev, state.prev2, lex)) if not in_phrase else False
        return _subject_end(prev, lex) and (plural or (state.in_phrase and state.subject_plural and
                                                        _object_start(nxt, lex)))
    if low.endswith("s") and not low.endswith("ss") and len(low) > 3:
        # a verb outside the lexicon, between a subject and an object: "`X` deduplicates the titles"
        strong = prev == "LITERAL" or prev in lex.pron  # "`/x` rests on …"
        return _subject_end(prev, lex) and not in_phrase and (
            nxt in ("LITERAL", "N") or nxt in lex.det or nxt in lex.pron or (strong and _object_start(nxt, lex)))
    return False
