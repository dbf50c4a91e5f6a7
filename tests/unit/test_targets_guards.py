from __future__ import annotations

import asyncio

import pytest

from groundwatch.adapters.targets import BreakerState, CircuitBreaker, TokenBucket

pytestmark = pytest.mark.unit


def state(b: CircuitBreaker) -> BreakerState:
    return b.state  # read through a call: mypy would otherwise narrow between assertions


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_breaker_opens_after_consecutive_failures_and_closes_after_good_trial() -> None:
    clock = FakeClock()
    b = CircuitBreaker(failures=3, reset_s=10, clock=clock)
    for ok in (False, False, True, False, False):  # a success resets the count
        permit = b.allow()
        assert permit is not None
        b.record(permit, ok)
    assert state(b) is BreakerState.CLOSED
    permit = b.allow()
    assert permit is not None
    b.record(permit, False)
    assert state(b) is BreakerState.OPEN and b.allow() is None
    clock.now += 9.9
    assert b.allow() is None
    clock.now += 0.2
    trial = b.allow()
    assert trial is not None and trial.trial and state(b) is BreakerState.HALF_OPEN
    assert b.allow() is None  # one trial at a time
    b.record(trial, True)
    assert state(b) is BreakerState.CLOSED
    assert [s for _, s in b.transitions] == ["open", "half_open", "closed"]


def test_failed_trial_reopens_and_stale_outcomes_are_ignored() -> None:
    clock = FakeClock()
    b = CircuitBreaker(failures=1, reset_s=5, clock=clock)
    stale = b.allow()
    first = b.allow()
    assert stale is not None and first is not None
    b.record(first, False)
    assert state(b) is BreakerState.OPEN
    b.record(stale, True)  # began before the circuit opened: does not close it
    assert state(b) is BreakerState.OPEN
    clock.now += 5
    trial = b.allow()
    assert trial is not None
    b.record(trial, False)
    assert state(b) is BreakerState.OPEN and b.allow() is None
    clock.now += 5
    again = b.allow()
    assert again is not None and again.trial
    b.release(again)  # cancelled trial: the next caller gets to try
    assert b.allow() is not None


async def test_waiters_follow_the_trial_outcome() -> None:
    clock = FakeClock()
    b = CircuitBreaker(failures=1, reset_s=1, clock=clock)
    p = b.allow()
    assert p is not None
    b.record(p, False)
    clock.now += 1
    trial = await b.acquire()
    assert trial is not None and trial.trial
    waiters = [asyncio.create_task(b.acquire()) for _ in range(3)]
    await asyncio.sleep(0)
    assert not any(w.done() for w in waiters)
    b.record(trial, True)
    permits = await asyncio.gather(*waiters)
    assert all(p is not None and not p.trial for p in permits)


async def test_waiters_fail_fast_when_the_trial_fails() -> None:
    clock = FakeClock()
    b = CircuitBreaker(failures=1, reset_s=1, clock=clock)
    p = b.allow()
    assert p is not None
    b.record(p, False)
    clock.now += 1
    trial = await b.acquire()
    assert trial is not None
    waiter = asyncio.create_task(b.acquire())
    await asyncio.sleep(0)
    b.record(trial, False)
    assert await waiter is None


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


def test_failures_of_one_key_count_once_and_distinct_keys_open() -> None:
    b = CircuitBreaker(failures=3, reset_s=10, clock=FakeClock())
    for _ in range(10):  # one fact failing in every form, again and again
        permit = b.allow()
        assert permit is not None
        b.record(permit, False, key="g-bad")
    assert state(b) is BreakerState.CLOSED
    for key in ("g2", "g3"):  # two more groups failing: three distinct, the circuit opens
        permit = b.allow()
        assert permit is not None
        b.record(permit, False, key=key)
    assert state(b) is BreakerState.OPEN


def test_a_success_ends_the_keyed_streak() -> None:
    b = CircuitBreaker(failures=2, reset_s=10, clock=FakeClock())
    for key, ok in (("a", False), ("b", True), ("a", False)):
        permit = b.allow()
        assert permit is not None
        b.record(permit, ok, key=key)
    assert state(b) is BreakerState.CLOSED  # "a" counted again after the success, alone


def test_a_new_cycle_starts_an_open_circuit_half_open() -> None:
    """However recently it opened: one trial at once; a failed trial opens it again for the
    rest of the cycle, a good one closes it. A closed circuit stays closed."""
    clock = FakeClock()
    b = CircuitBreaker(failures=1, reset_s=3600, clock=clock)
    b.half_open()
    assert state(b) is BreakerState.CLOSED
    permit = b.allow()
    assert permit is not None
    b.record(permit, False)
    assert state(b) is BreakerState.OPEN and b.allow() is None
    b.half_open()  # the next cycle, a second later
    trial = b.allow()
    assert trial is not None and trial.trial and b.allow() is None
    b.record(trial, False)
    assert state(b) is BreakerState.OPEN and b.allow() is None
    b.half_open()
    trial = b.allow()
    assert trial is not None
    b.record(trial, True)
    assert state(b) is BreakerState.CLOSED
