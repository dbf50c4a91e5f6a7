"""The analytics service on a real broker counts a person's verdict given on its ``/ui`` once:
through the ``human-verdicts`` topic into the live tally and ``/metrics``, and still once after
a restart that replays both topics from the start (a fresh consumer group) — the judgements are
repeats of the restored state, the verdicts repeats of their revisions (an older verdict
replayed after a newer one changes nothing)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from groundwatch.adapters.bus.base import Outgoing
from groundwatch.adapters.bus.kafka import KafkaBus
from groundwatch.contracts import Judgement, Topics
from groundwatch.core.tagging import GroupStatus
from services.analytics.app import create_app as analytics_app
from services.analytics.settings import AnalyticsSettings
from tests.integration._refused_judgements import refused_judgement

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

TOKEN = "verdicts-kafka-write-7f3a91c2"
GROUPS = 12
GAP = GroupStatus.GAP


def _judgement(n: int) -> Judgement:
    return refused_judgement(f"g{n:02d}", n)


def _gaps(text: str) -> float:
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == "groundwatch_groups" and s.labels.get("status") == "gap":
                return float(s.value)
    raise AssertionError("no groundwatch_groups series")


async def _until(check: Callable[[], bool], what: str, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, f"never: {what}"
        await asyncio.sleep(0.1)


async def test_a_verdict_counts_once_across_a_restart_that_replays_both_topics(
    kafka_bootstrap: str, unique_prefix: str, tmp_path: Path
) -> None:
    topics = Topics(unique_prefix)
    bus = KafkaBus(kafka_bootstrap, partitions=3)
    await bus.start()
    try:
        await bus.ensure_topics(topics.all())
        judgements = [_judgement(n) for n in range(GROUPS)]
        name = topics.judgements.name
        await bus.publish_many([Outgoing(name, j.key, j.to_bytes()) for j in judgements])

        def settings(group: str) -> AnalyticsSettings:
            return AnalyticsSettings(
                bus="kafka",
                kafka_bootstrap=kafka_bootstrap,
                topic_prefix=unique_prefix,
                partitions=3,
                database_url=f"sqlite:///{tmp_path / 'analytics.db'}",
                analytics_group=f"{unique_prefix}{group}",
                api_token=TOKEN,
            )

        target = judgements[5]
        key = (target.target, target.cohort, target.group_id)

        # first life: the judgements tallied, a person's verdict given on /ui
        app = analytics_app(settings("a"))
        async with app.router.lifespan_context(app):
            worker: Any = app.state.parts.extra["worker"]
            await _until(lambda: len(list(worker.view.tallies())) == GROUPS, "12 tallies")
            assert worker.view.status(*key) is GAP
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://a") as client:
                assert _gaps((await client.get("/metrics")).text) == GROUPS
                for given, status in (("correct", GroupStatus.ROBUST), ("incorrect", GAP)):
                    r = await client.post(
                        "/ui/verdicts",
                        data={"probe_id": str(target.probe_id), "verdict": given, "who": "ada"},
                        headers={"Authorization": f"Bearer {TOKEN}"},
                    )
                    assert r.status_code == 200, r.text
                    await _until(lambda s=status: worker.view.status(*key) is s, given)
                    if given == "correct":
                        assert _gaps((await client.get("/metrics")).text) == GROUPS - 1
                # the person's second thought replaced the first
                assert _gaps((await client.get("/metrics")).text) == GROUPS
        # the first verdict delivered again while the service is down: older than the second
        first, second = await _read(kafka_bootstrap, topics.human_verdicts.name, 2)
        message = topics.human_verdicts.decode(first)
        assert message.group_id == target.group_id and message.verdict == "correct"
        assert topics.human_verdicts.decode(second).revision > message.revision
        await bus.publish_many([Outgoing(topics.human_verdicts.name, message.key, first)])

        # second life, a fresh consumer group: every judgement and verdict comes again
        app = analytics_app(settings("b"))
        async with app.router.lifespan_context(app):
            worker = app.state.parts.extra["worker"]
            loop = app.state.parts.loops[0]
            assert worker.view.status(*key) is GAP  # restored from its state
            await _until(lambda: loop.stats.consumed >= GROUPS + 3, "the replay consumed")
            await asyncio.sleep(1.0)  # anything the replay wrongly moved would show by now
            tally = worker.view.tally(*key)
            assert tally is not None and (tally.correct, tally.incorrect) == (0, 1)
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://b") as client:
                assert _gaps((await client.get("/metrics")).text) == GROUPS
            assert loop.stats.dead_lettered == 0
            moved = worker.store.transitions(group_id=target.group_id, limit=10)
            # newest first: each verdict's transition stored once, none by the replay
            assert [(t.from_status, t.to_status) for t in moved] == [
                ("robust", "gap"),
                ("gap", "robust"),
            ]
    finally:
        await bus.stop()


async def _read(bootstrap: str, topic: str, n: int) -> list[bytes]:
    from aiokafka import AIOKafkaConsumer

    consumer = AIOKafkaConsumer(
        topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest", group_id=None
    )
    await consumer.start()
    try:
        out: list[bytes] = []
        deadline = time.monotonic() + 60
        while len(out) < n and time.monotonic() < deadline:
            batches = await consumer.getmany(timeout_ms=500)
            out += [r.value for recs in batches.values() for r in recs]
        return out
    finally:
        await consumer.stop()


async def test_a_verdict_reaches_the_instance_that_owns_its_group(
    kafka_bootstrap: str, unique_prefix: str, fresh_pg_url: Callable[[], str]
) -> None:
    """Two analytics instances split the partitions; a verdict given on either one's ``/ui``
    is counted by the instance owning the group's judgements (the verdicts' partitions are
    assigned with the judgements'), never dead-lettered as another's."""
    topics = Topics(unique_prefix)
    bus = KafkaBus(kafka_bootstrap, partitions=3)
    await bus.start()
    database_url = fresh_pg_url()
    try:
        await bus.ensure_topics(topics.all())
        judgements = [_judgement(n) for n in range(GROUPS)]
        name = topics.judgements.name
        await bus.publish_many([Outgoing(name, j.key, j.to_bytes()) for j in judgements])
        settings = AnalyticsSettings(
            bus="kafka",
            kafka_bootstrap=kafka_bootstrap,
            topic_prefix=unique_prefix,
            partitions=3,
            database_url=database_url,
            analytics_group=f"{unique_prefix}pool",
            api_token=TOKEN,
        )
        a, b = analytics_app(settings), analytics_app(settings)
        async with a.router.lifespan_context(a), b.router.lifespan_context(b):
            workers: list[Any] = [app.state.parts.extra["worker"] for app in (a, b)]

            def split() -> bool:
                held = [len(list(w.view.tallies())) for w in workers]
                return all(held) and sum(held) == GROUPS

            await _until(split, "the partitions split between the two")
            owner = {t.group_id: i for i, w in enumerate(workers) for t in w.view.tallies()}
            clients = [
                httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://x")
                for app in (a, b)
            ]
            try:
                for j in judgements[:6]:
                    other = clients[1 - owner[j.group_id]]  # given where it is not counted
                    r = await other.post(
                        "/ui/verdicts",
                        data={"probe_id": str(j.probe_id), "verdict": "correct", "who": "ada"},
                        headers={"Authorization": f"Bearer {TOKEN}"},
                    )
                    assert r.status_code == 200, r.text
                for j in judgements[:6]:
                    w = workers[owner[j.group_id]]
                    key = (j.target, j.cohort, j.group_id)
                    await _until(lambda w=w, key=key: w.view.status(*key) is GroupStatus.ROBUST,
                                 f"{j.group_id} counted by its owner")  # fmt: skip
                gaps = [_gaps((await c.get("/metrics")).text) for c in clients]
                assert sum(gaps) == GROUPS - 6
            finally:
                for c in clients:
                    await c.aclose()
            loops = [app.state.parts.loops[0] for app in (a, b)]
            assert [loop.stats.dead_lettered for loop in loops] == [0, 0]
    finally:
        await bus.stop()
