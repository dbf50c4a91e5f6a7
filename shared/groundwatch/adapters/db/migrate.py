"""Alembic, driven from code so services and tests migrate without an alembic.ini on disk.

Several services start at once against one database (analytics instances, the generator), so an
upgrade holds a lock for its whole run: a PostgreSQL advisory lock, or a file lock beside a SQLite
database. The second process waits, then finds the schema at head and does nothing.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Connection, Engine, text

MIGRATIONS = Path(__file__).parent / "migrations"

#: Arbitrary, fixed: the advisory-lock key every groundwatch process migrates under.
_PG_LOCK_KEY = 0x6777_6D69  # "gwmi"


#: The PostgreSQL partitions of ``judgements`` (:mod:`groundwatch.adapters.db.retention`): tables
#: of the database no model describes, made and dropped by retention, never by a migration.
PARTITION_PREFIX = "judgements_p"
DEFAULT_PARTITION = "judgements_default"


def include_name(name: str | None, type_: str, _parents: object) -> bool:
    """Autogenerate's filter: the judgements partitions are not schema (see above)."""
    if type_ != "table" or name is None:
        return True
    return not (name.startswith(PARTITION_PREFIX) or name == DEFAULT_PARTITION)


def alembic_config(engine: Engine, connection: Connection | None = None) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    cfg.set_main_option("sqlalchemy.url", engine.url.render_as_string(hide_password=False))
    cfg.attributes["engine"] = engine
    if connection is not None:
        cfg.attributes["connection"] = connection
    return cfg


@contextlib.contextmanager
def _migration_lock(engine: Engine) -> Iterator[Connection | None]:
    if engine.dialect.name == "postgresql":
        with engine.connect() as conn:
            conn.execute(text("SELECT pg_advisory_lock(:k)"), {"k": _PG_LOCK_KEY})
            conn.commit()
            try:
                yield conn
            finally:
                conn.rollback()
                conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": _PG_LOCK_KEY})
                conn.commit()
        return
    database = engine.url.database
    if engine.dialect.name == "sqlite" and database not in (None, "", ":memory:"):
        with _file_lock(Path(database).with_name(Path(database).name + ".migrate-lock")):
            yield None
        return
    yield None


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    """An exclusive lock on ``path`` that leaves no file behind.

    The holder removes the file before it lets go, so a waiter may wake holding a lock on a file
    that is no longer there while a newcomer locks a new one: a waiter therefore checks that the
    file it locked is still the one at ``path`` and starts over if not.
    """
    while True:
        fh = path.open("a")
        try:
            fcntl.flock(fh, fcntl.LOCK_EX)
            mine = os.fstat(fh.fileno())
            try:
                there = os.stat(path)
            except FileNotFoundError:
                there = None
        except BaseException:
            fh.close()
            raise
        if there is not None and (there.st_dev, there.st_ino) == (mine.st_dev, mine.st_ino):
            break
        fh.close()  # removed by the previous holder: lock the file there now
    try:
        yield
    finally:
        path.unlink(missing_ok=True)
        fcntl.flock(fh, fcntl.LOCK_UN)
        fh.close()


def upgrade(engine: Engine, revision: str = "head") -> None:
    with _migration_lock(engine) as conn:
        command.upgrade(alembic_config(engine, conn), revision)


def downgrade(engine: Engine, revision: str) -> None:
    with _migration_lock(engine) as conn:
        command.downgrade(alembic_config(engine, conn), revision)
