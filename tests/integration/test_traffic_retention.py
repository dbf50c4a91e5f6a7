"""Windows of users' traffic are pruned as probe cycles are: the newest kept raw, the older ones
rolled up into their groups' summaries and their judgements gone, on SQLite, PostgreSQL and
MySQL."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import create_engine, func, select, text

from groundwatch.adapters.db.retention import Retention, RetentionPolicy
from groundwatch.adapters.db.runs import latest_cycle
from groundwatch.adapters.db.tables import JudgementRow, JudgementSummaryRow, RunRow
from groundwatch.adapters.sources.generate import generate_groups
from groundwatch.adapters.targets import CallableTarget, TargetLimits
from groundwatch.app.embedded import EmbeddedPipeline
from groundwatch.contracts import TRAFFIC_COHORT, TRAFFIC_WINDOW_STATUS, TrafficRecord
from groundwatch.core.model import SemanticGroup
from groundwatch.core.traffic import GroundingIndex
from groundwatch.runtime.traffic_api import bus_publisher
from groundwatch.stages.runner.lanes import Runner
from tests.integration.test_mysql import STORE_TABLES
from tests.unit.traffic_questions import FLEET
from tests.waiting import until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

WINDOWS = 5
KEPT = 2
HOUR = 3600.0


@pytest.fixture(params=["sqlite", "postgresql", "mysql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'store.db'}"
    elif request.param == "postgresql":
        factory: Callable[[], str] = request.getfixturevalue("fresh_pg_url")
        yield factory()
    else:  # the shared test database: the store's tables dropped after, as test_mysql does
        url, _ = request.getfixturevalue("mysql_urls")
        try:
            yield url
        finally:
            engine = create_engine(url)
            with engine.begin() as conn:
                for table in STORE_TABLES:
                    conn.execute(text(f"DROP TABLE IF EXISTS {table}"))
            engine.dispose()


@pytest.fixture(scope="module")
def groups(tmp_path_factory: pytest.TempPathFactory) -> list[SemanticGroup]:
    db = tmp_path_factory.mktemp("fleet") / "fleet.sqlite"
    with sqlite3.connect(db) as conn:
        conn.executescript(FLEET)
    return generate_groups(f"sqlite:///{db}", k=2, cohorts=("short",), dataset_id="fleet").groups


def _asked(groups: list[SemanticGroup], n: int) -> list[tuple[str, SemanticGroup]]:
    index = GroundingIndex(groups)
    out = [
        (g.forms[0].text, g) for g in groups if index.match(g.forms[0].text).group_id == g.group_id
    ]
    assert len(out) >= n
    return out[:n]


async def test_traffic_windows_are_pruned_like_probe_cycles(
    db_url: str, groups: list[SemanticGroup]
) -> None:
    gold = {f.text: g.answer.values[0] for g in groups for f in g.forms}
    runner = Runner(
        {"shipbot": CallableTarget(lambda q: f"It is {gold[q]}.")},
        {"shipbot": TargetLimits(concurrency=4)},
    )
    pipeline = EmbeddedPipeline(groups, runner, traffic=True, database_url=db_url)
    await pipeline.start()
    try:
        await pipeline.run(1)  # a probe cycle: the series `report` and `groups` read by default
        probes = pipeline.tallied()
        asked = _asked(groups, 3)
        # the windows end an hour before now: each is a whole past window of its own
        first = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
        first -= timedelta(hours=WINDOWS + 1)
        records = [
            TrafficRecord(
                target="shipbot",
                question=q,
                answer=f"It is {g.answer.values[0]}." if w % 2 else "No idea.",
                asked_at=first + timedelta(hours=w, minutes=5),
                trace_id=f"{w:016x}{i:016x}",
                span_id=f"{i:016x}",
            )
            for w in range(WINDOWS)
            for i, (q, g) in enumerate(asked)
        ]
        publish = bus_publisher(pipeline.bus, pipeline.topics)
        # window after window, as users ask: a judgement of a window older than its group's
        # newest is too late for the live view (dead-lettered), whatever its source
        for w in range(WINDOWS):
            await publish(records[w * len(asked) : (w + 1) * len(asked)])
            want = probes + (w + 1) * len(asked)
            # until the window is tallied (each a distinct judgement)
            await until(f"window {w} tallied", lambda: pipeline.tallied() >= want)  # noqa: B023
            assert pipeline.tallied() == want
        assert pipeline.dead_lettered() == 0
    finally:
        await pipeline.stop()

    from groundwatch.adapters.db import make_engine

    engine = make_engine(db_url)
    series = f"fleet:{TRAFFIC_COHORT}"
    with engine.connect() as conn:
        windows = conn.execute(
            select(RunRow.run_id, RunRow.cycle, RunRow.status)
            .where(RunRow.series == series)
            .order_by(RunRow.cycle)
        ).all()
    assert len(windows) == WINDOWS
    assert {w.status for w in windows} == {TRAFFIC_WINDOW_STATUS}
    # the default series is still the probes': a window is no probed cycle
    latest = latest_cycle(engine)
    assert latest is not None and latest[0] != series

    retention = Retention(engine, RetentionPolicy(cycles=KEPT, days=0, batch=10))
    assert [c.run_id for c in retention.prunable()] == [w.run_id for w in windows[:-KEPT]]
    report = retention.prune()
    assert report.judgements == (WINDOWS - KEPT) * len(asked)
    with engine.connect() as conn:
        left = conn.execute(
            select(JudgementRow.run_id, func.count())
            .where(JudgementRow.series == series)
            .group_by(JudgementRow.run_id)
        ).all()
        summaries = conn.execute(
            select(JudgementSummaryRow.group_id, JudgementSummaryRow.first_cycle).where(
                JudgementSummaryRow.series == series
            )
        ).all()
        probe_rows = conn.scalar(
            select(func.count()).select_from(JudgementRow).where(JudgementRow.series != series)
        )
    assert dict(left) == {w.run_id: len(asked) for w in windows[-KEPT:]}
    assert probe_rows == probes  # the probe cycle is its series' newest: kept
    # each pruned window's verdicts live on in its groups' summaries (they flip every window)
    assert len(summaries) == (WINDOWS - KEPT) * len(asked)
    assert {g.group_id for _, g in asked} == {s.group_id for s in summaries}
    assert retention.prunable() == []  # pruned once, never again
    engine.dispose()
