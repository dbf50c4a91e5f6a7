"""A count said by its noun, not by a number: "He has a pet." answers "how many pets" with one,
"There are no visits on record." with none.

A count question names what it counts ("how many pets", "the number of visits"). An answer that
writes no number may still say the count with a determiner before that noun: "a", "an" or "a
single" with the noun in the singular is one (a word or two may come between: "a registered
pet"); "no" or "not any" with it, or "not a" (a denial), is none. Only the counted noun counts:
"a cat and a dog" says no count of pets, and a second "a … pet" is no count of one. An answer
that is the pronoun alone ("None.", "There are none.", "She has none at all.") says none of what
the question counts: to a count question that is its answer, not a refusal.
"""

from __future__ import annotations

import re
from functools import lru_cache

from groundwatch.core.judging.normalize import STOPWORDS, fold

#: What a question counts: the noun after "how many" or "number of" (folded text).
_COUNTED = re.compile(r"\b(?:how many|number of)\s+(?:(?:distinct|different|unique)\s+)?([a-z]+)")
#: Up to two words between the determiner and the noun ("a registered pet", "no recorded
#: visits"), no "of" or word of quantity among them ("a lot of people", "a great many").
_BETWEEN = (
    r"(?:(?!(?:of|lot|lots|few|couple|number|total|handful|dozen|pair|bunch|great|good)\b)"
    r"[a-z][a-z-]*\s+){0,2}?"
)
_NEGATION = re.compile(r"(?:\bnot|\bnever|\bwithout|n't)\s+(?:\w+\s+){0,2}$")
#: A whole answer that is "none" as a count: alone, after "there are", or after a short subject
#: and "has" ("Dept Empty has none"); "none of the documents say" is no such answer.
_NONE_ALONE = re.compile(
    r"(?:there (?:are|is|were|was) |(?:[a-z'-]+ ){1,4}(?:has|have|had|holds?|lists?) )?"
    r"none(?: at all| so far| yet| on record| recorded| listed)?"
)
#: The word after the noun: a noun of the question's there makes it a modifier ("a pet owner"),
#: a possessive its owner ("a pet's visit").
_NEXT = re.compile(r"('s\b)|\s+([a-z]+)")


def _singulars(plural: str) -> tuple[str, ...]:
    """The forms a plural noun's singular may have (without a lexicon: "visits" → visit,
    "classes" → class, "categories" → category); the noun itself when it is no plural."""
    if plural.endswith("ies") and len(plural) > 4:
        return (plural[:-3] + "y",)
    if plural.endswith(("ses", "xes", "zes", "ches", "shes")):
        return (plural[:-2], plural[:-1])
    if plural.endswith("s") and not plural.endswith("ss") and len(plural) > 3:
        return (plural[:-1],)
    return (plural,)


@lru_cache(maxsize=4096)
def _patterns(
    query: str,
) -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str], frozenset[str]] | None:
    """The question's (one, none, more) patterns and its words, or None for a question that
    counts nothing."""
    folded = fold(query)
    m = _COUNTED.search(folded)
    if m is None:
        return None
    plural = m[1]
    singular = "|".join(re.escape(s) for s in _singulars(plural))
    noun = f"(?:{singular}|{re.escape(plural)})"
    one = re.compile(rf"\b(?:an?|an? single|one single)\s+{_BETWEEN}(?:{singular})\b")
    none = re.compile(rf"\b(?:no|not any|not a single|not an?)\s+{_BETWEEN}{noun}\b")
    # "another pet", "several pets", "both visits": more than one, said without a number
    more = re.compile(
        rf"\b(?:another|other|more|several|many|some|both|multiple|various)\s+{_BETWEEN}{noun}\b"
    )
    return one, none, more, frozenset(re.findall(r"[a-z]+", folded))


def _as_noun(text: str, end: int, question: frozenset[str]) -> bool:
    """Whether the noun ending at ``end`` is the thing counted, not a modifier of the next (a
    content word of the question's: "a pet owner"; "a pet named X" is a pet)."""
    nxt = _NEXT.match(text, end)
    if nxt is None:
        return True
    if nxt[1] is not None:
        return False
    word = nxt[2]
    return word not in question or word in STOPWORDS or word.endswith("ed")


def said_count(query: str, folded_response: str) -> int | None:
    """The count ``folded_response`` says of what ``query`` counts by a determiner alone (1 or
    0), or None: the question counts nothing, the answer says no such count, or says it twice
    over (two "a … pet", one and none, or "another pet")."""
    pats = _patterns(query)
    if pats is None:
        return None
    one, none, more, question = pats
    if _NONE_ALONE.fullmatch(folded_response.strip().rstrip(".!").strip()):
        return 0
    if more.search(folded_response):
        return None
    text = folded_response
    ones = [m for m in one.finditer(text) if _as_noun(text, m.end(), question)]
    nones = [m for m in none.finditer(text) if _as_noun(text, m.end(), question)]
    # "does not have a pet": the article after a denial is none
    denied = [m for m in ones if _NEGATION.search(text, 0, m.start())]
    if denied:
        nones += denied
        ones = [m for m in ones if m not in denied]
    if len(ones) == 1 and not nones:
        return 1
    if nones and not ones:
        return 0
    return None
