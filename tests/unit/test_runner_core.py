from __future__ import annotations

import asyncio
import time

import pytest

from groundwatch.adapters.targets import (
    BreakerState,
    CallableTarget,
    ErrorKind,
    TargetError,
    TargetLimits,
    TargetReply,
)
from groundwatch.contracts import RagResponse, TargetStatus
from groundwatch.stages.runner.lanes import LaneSnapshot, Runner
from tests.unit._runner_helpers import probe
from tests.waiting import until

pytestmark = pytest.mark.unit

FAST = TargetLimits(backoff_initial_s=0.001, backoff_max_s=0.005, timeout_s=1.0)
TICK = 1e-3  # looptime steps its virtual clock in microseconds
# ``looptime`` tests run on a virtual loop clock that jumps to the next timer when the loop is idle:
# a latency or a spacing is then the mechanism's own, exact whatever the machine's load.
VIRTUAL = pytest.mark.looptime


class Scripted:
    """Raises the scripted errors in order, then answers; counts calls and concurrency."""

    def __init__(self, *errors: TargetError, delay: float = 0.0) -> None:
        self.errors = list(errors)
        self.delay = delay
        self.calls = 0
        self.active = 0
        self.max_active = 0
        self.call_times: list[float] = []
        self.clock = time.monotonic

    async def ask(self, query: str) -> TargetReply:
        self.calls += 1
        self.call_times.append(self.clock())
        self.active += 1
        self.max_active = max(self.max_active, self.active)
        try:
            if self.delay:
                await asyncio.sleep(self.delay)
            if self.errors:
                raise self.errors.pop(0)
            return TargetReply(f"answer to {query}", ["d1", "d2"], ["c1", "c2"])
        finally:
            self.active -= 1


@VIRTUAL
async def test_ok_response_carries_probe_fields_and_evidence() -> None:
    p = probe("t", "where?", answer="here")
    async with Runner({"t": Scripted(delay=0.01)}, clock=asyncio.get_running_loop().time) as runner:
        r = await runner.run(p)
    assert r.status is TargetStatus.OK and r.error_kind is None
    assert (r.answer, r.retrieved_ids, r.contexts) == (
        "answer to where?",
        ["d1", "d2"],
        ["c1", "c2"],
    )
    assert r.probe_id == p.probe_id and r.group_id == p.group_id and r.expected == p.expected
    assert r.latency_s == pytest.approx(0.01, abs=TICK) and not r.answer_truncated


async def test_unknown_target_is_an_error_response() -> None:
    async with Runner({"t": Scripted()}) as runner:
        r = await runner.run(probe("nope"))
    assert r.status is TargetStatus.ERROR and r.error_kind == "unknown_target"


async def test_retries_transient_errors_only() -> None:
    attempts: list[int] = []

    def hook(response: RagResponse, n: int) -> None:
        attempts.append(n)

    flaky = Scripted(TargetError(ErrorKind.HTTP_5XX), TargetError(ErrorKind.CONNECTION))
    broken = Scripted(TargetError(ErrorKind.HTTP_4XX), TargetError(ErrorKind.HTTP_4XX))
    garbled = Scripted(TargetError(ErrorKind.BAD_PAYLOAD))
    down = Scripted(*[TargetError(ErrorKind.HTTP_5XX)] * 5)
    targets = {"flaky": flaky, "broken": broken, "garbled": garbled, "down": down}
    limits = {name: FAST.model_copy(update={"retries": 2}) for name in targets}
    async with Runner(targets, limits, on_response=hook) as runner:
        ok, bad, garbage, dead = await runner.run_many(
            [probe("flaky"), probe("broken"), probe("garbled"), probe("down")]
        )
    assert ok.status is TargetStatus.OK and flaky.calls == 3
    assert bad.error_kind == "http_4xx" and broken.calls == 1
    assert garbage.error_kind == "bad_payload" and garbled.calls == 1
    assert dead.error_kind == "http_5xx" and down.calls == 3
    assert sorted(attempts) == [1, 1, 3, 3]


@VIRTUAL
async def test_retry_waits_for_retry_after_with_jitter_below_it() -> None:
    limited = Scripted(TargetError(ErrorKind.RATE_LIMITED, retry_after=0.15))
    limited.clock = asyncio.get_running_loop().time
    limits = {"t": FAST.model_copy(update={"backoff_max_s": 1.0})}
    async with Runner({"t": limited}, limits, clock=limited.clock) as r:
        response = await r.run(probe("t"))
    assert response.status is TargetStatus.OK
    assert limited.call_times[1] - limited.call_times[0] >= 0.15


@VIRTUAL
async def test_timeout_is_an_error_with_the_attempt_latency() -> None:
    slow = Scripted(delay=5.0)
    limits = FAST.model_copy(update={"timeout_s": 0.05, "retries": 0})
    async with Runner({"t": slow}, {"t": limits}, clock=asyncio.get_running_loop().time) as runner:
        r = await runner.run(probe("t"))
    assert r.status is TargetStatus.ERROR and r.error_kind == "timeout" and r.answer is None
    assert r.latency_s == pytest.approx(0.05, abs=TICK)


async def test_adapter_bug_becomes_an_error_response() -> None:
    def buggy(query: str) -> str:
        raise KeyError("oops")

    async with Runner({"t": CallableTarget(buggy)}, {"t": FAST}) as runner:
        r = await runner.run(probe("t"))
    assert r.status is TargetStatus.ERROR and r.error_kind == "exception"


async def test_oversize_answer_truncated_with_flag() -> None:
    reply = TargetReply("x" * 25_000, [f"d{i}" for i in range(60)], ["c" * 30_000] * 60)
    async with Runner({"t": CallableTarget(lambda q: reply)}) as runner:
        r = await runner.run(probe("t"))
    assert r.status is TargetStatus.OK and r.answer_truncated
    assert r.answer is not None and len(r.answer) == 20_000
    assert len(r.contexts) == 50 and all(len(c) == 20_000 for c in r.contexts)
    assert len(r.retrieved_ids) == 60


async def test_per_target_concurrency_bound() -> None:
    target = Scripted(delay=0.02)
    limits = FAST.model_copy(update={"concurrency": 3})
    async with Runner({"t": target}, {"t": limits}) as runner:
        responses = await runner.run_many([probe("t", f"q{i}") for i in range(20)])
    assert all(r.status is TargetStatus.OK for r in responses)
    assert target.max_active == 3
    assert [r.query for r in responses] == [f"q{i}" for i in range(20)]


@VIRTUAL
async def test_slow_target_never_stalls_another() -> None:
    slow, fast = Scripted(delay=1.0), Scripted(delay=0.005)
    limits = {"slow": FAST.model_copy(update={"concurrency": 1, "timeout_s": 5.0}), "fast": FAST}
    loop = asyncio.get_running_loop()
    async with Runner({"slow": slow, "fast": fast}, limits, clock=loop.time) as runner:
        slow_batch = asyncio.create_task(
            runner.run_many([probe("slow", f"s{i}") for i in range(5)])
        )
        await asyncio.sleep(0.01)
        started = loop.time()
        done_fast = [
            r async for r in runner.iter_responses([probe("fast", f"f{i}") for i in range(40)])
        ]
        elapsed = loop.time() - started
        assert len(done_fast) == 40 and all(r.status is TargetStatus.OK for r in done_fast)
        # all forty inside the slow target's first second: none waited behind a slow call
        assert elapsed < slow.delay and slow.calls == 1 and not slow_batch.done()
        slow_batch.cancel()


def full_lane(runner: Runner, in_flight: int, queued: int) -> LaneSnapshot | None:
    (snap,) = runner.snapshot()
    return snap if (snap.in_flight, snap.queued) == (in_flight, queued) else None


async def test_bounded_queue_gives_back_pressure() -> None:
    gate = asyncio.Event()

    async def blocked(query: str) -> str:
        await gate.wait()
        return "ok"

    limits = FAST.model_copy(update={"concurrency": 1, "queue_size": 2, "timeout_s": 10.0})
    async with Runner({"t": CallableTarget(blocked)}, {"t": limits}) as runner:
        callers = [asyncio.create_task(runner.run(probe("t", f"q{i}"))) for i in range(10)]
        full = await until("the lane full", lambda: full_lane(runner, 1, 2))
        assert (full.in_flight, full.queued) == (1, 2)  # the other 7 callers wait to enqueue
        for _ in range(10):  # the loop runs on: the bound holds, it was no passing state
            await asyncio.sleep(0)
        (snap,) = runner.snapshot()
        assert (snap.in_flight, snap.queued) == (1, 2)
        assert not any(c.done() for c in callers)
        gate.set()
        responses = await asyncio.gather(*callers)
    assert all(r.status is TargetStatus.OK for r in responses)


@VIRTUAL
async def test_rate_limit_spaces_requests() -> None:
    target = Scripted()
    target.clock = asyncio.get_running_loop().time
    limits = FAST.model_copy(update={"concurrency": 10, "rate_per_s": 50, "burst": 1})
    async with Runner({"t": target}, {"t": limits}, clock=target.clock) as runner:
        await runner.run_many([probe("t", f"q{i}") for i in range(11)])
    # 1 token at start, then 10 more at 50/s, one every 20 ms whatever the concurrency
    gaps = [b - a for a, b in zip(target.call_times, target.call_times[1:], strict=False)]
    assert gaps == pytest.approx([0.02] * 10, abs=TICK)


async def test_open_circuit_fails_fast_without_calling_the_target() -> None:
    down = Scripted(*[TargetError(ErrorKind.CONNECTION)] * 2)
    limits = FAST.model_copy(update={"retries": 0, "breaker_failures": 2, "breaker_reset_s": 60})
    async with Runner({"t": down}, {"t": limits}) as runner:
        first = await runner.run_many([probe("t", "q1"), probe("t", "q2")])  # two groups
        assert [r.error_kind for r in first] == ["connection", "connection"]
        assert runner.breaker("t").state is BreakerState.OPEN
        r = await runner.run(probe("t"))
    assert r.error_kind == "circuit_open" and down.calls == 2


async def test_limits_for_unknown_targets_rejected() -> None:
    with pytest.raises(ValueError, match="unknown targets"):
        Runner({"a": Scripted()}, {"b": FAST})


async def test_close_cancels_waiting_callers() -> None:
    gate = asyncio.Event()

    async def blocked(query: str) -> str:
        await gate.wait()
        return "ok"

    runner = Runner(
        {"t": CallableTarget(blocked)}, {"t": FAST.model_copy(update={"concurrency": 1})}
    )
    callers = [asyncio.create_task(runner.run(probe("t"))) for _ in range(3)]
    await until("one call in flight", lambda: runner.snapshot()[0].in_flight == 1)
    await runner.aclose()
    results = await asyncio.gather(*callers, return_exceptions=True)
    assert all(isinstance(r, asyncio.CancelledError) for r in results)
