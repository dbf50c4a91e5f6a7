"""Engines and sessions, made by the caller's bootstrap (never at import time)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker


def make_engine(url: str, *, echo: bool = False, **kwargs: Any) -> Engine:
    """An engine with the settings each backend needs for our write pattern.

    SQLite gets WAL and a busy timeout because the demo's services share one file; PostgreSQL gets
    pre-ping so a restarted server does not fail the first request after it.
    """
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        kwargs.setdefault("connect_args", {"check_same_thread": False, "timeout": 30})
        engine = create_engine(url, echo=echo, **kwargs)

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
            cur = dbapi_conn.cursor()
            if parsed.database not in (None, "", ":memory:"):
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
