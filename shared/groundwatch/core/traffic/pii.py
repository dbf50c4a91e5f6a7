"""Personal data masked in users' free text (``GW_PII``) before a record is grounded, stored or
published: e-mail addresses, phone numbers, national ids and IBANs, each replaced by a marker
that says what stood there.

Free text, unlike a column's sampled values, mixes personal data with the facts the judge
reads: an answer's "320" or "12345678" must survive, so a phone number is only a number written
the way phones are (a leading ``+``, or groups of digits split by separators), never a bare run
of digits.
"""

from __future__ import annotations

import re

_EMAIL = re.compile(r"[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,}")
_NATIONAL_ID = re.compile(
    r"\b(?:\d{3}-\d{2}-\d{4}"  # US social security number
    r"|[A-Z]{2}\s?\d{2}\s?\d{2}\s?\d{2}\s?[A-D]"  # UK national insurance number
    r"|[A-Z]{2}\d{2}(?:\s?[A-Z0-9]{4}){2,7}(?:\s?[A-Z0-9]{1,4})?)\b"  # IBAN, grouped or not
)
_PHONE = re.compile(
    r"(?<![\w+])(?:"
    r"\+\d{1,3}[\s.\-]?(?:\(\d{1,4}\)[\s.\-]?)?\d{1,4}(?:[\s.\-]?\d{2,4}){1,4}"  # +44 20 7946 0958
    r"|\(\d{2,4}\)[\s.\-]?\d{3,4}[\s.\-]\d{3,4}"  # (020) 7946 0958
    r"|\d{3}[.\-]\d{3}[.\-]\d{4}"  # 555-123-4567
    r")(?!\w)"
)

#: (marker, pattern), most specific first: an IBAN holds digit runs a phone could claim.
_DETECTORS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("[email]", _EMAIL),
    ("[id]", _NATIONAL_ID),
    ("[phone]", _PHONE),
)


def redact(text: str) -> str:
    """``text`` with every e-mail address, national id, IBAN and phone number masked."""
    for marker, pattern in _DETECTORS:
        text = pattern.sub(marker, text)
    return text
