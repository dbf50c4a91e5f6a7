"""The Kafka bus (aiokafka): idempotent producer, manual commits, at-least-once."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import KafkaError, TopicAlreadyExistsError
from aiokafka.partitioner import murmur2

from groundwatch.bus.base import Outgoing, Record

log = logging.getLogger(__name__)


class KafkaBus:
    """Producer made on ``start`` (never at import); consumers made on demand."""

    def __init__(self, bootstrap: str, partitions: int = 6, client_id: str = "groundwatch") -> None:
        self.bootstrap = bootstrap
        self.partitions = partitions
        self.client_id = client_id
        self._producer: AIOKafkaProducer | None = None

    async def start(self) -> None:
        self._producer = AIOKafkaProducer(
            bootstrap_servers=self.bootstrap,
            client_id=self.client_id,
            enable_idempotence=True,  # retries cannot duplicate a message within a session
            acks="all",
            linger_ms=5,
            max_batch_size=256 * 1024,
            compression_type=None,
        )
        await self._producer.start()

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
        admin = AIOKafkaAdminClient(bootstrap_servers=self.bootstrap, client_id=self.client_id)
        await admin.start()
        try:
            existing = set(await admin.list_topics())
            missing = [n for n in names if n not in existing]
            if missing:
                new = [NewTopic(n, self.partitions, replication_factor=1) for n in missing]
                with contextlib.suppress(TopicAlreadyExistsError):  # another service was first
                    await admin.create_topics(new)
        finally:
            await admin.close()

    async def publish_many(self, messages: Sequence[Outgoing]) -> None:
        if not messages:
            return
        if self._producer is None:
            raise RuntimeError("KafkaBus.publish_many before start()")
        futures = [await self._producer.send(m.topic, m.value, key=m.key) for m in messages]
        await asyncio.gather(*futures)

    def consumer(self, topics: Sequence[str], group: str, *, client_id: str = "") -> KafkaConsumer:
        return KafkaConsumer(self.bootstrap, list(topics), group, client_id or self.client_id)


class KafkaConsumer:
    def __init__(self, bootstrap: str, topics: list[str], group: str, client_id: str) -> None:
        self._consumer = AIOKafkaConsumer(
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
        self._next: dict[TopicPartition, int] = {}

    async def start(self) -> None:
        await self._consumer.start()

    async def stop(self) -> None:
        await self._consumer.stop()

    async def poll(self, max_records: int = 500, timeout_s: float = 0.5) -> list[Record]:
        batches = await self._consumer.getmany(
            timeout_ms=int(timeout_s * 1000), max_records=max_records
        )
        for tp, recs in batches.items():
            if recs:
                self._next[tp] = recs[-1].offset + 1
        return [
            Record(r.topic, r.partition, r.offset, r.key, r.value, r.timestamp)
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
                await self._consumer.commit(owned)

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
