"""The hot-path rewrites of issue 9 keep their behaviour: batched runner, bounded judge drains,
contract encoding, aggregated analytics metrics, the memory bus's per-batch routing, GC tuning."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Iterator

import orjson
import pytest
from prometheus_client import CollectorRegistry

from groundwatch.adapters.bus.base import Outgoing
from groundwatch.adapters.bus.memory import MemoryBus
from groundwatch.adapters.targets import CallableTarget, TargetLimits
from groundwatch.contracts import (
    DeadLetter,
    Judgement,
    Probe,
    RagResponse,
    TargetStatus,
    Topics,
    _Contract,
    _ProbeKeyed,
)
from groundwatch.core.judging import Decision
from groundwatch.core.model import Expected, Verdict
from groundwatch.core.tagging import Tagger
from groundwatch.runtime.analytics_telemetry import AnalyticsTelemetry
from groundwatch.runtime.consume import GC_YOUNG_THRESHOLD, tune_gc
from groundwatch.stages.analytics.observe import observation_from_judgement
from groundwatch.stages.judge.stage import JudgeStage
from groundwatch.stages.runner.lanes import LaneSnapshot, Runner
from tests.e2e.procs import metric_samples
from tests.unit._runner_helpers import probe
from tests.waiting import until

pytestmark = pytest.mark.unit


def _judgement(p: Probe, verdict: Verdict = Verdict.CORRECT) -> Judgement:
    r = RagResponse.for_probe(p, status=TargetStatus.OK, answer="a", retrieved_ids=["d1"])
    return Judgement.for_response(r, verdict=verdict, tier="exact", scores={"f1": 1.0})


# ------------------------------------------------------------------ runner.run_many


async def test_run_many_keeps_order_across_targets_and_unknown_ones() -> None:
    def echo(q: str) -> str:
        return f"echo {q}"

    targets = {"a": CallableTarget(echo, in_thread=False), "b": CallableTarget(echo)}
    async with Runner(targets) as runner:
        probes = [probe(["a", "b", "nope"][i % 3], f"q{i}") for i in range(30)]
        responses = await runner.run_many(probes)
    assert [r.probe_id for r in responses] == [p.probe_id for p in probes]
    for p, r in zip(probes, responses, strict=True):
        if p.target == "nope":
            assert r.status is TargetStatus.ERROR and r.error_kind == "unknown_target"
        else:
            assert r.status is TargetStatus.OK and r.answer == f"echo {p.query}"


async def test_run_many_full_lane_waits_without_holding_back_another_target() -> None:
    gate = asyncio.Event()
    slow_calls: list[str] = []

    async def slow(q: str) -> str:
        slow_calls.append(q)
        await gate.wait()
        return "slow"

    fast_answered = 0

    def fast(q: str) -> str:
        nonlocal fast_answered
        fast_answered += 1
        return "fast"

    limits = {
        "slow": TargetLimits(concurrency=1, queue_size=2, timeout_s=10),
        "fast": TargetLimits(concurrency=4, queue_size=2, timeout_s=10),
    }
    runner = Runner({"slow": CallableTarget(slow), "fast": CallableTarget(fast)}, limits)
    try:
        # the slow lane is full after 1 in flight + 2 queued; the fast probes come after them
        probes = [probe("slow", f"s{i}") for i in range(8)] + [
            probe("fast", f"f{i}") for i in range(8)
        ]
        batch = asyncio.create_task(runner.run_many(probes))

        def settled() -> dict[str, LaneSnapshot] | None:
            """The slow lane full and the fast one drained: as far as the batch gets."""
            lanes = {s.target: s for s in runner.snapshot()}
            slow, fast = lanes["slow"], lanes["fast"]
            full = (slow.queued, slow.in_flight) == (2, 1)
            drained = (fast.queued, fast.in_flight) == (0, 0) and fast_answered == 8
            return lanes if full and drained else None

        lanes = await until("the slow lane full and the fast probes answered", settled)
        assert lanes["slow"].queued == 2 and lanes["slow"].in_flight == 1  # back-pressure
        assert lanes["fast"].queued == 0 and lanes["fast"].in_flight == 0  # all 8 answered
        assert slow_calls == ["s0"]
        gate.set()
        responses = await asyncio.wait_for(batch, 30)  # a hang guard: generous
        assert [r.answer for r in responses] == ["slow"] * 8 + ["fast"] * 8
        assert slow_calls == [f"s{i}" for i in range(8)]  # a lane keeps its share in order
    finally:
        await runner.aclose()


def lane_state(runner: Runner) -> tuple[int, int]:
    (snap,) = runner.snapshot()
    return snap.in_flight, snap.queued


async def test_run_many_cancelled_leaves_nothing_running() -> None:
    gate = asyncio.Event()
    calls = 0

    async def blocked(q: str) -> str:
        nonlocal calls
        calls += 1
        await gate.wait()
        return "late"

    limits = {"t": TargetLimits(concurrency=1, queue_size=1, timeout_s=10)}
    async with Runner({"t": CallableTarget(blocked)}, limits) as runner:
        batch = asyncio.create_task(runner.run_many([probe("t", f"q{i}") for i in range(6)]))
        await until("the lane full", lambda: lane_state(runner) == (1, 1))
        batch.cancel()
        with pytest.raises(asyncio.CancelledError):
            await batch
        gate.set()
        await until("the lane empty", lambda: runner.snapshot()[0].in_flight == 0)
        for _ in range(10):  # a feeder left behind would enqueue now
            await asyncio.sleep(0)
        (snap,) = runner.snapshot()
        assert snap.queued == 0 and snap.in_flight == 0
        assert calls <= 2  # the one in flight and at most the one queued; no feeder left behind


# ------------------------------------------------------------------ judge worker drains


async def test_judge_stage_keeps_order_and_bounds_concurrency() -> None:
    active = peak = 0

    async def slow_judge(query: str, expected: Expected, answer: str | None) -> Decision:
        nonlocal active, peak
        active += 1
        peak = max(peak, active)
        await asyncio.sleep(0.01 if int(query[1:]) % 2 else 0.001)
        active -= 1
        return Decision(Verdict.CORRECT, "test", query, {})

    worker = JudgeStage(slow_judge, concurrency=4)
    responses = [
        RagResponse.for_probe(probe("x", f"q{i}"), status=TargetStatus.OK, answer="a")
        for i in range(20)
    ]
    out = await worker.handle(responses)
    assert [j.reason for j in out] == [f"q{i}" for i in range(20)]
    assert peak == 4


@pytest.mark.looptime  # the loop's clock is virtual: 50 ms are 50 ms of judging whatever the load
async def test_judge_stage_failure_stops_the_other_drains() -> None:
    judged: list[str] = []

    async def flaky(query: str, expected: Expected, answer: str | None) -> Decision:
        await asyncio.sleep(0.001)
        if query == "q3":
            raise RuntimeError("judge bug")
        judged.append(query)
        return Decision(Verdict.CORRECT, "test", "", {})

    worker = JudgeStage(flaky, concurrency=2)
    responses = [
        RagResponse.for_probe(probe("x", f"q{i}"), status=TargetStatus.OK, answer="a")
        for i in range(50)
    ]
    with pytest.raises(RuntimeError, match="judge bug"):
        await worker.handle(responses)
    await asyncio.sleep(0.05)
    assert len(judged) < 10  # the batch is abandoned, not judged to the end in the background


# ------------------------------------------------------------------ contracts


def _contracts() -> Iterator[_Contract]:
    p = probe("t", "q")
    yield p
    r = RagResponse.for_probe(p, status=TargetStatus.OK, answer="a", contexts=["c"], latency_s=0.1)
    yield r
    yield Judgement.for_response(r, verdict=Verdict.INCORRECT, tier="typed", scores={"f1": 0.25})
    yield DeadLetter(error="bad", source_topic="p", partition=1, offset=2, raw_b64="", service="s")


@pytest.mark.parametrize("message", list(_contracts()), ids=lambda m: type(m).__name__)
def test_to_bytes_is_the_json_of_the_model_dump(message: _Contract) -> None:
    assert message.to_bytes() == orjson.dumps(message.model_dump(mode="json"))
    topics = Topics("x.")
    topic = {
        "probes": topics.probes,
        "responses": topics.responses,
        "judgements": topics.judgements,
        "dead-letter": topics.dead_letter,
    }[message.topic]  # type: ignore[attr-defined]
    assert topic.decode(message.to_bytes()) == message


def test_carried_copies_exactly_the_probe_fields() -> None:
    p = probe("t", "q")
    r = RagResponse.for_probe(p, status=TargetStatus.OK, answer="a")
    assert p.carried() == {name: getattr(p, name) for name in _ProbeKeyed.model_fields}
    assert r.carried() == p.carried()


# ------------------------------------------------------------------ analytics metrics


def test_metrics_observe_counts_each_judgement_once() -> None:
    registry = CollectorRegistry()
    tagger = Tagger()
    metrics = AnalyticsTelemetry(registry, lambda: tagger)
    verdicts = [Verdict.CORRECT] * 5 + [Verdict.INCORRECT] * 3 + [Verdict.ERROR]
    applied = []
    for i, v in enumerate(verdicts):
        p = probe("a" if i % 2 else "b", f"q{i}")
        applied.append(observation_from_judgement(_judgement(p, v)))
    metrics.observe(applied, [], tallied_at=applied[-1].at + 1.0)
    from prometheus_client import generate_latest

    text = generate_latest(registry).decode()
    counts = metric_samples(text, "groundwatch_judgements_total")
    expected: dict[tuple[tuple[str, str], ...], float] = {}
    for o in applied:
        key = (("target", o.target), ("verdict", o.verdict.value))
        expected[key] = expected.get(key, 0) + 1
    assert counts == expected
    hist = metric_samples(text, "groundwatch_probe_to_tally_seconds_count")
    assert sum(hist.values()) == len(applied)


# ------------------------------------------------------------------ memory bus, GC


async def test_memory_bus_batch_over_several_topics_keeps_per_partition_order() -> None:
    bus = MemoryBus(partitions=3)
    await bus.ensure_topics(["a", "b"])
    msgs = [Outgoing("ab"[i % 2], f"k{i % 4}".encode(), str(i).encode()) for i in range(40)]
    await bus.publish_many(msgs)
    for topic in "ab":
        records = bus.records(topic)
        assert sorted(int(r.value) for r in records) == [
            i for i in range(40) if "ab"[i % 2] == topic
        ]
        for part in range(3):
            offsets = [r.offset for r in records if r.partition == part]
            assert offsets == list(range(len(offsets)))


def test_tune_gc_raises_the_young_threshold_once_and_keeps_a_higher_one() -> None:
    before = gc.get_threshold()
    try:
        gc.set_threshold(700, 10, 10)
        tune_gc()
        assert gc.get_threshold() == (GC_YOUNG_THRESHOLD, 10, 10)
        tune_gc()
        assert gc.get_threshold() == (GC_YOUNG_THRESHOLD, 10, 10)
        gc.set_threshold(GC_YOUNG_THRESHOLD * 2, 5, 5)
        tune_gc()
        assert gc.get_threshold() == (GC_YOUNG_THRESHOLD * 2, 5, 5)
    finally:
        gc.set_threshold(*before)
