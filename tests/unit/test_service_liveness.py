"""Liveness reads the workers, not only the HTTP server (issue 30).

Before: a consume loop that died (``LeaderNotAvailableError`` while publishing) or wedged left
``/healthz`` 200 — the Kubernetes liveness probes read it, so nothing restarted the process, and
the error was logged only at shutdown. Now ``/healthz`` is 503 naming the loop whose task ended
or whose heartbeat is older than ``GW_LIVENESS_TIMEOUT_S``, and a loop or job that ends with an
error ends the service (``fail_service``; ``serve`` then exits 3 — the process-level test is
``tests/integration/test_service_exit.py``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

from fastapi import FastAPI
from fastapi.testclient import TestClient
from prometheus_client import CollectorRegistry

from groundwatch.adapters.bus import Outgoing
from groundwatch.adapters.bus.base import Record
from groundwatch.adapters.bus.memory import MemoryBus, MemoryConsumer
from groundwatch.contracts import Probe, Topics, _Contract
from groundwatch.runtime.consume import ConsumeLoop
from groundwatch.runtime.service import ServiceParts, build_app
from tests.waiting import until, wait_until


class WedgedConsumer(MemoryConsumer):
    """A poll that never returns (a client stuck on a dead connection)."""

    async def poll(self, max_records: int = 500, timeout_s: float = 0.5) -> list[Record]:
        await asyncio.Event().wait()
        raise AssertionError("unreachable")


class WedgedBus(MemoryBus):
    def consumer(self, topics: Sequence[str], group: str, *, client_id: str = "") -> MemoryConsumer:
        return WedgedConsumer(self, list(topics), group, client_id)


class RefusingBus(MemoryBus):
    """Every publish fails with an error no retry cures: the loop that publishes cannot go on."""

    async def publish_many(self, messages: Sequence[Outgoing]) -> None:
        if any(m.topic.endswith("responses") for m in messages):
            raise RuntimeError("the broker said no\nfor good")
        await super().publish_many(messages)


async def echo(batch: list[Probe]) -> Sequence[_Contract]:
    from groundwatch.contracts import RagResponse, TargetStatus

    return [RagResponse.for_probe(p, status=TargetStatus.OK, answer="a") for p in batch]


def app_with(
    bus: MemoryBus,
    timeout_s: float,
    exits: list[int],
    loops: list[ConsumeLoop[Probe]] | None = None,
) -> FastAPI:
    topics = Topics("l.")

    async def bootstrap() -> ServiceParts:
        loop = ConsumeLoop(
            bus=bus, topics=topics, source=topics.probes, group="g", handler=echo, service="svc"
        )
        if loops is not None:
            loops.append(loop)
        return ServiceParts(bus=bus, topics=topics, registry=CollectorRegistry(), loops=[loop])

    app = build_app("svc", bootstrap, liveness_timeout_s=timeout_s)
    app.state.exit_on_fatal = lambda: exits.append(1)
    return app


def failing(r: Any) -> Any:
    return r if r.status_code == 503 else None


def test_a_wedged_consume_loop_fails_liveness() -> None:
    exits: list[int] = []
    with TestClient(app_with(WedgedBus(), 0.5, exits)) as c:
        assert c.get("/healthz").status_code == 200  # just started: its heartbeat is fresh
        # the wedged loop never beats again: the probe fails once its beat is older than 0.5 s
        r = wait_until("a failing liveness probe", lambda: failing(c.get("/healthz")))
    assert r.status_code == 503, r.text
    assert "no heartbeat" in r.json()["problems"]["svc:l.probes"]
    assert exits == []  # wedged is for the liveness probe to act on; not an exit by itself


def test_a_healthy_idle_loop_stays_live() -> None:
    exits: list[int] = []
    loops: list[ConsumeLoop[Probe]] = []
    timeout_s = 3.0  # generous: a loaded machine may hold the loop back for a while
    with TestClient(app_with(MemoryBus(), timeout_s, exits, loops)) as c:
        started = time.monotonic()

        def beat_past_the_timeout() -> bool:
            """Idle longer than the timeout, and it beat since: it polls and beats."""
            now = time.monotonic()
            return bool(loops) and now - loops[0].heartbeat_age() > started + timeout_s

        wait_until("a heartbeat after the liveness timeout", beat_past_the_timeout)
        r = c.get("/healthz")
    assert r.status_code == 200 and r.json()["status"] == "ok", r.text


def test_a_loop_that_cannot_go_on_ends_the_service_with_one_line(caplog: object) -> None:
    import logging

    import pytest

    assert isinstance(caplog, pytest.LogCaptureFixture)
    caplog.set_level(logging.CRITICAL, logger="groundwatch.runtime.service")
    exits: list[int] = []
    bus = RefusingBus()
    app = app_with(bus, 60, exits)
    with TestClient(app) as c:
        from groundwatch.contracts import Topics as T
        from tests.unit.test_kafka_faults import probe

        p = probe(1)
        topic = T("l.").probes.name
        c.portal.call(bus.publish_many, [Outgoing(topic, b"k", p.to_bytes(), p)])  # type: ignore[union-attr]
        wait_until("the service's exit", lambda: exits)
        r = c.get("/healthz")
    assert exits == [1]
    assert r.status_code == 503 and "the broker said no for good" in r.json()["problems"]["service"]
    lines = [rec.getMessage() for rec in caplog.records if rec.levelno == logging.CRITICAL]
    assert len(lines) == 1 and "\n" not in lines[0], lines
    assert "loop svc:l.probes cannot go on (RuntimeError: the broker said no for good)" in lines[0]


class FailingCycles:
    """A watched worker (the generator's cycle loop) that failed."""

    name = "gen:cycles"

    def heartbeat_age(self) -> float | None:
        return None

    def failure(self) -> BaseException | None:
        return ConnectionError("cycle publish failed")


def test_a_watched_worker_that_fails_ends_the_service() -> None:
    exits: list[int] = []
    topics = Topics("w.")
    bus = MemoryBus()

    async def bootstrap() -> ServiceParts:
        return ServiceParts(
            bus=bus, topics=topics, registry=CollectorRegistry(), watched=[FailingCycles()]
        )

    app = build_app("gen", bootstrap)
    app.state.exit_on_fatal = lambda: exits.append(1)
    with TestClient(app) as c:
        wait_until("the service's exit", lambda: exits)
        r = c.get("/healthz")
    assert r.status_code == 503 and r.json()["problems"]["gen:cycles"] == "failed"


async def test_the_generator_cycle_loop_beats_and_reports_its_failure() -> None:
    from groundwatch.demo import demo_dataset
    from groundwatch.stages.generator.stage import GeneratorStage

    _, groups = demo_dataset(2, ("short",))
    topics = Topics("g.")

    class Down(MemoryBus):
        async def publish_many(self, messages: Sequence[Outgoing]) -> None:
            raise RuntimeError("no broker")

    gen = GeneratorStage(MemoryBus(), topics, list(groups)[:5], ["t"])
    assert gen.heartbeat_age() is None and gen.failure() is None  # idle: nothing to watch
    await gen.run_cycle()
    assert gen.heartbeat_age() is None
    gen.bus = Down()
    assert gen.start_continuous(60)
    assert isinstance(await until("the cycle loop's failure", gen.failure), RuntimeError)


class FrozenPingBus(MemoryBus):
    """A broker that takes the connection and never answers (SIGSTOPped): every ping hangs."""

    def __init__(self) -> None:
        super().__init__()
        self.pings = 0
        self.answer = asyncio.Event()

    async def ping(self) -> bool:
        self.pings += 1
        await self.answer.wait()
        return True


async def test_readyz_answers_503_at_its_deadline_while_the_bus_ping_hangs() -> None:
    """Without the deadline this request never returns (the ping waits for ever); with it the
    answer names the check that missed it, and the probes of a long outage share one ping."""
    import httpx

    bus = FrozenPingBus()
    topics = Topics("f.")

    async def bootstrap() -> ServiceParts:
        return ServiceParts(bus=bus, topics=topics, registry=CollectorRegistry())

    app = build_app("svc", bootstrap, ready_deadline_s=0.05)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://svc") as client:
            first = await client.get("/readyz")
            second = await client.get("/readyz")
            assert first.status_code == second.status_code == 503
            assert first.json()["checks"]["bus"] is False
            assert first.json()["timed_out"] == ["bus"] and first.json()["deadline_s"] == 0.05
            assert bus.pings == 1  # the second probe waited on the ping still in flight
            bus.answer.set()  # the broker thaws
            back = await client.get("/readyz")
            assert back.status_code == 200 and "timed_out" not in back.json()
