"""The per-target rate limit on traffic ingest, driven by a fake clock: nothing here sleeps."""

from __future__ import annotations

from collections.abc import Sequence

import httpx
import pytest
from fastapi import FastAPI

from groundwatch.app.settings import TrafficSettings
from groundwatch.contracts import TrafficRecord
from groundwatch.runtime.otlp import add_otlp_routes
from groundwatch.runtime.traffic_api import add_traffic_routes, rate_limited
from groundwatch.runtime.traffic_limit import (
    MAX_TARGETS,
    RateLimited,
    TargetRateLimit,
    TooLargeForLimit,
)

TOKEN = "limit-secret"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_each_target_has_its_own_bucket_and_a_batch_is_taken_whole() -> None:
    clock = Clock()
    limit = TargetRateLimit(rate=2.0, burst=5, clock=clock)
    limit.take(["a"] * 5)
    limit.take(["b"] * 5)  # another target: a budget of its own
    with pytest.raises(RateLimited) as caught:
        limit.take(["a"])
    assert caught.value.target == "a"
    assert caught.value.retry_after_s == pytest.approx(0.5)  # one token at 2 a second
    assert caught.value.retry_after == "1"  # whole seconds, at least 1
    clock.now += 1.0  # two tokens back
    with pytest.raises(RateLimited) as caught:
        limit.take(["a"] * 3 + ["c"])  # c fits, a does not: nothing is taken
    assert caught.value.retry_after_s == pytest.approx(0.5)
    limit.take(["a", "a"])
    limit.take(["c"] * 5)  # c's bucket untouched by the refused batch
    clock.now += 100.0
    limit.take(["a"] * 5)  # refilled to the burst, never beyond
    with pytest.raises(RateLimited):
        limit.take(["a"])
    with pytest.raises(TooLargeForLimit, match="at most 5 at once"):
        limit.take(["d"] * 6)


def test_forgotten_targets_start_full_and_memory_stays_bounded() -> None:
    clock = Clock()
    limit = TargetRateLimit(rate=1.0, burst=1, clock=clock)
    for i in range(MAX_TARGETS + 50):
        limit.take([f"t{i}"])
    assert len(limit._buckets) <= MAX_TARGETS
    clock.now += 10.0
    limit.take(["t0"])  # forgotten or refilled: the same full bucket


def test_settings_make_the_limit_or_none() -> None:
    assert TrafficSettings().limit() is None
    made = TrafficSettings(traffic_rate=3.0, traffic_burst=7).limit(Clock())
    assert made is not None and made.rate == 3.0 and made.burst == 7.0


async def test_both_endpoints_answer_429_with_retry_after_and_publish_nothing() -> None:
    clock = Clock()
    published: list[TrafficRecord] = []

    async def publish(records: Sequence[TrafficRecord]) -> None:
        published.extend(records)

    limited = rate_limited(publish, TargetRateLimit(rate=0.25, burst=2, clock=clock))
    app = FastAPI()
    add_traffic_routes(app, limited, token=TOKEN)
    add_otlp_routes(app, limited, token=TOKEN)
    one = {"target": "shipbot", "question": "rotterdam berths?", "answer": "57"}
    span = {
        "resourceSpans": [
            {
                "resource": {
                    "attributes": [{"key": "service.name", "value": {"stringValue": "shipbot"}}]
                },
                "scopeSpans": [
                    {
                        "spans": [
                            {
                                "traceId": "0af7651916cd43dd8448eb211c80319c",
                                "spanId": "b7ad6b7169203331",
                                "name": "query",
                                "startTimeUnixNano": "1700000000000000000",
                                "endTimeUnixNano": "1700000001000000000",
                                "attributes": [
                                    {"key": "input.value", "value": {"stringValue": "berths?"}},
                                    {"key": "output.value", "value": {"stringValue": "57"}},
                                ],
                            }
                        ]
                    }
                ],
            }
        ]
    }
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://gw") as http:
        assert (await http.post("/traffic", json=[one, one], headers=AUTH)).status_code == 202
        refused = await http.post("/traffic", json=[one], headers=AUTH)
        assert refused.status_code == 429
        assert refused.headers["Retry-After"] == "4"  # one record at 0.25 a second
        assert "over its traffic rate limit" in refused.json()["detail"]
        traced = await http.post("/v1/traces", json=span, headers=AUTH)
        assert traced.status_code == 429 and traced.headers["Retry-After"] == "4"
        other = {**one, "target": "portbot"}
        assert (await http.post("/traffic", json=[other], headers=AUTH)).status_code == 202
        too_big = await http.post("/traffic", json=[one] * 3, headers=AUTH)
        assert too_big.status_code == 422 and "GW_TRAFFIC_BURST" in too_big.json()["detail"]
        clock.now += 4.0
        assert (await http.post("/v1/traces", json=span, headers=AUTH)).status_code == 200
    assert [r.target for r in published] == ["shipbot", "shipbot", "portbot", "shipbot"]
