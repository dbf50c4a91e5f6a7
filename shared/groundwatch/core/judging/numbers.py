"""Numbers as numbers: separators, scale words, percent, units and the rounding a response used.

A response that writes "384,570", "384 570", "about 385 thousand" or "0.38 million" may mean the
SQL value 384570. What it may not mean is decided by the precision it was written at: "385
thousand" claims the value to the nearest thousand, so it matches 384570 when rounding the gold
value to that precision gives the response's value. A rounded match that is still far off in
relative terms (more than ``rel_tol``) is only *approximate*, weaker evidence left to a later tier.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache

from groundwatch.core.judging.normalize import fold

_SCALES = {
    "thousand": 1e3, "k": 1e3, "million": 1e6, "mn": 1e6, "m": 1e6, "mio": 1e6,
    "billion": 1e9, "bn": 1e9, "b": 1e9, "trillion": 1e12, "tn": 1e12,
}  # fmt: skip

#: unit spelling → (dimension, factor to the dimension's base unit). Small on purpose: enough to
#: tell "42 kg" from "42 lb" and to read "1.5 km" as 1500 m; anything else is ignored, not guessed.
_UNITS: dict[str, tuple[str, float]] = {}
for _names, _dim, _factor in (
    (("mm", "millimeter", "millimeters", "millimetre", "millimetres"), "length", 1e-3),
    (("cm", "centimeter", "centimeters", "centimetre", "centimetres"), "length", 1e-2),
    (("m", "meter", "meters", "metre", "metres"), "length", 1.0),
    (("km", "kilometer", "kilometers", "kilometre", "kilometres"), "length", 1e3),
    (("mi", "mile", "miles"), "length", 1609.344),
    (("ft", "foot", "feet"), "length", 0.3048),
    (("mg", "milligram", "milligrams"), "mass", 1e-3),
    (("g", "gram", "grams"), "mass", 1.0),
    (("kg", "kilogram", "kilograms", "kilo", "kilos"), "mass", 1e3),
    (("t", "tonne", "tonnes", "ton", "tons"), "mass", 1e6),
    (("lb", "lbs", "pound", "pounds"), "mass", 453.59237),
    (("s", "sec", "second", "seconds"), "time", 1.0),
    (("min", "mins", "minute", "minutes"), "time", 60.0),
    (("h", "hr", "hrs", "hour", "hours"), "time", 3600.0),
    (("day", "days"), "time", 86400.0),
    (("week", "weeks"), "time", 604800.0),
    (("usd", "$", "dollar", "dollars"), "usd", 1.0),
    (("eur", "€", "euro", "euros"), "eur", 1.0),
    (("gbp", "£", "pound sterling"), "gbp", 1.0),
    (("sqm", "m2", "square meters", "square metres"), "area", 1.0),
    (("sqft", "square feet"), "area", 0.09290304),
):
    for _n in _names:
        _UNITS[_n] = (_dim, _factor)
# "m" reads as metres only after a number without a scale; as a scale word it means million.
_UNIT_WORDS = sorted((u for u in _UNITS if u not in {"$", "€", "£"}), key=len, reverse=True)

_WORD_NUMBERS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13,
    "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18,
    "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60,
    "seventy": 70, "eighty": 80, "ninety": 90, "a dozen": 12, "dozen": 12, "a hundred": 100,
    # counts said as adverbs: "won the Super Bowl once" answers "how many times" with 1
    "once": 1, "twice": 2, "thrice": 3,
}  # fmt: skip
#: Ordinal words, read as the number they rank ("the seventh" for 7) only when that is the gold
#: value: "the first album in 1990" asserts no count, so a different ordinal is no conflict.
_ORDINAL_WORDS = {
    "first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7,
    "eighth": 8, "ninth": 9, "tenth": 10, "eleventh": 11, "twelfth": 12, "thirteenth": 13,
    "fourteenth": 14, "fifteenth": 15, "sixteenth": 16, "seventeenth": 17, "eighteenth": 18,
    "nineteenth": 19, "twentieth": 20, "twenty-first": 21, "twenty first": 21,
}  # fmt: skip

_NUM = re.compile(
    r"(?<![\w.,/-])(?P<cur>[$€£])?\s?(?P<sign>[-+])?"
    r"(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?"  # 1,234,567.89
    r"|\d{1,3}(?:\.\d{3}){2,}(?:,\d+)?"  # 1.234.567,89
    r"|\d{1,3}(?:[ \u00a0\u202f\u2009]\d{3})+(?:[.,]\d+)?"  # 1 234 567
    r"|\d+,\d{1,2}(?!\d)"  # 12,5 (decimal comma)
    r"|\d*\.\d+|\d+)"
    r"(?:\s?(?P<scale>thousand|million|billion|trillion|mio|mn|bn|tn|k|m|b)\b)?"
    r"\s?(?P<pct>%|percent\b|per cent\b|pct\b)?"
    r"(?:\s?(?P<unit>" + "|".join(re.escape(u) for u in _UNIT_WORDS) + r")\b)?"
)
_WORDS = re.compile(
    r"\b(?P<tens>twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety)[- ]"
    r"(?P<ones>one|two|three|four|five|six|seven|eight|nine)\b"
    r"|\b(?P<word>" + "|".join(sorted(_WORD_NUMBERS, key=len, reverse=True)) + r")\b"
)
_HAS_DIGIT = re.compile(r"\d")
#: The word each match of :data:`_WORDS` ends or starts on, as a whole run of letters (its
#: ``\b`` on both sides): a text with none of them has no number word, found by one scan for
#: letter runs and a set test instead of the alternation tried at every position.
_LETTERS = re.compile(r"[a-z]+")
_WORD_GATE = frozenset(w.rsplit(" ", 1)[-1] for w in _WORD_NUMBERS) | {
    "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety",
}  # fmt: skip
#: Words after which "one" stands for a thing named before ("questions like this one", "the
#: right one", "no one"), not for the number 1.
_PRONOUN_ONE = re.compile(
    r"\b(?:this|that|which|each|every|any|no|the|another|last|same|other|right|wrong|"
    r"good|new|old|little|big|latter|former|such)\s+$"
)
#: A digit run written as an ordinal ("19th", "22nd", "1st"): a rank, not a quantity.
_ORDINAL_SUFFIX = re.compile(r"(?:st|nd|rd|th)\b")
#: Vague spans of years: a decade ("1990s", "1990's", "the '90s", "the nineties"), a century
#: ("19th century", "the nineteenth century", "the 1800s"). A vague answer is consistent with a
#: gold inside its span and contradicts one outside it, but never *is* the value.
_DECADE_WORDS = {
    "twenties": 20, "thirties": 30, "forties": 40, "fifties": 50, "sixties": 60,
    "seventies": 70, "eighties": 80, "nineties": 90,
}  # fmt: skip
_VAGUE = re.compile(
    r"(?<![\w.,/-])(?P<decade>\d{3}0)\s?'?s\b"
    r"|(?<![\w])'(?P<short>\d0)\s?'?s\b"
    r"|\b(?P<cent>\d{1,2})(?:st|nd|rd|th)[- ]century\b"
    r"|\b(?P<centw>" + "|".join(w for w in _ORDINAL_WORDS if " " not in w) + r")[- ]century\b"
    r"|\b(?:the\s+)?(?P<dword>" + "|".join(_DECADE_WORDS) + r")\b"
)
#: What every vague span holds (a decade's "0s"/"0's", "century", a decade word's "ties") or an
#: ordinal word: one quick search that most texts fail, before the patterns proper.
_RARE_GATE = re.compile(r"0'?\s?s\b|centur|ties\b|first|second|third|[fxhnr]th\b|tieth|elfth")
_VAGUE_GATE = re.compile(r"0'?\s?s\b|centur|ties\b")
#: A piece of text every match of :data:`_RARE_GATE` holds (its "0", "ties", "[fxhnr]th", …):
#: a few substring tests rule the search out for most texts without a "0".
_RARE_PIECES = ("0", "centur", "ties", "first", "second", "third", "tieth", "fth", "xth", "hth",
                "nth", "rth")  # fmt: skip

#: Words that say a number is rounded ("about 380,000", "some 30 staff", "~40").
_APPROX_WORDS = (
    "about", "around", "approximately", "approx", "roughly", "nearly", "almost", "some", "circa",
    "ca", "c", "over", "under", "more than", "less than", "fewer than", "up to", "close to",
    "just over", "just under", "estimated", "est",
)  # fmt: skip
_APPROX_CUE = re.compile(r"(?:\b(?:" + "|".join(_APPROX_WORDS) + r")\.?|~|≈)\s*$")
#: What the text before a number must end with (white space aside) for :data:`_APPROX_CUE` to
#: match there: one ``endswith`` rules most numbers out, where the pattern, anchored at its
#: end, is tried at every position of the text before it.
_APPROX_ENDS = (*_APPROX_WORDS, *(f"{w}." for w in _APPROX_WORDS), "~", "≈")
#: Trailing zeros that read as rounding even without a cue ("4,000 employees", "1,200,000").
_ROUNDED_ZEROS = 3


#: A rounded number further than this from the gold value is another value unless the text says
#: it is approximate: "3 million" is not a rounding of 2.5 million, "about 3 million" may be.
ROUNDING_MAX_REL = 0.1


class NumberMatch(StrEnum):
    FOUND = "found"
    APPROX = "approx"  # consistent with the gold value at the response's stated precision only
    CONFLICT = "conflict"
    ABSENT = "absent"


@dataclass(frozen=True, slots=True)
class NumberMention:
    """A number as written: its value, the unit of its last written digit, percent and unit."""

    value: float
    precision: float  # e.g. 1000 for "385,000" or "385 thousand"; 0.01 for "3.14"
    percent: bool
    unit: tuple[str, float] | None
    span: tuple[int, int]
    approx: bool = False  # the text says it is approximate ("about", "around", "~")
    #: a rank ("22nd", "seventh"): the gold value when equal, no conflicting value otherwise
    ordinal: bool = False
    #: a vague span (a decade, a century): ``(first, last)`` inclusive; ``value`` is its middle
    vague: tuple[float, float] | None = None


_DOTTED_THOUSANDS = re.compile(r"\d{1,3}(?:\.\d{3}){2,}(?:,\d+)?")
_DECIMAL_COMMA = re.compile(r"\d+,\d{1,2}")


def _digits_value(raw: str) -> tuple[float, float]:
    """Value and precision of a digit string with any of the separators the regex allows."""
    if raw.isdecimal():  # digits alone (most numbers): no separator to read
        trailing = len(raw) - len(raw.rstrip("0")) if raw.strip("0") else 0
        return float(raw), 10.0**trailing
    s = raw.replace("\u00a0", " ").replace("\u202f", " ").replace("\u2009", " ")
    if _DOTTED_THOUSANDS.fullmatch(s):
        s = s.replace(".", "").replace(",", ".")
    elif _DECIMAL_COMMA.fullmatch(s):
        s = s.replace(",", ".")
    else:
        s = s.replace(",", "").replace(" ", "")
    if "." in s:
        decimals = len(s) - s.index(".") - 1
        return float(s), 10.0**-decimals
    trailing = len(s) - len(s.rstrip("0")) if s.strip("0") else 0
    return float(s), 10.0**trailing


def extract_numbers(text: str, *, folded: bool = False) -> list[NumberMention]:
    """Every number written in ``text`` (digits or number words)."""
    t = text if folded else fold(text)
    out: list[NumberMention] = []
    vague_spans: list[tuple[int, int]] = []
    rare = _has_piece(t, _RARE_PIECES) and _RARE_GATE.search(t) is not None
    if rare and _VAGUE_GATE.search(t):
        for m in _VAGUE.finditer(t):
            spans = [_vague_span(m)]
            if m["dword"]:  # "in her thirties" is an age as often as a decade: both readings
                spans.append((_DECADE_WORDS[m["dword"]], _DECADE_WORDS[m["dword"]] + 9))
            for lo, hi in spans:
                out.append(NumberMention((lo + hi) / 2, hi - lo + 1, False, None, m.span(), True,
                                         vague=(lo, hi)))  # fmt: skip
            vague_spans.append(m.span())
    if _HAS_DIGIT.search(t):
        for m in _numbers_written(t):
            if vague_spans and any(a <= m.start() < b for a, b in vague_spans):
                continue
            value, precision = _digits_value(m["num"])
            start = m.start()
            cue = t[:start].rstrip().endswith(_APPROX_ENDS) and (
                _APPROX_CUE.search(t, 0, start) is not None
            )
            if 1 < precision < 10**_ROUNDED_ZEROS and not cue:
                # "30 years old" states 30, not "31 rounded to the ten": a number with one or
                # two trailing zeros is exact unless the text says it is approximate.
                precision = 1.0
            if m["sign"] == "-":
                value = -value
            scale = m["scale"]
            unit_word = m["unit"]
            if scale == "m" and unit_word is None and m["cur"] is None and not m["pct"]:
                # "5 m" without a currency is metres; "$5 m" is five million dollars.
                scale, unit_word = None, "m"
            if scale:
                factor = _SCALES[scale]
                value, precision = value * factor, precision * factor
            unit = _UNITS.get(unit_word) if unit_word else None
            if m["cur"]:
                unit = _UNITS[m["cur"]]
            ordinal = (
                not scale and unit is None and not m["pct"] and m["num"].isdigit()
                and _ORDINAL_SUFFIX.match(t, m.end()) is not None
            )  # fmt: skip
            out.append(
                NumberMention(value, precision, bool(m["pct"]), unit, m.span(), cue, ordinal)
            )
    for m in () if _WORD_GATE.isdisjoint(_LETTERS.findall(t)) else _WORDS.finditer(t):
        if vague_spans and any(a <= m.start() < b for a, b in vague_spans):
            continue
        if m["word"] == "one" and _PRONOUN_ONE.search(t, 0, m.start()):
            continue  # "this one", "the one", "each one": a pronoun, not a count
        if m["tens"]:
            value = float(_WORD_NUMBERS[m["tens"]] + _WORD_NUMBERS[m["ones"]])
        else:
            value = float(_WORD_NUMBERS[m["word"]])
        out.append(NumberMention(value, 1.0, False, None, m.span()))
    if len(out) > 1 and _HAS_DIGIT.search(t):
        out = _compound_durations(t, out)
    if rare:
        for m in _ORDINALS.finditer(t):
            if vague_spans and any(a <= m.start() < b for a, b in vague_spans):
                continue
            value = float(_ORDINAL_WORDS[m[0].replace("-", " ")])
            out.append(NumberMention(value, 1.0, False, None, m.span(), ordinal=True))
    return out


def _has_piece(t: str, pieces: tuple[str, ...]) -> bool:
    for p in pieces:  # noqa: SIM110 — a loop, not any() over a generator: a dozen tests
        if p in t:
            return True
    return False


#: How far before its first digit a match of :data:`_NUM` may start: a currency sign, a space
#: and a sign, and the point of ".5".
_NUM_LEAD = 4


def _numbers_written(t: str) -> Iterator[re.Match[str]]:
    """``_NUM.finditer(t)``, each search started a few characters before the next digit: the
    pattern, with no literal prefix, is otherwise tried at every position of the text between
    numbers (its look-behind still reads the characters before the start)."""
    pos, n = 0, len(t)
    while pos < n:
        d = _HAS_DIGIT.search(t, pos)
        if d is None:
            return
        m = _NUM.search(t, max(pos, d.start() - _NUM_LEAD))
        if m is None:
            return
        yield m
        pos = m.end()


_JOINER = re.compile(r"\s*(?:,|and|,\s*and)?\s*")


def _compound_durations(t: str, found: list[NumberMention]) -> list[NumberMention]:
    """The duration "3 hours and 48 minutes" is one amount (228 minutes), not two numbers:
    consecutive amounts of time joined by nothing, a comma or "and" are summed, in the smaller
    unit."""
    out: list[NumberMention] = []
    for n in sorted(found, key=lambda m: m.span):
        prev = out[-1] if out else None
        if (
            prev is not None
            and prev.unit is not None
            and n.unit is not None
            and prev.unit[0] == n.unit[0] == "time"
            and prev.unit[1] > n.unit[1]
            and _JOINER.fullmatch(t, prev.span[1], n.span[0])
        ):
            # in the smaller unit, as said: "3 hours and 48 minutes" is 228 minutes
            value = (prev.value * prev.unit[1] + n.value * n.unit[1]) / n.unit[1]
            out[-1] = NumberMention(value, n.precision, False, n.unit,
                                    (prev.span[0], n.span[1]), prev.approx or n.approx)  # fmt: skip
            continue
        out.append(n)
    return out


_ORDINALS = re.compile(
    r"\b(?:" + "|".join(sorted((w.replace(" ", "[- ]") for w in _ORDINAL_WORDS), key=len,
                               reverse=True)) + r")\b"
)  # fmt: skip


def _vague_span(m: re.Match[str]) -> tuple[int, int]:
    """The years a decade or century mention spans (inclusive)."""
    if m["decade"]:
        start = int(m["decade"])
        # "the 1800s" is a century, "the 1990s" a decade
        return (start, start + 99) if start % 100 == 0 else (start, start + 9)
    if m["short"]:
        return 1900 + int(m["short"]), 1900 + int(m["short"]) + 9
    if m["dword"]:
        start = 1900 + _DECADE_WORDS[m["dword"]]
        return start, start + 9
    n = int(m["cent"]) if m["cent"] else _ORDINAL_WORDS[m["centw"]]
    # the 19th century is 1801-1900 strictly and 1800-1899 as people say it: either reading
    return 100 * (n - 1), 100 * n


_SMALL_WORDS = {w: v for w, v in _WORD_NUMBERS.items() if " " not in w and v < 100}
_SMALL_WORDS.pop("dozen")
for _w in ("once", "twice", "thrice"):
    _SMALL_WORDS.pop(_w)
_MULTIPLIERS = {"hundred": 100, "thousand": 1_000, "million": 1_000_000, "billion": 10**9}


def words_value(text: str) -> float | None:
    """A whole text that is a number written in English words ("one thousand, nine hundred and
    fifty-one", "twelve", "eighteen million"), or None."""
    words = [w for w in re.split(r"[\s,-]+", fold(text).strip()) if w and w != "and"]
    if not words:
        return None
    total = current = 0
    seen = False
    for w in words:
        if w in _SMALL_WORDS:
            v = _SMALL_WORDS[w]
            rest = current % 100
            # "twenty one" and "one hundred twelve", never "forty forty" or "one two"
            if rest and (v >= 10 or rest < 20 or rest % 10):
                return None
            current += v
        elif w in _MULTIPLIERS and not current:
            # a scale with no count before it is a word, not a number: a gold 'Billion' (a
            # name) was read as 10^9 and 'It is Billion.' judged number_missing
            return None
        elif w == "hundred":
            current *= 100
        elif w in _MULTIPLIERS:
            total += current * _MULTIPLIERS[w]
            current = 0
        else:
            return None
        seen = True
    return float(total + current) if seen else None


@lru_cache(maxsize=65_536)
def parse_gold_number(text: str) -> NumberMention | None:
    """The gold value as a single number, or None when it is not exactly one number. A value
    written in words ("twelve", "one thousand, nine hundred and fifty-one") is that number."""
    value = words_value(text) if not _HAS_DIGIT.search(text) else None
    if value is not None:
        return NumberMention(value, 1.0, False, None, (0, len(text)))
    found = extract_numbers(text.strip())
    # a decade or a rank ("1990s", "7th") is no single number: such a gold is compared as text
    return found[0] if len(found) == 1 and found[0].vague is None and not found[0].ordinal else None


def _candidates(r: NumberMention, gold: NumberMention) -> list[float]:
    """The values a response number may stand for, in the gold value's scale and unit."""
    if r.unit and gold.unit:
        if r.unit[0] != gold.unit[0]:
            return []
        factor = r.unit[1] / gold.unit[1]
    else:
        factor = 1.0
    v = r.value * factor
    if r.percent and not gold.percent:
        return [v, v / 100.0]  # "12.5%" for a gold ratio 0.125, or for a gold 12.5 (percent)
    if gold.percent and not r.percent:
        return [v, v * 100.0]
    return [v]


def match_number(
    gold: NumberMention,
    mentions: list[NumberMention],
    *,
    rel_tol: float = 0.01,
    ignore: frozenset[float] = frozenset(),
) -> NumberMatch:
    """How the response's numbers relate to the gold value.

    FOUND: some mention equals the gold value rounded to the mention's precision and is within
    ``rel_tol`` of it. APPROX: rounding-consistent but further off. CONFLICT: numbers are written,
    none consistent (numbers the query itself contains are ignored).
    """
    approx = conflict = False
    g = gold.value
    for r in mentions:
        if r.vague is not None:
            # a decade or a century: consistent with a gold inside it, never the value itself
            if r.vague[0] <= g <= r.vague[1] and not gold.percent and gold.unit is None:
                approx = True
            elif r.value not in ignore:
                conflict = True
            continue
        if r.ordinal:
            # a rank is the gold value when equal ("the 22nd Amendment" for 22), else no claim
            if not r.percent and math.isclose(r.value, g, rel_tol=1e-9, abs_tol=1e-12):
                return NumberMatch.FOUND
            continue
        cands = _candidates(r, gold)
        for v in cands:
            if math.isclose(v, g, rel_tol=1e-9, abs_tol=1e-12):
                return NumberMatch.FOUND
            prec = r.precision * (abs(v / r.value) if r.value else 1.0)
            if abs(v - g) <= prec / 2 + 1e-9 * max(1.0, abs(g)):
                if abs(v - g) <= rel_tol * abs(g):
                    return NumberMatch.FOUND
                if r.approx or abs(v - g) <= ROUNDING_MAX_REL * abs(g):
                    approx = True
        if not approx and r.value not in ignore:
            conflict = True
    if approx:
        return NumberMatch.APPROX
    if conflict:
        return NumberMatch.CONFLICT
    return NumberMatch.ABSENT


def is_unit_or_scale(word: str) -> bool:
    """Whether ``word`` (any case) is a unit or a scale word a number may be written with ("km",
    "Million"): after a decimal it makes the decimal a measure, never a footnote."""
    w = word.lower()
    return w in _UNITS or w in _SCALES or w in ("percent", "pct")
