"""Store errors classified once, whatever layer raised them, on real databases: an outage is
waited out (never a dead letter), refused data is set aside, and no tally counts a judgement its
write did not commit."""

from __future__ import annotations

import sqlite3
import uuid
from pathlib import Path

import psycopg
import pytest
from sqlalchemy import create_engine, func, select, text
from sqlalchemy.exc import IntegrityError, OperationalError

from groundwatch.adapters.bus.memory import MemoryBus
from groundwatch.adapters.db import create_schema, make_engine
from groundwatch.adapters.db.analytics_store import AnalyticsStore
from groundwatch.adapters.db.faults import Fault, classify
from groundwatch.adapters.db.tables import JudgementRow
from groundwatch.contracts import Topics
from groundwatch.errors import StoreUnavailable
from groundwatch.runtime.consume import RetryPolicy, consume
from groundwatch.stages.analytics.stage import AnalyticsStage
from tests.integration.test_analytics_persistence import judgements, stored_tallies
from tests.own_postgres import own_postgres
from tests.waiting import until

pytestmark = [pytest.mark.integration, pytest.mark.postgres]


def _closed_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # closed again when the block ends: nothing listens


def test_every_layer_of_a_refused_connection_is_retriable() -> None:
    url = f"postgresql+psycopg://postgres@127.0.0.1:{_closed_port()}/x"
    engine = create_engine(url, pool_pre_ping=True)
    with pytest.raises(OperationalError) as wrapped:
        engine.connect()
    with pytest.raises(psycopg.OperationalError) as raw:  # the pool's own: not a SQLAlchemyError
        engine.raw_connection()
    with pytest.raises(psycopg.OperationalError) as driver:
        psycopg.connect(f"host=127.0.0.1 port={_closed_port()} connect_timeout=2")
    assert classify(wrapped.value) is Fault.RETRIABLE
    assert classify(raw.value) is Fault.RETRIABLE
    assert classify(driver.value) is Fault.RETRIABLE
    assert classify(ConnectionRefusedError()) is Fault.RETRIABLE


def test_postgres_codes_sort_outages_from_refusals(fresh_pg_url: object) -> None:
    url = fresh_pg_url()  # type: ignore[operator]
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE t (id int PRIMARY KEY, n smallint)"))
        conn.execute(text("INSERT INTO t VALUES (1, 1)"))
    with pytest.raises(IntegrityError) as dup, engine.begin() as conn:
        conn.execute(text("INSERT INTO t VALUES (1, 2)"))
    with pytest.raises(Exception) as out_of_range, engine.begin() as conn:
        conn.execute(text("INSERT INTO t VALUES (2, 99999)"))
    with pytest.raises(Exception) as missing, engine.begin() as conn:
        conn.execute(text("SELECT * FROM no_such_table"))
    # the server ends the session (an admin shutdown, a failover): SQLSTATE 57P01, connection gone
    with engine.connect() as victim:
        pid = victim.execute(text("SELECT pg_backend_pid()")).scalar_one()
        with engine.connect() as other:
            other.execute(text("SELECT pg_terminate_backend(:p)"), {"p": pid})
        with pytest.raises(OperationalError) as terminated:
            victim.execute(text("SELECT 1"))
    # a statement past its timeout: SQLSTATE 57014
    with pytest.raises(OperationalError) as timed_out, engine.begin() as conn:
        conn.execute(text("SET LOCAL statement_timeout = 1"))
        conn.execute(text("SELECT pg_sleep(5)"))
    engine.dispose()
    assert classify(dup.value) is Fault.PERMANENT
    assert classify(out_of_range.value) is Fault.PERMANENT
    assert classify(missing.value) is None  # not the data, and no outage: a bug or a config
    assert classify(terminated.value) is Fault.RETRIABLE
    assert classify(timed_out.value) is Fault.RETRIABLE


def test_sqlite_locked_and_full_are_retriable_a_constraint_is_not(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    first = sqlite3.connect(path, timeout=0)
    first.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)")
    first.commit()
    first.execute("BEGIN IMMEDIATE")
    first.execute("INSERT INTO t VALUES (1, 'a')")
    second = sqlite3.connect(path, timeout=0)
    with pytest.raises(sqlite3.OperationalError) as locked:
        second.execute("INSERT INTO t VALUES (2, 'b')")
    first.commit()
    with pytest.raises(sqlite3.IntegrityError) as dup:
        second.execute("INSERT INTO t VALUES (1, 'c')")
    # a full disk, for real: the file may not grow past its pages
    second.execute(
        "PRAGMA max_page_count = " + str(second.execute("PRAGMA page_count").fetchone()[0])
    )
    with pytest.raises(sqlite3.OperationalError) as full:
        second.executemany("INSERT INTO t (v) VALUES (?)", [("x" * 4000,)] * 50)
    with pytest.raises(sqlite3.OperationalError) as missing:
        second.execute("SELECT * FROM nope")
    first.close()
    second.close()
    assert "locked" in str(locked.value) and classify(locked.value) is Fault.RETRIABLE
    assert "full" in str(full.value) and classify(full.value) is Fault.RETRIABLE
    assert classify(dup.value) is Fault.PERMANENT
    assert classify(missing.value) is None


def test_a_bug_is_no_store_fault() -> None:
    assert classify(RuntimeError("boom")) is None
    assert classify(KeyError("k")) is None


async def test_store_down_is_waited_out_and_tallies_count_only_what_committed() -> None:
    """The analytics store stopped between two batches: the reload after a failed write goes
    through the driver's own connection (``raw_connection``) and must still say "later"; once the
    store is back, every judgement is stored once and the tallies equal a run without outage."""
    batch = judgements(groups=10)
    with own_postgres() as pg:
        engine = make_engine(pg.url)
        create_schema(engine)
        stage = AnalyticsStage(AnalyticsStore(engine))
        await stage.handle(batch[:20])
        pg.halt()
        with pytest.raises(StoreUnavailable):
            await stage.handle(batch[20:40])  # the write fails: memory marked ahead of the store
        with pytest.raises(StoreUnavailable):
            await stage.handle(batch[20:40])  # the reload (driver-level) fails likewise
        assert stage._needs_reload
        pg.start()
        await stage.handle(batch[20:])
        with engine.connect() as conn:
            n = conn.execute(select(func.count()).select_from(JudgementRow)).scalar_one()
        engine.dispose()
        during = stored_tallies(pg.url)

        # the same judgements on a store that never went down
        reference = make_engine(pg.url.rsplit("/", 1)[0] + "/postgres")
        name = f"ref_{uuid.uuid4().hex[:8]}"
        with reference.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
        reference.dispose()
        ref_url = pg.url.rsplit("/", 1)[0] + f"/{name}"
        ref_engine = make_engine(ref_url)
        create_schema(ref_engine)
        await AnalyticsStage(AnalyticsStore(ref_engine)).handle(batch)
        ref_engine.dispose()
        assert n == len(batch)
        assert during == stored_tallies(ref_url)


async def test_consume_loop_never_dead_letters_for_a_store_outage() -> None:
    """The consume loop over the real stage while the store is down: the batch is rewound and
    waited out, not isolated into dead letters (before: 1,208 of 2,208 dead-lettered)."""
    import asyncio

    batch = judgements(groups=30)
    topics = Topics("sf.")
    with own_postgres() as pg:
        engine = make_engine(pg.url)
        create_schema(engine)
        stage = AnalyticsStage(AnalyticsStore(engine))
        bus = MemoryBus()
        await bus.start()
        loop = consume(stage, bus, topics, policy=RetryPolicy(backoff_s=0.05, backoff_max_s=0.2))
        task = asyncio.create_task(loop.run())
        await asyncio.wait_for(loop.ready.wait(), 30)
        from groundwatch.adapters.bus.encode import to_outgoing

        pg.halt()
        await bus.publish_many(to_outgoing(batch, topics))
        # the loop meets the outage several times (each a rewind), and dead-letters nothing
        await until("three rewinds", lambda: task.done() or loop.stats.retries >= 3 * len(batch))
        assert not task.done(), "the loop ended on a store outage"
        assert loop.stats.dead_lettered == 0
        pg.start()
        await until("the batch stored", lambda: task.done() or loop.stats.consumed >= len(batch))
        assert not task.done(), "the loop ended on a store outage"
        loop.stop()
        await task
        await bus.stop()
        with engine.connect() as conn:
            n = conn.execute(select(func.count()).select_from(JudgementRow)).scalar_one()
        engine.dispose()
        assert n == len(batch) and loop.stats.dead_lettered == 0
        # an outage is no reason to take the batch apart (applied one by one, out of order)
        assert loop.stats.isolated_batches == 0
