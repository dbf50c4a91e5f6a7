"""Morphological variants and misspellings: Snowball stems (PyStemmer), edit similarity (rapidfuzz).

"Walmart operates in the retail industry" answers *Retailing*, and "banks" answers *Bank*: the
words differ only by inflection or derivation, which a Snowball stemmer removes (no hand-written
suffix rules). Each token is stemmed with the Snowball stemmer of its script's language where the
script has exactly one (Arabic, Armenian, Cyrillic → Russian, Devanagari → Hindi, Greek, Tamil);
Latin-script text is stemmed as English, the language the judge's refusal and hedge cues read.
Both sides of a comparison are stemmed the same way, so a wrong guess of the language costs
matches, not correctness.

A misspelt database value ("United Kindom") is matched by normalized Indel similarity over a
window of the response, only for values long enough that one slip cannot turn one real name into
another.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache, lru_cache

import regex
import Stemmer
from rapidfuzz import fuzz, process

#: Snowball language per script, for scripts written by one Snowball language (or one dominant).
_SCRIPT_LANGUAGE = {
    "Arabic": "arabic",
    "Armenian": "armenian",
    "Cyrillic": "russian",
    "Devanagari": "hindi",
    "Greek": "greek",
    "Tamil": "tamil",
    "Latin": "english",
}
_SCRIPT = regex.compile(r"\p{Script=(" + "|".join(_SCRIPT_LANGUAGE) + r")}")
_SCRIPT_OF = {name: regex.compile(rf"\p{{Script={name}}}") for name in _SCRIPT_LANGUAGE}

#: Similarity (rapidfuzz ratio, 0–100) from which a response window is read as the gold misspelt.
FUZZY_SCORE = 90
#: Shortest gold value (normalized characters) fuzzy matching is tried for: "Gambia"/"Zambia",
#: "Iran"/"Iraq" are one edit apart and both real.
FUZZY_MIN_CHARS = 8


@cache
def _stemmer(language: str) -> Stemmer._Stemmer:
    return Stemmer.Stemmer(language)


@lru_cache(maxsize=131_072)
def stem(token: str) -> str:
    """The Snowball stem of one normalized token (the token itself for other scripts/digits)."""
    if token.isascii():
        return _stemmer("english").stemWord(token) if token.isalpha() else token
    m = _SCRIPT.search(token)
    if m is None:
        return token
    for name, rx in _SCRIPT_OF.items():
        if rx.match(m.group(0)):
            return str(_stemmer(_SCRIPT_LANGUAGE[name]).stemWord(token))
    return token


#: Stems by token, for :func:`stems`: a plain dict read with ``map(dict.get, …)`` is several
#: times cheaper per token than a bounded ``lru_cache``'s bookkeeping. Cleared when full.
_STEMS: dict[str, str] = {}
_STEMS_MAX = 131_072


def stems(toks: Sequence[str]) -> list[str]:
    """Stems of normalized tokens (cached per token: responses repeat their vocabulary)."""
    out: list[str | None] = list(map(_STEMS.get, toks))
    if None in out:
        if len(_STEMS) >= _STEMS_MAX:
            _STEMS.clear()
        for i, s in enumerate(out):
            if s is None:
                out[i] = _STEMS[toks[i]] = stem(toks[i])
    return out  # type: ignore[return-value]  # every None was filled in


@lru_cache(maxsize=65_536)
def _fuzzy_gold(gold_norm: str) -> bool:
    """Whether a gold may be matched by a near spelling: long enough, and without digits (a
    number one digit off is another number). Cached: golds repeat across every judgement."""
    return len(gold_norm) >= FUZZY_MIN_CHARS and not any(ch.isdigit() for ch in gold_norm)


def fuzzy_window(gold_norm: str, toks: Sequence[str]) -> tuple[int, int, float] | None:
    """The response window most similar to ``gold_norm``: ``(start, end, score)`` above
    :data:`FUZZY_SCORE`, else None (the first of equally similar windows, by size, then start).

    Windows have the gold's token count, one more or one less ("Da Vinci" / "DaVinci"). They
    are scored in one call to the matcher, not one call per window.
    """
    if not _fuzzy_gold(gold_norm):
        return None
    n = gold_norm.count(" ") + 1
    # only whole windows: a response shorter than the window has none of that size
    spans = [
        (i, i + size) for size in {max(1, n - 1), n, n + 1} for i in range(len(toks) - size + 1)
    ]
    if not spans:
        return None
    hit = process.extractOne(
        gold_norm,
        [" ".join(toks[a:b]) for a, b in spans],
        scorer=fuzz.ratio,
        processor=None,
        score_cutoff=FUZZY_SCORE,
    )
    if hit is None:
        return None
    a, b = spans[hit[2]]
    return a, b, hit[1]
