"""Citation markers read as a person reads them, before any tier looks at the numbers.

RAG endpoints cite their sources, and the markers are digits: "[1]", "¹", "(2)", "【3】", or a
footnote number glued to the word or year it follows ("by Jacob and John Brett in 18501." is 1850
with footnote 1, "Brett1 and" is Brett with footnote 1). Extraction glued to words loses a space
too ("began in2011as", "has3 lines"). Left as they are, a marker is another number in the answer
(a conflict with a numeric gold) or hides one ("18501" is not 1850). A reader drops the markers
and sees the words apart; so does :func:`read_citations`.

Only shapes that are never how a value is written are rewritten: a superscript after a unit
("m²", "km³") is the unit's power, a parenthesised number after a space that goes on with words
is an enumeration ("(1) the port …"), a word of capitals and digits ("A320", "COVID19") is a
name, and so is a word with its number that the question or the gold itself writes ("City3",
"Route66": the database's own spelling is never a footnote).
"""

from __future__ import annotations

import re
from collections.abc import Collection

from groundwatch.core.judging.dates import MONTH_NAME as _MONTH
from groundwatch.core.judging.normalize import word_around
from groundwatch.core.judging.numbers import is_unit_or_scale

#: An ASCII text's characters by class (digit 0, lower-case letter a, clause punctuation .,
#: an opening parenthesis), so that a glued digit ("Brett1", "in2011as"), a long digit run, a
#: digit after a word's punctuation ("Paris.1") or a parenthesised one is found by a few
#: substring tests: Python's regex engine tries an alternation at every position, which cost
#: more than the rest of reading most answers.
_CLASSES = bytes(
    48
    if chr(c).isdigit()
    else 97
    if chr(c).islower()
    else 46
    if chr(c) in ".,;"
    else 40
    if c == 40
    else 32
    for c in range(256)
)

#: Bracketed markers: "[1]", "[1, 2]", "[^3]", "[1-3]", and the full-width 【4】 / 【4†source】.
_BRACKETED = re.compile(r"\s?(?:\[\^?\d{1,3}(?:\s*[,;–-]\s*\^?\d{1,3})*\]|【[^】]{0,40}】)")
#: Superscript digits; a power only after a unit of length ("m²", "km³", "ft²").
_SUPERSCRIPT = re.compile(r"([A-Za-z]*)([⁰¹²³⁴⁵⁶⁷⁸⁹]+)")
_UNITS_WITH_POWERS = frozenset({"m", "cm", "mm", "km", "ft", "in", "mi"})
#: "(1)" glued to what it follows ("Paris(1)") or closing a clause ("… in Paris (1).").
_PAREN = re.compile(r"(?<=[^\s(\d])\(\d{1,2}\)|\s\(\d{1,2}\)(?=\s*(?:[.,;:!?]|$))")
#: A footnote glued after a sentence's or clause's punctuation: "… in Paris.1 The …".
_AFTER_PUNCT = re.compile(r"(?<=[a-z][.,;])\d{1,2}(?=\s|$)", re.IGNORECASE)

#: Short function words after which a glued number is the sentence's own, not a footnote
#: ("in2011", "has3 lines"), and before which a glued number ends ("2011as").
_FUNCTION_WORDS = frozenset(
    {
        "in", "on", "at", "of", "by", "to", "for", "from", "since", "until", "till", "about",
        "around", "over", "under", "has", "had", "have", "is", "was", "are", "were", "be",
        "and", "or", "than", "as", "with", "its", "their", "his", "her", "circa", "year",
        "after", "before", "during", "into", "nearly", "almost", "only", "some", "total",
    }
)  # fmt: skip
#: A word glued to a digit run: the word, the digits, and any letters glued after them.
_GLUED = re.compile(r"(?<![\w])([A-Za-z]+)(\d+)([A-Za-z]*)(?![\w])")
#: Digits glued before a function word: "2011as", "1850and".
_DIGITS_THEN_WORD = re.compile(r"(?<![\w])(\d+)([a-z]+)(?![\w])")
#: A year followed by a glued footnote (1–2 digits, never starting with 0) after a word that
#: introduces a year, or after a day and a month ("4 February 20012,", "February 4, 20012."),
#: ending a clause: "in 18501." is 1850 and footnote 1.
_YEAR_FOOTNOTE = re.compile(
    r"\b((?:in|since|from|until|till|by|circa|year|around|before|after|during|of"
    r"|" + _MONTH + r"|" + _MONTH + r" \d{1,2}(?:st|nd|rd|th)?,) )"
    r"(1\d{3}|20\d{2})[1-9]\d?(?=[.,;:!?)]|\s*$)",
    re.IGNORECASE,
)


#: What :data:`_YEAR_FOOTNOTE` reads from the year on: where it is not, neither is the marker.
_YEAR_RUN = re.compile(r"(?:1\d{3}|20\d{2})[1-9]\d?(?=[.,;:!?)]|\s*$)")
#: The first characters the superscript and digit rules need (the same ``\d`` as theirs).
_ANY_SUPERSCRIPT = re.compile(r"[⁰¹²³⁴⁵⁶⁷⁸⁹]")
_ANY_DIGIT = re.compile(r"\d")

#: A word written with its number, as a name is ("City3", "Route66", "Apollo11b").
_NUMBERED_NAME = re.compile(r"(?<![\w])[A-Za-z]+\d+[A-Za-z]*(?![\w])")


def numbered_names(*texts: str) -> frozenset[str]:
    """The words written with their numbers in ``texts`` (lower-cased): what the question or
    the gold names so is a name, never a word with a footnote."""
    return frozenset(m.group(0).lower() for t in texts for m in _NUMBERED_NAME.finditer(t))


def read_citations(text: str, keep: Collection[str] = frozenset()) -> str:
    """``text`` with its citation markers dropped and glued numbers set apart (see the module's
    docstring); a text without any is returned as it is (the common case). ``keep``: words
    with a number (lower-cased, :func:`numbered_names`) that stay as written."""
    # most answers have no marker: a few C-level tests and one simple search rule them out
    # (a superscript or a full-width bracket is not ASCII), and an ASCII answer with some digit
    # shape runs only the rules that shape can feed (each rule drops digits or adds spaces, so
    # none makes a shape for a later one)
    glued = after = long_run = punct = paren = True
    if text.isascii() and "[" not in text:
        shape = text.encode().translate(_CLASSES)
        # every shape holds a digit; and five substring tests cost less than one search for
        # their alternation, which Python's engine tries at every position
        if b"0" not in shape:
            return text
        glued, after, long_run = b"a0" in shape, b"0a" in shape, b"00000" in shape
        punct, paren = b"a.0" in shape, b"(0" in shape
        if not (glued or after or long_run or punct or paren):
            return text
        out = text
    else:
        # each rule is run only where its first character is: a search for one character
        # class is a fraction of a pattern tried at every position
        out = _BRACKETED.sub(_dropped, text) if "[" in text or "【" in text else text
        if _ANY_SUPERSCRIPT.search(out) is not None:
            out = _SUPERSCRIPT.sub(_power_or_marker, out)
        if _ANY_DIGIT.search(out) is None:
            return out  # every other rule reads a digit
    if paren:
        out = _PAREN.sub(_dropped, out)
    if punct:
        out = _AFTER_PUNCT.sub("", out)
    if long_run and _YEAR_RUN.search(out) is not None:
        out = _YEAR_FOOTNOTE.sub(r"\1\2", out)
    if glued:
        out = _GLUED.sub(
            lambda m: m.group(0) if m.group(0).lower() in keep or _in_address(m) else _unglue(m),
            out,
        )
    return _DIGITS_THEN_WORD.sub(_unglue_after, out) if after else out


#: An e-mail address, a URL or a host name: a run without spaces with an "@", a "://" or a dot
#: between letters or digits ("anders.foss2@example.no", "shop2.example.com").
_ADDRESS = re.compile(r"@|://|\w\w\.\w\w")


def _in_address(m: re.Match[str]) -> bool:
    """Whether the glued digits stand inside an address, where they are its characters, never a
    footnote ("anders.foss2@example.no" is no "anders.foss" with marker 2)."""
    return _ADDRESS.search(word_around(m.string, m.start(), m.end())) is not None


def _unglue(m: re.Match[str]) -> str:
    word, digits, tail = m.group(1), m.group(2), m.group(3)
    if word.lower() in _FUNCTION_WORDS:
        # lost spaces: "in2011as" says "in 2011 as"
        rest = f" {tail}" if tail and tail.lower() in _FUNCTION_WORDS else tail
        return f"{word} {digits}{rest}"
    if tail or len(digits) > 2 or len(word) < 3 or not word[1:].islower():
        return m.group(0)  # a code or a name written with its number ("A320", "Apollo11b")
    return word  # a footnote on a word: "Brett1"


def _unglue_after(m: re.Match[str]) -> str:
    digits, tail = m.group(1), m.group(2)
    return f"{digits} {tail}" if tail in _FUNCTION_WORDS else m.group(0)


def _power_or_marker(m: re.Match[str]) -> str:
    word = m.group(1)
    if word.lower() in _UNITS_WITH_POWERS:
        return m.group(0)
    return word + _boundary(m)


def _dropped(m: re.Match[str]) -> str:
    return _boundary(m)


def _boundary(m: re.Match[str]) -> str:
    """What a dropped marker leaves: a space where a word follows it ("Paris[1]is" is two
    words), nothing before punctuation, a space or the end."""
    nxt = m.string[m.end() : m.end() + 1]
    return " " if nxt and (nxt.isalnum() or nxt == "_") else ""


#: A number with a one- or two-digit fraction at a sentence's end: a capitalised word after a
#: space ("352.1 See the records"), or the text's end ("It is 352.1"); its integer part plain or
#: in comma-separated thousands ("70,000.1 See").
_FOOTNOTED_NUMBER = re.compile(
    r"(?<![\w.,])(\d{1,3}(?:,\d{3})+|\d+)\.(\d{1,2})(?:\s+([A-Z][a-z]*)|\s*$)"
)


def footnoted_numbers(text: str) -> list[tuple[int, str, bool]]:
    """The numbers of ``text`` that may be an integer with a footnote glued to it: each as its
    integer, the number as written, and whether the text ends there.

    "The records say 352.1 See the records." is 352 with footnote 1 as a person reads it: a
    sentence that ended on the decimal 352.1 would end with a full stop, and here the fraction
    is glued where a footnote goes and the next sentence starts. At the text's end ("It is
    352.1") the two readings are alike ("The length is 57.3" is a plain decimal), so the caller
    takes it as neither. A unit or a scale word after it ("3.5 Million", "352.1 Km") makes it a
    measure: no footnote."""
    out: list[tuple[int, str, bool]] = []
    for m in _FOOTNOTED_NUMBER.finditer(text):
        nxt = m.group(3)
        if nxt is not None and is_unit_or_scale(nxt):
            continue
        out.append((int(m.group(1).replace(",", "")), f"{m.group(1)}.{m.group(2)}", nxt is None))
    return out
