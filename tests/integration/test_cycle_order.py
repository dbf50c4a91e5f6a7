"""Cycles are ordered by the series, not trusted from the message (issue 34), through the real
analytics stage, its SQLite store and the consume loop on the in-process bus.

Before: a generator restarted on a fresh store numbered its cycles from 1 again — its
judgements were stored and none was counted, with no log line, metric or dead letter; one
judgement claiming cycle 2^31−1 froze its group (the next cycles' verdicts were stored and
ignored). Now a restart continues the series (an epoch, stored), and an impossible or too-late
cycle is dead-lettered with its reason, never stored uncounted.
"""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import func, select

from groundwatch.adapters.bus import Outgoing
from groundwatch.adapters.bus.memory import MemoryBus
from groundwatch.adapters.db import create_schema, make_engine
from groundwatch.adapters.db.analytics_store import AnalyticsStore
from groundwatch.adapters.db.tables import JudgementRow
from groundwatch.contracts import Judgement, Probe, RagResponse, TargetStatus, Topics
from groundwatch.core.model import Expected, Verdict
from groundwatch.core.tagging import GroupStatus, Window
from groundwatch.runtime.consume import ConsumeLoop, RetryPolicy
from groundwatch.stages.analytics.stage import AnalyticsStage
from tests.waiting import until

pytestmark = pytest.mark.integration

FAST = RetryPolicy(backoff_s=0.01, backoff_max_s=0.05, message_attempts=2, stall_after_s=60)
T0 = datetime.now(UTC) - timedelta(hours=2)
GROUPS = ("g1", "g2", "g3")


def judgements(
    cycle: int,
    started_min: int,
    verdict: Verdict = Verdict.CORRECT,
    groups: tuple[str, ...] = GROUPS,
) -> list[Judgement]:
    """Every form of every group in one cycle (3 forms each) that started ``started_min``
    minutes after T0."""
    out = []
    for g in groups:
        for f in range(3):
            p = Probe(
                probe_id=uuid.uuid4(),
                run_id=f"run-{cycle}-{started_min}",
                series="s",
                cycle=cycle,
                cycle_started_at=T0 + timedelta(minutes=started_min),
                dataset_id="d",
                group_id=g,
                form_id=f"{g}-f{f}",
                cohort="short",
                target="t",
                query=f"q {g} {f}",
                expected=Expected(values=["a"]),
                group_forms=3,
            )
            r = RagResponse.for_probe(p, status=TargetStatus.OK, answer="a")
            out.append(Judgement.for_response(r, verdict=verdict, tier="exact"))
    return out


class Pipeline:
    def __init__(self, url: str) -> None:
        self.engine = make_engine(url)
        create_schema(self.engine)
        self.store = AnalyticsStore(self.engine)
        self.bus, self.topics = MemoryBus(partitions=2), Topics("ord.")
        self.stage = self.new_stage()

    def new_stage(self) -> AnalyticsStage:
        return AnalyticsStage(self.store, window=Window(runs=1))

    async def feed(self, batch: list[Judgement]) -> None:
        await self.bus.publish_many(
            [Outgoing(self.topics.judgements.name, j.key, j.to_bytes()) for j in batch]
        )
        loop: ConsumeLoop[Judgement] = ConsumeLoop(
            bus=self.bus,
            topics=self.topics,
            source=self.topics.judgements,
            group="analytics",
            handler=self.stage.handle,
            service="analytics",
            policy=FAST,
        )
        task = asyncio.create_task(loop.run())
        await until(
            "the batch consumed or dead-lettered",
            lambda: task.done() or loop.stats.consumed + loop.stats.dead_lettered >= len(batch),
        )
        assert not task.done(), task
        loop.stop()
        await task

    async def letters(self) -> list[str]:
        c = self.bus.consumer([self.topics.dead_letter.name], f"read-{uuid.uuid4().hex}")
        await c.start()
        got = [self.topics.dead_letter.decode(r.value).error for r in await c.poll(10_000, 0.1)]
        await c.stop()
        return got

    def stored(self) -> int:
        with self.engine.connect() as conn:
            return int(conn.execute(select(func.count()).select_from(JudgementRow)).scalar_one())


@pytest.fixture
def pipeline(tmp_path: Path) -> Pipeline:
    return Pipeline(f"sqlite:///{tmp_path / 'store.db'}")


async def test_a_restarted_generator_continues_the_series(
    pipeline: Pipeline, caplog: pytest.LogCaptureFixture
) -> None:
    for c in (1, 2, 3):
        await pipeline.feed(judgements(c, c))
    assert pipeline.stage.tagger.status("t", "short", "g1") is GroupStatus.ROBUST
    # the generator restarts on a fresh store: cycle 1 again, 10 minutes later — all wrong now
    await pipeline.feed(judgements(1, 10, Verdict.INCORRECT))
    tally = pipeline.stage.tagger.tally("t", "short", "g1")
    assert tally is not None and tally.status is GroupStatus.GAP and tally.cycle == 4
    assert "restarted its cycle numbering" in caplog.text
    assert await pipeline.letters() == [] and pipeline.stored() == 4 * 9
    # every judgement stored is counted: a rebuild from the store agrees, and continues
    stage = pipeline.stage = pipeline.new_stage()
    await pipeline.feed(judgements(2, 11))
    tally = stage.tagger.tally("t", "short", "g1")
    assert tally is not None and tally.status is GroupStatus.ROBUST and tally.cycle == 5
    trs = [(tr.from_status, tr.to_status) for tr in pipeline.store.transitions(group_id="g1")]
    assert trs == [(GroupStatus.GAP, GroupStatus.ROBUST), (GroupStatus.ROBUST, GroupStatus.GAP)]


async def test_impossible_and_too_late_cycles_are_dead_lettered_never_stored_uncounted(
    pipeline: Pipeline,
) -> None:
    for c in (1, 2):
        await pipeline.feed(judgements(c, c))
    # one judgement claiming the last cycle there is, all wrong: it must not freeze g1
    (forged,) = judgements(2**31 - 1, 3, Verdict.INCORRECT, groups=("g1",))[:1]
    await pipeline.feed([forged])
    await pipeline.feed(judgements(3, 4, Verdict.INCORRECT))
    assert pipeline.stage.tagger.status("t", "short", "g1") is GroupStatus.GAP
    await pipeline.feed(judgements(4, 5))
    assert pipeline.stage.tagger.status("t", "short", "g1") is GroupStatus.ROBUST
    # a judgement of cycle 2, arriving after cycles 3 and 4 closed: older than the window
    late = judgements(2, 2, Verdict.INCORRECT, groups=("g2",))[:1]
    await pipeline.feed(late)
    letters = await pipeline.letters()
    assert len(letters) == 2
    assert "ahead of its newest cycle 2" in letters[0]
    assert "older than group g2's window" in letters[1]
    assert pipeline.stored() == 4 * 9  # neither was stored
