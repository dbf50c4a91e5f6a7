"""Answers keep their type: the judge compares dates as dates and numbers as numbers.

A value read from the database becomes a string plus an :class:`AnswerType`. The declared column
kind wins (SQLite stores dates as text), the Python type decides otherwise. Some values are said
the way a person says them (:func:`value_renderer`): a 0/1 flag as yes/no, a date-time at
midnight as its date, money with the currency its column's name gives.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from groundwatch.core.model import AnswerType


def kind_of_value(value: Any) -> AnswerType:
    if isinstance(value, bool):
        return AnswerType.TEXT
    if isinstance(value, int | float | Decimal):
        return AnswerType.NUMBER
    if isinstance(value, dt.date | dt.datetime):
        return AnswerType.DATE
    return AnswerType.TEXT


def format_value(value: Any) -> str:
    """The canonical text of a value: ISO dates, integers without ``.0``, plain decimals."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dt.datetime):
        return value.isoformat(sep=" ") if value.time() != dt.time() else value.date().isoformat()
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, Decimal):
        text = format(value.normalize(), "f")
        return text
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def typed_answer(
    values: tuple[Any, ...], kinds: tuple[AnswerType | None, ...]
) -> tuple[list[str], list[AnswerType]]:
    """Strings and types of one answer tuple (one entry per selected column)."""
    texts: list[str] = []
    types: list[AnswerType] = []
    for v, k in zip(values, kinds, strict=True):
        texts.append(format_value(v))
        types.append(k if k is not None else kind_of_value(v))
    return texts, types


def json_param(value: Any) -> Any:
    """A bound value as it is stored in ``params`` (JSON-safe; dates as ISO text)."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value
    return format_value(value)


_MIDNIGHT = re.compile(r"^(\d{4}-\d{2}-\d{2})[ T]00:00(?::00(?:\.0+)?)?(?:Z|[+-]00:?00)?$")
_YES = frozenset({"1", "true", "t", "yes", "y"})
_NO = frozenset({"0", "false", "f", "no", "n"})
#: Currency words a money column's name may end in (``price_usd``), and how its answer says it.
CURRENCIES = {
    "usd": "USD", "dollars": "USD", "dollar": "USD", "eur": "EUR", "euros": "EUR",
    "euro": "EUR", "gbp": "GBP", "pounds": "GBP", "chf": "CHF", "jpy": "JPY", "yen": "JPY",
}  # fmt: skip


def date_text(text: str) -> str:
    """A date-time at midnight as its date (``2022-04-21 00:00:00`` → ``2022-04-21``): a column
    typed DATETIME that only ever holds days, as SQLite files often store them."""
    m = _MIDNIGHT.match(text)
    return m.group(1) if m else text


def yes_no(value: Any) -> str | None:
    """``yes``/``no`` for a flag's stored value (1/0, true/false, 't'/'f'), None otherwise."""
    text = format_value(value).strip().lower()
    if text in _YES:
        return "yes"
    if text in _NO:
        return "no"
    return None


_UNIT_GOLD = re.compile(r"^-?[\d.]+(?:e[-+]?\d+)? ([A-Z]{3})$")


def rerender(previous: str, value: Any, kind: AnswerType | None) -> str:
    """A value read again from the source in the form its group's gold took when generated.

    A stored group does not carry its column's schema, but its gold shows how
    :func:`value_renderer` said it: a yes/no gold is a flag's (its 0/1 read again is yes/no), a
    gold with a currency code is money's, and a date is a date (a midnight date-time its day).
    Without this the refresh read an unchanged flag's ``1`` as a changed answer: a new version
    whose gold ``1`` made every right "Yes, …" stale, and the group a false gap."""
    text = format_value(value)
    if previous in ("yes", "no"):
        said = yes_no(value)
        if said is not None:
            return said
    if kind is AnswerType.DATE:
        return date_text(text)
    if kind is AnswerType.NUMBER:
        m = _UNIT_GOLD.match(previous)
        if (
            m is not None
            and isinstance(value, int | float | Decimal)
            and not isinstance(value, bool)
        ):
            return f"{text} {m.group(1)}"
    return text


def currency_of(column: str) -> str | None:
    """The currency a column's name says its values are in (``price_usd`` → USD), or None."""
    ws = re.split(r"[^a-z]+", re.sub(r"(?<=[a-z])(?=[A-Z])", " ", column).lower())
    for w in reversed([w for w in ws if w]):
        if w in CURRENCIES:
            return CURRENCIES[w]
    return None


def value_renderer(
    kind: AnswerType | None, flag: bool = False, column: str = "", agg: str = ""
) -> Callable[[Any], str] | None:
    """How one answer column's values become their gold text, or None for :func:`format_value`
    as it is: a flag reads yes/no, a midnight date-time its date, money its currency when the
    column's name gives one ("12.5 USD"; the judge reads the unit and accepts the bare number)."""
    if flag and agg in ("", "max", "min"):

        def flag_text(v: Any) -> str:
            return yes_no(v) or format_value(v)

        return flag_text
    if kind is AnswerType.DATE:
        return lambda v: date_text(format_value(v))
    unit = currency_of(column) if kind is AnswerType.NUMBER and agg != "count" else None
    if unit is not None:
        return lambda v: f"{format_value(v)} {unit}"
    return None
