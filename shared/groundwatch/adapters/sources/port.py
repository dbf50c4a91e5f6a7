"""The query port of the generation core over one SQLAlchemy connection: the only way an SQL text
reaches a source database, and the place the read gate stands."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from sqlalchemy import Connection
from sqlalchemy.exc import DBAPIError

from groundwatch.adapters.sources.connect import SourceConnection
from groundwatch.core.generation.schema import SchemaInfo
from groundwatch.core.generation.sql_binding import BoundStatement, Reader
from groundwatch.core.generation.sql_gate import ReadGate

_cursor_ids = itertools.count()
#: The parameter style each driver groundwatch knows is handed, and who reads its markers
#: (:data:`~groundwatch.core.generation.sql_binding.Reader`): sqlite3 leaves them to the SQLite
#: engine; the others format the whole text with ``%``. Any other driver gets its own paramstyle,
#: read as "unknown" (its marker character may then appear nowhere else in a statement).
_DRIVERS: dict[tuple[str, str], tuple[str, Reader]] = {
    ("sqlite", "pysqlite"): ("named", "engine"),
    ("postgresql", "psycopg"): ("pyformat", "percent"),
    ("postgresql", "psycopg2"): ("pyformat", "percent"),
    ("mysql", "pymysql"): ("pyformat", "percent"),
    ("mysql", "mysqldb"): ("pyformat", "percent"),
    ("mariadb", "pymysql"): ("pyformat", "percent"),
    ("mariadb", "mysqldb"): ("pyformat", "percent"),
}


class SqlAlchemyPort:
    """Runs gated SQL with bound parameters and streams rows.

    Every text — a validated template, the grouped queries derived from it, a dataset file's SQL
    re-read by the answer refresh, a provenance query — passes :class:`ReadGate` first, against
    ``schema`` (the tables the caller introspected; by default this connection's, introspected
    on first use), and what runs is the gate's canonical form of it: a text the gate refuses
    raises :class:`~groundwatch.errors.UnsafeSQL` before anything is sent. Values always travel as
    bind parameters. SQLAlchemy compiles the statement for the dialect (parameter style, quoting),
    then rows are read straight from the driver's cursor in batches — a server-side cursor on
    PostgreSQL — so a template with a million fills is neither materialised nor wrapped row by
    row. A driver error is raised as SQLAlchemy's :class:`~sqlalchemy.exc.DBAPIError`, as if the
    statement had run through SQLAlchemy.
    """

    def __init__(
        self,
        conn: Connection,
        schema: SchemaInfo | ReadGate | None = None,
        *,
        batch: int = 5000,
    ) -> None:
        self._conn = conn
        self._batch = batch
        self._gate = ReadGate(schema) if isinstance(schema, SchemaInfo) else schema

    @property
    def gate(self) -> ReadGate:
        """The gate of this port (built from the connection's own tables if none was given)."""
        if self._gate is None:
            from groundwatch.adapters.sources.introspect import introspect

            self._gate = ReadGate(introspect(self._conn, profile=False))
        return self._gate

    def rows(self, sql: str, params: Mapping[str, Any] | None = None) -> Iterator[Sequence[Any]]:
        """Rows of ``sql`` (checked now, run when the first row is asked for)."""
        dialect = self._conn.dialect
        style, reader = _DRIVERS.get(
            (dialect.name, dialect.driver),
            (str(getattr(dialect.loaded_dbapi, "paramstyle", "")), "unknown"),
        )
        statement = self.gate.bound(sql, style, reader=reader)
        args = statement.args(params)  # a missing or non-scalar value: refused before running
        return self._stream(statement, args)

    def _stream(
        self, statement: BoundStatement, args: dict[str, Any] | list[Any]
    ) -> Iterator[Sequence[Any]]:
        conn = self._conn
        if not conn.in_transaction():
            conn.begin()  # fires the read-only "begin" hook of groundwatch.adapters.sources.connect
        sql = statement.text
        driver = conn.connection.driver_connection
        assert driver is not None
        # SQLite's statement clock (groundwatch.adapters.sources.connect.StatementClock) counts
        # each batch on its own, as PostgreSQL's statement_timeout counts each FETCH
        clock = driver.clock if isinstance(driver, SourceConnection) else None
        if conn.dialect.name == "postgresql" and conn.dialect.driver == "psycopg":
            cursor = driver.cursor(name=f"gw_rows_{next(_cursor_ids)}")
        else:
            cursor = driver.cursor()
        dbapi_error = conn.dialect.loaded_dbapi.Error
        try:
            try:
                cursor.execute(sql, args)
                while True:
                    if clock is not None:
                        clock.restart()
                    batch = cursor.fetchmany(self._batch)
                    if not batch:
                        break
                    yield from batch
            except dbapi_error as exc:
                orig = exc
                if clock is not None and clock.fired:
                    orig = type(exc)(f"statement timeout: cancelled after {clock.timeout_s:g} s")
                raise DBAPIError.instance(sql, args, orig, dbapi_error) from exc
        finally:
            cursor.close()
