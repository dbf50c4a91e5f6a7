"""Answers keep their type: the judge compares dates as dates and numbers as numbers.

A value read from the database becomes a string plus an :class:`AnswerType`. The declared column
kind wins (SQLite stores dates as text), the Python type decides otherwise.
"""

from __future__ import annotations

import datetime as dt
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
