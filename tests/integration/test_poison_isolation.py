"""Poison isolation in the consume loop (issue 17): a batch that fails twice is retried one message
at a time; what still fails alone is dead-lettered with its error and the rest goes through; an
outage (nothing goes through) is waited out with bounded backoff, never dead-lettered, and shows
as a stalled consumer (readiness red, metric) while it lasts.

The store-side case runs the real analytics stage on PostgreSQL with a CHECK constraint that
refuses one value: a real refusal by the database of a message the contract accepts (the
contract now rules out NUL and over-long ids, so a constraint stands in for "whatever else a
store may refuse"). Before the fix that refusal was a ``RetryLater`` that rewound the whole
2,000-record batch forever with ``/readyz`` 200.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Sequence

import pytest
from prometheus_client import CollectorRegistry
from sqlalchemy import func, select, text

from groundwatch.adapters.bus import Outgoing
from groundwatch.adapters.bus.memory import MemoryBus
from groundwatch.adapters.db import create_schema, make_engine
from groundwatch.adapters.db.analytics_store import AnalyticsStore
from groundwatch.adapters.db.tables import JudgementRow
from groundwatch.contracts import Judgement, Probe, RagResponse, TargetStatus, Topics, _Contract
from groundwatch.core.model import Expected, Verdict
from groundwatch.errors import RetryLater
from groundwatch.runtime.consume import ConsumeLoop, RetryPolicy, consume
from groundwatch.runtime.service import LoopTelemetry
from groundwatch.stages.analytics.stage import AnalyticsStage
from tests.e2e.procs import metric_samples
from tests.waiting import WaitTimedOut, until

pytestmark = pytest.mark.integration

FAST = RetryPolicy(backoff_s=0.01, backoff_max_s=0.05, message_attempts=3, stall_after_s=60)


def probe(i: int) -> Probe:
    return Probe(
        probe_id=uuid.uuid4(),
        run_id="r",
        dataset_id="d",
        group_id=f"g{i % 40}",
        form_id=f"f{i}",
        cohort="short",
        target="t",
        query=f"q{i}",
        expected=Expected(values=["a"]),
        group_forms=5,
    )


def judgement(p: Probe) -> Judgement:
    r = RagResponse.for_probe(p, status=TargetStatus.OK, answer="a")
    return Judgement.for_response(r, verdict=Verdict.CORRECT, tier="exact")


async def run_until(loop: ConsumeLoop[object], done: Callable[[], bool], timeout: float) -> None:
    task = asyncio.create_task(loop.run())
    try:
        try:
            await until("the loop's work", lambda: done() or task.done(), timeout)
        except WaitTimedOut as exc:
            raise AssertionError(f"{exc}; stats {loop.stats}") from None
        assert not task.done(), f"loop ended: {task.exception()!r}"
    finally:
        loop.stop()
        await task


async def letters_and_outputs(bus: MemoryBus, topics: Topics) -> tuple[list[bytes], list[bytes]]:
    out = []
    for topic in (topics.dead_letter.name, topics.judgements.name):
        c = bus.consumer([topic], f"read-{uuid.uuid4().hex}")
        await c.start()
        got: list[bytes] = []
        for _ in range(5):
            got.extend(r.value for r in await c.poll(10_000, 0.05))
        await c.stop()
        out.append(got)
    return out[0], out[1]


async def test_one_message_that_always_says_later_is_dead_lettered_the_rest_goes_through() -> None:
    bus, topics = MemoryBus(partitions=3), Topics("iso.")
    probes = [probe(i) for i in range(300)]
    poison = probes[137].probe_id
    await bus.publish_many([Outgoing(topics.probes.name, p.key, p.to_bytes()) for p in probes])
    calls: list[int] = []

    async def handler(batch: list[Probe]) -> Sequence[_Contract]:
        calls.append(len(batch))
        if any(p.probe_id == poison for p in batch):
            raise RetryLater("the store refused it")
        return [judgement(p) for p in batch]

    loop: ConsumeLoop[Probe] = ConsumeLoop(
        bus=bus,
        topics=topics,
        source=topics.probes,
        group="g",
        handler=handler,
        service="test",
        max_records=500,
        policy=FAST,
    )
    await run_until(loop, lambda: loop.stats.consumed >= 300, 30)
    letters, outputs = await letters_and_outputs(bus, topics)
    (letter,) = [topics.dead_letter.decode(x) for x in letters]
    assert topics.probes.decode(letter.raw).probe_id == poison
    assert "the store refused it" in letter.error and "3 attempts" in letter.error
    judged = {topics.judgements.decode(x).probe_id for x in outputs}
    assert judged == {p.probe_id for p in probes} - {poison}
    # bounded: the batch (whichever partitions it held) twice, then one at a time
    assert loop.stats.isolated_batches >= 1 and loop.stats.dead_lettered == 1
    assert not loop.stalled() and loop.stalled_for() == 0.0
    print(f"\nISOLATION-FIGURES handler_calls={len(calls)} retries={loop.stats.retries}")


async def test_an_outage_is_waited_out_never_dead_lettered_and_shows_as_stalled() -> None:
    bus, topics = MemoryBus(partitions=2), Topics("out.")
    probes = [probe(i) for i in range(50)]
    await bus.publish_many([Outgoing(topics.probes.name, p.key, p.to_bytes()) for p in probes])
    down = True
    calls = 0

    async def handler(batch: list[Probe]) -> Sequence[_Contract]:
        nonlocal calls
        calls += 1
        if down:
            raise RetryLater("database unavailable")
        return [judgement(p) for p in batch]

    policy = RetryPolicy(backoff_s=0.01, backoff_max_s=0.05, message_attempts=2, stall_after_s=0.3)
    loop: ConsumeLoop[Probe] = ConsumeLoop(
        bus=bus,
        topics=topics,
        source=topics.probes,
        group="g",
        handler=handler,
        service="test",
        policy=policy,
    )
    registry = CollectorRegistry()
    LoopTelemetry(registry, "test").attach(loop)
    task = asyncio.create_task(loop.run())
    # stalled once no batch went through for stall_after_s, however long the machine takes
    stalled_during = await until("the loop stalled", loop.stalled)
    gauge = metric_samples(
        __import__("prometheus_client").generate_latest(registry).decode(),
        "groundwatch_consumer_stalled",
    )
    calls_during, retries_during = calls, loop.stats.retries
    down = False
    await until("50 consumed", lambda: loop.stats.consumed >= 50)
    loop.stop()
    await task
    letters, outputs = await letters_and_outputs(bus, topics)
    assert stalled_during and list(gauge.values()) == [1.0]
    assert letters == [] and len(outputs) == 50
    assert not loop.stalled()
    # isolation passes give up after a few messages when nothing goes through: per backoff
    # interval at most a handful of calls, not one per message of the batch
    assert calls_during < 20 * 4 + 10, calls_during
    print(f"\nOUTAGE-FIGURES calls={calls_during} retries={retries_during} dead_letters=0")


async def test_stalled_consumer_turns_readiness_red() -> None:
    """``/readyz`` of the service shell is 503 with ``progress: false`` while a loop is stalled."""
    import httpx
    from fastapi import FastAPI

    from groundwatch.runtime.service import ServiceParts, build_app

    bus, topics = MemoryBus(partitions=1), Topics("rdy.")
    await bus.publish_many([Outgoing(topics.probes.name, b"g", probe(1).to_bytes())])
    healthy = False

    async def handler(batch: list[Probe]) -> Sequence[_Contract]:
        if not healthy:
            raise RetryLater("database unavailable")
        return [judgement(p) for p in batch]

    policy = RetryPolicy(backoff_s=0.01, backoff_max_s=0.02, stall_after_s=0.3)
    loop: ConsumeLoop[Probe] = ConsumeLoop(
        bus=bus, topics=topics, source=topics.probes, group="g", handler=handler,
        service="test", policy=policy,
    )  # fmt: skip

    async def bootstrap() -> ServiceParts:
        return ServiceParts(bus=bus, topics=topics, registry=CollectorRegistry(), loops=[loop])

    app: FastAPI = build_app("test", bootstrap)
    async with app.router.lifespan_context(app):
        client = httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url="http://t")

        async def readiness(code: int) -> httpx.Response | None:
            r = await client.get("/readyz")
            return r if r.status_code == code else None

        red = await until("/readyz 503 while stalled", lambda: readiness(503))
        healthy = True
        green = await until("/readyz 200 once it goes on", lambda: readiness(200))
        await client.aclose()
    assert red.status_code == 503 and red.json()["checks"]["progress"] is False
    assert green.status_code == 200 and green.json()["checks"]["progress"] is True


@pytest.mark.postgres
async def test_a_value_postgres_refuses_is_dead_lettered_and_every_other_one_stored(
    fresh_pg_url: Callable[[], str],
) -> None:
    engine = make_engine(fresh_pg_url())
    create_schema(engine)
    with engine.begin() as conn:  # the stand-in refusal: a real one, by the database
        conn.execute(
            text("ALTER TABLE judgements ADD CONSTRAINT no_poison CHECK (query <> 'poison')")
        )
    bus, topics = MemoryBus(partitions=3), Topics("pg.")
    probes = [probe(i) for i in range(2000)]
    probes[1234] = probes[1234].model_copy(update={"query": "poison"})
    batch = [judgement(p) for p in probes]
    await bus.publish_many([Outgoing(topics.judgements.name, j.key, j.to_bytes()) for j in batch])
    stage = AnalyticsStage(AnalyticsStore(engine))
    loop = consume(stage, bus, topics, policy=FAST)
    started = time.monotonic()
    await run_until(loop, lambda: loop.stats.consumed >= 2000, 240)  # about 20 s idle: generous
    took = time.monotonic() - started
    letters, _ = await letters_and_outputs(bus, topics)
    with engine.connect() as conn:
        stored = conn.execute(select(func.count()).select_from(JudgementRow)).scalar_one()
    engine.dispose()
    (letter,) = [topics.dead_letter.decode(x) for x in letters]
    assert topics.judgements.decode(letter.raw).query == "poison"
    assert "Unstorable" in letter.error and "no_poison" in letter.error
    assert stored == 1999 and len(stage.tagger) == 1999
    # retried at most twice as a batch before the isolation (none: a refusal is not "later")
    assert loop.stats.retries == 0 and loop.stats.isolated_batches >= 1
    print(f"\nPG-ISOLATION-FIGURES stored={stored} dead_letters=1 seconds={took:.1f}")
