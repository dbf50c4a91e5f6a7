"""The Kafka bus (aiokafka): idempotent producer, manual commits, at-least-once."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Sequence

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import (
    CommitFailedError,
    IllegalStateError,
    KafkaError,
    TopicAlreadyExistsError,
)
from aiokafka.partitioner import DefaultPartitioner, murmur2
from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_delay, wait_exponential

from groundwatch.adapters.bus.base import Outgoing, Record

log = logging.getLogger(__name__)

#: How long a starting client waits for an unreachable broker before the service gives up.
START_TIMEOUT_S = 120.0


def _starting(what: str) -> AsyncRetrying:
    """Retries for connecting at start-up: a broker restarting while a service (re)starts is
    routine (a rolling restart, a crash-looping pod); the service waits for it, bounded, instead
    of exiting on the first refused connection (seen in the randomized kill schedule)."""

    def note(state: object) -> None:
        log.warning("%s: broker unreachable, retrying", what)

    return AsyncRetrying(
        retry=retry_if_exception_type((KafkaError, OSError)),
        stop=stop_after_delay(START_TIMEOUT_S),
        wait=wait_exponential(multiplier=0.5, max=5.0),
        before_sleep=note,
        reraise=True,
    )


class KafkaBus:
    """Producer made on ``start`` (never at import); consumers made on demand."""

    def __init__(self, bootstrap: str, partitions: int = 6, client_id: str = "groundwatch") -> None:
        self.bootstrap = bootstrap
        self.partitions = partitions
        self.client_id = client_id
        self._producer: AIOKafkaProducer | None = None
        self._partitioner = DefaultPartitioner()

    async def start(self) -> None:
        async for attempt in _starting("producer"):
            with attempt:
                producer = AIOKafkaProducer(
                    bootstrap_servers=self.bootstrap,
                    client_id=self.client_id,
                    enable_idempotence=True,  # retries cannot duplicate a message in a session
                    acks="all",
                    linger_ms=5,
                    max_batch_size=256 * 1024,
                    compression_type=None,
                )
                try:
                    await producer.start()
                except BaseException:
                    await producer.stop()
                    raise
                self._producer = producer

    async def stop(self) -> None:
        if self._producer is not None:
            await self._producer.stop()
            self._producer = None

    async def ping(self) -> bool:
        if self._producer is None:
            return False
        try:
            await asyncio.wait_for(self._producer.client.fetch_all_metadata(), 5)
            return True
        except (KafkaError, TimeoutError, OSError):
            return False

    async def ensure_topics(self, names: Sequence[str]) -> None:
        async for attempt in _starting("admin"):
            with attempt:
                await self._ensure_topics(names)

    async def _ensure_topics(self, names: Sequence[str]) -> None:
        admin = AIOKafkaAdminClient(bootstrap_servers=self.bootstrap, client_id=self.client_id)
        try:
            await admin.start()
            existing = set(await admin.list_topics())
            missing = [n for n in names if n not in existing]
            if missing:
                new = [NewTopic(n, self.partitions, replication_factor=1) for n in missing]
                with contextlib.suppress(TopicAlreadyExistsError):  # another service was first
                    await admin.create_topics(new)
        finally:
            await admin.close()

    async def publish_many(self, messages: Sequence[Outgoing]) -> None:
        """One record batch per partition (``create_batch``/``send_batch``), not one ``send``
        per message: aiokafka's per-message path (a future, a metadata check and a partitioner
        call per record) was half the producer's CPU. Partitions come from the default
        partitioner, murmur2 of the key, exactly as ``send`` (and the Java client) would pick
        them, so a semantic group's messages land where they always did, in order."""
        if not messages:
            return
        producer = self._producer
        if producer is None:
            raise RuntimeError("KafkaBus.publish_many before start()")
        by_partition: dict[tuple[str, int], list[Outgoing]] = {}
        partitions: dict[str, list[int]] = {}
        for m in messages:
            known = partitions.get(m.topic)
            if known is None:
                known = partitions[m.topic] = sorted(await producer.partitions_for(m.topic))
            part = self._partitioner(m.key, known, known)
            by_partition.setdefault((m.topic, part), []).append(m)
        futures = []
        for (topic, part), batch_messages in by_partition.items():
            batch = producer.create_batch()
            for m in batch_messages:
                if batch.append(key=m.key, value=m.value, timestamp=None) is None:  # full
                    futures.append(await producer.send_batch(batch, topic, partition=part))
                    batch = producer.create_batch()
                    batch.append(key=m.key, value=m.value, timestamp=None)  # first always fits
            futures.append(await producer.send_batch(batch, topic, partition=part))
        await asyncio.gather(*futures)

    def consumer(self, topics: Sequence[str], group: str, *, client_id: str = "") -> KafkaConsumer:
        return KafkaConsumer(self.bootstrap, list(topics), group, client_id or self.client_id)


class KafkaConsumer:
    def __init__(self, bootstrap: str, topics: list[str], group: str, client_id: str) -> None:
        def make() -> AIOKafkaConsumer:
            return AIOKafkaConsumer(
                *topics,
                bootstrap_servers=bootstrap,
                group_id=group,
                client_id=client_id,
                enable_auto_commit=False,
                auto_offset_reset="earliest",
                max_poll_records=1000,
                session_timeout_ms=10_000,
                heartbeat_interval_ms=1_000,
            )

        self._make: Callable[[], AIOKafkaConsumer] = make
        self._consumer = make()
        self._next: dict[TopicPartition, int] = {}

    async def start(self) -> None:
        async for attempt in _starting("consumer"):
            with attempt:
                try:
                    await self._consumer.start()
                except BaseException:
                    await self._consumer.stop()
                    self._consumer = self._make()  # a fresh client for the next attempt
                    raise

    async def stop(self) -> None:
        await self._consumer.stop()

    async def poll(self, max_records: int = 500, timeout_s: float = 0.5) -> list[Record]:
        batches = await self._consumer.getmany(
            timeout_ms=int(timeout_s * 1000), max_records=max_records
        )
        for tp, recs in batches.items():
            if recs:
                self._next[tp] = recs[-1].offset + 1
        # A tombstone (null value) becomes empty bytes: it must dead-letter like any other
        # unparseable message, not crash the consume loop with a None where bytes are promised.
        return [
            Record(r.topic, r.partition, r.offset, r.key, r.value or b"", r.timestamp)
            for recs in batches.values()
            for r in recs
        ]

    async def commit(self, records: Sequence[Record]) -> None:
        offsets: dict[TopicPartition, int] = {}
        for r in records:
            tp = TopicPartition(r.topic, r.partition)
            offsets[tp] = max(offsets.get(tp, 0), r.offset + 1)
        if offsets:
            assigned = self._consumer.assignment()
            owned = {tp: off for tp, off in offsets.items() if tp in assigned}
            if owned:
                try:
                    await self._consumer.commit(owned)
                except (CommitFailedError, IllegalStateError) as exc:
                    # The group rebalanced while the batch was in flight (a member died, the
                    # broker restarted and forgot the members): whoever owns the partitions now
                    # gets these records again, which at-least-once delivery and idempotent
                    # handlers allow. Raising would end the consume loop for good.
                    log.warning(
                        "commit skipped after a rebalance, records will be redelivered: %s",
                        type(exc).__name__,
                    )

    def assignment(self) -> frozenset[tuple[str, int]]:
        return frozenset((tp.topic, tp.partition) for tp in self._consumer.assignment())

    def partition_of(self, topic: str, key: bytes) -> int | None:
        """Kafka's default partitioner (murmur2 of the key), as the producers use it."""
        partitions = self._consumer.partitions_for_topic(topic)
        if not partitions:
            return None
        return int(murmur2(key) & 0x7FFFFFFF) % len(partitions)

    def lag(self) -> int:
        """High watermark minus the next offset this member will fetch, over its partitions."""
        total = 0
        for tp in self._consumer.assignment():
            high = self._consumer.highwater(tp)
            pos = self._next.get(tp)
            if high is not None and pos is not None:
                total += max(0, high - pos)
        return total

    async def rewind(self, records: Sequence[Record]) -> None:
        first: dict[TopicPartition, int] = {}
        for r in records:
            tp = TopicPartition(r.topic, r.partition)
            first[tp] = min(first.get(tp, r.offset), r.offset)
        assigned = self._consumer.assignment()
        for tp, off in first.items():
            if tp in assigned:
                self._consumer.seek(tp, off)
                self._next[tp] = off
