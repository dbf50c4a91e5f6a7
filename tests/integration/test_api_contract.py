"""Every endpoint answers within its contract (issue 30): 4xx for bad input, never 500, on a
PostgreSQL store too; ``POST /runs`` validates its body and runs one cycle at a time.

Before: ``GET /groups/a%00b`` on a PostgreSQL store raised ``psycopg.DataError`` (PostgreSQL text
cannot hold NUL) and answered 500, as did ``/groups/{id}?target=%00`` and
``/transitions?group_id=%00``; ``POST /runs`` ignored its body (``{"runs": 10**9}`` ran one cycle)
and three concurrent POSTs ran three interleaved cycles.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from fastapi.routing import APIRoute

from groundwatch.adapters.targets import CallableTarget, TargetLimits
from groundwatch.app.embedded import EmbeddedPipeline, monitoring_app
from groundwatch.demo import demo_dataset
from groundwatch.stages.runner.lanes import Runner
from services.analytics.app import create_app as analytics_app
from services.analytics.settings import AnalyticsSettings
from services.generator.app import MAX_RUNS_PER_REQUEST
from services.generator.app import create_app as generator_app
from services.generator.settings import GeneratorSettings
from tests.waiting import until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

TOKEN = "contract-token-5c1e"
#: Raw (already percent-encoded) values put in every path and query parameter: NUL, a lone
#: surrogate's UTF-8 bytes, invalid UTF-8, LIKE wildcards, a quote, a long value, numbers out of
#: any range, and the empty string.
BAD = [
    "a%00b",
    "%00",
    "%ED%A0%80",
    "%FF%FE",
    "%25",
    "_",
    "%27",
    "x" * 3000,
    "-1",
    "99999999999999999999999999",
    "1e400",
    "NaN",
    "",
]


def _requests(app: FastAPI) -> list[str]:
    """A GET per route × bad value: the value in every path parameter, or in one query
    parameter at a time (the path's own parameters then hold a harmless id)."""
    out: list[str] = []
    for route in app.routes:
        if not isinstance(route, APIRoute) or "GET" not in route.methods:
            continue
        names = [p.name for p in route.dependant.query_params]
        for bad in BAD:
            path = re.sub(r"\{[^}]+\}", bad or "x", route.path)
            out.append(path)
            plain = re.sub(r"\{[^}]+\}", "deadbeef", route.path)
            out += [f"{plain}?{name}={bad}" for name in names]
    return out


async def _fuzz(app: FastAPI) -> dict[int, int]:
    statuses: dict[int, int] = {}
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://api") as client:
        for url in _requests(app):
            r = await client.get(url)
            statuses[r.status_code] = statuses.get(r.status_code, 0) + 1
            assert r.status_code < 500, (url[:120], r.status_code, r.text[:200])
    return statuses


@pytest.fixture
async def pg_pipeline(fresh_pg_url: Callable[[], str]) -> AsyncIterator[EmbeddedPipeline]:
    """One demo cycle stored in a fresh PostgreSQL store: the routes read real rows."""
    _, groups = demo_dataset(k=1, cohorts=("short",))
    runner = Runner(
        {"t": CallableTarget(lambda q: {"answer": "I do not know."})},
        {"t": TargetLimits(concurrency=8)},
    )
    pipeline = EmbeddedPipeline(groups[:30], runner, database_url=fresh_pg_url())
    await pipeline.start()
    try:
        await pipeline.run(1, timeout_s=120)
        yield pipeline
    finally:
        await pipeline.stop()


async def test_no_route_answers_500_for_any_path_or_query_value_on_postgres(
    pg_pipeline: EmbeddedPipeline,
) -> None:
    live = monitoring_app(pg_pipeline)
    stored = analytics_app(AnalyticsSettings(bus="memory", database_url=pg_pipeline.database_url))
    seen: dict[str, dict[int, int]] = {}
    seen["embedded"] = await _fuzz(live)
    async with stored.router.lifespan_context(stored):
        seen["analytics"] = await _fuzz(stored)
    for name, statuses in seen.items():
        assert 422 in statuses and 200 in statuses, (name, statuses)
        print(f"\nCONTRACT-FIGURES {name} on PostgreSQL: {dict(sorted(statuses.items()))}")


async def test_nul_in_a_path_or_query_is_a_422_naming_where() -> None:
    _, groups = demo_dataset(k=1, cohorts=("short",))
    runner = Runner({"t": CallableTarget(lambda q: {"answer": "x"})}, {"t": TargetLimits()})
    pipeline = EmbeddedPipeline(groups[:3], runner)
    transport = httpx.ASGITransport(app=monitoring_app(pipeline))
    async with httpx.AsyncClient(transport=transport, base_url="http://api") as client:
        path = await client.get("/groups/a%00b")
        query = await client.get("/transitions?group_id=%00")
    await pipeline.stop()
    assert path.status_code == query.status_code == 422
    assert path.json()["detail"][0]["loc"] == ["path"]
    assert query.json()["detail"][0]["loc"] == ["query", "group_id"]


@pytest.fixture
async def generator(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    # a cycle of 5 groups at 40 probes/s lasts about a second: long enough to overlap
    app = generator_app(
        GeneratorSettings(
            bus="memory",
            runs=0,
            api_token=TOKEN,
            sample=5,
            rate=40,
            database_url=f"sqlite:///{tmp_path / 'gen.db'}",
        )
    )
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(
            transport=transport,
            base_url="http://gen",
            headers={"Authorization": f"Bearer {TOKEN}"},
            timeout=60,
        ) as client:
            yield client


async def test_post_runs_validates_its_body(generator: httpx.AsyncClient) -> None:
    refused: list[dict[str, Any]] = []
    for body in ({"runs": 10**9}, {"runs": 0}, {"runs": "many"}, {"runs": 1, "cycles": 2}):
        r = await generator.post("/runs", json=body)
        assert r.status_code == 422, (body, r.text)
        refused.append(r.json()["detail"][0])
    assert refused[0]["loc"] == ["body", "runs"] and refused[0]["ctx"] == {
        "le": MAX_RUNS_PER_REQUEST
    }
    assert (await generator.post("/runs", content=b"not json")).status_code == 422
    assert (await generator.get("/runs")).json()["runs"] == []  # nothing ran

    one = await generator.post("/runs")
    assert one.status_code == 202 and one.json()["status"] in ("accepted", "running")
    first = await finished(generator, one.json())
    two = await generator.post("/runs", json={"runs": 2})
    assert two.status_code == 202
    second = await finished(generator, two.json())
    assert [c["cycle"] for c in first["cycles"]] == [1]
    assert [c["cycle"] for c in second["cycles"]] == [2, 3]
    # the request's id is its first cycle's run id
    assert second["cycles"][0]["run_id"] == two.json()["run_id"]
    assert (await generator.get("/runs/nope")).status_code == 404


async def finished(client: httpx.AsyncClient, accepted: dict[str, Any]) -> dict[str, Any]:
    """Poll a run request's state until it has ended; its last state."""

    async def ended() -> dict[str, Any] | None:
        state: dict[str, Any] = (await client.get(accepted["poll"])).json()
        assert state["run_id"] == accepted["run_id"]
        return state if state["status"] in ("done", "failed") else None

    state = await until("the run request ended", ended, timeout=120, step=0.05)
    assert state["status"] == "done", state
    return state


async def test_post_runs_answers_before_its_cycle_has_run(generator: httpx.AsyncClient) -> None:
    """The 202 comes before the cycle's first probe is published: the answer does not wait for
    the work (a cycle of 5 groups at 40 probes/s takes about a second), whatever the machine's
    speed — the request's state says so, read in the same instant as the answer."""
    r = await generator.post("/runs")
    assert r.status_code == 202
    assert r.json()["status"] == "accepted" and r.json()["cycles"] == []
    state = await finished(generator, r.json())
    assert state["cycles"][0]["probes"] > 0


async def test_concurrent_post_runs_start_one_run(generator: httpx.AsyncClient) -> None:
    answers = await asyncio.gather(*(generator.post("/runs") for _ in range(3)))
    codes = sorted(a.status_code for a in answers)
    assert codes == [202, 409, 409], [a.text for a in answers]
    busy = [a.json()["detail"] for a in answers if a.status_code == 409]
    assert all("in flight" in d for d in busy), busy
    (accepted,) = [a.json() for a in answers if a.status_code == 202]
    await finished(generator, accepted)
    state = (await generator.get("/runs")).json()
    assert [r["cycle"] for r in state["runs"]] == [1]
    # once it has ended, the next one starts
    again = await generator.post("/runs")
    assert [c["cycle"] for c in (await finished(generator, again.json()))["cycles"]] == [2]


async def test_continuous_stop_answers_within_its_deadline_while_a_cycle_runs(
    tmp_path: Path,
) -> None:
    """A cycle of 5 groups at 2 probes/s takes ~15 s; the stop waits for it at most
    ``stop_wait_s`` (0 here) and says the cycle is still in flight — the answer did not wait for
    the cycle, by construction, whatever the machine's speed. No next cycle starts after it."""
    app = generator_app(
        GeneratorSettings(
            bus="memory",
            runs=0,
            api_token=TOKEN,
            sample=5,
            rate=2,
            stop_wait_s=0,
            database_url=f"sqlite:///{tmp_path / 'gen.db'}",
        )
    )
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(
            transport=transport, base_url="http://gen", headers={"Authorization": f"Bearer {TOKEN}"}
        ) as client:
            assert (await client.post("/runs/continuous/start")).json() == {"started": True}

            async def state() -> dict[str, Any]:
                body: dict[str, Any] = (await client.get("/runs")).json()
                return body

            async def published() -> bool:
                return bool((await state())["published"])

            async def ended() -> bool:
                return not (await state())["continuous"]

            await until("the cycle's first probes out", published, timeout=120)
            stop = await client.post("/runs/continuous/stop")
            assert stop.status_code == 200
            assert stop.json() == {"stopped": True, "cycle_in_flight": True}
            await until("the cycle in flight ended", ended, timeout=120, step=0.1)
            runs = (await client.get("/runs")).json()["runs"]
            assert [r["cycle"] for r in runs] == [1]  # the cycle in flight ended; none after it
