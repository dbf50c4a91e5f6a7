"""The whole pipeline in one process on the in-process bus: the embedded default (`make demo`).

The same workers as the scaled services — generator, runner, judge, analytics — wired to a
:class:`~groundwatch.adapters.bus.memory.MemoryBus` instead of Kafka, and the same runner code
asking the targets (an HTTP target can be served in-process through ``httpx.ASGITransport``), so
what the demo shows is what production does."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry

from groundwatch.adapters.bus.memory import MemoryBus
from groundwatch.adapters.db import make_engine
from groundwatch.adapters.db.evidence import StoreEvidence
from groundwatch.adapters.sources.connect import SourcePolicy
from groundwatch.app.bootstrap import analytics, dead_letter_keeper, generator, runner_stage
from groundwatch.contracts import DEFAULT_PREFIX, Topics
from groundwatch.core.data_quality import spec_of
from groundwatch.core.model import SemanticGroup
from groundwatch.core.tagging import Tagger, Window
from groundwatch.runtime.consume import ConsumeLoop, consume
from groundwatch.runtime.judging import register_judge_telemetry
from groundwatch.runtime.loop_telemetry import LoopTelemetry
from groundwatch.runtime.traffic_limit import TargetRateLimit
from groundwatch.runtime.traffic_telemetry import register_traffic_telemetry
from groundwatch.stages.analytics.data_quality import DataQualityChecker
from groundwatch.stages.analytics.stage import AnalyticsStage
from groundwatch.stages.judge.tiered import TieredJudge
from groundwatch.stages.runner.lanes import Runner, SelfCheckSampling
from groundwatch.stages.traffic.stage import TrafficStage

#: Messages of one topic of the in-process bus not yet committed by its readers, at most: a few
#: of the stages' batches (the analytics stage takes 2,000 at a time), whatever the cycle's size.
MAX_IN_FLIGHT = 10_000


@dataclass
class EmbeddedResult:
    tagger: Tagger
    published: int
    elapsed_s: float
    #: messages of this call no stage could process (stored: ``groundwatch dead-letters``)
    dead_letters: int
    run_ids: list[str] = field(default_factory=list)
    #: the cycle numbers (in the series) of ``run_ids``, in the same order
    cycles: list[int] = field(default_factory=list)
    #: "service: error" of this call's newest dead letters (a few), for a one-line warning
    dead_letter_errors: list[str] = field(default_factory=list)

    @property
    def probes_per_s(self) -> float:
        return self.published / self.elapsed_s if self.elapsed_s else 0.0


class EmbeddedPipeline:
    """Generator → runner → judge → analytics on one event loop."""

    def __init__(
        self,
        groups: Sequence[SemanticGroup],
        runner: Runner,
        *,
        judge: TieredJudge | None = None,
        database_url: str | None = None,
        window: Window | None = None,
        partitions: int = 6,
        targets: Sequence[str] | None = None,
        sample: int = 0,
        rate: float = 0.0,
        on_stop: Sequence[Callable[[], Awaitable[None]]] = (),
        registry: CollectorRegistry | None = None,
        series: str | None = None,
        data_quality: DataQualityChecker | None = None,
        open_domain_baseline: str | None = None,
        source_url: str | None = None,
        source_policy: SourcePolicy | None = None,
        keep_consumed: bool = False,
        publish_views: bool = True,
        traffic: bool = False,
        traffic_sample: float = 1.0,
        traffic_pii: bool = False,
        traffic_limit: TargetRateLimit | None = None,
    ) -> None:
        """``window``: each group's status over its last N cycles (default 1, the live view);
        ``series`` names the monitoring series (default: the dataset's id). With a database
        that already holds cycles of the series, the next cycle continues it: state, cycle
        numbers and transitions carry on across invocations. ``data_quality`` labels gap groups
        from the corpus as they appear (with the groups' own specs); ``open_domain_baseline``
        names the LLM-only target whose correctly answered groups the telemetry and the report
        leave out (GRAMMAR §5.2); ``source_url``: the source database each cycle re-reads the
        answers from (a changed fact becomes a new answer version; the old one is stale), opened by
        ``source_policy`` (statement timeout, privileged logins).

        The in-process topics drop what every stage has committed (a continuous run would
        otherwise hold every message of every cycle); ``keep_consumed`` keeps them all (tests
        and benchmarks that read a topic back). Dead letters go to the store's
        ``dead_letters`` table, and a probe that ends as one counts as done: a cycle waits for
        its probes to be tallied or dead-lettered, never for a message that will not come.
        ``publish_views=False``: analytics publishes no read model per batch (a batch run with
        no reader while it runs: :class:`~groundwatch.stages.analytics.stage.AnalyticsStage`).
        ``traffic``: users' questions on the ``traffic`` topic are grounded in ``groups`` and
        judged as their ``traffic`` cohort (:mod:`groundwatch.stages.traffic.stage`), the
        ``traffic_sample`` share of them drawn by trace id, personal data masked when
        ``traffic_pii``, each target's records taken within ``traffic_limit``."""
        self._on_stop = list(on_stop)
        # at most this many messages of a topic in flight: a cycle of any size streams through
        # (the generator waits for the runner as a producer waits on a full buffer)
        self.bus = MemoryBus(
            partitions=partitions,
            trim_consumed=not keep_consumed,
            max_backlog=None if keep_consumed else MAX_IN_FLIGHT,
        )
        self.topics = Topics(DEFAULT_PREFIX)
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        if database_url is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="groundwatch-demo-")
            database_url = f"sqlite:///{Path(self._tmp.name) / 'groundwatch.db'}"
        self.database_url = database_url
        self.engine = make_engine(database_url)
        self.evidence = StoreEvidence(self.engine)
        self.judge = judge or TieredJudge()
        self.runner = runner
        self.registry = registry or CollectorRegistry()
        # the generator service's wiring: the SQL truth stored beside the judgements (what
        # `groundwatch groups`/`show` and /groups read), cycles numbered on from the store and
        # recorded as they start, probes and answer changes counted under the same names
        self.generator, self.cycles = generator(
            self.bus,
            self.topics,
            groups,
            list(targets or runner.targets),
            self.engine,
            self.registry,
            series=series,
            sample=sample,
            rate=rate,
            source_url=source_url,
            source_policy=source_policy,
        )
        window = window if window is not None else Window(runs=1)
        self.analytics: AnalyticsStage = analytics(
            self.engine,
            self.registry,
            window,
            quality=data_quality,
            specs={g.group_id: spec_of(g) for g in groups} if data_quality is not None else None,
            open_domain_baseline=open_domain_baseline,
            publish_views=publish_views,
        )
        self.runner_loop = consume(runner_stage(runner), self.bus, self.topics)
        register_judge_telemetry(self.registry, self.judge)
        self.judge_loop = consume(self.judge.stage(), self.bus, self.topics)
        self.analytics_loop = consume(self.analytics, self.bus, self.topics)
        self.keeper = dead_letter_keeper(self.engine)
        self.keeper_loop = consume(self.keeper, self.bus, self.topics)
        #: the loops whose messages can end as dead letters (the keeper's never do)
        self.stage_loops: list[ConsumeLoop[Any]] = [
            self.runner_loop,
            self.judge_loop,
            self.analytics_loop,
        ]
        self.traffic: TrafficStage | None = None
        self.traffic_limit = traffic_limit
        if traffic:
            dataset = groups[0].dataset_id if groups else "default"
            stage = self.traffic = TrafficStage(
                groups, dataset_id=dataset, sample=traffic_sample, pii=traffic_pii
            )
            self.stage_loops.append(consume(stage, self.bus, self.topics))
            register_traffic_telemetry(self.registry, lambda: stage.counts)
        self.loops: list[ConsumeLoop[Any]] = [*self.stage_loops, self.keeper_loop]
        # the services' loop series (messages by outcome, lag, stalls), each under its stage's
        # service name: the same alert rules read a `run` as a deployment
        loop_telemetry = LoopTelemetry(self.registry, "embedded")
        for loop in self.loops:
            loop_telemetry.attach(loop, loop.service)
        self._tasks: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        await self.bus.ensure_topics(self.topics.all())
        self._tasks = [asyncio.create_task(loop.run()) for loop in self.loops]
        await asyncio.gather(*(loop.ready.wait() for loop in self.loops))

    async def stop(self, grace_s: float = 5.0) -> None:
        """Stop the loops (each finishes its batch, for at most ``grace_s``: a batch waiting on a
        hanging endpoint is cut, and nothing of it was committed) and close everything."""
        for loop in self.loops:
            loop.stop()
        if self._tasks:
            _, late = await asyncio.wait(self._tasks, timeout=grace_s)
            for task in late:
                task.cancel()
            for outcome in await asyncio.gather(*self._tasks, return_exceptions=True):
                if isinstance(outcome, Exception):
                    raise outcome
        await self.runner.aclose()
        await self.judge.aclose()
        for close in self._on_stop:
            await close()
        self.engine.dispose()
        if self._tmp is not None:
            self._tmp.cleanup()

    def loops_running(self) -> bool:
        """Every consume loop has joined its group and none has ended."""
        return all(loop.ready.is_set() for loop in self.loops) and not any(
            t.done() for t in self._tasks
        )

    def tallied(self) -> int:
        return self.analytics_loop.stats.consumed

    def dead_lettered(self) -> int:
        """Messages the stages dead-lettered so far (every one is a probe that ends there)."""
        return sum(loop.stats.dead_lettered for loop in self.stage_loops)

    def settled(self) -> int:
        """Probes that reached their end: tallied by analytics, or dead-lettered before it (a
        runner or judge failure on that message alone; analytics counts its own in
        ``tallied``). Every probe ends as exactly one of the two. Grounded traffic goes through
        the judge and analytics too, and is no probe of a cycle: it is taken off (counted as it
        is grounded, before it settles, so a cycle never ends early on its account)."""
        users = self.traffic.counts.matched if self.traffic is not None else 0
        return (
            self.tallied()
            + self.runner_loop.stats.dead_lettered
            + self.judge_loop.stats.dead_lettered
            - users
        )

    async def wait_tallied(
        self,
        count: int,
        timeout_s: float = 600.0,
        on_progress: Callable[[int, int], None] | None = None,
    ) -> None:
        """Until ``count`` probes are settled (:meth:`settled`) and every dead letter is
        stored; ``on_progress(settled, count)`` is called as they come (a progress bar)."""
        deadline = time.monotonic() + timeout_s
        while self.settled() < count or self.keeper.seen < self.dead_lettered():
            if on_progress is not None:
                on_progress(min(self.settled(), count), count)
            for t in self._tasks:
                if t.done():
                    t.result()  # a dead loop raises here instead of hanging the wait
            if time.monotonic() > deadline:
                stored = (
                    ""
                    if self.keeper.seen >= self.dead_lettered()
                    else f" ({self.dead_lettered() - self.keeper.seen} dead letters not stored:"
                    " is the database reachable?)"
                )
                raise TimeoutError(
                    f"only {self.settled()} of {count} probes tallied in {timeout_s}s{stored}"
                )
            await asyncio.sleep(0.01)

    async def run(
        self,
        runs: int = 1,
        on_progress: Callable[[int, int], None] | None = None,
        timeout_s: float = 600.0,
    ) -> EmbeddedResult:
        """Publish ``runs`` probing cycles and wait until every probe is tallied
        (``on_progress(done, total)`` over this call's probes)."""
        started = time.perf_counter()
        before = self.generator.state.published
        base = self.settled()
        letters_before = self.dead_lettered()
        summaries = []
        try:
            for _ in range(runs):
                summaries.append(await self.generator.run_cycle())
            total = self.generator.state.published - before
            progress = (
                None
                if on_progress is None
                else (lambda done, _count: on_progress(done - base, total))
            )
            await self.wait_tallied(self.generator.state.published, timeout_s, progress)
        except (asyncio.CancelledError, TimeoutError):
            # stopped by a signal (or given up on): the cycles begun say so, not "running" for ever
            await self.abort_open_cycles()
            raise
        run_ids = [s.run_id for s in summaries]
        if on_progress is not None:
            on_progress(total, total)
        for summary in summaries:
            await self.cycles.finished(summary)
        elapsed = time.perf_counter() - started
        letters = self.dead_lettered() - letters_before
        return EmbeddedResult(
            tagger=self.analytics.tagger,
            published=self.generator.state.published - before,
            elapsed_s=elapsed,
            dead_letters=letters,
            run_ids=run_ids,
            cycles=[s.cycle for s in summaries],
            dead_letter_errors=list(self.keeper.recent)[-min(letters, 3) :] if letters else [],
        )

    async def abort_open_cycles(self) -> list[str]:
        """Mark the cycles recorded as running and not finished ``aborted`` (``groundwatch
        runs`` shows it); returns their run ids."""
        return await self.cycles.abort_open()


async def run_embedded(
    groups: Sequence[SemanticGroup], runner: Runner, *, runs: int = 1, **kwargs: Any
) -> EmbeddedResult:
    """One-shot helper: start, run, stop."""
    pipeline = EmbeddedPipeline(groups, runner, **kwargs)
    await pipeline.start()
    try:
        return await pipeline.run(runs)
    finally:
        await pipeline.stop()


def reference_runner(
    app_or_target: Any,
    *,
    name: str = "reference",
    concurrency: int = 64,
    selfcheck: SelfCheckSampling | None = None,
) -> tuple[Runner, Callable[[], Awaitable[None]]]:
    """A runner whose one target is the reference RAG in this process, and its closer.

    Given a :class:`~groundwatch.adapters.targets.Target` (the demo's ``ReferenceTarget``, the
    pipeline called directly) it is asked as it is; given an ASGI app, the request goes through
    :class:`HttpJsonTarget` over ``httpx.ASGITransport``, exactly as against a remote endpoint.
    Either way the runner's limits apply (SelfCheck samples included)."""
    from groundwatch.adapters.targets import HttpJsonTarget, Target, TargetLimits

    limits = {name: TargetLimits(concurrency=concurrency, timeout_s=30.0)}
    if isinstance(app_or_target, Target):
        runner = Runner({name: app_or_target}, limits, selfcheck=selfcheck)

        async def nothing() -> None:
            return None

        return runner, nothing
    import httpx

    client = httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app_or_target), base_url="http://reference-rag"
    )
    target = HttpJsonTarget(client, "http://reference-rag/query")
    return Runner({name: target}, limits, selfcheck=selfcheck), client.aclose


def monitoring_app(
    pipeline: EmbeddedPipeline, read_token: str | None = None, api_token: str | None = None
) -> Any:
    """``/metrics``, ``/groups``, ``/report`` over an embedded pipeline (continuous mode); the
    evidence endpoints need ``read_token`` when one is given. A pipeline grounding traffic also
    takes ``POST /traffic`` and OTLP's ``POST /v1/traces`` (bearer ``api_token``: closed
    without one) and serves ``GET /traffic/unmatched``."""
    from fastapi import FastAPI, Response
    from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

    from groundwatch.runtime.api import add_routes, verdict_publisher
    from groundwatch.runtime.service import add_input_guards

    app = FastAPI(title="groundwatch (embedded)")
    add_input_guards(app)  # 413 for a big body, 422 for a NUL in the path or query

    @app.get("/healthz", tags=["ops"])
    async def healthz() -> dict[str, str]:
        return {"status": "ok", "service": "embedded"}

    @app.get("/readyz", tags=["ops"])
    async def readyz() -> Response:
        """As a service's: the store answers, every loop runs and none is stalled (holding
        records it cannot commit longer than GW_STALL_AFTER_S); 503 with the checks if not."""
        from fastapi.responses import JSONResponse

        from groundwatch.adapters.db.engine import ping

        checks = {
            "database": await asyncio.to_thread(ping, pipeline.engine),
            "loops": pipeline.loops_running(),
            "progress": not any(loop.stalled() for loop in pipeline.loops),
        }
        ready = all(checks.values())
        return JSONResponse(
            {"status": "ready" if ready else "not ready", "checks": checks},
            status_code=200 if ready else 503,
        )

    @app.get("/metrics", tags=["ops"])
    async def metrics() -> Response:
        return Response(generate_latest(pipeline.registry), media_type=CONTENT_TYPE_LATEST)

    from groundwatch.app.view import run_pages_for

    add_routes(
        app,
        lambda: pipeline.analytics,
        read_token=read_token,
        api_token=api_token,
        run_pages=run_pages_for("the pipeline's store"),
        # a person's verdict on the in-process bus: the analytics loop counts it live
        publish_verdict=verdict_publisher(pipeline.bus, pipeline.topics),
    )
    stage = pipeline.traffic
    if stage is not None:
        from groundwatch.runtime.otlp import add_otlp_routes
        from groundwatch.runtime.traffic_api import (
            add_traffic_routes,
            bus_publisher,
            rate_limited,
        )

        publish = rate_limited(bus_publisher(pipeline.bus, pipeline.topics), pipeline.traffic_limit)
        add_traffic_routes(
            app, publish, lambda: stage.counts, token=api_token, read_token=read_token
        )
        add_otlp_routes(app, publish, token=api_token)
    return app


async def run_continuously(
    pipeline: EmbeddedPipeline,
    *,
    interval_s: float,
    host: str = "127.0.0.1",
    port: int = 8004,
    cycles: int | None = None,
    on_cycle: Callable[[EmbeddedResult], None] | None = None,
    read_token: str | None = None,
    api_token: str | None = None,
) -> None:
    """Probe every ``interval_s`` and serve the monitoring endpoints until SIGTERM or SIGINT
    (or ``cycles`` cycles are done); each cycle asks every sampled group in all its forms.

    A signal ends the run as a whole: the cycle in flight is cut and recorded ``aborted``, the
    server and the loops stop, and this returns. (uvicorn's own handlers used to stop only the
    server: a ``run`` started with ``&`` from a script kept probing with no ``/metrics``, and
    SIGTERM — what systemd, Docker and Kubernetes send — killed it with its cycle left
    "running".) SIGINT that the process was started ignoring stays ignored, and a second
    signal of the same kind acts as if none were caught (a stuck stop can still be broken)."""
    import uvicorn

    class Server(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:  # the run owns the signals
            yield

    stop = asyncio.Event()
    undo = _stop_on_signals(stop)
    server = Server(
        uvicorn.Config(
            monitoring_app(pipeline, read_token, api_token),
            host=host,
            port=port,
            log_level="warning",
        )
    )
    serving = asyncio.create_task(server.serve())
    stopping = asyncio.create_task(stop.wait())
    try:
        done = 0
        while cycles is None or done < cycles:
            started = time.monotonic()
            cycle = asyncio.create_task(pipeline.run(1))
            await asyncio.wait({cycle, stopping, serving}, return_when=asyncio.FIRST_COMPLETED)
            if not cycle.done():
                cycle.cancel()  # the cycle marks itself aborted
                with contextlib.suppress(asyncio.CancelledError):
                    await cycle
                break
            result = cycle.result()
            done += 1
            if on_cycle is not None:
                on_cycle(result)
            if cycles is not None and done >= cycles:
                break
            pause = max(0.0, interval_s - (time.monotonic() - started))
            await asyncio.wait(
                {stopping, serving}, timeout=pause, return_when=asyncio.FIRST_COMPLETED
            )
            if stop.is_set() or serving.done():
                break
    finally:
        undo()
        stopping.cancel()
        server.should_exit = True
        await serving


def _stop_on_signals(stop: asyncio.Event) -> Callable[[], None]:
    """SIGTERM and SIGINT set ``stop`` once, then act as if not caught; returns the undo."""
    loop = asyncio.get_running_loop()
    caught: list[signal.Signals] = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        if signal.getsignal(sig) is signal.SIG_IGN:
            continue  # e.g. SIGINT of a job a script started with &: not ours to take back

        def once(sig: signal.Signals = sig) -> None:
            stop.set()
            loop.remove_signal_handler(sig)

        try:
            loop.add_signal_handler(sig, once)
        except (NotImplementedError, RuntimeError, ValueError):  # not the main thread
            continue
        caught.append(sig)

    def undo() -> None:
        for sig in caught:
            loop.remove_signal_handler(sig)

    return undo
