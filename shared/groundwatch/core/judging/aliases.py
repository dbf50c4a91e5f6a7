"""Country aliases from ISO 3166 (pycountry): "USA", "United States", "United States of America".

A database writes a country one way; a response another. The aliases come from pycountry's copy
of the Debian iso-codes data (names, official names, common names, alpha-3 codes and the
translations of the names), not from a hand list. They are used in two directions, with different
care, because the two kinds of mistake cost differently:

* *the gold, named another way* (evidence for ``correct``): every English name, and translations
  that name one country only, so "Deutschland" and "日本" answer "Germany" and "Japan" (in Latin
  script only those of at least :data:`MIN_TRANSLATION_CHARS` letters);
* *another country named* (evidence for ``incorrect``): only the English names that are not also
  the name of a subdivision of some country ("Georgia" is a US state too), and alpha-3 codes
  written in capitals. Short translations are left out here: in some language "End" is India.

Alpha-2 codes are never read as countries in a response ("IT", "AI", "TV", "GB" are everyday
words and units).
"""

from __future__ import annotations

import gettext
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path

import pycountry
import regex
from rapidfuzz import fuzz, process

from groundwatch.core.judging.normalize import normalize

#: Translations shorter than this are too often also a word of another language.
MIN_TRANSLATION_CHARS = 5
#: rapidfuzz ratio (0–100) above which a misspelt gold value ("United Kindom") is read as a
#: country name. Conservative: one edit in a ten-letter name is 95.
FUZZY_COUNTRY_SCORE = 92
_LATIN = regex.compile(r"\p{Script=Latin}")
#: Longest alias, in tokens ("united kingdom of great britain and northern ireland").
_MAX_NGRAM = 8
#: English short names everyone uses that the ISO data lacks (its names are "United Kingdom",
#: "United States"): without them "Either USA or UK" names one country, and "Great Britain"
#: answering *United Kingdom* is not found. Lowercase token forms; "U.S." tokenizes to "u s".
_COMMON_NAMES = {
    "uk": "GB", "u k": "GB", "britain": "GB", "great britain": "GB",
    "u s": "US", "u s a": "US",
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class CountryMention:
    """A country named in a response: its ISO alpha-2 code and token span ``[start, end)``."""

    code: str
    start: int
    end: int


def _english_names(country: object) -> list[str]:
    return [
        v
        for attr in ("name", "official_name", "common_name")
        if isinstance(v := getattr(country, attr, None), str) and v
    ]


@dataclass(frozen=True, slots=True)
class _Index:
    gold: dict[str, str]  # normalized alias -> code, for recognising the gold named another way
    rival: dict[str, str]  # normalized alias -> code, for recognising another country
    alpha3: dict[str, str]  # "USA" -> "US"
    english: dict[str, str]  # normalized English name -> code (fuzzy resolution of a gold value)


def _unique(pairs: Iterable[tuple[str, str]]) -> dict[str, str]:
    """Alias -> code for aliases that name exactly one country."""
    seen: dict[str, str | None] = {}
    for alias, code in pairs:
        if not alias:
            continue
        prev = seen.get(alias, code)
        seen[alias] = code if prev == code else None
    return {a: c for a, c in seen.items() if c is not None}


def _translations() -> list[gettext.NullTranslations]:
    out: list[gettext.NullTranslations] = []
    root = Path(pycountry.LOCALES_DIR)
    for mo in sorted(root.glob("*/LC_MESSAGES/iso3166-1.mo")):  # package data
        with mo.open("rb") as fh:  # package data
            out.append(gettext.GNUTranslations(fh))
    return out


@cache
def _index() -> _Index:
    """Built once, on the first country gold (about half a second with every translation)."""
    english: list[tuple[str, str]] = []
    translated: list[tuple[str, str]] = []
    alpha3: dict[str, str] = {}
    catalogs = _translations()
    for c in pycountry.countries:
        code = str(c.alpha_2)
        alpha3[str(c.alpha_3)] = code
        for name in _english_names(c):
            english.append((normalize(name), code))
            for cat in catalogs:
                local = cat.gettext(name)
                if local != name and (
                    len(local) >= MIN_TRANSLATION_CHARS or not _LATIN.search(local)
                ):
                    translated.append((normalize(local), code))
    subdivisions = {normalize(str(s.name)) for s in pycountry.subdivisions}
    english.extend((alias, code) for alias, code in _COMMON_NAMES.items())
    eng = _unique(english)
    return _Index(
        gold=_unique([*english, *translated]),
        rival={a: c for a, c in eng.items() if a not in subdivisions},
        alpha3=alpha3,
        english=eng,
    )


@lru_cache(maxsize=16_384)
def country_of(value: str) -> str | None:
    """The ISO alpha-2 code a whole value names ("USA", "Viet Nam", "United Kindom"), or None.

    A misspelt value is resolved only when it is long enough for one slip to be told from
    another country (never "Iran" for "Iraq") and its best match is clearly close.
    """
    text = value.strip()
    if not text or any(ch.isdigit() for ch in text):
        return None
    idx = _index()
    if text.upper() in idx.alpha3 and len(text) == 3:
        return idx.alpha3[text.upper()]
    norm = normalize(text)
    if norm in idx.gold:
        return idx.gold[norm]
    if len(norm) >= 8:
        best = process.extractOne(norm, idx.english.keys(), scorer=fuzz.ratio)
        if best is not None and best[1] >= FUZZY_COUNTRY_SCORE:
            return idx.english[best[0]]
    return None


def find_countries(toks: Sequence[str], raw: str, *, gold_code: str | None) -> list[CountryMention]:
    """Countries named in a response (its normalized tokens and its raw text).

    Aliases of ``gold_code`` are read with the wide (gold) index, every other country with the
    narrow (rival) one. Longest match first; a token belongs to one mention at most.
    """
    idx = _index()
    out: list[CountryMention] = []
    i, n = 0, len(toks)
    while i < n:
        hit: CountryMention | None = None
        for size in range(min(_MAX_NGRAM, n - i), 0, -1):
            alias = " ".join(toks[i : i + size])
            code = idx.gold.get(alias)
            if code is not None and code != gold_code:
                code = idx.rival.get(alias)
            if code is not None:
                hit = CountryMention(code, i, i + size)
                break
        if hit is not None:
            out.append(hit)
            i = hit.end
        else:
            i += 1
    taken = {j for m in out for j in range(m.start, m.end)}
    out.extend(m for m in _alpha3_mentions(toks, raw, idx) if m.start not in taken)
    return out


def _alpha3_mentions(toks: Sequence[str], raw: str, idx: _Index) -> list[CountryMention]:
    """Alpha-3 codes written in capitals ("USA", "GBR"), at their token positions."""
    upper = {w for w in _raw_words(raw) if len(w) == 3 and w.isupper() and w in idx.alpha3}
    if not upper:
        return []
    return [
        CountryMention(idx.alpha3[t.upper()], j, j + 1)
        for j, t in enumerate(toks)
        if t.upper() in upper
    ]


def _raw_words(raw: str) -> list[str]:
    return [w.strip(".,;:!?()[]{}\"'") for w in raw.split()]
