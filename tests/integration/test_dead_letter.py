"""A malformed or schema-invalid message lands in the dead-letter topic; the loop goes on."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Sequence

import orjson
import pytest

from groundwatch.adapters.bus import Bus, Outgoing, make_bus
from groundwatch.contracts import Judgement, Probe, RagResponse, TargetStatus, Topics, _Contract
from groundwatch.core.model import Expected
from groundwatch.runtime.consume import ConsumeLoop

pytestmark = pytest.mark.integration


@pytest.fixture(params=["memory", "kafka"])
async def bus(request: pytest.FixtureRequest) -> AsyncIterator[Bus]:
    if request.param == "kafka":
        b: Bus = make_bus(
            "kafka", bootstrap=request.getfixturevalue("kafka_bootstrap"), partitions=2
        )
    else:
        b = make_bus("memory", partitions=2)
    await b.start()
    yield b
    await b.stop()


def probe(i: int) -> Probe:
    return Probe(
        probe_id=uuid.uuid4(),
        run_id="r",
        dataset_id="d",
        group_id=f"g{i}",
        form_id="f",
        cohort="short",
        target="t",
        query=f"q{i}",
        expected=Expected(values=["a"]),
    )


async def read_all(bus: Bus, topic: str, n: int, group: str) -> list[bytes]:
    c = bus.consumer([topic], group)
    await c.start()
    got: list[bytes] = []
    try:
        for _ in range(100):
            got.extend(r.value for r in await c.poll(500, 0.3))
            if len(got) >= n:
                break
    finally:
        await c.stop()
    return got


async def test_poison_goes_to_dead_letter_and_next_message_is_processed(
    bus: Bus, unique_prefix: str
) -> None:
    topics = Topics(unique_prefix)
    await bus.ensure_topics(topics.all())
    missing_field = orjson.loads(probe(1).to_bytes())
    del missing_field["query"]
    raw_bad = [b"{not json at all", orjson.dumps(missing_field)]
    await bus.publish_many(
        [Outgoing(topics.probes.name, b"g1", raw) for raw in raw_bad]
        + [Outgoing(topics.probes.name, b"g1", probe(2).to_bytes())]
    )

    async def answer(probes: list[Probe]) -> Sequence[_Contract]:
        return [RagResponse.for_probe(p, status=TargetStatus.OK, answer="a") for p in probes]

    loop = ConsumeLoop(
        bus=bus,
        topics=topics,
        source=topics.probes,
        group=f"{unique_prefix}runner",
        handler=answer,
        service="test",
    )
    task = asyncio.create_task(loop.run())
    letters = await read_all(bus, topics.dead_letter.name, 2, f"{unique_prefix}dl")
    responses = await read_all(bus, topics.responses.name, 1, f"{unique_prefix}resp")
    loop.stop()
    await task

    decoded = [topics.dead_letter.decode(raw) for raw in letters]
    assert sorted(d.raw for d in decoded) == sorted(raw_bad)
    assert any("Invalid JSON" in d.error for d in decoded)
    assert any("query: Field required" in d.error for d in decoded)
    assert all(d.source_topic == topics.probes.name and d.offset >= 0 for d in decoded)
    assert [topics.responses.decode(r).query for r in responses] == ["q2"]
    assert loop.stats.dead_lettered == 2 and loop.stats.consumed == 1


async def test_handler_crash_on_one_message_dead_letters_only_that_one(
    memory_bus: Bus, unique_prefix: str
) -> None:
    topics = Topics(unique_prefix)
    await memory_bus.publish_many(
        [Outgoing(topics.probes.name, f"g{i}".encode(), probe(i).to_bytes()) for i in range(5)]
    )

    async def fragile(probes: list[Probe]) -> Sequence[_Contract]:
        if any(p.query == "q3" for p in probes):
            raise ValueError("cannot handle q3")
        return [
            Judgement.for_response(
                RagResponse.for_probe(p, status=TargetStatus.ERROR), verdict="error", tier="t"
            )
            for p in probes
        ]

    loop = ConsumeLoop(
        bus=memory_bus,
        topics=topics,
        source=topics.probes,
        group="g",
        handler=fragile,
        service="test",
    )
    task = asyncio.create_task(loop.run())
    letters = await read_all(memory_bus, topics.dead_letter.name, 1, "dl")
    out = await read_all(memory_bus, topics.judgements.name, 4, "j")
    loop.stop()
    await task
    assert [topics.dead_letter.decode(x).error for x in letters] == ["ValueError: cannot handle q3"]
    assert sorted(topics.judgements.decode(x).query for x in out) == ["q0", "q1", "q2", "q4"]
