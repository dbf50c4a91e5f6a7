"""Words people use for a schema's names: synonyms from a lexical resource, in the schema's sense.

The offline realizer says "industry" for ``Industry``; a person asks for the *sector* or the
*surname*, and a retriever that only matches keywords is never tested on those words. A
:class:`Lexicon` (WordNet, read by :mod:`groundwatch.adapters.lexicon`) gives each name's senses;
this module picks the sense the schema means and the few alternatives a user of that schema would
write for it — none rather than a bad one, since a question in words nobody uses ("metropolis of
project X", "task of manager Y") tests nothing and cannot be answered or judged:

- **which sense**: a simplified Lesk (Banerjee & Pedersen's extended overlap): the sense whose
  lemmas, gloss and hypernyms share most words with the schema's own names ("track" in a schema
  of albums and playlists: the piece of music, not the path); with no overlap, the most frequent
  sense only when the annotated corpus says it is the clear majority, else none. A sense WordNet
  files under a topic ("(computer science) address") gives no alternatives unless the schema
  names that topic;
- **which alternatives** (:meth:`Thesaurus.alternatives`): another lemma of that sense, kept only
  if a reader takes it the same way and people use it for it, by the sense-tagged counts of
  WordNet (SemCor): its own most frequent sense is that sense, and holds most of its tagged uses
  ("task" is tagged 18 times for a project, 15 for a chore: rejected); it is used for that sense
  at least half as often as the schema's word ("metropolis" 7 times to "city"'s 103,
  rejected); it is no rare word of English at all (``wordfreq``: "aerodrome"); a sense the
  schema's word is rarely used in (the *charge* sense of "freight") is specialised and its
  lemmas with it; a phrase must keep the schema word's head ("family name" for "last name",
  never "urban center" for "city"); and it must not be a word of another of the schema's names
  ("director" for ``manager`` in a schema that has a director too). Hypernyms are never used: a
  broader word ("list" for a playlist) asks a different question.

The lexicon is looked up once per name (:class:`Thesaurus` caches), so realizing a template costs
no lookups of its own.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from groundwatch.core.generation.naming import singular, words

#: WordNet's synset for a human being (noun 00007846): a name whose sense falls under it is a
#: person ("who is the manager of …").
PERSON = "n:00007846"
#: WordNet's physical entity, and what other rows are in: a location, a structure, a facility,
#: a container, a group, an event (a course, a film), a time period.
PHYSICAL = "n:00001930"
_HOLDERS = (
    "n:00027167", "n:04341686", "n:03315023", "n:03094503", "n:00031264", "n:00029378",
    "n:15113229",
)  # fmt: skip
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
#: context (and an alternative's in the schema's sense), and the fewest tagged occurrences that
#: share is trusted on.
DOMINANT_SHARE = 0.7
MIN_TAGGED = 5
#: How often, in the schema's sense, an alternative must be used compared with the schema's own
#: word ("metropolis" 7 to "city"'s 103, "nation" 33 to "country"'s 68: rejected; a reader takes a
#: word used half as often for a thing as the usual one as marked, not as the same). In a
#: compound only an alternative as common as the head it replaces will do ("billing nation"
#: is nobody's phrase; "sales district" for "sales territory" is).
SYNONYM_SHARE = 0.5
#: Fewest uses per million words (Zipf 3) an alternative needs: rarer words ("aerodrome",
#: "forename") are not what people type.
MIN_ZIPF = 3.0


@dataclass(frozen=True, slots=True)
class Sense:
    """One meaning: its id (``n:08065234``), lemmas (spaces, not underscores), gloss, the ids of
    its hypernyms and topics, and the verbs derivationally related to it (``hire`` n → ``hire``
    v)."""

    key: str
    lemmas: tuple[str, ...]
    gloss: str
    hypernyms: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ()
    #: the topics WordNet files the sense under (``(computer science)``): a specialised sense
    topics: tuple[str, ...] = ()


class Lexicon(Protocol):
    """A lexical resource: senses of a lemma, most frequent first, how often each was tagged in
    a sense-annotated corpus, a sense by its id, and how common a word is in English (Zipf
    scale, None when unknown)."""

    def senses(self, lemma: str, pos: str = "n") -> Sequence[Sense]: ...

    def tag_counts(self, lemma: str, pos: str = "n") -> Sequence[int]: ...

    def sense(self, key: str) -> Sense | None: ...

    def zipf(self, text: str) -> float | None: ...


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
        if noun not in self._person:
            senses = self._meant(noun)
            self._person[noun] = bool(senses) and all(self._under(s.key, PERSON) for s in senses)
        return self._person[noun]

    def is_thing(self, noun: str) -> bool:
        """Whether ``noun`` names a physical thing no other row is in: an animal, a drug, a
        product ("the visit of pet X with medication Y"), not a place, a building, a container,
        nor a group, event or course, which rows are in ("student X in course Y").

        In the sense the schema's names tell; else its most frequent sense must be physical and
        every physical sense a thing ("ward", a person or a hospital's rooms, is none)."""
        lex = self.lexicon
        if lex is None or not noun:
            return False
        word = noun if lex.senses(noun) else noun.split()[-1]
        told = self.sense_of(word)
        senses = [told] if told is not None else list(lex.senses(word))
        if not senses or not self._under(senses[0].key, PHYSICAL):
            return False
        return all(
            not any(self._under(s.key, h) for h in _HOLDERS)
            for s in senses
            if self._under(s.key, PHYSICAL)
        )

    def _meant(self, noun: str) -> list[Sense]:
        """The senses ``noun`` may have in the schema: the one its names tell, else every sense
        of a topic the schema is about ("supervisor" in computing is a program)."""
        lex = self.lexicon
        if lex is None or not noun:
            return []
        head = noun.split()[-1]
        word = noun if lex.senses(noun) else head
        if word != noun and head in _GENERIC_HEADS:
            return []
        sense = self.sense_of(word)
        if sense is not None:
            return [sense]
        return [s for s in lex.senses(word) if self._on_topic(s)]

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
        """Other ways a user of this schema says ``phrase`` (a column's or table's words), best
        first; often none (see the module's rules).

        The whole phrase first ("last name" → surname, family name); else its head noun with
        the modifiers kept ("sales territory" → sales district). Alternatives that share no word
        with the phrase come first: they are the ones a keyword match misses.
        """
        if phrase in self._alts:
            return self._alts[phrase]
        ws = phrase.split()
        out: tuple[str, ...] = ()
        # a derived label ("number of orders", "latest hire date", "quantity per unit") is
        # the generator's phrase, not a name to look up
        if not (set(ws) & _PHRASE_WORDS):
            out = self._lookup(phrase, set(ws))
            if not out and len(ws) > 1 and ws[-1] not in _GENERIC_HEADS:
                head = ws[-1]
                out = tuple(
                    f"{' '.join(ws[:-1])} {alt}"
                    for alt in self._lookup(head, set(ws), compound=True)
                    if head not in alt.split()
                )
        own = set(ws)
        ranked = sorted(out, key=lambda a: bool(set(a.split()) & own))
        self._alts[phrase] = tuple(ranked)
        return self._alts[phrase]

    def _lookup(self, word: str, own: set[str], compound: bool = False) -> tuple[str, ...]:
        """The lemmas of ``word``'s sense that pass every rule of the module docstring;
        ``own``: the words of the whole phrase, which an alternative may share; ``compound``:
        ``word`` is the head of a longer name (the stricter bar of :data:`SYNONYM_SHARE`)."""
        lex = self.lexicon
        sense = self.sense_of(word)
        if lex is None or sense is None or not self._on_topic(sense):
            return ()
        in_sense, tagged = self._counts(word, sense.key)
        if tagged >= MIN_TAGGED and in_sense < MIN_TAGGED:
            # the word is well attested, but hardly ever in this sense: its lemmas here are
            # the specialists' ("freightage" for the charge of carrying goods)
            return ()
        others = self.context - own - {singular_of(w) for w in own}
        out: list[str] = []
        for lemma in sense.lemmas:
            low = lemma.lower()
            if (
                low == word
                or low.replace(" ", "") == word.replace(" ", "")
                or singular_of(low) == singular_of(word)  # "profits" for profit says nothing new
                or lemma != low
                or not _WORD.fullmatch(low.replace(" ", ""))
                or not _keeps_head(low, word)
                or {singular_of(w) for w in low.split()} & others
                or _gerund_of(low, sense.verbs)
            ):
                continue
            first = lex.senses(low)
            if not first or first[0].key != sense.key:
                continue  # a reader takes it in another sense first ("damage" for a price)
            mine, total = self._counts(low, sense.key)
            if total >= MIN_TAGGED and mine < DOMINANT_SHARE * total:
                continue  # as often meant otherwise ("task": a project or a chore)
            share = 1.0 if compound else SYNONYM_SHARE
            if in_sense >= MIN_TAGGED and mine < share * in_sense:
                continue  # rare for this meaning ("metropolis" for a city)
            zipf = lex.zipf(low)
            if zipf is not None and zipf < MIN_ZIPF:
                continue  # rare at all ("aerodrome" for an airport)
            out.append(low)
        return tuple(out)

    def _counts(self, lemma: str, key: str) -> tuple[int, int]:
        """How often ``lemma`` is tagged in sense ``key``, and in all its noun senses."""
        lex = self.lexicon
        if lex is None:
            return 0, 0
        counts = list(lex.tag_counts(lemma))
        keys = [s.key for s in lex.senses(lemma)]
        mine = sum(c for k, c in zip(keys, counts, strict=False) if k == key)
        return mine, sum(counts)

    def _on_topic(self, sense: Sense) -> bool:
        """Whether a sense filed under a topic is one the schema is about (its names share a
        word with the topic's lemmas); a sense without a topic is."""
        if not sense.topics or self.lexicon is None:
            return True
        for t in sense.topics:
            ts = self.lexicon.sense(t)
            if ts is not None and {w for lm in ts.lemmas for w in lm.lower().split()} & (
                self.context
            ):
                return True
        return False


def _gerund_of(lemma: str, verbs: Sequence[str]) -> bool:
    """Whether ``lemma`` is the gerund of a verb the word's sense comes from ("diagnosing" for
    diagnosis, from diagnose): the same name said as a verb, which a question frame reads as
    one ("Diagnosing for visit of …")."""
    if not lemma.endswith("ing") or " " in lemma:
        return False
    stem = lemma[:-3]
    return any(v in (stem, stem + "e", stem[:-1]) for v in verbs)


def _keeps_head(alternative: str, word: str) -> bool:
    """A one-word alternative, or a phrase ending in the word's own head: "family name" for
    "last name" reads as a name; "urban center" for "city" or "computer address" for
    "address" reads as something else."""
    alt, ws = alternative.split(), word.split()
    return len(alt) == 1 or (len(ws) > 1 and alt[-1] == ws[-1])


def singular_of(word: str) -> str:
    """The schema context's form of a word (singular, lower-case)."""
    return singular(word.lower())


def schema_context(names: Iterable[str]) -> frozenset[str]:
    """The words of a schema's names, singular and lower-case: the Lesk context."""
    out: set[str] = set()
    for n in names:
        for w in words(n):
            if len(w) > 2 and w not in _STOP and w != "id":
                out.add(singular(w))
    return frozenset(out)
