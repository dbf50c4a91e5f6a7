"""The in-process bus encodes a contract only when its bytes are asked for, and then exactly as
Kafka would get them (the same bytes, a dead letter's raw payload included)."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from groundwatch.adapters.bus.base import Outgoing, Record
from groundwatch.adapters.bus.encode import to_outgoing
from groundwatch.adapters.bus.memory import MemoryBus
from groundwatch.contracts import Topics
from groundwatch.runtime.consume import dead_letter
from tests.unit._runner_helpers import probe


class _Counting:
    """A message that counts how often it is encoded."""

    def __init__(self) -> None:
        self.calls = 0

    def to_bytes(self) -> bytes:
        self.calls += 1
        return b'{"x":1}'


async def test_memory_bus_hands_the_contract_on_without_encoding_it() -> None:
    bus = MemoryBus(partitions=2)
    message = _Counting()
    await bus.publish_many([Outgoing("t", b"k", None, message)])
    (record,) = bus.records("t")
    assert record.message is message
    assert message.calls == 0  # nothing read the bytes yet
    assert record.value == b'{"x":1}'
    assert record.value == b'{"x":1}'
    assert message.calls == 1  # encoded once, on first use


async def test_lazy_bytes_are_the_contract_bytes_and_the_dead_letter_keeps_them() -> None:
    topics = Topics()
    p = probe("t1")
    bus = MemoryBus(partitions=3)
    await bus.publish_many(to_outgoing([p], topics))
    (record,) = bus.records(topics.probes.name)
    assert record.value == p.to_bytes()
    assert record == Record(
        record.topic, record.partition, record.offset, record.key, p.to_bytes(), record.timestamp_ms
    )
    letter = dead_letter(record, "boom", "rag-runner")
    assert base64.b64decode(letter.raw_b64) == p.to_bytes()


@pytest.mark.parametrize("cls", [Record, Outgoing])
def test_neither_bytes_nor_message_is_refused(cls: Any) -> None:
    args = ("t", 0, 0, b"k", None) if cls is Record else ("t", b"k", None)
    with pytest.raises(ValueError):
        cls(*args)
