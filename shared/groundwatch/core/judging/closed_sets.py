"""Closed vocabularies: sets whose members are each other's conclusive alternatives.

A gold that is a month is contradicted by an answer that names another month instead, as a
country gold is by another country: the set is closed, and its members exclude each other. Each
set here is data (members and the spellings of each), read by one mechanism (:func:`find_members`),
and admits only members whose reading is unambiguous:

* a word that is also a country, a person's given name in everyday use, or a city is left out
  of the set ("Georgia" is a country too; "Washington" is usually the city or the president);
* a member of a proper-noun set counts only written with a capital ("may" is a verb, "earth"
  soil), and one that is also an everyday word ("May", "March", "Cancer") not at the start of
  a sentence, where every word is capitalised; a member of a lowercase set (a colour, an
  element, a decade, an ordinal) capitalised mid-sentence is a name's ("Snow White"), and its
  everyday words ("first", "second") are never another member;
* a member inside a longer name counts not at all: a capitalised word right before or after it
  that is not a phrase's first word ("Mercury Records", "Kansas City", "Leo Tolstoy", "South
  Africa") makes it part of that name.

Members the question names are its context restated, never a rival (the caller drops them).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cache

from groundwatch.core.judging.normalize import normalize


@dataclass(frozen=True, slots=True)
class ClosedSet:
    """One vocabulary: ``members`` maps each normalized spelling to its member's id."""

    name: str
    members: dict[str, str]
    #: everyday words among the spellings: in a proper-noun set a capital at a sentence's
    #: start proves nothing; in a lowercase set they are never another member ("at first", "a
    #: second"), only the gold
    common_words: frozenset[str]
    #: members are proper nouns, written with a capital; the others (colours, elements,
    #: decades) are written in lowercase, and one capitalised mid-sentence is a name's ("Snow
    #: White", "Orange" the company)
    proper: bool = True
    #: words that make a member part of another phrase when right after it ("12th June", "the
    #: 4th of July", "the fifth century") or right before it ("June 12th")
    not_before: frozenset[str] = frozenset()
    not_after: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class MemberMention:
    """A member named in a response: its set, its id and its token span ``[start, end)``."""

    set_name: str
    member: str
    start: int
    end: int


def _spellings(groups: Sequence[Sequence[str]]) -> dict[str, str]:
    """Spelling -> member id, the first spelling of each group being its id."""
    return {normalize(s): normalize(g[0]) for g in groups for s in g}


_MONTHS = [
    ["January"], ["February"], ["March"], ["April"], ["May"], ["June"], ["July"], ["August"],
    ["September"], ["October"], ["November"], ["December"],
]  # fmt: skip
_WEEKDAYS = [["Monday"], ["Tuesday"], ["Wednesday"], ["Thursday"], ["Friday"], ["Saturday"],
             ["Sunday"]]  # fmt: skip
_PLANETS = [["Mercury"], ["Venus"], ["Earth"], ["Mars"], ["Jupiter"], ["Saturn"], ["Uranus"],
            ["Neptune"], ["Pluto"]]  # fmt: skip
_ZODIAC = [
    ["Aries"], ["Taurus"], ["Gemini"], ["Cancer"], ["Leo"], ["Virgo"], ["Libra"],
    ["Scorpio", "Scorpius"], ["Sagittarius"], ["Capricorn", "Capricornus"], ["Aquarius"],
    ["Pisces"],
]  # fmt: skip
#: Australia is a country as well, and with Oceania one continent in the usual convention.
_CONTINENTS = [["Africa"], ["Antarctica"], ["Asia"], ["Europe"], ["North America"],
               ["South America"], ["Oceania", "Australasia"]]  # fmt: skip
#: Without Georgia (a country) and Washington (the city, the president).
_US_STATES = [
    ["Alabama"], ["Alaska"], ["Arizona"], ["Arkansas"], ["California"], ["Colorado"],
    ["Connecticut"], ["Delaware"], ["Florida"], ["Hawaii"], ["Idaho"], ["Illinois"], ["Indiana"],
    ["Iowa"], ["Kansas"], ["Kentucky"], ["Louisiana"], ["Maine"], ["Maryland"],
    ["Massachusetts"], ["Michigan"], ["Minnesota"], ["Mississippi"], ["Missouri"], ["Montana"],
    ["Nebraska"], ["Nevada"], ["New Hampshire"], ["New Jersey"], ["New Mexico"], ["New York"],
    ["North Carolina"], ["North Dakota"], ["Ohio"], ["Oklahoma"], ["Oregon"], ["Pennsylvania"],
    ["Rhode Island"], ["South Carolina"], ["South Dakota"], ["Tennessee"], ["Texas"], ["Utah"],
    ["Vermont"], ["Virginia"], ["West Virginia"], ["Wisconsin"], ["Wyoming"],
]  # fmt: skip

#: Basic colour terms; shades ("crimson", "navy") are no member, so they decide nothing.
_COLOURS = [["red"], ["orange"], ["yellow"], ["green"], ["blue"], ["purple", "violet"],
            ["pink"], ["brown"], ["black"], ["white"], ["grey", "gray"]]  # fmt: skip
#: Elements, without those that are everyday words too (gold, silver, iron, lead, tin, copper)
#: or a planet (mercury).
_ELEMENTS = [
    ["hydrogen"], ["helium"], ["lithium"], ["beryllium"], ["boron"], ["carbon"], ["nitrogen"],
    ["oxygen"], ["fluorine"], ["neon"], ["sodium"], ["magnesium"], ["aluminium", "aluminum"],
    ["silicon"], ["phosphorus"], ["sulphur", "sulfur"], ["chlorine"], ["argon"], ["potassium"],
    ["calcium"], ["titanium"], ["chromium"], ["manganese"], ["cobalt"], ["nickel"], ["zinc"],
    ["arsenic"], ["bromine"], ["krypton"], ["strontium"], ["iodine"], ["xenon"],
    ["caesium", "cesium"], ["barium"], ["tungsten"], ["osmium"], ["iridium"], ["platinum"],
    ["radium"], ["radon"], ["uranium"], ["plutonium"], ["thorium"], ["polonium"],
]  # fmt: skip
#: Decades of any century by their tens: "thirties", "30s", "1930s" are one member.
_DECADES = [
    [word, f"{d}s", *(f"{c}{d}s" for c in range(15, 21))]
    for d, word in zip(
        range(20, 100, 10),
        ("twenties", "thirties", "forties", "fifties", "sixties", "seventies", "eighties",
         "nineties"),
        strict=True,
    )
]  # fmt: skip

_SUFFIX = {1: "st", 2: "nd", 3: "rd"}
#: Ordinals by their number: "third", "3rd" are one member.
_ORDINALS = [
    [word, f"{n}{_SUFFIX.get(n % 10, 'th') if n not in (11, 12, 13) else 'th'}"]
    for n, word in enumerate(
        ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth",
         "tenth", "eleventh", "twelfth", "thirteenth", "fourteenth", "fifteenth", "sixteenth",
         "seventeenth", "eighteenth", "nineteenth", "twentieth"),
        start=1,
    )
]  # fmt: skip

#: Each set, its spellings that are also everyday words, and whether its members are proper
#: nouns.
_SETS: tuple[tuple[str, list[list[str]], frozenset[str], bool], ...] = (
    ("month", _MONTHS, frozenset({"march", "may", "august"}), True),
    ("weekday", _WEEKDAYS, frozenset(), True),
    ("planet", _PLANETS, frozenset({"earth"}), True),
    ("zodiac sign", _ZODIAC, frozenset({"cancer"}), True),
    ("continent", _CONTINENTS, frozenset(), True),
    ("us state", _US_STATES, frozenset(), True),
    ("colour", _COLOURS, frozenset(), False),
    ("chemical element", _ELEMENTS, frozenset(), False),
    ("decade", _DECADES, frozenset(), False),
    ("ordinal", _ORDINALS, frozenset({"first", "second", "1st", "2nd"}), False),
)
#: Longest spelling, in tokens ("north carolina").
_MAX_NGRAM = 2


@cache
def closed_sets() -> dict[str, ClosedSet]:
    """Every closed set, by name."""
    sets = {
        name: ClosedSet(name, _spellings(groups), common, proper)
        for name, groups, common, proper in _SETS
    }
    months = frozenset(sets["month"].members)
    sets["ordinal"] = replace(
        sets["ordinal"],
        not_before=months | {"of", "century", "centuries", "millennium", "day", "week"},
        not_after=months,
    )
    return sets


@cache
def _by_spelling() -> dict[str, list[tuple[str, str]]]:
    out: dict[str, list[tuple[str, str]]] = {}
    for s in closed_sets().values():
        for spelling, member in s.members.items():
            out.setdefault(spelling, []).append((s.name, member))
    return out


def member_of(value: str) -> tuple[str, str] | None:
    """``(set name, member id)`` when the whole value is one member of exactly one set."""
    hits = _by_spelling().get(normalize(value.strip()), [])
    return hits[0] if len(hits) == 1 else None


#: Capitalised words that start a phrase rather than belong to a name ("In Ohio", "The Moon").
_LEAD_WORDS = frozenset(
    {"in", "on", "at", "by", "since", "from", "to", "for", "of", "the", "a", "an", "and", "or",
     "is", "was", "it", "its", "yes", "no", "not", "but", "both", "either", "neither", "than",
     "i", "he", "she", "they", "we", "this", "that", "answer", "after", "before", "during",
     "until", "between", "like", "unlike", "near"}
)  # fmt: skip


def find_members(
    closed: ClosedSet,
    toks: Sequence[str],
    raw: str,
    spans: Sequence[tuple[int, int]] | None,
    *,
    guarded: bool = True,
) -> list[MemberMention]:
    """Members of ``closed`` a response names on their own (tokens, raw text, token spans).

    Case decides whether a word is a member, so without the tokens' spans in the raw text
    (``spans`` None) nothing is found. Unguarded, every spelling counts, however written: what
    the question names is read that way, since excluding a member as context errs safe
    ("White, Yellow or Brown?").
    """
    if spans is None and guarded:
        return []
    out: list[MemberMention] = []
    i, n = 0, len(toks)
    while i < n:
        for size in range(min(_MAX_NGRAM, n - i), 0, -1):
            member = closed.members.get(" ".join(toks[i : i + size]))
            if member is not None:
                if not guarded or _standalone(closed, toks, raw, spans or (), i, i + size):
                    out.append(MemberMention(closed.name, member, i, i + size))
                i += size
                break
        else:
            i += 1
    return out


def _standalone(
    closed: ClosedSet,
    toks: Sequence[str],
    raw: str,
    spans: Sequence[tuple[int, int]],
    start: int,
    end: int,
) -> bool:
    """The mention is the member itself: capitalised, and no longer name's word beside it."""
    a = spans[start][0]
    if (end < len(toks) and toks[end] in closed.not_before) or (
        start > 0 and toks[start - 1] in closed.not_after
    ):
        return False
    if closed.proper:
        if not all(raw[spans[j][0]].isupper() for j in range(start, end)):
            return False
        if " ".join(toks[start:end]) in closed.common_words and _sentence_start(raw, a):
            return False
    elif " ".join(toks[start:end]) in closed.common_words or (
        raw[a].isupper()
        and not raw[a : spans[end - 1][1]].isupper()
        and not _sentence_start(raw, a)
    ):
        return False
    # a neighbour joined by a space or hyphen only (punctuation between ends a name)
    if (
        start > 0
        and _name_word(raw, spans[start - 1], toks[start - 1])
        and not raw[spans[start - 1][1] : a].strip(" -\u00a0")
    ):
        return False
    return not (
        end < len(toks)
        and _name_word(raw, spans[end], toks[end])
        and not raw[spans[end - 1][1] : spans[end][0]].strip(" -\u00a0")
    )


def _name_word(raw: str, span: tuple[int, int], tok: str) -> bool:
    """A capitalised word that is not a phrase's first word (nor a digit)."""
    return raw[span[0]].isupper() and tok not in _LEAD_WORDS


def _sentence_start(raw: str, at: int) -> bool:
    """Nothing but a sentence's end (or the text's start) before ``at``."""
    before = raw[:at].rstrip(" \t\n\u00a0\"'(*-")
    return not before or before[-1] in ".!?:\n"
