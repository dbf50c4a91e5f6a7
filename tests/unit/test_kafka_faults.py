"""A Kafka cluster's routine faults, without a broker (issue 30): the adapter retries what waiting
cures and the consume loop never ends on it.

On a 3-broker cluster one broker down for 30 s made aiokafka fail a batch with
``LeaderNotAvailableError`` (the batch expired while its partition had no leader); that error
ended the consume loops and the generator for good. The fakes below fail exactly as aiokafka
does — a batch future failing with the broker's error, ``getmany`` raising — so each test fails
on the code before the fix.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Sequence
from typing import Any

import pytest
from aiokafka.errors import (
    KafkaConnectionError,
    LeaderNotAvailableError,
    MessageSizeTooLargeError,
    NodeNotReadyError,
    NotLeaderForPartitionError,
    RequestTimedOutError,
)

from groundwatch.adapters.bus import Outgoing
from groundwatch.adapters.bus.kafka import (
    BusRetry,
    KafkaBus,
    KafkaConsumer,
    NotEnoughBrokers,
    TopicPolicy,
    retriable,
)
from groundwatch.adapters.bus.memory import MemoryBus
from groundwatch.contracts import Probe, RagResponse, TargetStatus, Topics, _Contract
from groundwatch.core.model import Expected
from groundwatch.errors import BusUnavailable, ConfigError
from groundwatch.runtime.consume import ConsumeLoop, RetryPolicy
from tests.waiting import until

FAST = BusRetry(backoff_s=0.01, backoff_max_s=0.05, deadline_s=5.0)


class FakeBatch:
    def __init__(self, room: int = 1000) -> None:
        self.records: list[tuple[bytes | None, bytes]] = []
        self.room = room

    def append(self, *, key: bytes | None, value: bytes, timestamp: None) -> object | None:
        if len(self.records) >= self.room:
            return None
        self.records.append((key, value))
        return object()


class FakeProducer:
    """Fails the futures of its first ``failing`` batches with ``error`` (as aiokafka fails an
    expired batch), then acknowledges."""

    def __init__(self, log: list[bytes], error: BaseException | None, failing: int) -> None:
        self.log = log
        self.error = error
        self.failing = failing
        self.sent = 0
        self.stopped = False

    async def partitions_for(self, topic: str) -> set[int]:
        return {0, 1, 2}

    def create_batch(self) -> FakeBatch:
        return FakeBatch(room=7)

    async def send_batch(self, batch: FakeBatch, topic: str, *, partition: int) -> Any:
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.sent += 1
        if self.error is not None and self.sent <= self.failing:
            fut.set_exception(self.error)
        else:
            self.log.extend(v for _, v in batch.records)
            fut.set_result(None)
        return fut

    async def stop(self) -> None:
        self.stopped = True


def fake_bus(
    errors: list[tuple[BaseException | None, int]], retry: BusRetry = FAST
) -> tuple[KafkaBus, list[bytes], list[FakeProducer]]:
    """A KafkaBus whose n-th producer fails as ``errors[n]`` says (the last entry repeats)."""
    log: list[bytes] = []
    made: list[FakeProducer] = []
    bus = KafkaBus("127.0.0.1:1", retry=retry)

    async def start_producer() -> Any:
        error, failing = errors[min(len(made), len(errors) - 1)]
        made.append(FakeProducer(log, error, failing))
        return made[-1]

    bus._start_producer = start_producer  # type: ignore[method-assign]
    return bus, log, made


def messages(n: int) -> list[Outgoing]:
    return [Outgoing("t", f"k{i % 5}".encode(), f"m{i}".encode()) for i in range(n)]


async def test_publish_while_a_leader_is_down_retries_until_one_is_elected() -> None:
    bus, log, made = fake_bus([(LeaderNotAvailableError(), 10**6), (None, 0)])
    await bus.start()
    await bus.publish_many(messages(40))
    # every message arrived; the producer whose batches expired was replaced (its sequence
    # numbers were spent) and stopped
    assert set(log) >= {f"m{i}".encode() for i in range(40)}
    assert len(made) == 2 and made[0].stopped
    await bus.stop()


async def test_only_the_failed_partitions_go_again_in_order() -> None:
    # the first two batches fail (not leader), the rest are acknowledged at once
    bus, log, _ = fake_bus([(NotLeaderForPartitionError(), 2), (None, 0)])
    await bus.start()
    await bus.publish_many(messages(60))
    assert {f"m{i}".encode() for i in range(60)} <= set(log)
    # what went again is the failed partitions from their first failed batch on, not everything
    assert len(log) < 120, len(log)
    # within one key, the last copy of each message keeps the publishing order
    for k in range(5):
        ours = [int(v[1:]) for v in log if int(v[1:]) % 5 == k]
        last_pos = {m: i for i, m in enumerate(ours)}
        assert sorted(last_pos, key=last_pos.__getitem__) == sorted(last_pos)
    await bus.stop()


async def test_a_publish_that_cannot_get_through_gives_up_after_the_deadline() -> None:
    retry = BusRetry(backoff_s=0.01, backoff_max_s=0.02, deadline_s=0.3)
    bus, _, made = fake_bus([(RequestTimedOutError(), 10**6)], retry)
    await bus.start()
    started = time.monotonic()
    with pytest.raises(BusUnavailable, match="RequestTimedOutError"):
        await bus.publish_many(messages(5))
    # it gives up once the deadline is past, not before (that it gives up at all is the raise)
    assert time.monotonic() - started >= retry.deadline_s
    assert len(made) > 2  # a new producer for each failed round


async def test_a_fault_no_retry_cures_is_raised_at_once() -> None:
    bus, _, made = fake_bus([(MessageSizeTooLargeError(), 10**6)])
    await bus.start()
    with pytest.raises(MessageSizeTooLargeError):
        await bus.publish_many(messages(3))
    assert len(made) == 1 and made[0].sent <= 3  # one round (a batch per partition), no retry


def test_what_counts_as_retriable() -> None:
    for exc in (
        LeaderNotAvailableError(),
        NotLeaderForPartitionError(),
        RequestTimedOutError(),
        NodeNotReadyError(),
        KafkaConnectionError(),
        ConnectionRefusedError(),
        TimeoutError(),
    ):
        assert retriable(exc), exc
    from aiokafka.errors import (
        GroupCoordinatorNotAvailableError,
        NotCoordinatorForGroupError,
        RebalanceInProgressError,
    )

    for exc in (
        GroupCoordinatorNotAvailableError(),
        NotCoordinatorForGroupError(),
        RebalanceInProgressError(),
    ):
        assert retriable(exc), exc
    assert not retriable(MessageSizeTooLargeError())
    assert not retriable(ValueError("bug"))


def test_replication_defaults_follow_the_cluster() -> None:
    auto = TopicPolicy()
    assert auto.resolve(1) == (1, 1)
    assert auto.resolve(2) == (2, 1)
    assert auto.resolve(3) == (3, 2)
    assert auto.resolve(7) == (3, 2)
    assert TopicPolicy(replication_factor=2, min_insync_replicas=2).resolve(5) == (2, 2)
    with pytest.raises(NotEnoughBrokers, match="GW_KAFKA_REPLICATION_FACTOR=3 but 1 broker"):
        TopicPolicy(replication_factor=3).resolve(1)
    with pytest.raises(ConfigError, match="GW_KAFKA_MIN_INSYNC_REPLICAS=4"):
        TopicPolicy(replication_factor=3, min_insync_replicas=4).resolve(3)


class FlakyInner:
    """An aiokafka consumer whose ``getmany`` raises the given errors first."""

    def __init__(self, errors: list[BaseException]) -> None:
        self.errors = errors
        self.calls = 0

    async def getmany(self, *, timeout_ms: int, max_records: int) -> dict[Any, Any]:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return {}


async def test_poll_rides_out_a_coordinator_or_leader_moving() -> None:
    consumer = KafkaConsumer("127.0.0.1:1", ["t"], "g", "c", FAST)
    inner = FlakyInner([NodeNotReadyError(), RequestTimedOutError(), KafkaConnectionError()])
    consumer._consumer = inner  # type: ignore[assignment]
    assert await consumer.poll(10, 0.01) == []
    assert inner.calls == 4


# --------------------------------------------------------------------------- the consume loop
def probe(i: int) -> Probe:
    return Probe(
        probe_id=uuid.uuid4(),
        run_id="r",
        dataset_id="d",
        group_id=f"g{i % 7}",
        form_id=f"f{i}",
        cohort="c",
        target="t",
        query=f"q{i}",
        expected=Expected(values=["a"]),
    )


class LeaderlessKafka(MemoryBus):
    """Consumes like the memory bus, publishes through a :class:`KafkaBus` whose first producer's
    batches all fail with ``LeaderNotAvailableError`` (a broker down, no leader elected yet)."""

    def __init__(self, failing_rounds: int) -> None:
        super().__init__(partitions=3)
        self.kafka, self.sent, self.made = fake_bus(
            [(LeaderNotAvailableError(), 10**6)] * failing_rounds + [(None, 0)]
        )

    async def start(self) -> None:
        await self.kafka.start()

    async def publish_many(self, messages: Sequence[Outgoing]) -> None:
        mine = [m for m in messages if m.topic.endswith("responses")]
        if mine:
            await self.kafka.publish_many(mine)
        others = [m for m in messages if not m.topic.endswith("responses")]
        await super().publish_many(others)


async def test_publish_while_a_leader_is_down_does_not_end_the_consume_loop() -> None:
    topics = Topics("t.")
    bus = LeaderlessKafka(failing_rounds=3)
    await bus.start()
    await bus.ensure_topics(topics.all())
    probes = [probe(i) for i in range(50)]
    await bus.publish_many(
        [Outgoing(topics.probes.name, p.group_id.encode(), p.to_bytes(), p) for p in probes]
    )

    async def answer(batch: list[Probe]) -> Sequence[_Contract]:
        return [RagResponse.for_probe(p, status=TargetStatus.OK, answer="a") for p in batch]

    loop = ConsumeLoop(
        bus=bus,
        topics=topics,
        source=topics.probes,
        group="runner",
        handler=answer,
        service="test",
        max_records=20,
        policy=RetryPolicy(backoff_s=0.01, backoff_max_s=0.02),
    )
    task = asyncio.create_task(loop.run())
    try:
        want = {str(p.probe_id) for p in probes}

        def answered() -> bool:
            got = {str(topics.responses.decode(v).probe_id) for v in bus.sent}
            return task.done() or got >= want

        await until("every probe answered", answered)
        assert not task.done(), f"the consume loop ended: {task.exception()!r}"
        assert {str(topics.responses.decode(v).probe_id) for v in bus.sent} >= want
        assert len(bus.made) == 4  # three producers had batches expire, the fourth got through
        assert loop.heartbeat_age() < 5
    finally:
        loop.stop()
        await asyncio.gather(task, return_exceptions=True)


class DownBus(MemoryBus):
    """Publishing says the bus is unavailable ``outages`` times (the adapter's budget spent)."""

    def __init__(self, outages: int) -> None:
        super().__init__(partitions=2)
        self.outages = outages
        self.refused = 0

    async def publish_many(self, messages: Sequence[Outgoing]) -> None:
        if self.outages and any(m.topic.endswith("responses") for m in messages):
            self.outages -= 1
            self.refused += 1
            raise BusUnavailable("publish: LeaderNotAvailableError for 60s")
        await super().publish_many(messages)


async def test_an_outage_longer_than_the_adapter_budget_is_waited_out_without_handling_again() -> (
    None
):
    topics = Topics("u.")
    bus = DownBus(outages=3)
    await bus.ensure_topics(topics.all())
    probes = [probe(i) for i in range(30)]
    await bus.publish_many(
        [Outgoing(topics.probes.name, p.group_id.encode(), p.to_bytes(), p) for p in probes]
    )
    handled: list[str] = []

    async def answer(batch: list[Probe]) -> Sequence[_Contract]:
        handled.extend(str(p.probe_id) for p in batch)
        return [RagResponse.for_probe(p, status=TargetStatus.OK, answer="a") for p in batch]

    loop = ConsumeLoop(
        bus=bus,
        topics=topics,
        source=topics.probes,
        group="runner",
        handler=answer,
        service="test",
        max_records=100,
        policy=RetryPolicy(backoff_s=0.01, backoff_max_s=0.02),
    )
    task = asyncio.create_task(loop.run())
    try:
        await until("30 consumed", lambda: task.done() or loop.stats.consumed >= 30)
        assert not task.done(), f"the consume loop ended: {task.exception()!r}"
        assert loop.stats.consumed == 30 and bus.refused == 3
        assert sorted(handled) == sorted(str(p.probe_id) for p in probes)  # asked once each
    finally:
        loop.stop()
        await asyncio.gather(task, return_exceptions=True)
