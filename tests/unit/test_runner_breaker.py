"""The lane's circuit breaker on a fake clock: a failure rate over recent calls opens it, a
flaky endpoint's chance streak does not, a few trials close it (no wall-clock windows)."""

from __future__ import annotations

import asyncio
import random

import pytest

from groundwatch.adapters.targets import BreakerState, TargetLimits
from groundwatch.stages.runner.breaker import BreakerSettings, LaneBreaker

pytestmark = pytest.mark.unit


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def state(b: LaneBreaker) -> BreakerState:
    return b.state  # read through a call: mypy would otherwise narrow between assertions


def call(b: LaneBreaker, ok: bool, key: str | None = None, name: object = None) -> bool:
    """One call through ``b``; False when the circuit refused it."""
    permit = b.allow()
    if permit is None:
        return False
    b.record(permit, ok, key=key, call=name)
    return True


def test_defaults_come_from_the_target_limits() -> None:
    s = BreakerSettings.of(TargetLimits())
    assert (s.failures, s.failure_rate, s.window, s.min_calls, s.trial_calls, s.reset_s) == (
        20, 0.5, 100, 20, 3, 30.0,
    )  # fmt: skip
    assert BreakerSettings.of(TargetLimits(breaker_window=10)).min_calls == 10


def test_a_dead_endpoint_opens_it_after_min_calls() -> None:
    b = LaneBreaker(BreakerSettings(), FakeClock())
    for i in range(19):
        assert call(b, False, key="g", name=f"p{i}")  # one group: the streak counts it once
        assert state(b) is BreakerState.CLOSED
    assert call(b, False, key="g", name="p19")
    assert state(b) is BreakerState.OPEN and b.allow() is None


def test_the_rate_opens_it_only_past_the_share_of_the_window() -> None:
    b = LaneBreaker(BreakerSettings(window=10, min_calls=10, failure_rate=0.5), FakeClock())
    for i in range(6):
        call(b, True, name=i)
    for i in range(4):
        call(b, False, key=f"g{i}", name=f"f{i}")
    assert state(b) is BreakerState.CLOSED and (b.window_calls, b.window_failures) == (10, 4)
    call(b, False, key="g4", name="f4")  # the oldest success leaves: 5 of 10 failed
    assert state(b) is BreakerState.OPEN


def test_a_retry_that_succeeds_takes_its_calls_place() -> None:
    b = LaneBreaker(BreakerSettings(window=10, min_calls=4, failure_rate=0.5), FakeClock())
    for i in range(20):  # every call fails once, then its retry is answered
        call(b, False, key=f"g{i}", name=i)
        assert state(b) is BreakerState.CLOSED
        call(b, True, key=f"g{i}", name=i)
    assert (b.window_calls, b.window_failures) == (10, 0)


def test_a_flaky_endpoint_with_retries_never_opens_it() -> None:
    """30 % of attempts fail at random, two retries: 10,000 probes and no open circuit, where
    five consecutive failures (the old rule) come within a few hundred calls."""
    rng = random.Random(30)
    b = LaneBreaker(BreakerSettings(), FakeClock())
    streak = longest = 0
    for i in range(10_000):
        for _attempt in range(3):
            ok = rng.random() >= 0.3
            streak = 0 if ok else streak + 1
            longest = max(longest, streak)
            assert call(b, ok, key=f"g{i}", name=i)
            if ok:
                break
    assert state(b) is BreakerState.CLOSED and not b.transitions
    assert longest >= 5  # the streak that opened the circuit before


def test_a_mostly_failing_endpoint_opens_it_within_the_min_calls() -> None:
    rng = random.Random(95)
    b = LaneBreaker(BreakerSettings(), FakeClock())
    calls = 0
    while state(b) is BreakerState.CLOSED:
        calls += 1
        call(b, rng.random() >= 0.95, key=f"g{calls}", name=calls)
    assert calls <= 25


def test_a_long_streak_of_distinct_groups_opens_it_whatever_the_rate() -> None:
    b = LaneBreaker(BreakerSettings(failures=3, min_calls=100), FakeClock())
    call(b, False, key="a")
    call(b, False, key="a")  # the same group again: counted once
    call(b, False, key="b")
    assert state(b) is BreakerState.CLOSED
    call(b, False, key="c")
    assert state(b) is BreakerState.OPEN


def test_half_open_lets_a_few_trials_through_and_the_first_answer_closes_it() -> None:
    clock = FakeClock()
    b = LaneBreaker(BreakerSettings(failures=1, trial_calls=3, reset_s=10), clock)
    call(b, False)
    assert state(b) is BreakerState.OPEN
    clock.now += 9.9
    assert b.allow() is None
    clock.now += 0.2
    trials = [b.allow() for _ in range(4)]
    assert [t is not None and t.trial for t in trials] == [True, True, True, False]
    assert state(b) is BreakerState.HALF_OPEN
    first, second, _third, _ = trials
    assert first is not None and second is not None
    b.record(first, False)
    assert state(b) is BreakerState.HALF_OPEN  # one trial failed of three
    b.record(second, True)
    assert state(b) is BreakerState.CLOSED and b.allow() is not None
    assert [s for _, s in b.transitions] == [
        BreakerState.OPEN, BreakerState.HALF_OPEN, BreakerState.CLOSED,
    ]  # fmt: skip


def test_all_trials_failing_open_it_for_another_reset() -> None:
    clock = FakeClock()
    b = LaneBreaker(BreakerSettings(failures=1, trial_calls=2, reset_s=10), clock)
    call(b, False)
    clock.now += 10
    assert call(b, False) and state(b) is BreakerState.HALF_OPEN
    assert call(b, False) and state(b) is BreakerState.OPEN
    clock.now += 9
    assert b.allow() is None
    clock.now += 1
    assert call(b, True) and state(b) is BreakerState.CLOSED


def test_calls_from_before_the_circuit_opened_do_not_decide() -> None:
    b = LaneBreaker(BreakerSettings(failures=1), FakeClock())
    early = b.allow()
    assert early is not None
    call(b, False)
    b.record(early, True)  # answered, but it was let through before the circuit opened
    assert state(b) is BreakerState.OPEN


def test_a_cancelled_trial_frees_its_place() -> None:
    clock = FakeClock()
    b = LaneBreaker(BreakerSettings(failures=1, trial_calls=1, reset_s=1), clock)
    call(b, False)
    clock.now += 1
    trial = b.allow()
    assert trial is not None and b.allow() is None
    b.release(trial)
    assert b.allow() is not None


def test_a_new_cycle_starts_it_half_open() -> None:
    b = LaneBreaker(BreakerSettings(failures=1, reset_s=3600), FakeClock())
    call(b, False)
    b.half_open()
    assert state(b) is BreakerState.HALF_OPEN and call(b, True)
    assert state(b) is BreakerState.CLOSED
    b.half_open()  # a closed circuit stays closed
    assert state(b) is BreakerState.CLOSED


async def test_waiting_callers_are_let_through_once_a_trial_answers() -> None:
    clock = FakeClock()
    b = LaneBreaker(BreakerSettings(failures=1, trial_calls=1, reset_s=1), clock)
    call(b, False)
    clock.now += 1
    trial = await b.acquire()
    assert trial is not None and trial.trial
    waiting = asyncio.ensure_future(b.acquire())
    await asyncio.sleep(0)
    assert not waiting.done()  # the trial is out: the caller waits for its outcome
    b.record(trial, True)
    permit = await asyncio.wait_for(waiting, 1)
    assert permit is not None and not permit.trial


async def test_waiting_callers_get_circuit_open_when_every_trial_failed() -> None:
    clock = FakeClock()
    b = LaneBreaker(BreakerSettings(failures=1, trial_calls=1, reset_s=1), clock)
    call(b, False)
    clock.now += 1
    trial = await b.acquire()
    assert trial is not None
    waiting = asyncio.ensure_future(b.acquire())
    await asyncio.sleep(0)
    b.record(trial, False)
    assert await asyncio.wait_for(waiting, 1) is None
    assert state(b) is BreakerState.OPEN
