"""Expected answers bounded by retention, on SQLite, PostgreSQL and MariaDB: the ones no judgement
references go, an answer referenced again after that is stored again (by a writer that
remembers having stored it), a pinned baseline keeps its answers, a sweep waits for the
writers in flight, and a sweep killed with SIGKILL leaves a consistent store."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, select, text, update

from groundwatch.adapters.db import analytics_store, create_schema, make_engine
from groundwatch.adapters.db.analytics_store import AnalyticsStore
from groundwatch.adapters.db.expected import GENERATION
from groundwatch.adapters.db.retention import Retention, RetentionPolicy
from groundwatch.adapters.db.tables import ExpectedAnswerRow, JudgementRow, StoreCounterRow
from groundwatch.app.store import Store, list_groups
from tests.integration._retention_series import (
    T0,
    backend_db_url,  # noqa: F401 (the db_url fixture)
    write_cycle,
)

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
#: a sweep at every run
SWEEP = RetentionPolicy(cycles=1, days=0, expected_sweep_s=0)


def _stored(engine: Engine) -> set[str]:
    with engine.connect() as conn:
        return set(conn.scalars(select(ExpectedAnswerRow.ref)))


def _referenced(engine: Engine) -> set[str]:
    with engine.connect() as conn:
        return set(conn.scalars(select(JudgementRow.expected_ref).distinct()))


def _refs_of(engine: Engine, run_id: str) -> set[str]:
    with engine.connect() as conn:
        return set(
            conn.scalars(
                select(JudgementRow.expected_ref).where(JudgementRow.run_id == run_id).distinct()
            )
        )


def _gold(db_url: str, engine: Engine) -> dict[str, list[str]]:
    """``show``'s expected answer of every group in the newest cycle."""
    listing = list_groups(
        Store(db_url, "--database-url", engine), series="s", window_runs=1, scenario=None
    )
    return {g.group_id: g.gold for g in listing.rows}


def test_a_pruned_answer_referenced_again_is_stored_again(db_url: str) -> None:
    engine = make_engine(db_url)
    create_schema(engine)
    store = AnalyticsStore(engine)  # one writer all along: it remembers what it stored
    for c in range(1, 5):
        write_cycle(store, series="s", cycle=c, groups=3, versioned=True)
    first = _refs_of(engine, "s-c1")
    assert len(first) == 3 and len(_stored(engine)) == 12

    report = Retention(engine, SWEEP, clock=lambda: T0 + 5 * 60).prune()
    assert report.expected_answers == 9  # versions 1-3 of 3 groups, their cycles pruned
    assert _stored(engine) == _referenced(engine) == _refs_of(engine, "s-c4")
    stats = Retention(engine, SWEEP).stats()  # what `store stats` and /metrics show
    assert stats.rows["expected_answers"] == 3
    dry = Retention(engine, SWEEP, clock=lambda: T0 + 5 * 60).prune(dry_run=True)
    assert dry.expected_answers == 0

    # the first version again (an answer changed back), through the writer that stored it
    write_cycle(store, series="s", cycle=5, groups=3, answer_version=1)
    assert _refs_of(engine, "s-c5") == first
    assert first <= _stored(engine)
    assert _referenced(engine) <= _stored(engine)
    assert _gold(db_url, engine) == {f"g{g:05d}": [f"answer {g} v1"] for g in range(3)}
    engine.dispose()


def test_a_pinned_baseline_keeps_its_expected_answers(db_url: str) -> None:
    engine = make_engine(db_url)
    create_schema(engine)
    store = AnalyticsStore(engine)
    for c in range(1, 5):
        write_cycle(store, series="s", cycle=c, groups=3, versioned=True)
    retention = Retention(engine, SWEEP, clock=lambda: T0 + 5 * 60)
    retention.pin("s-c1", "baseline")
    retention.prune()
    assert _stored(engine) == _refs_of(engine, "s-c1") | _refs_of(engine, "s-c4")
    assert len(_stored(engine)) == 6
    with engine.connect() as conn:
        probes = list(
            conn.scalars(select(JudgementRow.probe_id).where(JudgementRow.run_id == "s-c1"))
        )
    answers = Store(db_url, "--database-url", engine).answers(probes)
    assert len(answers) == 18
    assert {(e or {}).get("version") for _, _, e in answers} == {1}
    engine.dispose()


#: a transaction of this database waiting for the generation's lock, per server
_WAITING = {
    "postgresql": "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
    " AND wait_event_type = 'Lock' AND query LIKE 'SELECT pg_advisory_xact_lock(%'",
    # MariaDB lists a transaction that has only read in innodb_trx, not while its first write
    # waits: the raise is seen in the process list (the final asserts tell a wait from a pass)
    "mysql": "SELECT count(*) FROM information_schema.processlist WHERE db = DATABASE()"
    " AND info LIKE 'UPDATE store_counters%'",
}


@pytest.mark.parametrize("server", ["postgresql", "mysql"])
def test_a_sweep_waits_for_the_writers_in_flight(
    server: str, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A writer holds the generation from its first write to its commit: a sweep that starts
    meanwhile raises the generation only after that commit, so it reads the writer's
    judgements and keeps the answers they reference, though the writer did not write them
    (it remembered them stored)."""
    fresh: Callable[[], str] = request.getfixturevalue(
        "fresh_pg_url" if server == "postgresql" else "fresh_mysql_url"
    )
    engine = make_engine(fresh())
    create_schema(engine)
    store = AnalyticsStore(engine)
    for c in range(1, 4):
        write_cycle(store, series="s", cycle=c, groups=2, versioned=True)
    v1, v2 = _refs_of(engine, "s-c1"), _refs_of(engine, "s-c2")
    clock = T0 + 4 * 60
    with engine.begin() as conn:  # a sweep ran just now: this pruning run does not sweep
        conn.execute(
            update(StoreCounterRow).where(StoreCounterRow.name == GENERATION).values(at=clock)
        )
    Retention(engine, RetentionPolicy(cycles=1, days=0), clock=lambda: clock).prune()
    assert _referenced(engine) == _refs_of(engine, "s-c3") and v1 | v2 <= _stored(engine)

    locked, go = threading.Event(), threading.Event()
    real = analytics_store.generation

    def generation_then_wait(conn: Any) -> int:
        gen = real(conn)
        locked.set()
        assert go.wait(120)
        return gen

    monkeypatch.setattr(analytics_store, "generation", generation_then_wait)
    writer = threading.Thread(
        target=write_cycle,
        args=(store,),
        kwargs={"series": "s", "cycle": 4, "groups": 2, "answer_version": 1},
    )
    writer.start()
    assert locked.wait(120)
    swept: list[int] = []
    sweep = Retention(engine, SWEEP, clock=lambda: clock)
    sweeper = threading.Thread(
        target=lambda: swept.append(sweep._unreferenced_expected(dry_run=False, stop=lambda: False))
    )
    sweeper.start()
    with engine.connect() as conn:
        while not conn.scalar(text(_WAITING[server])) and sweeper.is_alive():
            conn.rollback()
    try:
        assert sweeper.is_alive(), "the sweep did not wait for the writer in flight"
    finally:
        go.set()
    writer.join(120)
    sweeper.join(120)
    assert swept == [2]  # version 2 of both groups; version 1 is referenced again
    assert _stored(engine) == _referenced(engine) == _refs_of(engine, "s-c3") | v1
    engine.dispose()


_KILLED = """
import os, signal, sys
from groundwatch.adapters.db import make_engine
from groundwatch.adapters.db import retention as r
engine = make_engine(sys.argv[1])
policy = r.RetentionPolicy(cycles=1, days=0, batch=2, expected_sweep_s=0)
ret = r.Retention(engine, policy, clock=lambda: 1_780_000_000.0 + 600)
real_raise, real_delete = ret._raise_generation, ret._delete_expected
def raise_then_die():
    out = real_raise()
    if sys.argv[2] == "raised":
        os.kill(os.getpid(), signal.SIGKILL)
    return out
def delete_then_die(refs, older):
    n = real_delete(refs, older)
    if sys.argv[2] == "deleted":
        os.kill(os.getpid(), signal.SIGKILL)
    return n
ret._raise_generation, ret._delete_expected = raise_then_die, delete_then_die
ret.prune()
"""


@pytest.mark.parametrize("die", ["raised", "deleted"])
def test_a_killed_sweep_leaves_a_consistent_store(db_url: str, die: str) -> None:
    engine = make_engine(db_url)
    create_schema(engine)
    store = AnalyticsStore(engine)
    for c in range(1, 5):
        write_cycle(store, series="s", cycle=c, groups=3, versioned=True)
    engine.dispose()
    env = {**os.environ, "PYTHONPATH": str(ROOT / "shared")}
    proc = subprocess.run([sys.executable, "-c", _KILLED, db_url, die], env=env, check=False)
    assert proc.returncode == -signal.SIGKILL
    left = _stored(engine)
    assert _referenced(engine) <= left  # nothing a judgement references is gone
    assert len(left) == (12 if die == "raised" else 10)  # killed after the first batch of 2

    # the same writer (it remembers all 12 stored) and the next run carry on
    write_cycle(store, series="s", cycle=5, groups=3, answer_version=2)
    report = Retention(engine, SWEEP, clock=lambda: T0 + 10 * 60).prune()
    assert report.finished
    assert _stored(engine) == _referenced(engine) == _refs_of(engine, "s-c5")
    assert _gold(db_url, engine) == {f"g{g:05d}": [f"answer {g} v2"] for g in range(3)}
    engine.dispose()
