"""Grounded scenarios on the real PostgreSQL: the same items as on SQLite, and the combined SQL
of a multi-part item (scalar subqueries) returns every part there too."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from groundwatch.adapters.scenario_files import select_scenarios
from groundwatch.adapters.sources.scenarios import grounded_scenarios
from groundwatch.core.generation.answers import format_value
from groundwatch.demo import build_demo
from tests.conftest import pg_as_reader

pytestmark = [pytest.mark.integration, pytest.mark.postgres]


def test_grounded_scenarios_on_postgres_match_sqlite(
    fresh_pg_url: Callable[[], str], tmp_path: Path
) -> None:
    url = fresh_pg_url()
    pg = build_demo(url, seed=7)
    lite = build_demo(f"sqlite:///{tmp_path / 'demo.sqlite'}", seed=7)
    specs = select_scenarios("all")
    on_pg = grounded_scenarios(pg_as_reader(url), specs, corpus=pg.documents, seed=2, max_items=12)
    on_lite = grounded_scenarios(lite.db_url, specs, corpus=lite.documents, seed=2, max_items=12)
    assert on_pg.summary() == on_lite.summary()
    assert [g.forms[0].text for g in on_pg.items] == [g.forms[0].text for g in on_lite.items]
    assert [g.answer for g in on_pg.items] == [g.answer for g in on_lite.items]

    engine = create_engine(url)
    with engine.connect() as conn:
        for g in on_pg.items:
            got = conn.execute(text(g.sql), g.params).all()
            if g.scenario == "S6":
                assert got == []
            else:
                assert [[format_value(v) for v in r] for r in got] == [g.answer.values]
    engine.dispose()
