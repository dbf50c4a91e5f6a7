"""The statement a driver is handed for a checked query: real bind parameters, nothing spliced.

The read gate (:mod:`groundwatch.core.generation.sql_gate`) checks a parsed tree; this module
prints that tree for one DB-API parameter style so that the driver finds a parameter marker at
each of the tree's placeholder nodes and nowhere else. The markers come from the nodes, never from
scanning the text: each placeholder is printed as a sentinel made of control characters (which no
accepted text contains — the gate refuses them), the sentinels are cut out of sqlglot's printing,
and the text between them is escaped for the driver:

* ``percent``: the driver formats the *whole* string with ``%``, inside string literals too, and
  ``%%`` stands for ``%`` (psycopg, psycopg2, PyMySQL, mysqlclient; psycopg2 and PyMySQL then
  splice the quoted value into the SQL on the client). Every ``%`` sqlglot printed is doubled, so
  a ``%(name)s`` or ``%s`` written inside a literal reaches the server as those characters.
* ``engine``: the database engine itself reads the markers while it parses (sqlite3), so a
  ``:name`` inside a string literal is that literal's text.
* ``unknown``: any other driver. Its marker character (``%``, ``:`` or ``?`` by style) must appear
  nowhere else in the printed statement, since how it scans the text is not known.

Then the printed statement, read back the way the driver hands it to the server, is parsed again
and must be the tree that was checked, so a printing that would change what runs is refused.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from typing import Any, Literal

from sqlglot import exp

from groundwatch.errors import UnsafeSQL

#: Who reads a driver's markers, which decides how the text around them is written (see above).
Reader = Literal["engine", "percent", "unknown"]
#: The styles each reader can be handed safely.
_STYLES: dict[str, frozenset[str]] = {
    "engine": frozenset({"named"}),
    "percent": frozenset({"pyformat", "format"}),
    "unknown": frozenset({"pyformat", "format", "named", "qmark"}),
}
_MARKERS = {"pyformat": "%(p{n})s", "format": "%s", "named": ":p{n}", "qmark": "?"}
_SPECIAL = {"pyformat": "%", "format": "%", "named": ":", "qmark": "?"}
#: Values a parameter may hold: one scalar (a list or mapping would be expanded by some drivers
#: into several values or an array, changing the statement's shape).
SCALARS = (str, int, float, Decimal, bool, date, datetime, time, timedelta, bytes, type(None))
_SENTINEL = re.compile("\x01([0-9]+)\x02")


@dataclass(frozen=True, slots=True)
class BoundStatement:
    """The driver's text and, for each of its markers in order, the placeholder it stands for."""

    text: str
    paramstyle: str
    markers: tuple[str, ...]
    names: tuple[str, ...]

    def args(self, params: Mapping[str, Any] | None) -> dict[str, Any] | list[Any]:
        """The driver's parameters for ``params`` (placeholder name → value): a mapping for the
        named styles, a list in marker order for the positional ones. A missing or non-scalar
        value is :class:`UnsafeSQL`: nothing is sent."""
        given = params or {}
        values: dict[str, Any] = {}
        for i, name in enumerate(self.names):
            if name not in given:
                raise UnsafeSQL(f"no value for placeholder :{name}")
            value = given[name]
            if not isinstance(value, SCALARS):
                raise UnsafeSQL(
                    f"placeholder :{name} holds a {type(value).__name__}, not a single value"
                )
            values[f"p{i}"] = value
        if self.paramstyle in ("named", "pyformat"):
            return values
        return [values[m] for m in self.markers]


def bind(
    stmt: exp.Expression, dialect: str, paramstyle: str, *, reader: Reader = "unknown"
) -> BoundStatement:
    """``stmt`` printed in ``dialect`` with one ``paramstyle`` marker per placeholder node, for a
    driver whose markers ``reader`` reads; :class:`UnsafeSQL` when no safe printing exists."""
    if paramstyle not in _STYLES[reader]:
        raise UnsafeSQL(
            f"forbidden_construct: parameter style {paramstyle!r} is not supported here"
        )
    names: list[str] = []

    def swap(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Placeholder):
            name = node.this
            if not isinstance(name, str) or not name:
                raise UnsafeSQL("placeholder_not_column_equality: positional placeholder")
            if name not in names:
                names.append(name)
            return exp.Var(this=f"\x01{names.index(name)}\x02")
        return node

    printed = stmt.transform(swap, copy=True).sql(dialect=dialect)
    pieces = _SENTINEL.split(printed)
    texts, indices = pieces[0::2], [int(i) for i in pieces[1::2]]
    placeholders = sum(1 for n in stmt.walk() if isinstance(n, exp.Placeholder))
    if len(indices) != placeholders or any("\x01" in t or "\x02" in t for t in texts):
        raise UnsafeSQL("forbidden_construct: the statement's placeholders do not print as markers")
    marker = _MARKERS[paramstyle]
    out: list[str] = []
    for i, chunk in enumerate(texts):
        out.append(_escape(chunk, paramstyle, reader))
        if i < len(indices):
            out.append(marker.format(n=indices[i]))
    bound = BoundStatement(
        text="".join(out),
        paramstyle=paramstyle,
        markers=tuple(f"p{i}" for i in indices),
        names=tuple(names),
    )
    _check_round_trip(stmt, bound, dialect, reader)
    return bound


def _escape(chunk: str, paramstyle: str, reader: Reader) -> str:
    """The text between two markers, as the driver must be given it to send it unchanged."""
    if reader == "percent":
        return chunk.replace("%", "%%")
    if reader == "engine":
        return chunk
    special = _SPECIAL[paramstyle]
    if special in chunk:
        # a driver that fills parameters in on the client might take it for a marker
        raise UnsafeSQL(
            f"forbidden_construct: {special!r} outside a parameter, with a driver that may"
            " bind on the client"
        )
    return chunk


def _check_round_trip(
    stmt: exp.Expression, bound: BoundStatement, dialect: str, reader: Reader
) -> None:
    """The text the server will receive (markers read as the placeholders they stand for) parses
    to the checked tree, or :class:`UnsafeSQL`."""
    import sqlglot
    from sqlglot.errors import SqlglotError

    text = bound.text
    if bound.paramstyle in ("pyformat", "format"):
        pieces = re.split(r"(%%|%\(p[0-9]+\)s|%s)", text)
        seen = iter(bound.markers)
        rebuilt: list[str] = []
        for piece in pieces:
            if piece == "%%" and reader == "percent":
                rebuilt.append("%")
            elif piece.startswith("%(") or piece == "%s":
                rebuilt.append(f":{next(seen)}")
            elif "%" in piece:
                raise UnsafeSQL("forbidden_construct: a lone '%' in the printed statement")
            else:
                rebuilt.append(piece)
        text = "".join(rebuilt)
    elif bound.paramstyle == "qmark":
        seen = iter(bound.markers)
        text = re.sub(r"\?", lambda _: f":{next(seen)}", text)
    names = {f"p{i}": name for i, name in enumerate(bound.names)}
    try:
        again = sqlglot.parse_one(text, read=dialect)
    except SqlglotError as e:
        raise UnsafeSQL(f"forbidden_construct: the printed statement does not parse ({e})") from e

    def rename(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Placeholder) and node.this in names:
            return exp.Placeholder(this=names[node.this])
        return node

    if again.transform(rename) != stmt:
        raise UnsafeSQL("forbidden_construct: the printed statement reads differently")
