"""Source databases are unwritable by construction (issue 17): every attempt is made *directly* on
a connection of the read-only engine, bypassing the SQL validation in front of it, and the source
is compared byte for byte (SQLite: the file's hash; PostgreSQL: a hash of every row and of the
catalogue of tables) before and after.

Before the fix, on SQLite ``ATTACH 'file:/abs/src.db?mode=rw' AS w; PRAGMA query_only = OFF;
DELETE FROM w.Client`` deleted the rows (URI filenames honour ``mode=rw`` in ATTACH), and on
PostgreSQL ``SET TRANSACTION READ WRITE`` before the first query, or a stacked ``COMMIT; SET
default_transaction_read_only = off``, reopened writes.
"""

from __future__ import annotations

import hashlib
import sqlite3
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from groundwatch.adapters.sources.connect import SourcePolicy, readonly_engine
from groundwatch.adapters.sources.introspect import introspect

pytestmark = pytest.mark.integration


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def sqlite_source(tmp_path: Path) -> Path:
    path = (tmp_path / "src.db").resolve()
    con = sqlite3.connect(path)
    con.execute('CREATE TABLE "Client" (id INTEGER PRIMARY KEY, name TEXT, city TEXT)')
    con.execute("CREATE INDEX ix_city ON Client (city)")
    con.executemany("INSERT INTO Client (name, city) VALUES (?, ?)", [("a", "x"), ("b", "y")])
    con.commit()
    con.close()
    return path


def sqlite_attacks(src: Path, tmp: Path) -> list[tuple[str, str]]:
    """(how, SQL): each runs on its own cursor of one raw connection, in this order, so an
    earlier success (ATTACH, PRAGMA) would arm the later ones."""
    return [
        ("attach the source again, writable", f"ATTACH 'file:{src}?mode=rw' AS w"),
        ("attach a plain path", f"ATTACH DATABASE '{src}' AS w2"),
        ("attach a new file", f"ATTACH DATABASE '{tmp / 'new.db'}' AS n"),
        ("switch query_only off", "PRAGMA query_only = OFF"),
        ("delete through the attachment", "DELETE FROM w.Client"),
        ("delete", "DELETE FROM Client"),
        ("writable CTE", "WITH x AS (SELECT 1) DELETE FROM Client WHERE id IN (SELECT * FROM x)"),
        ("insert", "INSERT INTO Client (name) VALUES ('pwned')"),
        ("update", "UPDATE Client SET name = 'pwned'"),
        ("drop", "DROP TABLE Client"),
        ("create", "CREATE TABLE t (x)"),
        ("temp table", "CREATE TEMP TABLE t (x)"),
        ("alter", "ALTER TABLE Client ADD COLUMN y"),
        ("writable schema", "PRAGMA writable_schema = ON"),
        ("journal mode", "PRAGMA journal_mode = DELETE"),
        ("user version", "PRAGMA user_version = 7"),
        ("vacuum", "VACUUM"),
        ("vacuum into a copy", f"VACUUM INTO '{tmp / 'copy.db'}'"),
        ("analyze", "ANALYZE"),
        ("reindex", "REINDEX ix_city"),
        ("load an extension", "SELECT load_extension('/nonexistent/ext')"),
        ("detach main", "DETACH DATABASE main"),
    ]


def test_sqlite_source_cannot_be_written_through_the_raw_connection(
    sqlite_source: Path, tmp_path: Path
) -> None:
    before = sha256(sqlite_source)
    engine = readonly_engine(f"sqlite:///{sqlite_source}")
    refused: dict[str, str] = {}
    raw = engine.raw_connection()
    try:
        dbapi = raw.driver_connection
        assert dbapi is not None
        for how, sql in sqlite_attacks(sqlite_source, tmp_path):
            try:
                dbapi.execute(sql)
                dbapi.commit()
            except sqlite3.Error as exc:
                refused[how] = str(exc)
        stacked = "SELECT 1; DELETE FROM Client; PRAGMA query_only = OFF;"
        with pytest.raises(sqlite3.Error):
            dbapi.executescript(stacked)
        # what a source connection is for still works: reads, and the inspector's pragmas
        assert dbapi.execute("SELECT count(*) FROM Client").fetchone() == (2,)
    finally:
        raw.close()
    schema = introspect(engine)
    engine.dispose()
    assert [t.name for t in schema.tables] == ["Client"]
    missing = [how for how, _ in sqlite_attacks(sqlite_source, tmp_path) if how not in refused]
    assert missing == [], f"not refused: {missing}"
    assert sha256(sqlite_source) == before
    assert not (tmp_path / "new.db").exists() and not (tmp_path / "copy.db").exists()
    print(f"\nREADONLY-FIGURES sqlite refused={len(refused)} sha256={before[:12]} unchanged")


def test_the_attach_trick_works_without_the_seal(sqlite_source: Path) -> None:
    """The test above can fail: the same ATTACH trick on a plain ``mode=ro`` + ``query_only``
    connection (the engine before the fix) does delete the rows."""
    before = sha256(sqlite_source)
    con = sqlite3.connect(f"file:{sqlite_source}?mode=ro", uri=True)
    con.execute("PRAGMA query_only = ON")
    con.execute(f"ATTACH 'file:{sqlite_source}?mode=rw' AS w")
    con.execute("PRAGMA query_only = OFF")
    con.execute("DELETE FROM w.Client")
    con.commit()
    con.close()
    assert sha256(sqlite_source) != before


# ------------------------------------------------------------------------------------ PostgreSQL
@pytest.fixture
def pg_source(pg_url: str) -> Iterator[str]:
    name = f"gw_ro_{uuid.uuid4().hex[:10]}"
    admin = create_engine(pg_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    url = make_url(pg_url).set(database=name).render_as_string(hide_password=False)
    owner = create_engine(url)
    with owner.begin() as conn:
        conn.execute(text('CREATE TABLE "Client" (id serial PRIMARY KEY, name text, city text)'))
        conn.execute(text("INSERT INTO \"Client\" (name, city) VALUES ('a', 'x'), ('b', 'y')"))
    owner.dispose()
    yield url
    with admin.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


def pg_fingerprint(url: str) -> str:
    """Every row of every user table, and the list of tables, hashed (by the owner)."""
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            tables = conn.execute(
                text(
                    "SELECT string_agg(table_name, ',' ORDER BY table_name) FROM "
                    "information_schema.tables WHERE table_schema NOT IN "
                    "('pg_catalog', 'information_schema')"
                )
            ).scalar_one()
            rows = conn.execute(
                text("SELECT string_agg(c::text, '|' ORDER BY c.id) FROM \"Client\" c")
            ).scalar_one()
            settings = conn.execute(  # ALTER DATABASE … SET would show here
                text(
                    "SELECT setconfig FROM pg_db_role_setting WHERE setdatabase = "
                    "(SELECT oid FROM pg_database WHERE datname = current_database())"
                )
            ).all()
    finally:
        engine.dispose()
    return hashlib.sha256(f"{tables}\n{rows}\n{settings}".encode()).hexdigest()


PG_ATTACKS: list[tuple[str, str]] = [
    ("stacked after a SELECT", 'SELECT 1; DELETE FROM "Client"'),
    ("stacked commit and reset", "COMMIT; SET default_transaction_read_only = off; "
     'DELETE FROM "Client"'),
    ("writable CTE", 'WITH d AS (DELETE FROM "Client" RETURNING 1) SELECT count(*) FROM d'),
    ("commit", "COMMIT"),
    ("read-write before the first query", "SET TRANSACTION READ WRITE"),
    ("session default off", "SET default_transaction_read_only = off"),
    ("session characteristics", "SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE"),
    ("set_config on the transaction", "SELECT set_config('transaction_read_only', 'off', true)"),
    ("delete", 'DELETE FROM "Client"'),
    ("delete behind a nested comment", '/* /* */ SELECT */ DELETE FROM "Client"'),
    ("set behind a CR comment", "-- x\rSET TRANSACTION READ WRITE"),
    ("explain analyze a delete", 'EXPLAIN ANALYZE DELETE FROM "Client"'),
    ("insert", "INSERT INTO \"Client\" (name) VALUES ('pwned')"),
    ("create", "CREATE TABLE pwned (x int)"),
    ("alter database", "ALTER DATABASE CURRENT SET default_transaction_read_only = off"),
    ("do block", "DO $$ BEGIN DELETE FROM \"Client\"; END $$"),
    ("copy in", 'COPY "Client" FROM STDIN'),
    ("begin read write", "BEGIN READ WRITE"),
]  # fmt: skip


@pytest.mark.postgres
def test_postgres_source_cannot_be_written_through_the_raw_connection(pg_source: str) -> None:
    before = pg_fingerprint(pg_source)
    # as the cluster's superuser, accepted on purpose: the strongest login the walls must hold
    # against (by default such a login is refused: test_source_attacks)
    engine = readonly_engine(pg_source, policy=SourcePolicy(allow_privileged=True))
    refused: dict[str, str] = {}
    raw = engine.raw_connection()
    try:
        conn = raw.driver_connection
        assert conn is not None
        # a session default switched off by a SELECT the cursor lets through: the next
        # transactions still begin READ ONLY (psycopg's own BEGIN), so it buys nothing
        conn.execute("SELECT set_config('default_transaction_read_only', 'off', false)")
        conn.commit()
        for how, sql in PG_ATTACKS:
            try:
                conn.execute(sql)
                conn.execute('DELETE FROM "Client"')  # armed? try the write right after
                conn.commit()
            except Exception as exc:  # psycopg.Error, or the cursor's own refusal
                refused[how] = str(exc).splitlines()[0]
                conn.rollback()
        assert conn.execute('SELECT count(*) FROM "Client"').fetchone() == (2,)
    finally:
        raw.close()
    assert len(introspect(engine).tables) == 1
    engine.dispose()
    assert [how for how, _ in PG_ATTACKS if how not in refused] == []
    assert pg_fingerprint(pg_source) == before
    print(f"\nREADONLY-FIGURES postgres refused={len(refused)} fingerprint unchanged")


@pytest.mark.postgres
def test_postgres_source_statements_time_out(pg_source: str) -> None:
    engine = readonly_engine(pg_source, policy=SourcePolicy(0.2, allow_privileged=True))
    try:
        with engine.connect() as conn, pytest.raises(Exception, match="statement timeout"):
            conn.execute(text("SELECT pg_sleep(5)"))
    finally:
        engine.dispose()
