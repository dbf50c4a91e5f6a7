"""The in-process bus drops what every group reading a partition has committed (``trim_consumed``),
so a continuous ``groundwatch run`` holds the messages in flight, not every cycle's."""

from __future__ import annotations

from groundwatch.adapters.bus import Outgoing
from groundwatch.adapters.bus.memory import TRIM_AT, MemoryBus
from tests.waiting import until


async def publish(bus: MemoryBus, n: int, topic: str = "t") -> None:
    await bus.publish_many([Outgoing(topic, b"k", b"%d" % i) for i in range(n)])


async def consume_all(bus: MemoryBus, group: str, topic: str = "t") -> list[int]:
    c = bus.consumer([topic], group)
    await c.start()
    seen: list[int] = []
    try:
        while records := await c.poll(1000, 0.01):
            seen.extend(r.offset for r in records)
            await c.commit(records)
    finally:
        await c.stop()
    return seen


async def test_records_every_group_committed_are_dropped_offsets_stay_absolute() -> None:
    bus = MemoryBus(partitions=1, trim_consumed=True)
    total = 3 * TRIM_AT + 7
    await publish(bus, total)
    assert await consume_all(bus, "a") == list(range(total))
    # dropped in steps of at least TRIM_AT committed records (one cut per step, not per commit)
    (start,) = bus.start_offsets("t")
    assert total - TRIM_AT < start <= total
    assert [r.offset for r in bus.records("t")] == list(range(start, total))
    assert bus.end_offsets("t") == [total]
    await publish(bus, 2)
    # a new message keeps counting from where the log was; the group reads only it
    assert [r.offset for r in bus.records("t")][-2:] == [total, total + 1]
    assert await consume_all(bus, "a") == [total, total + 1]


async def test_a_group_behind_keeps_the_records_it_has_not_committed() -> None:
    bus = MemoryBus(partitions=1, trim_consumed=True)
    await publish(bus, 2 * TRIM_AT)
    slow = bus.consumer(["t"], "slow")
    await slow.start()
    first = await slow.poll(10, 0.01)
    await slow.commit(first)  # "slow" has committed 10
    await consume_all(bus, "fast")
    assert len(bus.records("t")) == 2 * TRIM_AT  # less than TRIM_AT committed by both
    assert slow.lag() == 2 * TRIM_AT - 10
    rest = await slow.poll(4 * TRIM_AT, 0.01)
    assert [r.offset for r in rest] == list(range(10, 2 * TRIM_AT))
    await slow.commit(rest)
    assert bus.records("t") == [] and slow.lag() == 0  # 2 × TRIM_AT committed by both: cut
    await slow.stop()


async def test_a_reader_that_committed_nothing_yet_holds_every_record() -> None:
    bus = MemoryBus(partitions=1, trim_consumed=True)
    idle = bus.consumer(["t"], "idle")
    await idle.start()
    await publish(bus, 2 * TRIM_AT)
    await consume_all(bus, "busy")
    assert len(bus.records("t")) == 2 * TRIM_AT
    assert len(await idle.poll(4 * TRIM_AT, 0.01)) == 2 * TRIM_AT
    await idle.stop()


async def test_a_group_that_joins_late_starts_at_the_earliest_record_kept() -> None:
    bus = MemoryBus(partitions=1, trim_consumed=True)
    await publish(bus, TRIM_AT + 5)
    await consume_all(bus, "a")
    await publish(bus, 3)
    late = await consume_all(bus, "late")
    assert late == list(range(TRIM_AT + 5, TRIM_AT + 8))


async def test_without_trimming_every_record_is_kept() -> None:
    bus = MemoryBus(partitions=2)
    await publish(bus, 3 * TRIM_AT)
    await consume_all(bus, "a")
    assert len(bus.records("t")) == 3 * TRIM_AT
    assert bus.start_offsets("t") == [0, 0]


async def test_a_publisher_waits_while_a_topic_holds_max_backlog_uncommitted_records() -> None:
    """Backpressure: the generator of a big cycle must not put every probe in the bus at once
    (a 50k-probe cycle held them all); it waits for the readers' commits, as a producer waits on
    a full buffer, and a topic nobody reads never blocks."""
    import asyncio

    bus = MemoryBus(partitions=2, trim_consumed=True, max_backlog=100)
    await publish(bus, 500, topic="unread")  # no reader: nothing to wait for
    reader = bus.consumer(["t"], "g")
    await reader.start()
    backlogs: list[int] = []

    async def produce() -> None:
        for _ in range(10):
            await publish(bus, 50)
            backlogs.append(bus.backlog("t"))

    producer = asyncio.create_task(produce())
    await until("three batches uncommitted", lambda: bus.backlog("t") >= 150)
    for _ in range(10):  # the loop runs on: the producer stays blocked, it is no passing state
        await asyncio.sleep(0)
    assert not producer.done()  # blocked: 150 uncommitted > 100
    assert bus.backlog("t") == 150
    seen = 0
    while seen < 500:
        records = await reader.poll(40, 0.5)
        assert records, "the producer stalled"
        seen += len(records)
        await reader.commit(records)
        await asyncio.sleep(0)
    await asyncio.wait_for(producer, 30)  # a hang guard: generous
    assert max(backlogs) <= 100 + 50  # at most one batch over the bound
    await reader.stop()
