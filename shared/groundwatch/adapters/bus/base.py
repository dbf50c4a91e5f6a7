"""The bus ports: a record, a consumer, a bus."""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable


@dataclass(frozen=True, slots=True)
class Record:
    """A consumed message with its coordinates, which dead letters and commits need."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes
    timestamp_ms: int = 0
    #: The in-process bus only: the (immutable, validated) contract ``value`` was encoded from,
    #: so a consumer in the same process takes it instead of decoding and validating the bytes
    #: again. Records from Kafka never carry one.
    message: object | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Outgoing:
    """A message to publish (``message``: the contract ``value`` was encoded from, if any)."""

    topic: str
    key: bytes | None
    value: bytes
    message: object | None = field(default=None, compare=False, repr=False)


def partition_for(key: bytes | None, partitions: int) -> int:
    """Key → partition for the in-process bus; keyless messages go to partition 0."""
    if not key:
        return 0
    return zlib.crc32(key) % partitions


@runtime_checkable
class Consumer(Protocol):
    """A member of a consumer group on some topics."""

    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    async def poll(self, max_records: int = 500, timeout_s: float = 0.5) -> list[Record]:
        """Next records from the partitions this member owns; ``[]`` after ``timeout_s``."""
        ...

    async def commit(self, records: Sequence[Record]) -> None:
        """Mark these records (and everything before them in their partitions) as done."""
        ...

    async def rewind(self, records: Sequence[Record]) -> None:
        """Deliver these records again (a transient failure: nothing was produced or stored)."""
        ...

    def lag(self) -> int:
        """Records in this member's partitions not yet fetched (for the consumer-lag metric)."""
        ...

    def assignment(self) -> frozenset[tuple[str, int]]:
        """The (topic, partition) pairs this member owns now."""
        ...

    def partition_of(self, topic: str, key: bytes) -> int | None:
        """The partition a message with ``key`` lands in (``None`` while metadata is unknown);
        a stateful consumer uses it to keep only the state of the partitions it owns."""
        ...


@runtime_checkable
class Bus(Protocol):
    """Publish, and make consumers in consumer groups."""

    partitions: int

    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    async def ensure_topics(self, names: Sequence[str]) -> None: ...

    async def publish_many(self, messages: Sequence[Outgoing]) -> None:
        """Publish and wait until every message is acknowledged."""
        ...

    def consumer(self, topics: Sequence[str], group: str, *, client_id: str = "") -> Consumer: ...

    async def ping(self) -> bool:
        """Whether the bus is reachable (for ``/readyz``)."""
        ...
