"""The runner core: ask every probe to its target without hurting the target or stalling others.

Each target gets its own *lane*: a bounded queue drained by ``concurrency`` workers, a token
bucket, per-attempt timeouts, jittered retries for transient failures only (tenacity) and a
circuit breaker that opens on a failure rate over semantic groups, not on a flaky endpoint's
chance streak or on one fact failing in all its forms
(:mod:`groundwatch.stages.runner.breaker`). Lanes share nothing, so a slow or dead target fills
only its own queue; when that queue is full the caller waits (back-pressure) instead of the
process growing without bound.

Whatever the target does, :meth:`Runner.run` returns a :class:`RagResponse`: an answer with
``status=ok``, or ``status=error`` with the failure kind. An outage is never reported as a wrong
answer, and never as an exception to the caller.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass

from pydantic import ValidationError
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception,
    stop_after_attempt,
)

from groundwatch.adapters.targets.base import (
    ErrorKind,
    Target,
    TargetError,
    TargetReply,
    sampler_of,
)
from groundwatch.adapters.targets.guards import BreakerState
from groundwatch.adapters.targets.limits import TargetLimits
from groundwatch.adapters.throttle import Clock, TokenBucket
from groundwatch.adapters.tracing import active as active_tracing
from groundwatch.contracts import Probe, RagResponse, TargetStatus
from groundwatch.core.sampling import in_share
from groundwatch.stages.runner.breaker import BreakerSettings, LaneBreaker
from groundwatch.stages.runner.deadlines import Deadlines

log = logging.getLogger(__name__)

#: Called once per finished probe with the response and the number of attempts it took.
ResponseHook = Callable[[RagResponse, int], None]


@dataclass(frozen=True)
class SelfCheckSampling:
    """Ask the target ``samples`` more times for ``share`` of the probes it answered, and ship
    the extra answers with the response, for the judge's SelfCheck evaluator (GRAMMAR §3).

    The sampling lives here because only the runner holds the target's client and its limits:
    every extra request goes through the same token bucket, breaker and timeout as a probe, one
    after another in the probe's own worker (never more in flight than ``concurrency``), and
    the first failure ends the sampling of that probe — the samples are a nice-to-have, the
    target's health is not. Probes are picked by a hash of their id with the same share the
    judge uses, so the judge's evaluators see the same probes.
    """

    share: float
    samples: int = 4

    def picks(self, probe: Probe) -> bool:
        return in_share(str(probe.probe_id), self.share)


@dataclass(frozen=True)
class LaneSnapshot:
    """A target lane's load and health, for metrics and ``/readyz``."""

    target: str
    queued: int
    in_flight: int
    breaker: BreakerState
    concurrency: int


@dataclass
class _Timing:
    attempts: int = 0
    latency_s: float = 0.0


@dataclass
class _Job:
    probe: Probe
    future: asyncio.Future[RagResponse]


def _transient(exc: BaseException) -> bool:
    return isinstance(exc, TargetError) and exc.transient


class _Lane:
    """One target's queue, workers and guards."""

    def __init__(
        self,
        name: str,
        target: Target,
        limits: TargetLimits,
        clock: Clock,
        hook: ResponseHook,
        selfcheck: SelfCheckSampling | None = None,
    ) -> None:
        self.name = name
        self.selfcheck = selfcheck
        self.samples_asked = 0
        #: SelfCheck probes of a target that cannot be sampled (shipped without samples)
        self.unsampleable = 0
        self.target = target
        self._sampler = sampler_of(target)
        self.limits = limits
        self._clock = clock
        self._hook = hook
        self.queue: asyncio.Queue[_Job] = asyncio.Queue(maxsize=limits.queue_size)
        self.bucket = (
            TokenBucket(limits.rate_per_s, limits.bucket_depth, clock)
            if limits.rate_per_s is not None
            else None
        )
        self.breaker = LaneBreaker(BreakerSettings.of(limits), clock)
        #: Every attempt's timeout, on one timer for the lane (not one per attempt).
        self.deadlines = Deadlines(limits.timeout_s)
        self.breaker.on_change = self._breaker_changed
        self._rng = random.Random()
        self.in_flight = 0
        #: The error that last opened the circuit (``circuit_open`` errors carry it).
        self.opened_by: str | None = None
        #: series → the newest cycle a probe of it came from: the breaker starts each half-open
        self._cycles: dict[str, int] = {}
        self._workers: list[asyncio.Task[None]] = []
        tracing = active_tracing()
        #: the span factory when probes are traced (None: no span, nothing on the hot path)
        self._spans = tracing.spans if tracing is not None else None
        self._operation = str(getattr(target, "otel_operation", "invoke_agent"))

    def _breaker_changed(self, state: BreakerState) -> None:
        log.warning("target %s: circuit %s", self.name, state.value)

    def start(self) -> None:
        if not self._workers:
            self._workers = [
                asyncio.create_task(self._work(), name=f"runner:{self.name}:{i}")
                for i in range(self.limits.concurrency)
            ]

    async def stop(self) -> None:
        for task in self._workers:
            task.cancel()
        await asyncio.gather(*self._workers, return_exceptions=True)
        self._workers = []
        self.deadlines.close()
        while not self.queue.empty():
            self.queue.get_nowait().future.cancel()

    async def submit(self, probe: Probe) -> RagResponse:
        self.start()
        future: asyncio.Future[RagResponse] = asyncio.get_running_loop().create_future()
        await self.queue.put(_Job(probe, future))  # blocks while the lane is full: back-pressure
        return await future

    def offer(self, job: _Job) -> bool:
        """Queue ``job`` if the lane has room now; False when it is full."""
        self.start()
        try:
            self.queue.put_nowait(job)
        except asyncio.QueueFull:
            return False
        return True

    async def put_all(self, jobs: Sequence[_Job]) -> None:
        """Queue ``jobs`` in order, each waiting for room (back-pressure)."""
        for job in jobs:
            await self.queue.put(job)

    async def _work(self) -> None:
        while True:
            job = await self.queue.get()
            try:
                if job.future.done():  # the caller gave up while the probe waited
                    continue
                self.in_flight += 1
                try:
                    response = await self._serve(job.probe)
                finally:
                    self.in_flight -= 1
                if not job.future.done():
                    job.future.set_result(response)
            except asyncio.CancelledError:
                job.future.cancel()
                raise
            finally:
                self.queue.task_done()

    def _delay(self, retry: int, exc: BaseException | None) -> float:
        """Full-jitter exponential backoff before retry number ``retry`` (1-based), never sooner
        than the target's own Retry-After, never longer than ``backoff_max_s``."""
        ceiling = min(self.limits.backoff_max_s, self.limits.backoff_initial_s * 2 ** (retry - 1))
        delay = self._rng.uniform(0.0, ceiling)
        if isinstance(exc, TargetError) and exc.retry_after:
            delay = max(delay, exc.retry_after)
        return min(delay, self.limits.backoff_max_s)

    def _wait(self, state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome is not None else None
        return self._delay(state.attempt_number + 1, exc)

    def _note_cycle(self, probe: Probe) -> None:
        """A probe of a newer cycle of its series: the breaker starts the cycle half-open, so an
        endpoint that recovered between cycles is asked at once (a few trials; the cycle's other
        probes wait for their outcome) instead of waiting out ``breaker_reset_s``, and judges a
        group asked again by this cycle's calls."""
        newest = self._cycles.get(probe.series)
        if newest is None or probe.cycle > newest:
            self._cycles[probe.series] = probe.cycle
            self.breaker.new_cycle()

    async def _serve(self, probe: Probe) -> RagResponse:
        self._note_cycle(probe)
        spans = self._spans
        if spans is None:
            return await self._call(probe)
        # the span is current while the target is asked: an HTTP target sends its traceparent
        start_ns = time.time_ns()
        entered = spans.enter(probe)
        if entered is None:  # the sampler leaves it out
            return await self._call(probe)
        try:
            response = await self._call(probe)
        except BaseException:
            spans.abandon(entered)
            raise
        spans.leave(entered, probe, response, start_ns, self._operation)
        return response

    async def _call(self, probe: Probe) -> RagResponse:
        timing = _Timing()
        try:
            reply = await self._ask(probe.query, timing, probe.group_id)
        except TargetError as exc:
            log.debug("target %s probe %s: %s", self.name, probe.probe_id, exc)
            response = _error(probe, exc.kind, timing.latency_s, str(exc))
        else:
            samples: list[str] = []
            if self.selfcheck is not None and self.selfcheck.picks(probe):
                samples = await self._samples(probe, self.selfcheck.samples)
            response = _ok(probe, reply, timing.latency_s, samples)
        self._hook(response, timing.attempts)
        return response

    async def _samples(self, probe: Probe, n: int) -> list[str]:
        """Up to ``n`` samples of the target's answer to the probe's query (``sampler_of``: its
        randomness on, as SelfCheck needs), each one attempt under the lane's limits; the first
        failure stops (a struggling target is not pressed for extras). A target that cannot
        be sampled is not asked at all: its repeats would always agree."""
        if self._sampler is None:
            self.unsampleable += 1
            if self.unsampleable == 1:
                log.warning(
                    "SelfCheck: target %s cannot be sampled (an http_json target needs"
                    " `sampling` in the targets file, a callable a `temperature` parameter,"
                    " an openai_chat target a sample_temperature above 0); its SelfCheck"
                    " probes are reported as not sampled",
                    self.name,
                )
            return []
        out: list[str] = []
        for _ in range(n):
            self.samples_asked += 1
            try:
                reply = await self._attempt(probe.query, _Timing(), probe.group_id, sample=True)
            except TargetError:
                break
            out.append(reply.bounded().answer)
        return out

    async def _ask(self, query: str, timing: _Timing, key: str | None = None) -> TargetReply:
        """The first attempt directly (the common, healthy case costs no retry machinery);
        transient failures then go to tenacity for up to ``retries`` more attempts."""
        timing.attempts = 1
        try:
            return await self._attempt(query, timing, key)
        except TargetError as exc:
            if not exc.transient or self.limits.retries == 0:
                raise
            first = exc
        await asyncio.sleep(self._delay(1, first))

        async def again() -> TargetReply:
            timing.attempts += 1
            return await self._attempt(query, timing, key)

        retrying = AsyncRetrying(
            stop=stop_after_attempt(self.limits.retries),
            wait=self._wait,
            retry=retry_if_exception(_transient),
            reraise=True,
        )
        reply: TargetReply = await retrying(again)
        return reply

    async def _attempt(
        self,
        query: str,
        timing: _Timing,
        key: str | None = None,
        *,
        sample: bool = False,
    ) -> TargetReply:
        """One call under the rate limit, the breaker and the timeout; ``key`` (the probe's
        semantic group) is what the breaker counts the outcome against, once per group however
        many forms it is asked in (a retry takes its failed attempt's place); ``sample`` asks
        for a SelfCheck sample instead of the answer.

        Latency is the target's own time on this attempt: waiting for a rate token or for a
        half-open trial is the runner's doing and must not make the target look slow."""
        if self.bucket is not None:
            await self.bucket.acquire()
        breaker = self.breaker  # closed (the usual case): a permit without awaiting anything
        closed = breaker.state is BreakerState.CLOSED
        permit = breaker.allow() if closed else await breaker.acquire()
        if permit is None:
            raise TargetError(
                ErrorKind.CIRCUIT_OPEN,
                f"circuit of {self.name} is open (opened by {self.opened_by or 'failures'})",
            )
        error: TargetError | None = None
        started = self._clock()
        deadline = self.deadlines.start()
        try:
            if sample and self._sampler is not None:
                reply = await self._sampler(query)
            else:
                reply = await self.target.ask(query)
        except TargetError as exc:
            error = exc
        except asyncio.CancelledError:
            if not deadline.timed_out():
                self.breaker.release(permit)
                raise
            error = TargetError(ErrorKind.TIMEOUT, f"no reply within {self.limits.timeout_s}s")
        except Exception as exc:  # an adapter bug must become an error response, not a crash
            error = TargetError(ErrorKind.EXCEPTION, f"{type(exc).__name__}: {exc}")
        finally:
            self.deadlines.finish(deadline)
        timing.latency_s = self._clock() - started
        ok = error is None or not error.transient
        self.breaker.record(permit, ok, key, retry=timing.attempts > 1)
        if error is not None and self.breaker.state is BreakerState.OPEN:
            self.opened_by = str(error)  # the cause every circuit_open error then names
        if error is not None:
            raise error
        return reply


def _ok(
    probe: Probe, reply: TargetReply, latency: float, samples: Sequence[str] = ()
) -> RagResponse:
    reply = reply.bounded()
    try:
        return RagResponse.answered(
            probe,
            reply.answer,
            reply.retrieved_ids,
            reply.contexts,
            list(samples),
            latency,
            reply.truncated,
        )
    except ValidationError as exc:
        log.warning("probe %s: reply does not fit the contract: %s", probe.probe_id, exc)
        first = exc.errors()[0] if exc.errors() else {"loc": (), "msg": str(exc)}
        where = ".".join(str(p) for p in first["loc"])
        return _error(
            probe, ErrorKind.BAD_PAYLOAD, latency, f"reply does not fit: {where}: {first['msg']}"
        )


def _error(probe: Probe, kind: ErrorKind, latency: float, detail: str = "") -> RagResponse:
    return RagResponse.for_probe(
        probe,
        status=TargetStatus.ERROR,
        error_kind=kind.value,
        error_detail=detail[:2000] or None,
        latency_s=latency,
    )


def _ignore(response: RagResponse, attempts: int) -> None:
    return None


class Runner:
    """Asks probes to named targets, each behind its own limits (see module docstring).

    Use it as an async context manager, or call :meth:`aclose`, so the lane workers stop.
    """

    def __init__(
        self,
        targets: Mapping[str, Target],
        limits: Mapping[str, TargetLimits] | None = None,
        *,
        default_limits: TargetLimits | None = None,
        clock: Clock = time.monotonic,
        on_response: ResponseHook | None = None,
        selfcheck: SelfCheckSampling | None = None,
    ) -> None:
        """``selfcheck``: ask every target for SelfCheck samples on a share of its probes."""
        limits = dict(limits or {})
        unknown = set(limits) - set(targets)
        if unknown:
            raise ValueError(f"limits given for unknown targets: {sorted(unknown)}")
        default = default_limits or TargetLimits()
        hook = on_response or _ignore
        self._lanes = {
            name: _Lane(name, target, limits.get(name, default), clock, hook, selfcheck)
            for name, target in targets.items()
        }

    @property
    def targets(self) -> list[str]:
        return list(self._lanes)

    def breaker(self, target: str) -> LaneBreaker:
        return self._lanes[target].breaker

    def snapshot(self) -> list[LaneSnapshot]:
        return [
            LaneSnapshot(
                lane.name,
                lane.queue.qsize(),
                lane.in_flight,
                lane.breaker.state,
                lane.limits.concurrency,
            )
            for lane in self._lanes.values()
        ]

    async def run(self, probe: Probe) -> RagResponse:
        """Ask one probe; always a response (``status=error`` with a kind when it failed)."""
        lane = self._lanes.get(probe.target)
        if lane is None:
            return _error(probe, ErrorKind.UNKNOWN_TARGET, 0.0)
        return await lane.submit(probe)

    async def run_many(self, probes: Sequence[Probe]) -> list[RagResponse]:
        """Ask a batch at once, in order; each target's limits still apply to its share.

        Without a task per probe (the runner's largest per-probe cost when the target is fast):
        each probe becomes a job with a future, queued at once while its lane has room. The
        rest of a full lane's share is fed by one task per lane, so a slow target's full queue
        never holds back another target's probes.
        """
        loop = asyncio.get_running_loop()
        futures: list[asyncio.Future[RagResponse]] = []
        overflow: dict[str, tuple[_Lane, list[_Job]]] = {}
        for probe in probes:
            future: asyncio.Future[RagResponse] = loop.create_future()
            futures.append(future)
            lane = self._lanes.get(probe.target)
            if lane is None:
                future.set_result(_error(probe, ErrorKind.UNKNOWN_TARGET, 0.0))
                continue
            job = _Job(probe, future)
            waiting = overflow.get(lane.name)
            if waiting is not None:
                waiting[1].append(job)  # behind the lane's first waiting job, in order
            elif not lane.offer(job):
                overflow[lane.name] = (lane, [job])
        feeders = [asyncio.create_task(lane.put_all(jobs)) for lane, jobs in overflow.values()]
        try:
            return list(await asyncio.gather(*futures))
        finally:
            for feeder in feeders:
                feeder.cancel()

    async def iter_responses(self, probes: Sequence[Probe]) -> AsyncIterator[RagResponse]:
        """Like :meth:`run_many`, but yields each response as soon as it is ready."""
        tasks = [asyncio.ensure_future(self.run(p)) for p in probes]
        try:
            for next_done in asyncio.as_completed(tasks):
                yield await next_done
        finally:
            for t in tasks:
                t.cancel()

    async def aclose(self) -> None:
        await asyncio.gather(*(lane.stop() for lane in self._lanes.values()))

    async def __aenter__(self) -> Runner:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
