"""Read-only engines: the generator must never be able to change the database it learns from.

Every SQL text the adapter runs passes the read gate first (:mod:`groundwatch.core.generation.
sql_gate`, applied by :class:`~groundwatch.adapters.sources.port.SqlAlchemyPort`); the connection
is the second wall. SQLite opens the file with ``mode=ro`` (the driver itself refuses writes) plus
``PRAGMA query_only`` and an authorizer that allows reads only; PostgreSQL sessions start with
``default_transaction_read_only=on`` and every transaction is begun ``READ ONLY``; MySQL/MariaDB
sessions are set read-only. Every backend cancels a statement that runs longer than the policy's
statement timeout (SQLite by a progress handler, PostgreSQL by ``statement_timeout``, MariaDB by
``max_statement_time``, MySQL by ``max_execution_time``), and a login that could reach the
server's files or other sessions (a PostgreSQL superuser or member of ``pg_read_server_files``,
``pg_write_server_files``, ``pg_execute_server_program``; a MySQL user with ``FILE`` or ``SUPER``)
is refused unless the policy allows it. Other backends are refused unless the caller explicitly
accepts the risk.

No source connection is pooled: each is closed when its user is done with it, so nothing one
statement leaves in a session (an advisory or named lock, a user variable, a ``SET``, a prepared
statement, a temporary table) reaches the next use. MySQL/MariaDB sessions also drop the
``sql_mode`` flags that change how a statement's text is read (``NO_BACKSLASH_ESCAPES``,
``ANSI_QUOTES``, ``PIPES_AS_CONCAT`` and the modes made of them), so the server reads the
statement the read gate printed as sqlglot does.
"""

from __future__ import annotations

import logging
import re
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.pool import NullPool

from groundwatch.errors import ConfigError

log = logging.getLogger(__name__)

#: PostgreSQL's predefined roles that read or write the server's files or run its programs.
PG_SERVER_ROLES = ("pg_read_server_files", "pg_write_server_files", "pg_execute_server_program")
#: MySQL/MariaDB global privileges with the same reach (``LOAD_FILE``, ``INTO OUTFILE``, killing
#: other sessions, changing the server's variables).
MYSQL_SERVER_PRIVILEGES = ("FILE", "SUPER")
#: MySQL/MariaDB ``sql_mode`` flags that change how a statement's text is read, and the combined
#: modes that include them.
_LEXICAL_SQL_MODES = frozenset(
    {"NO_BACKSLASH_ESCAPES", "ANSI_QUOTES", "PIPES_AS_CONCAT", "IGNORE_SPACE", "ANSI", "ORACLE",
     "MSSQL", "DB2", "MAXDB", "POSTGRESQL"}
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class SourcePolicy:
    """How a source database is opened: the longest a statement may run, and whether a login
    with server-wide powers is accepted — with a warning — instead of refused
    (``--allow-privileged-source``, ``GW_SOURCE_ALLOW_PRIVILEGED``)."""

    statement_timeout_s: float = 60.0
    allow_privileged: bool = False


def readonly_engine(
    url: str,
    *,
    allow_unverified: bool = False,
    statement_timeout_s: float | None = None,
    policy: SourcePolicy | None = None,
) -> Engine:
    """An engine whose connections cannot write (see module docstring). ``statement_timeout_s``
    overrides the policy's timeout; opening a connection raises :class:`ConfigError` when the
    login is privileged and the policy does not allow it."""
    policy = policy or SourcePolicy()
    timeout_s = policy.statement_timeout_s if statement_timeout_s is None else statement_timeout_s
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
        engine = create_engine(
            ro_url, poolclass=NullPool, connect_args={"factory": SourceConnection}
        )

        @event.listens_for(engine, "connect")
        def _read_only(dbapi_conn: Any, _record: Any) -> None:
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA query_only = ON")
            cur.close()
            seal_sqlite(dbapi_conn)
            if isinstance(dbapi_conn, SourceConnection):
                dbapi_conn.clock.timeout_s = timeout_s

        return engine
    if backend == "postgresql":
        connect_args: dict[str, Any] = {}
        if parsed.get_driver_name() in ("psycopg", "psycopg2", ""):
            timeout_ms = max(1, int(timeout_s * 1000))
            # standard_conforming_strings: a backslash in a string is a character, as the read
            # gate's printing of a statement assumes (with it off, 'a\'' would end the string)
            connect_args["options"] = (
                f"-c default_transaction_read_only=on -c statement_timeout={timeout_ms}"
                " -c standard_conforming_strings=on"
            )
        if parsed.get_driver_name() == "psycopg":
            connect_args["cursor_factory"] = _read_only_cursor_class()
        engine = create_engine(url, connect_args=connect_args, poolclass=NullPool)

        @event.listens_for(engine, "connect")
        def _psycopg_read_only(dbapi_conn: Any, _record: Any) -> None:
            # psycopg begins every transaction it opens, also on the raw connection, with
            # BEGIN READ ONLY (the session default above can be SET back; this cannot by SQL)
            if hasattr(dbapi_conn, "read_only"):
                dbapi_conn.read_only = True
            _refuse_privileged(_pg_powers(dbapi_conn), url, policy)

        if parsed.get_driver_name() != "psycopg":  # psycopg: BEGIN READ ONLY, cursor above

            @event.listens_for(engine, "begin")
            def _read_only_tx(conn: Any) -> None:
                conn.exec_driver_sql("SET TRANSACTION READ ONLY")
                # Until the transaction's first query, "SET TRANSACTION READ WRITE" would still
                # be accepted and undo the line above; after one, PostgreSQL refuses the switch.
                conn.exec_driver_sql("SELECT 1")

        return engine
    if backend in ("mysql", "mariadb"):
        engine = create_engine(url, poolclass=NullPool)

        # before SQLAlchemy's own first look at the session (it reads sql_mode to learn how to
        # quote names), so the dialect and the server agree
        @event.listens_for(engine, "first_connect", insert=True)
        def _mysql_modes(dbapi_conn: Any, _record: Any) -> None:
            _plain_sql_mode(dbapi_conn)

        @event.listens_for(engine, "connect")
        def _mysql_ro(dbapi_conn: Any, _record: Any) -> None:
            _plain_sql_mode(dbapi_conn)
            cur = dbapi_conn.cursor()
            try:
                cur.execute("SET SESSION TRANSACTION READ ONLY")
                cur.execute("SELECT VERSION()")
                version = str(cur.fetchone()[0])
                if "mariadb" in version.lower():  # seconds, every statement
                    cur.execute(f"SET SESSION max_statement_time = {max(timeout_s, 0.001):.3f}")
                else:  # milliseconds, SELECTs (all a source runs)
                    cur.execute(f"SET SESSION max_execution_time = {max(1, int(timeout_s * 1000))}")
                powers = _mysql_powers(cur)
            finally:
                cur.close()
            dbapi_conn.commit()
            _refuse_privileged(powers, url, policy)

        return engine
    if not allow_unverified:
        raise ConfigError(
            f"groundwatch cannot make backend {backend!r} read-only (it can for sqlite,"
            " postgresql and mysql/mariadb); connect as a database user that can only read and"
            " pass --allow-unverified-readonly"
        )
    return create_engine(url, poolclass=NullPool)


def _refuse_privileged(powers: list[str], url: str, policy: SourcePolicy) -> None:
    """:class:`ConfigError` if the login has server-wide powers the policy does not accept; a
    warning if it accepts them."""
    if not powers:
        return
    who = make_url(url).username or "the login"
    what = ", ".join(powers)
    if policy.allow_privileged:
        log.warning("source database user %s holds %s (accepted by the policy)", who, what)
        return
    raise ConfigError(
        f"source database user {who!r} holds {what}, which reach the server's files or other"
        " sessions; connect as a user that can only SELECT, or pass --allow-privileged-source"
        " (GW_SOURCE_ALLOW_PRIVILEGED=true)"
    )


def _pg_powers(dbapi_conn: Any) -> list[str]:
    """``superuser``, or the server-file roles the session's user is a member of."""
    roles = ", ".join(f"'{r}'" for r in PG_SERVER_ROLES)
    cur = dbapi_conn.cursor()
    try:
        cur.execute(
            "SELECT r.rolsuper, ARRAY(SELECT b.rolname::text FROM pg_roles b WHERE b.rolname IN"
            f" ({roles}) AND pg_has_role(r.oid, b.oid, 'MEMBER') ORDER BY 1)"
            " FROM pg_roles r WHERE r.rolname = current_user"
        )
        row = cur.fetchone()
    finally:
        cur.close()
    dbapi_conn.rollback()
    if row is None:
        return []
    return ["superuser"] if row[0] else list(row[1] or [])


def _plain_sql_mode(dbapi_conn: Any) -> None:
    """Drop the session's ``sql_mode`` flags in :data:`_LEXICAL_SQL_MODES`, keep the others."""
    cur = dbapi_conn.cursor()
    try:
        cur.execute("SELECT @@SESSION.sql_mode")
        modes = str(cur.fetchone()[0] or "").split(",")
        kept = ",".join(m for m in modes if m and m.upper() not in _LEXICAL_SQL_MODES)
        cur.execute("SET SESSION sql_mode = %s", (kept,))
    finally:
        cur.close()


def _mysql_powers(cur: Any) -> list[str]:
    """The global privileges of :data:`MYSQL_SERVER_PRIVILEGES` the current user holds."""
    wanted = ", ".join(f"'{p}'" for p in MYSQL_SERVER_PRIVILEGES)
    grantee = (
        "CONCAT(CHAR(39), SUBSTRING_INDEX(CURRENT_USER(), '@', 1), CHAR(39), '@', CHAR(39),"
        " SUBSTRING_INDEX(CURRENT_USER(), '@', -1), CHAR(39))"
    )
    cur.execute(
        "SELECT PRIVILEGE_TYPE FROM information_schema.USER_PRIVILEGES"
        f" WHERE GRANTEE = {grantee} AND PRIVILEGE_TYPE IN ({wanted}) ORDER BY 1"
    )
    return [str(r[0]) for r in cur.fetchall()]


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


#: SQLite virtual-machine instructions between two looks at the clock (well under a millisecond).
_PROGRESS_EVERY = 10_000


class StatementClock:
    """SQLite's statement timeout: it has none of its own, so a progress handler interrupts the
    statement running on the connection once it has run ``timeout_s``.

    The clock starts when a statement starts (the trace callback) and again each time the source
    adapter asks for the next batch of rows (:meth:`restart`), so — as PostgreSQL's
    ``statement_timeout`` does for each fetch of a cursor — the time a consumer spends between
    batches is not counted, while a statement that computes for longer than ``timeout_s`` without
    yielding a batch (an endless recursive CTE, a cross join of large tables) is interrupted."""

    __slots__ = ("_deadline", "fired", "timeout_s")

    def __init__(self, timeout_s: float = 60.0) -> None:
        self.timeout_s = timeout_s
        self._deadline = float("inf")
        self.fired = False

    def restart(self, _statement: object = None) -> None:
        self._deadline = time.monotonic() + self.timeout_s
        self.fired = False

    def expired(self) -> int:
        if time.monotonic() > self._deadline:
            self.fired = True
            return 1  # SQLite interrupts the statement ("interrupted")
        return 0


class SourceConnection(sqlite3.Connection):
    """A sqlite3 connection with a :class:`StatementClock` (``sqlite3.connect(factory=…)``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.clock = StatementClock()
        self.set_trace_callback(self.clock.restart)
        self.set_progress_handler(self.clock.expired, _PROGRESS_EVERY)


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
