"""The lane's circuit breaker on a fake clock: a failure rate over recent semantic groups opens
it, a fact failing in all its forms or a flaky endpoint's chance streak does not, a few trials
close it (no wall-clock windows)."""

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


def call(b: LaneBreaker, ok: bool, key: str | None = None, retry: bool = False) -> bool:
    """One attempt through ``b``; False when the circuit refused it."""
    permit = b.allow()
    if permit is None:
        return False
    b.record(permit, ok, key=key, retry=retry)
    return True


def ask_group(b: LaneBreaker, group: str, answered: bool, forms: int = 6) -> None:
    """Every form of ``group``, one after another: all answered or all failing."""
    for _ in range(forms):
        call(b, answered, key=group)


def test_defaults_come_from_the_target_limits() -> None:
    s = BreakerSettings.of(TargetLimits())
    assert (s.failures, s.failure_rate, s.window, s.min_groups, s.trial_calls, s.reset_s) == (
        20, 0.5, 100, 20, 3, 30.0,
    )  # fmt: skip
    assert BreakerSettings.of(TargetLimits(breaker_window=10)).min_groups == 10


def test_an_endpoint_failing_every_group_opens_it_at_the_min_groups_th_group() -> None:
    """The stated bound: every call failing, the ``min_groups``-th group's first failure opens
    it by rate (the streak, at a larger ``failures``, is not what opens it here)."""
    b = LaneBreaker(BreakerSettings(failures=1000, min_groups=20), FakeClock())
    for g in range(19):
        ask_group(b, f"g{g}", answered=False)
        assert state(b) is BreakerState.CLOSED
    assert (b.window_groups, b.window_failed) == (19, 19)
    assert call(b, False, key="g19")
    assert state(b) is BreakerState.OPEN and b.allow() is None


def test_one_group_failing_in_every_form_is_one_failure() -> None:
    b = LaneBreaker(BreakerSettings(failures=1000), FakeClock())
    for _ in range(500):
        call(b, False, key="g")
    assert state(b) is BreakerState.CLOSED and (b.window_groups, b.window_failed) == (1, 1)


def test_the_rate_opens_it_only_past_the_share_of_the_window() -> None:
    b = LaneBreaker(BreakerSettings(window=10, min_groups=10, failure_rate=0.5), FakeClock())
    for i in range(6):
        call(b, True, key=f"ok{i}")
    for i in range(4):
        ask_group(b, f"g{i}", answered=False)
    assert state(b) is BreakerState.CLOSED and (b.window_groups, b.window_failed) == (10, 4)
    call(b, False, key="g4")  # the least recently seen answered group leaves: 5 of 10 failed
    assert state(b) is BreakerState.OPEN


def test_a_retry_that_succeeds_takes_its_calls_place() -> None:
    b = LaneBreaker(BreakerSettings(window=10, min_groups=4, failure_rate=0.5), FakeClock())
    for i in range(20):  # every call fails once, then its retry is answered
        call(b, False, key=f"g{i}")
        assert state(b) is BreakerState.CLOSED
        call(b, True, key=f"g{i}", retry=True)
    assert (b.window_groups, b.window_failed) == (10, 0)


def test_a_group_weighs_the_share_of_its_calls_that_failed() -> None:
    """Forms answered at random weigh their group by the share failed: an endpoint failing
    most requests opens it though each group has an answered form."""
    b = LaneBreaker(BreakerSettings(window=10, min_groups=4, failures=1000), FakeClock())
    for i in range(3):
        for ok in (True, False, False, False):
            call(b, ok, key=f"g{i}")
    assert state(b) is BreakerState.CLOSED and b.window_failed == pytest.approx(2.25)
    for ok in (True, False, False, False):
        call(b, ok, key="g3")
    assert state(b) is BreakerState.OPEN  # 4 groups, each 3/4 failed


def test_a_fifth_of_the_facts_failing_in_all_forms_never_opens_it() -> None:
    """The facts fail in pairs (two of every ten), so the first 20 calls hold 12 failures: a
    rate over calls opens on them; over groups the window holds a fifth of failed groups."""
    b = LaneBreaker(BreakerSettings(failures=1000), FakeClock())
    calls: list[bool] = []
    for g in range(2000):
        answered = g % 10 >= 2
        ask_group(b, f"g{g}", answered)
        calls += [answered] * 6
        assert state(b) is BreakerState.CLOSED
    assert calls[:20].count(False) >= 10  # what a window of calls would have opened on
    assert b.window_failed == 20 and b.window_groups == 100


def test_a_fifth_of_the_facts_failing_at_random_asked_interleaved_never_opens_it() -> None:
    """10,000 facts, each failing in all its forms with chance 0.2; eight calls in flight mix
    the forms of neighbouring groups, as a lane's workers do."""
    rng = random.Random(20)
    b = LaneBreaker(BreakerSettings(), FakeClock())
    calls = [(f"g{g}", rng.random() >= 0.2) for g in range(10_000) for _ in range(6)]
    for start in range(0, len(calls), 8):
        batch = calls[start : start + 8]
        rng.shuffle(batch)
        for group, answered in batch:
            assert call(b, answered, key=group)
    assert state(b) is BreakerState.CLOSED and not b.transitions


def test_a_group_asked_again_in_a_new_cycle_is_judged_by_that_cycle() -> None:
    """Fewer groups than the window: last cycle's answers would otherwise hide an outage."""
    b = LaneBreaker(BreakerSettings(failures=1000), FakeClock())
    for g in range(40):
        ask_group(b, f"g{g}", answered=True)
    b.new_cycle()
    for g in range(19):
        ask_group(b, f"g{g}", answered=False)
    assert state(b) is BreakerState.CLOSED and b.window_failed == 19
    ask_group(b, "g19", answered=False)  # 20 of the 40 groups failed in this cycle
    assert state(b) is BreakerState.OPEN


def test_a_flapping_endpoint_opens_it_only_for_an_outage_of_failures_groups() -> None:
    """As the module says: short outages among answered stretches leave it closed (a rate below
    ``failure_rate``, a streak below ``failures``); an outage of ``failures`` groups opens it;
    the trials close it once the endpoint answers again, and the count starts afresh."""
    clock = FakeClock()
    b = LaneBreaker(BreakerSettings(failures=20, reset_s=30), clock)
    g = 0
    for _ in range(50):  # down for 15 groups, up for 40
        for answered, n in ((False, 15), (True, 40)):
            for _ in range(n):
                ask_group(b, f"g{g}", answered)
                g += 1
    assert state(b) is BreakerState.CLOSED and not b.transitions
    for i in range(20):  # a longer outage: the 20th failed group opens it
        assert state(b) is BreakerState.CLOSED
        ask_group(b, f"g{g + i}", answered=False)
    assert state(b) is BreakerState.OPEN
    clock.now += 30
    assert call(b, False, key="down") and state(b) is BreakerState.HALF_OPEN
    assert call(b, True, key="up") and state(b) is BreakerState.CLOSED
    assert (b.window_groups, b.window_failed) == (0, 0)


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
            assert call(b, ok, key=f"g{i}", retry=_attempt > 0)
            if ok:
                break
    assert state(b) is BreakerState.CLOSED and not b.transitions
    assert longest >= 5  # the streak that opened the circuit before


def test_an_endpoint_failing_95_percent_of_requests_opens_it_at_the_min_groups() -> None:
    """Two retries answer about one call in seven, so most groups have an answered form; each
    still weighs the share of its calls that failed, and the 20th group opens it."""
    rng = random.Random(95)
    b = LaneBreaker(BreakerSettings(failures=1000), FakeClock())
    groups = 0
    while state(b) is BreakerState.CLOSED and groups < 1000:
        groups += 1
        for _form in range(6):
            for attempt in range(3):
                ok = rng.random() >= 0.95
                call(b, ok, key=f"g{groups}", retry=attempt > 0)
                if ok or state(b) is not BreakerState.CLOSED:
                    break
    assert groups == 20


def test_a_long_streak_of_distinct_groups_opens_it_whatever_the_rate() -> None:
    b = LaneBreaker(BreakerSettings(failures=3, min_groups=100), FakeClock())
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
    b.new_cycle()
    assert state(b) is BreakerState.HALF_OPEN and call(b, True)
    assert state(b) is BreakerState.CLOSED
    b.new_cycle()  # a closed circuit stays closed
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
