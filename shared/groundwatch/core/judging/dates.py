"""Dates as dates: every common written form of a date, at the granularity it was written.

The SQL truth is a day ("2023-04-01"); a response may write it "April 1, 2023", "1st of April,
2023", "01/04/2023", or only "April 2023" / "spring of 2023". A day-level mention is compared for
equality; a coarser mention (month, quarter, season, year) is only *consistent* with the gold day,
which is weaker evidence than a match and is left to a later tier.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import date
from enum import StrEnum
from functools import lru_cache

from groundwatch.core.judging.normalize import tokens

_MONTHS = {
    name: i + 1
    for i, names in enumerate(
        (
            ("jan", "january"), ("feb", "february"), ("mar", "march"), ("apr", "april"),
            ("may",), ("jun", "june"), ("jul", "july"), ("aug", "august"),
            ("sep", "sept", "september"), ("oct", "october"), ("nov", "november"),
            ("dec", "december"),
        )
    )
    for name in names
}  # fmt: skip
_ORDINAL = {
    "first": 1,
    "1st": 1,
    "second": 2,
    "2nd": 2,
    "third": 3,
    "3rd": 3,
    "fourth": 4,
    "4th": 4,
}
_QUARTER_TOKENS = {"q1": 1, "q2": 2, "q3": 3, "q4": 4}
_HALF_TOKENS = {"h1": 1, "h2": 2}
_SEASON_MONTHS = {"spring": (3, 5), "summer": (6, 8), "fall": (9, 11), "autumn": (9, 11)}
_DAY_SUFFIXES = ("st", "nd", "rd", "th")
#: Filler words a written date may carry between its parts ("the 1st day of April, 2023").
_FILLER = frozenset({"of", "day", "year", "in", "fy"})


class Granularity(StrEnum):
    DAY = "day"
    MONTH = "month"
    RANGE = "range"  # quarter, half, season
    YEAR = "year"


@dataclass(frozen=True, slots=True)
class DateMention:
    """One date written in a text, as the interval of days it denotes."""

    first: date
    last: date
    granularity: Granularity
    span: tuple[int, int]

    def contains(self, day: date) -> bool:
        return self.first <= day <= self.last


class DateMatch(StrEnum):
    FOUND = "found"  # a day-level mention equals the gold day
    PARTIAL = "partial"  # only coarser mentions, consistent with the gold day
    CONFLICT = "conflict"  # dates are mentioned, none consistent with the gold day
    ABSENT = "absent"  # no date mentioned


def _day(y: int, m: int, d: int) -> date | None:
    try:
        return date(y, m, d)
    except ValueError:
        return None


def _month_span(y: int, m1: int, m2: int) -> tuple[date, date]:
    return date(y, m1, 1), date(y, m2, calendar.monthrange(y, m2)[1])


def _day_number(tok: str) -> int | None:
    """1..31 from "1", "01" or "1st"; None for anything else."""
    if tok.endswith(_DAY_SUFFIXES) and tok[:-2].isdigit():
        tok = tok[:-2]
    if tok.isdigit() and len(tok) <= 2:
        n = int(tok)
        return n if 1 <= n <= 31 else None
    return None


def yearless_days(toks: list[str]) -> list[tuple[int, int]]:
    """(month, day) of every day written without its year ("February 7th", "7 Feb")."""
    out = []
    for i, tok in enumerate(toks):
        month = _MONTHS.get(tok)
        if month is None:
            continue
        for j in (i + 1, i - 1, i - 2):  # "Feb 7", "7 Feb", "7th of February"
            if 0 <= j < len(toks) and (j != i - 2 or toks[i - 1] == "of"):
                d = _day_number(toks[j])
                if d is not None:
                    out.append((month, d))
                    break
    return out


def _small(tok: str) -> int | None:
    return int(tok) if tok.isdigit() and len(tok) <= 2 else None


#: A month's name, written out or abbreviated, as a pattern (lower case).
MONTH_NAME = "(?:" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
#: A full date written out, its day (and, numeric, its month) in groups: "8 November 2024",
#: "the 8th of November, 2024", "November 8, 2024", "08/11/2024", "2024-11-08".
_FULL_DATE = re.compile(
    r"(?<![\w.])(?P<d1>\d{1,2})(?:st|nd|rd|th)?(?: of)? " + MONTH_NAME + r",? \d{4}(?!\d)"
    r"|\b" + MONTH_NAME + r" (?P<d2>\d{1,2})(?:st|nd|rd|th)?,? \d{4}(?!\d)"
    r"|(?<![\w.])(?P<a>\d{1,2})(?P<sep>[/.-])(?P<b>\d{1,2})(?P=sep)\d{4}(?!\d)"
    r"|(?<![\w.])\d{4}(?P<sep2>[/.-])(?P<m>\d{1,2})(?P=sep2)(?P<d3>\d{1,2})(?![\w])"
)
_HAS_YEAR = re.compile(r"\d{4}")


def date_part_spans(folded: str) -> list[tuple[int, int]]:
    """The character spans of the day and month numbers of every full date in ``folded`` (a
    folded text): "8 November 2024" states a date, not the number 8, so a number that is a
    date's day or month is no claim of a number. The year stays a number: a year column is
    asked as one ("founded in 1998" answers a year held as an integer)."""
    if _HAS_YEAR.search(folded) is None:
        return []
    spans: list[tuple[int, int]] = []
    for m in _FULL_DATE.finditer(folded):
        for g in ("d1", "d2", "a", "b", "m", "d3"):
            if m.start(g) >= 0:
                spans.append(m.span(g))
    return spans


def extract_dates(text: str, *, folded: bool = False) -> list[DateMention]:
    """Every date mention in ``text``, each at the finest granularity it was written at."""
    return extract_dates_from_tokens(tokens(text, folded=folded))


def extract_dates_from_tokens(toks: list[str], *, vague: bool | None = None) -> list[DateMention]:
    """Every date mention in a token list (see :func:`groundwatch.core.judging.normalize.tokens`).

    Works outward from each 4-digit year token, finest form first, and each mention consumes its
    tokens, so "April 1, 2023" is one day — never also a month and a year. Reading tokens instead
    of running a regular expression over the text is what keeps the judge above 50k judgements/s.
    An all-numeric ``01/04/2023`` yields both readings (day-first, month-first) when both are valid:
    the response's locale is unknown, so either may be the meant one. ``span`` is a token range.
    """
    out: list[DateMention] = []
    n = len(toks)
    free = 0  # first token index not yet consumed by a mention
    if vague is None:  # the caller did not say whether decades or centuries may be written
        vague = (
            "century" in toks
            or not _DECADE_WORDS.isdisjoint(toks)
            or any(t[-1:] == "s" and t[:1].isdigit() for t in toks)
        )
    if vague:
        out.extend(_vague_years(toks))
    for i in [k for k, tok in enumerate(toks) if len(tok) == 4 and tok.isdigit()]:
        if i < free:
            continue
        y = int(toks[i])
        if i + 2 < n:  # ISO: 2023 04 01 (from 2023-04-01, 2023/04/01, 2023.04.01)
            mo, d = _small(toks[i + 1]), _small(toks[i + 2])
            day = _day(y, mo, d) if mo is not None and d is not None else None
            if day is not None:
                out.append(DateMention(day, day, Granularity.DAY, (i, i + 3)))
                free = i + 3
                continue
        j = i - 1
        while j >= free and toks[j] in _FILLER:
            j -= 1
        found = _before_year(toks, free, j, y, i) if j >= free else []
        if not found and 1800 <= y <= 2199:
            found = [DateMention(date(y, 1, 1), date(y, 12, 31), Granularity.YEAR, (i, i + 1))]
        out.extend(found)
        free = i + 1
    return out


#: Decades said in words ("the nineties"): the twentieth century's, as people mean them.
_DECADE_WORDS = frozenset(
    {"twenties", "thirties", "forties", "fifties", "sixties", "seventies", "eighties", "nineties"}
)
_DECADE_START = {w: 1900 + 10 * (i + 2) for i, w in enumerate(sorted(_DECADE_WORDS, key=[
    "twenties", "thirties", "forties", "fifties", "sixties", "seventies", "eighties",
    "nineties"].index))}  # fmt: skip
_CENTURY_ORDINALS = {
    "first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7,
    "eighth": 8, "ninth": 9, "tenth": 10, "eleventh": 11, "twelfth": 12, "thirteenth": 13,
    "fourteenth": 14, "fifteenth": 15, "sixteenth": 16, "seventeenth": 17, "eighteenth": 18,
    "nineteenth": 19, "twentieth": 20,
}  # fmt: skip


def _years(first: int, last: int, span: tuple[int, int]) -> DateMention | None:
    if not 1 <= first <= last <= 9999:
        return None
    return DateMention(date(first, 1, 1), date(last, 12, 31), Granularity.RANGE, span)


def _vague_years(toks: list[str]) -> list[DateMention]:
    """Decades and centuries ("1990s", "90s", "the nineties", "19th century", "the 1800s"): a
    span of years, consistent with a gold day inside it, conflicting with one outside."""
    out: list[DateMention] = []
    for i, tok in enumerate(toks):
        found: DateMention | None = None
        if tok.endswith("s") and tok[:-1].isdigit():
            digits = tok[:-1]
            if len(digits) == 4 and digits.endswith("0"):
                y = int(digits)
                found = (
                    _years(y, y + 99, (i, i + 1)) if y % 100 == 0 else _years(y, y + 9, (i, i + 1))
                )
            elif len(digits) == 2 and digits.endswith("0"):
                found = _years(1900 + int(digits), 1909 + int(digits), (i, i + 1))
        elif tok in _DECADE_WORDS:
            found = _years(_DECADE_START[tok], _DECADE_START[tok] + 9, (i, i + 1))
        elif tok == "century" and i > 0:
            prev = toks[i - 1]
            n = _CENTURY_ORDINALS.get(prev)
            if n is None and prev[-2:] in _DAY_SUFFIXES and prev[:-2].isdigit():
                n = int(prev[:-2])
            if n is not None:
                # strictly 1801-1900 for the 19th, 1800-1899 as people say it: either reading
                found = _years(max(1, 100 * (n - 1)), 100 * n, (i - 1, i + 1))
        if found is not None:
            out.append(found)
    return out


def _before_year(toks: list[str], free: int, j: int, y: int, i: int) -> list[DateMention]:
    """The date form ending at year token ``i``, whose last non-filler token before it is ``j``."""
    prev = toks[j]
    month = _MONTHS.get(prev)
    if month is not None:
        k = j - 1  # "1st of april 2023" / "1 april 2023"
        while k >= free and toks[k] in _FILLER:
            k -= 1
        d = _day_number(toks[k]) if k >= free else None
        day = _day(y, month, d) if d is not None else None
        if day is not None:
            return [DateMention(day, day, Granularity.DAY, (k, i + 1))]
        first, last = _month_span(y, month, month)
        return [DateMention(first, last, Granularity.MONTH, (j, i + 1))]
    d = _day_number(prev)
    if d is not None:
        if j - 1 < free:
            return []
        before = toks[j - 1]
        month = _MONTHS.get(before)
        if month is not None:  # "april 1 2023"
            day = _day(y, month, d)
            return [DateMention(day, day, Granularity.DAY, (j - 1, i + 1))] if day else []
        a = _small(before)
        if a is not None and j == i - 1:  # "01/04/2023"
            readings = sorted({r for r in (_day(y, d, a), _day(y, a, d)) if r})
            return [DateMention(r, r, Granularity.DAY, (j - 1, i + 1)) for r in readings]
        return []
    span = (j, i + 1)
    if prev in _QUARTER_TOKENS:
        q = _QUARTER_TOKENS[prev]
        return [DateMention(*_month_span(y, 3 * q - 2, 3 * q), Granularity.RANGE, span)]
    if prev in _HALF_TOKENS:
        h = _HALF_TOKENS[prev]
        return [DateMention(*_month_span(y, 6 * h - 5, 6 * h), Granularity.RANGE, span)]
    if prev in ("quarter", "half") and j - 1 >= free and toks[j - 1] in _ORDINAL:
        k = _ORDINAL[toks[j - 1]]
        span = (j - 1, i + 1)
        if prev == "quarter":
            return [DateMention(*_month_span(y, 3 * k - 2, 3 * k), Granularity.RANGE, span)]
        if k <= 2:
            return [DateMention(*_month_span(y, 6 * k - 5, 6 * k), Granularity.RANGE, span)]
        return []
    if prev in _SEASON_MONTHS:
        return [DateMention(*_month_span(y, *_SEASON_MONTHS[prev]), Granularity.RANGE, span)]
    if prev == "winter":  # either end of the calendar year may be meant
        return [
            DateMention(*_month_span(y, 1, 2), Granularity.RANGE, span),
            DateMention(*_month_span(y, 12, 12), Granularity.RANGE, span),
        ]
    return []


@lru_cache(maxsize=65_536)
def parse_gold_date(text: str) -> date | None:
    """The gold value as one day, or None when it is not a single day-level date."""
    days = {m.first for m in extract_dates(text) if m.granularity is Granularity.DAY}
    return days.pop() if len(days) == 1 else None


def match_date(
    gold: date, mentions: list[DateMention], *, ignore: frozenset[date] = frozenset()
) -> DateMatch:
    """How the response's date mentions relate to the gold day.

    ``ignore`` holds days the query itself mentions: a response that repeats the question's date
    is not asserting a conflicting answer.
    """
    found = partial = conflict = False
    for m in mentions:
        if m.granularity is Granularity.DAY:
            if m.first == gold:
                found = True
            elif m.first not in ignore:
                conflict = True
        elif m.contains(gold):
            partial = True
        elif not (m.granularity is Granularity.YEAR and any(m.contains(d) for d in ignore)):
            conflict = True
    if found:
        return DateMatch.FOUND
    if partial:
        return DateMatch.PARTIAL
    if conflict:
        return DateMatch.CONFLICT
    return DateMatch.ABSENT
