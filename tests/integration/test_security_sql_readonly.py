"""The read-only PostgreSQL connection of the generator refuses every write, including one that
first tries to switch its transaction back to read-write; the query port runs one SELECT only;
placeholder values with quotes, unicode and SQL fragments are bound, never spliced."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import Engine, create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError

from groundwatch.adapters.sources.connect import SourcePolicy, readonly_engine
from groundwatch.adapters.sources.introspect import introspect
from groundwatch.adapters.sources.port import SqlAlchemyPort
from groundwatch.core.generation.sql_checks import validate_sql
from groundwatch.errors import UnsafeSQL
from tests.unit.test_sql_safety_templates import TRICKY_NAMES

pytestmark = [pytest.mark.integration, pytest.mark.postgres]


@pytest.fixture(scope="module")
def source_url(pg_url: str) -> Iterator[str]:
    name = f"gw_src_{uuid.uuid4().hex[:10]}"
    admin = create_engine(pg_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    url = make_url(pg_url).set(database=name).render_as_string(hide_password=False)
    owner = create_engine(url)
    with owner.begin() as conn:
        conn.execute(
            text(
                'CREATE TABLE "Client" ("ClientId" serial PRIMARY KEY, '
                '"Name" text UNIQUE NOT NULL, "Location" text)'
            )
        )
        conn.execute(
            text('INSERT INTO "Client" ("Name", "Location") VALUES (:n, :l)'),
            [{"n": n, "l": f"City{i}"} for i, n in enumerate(TRICKY_NAMES)],
        )
    owner.dispose()
    yield url
    with admin.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


@pytest.fixture(scope="module")
def ro(source_url: str) -> Iterator[Engine]:
    # as the cluster's superuser, accepted on purpose: the strongest login the walls must hold
    # against (by default such a login is refused: test_source_attacks)
    engine = readonly_engine(source_url, policy=SourcePolicy(allow_privileged=True))
    yield engine
    engine.dispose()


def rows(url: str) -> list[tuple[object, ...]]:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return [tuple(r) for r in conn.execute(text('SELECT * FROM "Client" ORDER BY 1'))]
    finally:
        engine.dispose()


WRITES = [
    'INSERT INTO "Client" ("Name") VALUES (\'pwned\')',
    'UPDATE "Client" SET "Location" = \'pwned\'',
    'DELETE FROM "Client"',
    "CREATE TABLE pwned (x int)",
    'DROP TABLE "Client"',
    'ALTER TABLE "Client" ADD COLUMN pwned text',
    'TRUNCATE "Client"',
    'SET TRANSACTION READ WRITE; DELETE FROM "Client"',
    "SELECT set_config('transaction_read_only', 'off', true); DELETE FROM \"Client\"",
]


@pytest.mark.parametrize("sql", WRITES)
def test_read_only_postgres_refuses_writes(ro: Engine, source_url: str, sql: str) -> None:
    before = rows(source_url)
    with (
        pytest.raises(DBAPIError, match=r"read-only|read-write mode must be set|multiple commands"),
        ro.connect() as conn,
        conn.begin(),
    ):
        conn.exec_driver_sql(sql)
    assert rows(source_url) == before


def test_port_refuses_stacked_and_non_select(ro: Engine, source_url: str) -> None:
    before = rows(source_url)
    for sql in ('SELECT 1; DELETE FROM "Client"', 'DELETE FROM "Client"'):
        with ro.connect() as conn, pytest.raises(UnsafeSQL):  # the port's read gate
            list(SqlAlchemyPort(conn).rows(sql))
    assert rows(source_url) == before


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    value=st.one_of(
        st.sampled_from(TRICKY_NAMES),
        st.text(st.characters(codec="utf-8", exclude_characters="\x00"), max_size=30),
    )
)
def test_values_are_bound_on_postgres(value: str, ro: Engine, source_url: str) -> None:
    with ro.connect() as conn:
        schema = introspect(conn, profile=False)
        t = validate_sql('SELECT "Location" FROM "Client" WHERE "Name" = :name', schema)
        (param,) = t.params
        got = [r[0] for r in SqlAlchemyPort(conn).rows(t.sql, {param: value})]
    assert got == [f"City{i}" for i, n in enumerate(TRICKY_NAMES) if n == value]


def test_source_is_intact_after_everything(source_url: str) -> None:
    assert [r[1] for r in rows(source_url)] == TRICKY_NAMES
