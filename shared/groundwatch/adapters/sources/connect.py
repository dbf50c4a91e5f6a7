"""Read-only engines: the generator must never be able to change the database it learns from.

Validation already refuses anything but a SELECT; the connection is the second wall. SQLite opens
the file with ``mode=ro`` (the driver itself refuses writes) plus ``PRAGMA query_only``; PostgreSQL
sessions start with ``default_transaction_read_only=on`` and every transaction is begun with
``SET TRANSACTION READ ONLY``; MySQL sessions are set read-only. Other backends are refused unless
the caller explicitly accepts the risk.
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import Any
from urllib.parse import quote

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.pool import NullPool

from groundwatch.errors import ConfigError


def readonly_engine(
    url: str, *, allow_unverified: bool = False, statement_timeout_s: float = 60.0
) -> Engine:
    """An engine whose connections cannot write (see module docstring); on PostgreSQL a
    statement running longer than ``statement_timeout_s`` is cancelled by the server."""
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
        def _read_only(dbapi_conn: Any, _record: Any) -> None:
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA query_only = ON")
            cur.close()
            seal_sqlite(dbapi_conn)

        return engine
    if backend == "postgresql":
        connect_args: dict[str, Any] = {}
        if parsed.get_driver_name() in ("psycopg", "psycopg2", ""):
            timeout_ms = int(statement_timeout_s * 1000)
            connect_args["options"] = (
                f"-c default_transaction_read_only=on -c statement_timeout={timeout_ms}"
            )
        if parsed.get_driver_name() == "psycopg":
            connect_args["cursor_factory"] = _read_only_cursor_class()
        engine = create_engine(url, connect_args=connect_args, pool_pre_ping=True)

        @event.listens_for(engine, "connect")
        def _psycopg_read_only(dbapi_conn: Any, _record: Any) -> None:
            # psycopg begins every transaction it opens, also on the raw connection, with
            # BEGIN READ ONLY (the session default above can be SET back; this cannot by SQL)
            if hasattr(dbapi_conn, "read_only"):
                dbapi_conn.read_only = True

        if parsed.get_driver_name() != "psycopg":  # psycopg: BEGIN READ ONLY, cursor above

            @event.listens_for(engine, "begin")
            def _read_only_tx(conn: Any) -> None:
                conn.exec_driver_sql("SET TRANSACTION READ ONLY")
                # Until the transaction's first query, "SET TRANSACTION READ WRITE" would still
                # be accepted and undo the line above; after one, PostgreSQL refuses the switch.
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


# ------------------------------------------------------------------------------------- SQLite
#: Pragmas that only read, and among them those whose argument names a table or an index (the
#: argument of any other pragma would set it). SQLAlchemy's dialect and inspector use these.
_READ_PRAGMAS = frozenset(
    {
        "table_info",
        "table_xinfo",
        "table_list",
        "index_list",
        "index_info",
        "index_xinfo",
        "foreign_key_list",
        "database_list",
        "collation_list",
        "function_list",
        "module_list",
        "pragma_list",
        "compile_options",
        "encoding",
        "user_version",
        "schema_version",
        "application_id",
        "data_version",
        "page_size",
        "page_count",
        "freelist_count",
        "query_only",
        "read_uncommitted",
        "foreign_keys",
        "journal_mode",
        "busy_timeout",
    }
)
_PRAGMAS_NAMING_A_TABLE = frozenset(
    {"table_info", "table_xinfo", "table_list", "index_list", "index_info", "index_xinfo",
     "foreign_key_list"}
)  # fmt: skip
#: Functions refused even inside a SELECT: loading code, and redefining FTS3 tokenizers by address.
_DENIED_FUNCTIONS = frozenset({"load_extension", "fts3_tokenizer", "readfile", "writefile"})


def _sqlite_authorizer(action: int, arg1: str | None, arg2: str | None, *_: Any) -> int:
    """SQLite asks this for every operation of every statement it prepares: reads pass, anything
    else (ATTACH, DETACH, writes, DDL, setting pragmas, loading code…) is refused."""
    if action in (sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_RECURSIVE):
        return sqlite3.SQLITE_OK
    if action == sqlite3.SQLITE_FUNCTION:
        return (
            sqlite3.SQLITE_DENY if (arg2 or "").lower() in _DENIED_FUNCTIONS else sqlite3.SQLITE_OK
        )
    if action == sqlite3.SQLITE_PRAGMA:
        name = (arg1 or "").lower()
        if name in _READ_PRAGMAS and (arg2 is None or name in _PRAGMAS_NAMING_A_TABLE):
            return sqlite3.SQLITE_OK
        return sqlite3.SQLITE_DENY
    if action in (sqlite3.SQLITE_TRANSACTION, sqlite3.SQLITE_SAVEPOINT):
        return sqlite3.SQLITE_OK  # BEGIN/COMMIT of a read; nothing to write with
    return sqlite3.SQLITE_DENY


def seal_sqlite(dbapi_conn: sqlite3.Connection) -> None:
    """Make one sqlite3 connection read-only by construction.

    ``mode=ro`` and ``query_only`` alone do not hold: with URI filenames on, ``ATTACH
    'file:/abs/src.db?mode=rw'`` reopened the same file writable and ``PRAGMA query_only = OFF``
    lifted the other guard (issue 17). The authorizer refuses every operation but reads at
    prepare time, and the attach limit 0 refuses ATTACH even where no authorizer is asked (the
    attachment ``VACUUM INTO`` makes)."""
    dbapi_conn.set_authorizer(_sqlite_authorizer)
    dbapi_conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)


# --------------------------------------------------------------------------------- PostgreSQL
#: Statements a read-only cursor sends: what starts with another word (SET, COMMIT, BEGIN, DO,
#: CALL, COPY, a DML or DDL keyword…) is refused before it reaches the server.
_READ_WORDS = frozenset({"select", "with", "values", "table", "show", "explain"})
_WORD = re.compile(r"[A-Za-z_]+")


def _first_word(text: str) -> str:
    """The first word of a statement after whitespace, ``--`` comments and PostgreSQL's nested
    ``/* … */`` comments ("" for an empty statement, such as the ``;`` a ping sends)."""
    i, n = 0, len(text)
    while i < n:
        if text[i].isspace() or text[i] == ";":
            i += 1
        elif text.startswith("--", i):
            ends = [e for e in (text.find("\n", i), text.find("\r", i)) if e >= 0]
            i = min(ends) + 1 if ends else n
        elif text.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if text.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
        else:
            word = _WORD.match(text, i)
            return word.group(0).lower() if word else text[i]
    return ""


def _read_statement(cursor: Any, query: Any) -> bool:
    """Refuse, before it is sent, anything but one read statement (see the cursor class); true
    for the empty statement (a ping), which is sent as it is."""
    import psycopg

    if isinstance(query, bytes):
        text = query.decode("utf-8", "replace")
    elif isinstance(query, str):
        text = query
    else:  # psycopg.sql.Composable
        text = query.as_string(cursor.connection)
    if not text.replace(";", "").strip():
        return True  # nothing at all to run: SQLAlchemy's ping
    if _first_word(text) not in _READ_WORDS:
        raise psycopg.errors.ReadOnlySqlTransaction(
            "read-only source: only SELECT, WITH, VALUES, TABLE, SHOW or EXPLAIN may run"
        )
    return False


def _read_only_cursor_class() -> type[Any]:
    """A psycopg cursor class that sends only single read statements, as prepared statements.

    Prepared (the extended protocol), a text holding two statements is refused by the server
    itself, so ``SELECT 1; COMMIT; SET default_transaction_read_only = off; DELETE …`` cannot
    run; the first-word check keeps ``SET TRANSACTION READ WRITE``, ``COMMIT`` and the like from
    undoing the read-only transaction one statement at a time; a writable CTE inside a SELECT
    meets the read-only transaction.
    """
    import psycopg

    class ReadOnlyCursor(psycopg.Cursor[Any]):
        def execute(
            self,
            query: Any,
            params: Any = None,
            *,
            prepare: bool | None = None,
            binary: bool | None = None,
        ) -> ReadOnlyCursor:
            empty = _read_statement(self, query)
            super().execute(query, params, prepare=None if empty else True, binary=binary)
            return self

        def executemany(self, query: Any, params_seq: Any, *, returning: bool = False) -> None:
            raise psycopg.errors.ReadOnlySqlTransaction("read-only source: no executemany")

        def stream(self, query: Any, params: Any = None, **kwargs: Any) -> Any:
            _read_statement(self, query)
            return super().stream(query, params, **kwargs)

    return ReadOnlyCursor
