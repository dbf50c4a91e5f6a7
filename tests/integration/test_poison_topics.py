"""Poison messages on every topic land whole in the dead-letter topic; the valid traffic between
them is processed.

The runner, judge and analytics workers of the services (the same classes the service processes
run) consume from the real Kafka broker. 100 malformed or schema-invalid messages are injected
into each of the probes, responses and judgements topics, interleaved with valid traffic on the
same partitions (same keys). Every one of the 300 must come out of the dead-letter topic with its
source topic, an error saying what was wrong, and its exact raw bytes; every valid probe must be
answered, judged and stored exactly once.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import uuid
from collections import Counter
from collections.abc import Callable
from typing import Any

import orjson
import pytest
from aiokafka import AIOKafkaProducer
from sqlalchemy import func, select

from groundwatch.adapters.bus import make_bus
from groundwatch.adapters.db import create_schema, make_engine
from groundwatch.adapters.db.analytics_store import AnalyticsStore
from groundwatch.adapters.db.tables import JudgementRow
from groundwatch.adapters.targets.callable import CallableTarget
from groundwatch.contracts import (
    MAX_CONTEXTS,
    MAX_TEXT,
    SCHEMA_VERSION,
    Judgement,
    Probe,
    RagResponse,
    TargetStatus,
    Topics,
)
from groundwatch.core.model import Expected, Verdict
from groundwatch.runtime.consume import ConsumeLoop, consume
from groundwatch.stages.analytics.stage import AnalyticsStage
from groundwatch.stages.judge.stage import JudgeStage
from groundwatch.stages.judge.tiered import TieredJudge
from groundwatch.stages.runner.lanes import Runner
from groundwatch.stages.runner.stage import RunnerStage
from tests.e2e.test_faults_kafka import _read_all
from tests.waiting import WaitTimedOut, until

pytestmark = [
    pytest.mark.integration,
    pytest.mark.kafka,
    pytest.mark.postgres,
    pytest.mark.timeout(120),
]

VALID = 300  # valid probes, 3 forms of 100 groups
POISON = 100  # per topic
WAVES = 4


def valid_probe(i: int) -> Probe:
    return Probe(
        probe_id=uuid.uuid4(),
        run_id="poison-run",
        dataset_id="d",
        group_id=f"g{i % 100}",
        form_id=f"f{i // 100}",
        cohort="short",
        target="t",
        query=f"What is the capital of country {i % 100}?",
        expected=Expected(values=[f"City{i % 100}"]),
        group_forms=3,
    )


def answer(query: str) -> str:
    return "City" + query.rsplit(" ", 1)[-1].rstrip("?")


# One mutation per kind of poison; ``i`` makes every payload distinct so that the dead letters
# can be matched to what was sent, byte for byte.
Mutation = Callable[[dict[str, Any], int, str], bytes | None]


def _dump(d: dict[str, Any]) -> bytes:
    return orjson.dumps(d)


def _without(d: dict[str, Any], field: str) -> dict[str, Any]:
    return {k: v for k, v in d.items() if k != field}


BAD_ENUM = {
    "probes": ("scenario", None),
    "responses": ("status", "maybe"),
    "judgements": ("verdict", "probably"),
}

MUTATIONS: list[tuple[str, Mutation]] = [
    ("not_json", lambda d, i, t: b"{not json " + str(i).encode()),
    ("invalid_utf8", lambda d, i, t: b"\xff\xfe\xfa" + str(i).encode()),
    ("json_array", lambda d, i, t: orjson.dumps([i, d])),
    ("json_scalar", lambda d, i, t: str(i).encode()),
    ("tombstone", lambda d, i, t: None),
    ("missing_field", lambda d, i, t: _dump({**_without(d, "group_id"), "query": f"q{i}"})),
    ("bad_uuid", lambda d, i, t: _dump({**d, "probe_id": f"not-a-uuid-{i}"})),
    ("wrong_type", lambda d, i, t: _dump({**d, "group_forms": f"many-{i}"})),
    ("extra_field", lambda d, i, t: _dump({**d, "injected": i})),
    (
        "future_schema",
        lambda d, i, t: _dump({**d, "schema_version": SCHEMA_VERSION + 1, "query": f"q{i}"}),
    ),
    ("oversize_text", lambda d, i, t: _dump({**d, "query": "x" * (MAX_TEXT + 1 + i)})),
    ("bad_enum", lambda d, i, t: _dump({**d, BAD_ENUM[t][0]: BAD_ENUM[t][1], "query": f"q{i}"})),
    ("zero_forms", lambda d, i, t: _dump({**d, "group_forms": 0, "query": f"q{i}"})),
    ("bad_expected", lambda d, i, t: _dump({**d, "expected": {"values": i}})),
    ("too_many_ids", lambda d, i, t: _dump({**d, "relevant_doc_ids": {"id": i}})),
    ("deep_nesting", lambda d, i, t: b"[" * 600 + str(i).encode() + b"]" * 600),
]


def poison_for(topic: str, template: dict[str, Any]) -> list[tuple[str, bytes | None]]:
    out = []
    for i in range(POISON):
        kind, mutate = MUTATIONS[i % len(MUTATIONS)]
        if topic == "responses" and kind == "too_many_ids":
            payload: bytes | None = _dump({**template, "contexts": ["c"] * (MAX_CONTEXTS + 1 + i)})
        else:
            payload = mutate(template, i, topic)
        out.append((kind, payload))
    return out


def templates() -> dict[str, dict[str, Any]]:
    p = valid_probe(0)
    r = RagResponse.for_probe(p, status=TargetStatus.OK, answer="City0")
    j = Judgement.for_response(r, verdict=Verdict.CORRECT, tier="exact")
    return {
        "probes": orjson.loads(p.to_bytes()),
        "responses": orjson.loads(r.to_bytes()),
        "judgements": orjson.loads(j.to_bytes()),
    }


async def test_hundred_poison_messages_per_topic_all_dead_lettered(
    kafka_bootstrap: str, unique_prefix: str, fresh_pg_url: Callable[[], str]
) -> None:
    topics = Topics(unique_prefix)
    engine = make_engine(fresh_pg_url())
    await asyncio.to_thread(create_schema, engine)
    bus = make_bus("kafka", bootstrap=kafka_bootstrap, partitions=3)
    await bus.start()
    await bus.ensure_topics(topics.all())
    runner = Runner({"t": CallableTarget(answer, in_thread=False)})
    workers: list[ConsumeLoop[Any]] = [
        consume(RunnerStage(runner), bus, topics, group=f"{unique_prefix}runner"),
        consume(JudgeStage(TieredJudge().judge), bus, topics, group=f"{unique_prefix}judge"),
        consume(AnalyticsStage(AnalyticsStore(engine)), bus, topics, group=f"{unique_prefix}an"),
    ]
    tasks = [asyncio.create_task(w.run()) for w in workers]
    producer = AIOKafkaProducer(bootstrap_servers=kafka_bootstrap, acks="all")
    await producer.start()
    sent: dict[str, list[tuple[str, bytes | None]]] = {}
    try:
        await asyncio.wait_for(asyncio.gather(*(w.ready.wait() for w in workers)), 60)
        probes = [valid_probe(i) for i in range(VALID)]
        poison = {name: poison_for(name, t) for name, t in templates().items()}
        sent = {getattr(topics, name).name: p for name, p in poison.items()}
        step, pstep = VALID // WAVES, POISON // WAVES
        for wave in range(WAVES):
            for p in probes[wave * step : (wave + 1) * step]:
                await producer.send(topics.probes.name, p.to_bytes(), key=p.key)
            for name, msgs in poison.items():
                topic = getattr(topics, name).name
                for n, (_, payload) in enumerate(msgs[wave * pstep : (wave + 1) * pstep]):
                    # the same keys as valid traffic: poison sits between valid records
                    key = f"g{(wave * pstep + n) % 100}".encode()
                    await producer.send(topic, payload, key=key)
            await producer.flush()
            await asyncio.sleep(0.3)

        engine_count = select(func.count()).select_from(JudgementRow)
        stored = letters_n = 0

        def all_through() -> bool:
            nonlocal stored, letters_n
            with engine.connect() as conn:
                stored = int(conn.execute(engine_count).scalar_one())
            letters_n = sum(w.stats.dead_lettered for w in workers)
            return stored >= VALID and letters_n >= 3 * POISON

        with contextlib.suppress(WaitTimedOut):  # the assertions below say what is missing
            await until("every valid record stored, every poison one dead-lettered",
                        all_through, timeout=120, step=0.3)  # fmt: skip
    finally:
        await producer.stop()
        for w in workers:
            w.stop()
        results = await asyncio.gather(*tasks, return_exceptions=True)
        await runner.aclose()
        await bus.stop()
    assert all(r is None for r in results), f"a consume loop died: {results}"

    letters = [
        topics.dead_letter.decode(raw)
        for raw in await _read_all(kafka_bootstrap, topics.dead_letter.name)
    ]
    by_topic: dict[str, list[Any]] = {}
    for d in letters:
        by_topic.setdefault(d.source_topic, []).append(d)
    assert {t: len(v) for t, v in by_topic.items()} == {t: POISON for t in sent}
    service_of = {
        topics.probes.name: "rag-runner",
        topics.responses.name: "judge",
        topics.judgements.name: "analytics",
    }
    for topic, msgs in sent.items():
        got = by_topic[topic]
        # the exact raw payload of every poison message is kept (a tombstone as empty bytes)
        assert Counter(d.raw for d in got) == Counter(p or b"" for _, p in msgs)
        assert all(d.service == service_of[topic] for d in got)
        assert all(d.error.startswith(f"{topic}: ") and len(d.error) > len(topic) + 2 for d in got)
        assert all(d.partition >= 0 and d.offset >= 0 and d.key for d in got)
        assert all(base64.b64decode(d.raw_b64) == d.raw for d in got)
    assert [w.stats.dead_lettered for w in workers] == [POISON, POISON, POISON]

    # the valid traffic around the poison went all the way through, once
    responses = await _read_all(kafka_bootstrap, topics.responses.name)
    judgements = await _read_all(kafka_bootstrap, topics.judgements.name)
    valid_j = [topics.judgements.decode(r) for r in judgements if _decodes(topics, r)]
    assert sorted(str(j.probe_id) for j in valid_j) == sorted(str(p.probe_id) for p in probes)
    assert {j.verdict for j in valid_j} == {Verdict.CORRECT}
    assert len(responses) == VALID + POISON and len(judgements) == VALID + POISON
    with engine.connect() as conn:
        ids = {r[0] for r in conn.execute(select(JudgementRow.probe_id))}
    engine.dispose()
    assert ids == {str(p.probe_id) for p in probes}
    print(
        f"\nFAULT-FIGURES test_hundred_poison_messages_per_topic_all_dead_lettered "
        f"{orjson.dumps({'dead_letters': {service_of[t]: len(v) for t, v in by_topic.items()}, 'valid_stored': len(ids), 'kinds': len(MUTATIONS)}).decode()}"
    )


def _decodes(topics: Topics, raw: bytes) -> bool:
    try:
        topics.judgements.decode(raw)
    except Exception:
        return False
    return True


async def test_oversize_poison_is_dead_lettered_without_killing_the_loop(
    kafka_bootstrap: str, unique_prefix: str
) -> None:
    """A message close to the broker's 1 MB limit cannot travel whole inside a dead letter
    (base64 adds a third): the letter keeps a bounded prefix and says so; the loop goes on."""
    topics = Topics(unique_prefix)
    bus = make_bus("kafka", bootstrap=kafka_bootstrap, partitions=1)
    await bus.start()
    await bus.ensure_topics(topics.all())
    runner = Runner({"t": CallableTarget(answer, in_thread=False)})
    loop = consume(RunnerStage(runner), bus, topics, group=f"{unique_prefix}runner")
    task = asyncio.create_task(loop.run())
    big = b'{"query": "' + b"x" * 900_000 + b'"}'
    producer = AIOKafkaProducer(bootstrap_servers=kafka_bootstrap, acks="all")
    await producer.start()
    try:
        await asyncio.wait_for(loop.ready.wait(), 60)
        good = valid_probe(1)
        await producer.send_and_wait(topics.probes.name, big, key=b"g1")
        await producer.send_and_wait(topics.probes.name, good.to_bytes(), key=b"g1")
        with contextlib.suppress(WaitTimedOut):  # the assertions below say what is missing
            await until("the good one consumed and the big one dead-lettered",
                        lambda: task.done() or (loop.stats.consumed >= 1
                                                and loop.stats.dead_lettered >= 1))  # fmt: skip
    finally:
        await producer.stop()
        loop.stop()
        result = (await asyncio.gather(task, return_exceptions=True))[0]
        await runner.aclose()
        await bus.stop()
    assert result is None, f"the consume loop died: {result!r}"
    (letter,) = [
        topics.dead_letter.decode(r)
        for r in await _read_all(kafka_bootstrap, topics.dead_letter.name)
    ]
    assert letter.raw == big[: len(letter.raw)] and 0 < len(letter.raw) < len(big)
    assert f"{len(big)} bytes" in letter.error
    responses = [
        topics.responses.decode(r) for r in await _read_all(kafka_bootstrap, topics.responses.name)
    ]
    assert [r.probe_id for r in responses] == [good.probe_id]
