"""The gold answer prepared once per semantic group: normalized, typed, parsed.

Every text form of a group (and every target, every run) is judged against the same gold answer,
so the parsing is cached on the answer's content. Types come from generation when known; a value
without a type is typed by what it parses as, so a GRAMMAR result file (which carries no types)
still has its dates compared as dates.
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass
from datetime import date
from functools import lru_cache
from typing import Any

from groundwatch.core.judging.aliases import country_of
from groundwatch.core.judging.dates import parse_gold_date
from groundwatch.core.judging.normalize import content_tokens, fold, normalize_cached
from groundwatch.core.judging.numbers import NumberMention, parse_gold_number
from groundwatch.core.judging.variants import stems
from groundwatch.core.model import AnswerType, Expected

#: A value that is nothing but a number (with separators, sign, percent, scale or unit) is typed
#: as a number; anything with more words stays text ("Building 7" is a name, not the number 7).
_NUMERIC_VALUE = re.compile(
    r"[$€£]?\s?[-+]?[\d.,\s\u00a0]*\d(?:\s?(?:%|percent|thousand|million|billion|k|m|bn|"
    r"kg|km|m|cm|mm|g|t|h|s|usd|eur|gbp|days?|hours?|weeks?))?"
)
_DATE_VALUE = re.compile(r"\d{4}-\d{1,2}-\d{1,2}(?:[ t]\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?z?)?")


@dataclass(frozen=True, slots=True)
class GoldPart:
    """One answer column of the gold answer."""

    raw: str
    norm: str
    type: AnswerType
    day: date | None
    number: NumberMention | None
    content: frozenset[str]
    typed: bool  # a parsed date or number, compared as such
    needle: str  # " norm ", for containment on word boundaries
    last_word: str  # cheap pre-check whether the query can contain the part at all
    stem_needle: str  # " stem stem ", for containment of a morphological variant
    stem_last: str  # its last stem ("" for none): the cheap pre-check at the stem level
    country: str | None  # ISO alpha-2 code when the value names a country (text values only)


@dataclass(frozen=True, slots=True)
class GoldOption:
    letter: str
    part: GoldPart


@dataclass(frozen=True, slots=True)
class Gold:
    parts: tuple[GoldPart, ...]
    stale: tuple[tuple[GoldPart, ...], ...]
    options: tuple[GoldOption, ...]
    correct_option: int | None
    answerable: bool
    norm: str  # the whole answer normalized, for the exact tier
    content: frozenset[str]  # every content token of the answer, for token P/R/F1
    has_typed: bool  # some part is a parsed date or number
    #: per part: other values of its column (grounded candidates), never equal to a gold part
    rivals: tuple[tuple[GoldPart, ...], ...]

    @property
    def has_rivals(self) -> bool:
        return any(self.rivals)


def infer_type(value: str) -> AnswerType:
    """The type a value parses as, for gold answers that come without one."""
    v = fold(value).strip()
    if _DATE_VALUE.fullmatch(v) and parse_gold_date(value) is not None:
        return AnswerType.DATE
    if _NUMERIC_VALUE.fullmatch(v) and parse_gold_number(value) is not None:
        return AnswerType.NUMBER
    return AnswerType.TEXT


@lru_cache(maxsize=65_536)
def gold_part(raw: str, declared: AnswerType | None) -> GoldPart:
    # A declared TEXT may still be an ISO date or a bare number (SQLite keeps dates as strings).
    typ = declared if declared in (AnswerType.DATE, AnswerType.NUMBER) else infer_type(raw)
    day = parse_gold_date(raw) if typ is AnswerType.DATE else None
    number = parse_gold_number(raw) if typ is AnswerType.NUMBER else None
    if (typ is AnswerType.DATE and day is None) or (typ is AnswerType.NUMBER and number is None):
        typ = AnswerType.TEXT  # declared typed but unreadable as such: compare as text
    norm = normalize_cached(raw)
    toks = norm.split()
    stem_needle = f" {' '.join(stems(toks))} "
    return GoldPart(
        raw=raw,
        norm=norm,
        type=typ,
        day=day,
        number=number,
        content=frozenset(content_tokens(raw)),
        typed=day is not None or number is not None,
        needle=f" {norm} ",
        last_word=norm.rsplit(" ", 1)[-1],
        stem_needle=stem_needle,
        stem_last=stem_needle.rsplit(" ", 2)[-2] if stem_needle.strip() else "",
        country=country_of(raw) if typ is AnswerType.TEXT else None,
    )


def _columns(values: tuple[str, ...]) -> list[int]:
    """Indexes of the non-empty values: the answer columns that become parts."""
    return [i for i, v in enumerate(values) if v is not None and str(v).strip()]


def _parts(values: tuple[str, ...], types: tuple[AnswerType, ...]) -> tuple[GoldPart, ...]:
    return tuple(
        gold_part(values[i], types[i] if i < len(types) else None) for i in _columns(values)
    )


def _rivals(
    values: tuple[str, ...], parts: tuple[GoldPart, ...], candidates: tuple[tuple[str, ...], ...]
) -> tuple[tuple[GoldPart, ...], ...]:
    """Each part's candidates, prepared; any equal to some gold part (normalized) left out, so a
    list answer never counts one of its own items as a rival of another."""
    gold_norms = {p.norm for p in parts}
    out: list[tuple[GoldPart, ...]] = []
    for col in _columns(values):
        cands = candidates[col] if col < len(candidates) else ()
        prepared = (gold_part(c, AnswerType.TEXT) for c in dict.fromkeys(cands))
        out.append(tuple(c for c in prepared if c.norm and c.norm not in gold_norms))
    return tuple(out)


_LETTERS = string.ascii_lowercase


@lru_cache(maxsize=32_768)
def _prepare(
    values: tuple[str, ...],
    types: tuple[AnswerType, ...],
    stale: tuple[tuple[str, ...], ...],
    options: tuple[str, ...] | None,
    answerable: bool,
    candidates: tuple[tuple[str, ...], ...] = (),
) -> Gold:
    parts = _parts(values, types)
    opts: tuple[GoldOption, ...] = ()
    correct: int | None = None
    if options:
        opts = tuple(
            GoldOption(_LETTERS[i], gold_part(o, AnswerType.TEXT))
            for i, o in enumerate(options[: len(_LETTERS)])
        )
        correct = _resolve_option(parts, opts)
    content: frozenset[str] = (
        frozenset().union(*(p.content for p in parts)) if parts else frozenset()
    )
    return Gold(
        parts=parts,
        stale=tuple(p for p in (_parts(s, types) for s in stale) if p),
        options=opts,
        correct_option=correct,
        answerable=answerable,
        norm=" ".join(p.norm for p in parts),
        content=content,
        has_typed=any(p.typed for p in parts),
        rivals=_rivals(values, parts, candidates),
    )


def _resolve_option(parts: tuple[GoldPart, ...], opts: tuple[GoldOption, ...]) -> int | None:
    """The gold option index: the gold value is either the option's letter or its text."""
    if len(parts) != 1:
        return None
    g = parts[0].norm
    for i, o in enumerate(opts):
        if g == o.letter or g == o.part.norm:
            return i
    # "C) Russia" or "C: Russia" as the gold value
    for i, o in enumerate(opts):
        if g.startswith(o.letter + " ") and g[2:] == o.part.norm:
            return i
    return None


GoldKey = tuple[Any, ...]


def gold_key(expected: Expected) -> GoldKey:
    """The content of a gold answer as a hashable key (what the judge's caches are keyed on)."""
    return (
        tuple(expected.values),
        tuple(expected.types),
        tuple(tuple(s) for s in expected.stale_values),
        tuple(expected.options) if expected.options else None,
        expected.answerable,
        tuple(tuple(c) for c in expected.candidates),
    )


def prepare_gold(expected: Expected) -> Gold:
    """The parsed gold answer, cached on the answer's content."""
    return _prepare(*gold_key(expected))
