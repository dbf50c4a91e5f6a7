"""Words people use for a schema's names: synonyms and hypernyms from a lexical resource.

The offline realizer says "industry" for ``Industry``; a person asks for the *sector* or the
*business*, and a retriever that only matches keywords is never tested on those words. A
:class:`Lexicon` (WordNet, read by :mod:`groundwatch.adapters.lexicon`) gives each name's senses;
this module picks the sense the schema means and the alternatives a reader takes the same way:

- **which sense**: a simplified Lesk (Banerjee & Pedersen's extended overlap): the sense whose
  lemmas, gloss and hypernyms share most words with the schema's own names ("track" in a schema
  of albums and playlists: the piece of music, not the path); with no overlap, the most frequent
  sense only when the annotated corpus says it is the clear majority, else none;
- **which alternatives**: a synonym (another lemma of that sense) or, lacking one, a hypernym,
  kept only if that word's own most frequent sense *is* that sense — "damage" is a lemma of
  "price" in WordNet, but nobody reads "damage of the track" as its price.

The lexicon is looked up once per name (:class:`Thesaurus` caches), so realizing a template costs
no lookups of its own.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

#: WordNet's synset for a human being (noun 00007846): a name whose sense falls under it is a
#: person ("who is the manager of …").
PERSON = "n:00007846"
#: Head nouns too general to stand for an attribute on their own (an alternative for "date" in
#: "hire date" says nothing about the hiring).
_GENERIC_HEADS = frozenset(
    {"date", "name", "time", "number", "code", "type", "id", "value", "status", "flag", "text"}
)
#: Words that make a label a phrase of the generator's, not a name of the schema's.
_PHRASE_WORDS = frozenset({"of", "per", "among", "number", "latest", "total", "in", "on"})
_STOP = frozenset(
    [
        "a",
        "an",
        "the",
        "of",
        "or",
        "and",
        "to",
        "in",
        "on",
        "for",
        "with",
        "by",
        "from",
        "at",
        "as",
        "is",
        "are",
        "be",
        "that",
        "which",
        "this",
        "its",
        "it",
        "their",
        "something",
        "someone",
        "one",
        "used",
        "especially",
        "usually",
    ]
)
_WORD = re.compile(r"[a-z]+")
#: Share of a word's sense-tagged occurrences its first sense must have to be taken without
#: context, and the fewest tagged occurrences that share is trusted on.
DOMINANT_SHARE = 0.7
MIN_TAGGED = 5


@dataclass(frozen=True, slots=True)
class Sense:
    """One meaning: its id (``n:08065234``), lemmas (spaces, not underscores), gloss, the ids of
    its hypernyms, and the verbs derivationally related to it (``hire`` n → ``hire`` v)."""

    key: str
    lemmas: tuple[str, ...]
    gloss: str
    hypernyms: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ()


class Lexicon(Protocol):
    """A lexical resource: senses of a lemma, most frequent first, and a sense by its id."""

    def senses(self, lemma: str, pos: str = "n") -> Sequence[Sense]: ...

    def tag_counts(self, lemma: str, pos: str = "n") -> Sequence[int]: ...

    def sense(self, key: str) -> Sense | None: ...


def _signature(sense: Sense, lexicon: Lexicon) -> set[str]:
    out = set(_WORD.findall(sense.gloss.lower()))
    for lemma in sense.lemmas:
        out.update(lemma.lower().split())
    for h in sense.hypernyms:
        hs = lexicon.sense(h)
        if hs is not None:
            out.update(w for lemma in hs.lemmas for w in lemma.lower().split())
            out.update(_WORD.findall(hs.gloss.lower()))
    return out - _STOP


@dataclass(slots=True)
class Thesaurus:
    """The alternatives of a schema's names, in the schema's sense, computed once per name.

    ``context``: the words of the schema's table and column names, the evidence for which
    sense a name has. Without a lexicon every lookup is empty (the realizer then keeps the
    column's own words).
    """

    lexicon: Lexicon | None
    context: frozenset[str] = frozenset()
    _senses: dict[tuple[str, str], Sense | None] = field(default_factory=dict)
    _alts: dict[str, tuple[str, ...]] = field(default_factory=dict)
    _person: dict[str, bool] = field(default_factory=dict)

    def sense_of(self, word: str, pos: str = "n") -> Sense | None:
        """The sense the schema means by ``word`` (None: unknown or too ambiguous to tell)."""
        key = (word, pos)
        if key in self._senses:
            return self._senses[key]
        found = self._choose(word, pos)
        self._senses[key] = found
        return found

    def _choose(self, word: str, pos: str) -> Sense | None:
        lex = self.lexicon
        if lex is None:
            return None
        senses = list(lex.senses(word, pos))
        if not senses:
            return None
        if len(senses) == 1:
            return senses[0]
        own = set(word.split())
        scored = [
            (len((_signature(s, lex) - own) & (self.context - own)), -i, s)
            for i, s in enumerate(senses)
        ]
        best = max(scored, key=lambda x: (x[0], x[1]))
        # one shared word may be chance ("quantity" in a gloss of the product of a sum); two,
        # or one for the most frequent sense, is evidence
        if sum(1 for x in scored if x[0] == best[0]) == 1 and (
            best[0] >= 2 or (best[0] == 1 and best[2] is senses[0])
        ):
            return best[2]
        return senses[0] if self._dominant(word, pos) else None

    def _dominant(self, word: str, pos: str = "n") -> bool:
        """Whether the first sense is the clear majority of the word's tagged occurrences."""
        if self.lexicon is None:
            return False
        counts = list(self.lexicon.tag_counts(word, pos))
        total = sum(counts)
        return bool(counts) and total >= MIN_TAGGED and counts[0] >= DOMINANT_SHARE * total

    def is_person(self, noun: str) -> bool:
        """Whether ``noun`` (a table's or role's noun) names people: "who" asks for them."""
        if noun in self._person:
            return self._person[noun]
        found = False
        lex = self.lexicon
        if lex is not None and noun:
            head = noun.split()[-1]
            word = noun if lex.senses(noun) else head
            if word == noun or head not in _GENERIC_HEADS:
                sense = self.sense_of(word)
                # the schema's sense if it can be told, else every sense must be a person's
                # ("manager": whoever is meant, it is someone)
                candidates = [sense] if sense is not None else list(lex.senses(word))
                found = bool(candidates) and all(self._under(s.key, PERSON) for s in candidates)
        self._person[noun] = found
        return found

    def _under(self, key: str, ancestor: str) -> bool:
        seen: set[str] = set()
        todo = [key]
        while todo and len(seen) < 64:
            k = todo.pop()
            if k == ancestor:
                return True
            if k in seen or self.lexicon is None:
                continue
            seen.add(k)
            s = self.lexicon.sense(k)
            if s is not None:
                todo.extend(s.hypernyms)
        return False

    def is_verb(self, word: str) -> bool:
        """Whether ``word`` is a verb (``hire``, ``release``: "when was X hired")."""
        return self.lexicon is not None and bool(self.lexicon.senses(word, "v"))

    def verbs_of(self, noun: str) -> tuple[str, ...]:
        """Verbs a noun's sense is derived from or gives (``hire`` → hire, ``birth`` → bear)."""
        sense = self.sense_of(noun)
        return sense.verbs if sense is not None else ()

    def alternatives(self, phrase: str) -> tuple[str, ...]:
        """Other ways to say ``phrase`` (a column's or table's words), best first.

        The whole phrase first ("last name" → surname, family name); else its head noun with
        the modifiers kept ("unit price" → unit cost). Alternatives that share no word with
        the phrase come first: they are the ones a keyword match misses.
        """
        if phrase in self._alts:
            return self._alts[phrase]
        ws = phrase.split()
        out: tuple[str, ...] = ()
        # a derived label ("number of orders", "latest hire date", "quantity per unit") is
        # the generator's phrase, not a name to look up
        if not (set(ws) & _PHRASE_WORDS):
            out = self._lookup(phrase)
            if not out and len(ws) > 1 and ws[-1] not in _GENERIC_HEADS:
                head = ws[-1]
                out = tuple(
                    f"{' '.join(ws[:-1])} {alt}"
                    for alt in self._lookup(head)
                    if head not in alt.split()
                )
        own = set(ws)
        ranked = sorted(out, key=lambda a: bool(set(a.split()) & own))
        self._alts[phrase] = tuple(ranked)
        return self._alts[phrase]

    def _lookup(self, word: str) -> tuple[str, ...]:
        lex = self.lexicon
        sense = self.sense_of(word)
        if lex is None or sense is None:
            return ()
        synonyms = _readable(sense, word, lex)
        if synonyms:
            return synonyms
        senses = lex.senses(word)
        if self.is_person(word) or len(senses) > 1:
            # "musician" for a composer names someone else; a hypernym of a word with several
            # senses is one guess on top of another
            return ()
        hyper: list[str] = []
        for h in sense.hypernyms:
            hs = lex.sense(h)
            if hs is not None:
                hyper.extend(_readable(hs, word, lex))
        return tuple(dict.fromkeys(hyper))[:2]


def _readable(sense: Sense, word: str, lexicon: Lexicon) -> tuple[str, ...]:
    """The lemmas of ``sense`` other than ``word`` that a reader takes in that sense: lower-case
    common words of at most three words whose own most frequent sense is this one."""
    out: list[str] = []
    for lemma in sense.lemmas:
        low = lemma.lower()
        if (
            low == word
            or low.replace(" ", "") == word.replace(" ", "")
            or lemma != low
            or len(low.split()) > 3
            or not _WORD.fullmatch(low.replace(" ", ""))
        ):
            continue
        first = lexicon.senses(low)
        if first and first[0].key == sense.key:
            out.append(low)
    return tuple(out)


def schema_context(names: Iterable[str]) -> frozenset[str]:
    """The words of a schema's names, singular and lower-case: the Lesk context."""
    from groundwatch.core.generation.naming import singular, words

    out: set[str] = set()
    for n in names:
        for w in words(n):
            if len(w) > 2 and w not in _STOP and w != "id":
                out.add(singular(w))
    return frozenset(out)
