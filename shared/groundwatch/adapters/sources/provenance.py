"""Which database facts a semantic group's answer rests on (table, column, primary key).

Used by the demo domain to know which documents state a group's answer (its relevant documents)
and whether the answer was deliberately left out of the corpus (an injected knowledge gap).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import Connection

from groundwatch.adapters.sources.port import SqlAlchemyPort
from groundwatch.core.generation.grouped import fact_query
from groundwatch.core.generation.schema import SchemaInfo
from groundwatch.core.generation.sql_gate import ReadGate

Fact = tuple[str, str, Any]


def group_facts(
    conn: Connection,
    schema: SchemaInfo,
    sql: str,
    params: Mapping[str, Any],
    gate: ReadGate | None = None,
) -> set[Fact]:
    """The facts read by ``sql`` filled with ``params`` (empty if it cannot be traced).

    The provenance query keeps ``sql``'s conditions, so it runs through the read gate like any
    other text (``gate``, or one over ``schema``); a refused one raises
    :class:`~groundwatch.errors.UnsafeSQL`."""
    fq = fact_query(sql, schema)
    if fq is None:
        return set()
    facts: set[Fact] = set()
    for row in SqlAlchemyPort(conn, gate or ReadGate(schema)).rows(fq.sql, dict(params)):
        for (_alias, table, _pk), columns, key in zip(fq.aliases, fq.columns, row, strict=True):
            for col in columns:
                facts.add((table, col, key))
    return facts
