"""The target's rate guard: a token bucket on the loop's virtual clock."""

from __future__ import annotations

import asyncio

import pytest

from groundwatch.adapters.targets import TokenBucket

pytestmark = pytest.mark.unit


@pytest.mark.looptime  # the loop's clock is virtual: the rate is exact whatever the load
async def test_token_bucket_rate_and_burst() -> None:
    loop = asyncio.get_running_loop()
    bucket = TokenBucket(rate=100, depth=5, clock=loop.time)
    started = loop.time()
    for _ in range(5):
        await bucket.acquire()
    assert loop.time() == started  # the burst is free
    for _ in range(10):
        await bucket.acquire()
    assert loop.time() - started == pytest.approx(0.1, abs=1e-3)  # then 100/s


def test_token_bucket_rejects_nonsense() -> None:
    with pytest.raises(ValueError, match="rate"):
        TokenBucket(rate=0, depth=1)
