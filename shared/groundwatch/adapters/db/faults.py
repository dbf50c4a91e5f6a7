"""What a store error means for the message being written: wait it out, or set the message aside.

The one place a database error is classified, whatever layer raised it: SQLAlchemy wraps what
goes through a ``Connection`` (``OperationalError``, ``DBAPIError`` with the driver's error as
``orig``), but a pool checkout from ``engine.raw_connection()`` and a driver cursor raise the
driver's own exception (``psycopg.OperationalError``, ``sqlite3.OperationalError``,
``pymysql.err.OperationalError``) — and a consume loop that only knew the wrapped kind took an
outage for poison and dead-lettered every message of it.

* **retriable** — the database is down, unreachable, busy or full: connection refused or lost,
  a timeout, a serialization failure or deadlock, a lock not granted, a disk full. Waiting helps.
* **permanent** — the database is up and refuses this data: a constraint, a value the column
  does not take, one the driver cannot encode. Waiting would loop for ever.
* ``None`` — not a store fault (or one this module cannot tell: a bug, a missing table).

Drivers are recognised by the DB-API (PEP 249) exception classes' names and their error codes
(PostgreSQL's SQLSTATE, SQLite's extended result codes, MySQL's error numbers), so this module
imports no driver.
"""

from __future__ import annotations

from enum import StrEnum

from sqlalchemy import exc as sa

from groundwatch.errors import StoreUnavailable, Unstorable


class Fault(StrEnum):
    RETRIABLE = "retriable"
    PERMANENT = "permanent"


#: SQLSTATE classes (PostgreSQL; MySQL and others follow the standard where they set one) of
#: faults that pass: connection exception, transaction rollback (serialization, deadlock),
#: insufficient resources (disk full, out of memory, too many connections), operator
#: intervention (admin shutdown, crash, cannot connect now), system error (I/O).
_RETRIABLE_SQLSTATE_CLASSES = ("08", "40", "53", "57", "58")
#: SQLSTATEs of other classes that pass: lock not available, object in use.
_RETRIABLE_SQLSTATES = ("55P03", "55006", "HY008")
#: SQLSTATE classes of refused data: data exception, integrity constraint violation.
_PERMANENT_SQLSTATE_CLASSES = ("22", "23")

#: SQLite primary result codes that pass: BUSY, LOCKED, NOMEM, IOERR, FULL, CANTOPEN, PROTOCOL.
_SQLITE_RETRIABLE = {5, 6, 7, 10, 13, 14, 15}
#: The same by name (``sqlite3`` sets ``sqlite_errorname`` from Python 3.11 on).
_SQLITE_RETRIABLE_NAMES = (
    "SQLITE_BUSY",
    "SQLITE_LOCKED",
    "SQLITE_NOMEM",
    "SQLITE_IOERR",
    "SQLITE_FULL",
    "SQLITE_CANTOPEN",
    "SQLITE_PROTOCOL",
)
#: SQLite's messages for the same, where no code is attached.
_SQLITE_RETRIABLE_TEXT = (
    "database is locked",
    "database table is locked",
    "disk is full",
    "disk i/o error",
    "unable to open database file",
    "out of memory",
)

#: MySQL / MariaDB error numbers that pass: server gone or unreachable (2002, 2003, 2006, 2013,
#: 2055), too many connections (1040, 1203), lock wait timeout (1205), deadlock (1213), disk or
#: table full (1021, 1114), shutdown in progress (1053), query interrupted (1317), read-only
#: during failover (1290, 1792), max execution time (3024), server out of memory (1041, 1037).
_MYSQL_RETRIABLE = {
    1021,
    1037,
    1040,
    1041,
    1053,
    1114,
    1203,
    1205,
    1213,
    1290,
    1317,
    1792,
    2002,
    2003,
    2006,
    2013,
    2055,
    3024,
}

#: PEP 249 exception class names.
_RETRIABLE_CLASSES = ("OperationalError", "InterfaceError")
_PERMANENT_CLASSES = ("IntegrityError", "DataError")


def classify(exc: BaseException) -> Fault | None:
    """What ``exc`` (or the error it wraps) means for the data being written (see the module)."""
    if isinstance(exc, StoreUnavailable):
        return Fault.RETRIABLE
    if isinstance(exc, Unstorable):
        return Fault.PERMANENT
    if isinstance(exc, sa.DBAPIError):
        if exc.connection_invalidated:
            return Fault.RETRIABLE
        if exc.orig is not None:
            found = _driver(exc.orig)
            if found is not None:
                return found
        return _wrapped(exc)
    if isinstance(exc, sa.DisconnectionError | sa.TimeoutError):  # pool: no connection in time
        return Fault.RETRIABLE
    if isinstance(exc, sa.StatementError):
        # a StatementError that is not a DBAPIError failed before reaching the database: binding
        return Fault.PERMANENT
    if isinstance(exc, ConnectionError | TimeoutError):
        return Fault.RETRIABLE
    return _driver(exc)


def as_outcome(exc: BaseException, doing: str) -> StoreUnavailable | Unstorable | None:
    """The outcome exception the consume loop sorts on for a store error met while ``doing``
    something (raise it ``from exc``), or ``None`` when ``exc`` is not a store fault."""
    fault = classify(exc)
    if fault is Fault.RETRIABLE:
        return StoreUnavailable(f"{doing}: database unavailable: {first_line(exc)}")
    if fault is Fault.PERMANENT:
        return Unstorable(f"{doing}: the database refused the data: {first_line(exc)}")
    return None


def first_line(exc: BaseException) -> str:
    """The error's first line, with the driver's class name (``OperationalError: …``)."""
    orig = getattr(exc, "orig", None) or exc
    text = str(orig).strip()
    line = text.splitlines()[0][:500] if text else ""
    return f"{type(orig).__name__}: {line}" if line else type(orig).__name__


def _wrapped(exc: sa.DBAPIError) -> Fault | None:
    if isinstance(exc, sa.IntegrityError | sa.DataError):
        return Fault.PERMANENT
    if isinstance(exc, sa.OperationalError | sa.InterfaceError):
        return Fault.RETRIABLE
    return None


def _driver(exc: BaseException) -> Fault | None:
    """A driver's own exception, by its error code where it has one, else by its class."""
    names = {c.__name__ for c in type(exc).__mro__}
    if not names & {"Error", "DatabaseError", "Warning"} and not isinstance(exc, OSError):
        return None
    sqlstate = _sqlstate(exc)
    if sqlstate:
        if sqlstate.startswith(_RETRIABLE_SQLSTATE_CLASSES) or sqlstate in _RETRIABLE_SQLSTATES:
            return Fault.RETRIABLE
        if sqlstate.startswith(_PERMANENT_SQLSTATE_CLASSES):
            return Fault.PERMANENT
        return None  # a syntax error, a missing table, a privilege: not the data, not passing
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int):
        if code & 0xFF in _SQLITE_RETRIABLE:
            return Fault.RETRIABLE
        return Fault.PERMANENT if names & set(_PERMANENT_CLASSES) else None
    mysql_code = _mysql_code(exc)
    if mysql_code is not None:
        if mysql_code in _MYSQL_RETRIABLE:
            return Fault.RETRIABLE
        if names & set(_PERMANENT_CLASSES):
            return Fault.PERMANENT
        return None
    if names & set(_PERMANENT_CLASSES):
        return Fault.PERMANENT
    text = str(exc).lower()
    if type(exc).__module__.startswith("sqlite3"):
        name = getattr(exc, "sqlite_errorname", "")
        if name in _SQLITE_RETRIABLE_NAMES or any(t in text for t in _SQLITE_RETRIABLE_TEXT):
            return Fault.RETRIABLE
        return None
    if names & set(_RETRIABLE_CLASSES) or isinstance(exc, OSError):
        # no code: raised by the client before any answer (connect refused, connection closed)
        return Fault.RETRIABLE
    return None


def _sqlstate(exc: BaseException) -> str | None:
    """psycopg 3 (``sqlstate``), psycopg2 (``pgcode``)."""
    for attr in ("sqlstate", "pgcode"):
        value = getattr(exc, attr, None)
        if isinstance(value, str) and len(value) == 5:
            return value
    return None


def _mysql_code(exc: BaseException) -> int | None:
    """PyMySQL and mysqlclient put the server's error number first in ``args``."""
    if not type(exc).__module__.startswith(("pymysql", "MySQLdb", "mysql")):
        return None
    args = getattr(exc, "args", ())
    return args[0] if args and isinstance(args[0], int) else None
