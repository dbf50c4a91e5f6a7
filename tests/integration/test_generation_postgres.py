"""GRAMMAR-Gen against the real PostgreSQL: read-only transactions, same groups as on SQLite."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.exc import DBAPIError

from groundwatch.adapters.sources import generate_groups, introspect, readonly_engine
from groundwatch.adapters.sources.generate import generate_groups_llm
from groundwatch.core.generation.answers import format_value
from groundwatch.demo import build_demo
from tests.conftest import pg_as_reader

pytestmark = [pytest.mark.integration, pytest.mark.postgres]


def test_demo_on_postgres_matches_sqlite_and_stays_unchanged(
    fresh_pg_url: Callable[[], str], tmp_path: Path
) -> None:
    url = fresh_pg_url()
    pg = build_demo(url, seed=7)
    lite = build_demo(f"sqlite:///{tmp_path / 'demo.sqlite'}", seed=7)
    assert pg.documents == lite.documents

    reader = pg_as_reader(url)
    engine = readonly_engine(reader)
    with engine.connect() as conn:
        schema = introspect(conn)
        assert schema.dialect == "postgres"
        assert {t.name for t in schema.tables} == {"clients", "employees", "projects"}
        for sql in ("DELETE FROM clients", "DROP TABLE projects", "CREATE TABLE x (a int)"):
            with pytest.raises(DBAPIError, match="read-only"):
                conn.execute(text(sql))
            conn.rollback()
    engine.dispose()

    on_pg = generate_groups(reader, k=3)
    on_lite = generate_groups(lite.db_url, k=3)
    assert on_pg.summary.groups == on_lite.summary.groups > 200
    assert {g.group_id for g in on_pg.groups} == {g.group_id for g in on_lite.groups}
    assert {g.group_id: g.answer for g in on_pg.groups} == {
        g.group_id: g.answer for g in on_lite.groups
    }

    writer = create_engine(url)
    with writer.connect() as conn:
        for g in on_pg.groups[:50]:
            rows = [tuple(r) for r in conn.execute(text(g.sql), g.params)]
            assert [format_value(v) for v in rows[0]] == g.answer.values
        counts = [
            conn.execute(text(f"SELECT COUNT(*) FROM {t}")).scalar_one()
            for t in ("clients", "employees", "projects")
        ]
    writer.dispose()
    assert counts == [12, 30, 16]
    assert pg.injected_gap_group_ids(on_pg.groups) == lite.injected_gap_group_ids(on_lite.groups)


class _EvilLlm:
    async def complete(
        self,
        system: str,
        user: str,
        *,
        temperature: float = 0.0,
        n: int = 1,
        max_tokens: int | None = None,
    ) -> list[str]:
        if user.startswith("You are a SQL query Template Generator"):
            return [
                "DROP TABLE clients\nSELECT industry FROM clients WHERE name = '[clients.name]';"
                " DELETE FROM clients\nSELECT city FROM clients WHERE name = '[clients.name]'"
            ]
        return ["city of '[clients.name]'\n'[clients.name]' city\ncity for '[clients.name]'"]


async def test_llm_sql_never_runs_before_validation_on_postgres(
    fresh_pg_url: Callable[[], str],
) -> None:
    url = fresh_pg_url()
    build_demo(url, seed=3)
    result = await generate_groups_llm(pg_as_reader(url), _EvilLlm(), k=3, cohorts=("short",))
    assert {g.sql for g in result.groups} == {"SELECT city FROM clients WHERE name = :name"}
    engine = create_engine(url)
    with engine.connect() as conn:
        assert conn.execute(text("SELECT COUNT(*) FROM clients")).scalar_one() == 12
    engine.dispose()


@pytest.mark.parametrize("name", ["company_employee", "shop", "music"])
def test_link_child_and_aggregate_templates_on_postgres(
    fresh_pg_url: Callable[[], str], tmp_path: Path, name: str
) -> None:
    """The shapes the demo schema lacks (link tables, child rows, chains, aggregates, list
    answers) run on PostgreSQL, with every answer what the database returns."""
    from collections import Counter

    from tests.unit import gen_schemas

    url = fresh_pg_url()
    writer = create_engine(url)
    with writer.begin() as conn:
        for stmt in gen_schemas.SCHEMAS[name].split(";"):
            if stmt.strip():
                conn.execute(text(stmt))
    on_pg = generate_groups(pg_as_reader(url), k=3, list_answers=True)
    on_lite = generate_groups(gen_schemas.build(name, tmp_path), k=3, list_answers=True)
    kinds_pg = Counter(t.kind for t in on_pg.templates)
    assert kinds_pg == Counter(t.kind for t in on_lite.templates)
    assert on_pg.summary.groups == on_lite.summary.groups > 0
    with writer.connect() as conn:
        for g in on_pg.groups:
            rows = {tuple(format_value(v) for v in r) for r in conn.execute(text(g.sql), g.params)}
            if len(rows) == 1:
                assert rows == {tuple(g.answer.values)}, (g.sql, g.params)
            else:  # a list answer: every answer of the fill, nothing else
                assert sorted(v for (v,) in rows) == sorted(g.answer.values), (g.sql, g.params)
    writer.dispose()
