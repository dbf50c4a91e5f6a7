"""The same bus contract tests against the in-process bus and the real Kafka broker.

What the services rely on: keyed partitioning, consumer groups splitting partitions, commit after
processing, redelivery of what was not committed, rewind on a transient failure.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from groundwatch.adapters.bus import Bus, Outgoing, make_bus
from groundwatch.adapters.bus.base import Consumer, Record
from tests.waiting import until

pytestmark = pytest.mark.integration


@pytest.fixture(params=["memory", "kafka"])
async def bus(request: pytest.FixtureRequest) -> AsyncIterator[Bus]:
    if request.param == "kafka":
        bootstrap = request.getfixturevalue("kafka_bootstrap")
        b: Bus = make_bus("kafka", bootstrap=bootstrap, partitions=3)
    else:
        b = make_bus("memory", partitions=3)
    await b.start()
    yield b
    await b.stop()


async def drain(consumer: Consumer, expected: int, timeout: float = 30.0) -> list[Record]:
    got: list[Record] = []
    deadline = asyncio.get_running_loop().time() + timeout
    while len(got) < expected and asyncio.get_running_loop().time() < deadline:
        got.extend(await consumer.poll(500, 0.5))
    return got


async def test_keyed_messages_keep_order_per_key(bus: Bus, unique_prefix: str) -> None:
    topic = f"{unique_prefix}t"
    await bus.ensure_topics([topic])
    msgs = [Outgoing(topic, f"g{i % 5}".encode(), f"{i}".encode()) for i in range(50)]
    await bus.publish_many(msgs)
    c = bus.consumer([topic], f"{unique_prefix}grp")
    await c.start()
    try:
        got = await drain(c, 50)
    finally:
        await c.stop()
    assert sorted(int(r.value) for r in got) == list(range(50))
    by_key: dict[bytes | None, list[int]] = {}
    for r in got:
        by_key.setdefault(r.key, []).append(int(r.value))
    partitions_of_key = {k: {r.partition for r in got if r.key == k} for k in by_key}
    assert all(len(p) == 1 for p in partitions_of_key.values()), "a key spans partitions"
    assert all(v == sorted(v) for v in by_key.values()), "order within a key was lost"


async def test_uncommitted_records_are_redelivered(bus: Bus, unique_prefix: str) -> None:
    topic, group = f"{unique_prefix}t", f"{unique_prefix}grp"
    await bus.ensure_topics([topic])
    await bus.publish_many([Outgoing(topic, f"k{i}".encode(), f"{i}".encode()) for i in range(20)])
    first = bus.consumer([topic], group)
    await first.start()
    got = await drain(first, 20)
    committed = [r for r in got if int(r.value) < 10]
    await first.commit(committed)
    await first.stop()
    # A new member of the same group sees at least every record not covered by a commit.
    second = bus.consumer([topic], group)
    await second.start()
    try:
        again = await drain(second, 10, timeout=20)
    finally:
        await second.stop()
    values = {int(r.value) for r in again}
    assert set(range(10, 20)) <= values
    # Committed offsets are per partition: nothing at or below a committed offset comes back.
    last_committed = {}
    for r in committed:
        last_committed[r.partition] = max(last_committed.get(r.partition, -1), r.offset)
    assert all(r.offset > last_committed.get(r.partition, -1) for r in again)


async def test_rewind_redelivers_batch(bus: Bus, unique_prefix: str) -> None:
    topic = f"{unique_prefix}t"
    await bus.ensure_topics([topic])
    await bus.publish_many([Outgoing(topic, b"same", f"{i}".encode()) for i in range(5)])
    c = bus.consumer([topic], f"{unique_prefix}grp")
    await c.start()
    try:
        got = await drain(c, 5)
        await c.rewind(got)
        again = await drain(c, 5)
    finally:
        await c.stop()
    assert [r.value for r in again] == [r.value for r in got]


def split(members: list[Consumer], partitions: int) -> bool:
    """Every member holds partitions, none the same, all of them held."""
    held = [m.assignment() for m in members]
    return all(held) and len(frozenset().union(*held)) == sum(map(len, held)) == partitions


async def test_group_members_split_partitions(bus: Bus, unique_prefix: str) -> None:
    topic, group = f"{unique_prefix}t", f"{unique_prefix}grp"
    await bus.ensure_topics([topic])
    members = [bus.consumer([topic], group, client_id=f"m{i}") for i in range(2)]
    for m in members:
        await m.start()
    try:
        # both members joined and the group split all three partitions between them before
        # anything is published: a member joining later would take over a partition the other
        # had already read from, and both would have consumed it
        await until("the group split between both members", lambda: split(members, 3))
        await bus.publish_many(
            [Outgoing(topic, f"k{i}".encode(), f"{i}".encode()) for i in range(60)]
        )
        seen: dict[int, list[Any]] = {0: [], 1: []}
        deadline = asyncio.get_running_loop().time() + 30
        while (
            sum(len(v) for v in seen.values()) < 60 and asyncio.get_running_loop().time() < deadline
        ):
            for i, m in enumerate(members):
                recs = await m.poll(500, 0.3)
                seen[i].extend(recs)
                await m.commit(recs)
    finally:
        for m in members:
            await m.stop()
    values = [int(r.value) for v in seen.values() for r in v]
    assert sorted(set(values)) == list(range(60))
    parts = [{r.partition for r in v} for v in seen.values()]
    assert not (parts[0] & parts[1]), "two members consumed the same partition"


async def test_topics_made_have_a_leader_for_every_partition_on_return(
    kafka_bootstrap: str, unique_prefix: str
) -> None:
    # a consumer started right after sees every partition: no "topic not found" first rebalance
    from aiokafka.admin import AIOKafkaAdminClient

    b = make_bus("kafka", bootstrap=kafka_bootstrap, partitions=6)
    await b.start()
    names = [f"{unique_prefix}{n}" for n in ("a", "b", "c")]
    admin = AIOKafkaAdminClient(bootstrap_servers=kafka_bootstrap)
    await admin.start()
    try:
        await b.ensure_topics(names)
        described = await admin.describe_topics(names)
    finally:
        await admin.close()
        await b.stop()
    assert sorted(t["topic"] for t in described) == sorted(names)
    for t in described:
        assert len(t["partitions"]) == 6 and all(p["leader"] >= 0 for p in t["partitions"]), t
