"""Text as the grounding matcher compares it: folded, tokenized, lightly stemmed.

A bound value and a user's question are normalized by the same function, so "São Paulo's",
"sao paulo" and "SAO PAULO" are the same two tokens; numbers keep their decimal point and lose
their thousands separators ("1,306,000" is "1306000"), as a database prints them.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

#: A possessive ending ("Calgary's", "Jones’") goes before apostrophes are dropped inside words
#: ("O'Brien" → "obrien"), so a value and its possessive normalize alike.
_POSSESSIVE = re.compile(r"(?<=\w)['’]s\b|(?<=s)['’](?=\s|$)")
_APOSTROPHE = re.compile(r"(?<=\w)['’](?=\w)")
#: A number with its separators, or a run of letters and digits.
_TOKEN = re.compile(r"\d+(?:[.,]\d+)*|[^\W_]+")
_THOUSANDS = re.compile(r"^\d{1,3}(?:,\d{3})+(?:\.\d+)?$")

#: Words that say nothing about which fact is asked: never an attribute's evidence, never a
#: name. Question words ("who", "when", "how many") are not among them: they tell a person's
#: column from a date's or a count's, and the attribute weights make common ones cheap.
_STOPWORDS = """a an the of in on at to for from by with about as and or but is are was were be been
    being am do does did done has have had having this that these those it its their them they
    he she his her him me my i you your we us our please tell give show find look up can could
    would will shall should may might must there here any some me know want like just also so
    then than into out get got let lets s t hey hi hello thanks thank ok okay yes no not
    again pls plz"""
STOPWORDS = frozenset(_STOPWORDS.split())


def fold(text: str) -> str:
    """Lower case without accents, possessives or in-word apostrophes."""
    text = _APOSTROPHE.sub("", _POSSESSIVE.sub("", text))
    if not text.isascii():
        text = "".join(
            c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c)
        )
    return text.casefold()


def tokens(text: str) -> list[str]:
    """The folded tokens of ``text``; a number's thousands separators dropped."""
    out = _TOKEN.findall(fold(text))
    for i, tok in enumerate(out):
        if "," in tok:
            out[i] = tok.replace(",", "") if _THOUSANDS.match(tok) else tok.replace(",", ".")
    return out


def value_key(value: object) -> str:
    """A bound value as the index keys it: its tokens joined by one space ("" for none)."""
    return " ".join(tokens(str(value)))


@lru_cache(maxsize=65_536)
def stem(word: str) -> str:
    """A light English stem (plurals, -ing, -ed, -ly): enough that "populations", "founded" and
    "founding" meet the forms' "population" and "founded", cheap enough for every word."""
    if len(word) <= 3 or word.isdigit():
        return word
    for suffix, repl in (
        ("ies", "y"),
        ("sses", "ss"),
        ("ing", ""),
        ("edly", ""),
        ("ed", ""),
        ("ly", ""),
        ("es", ""),
        ("s", ""),
    ):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            if suffix == "s" and word.endswith(("ss", "us", "is")):
                return word
            if suffix == "es" and not word.endswith(("ches", "shes", "xes", "zes", "sses")):
                continue
            return word[: len(word) - len(suffix)] + repl
    return word
