"""How generated questions read, measured: whose words they use and how much they repeat.

Two figures GRAMMAR's robustness analysis depends on and the offline realizer can get wrong:

- **vocabulary**: a retriever that matches keywords is only tested on the words people use if
  some form of a group names the attribute *without* the column's own words ("When was employee
  'Davolio' employed?" for ``HireDate``; "What does track 'X' cost?" for ``UnitPrice``).
  :func:`avoids_column_words` tells, by Snowball stems, whether a form does;
- **boilerplate**: long forms padded with the same sentences differ only in the padding's
  position. distinct-n (unique n-grams over all n-grams of a set of texts, Li et al. 2016) across
  a template's forms says how much of them is repeated.

Placeholder values (anything between single quotes) are left out of both: a track named
"Unit Price Blues" does not make a form use the column's words.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import lru_cache

import Stemmer

from groundwatch.core.generation.naming import words
from groundwatch.core.generation.templates import SqlTemplate

_QUOTED = re.compile(r"'[^']*'")
_TOKEN = re.compile(r"[a-z0-9]+")
#: Words of a column name that carry no meaning of their own (``Sales_in_Billion``, ``NumberOf``).
_FILLER = frozenset({"in", "of", "the", "a", "an", "per", "id", "is", "has", "to", "by", "for"})


@lru_cache(maxsize=1)
def _stemmer() -> Stemmer._Stemmer:
    return Stemmer.Stemmer("english")


def _stems(tokens: Iterable[str]) -> set[str]:
    return set(_stemmer().stemWords(list(tokens)))


def text_tokens(text: str) -> list[str]:
    """Lower-case word tokens of a form, its quoted placeholder values left out."""
    return _TOKEN.findall(_QUOTED.sub(" ", text).lower())


def column_stems(column: str) -> frozenset[str]:
    """The stems of a column name's meaningful words (``UnitPrice`` → {unit, price})."""
    return frozenset(_stems(w for w in words(column) if w not in _FILLER))


def avoids_column_words(text: str, column: str) -> bool:
    """True if ``text`` uses none of ``column``'s words (compared by stem, values left out)."""
    own = column_stems(column)
    return bool(own) and not (own & _stems(text_tokens(text)))


def asked_columns(template: SqlTemplate) -> list[str]:
    """The names a question's attribute is the column's own words of: each selected column (a
    count's table for ``COUNT(*)``)."""
    return [s.table if s.column == "*" else s.column for s in template.selected]


def in_other_words(text: str, template: SqlTemplate) -> bool:
    """Whether ``text`` names every attribute ``template`` asks without its column's words."""
    cols = asked_columns(template)
    return bool(cols) and all(avoids_column_words(text, c) for c in cols)


def ngrams(tokens: Sequence[str], n: int) -> list[tuple[str, ...]]:
    return [tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]


def distinct_n(texts: Iterable[str], n: int = 2) -> float:
    """Unique n-grams over all n-grams of ``texts`` (1.0: no n-gram repeats; 0.0: no n-grams).

    Placeholder values count as one token (``'X'``), so two fills of one template measure the
    same: it is the wording that is measured, not the data.
    """
    grams: list[tuple[str, ...]] = []
    for t in texts:
        grams.extend(ngrams(_TOKEN.findall(_QUOTED.sub(" x ", t).lower()), n))
    return len(set(grams)) / len(grams) if grams else 0.0
