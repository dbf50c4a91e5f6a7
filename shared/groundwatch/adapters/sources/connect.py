"""Read-only engines: the generator must never be able to change the database it learns from.

Validation already refuses anything but a SELECT; the connection is the second wall. SQLite opens
the file with ``mode=ro`` (the driver itself refuses writes) plus ``PRAGMA query_only``; PostgreSQL
sessions start with ``default_transaction_read_only=on`` and every transaction is begun with
``SET TRANSACTION READ ONLY``; MySQL sessions are set read-only. Other backends are refused unless
the caller explicitly accepts the risk.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import quote

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.pool import NullPool

from groundwatch.errors import ConfigError


def readonly_engine(url: str, *, allow_unverified: bool = False) -> Engine:
    """An engine whose connections cannot write (see module docstring)."""
    parsed = make_url(url)
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        db = parsed.database or ""
        if db in ("", ":memory:") or db.startswith("file:"):
            raise ConfigError(
                f"SQLite source {url!r}: give a database file path (a read-only in-memory "
                "database would be empty)"
            )
        path = Path(db).resolve()
        if not path.is_file():
            raise ConfigError(f"SQLite source {url!r}: no such file {path}")
        ro_url = f"sqlite+pysqlite:///file:{quote(str(path))}?mode=ro&uri=true"
        engine = create_engine(ro_url, poolclass=NullPool)

        @event.listens_for(engine, "connect")
        def _query_only(dbapi_conn: Any, _record: Any) -> None:
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA query_only = ON")
            cur.close()

        return engine
    if backend == "postgresql":
        connect_args: dict[str, Any] = {}
        if parsed.get_driver_name() in ("psycopg", "psycopg2", ""):
            connect_args["options"] = "-c default_transaction_read_only=on"
        engine = create_engine(url, connect_args=connect_args, pool_pre_ping=True)

        @event.listens_for(engine, "begin")
        def _read_only_tx(conn: Any) -> None:
            conn.exec_driver_sql("SET TRANSACTION READ ONLY")
            # Until the transaction's first query, "SET TRANSACTION READ WRITE" would still be
            # accepted and undo the line above; after one, PostgreSQL refuses the switch.
            conn.exec_driver_sql("SELECT 1")

        return engine
    if backend in ("mysql", "mariadb"):
        engine = create_engine(url, pool_pre_ping=True)

        @event.listens_for(engine, "connect")
        def _mysql_ro(dbapi_conn: Any, _record: Any) -> None:
            cur = dbapi_conn.cursor()
            cur.execute("SET SESSION TRANSACTION READ ONLY")
            cur.close()

        return engine
    if not allow_unverified:
        raise ConfigError(
            f"groundwatch cannot make backend {backend!r} read-only (it can for sqlite,"
            " postgresql and mysql/mariadb); connect as a database user that can only read and"
            " pass --allow-unverified-readonly"
        )
    return create_engine(url, pool_pre_ping=True)
