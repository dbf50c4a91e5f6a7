"""The query port of the generation core, over one SQLAlchemy connection."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from sqlalchemy import Connection, text

_cursor_ids = itertools.count()


class SqlAlchemyPort:
    """Runs validated SQL with bound parameters and streams rows.

    The SQL texts come from :mod:`groundwatch.core.generation` (validated templates and the grouped
    queries derived from them); values always travel as bind parameters. SQLAlchemy compiles the
    statement for the dialect (parameter style, quoting), then rows are read straight from the
    driver's cursor in batches — a server-side cursor on PostgreSQL — so a template with a million
    fills is neither materialised nor wrapped row by row.
    """

    def __init__(self, conn: Connection, *, batch: int = 5000) -> None:
        self._conn = conn
        self._batch = batch

    def rows(self, sql: str, params: Mapping[str, Any] | None = None) -> Iterator[Sequence[Any]]:
        conn = self._conn
        if not conn.in_transaction():
            conn.begin()  # fires the read-only "begin" hook of groundwatch.adapters.sources.connect
        compiled = text(sql).compile(dialect=conn.dialect)
        bound = compiled.construct_params(dict(params or {}))
        args: Any = [bound[k] for k in compiled.positiontup or ()] if compiled.positional else bound
        driver = conn.connection.driver_connection
        assert driver is not None
        if conn.dialect.name == "postgresql" and conn.dialect.driver == "psycopg":
            cursor = driver.cursor(name=f"gw_rows_{next(_cursor_ids)}")
        else:
            cursor = driver.cursor()
        try:
            cursor.execute(compiled.string, args)
            while True:
                batch = cursor.fetchmany(self._batch)
                if not batch:
                    break
                yield from batch
        finally:
            cursor.close()
