"""Text normalization shared by every deterministic tier.

Both sides of a comparison go through the same function, so that "The 'Eco Retreat'" and
"eco retreat" compare equal and a containment test on padded, space-separated tokens is a word-
boundary test for free (``" marie curie " in " the director is marie curie "``).

Marks (Unicode category M) are handled by what they are, not by code-point ranges: a mark with the
Unicode ``Diacritic`` property (Latin accents, Arabic harakat, Hebrew points, the Devanagari
virama and nukta, Thai tone marks) is dropped, as accent folding does (UTR #30); a mark that *is*
a letter of its script (Indic and Thai vowel signs, which carry the ``Alphabetic`` property and
no ``Diacritic`` one) is kept, so "कमल" and "कोमल" stay different words. Either way a mark is a
word character: it never splits a word ("हिन्दी भाषा" is two tokens, not five). Scripts
written without spaces (Chinese, Japanese) have no word boundaries at all: there each
character is a token, so "東京" is found in "本社は東京にあります" as it is in a spaced language.
"""

from __future__ import annotations

import unicodedata
from functools import lru_cache

import regex

#: SQuAD-style: articles carry no answer content, so they are dropped on both sides.
ARTICLES = frozenset({"a", "an", "the"})

#: Words that carry no answer content when counting token overlap. Kept small on purpose: a word
#: like "not" or "no" changes an answer's meaning and must never be dropped.
STOPWORDS = frozenset(
    {
        "a", "an", "the", "of", "and", "or", "in", "on", "at", "to", "for", "by", "with", "from",
        "is", "was", "are", "were", "be", "been", "it", "its", "this", "that", "as", "s",
    }
)  # fmt: skip

_QUOTES = str.maketrans(
    {
        "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u2032": "'",
        "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u2033": '"',
        "\u2013": "-", "\u2014": "-", "\u2212": "-", "\u00a0": " ", "\u2009": " ", "\u202f": " ",
    }
)  # fmt: skip

#: Non-word runs. ``regex``'s ``\w`` counts marks as word characters (the standard library's does
#: not, which split words at every Indic vowel sign and Arabic haraka).
_NON_WORD = regex.compile(r"[\W_]+")
#: ASCII punctuation to spaces: ``bytes.translate`` + ``split`` is the fastest tokenizer in CPython.
_ASCII_PUNCT = bytes(c if chr(c).isalnum() else 32 for c in range(256))
_DIACRITIC_MARKS = regex.compile(r"[\p{M}&&\p{Diacritic}]+", regex.V1)
#: Chinese and Japanese are written without spaces between words: there are no word boundaries to
#: find, so each character is a token, as the usual character-level F1 for Chinese does; runs of
#: other scripts stay whole ("2024年" → 2024, 年). (Thai, Lao, Khmer and Burmese letters are not
#: split: their vowels are letters of their own, and spaces separate phrases.)
_UNSEGMENTED = r"\p{Han}\p{Hiragana}\p{Katakana}"
_HAS_UNSEGMENTED = regex.compile(f"[{_UNSEGMENTED}]")
_UNSEGMENTED_PIECES = regex.compile(f"[{_UNSEGMENTED}]\\p{{M}}*|[^{_UNSEGMENTED}]+")


def fold(text: str) -> str:
    """Unicode-fold and lowercase: NFKD, diacritics dropped, typographic quotes/dashes made ASCII.

    NFKD first, so that a precomposed "é" and "e" + combining acute fold the same; NFC after the
    diacritics are gone, so that what remains (Hangul syllables, Indic vowel signs) is in one
    canonical form whichever form the text came in. Kept separate from :func:`normalize` because
    date, number and refusal detection need the punctuation that normalization removes.
    """
    if text.isascii():  # the common case, and the hot path of the judge
        return text.lower()
    text = unicodedata.normalize("NFKD", text.translate(_QUOTES))
    return unicodedata.normalize("NFC", _DIACRITIC_MARKS.sub("", text)).casefold()


def tokens(text: str, *, folded: bool = False) -> list[str]:
    """Folded word tokens without punctuation and articles."""
    t = text if folded else fold(text)
    if t.isascii():
        return [w for w in t.encode().translate(_ASCII_PUNCT).decode().split() if w not in ARTICLES]
    words = [w for w in _NON_WORD.split(t) if w and w not in ARTICLES]
    if not _HAS_UNSEGMENTED.search(t):
        return words
    out: list[str] = []
    for w in words:
        out.extend(_UNSEGMENTED_PIECES.findall(w) if _HAS_UNSEGMENTED.search(w) else (w,))
    return out


def folded_tokens(text: str) -> tuple[str, list[str]]:
    """``(fold(text), tokens(text))`` in one call: the judge parses every response so, and an
    ASCII text (most answers) is lowered and split without the two calls' own tests."""
    if text.isascii():
        t = text.lower()
        return t, [
            w for w in t.encode().translate(_ASCII_PUNCT).decode().split() if w not in ARTICLES
        ]
    t = fold(text)
    return t, tokens(t, folded=True)


def normalize(text: str) -> str:
    """Folded, punctuation-free, article-free, single-spaced text."""
    return " ".join(tokens(text))


@lru_cache(maxsize=65_536)
def normalize_cached(text: str) -> str:
    """:func:`normalize` for gold values, which repeat across every text form of a group."""
    return normalize(text)


def content_tokens(text: str) -> list[str]:
    """Tokens that carry answer content (stopwords dropped), for token precision/recall."""
    return [t for t in tokens(text) if t not in STOPWORDS]


def padded(text_normalized: str) -> str:
    """Space-padded so that ``f" {gold} " in padded(resp)`` tests containment on word boundaries."""
    return f" {text_normalized} "


def word_around(text: str, start: int, end: int) -> str:
    """The run of ``text`` without white space that holds ``text[start:end]``: the whole e-mail
    address or link a match stands in ("thea.dahl30@example.no")."""
    a = max(text.rfind(" ", 0, start), text.rfind("\n", 0, start)) + 1
    ends = [i for i in (text.find(" ", end), text.find("\n", end)) if i >= 0]
    return text[a : min(ends, default=len(text))]
