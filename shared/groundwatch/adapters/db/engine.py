"""Engines and sessions, made by the caller's bootstrap (never at import time)."""

from __future__ import annotations

from typing import Any

import orjson
from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import (
    ArgumentError,
    NoSuchModuleError,
    SQLAlchemyError,
)
from sqlalchemy.orm import Session, sessionmaker

from groundwatch.errors import ConfigError


def database_url_problem(url: str) -> str | None:
    """Why ``url`` cannot name a database this process can open, or ``None``.

    Checked where the URL is read (settings, CLI options), so a typo stops the process with one
    line naming the variable instead of a ``NoSuchModuleError`` traceback at the first query.
    The URL itself is never quoted: it may hold a password.
    """
    try:
        parsed = make_url(url)
    except ArgumentError:
        return "not a database URL (expected e.g. sqlite:///file.db or postgresql+psycopg://…)"
    try:
        dialect = parsed.get_dialect()
        dialect.import_dbapi()  # `mysql://` means MySQLdb: say it is missing before connecting
    except NoSuchModuleError:
        return (
            f"unknown database backend or driver {parsed.drivername!r} "
            "(sqlite, postgresql+psycopg, mysql+pymysql, …)"
        )
    except ImportError as exc:
        hint = (
            " (pip install 'groundwatch[mysql]', then mysql+pymysql://…)"
            if (parsed.get_backend_name() in ("mysql", "mariadb"))
            else ""
        )
        return f"the driver of {parsed.drivername!r} is not installed ({exc.name or exc}){hint}"
    return None


def check_database_url(url: str, name: str) -> str:
    """``url`` unchanged, or :class:`ConfigError` naming the variable or option ``name``."""
    problem = database_url_problem(url)
    if problem is not None:
        raise ConfigError(f"{name}: {problem}")
    return url


def refused_data(exc: SQLAlchemyError) -> bool:
    """A refusal of the data itself (a value the column or a constraint does not take, or one the
    driver cannot even encode), as opposed to a database that is down or busy: waiting would not
    help, so the caller sets the data aside instead of retrying for ever."""
    from groundwatch.adapters.db.faults import Fault, classify

    return classify(exc) is Fault.PERMANENT


def is_mysql(engine: Engine) -> bool:
    """MySQL and MariaDB spell "insert unless there" and "upsert" their own way."""
    return engine.dialect.name in ("mysql", "mariadb")


def dialect_insert(engine: Engine, table: Any) -> Any:
    """PostgreSQL's or SQLite's ``INSERT`` (both have ``on_conflict_do_nothing``/``_update``)."""
    from sqlalchemy.dialects import postgresql, sqlite

    dialect = postgresql if engine.dialect.name == "postgresql" else sqlite
    return dialect.insert(table)


def _json_text(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()


def make_engine(url: str, *, echo: bool = False, read_only: bool = False, **kwargs: Any) -> Engine:
    """An engine with the settings each backend needs for our write pattern.

    SQLite gets WAL and a busy timeout because the demo's services share one file; PostgreSQL gets
    pre-ping so a restarted server does not fail the first request after it. JSON columns are
    written with orjson (the stdlib encoder was a third of the analytics store's CPU per
    judgement); the stored text is standard JSON, read back by any JSON parser.

    ``read_only`` (the commands that only read a store): a SQLite file is left exactly as it is —
    no switch to WAL (which rewrites the header of any file it is pointed at, a source database
    or an empty file given by mistake) and ``query_only``, so nothing can write to it.
    """
    parsed = make_url(url)
    kwargs.setdefault("json_serializer", _json_text)
    kwargs.setdefault("json_deserializer", orjson.loads)
    if parsed.get_backend_name() == "sqlite":
        kwargs.setdefault("connect_args", {"check_same_thread": False, "timeout": 30})
        engine = create_engine(url, echo=echo, **kwargs)

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
            cur = dbapi_conn.cursor()
            if read_only:
                cur.execute("PRAGMA query_only=ON")
            else:
                if parsed.database not in (None, "", ":memory:"):
                    # before the first table only (a no-op on a file that has tables): free
                    # pages retention leaves are returned by ``incremental_vacuum``
                    cur.execute("PRAGMA auto_vacuum=INCREMENTAL")
                    cur.execute("PRAGMA journal_mode=WAL")
                cur.execute("PRAGMA synchronous=NORMAL")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.close()

        return engine
    kwargs.setdefault("pool_pre_ping", True)
    return create_engine(url, echo=echo, **kwargs)


def make_sessionmaker(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(engine, expire_on_commit=False)


def create_schema(engine: Engine) -> None:
    """Bring the schema to the newest migration (Alembic), the way every service starts."""
    from groundwatch.adapters.db.migrate import upgrade

    upgrade(engine)


def ping(engine: Engine) -> bool:
    try:
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))
        return True
    except Exception:
        return False


def connect_problem(engine: Engine) -> str | None:
    """Why the database cannot be reached (refused, unknown host, bad password, missing
    database, unwritable file…) in one line, or ``None`` when a ``SELECT 1`` goes through."""
    try:
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))
    except Exception as exc:
        orig = getattr(exc, "orig", None) or exc
        lines = [ln.strip() for ln in str(orig).splitlines() if ln.strip()]
        detail = lines[0] if lines else type(orig).__name__
        for ln in lines:  # psycopg puts the reason ("Connection refused") on a later line
            if "refused" in ln or "does not exist" in ln or "authentication" in ln:
                detail = ln
                break
        return f"cannot connect ({type(orig).__name__}: {detail[:300]})"
    return None


def open_engine(url: str, name: str, **kwargs: Any) -> Engine:
    """An engine for a URL given by the user as ``name`` (an option or variable), checked and
    connected once: a bad URL or an unreachable database is a :class:`ConfigError` naming
    ``name`` — one line, never a traceback, and never the URL itself (it may hold a password)."""
    check_database_url(url, name)
    try:
        engine = make_engine(url, **kwargs)
    except (ArgumentError, ValueError, TypeError) as exc:
        raise ConfigError(f"{name}: {exc}") from None
    problem = connect_problem(engine)
    if problem is not None:
        engine.dispose()
        raise ConfigError(f"{name}: {problem}")
    return engine
