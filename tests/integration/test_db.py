"""Storage on SQLite and PostgreSQL: migrations reach the models exactly, rows round-trip."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import select

from groundwatch.adapters.db import create_schema, make_engine, make_sessionmaker
from groundwatch.adapters.db.migrate import downgrade, include_name
from groundwatch.adapters.db.tables import Base, Dataset, GroupRow, JudgementRow, TallyRow

pytestmark = pytest.mark.integration


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: object) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/gw.db"
    factory: Callable[[], str] = request.getfixturevalue("fresh_pg_url")
    return factory()


def test_migrations_match_models(db_url: str) -> None:
    engine = make_engine(db_url)
    create_schema(engine)
    with engine.connect() as conn:
        diff = compare_metadata(
            MigrationContext.configure(conn, opts={"include_name": include_name}), Base.metadata
        )
    engine.dispose()
    assert diff == [], f"models and migrations differ: {diff}"


def test_downgrade_and_upgrade_again(db_url: str) -> None:
    engine = make_engine(db_url)
    create_schema(engine)
    downgrade(engine, "base")
    create_schema(engine)
    engine.dispose()


def test_rows_round_trip(db_url: str) -> None:
    engine = make_engine(db_url)
    create_schema(engine)
    Session = make_sessionmaker(engine)
    now = datetime.now(UTC)
    with Session.begin() as s:
        s.add(Dataset(dataset_id="d1", name="demo", cohorts=["short", "long"]))
        s.flush()
        s.add(
            GroupRow(
                dataset_id="d1",
                group_id="g1",
                sql="SELECT a FROM t WHERE k = :k",
                params={"k": "O'Brien – ünïcode"},
                answer={"values": ["x"], "types": ["text"]},
            )
        )
        s.add(
            JudgementRow(
                probe_id="p1",
                run_id="r",
                target="t",
                cohort="short",
                scenario="factual",
                dataset_id="d1",
                group_id="g1",
                form_id="f",
                query="q?",
                verdict="correct",
                tier="exact",
                expected={"values": ["x"]},
                probe_created_at=now,
                judged_at=now,
            )
        )
        s.add(TallyRow(target="t", cohort="short", group_id="g1", dataset_id="d1", correct=1))
    with Session() as s:
        g = s.scalars(select(GroupRow)).one()
        assert g.params == {"k": "O'Brien – ünïcode"}
        assert s.scalars(select(JudgementRow.verdict)).one() == "correct"
        assert s.get(TallyRow, ("t", "short", "g1")).correct == 1  # type: ignore[union-attr]
    engine.dispose()


def test_concurrent_upgrades_do_not_race(db_url: str) -> None:
    """Services start together against one database; each migrates, none fails."""
    import concurrent.futures

    engines = [make_engine(db_url) for _ in range(8)]
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        list(pool.map(create_schema, engines))
    with engines[0].connect() as conn:
        diff = compare_metadata(
            MigrationContext.configure(conn, opts={"include_name": include_name}), Base.metadata
        )
    assert diff == []
    database = engines[0].url.database
    if engines[0].dialect.name == "sqlite" and database:
        # the migration lock file is gone once every migration is done
        assert not list(Path(database).parent.glob("*.migrate-lock"))
    for e in engines:
        e.dispose()
