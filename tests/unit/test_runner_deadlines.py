"""The lane's per-attempt deadlines (one timer per lane): exact, in order, and only their own."""

from __future__ import annotations

import asyncio

import pytest

from groundwatch.adapters.targets import TargetLimits, TargetReply
from groundwatch.contracts import TargetStatus
from groundwatch.stages.runner.deadlines import Deadlines
from groundwatch.stages.runner.lanes import Runner
from tests.unit._runner_helpers import probe

pytestmark = pytest.mark.unit

TICK = 1e-3  # looptime steps the virtual clock in microseconds; a sweep period would be 50 ms


class Delays:
    """Answers each query after the delay its text names (``"0.2"`` = 200 ms)."""

    async def ask(self, query: str) -> TargetReply:
        await asyncio.sleep(float(query))
        return TargetReply("ok")


@pytest.mark.looptime  # the loop's clock is virtual: deadlines are exact whatever the load
async def test_each_attempt_times_out_at_its_own_deadline_and_fast_ones_answer() -> None:
    limits = TargetLimits(concurrency=8, timeout_s=0.1, retries=0)
    loop = asyncio.get_running_loop()
    async with Runner({"t": Delays()}, {"t": limits}, clock=loop.time) as runner:
        started = loop.time()
        slow_first = asyncio.ensure_future(runner.run(probe("t", "5")))
        await asyncio.sleep(0.05)
        fast, slow_second = await asyncio.gather(
            runner.run(probe("t", "0.01")), runner.run(probe("t", "5"))
        )
        first = await slow_first
        took = loop.time() - started
    assert fast.status is TargetStatus.OK
    assert fast.latency_s == pytest.approx(0.01, abs=TICK)
    assert first.error_kind == "timeout" and slow_second.error_kind == "timeout"
    assert first.latency_s == pytest.approx(
        0.1, abs=TICK
    )  # at its deadline, not a sweep period later
    assert slow_second.latency_s == pytest.approx(0.1, abs=TICK)
    assert took == pytest.approx(0.15, abs=TICK)  # the second deadline is 50 ms after the first


async def test_a_cancellation_from_outside_is_not_taken_for_a_timeout() -> None:
    started = asyncio.Event()

    async def attempt(deadlines: Deadlines) -> str:
        entry = deadlines.start()
        started.set()
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            if entry.timed_out():
                return "timeout"
            raise
        finally:
            deadlines.finish(entry)
        return "answered"

    long = Deadlines(10.0)
    task = asyncio.ensure_future(attempt(long))
    await started.wait()  # under its deadline, waiting for the answer
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    long.close()

    short = Deadlines(0.02)
    assert await attempt(short) == "timeout"
    current = asyncio.current_task()
    assert current is not None and current.cancelling() == 0  # our cancel was taken back
    short.close()


async def test_finished_attempts_leave_no_timer_and_no_backlog() -> None:
    deadlines = Deadlines(60.0)
    for _ in range(1000):
        deadlines.finish(deadlines.start())
    assert not deadlines._pending
    assert deadlines._timer is not None  # armed once for the first, never once per attempt
    deadlines.close()
    assert deadlines._timer is None
