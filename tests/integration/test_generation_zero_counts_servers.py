"""A count of nothing on the real servers: the anti-join that finds the values a count has no row
for passes the read gate and gives the same groups on PostgreSQL and MariaDB as on SQLite."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy import (
    Column,
    Float,
    ForeignKey,
    Integer,
    MetaData,
    String,
    Table,
    create_engine,
    insert,
)
from sqlalchemy.engine import make_url

from groundwatch.adapters.sources import generate_groups
from tests.conftest import pg_as_reader

pytestmark = pytest.mark.integration

_OWNERS = [(1, "Ada Holm"), (2, "Bo Lind"), (3, "Cai Berg"), (4, "Eva Rask"), (5, "Eva Rask")]
_PETS = [(1, "Rex", 1, 12.5), (2, "Mio", 1, 4.0), (3, "Tass", 2, 30.0)]


def _build(url: str) -> None:
    meta = MetaData()
    owner = Table(
        "owner",
        meta,
        Column("id", Integer, primary_key=True, autoincrement=False),
        Column("full_name", String(80), nullable=False),
    )
    pet = Table(
        "pet",
        meta,
        Column("id", Integer, primary_key=True, autoincrement=False),
        Column("name", String(80), nullable=False, unique=True),
        Column("owner_id", Integer, ForeignKey("owner.id"), nullable=False),
        Column("weight_kg", Float, nullable=False),
    )
    engine = create_engine(url)
    with engine.begin() as conn:
        meta.create_all(conn)
        conn.execute(insert(owner), [{"id": i, "full_name": n} for i, n in _OWNERS])
        conn.execute(
            insert(pet),
            [{"id": i, "name": n, "owner_id": o, "weight_kg": w} for i, n, o, w in _PETS],
        )
    engine.dispose()


def _counts(url: str) -> dict[str, str]:
    res = generate_groups(url, k=3)
    return {
        str(next(iter(g.params.values()))): g.answer.values[0]
        for g in res.groups
        if g.sql.upper().startswith("SELECT COUNT(") and len(g.params) == 1
    }


@pytest.fixture
def on_sqlite(tmp_path: Path) -> dict[str, str]:
    url = f"sqlite:///{tmp_path / 'pets.db'}"
    _build(url)
    counts = _counts(url)
    assert counts == {"Ada Holm": "2", "Bo Lind": "1", "Cai Berg": "0"}
    return counts


@pytest.mark.postgres
def test_postgres_counts_nothing_as_sqlite_does(
    fresh_pg_url: Callable[[], str], on_sqlite: dict[str, str]
) -> None:
    url = fresh_pg_url()
    _build(url)
    assert _counts(pg_as_reader(url)) == on_sqlite


@pytest.mark.mysql
def test_mariadb_counts_nothing_as_sqlite_does(
    fresh_mysql_url: Callable[[], str], mysql_urls: tuple[str, str], on_sqlite: dict[str, str]
) -> None:
    url = fresh_mysql_url()
    _build(url)
    reader = make_url(mysql_urls[1]).set(database=make_url(url).database)
    assert _counts(reader.render_as_string(hide_password=False)) == on_sqlite
