"""The bus ports: a record, a consumer, a bus."""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from typing import Protocol, cast, runtime_checkable


class Encodable(Protocol):
    """A message that can encode itself (the wire contracts: ``_Contract.to_bytes``)."""

    def to_bytes(self) -> bytes: ...


def _encoded(value: bytes | None, message: object | None) -> bytes:
    if value is not None:
        return value
    if message is None:
        raise ValueError("a record needs its bytes or the message to encode them from")
    return cast(Encodable, message).to_bytes()


class Record:
    """A consumed message with its coordinates, which dead letters and commits need.

    ``message`` (the in-process bus only) is the immutable, validated contract the record was
    published as, so a consumer in the same process takes it instead of decoding and validating
    bytes again; records from Kafka never carry one. ``value`` is the message's bytes: given, or
    encoded from ``message`` the first time something asks (a dead letter's raw payload) — why:
    in process nothing reads the bytes of a message that goes through, and encoding every message
    of every stage was ~10 µs per message of the embedded pipeline's CPU.
    """

    __slots__ = ("_value", "key", "message", "offset", "partition", "timestamp_ms", "topic")

    def __init__(
        self,
        topic: str,
        partition: int,
        offset: int,
        key: bytes | None,
        value: bytes | None,
        timestamp_ms: int = 0,
        message: object | None = None,
    ) -> None:
        if value is None and message is None:
            raise ValueError("a record needs its bytes or the message to encode them from")
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.key = key
        self._value = value
        self.timestamp_ms = timestamp_ms
        self.message = message

    @property
    def value(self) -> bytes:
        """The message's bytes (encoded once, on first use, when only the message was given)."""
        value = self._value
        if value is None:
            value = self._value = _encoded(None, self.message)
        return value

    def _fields(self) -> tuple[object, ...]:
        return (self.topic, self.partition, self.offset, self.key, self.value, self.timestamp_ms)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Record):
            return NotImplemented
        return self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        return (
            f"Record(topic={self.topic!r}, partition={self.partition!r}, offset={self.offset!r},"
            f" key={self.key!r}, value={self.value!r}, timestamp_ms={self.timestamp_ms!r})"
        )


class Outgoing:
    """A message to publish: ``value`` its bytes, or ``message`` the contract to encode them from
    when a bus needs them (Kafka always; the in-process bus only for a dead letter's payload)."""

    __slots__ = ("_value", "key", "message", "topic")

    def __init__(
        self,
        topic: str,
        key: bytes | None,
        value: bytes | None,
        message: object | None = None,
    ) -> None:
        if value is None and message is None:
            raise ValueError("an outgoing message needs its bytes or the message to encode")
        self.topic = topic
        self.key = key
        self._value = value
        self.message = message

    @property
    def value(self) -> bytes:
        """The bytes to publish (encoded once, on first use, when only the message was given)."""
        value = self._value
        if value is None:
            value = self._value = _encoded(None, self.message)
        return value

    @property
    def given_value(self) -> bytes | None:
        """The bytes if they are known already (the in-process bus passes ``None`` on)."""
        return self._value

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Outgoing):
            return NotImplemented
        return (self.topic, self.key, self.value) == (other.topic, other.key, other.value)

    def __hash__(self) -> int:
        return hash((self.topic, self.key, self.value))

    def __repr__(self) -> str:
        return f"Outgoing(topic={self.topic!r}, key={self.key!r}, value={self.value!r})"


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
