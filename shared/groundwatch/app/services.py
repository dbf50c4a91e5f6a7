"""The services' bootstraps: what each of the five services is made of, from its settings.

``services/<name>/app.py`` hands one of these to the service shell
(:func:`groundwatch.runtime.service.build_app`) and adds its own routes; the shell starts the bus,
runs the loops and tears everything down. The generator is wired as the embedded pipeline wires
it (:func:`groundwatch.app.bootstrap.generator`), the judge and the runner are built as ``run``
builds them (:mod:`groundwatch.app.bootstrap`), so a deployment and a ``groundwatch run`` differ
only in the bus.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import sys
from typing import TYPE_CHECKING, Any, TypeVar

from groundwatch.app.bootstrap import (
    analytics,
    data_quality_checker,
    dead_letter_keeper,
    file_runner,
    generator,
    llm_client,
    load_judge,
    runner_stage,
    start_tracing,
)
from groundwatch.app.datasets import service_dataset
from groundwatch.runtime.consume import consume
from groundwatch.runtime.faults import kill_before_commit
from groundwatch.runtime.service import ServiceParts, wiring
from groundwatch.runtime.tracing_telemetry import TracingTelemetry

if TYPE_CHECKING:
    from fastapi import FastAPI

    from groundwatch.app.settings import (
        AnalyticsSettings,
        GeneratorSettings,
        JudgeServiceSettings,
        RunnerSettings,
    )
    from groundwatch.reference_rag.settings import ReferenceRagSettings
    from groundwatch.runtime.settings import CommonSettings
    from groundwatch.stages.generator.stage import GeneratorStage
    from groundwatch.stages.runner.lanes import Runner

log = logging.getLogger(__name__)

S = TypeVar("S", bound="CommonSettings")


#: Run requests of ``POST /runs`` whose state ``GET /runs/{run_id}`` still answers.
KEPT_REQUESTS = 200


@dataclasses.dataclass
class RunRequest:
    """One ``POST /runs``: its id (the run id of its first cycle), the cycles asked for, where
    it is (``accepted``, ``running``, ``done``, ``failed``) and each finished cycle's summary."""

    run_id: str
    runs: int
    status: str = "accepted"
    cycles: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    error: str | None = None

    def view(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out["poll"] = f"/runs/{self.run_id}"
        return out


class Cycles:
    """What the generator service's routes may do with its generator: list the cycles, start
    some (in the background: the request is answered at once, its progress is polled), start
    and stop continuous probing."""

    def __init__(self, stage: GeneratorStage, interval_s: float, stop_wait_s: float = 2.0) -> None:
        self._stage = stage
        self._interval_s = interval_s
        self._stop_wait_s = stop_wait_s
        self._requests: dict[str, RunRequest] = {}
        self._task: asyncio.Task[None] | None = None

    def listing(self, last: int = 100) -> dict[str, Any]:
        """Runs so far and whether continuous probing is on."""
        s = self._stage
        return {
            "published": s.state.published,
            "continuous": s.state.running,
            "groups": len(s.groups),
            "runs": [vars(r) for r in s.state.runs[-last:]],
        }

    def in_flight(self) -> str | None:
        """The cycle in flight (another request's, a start-up run, the continuous loop's), as
        words, or None when none is."""
        task = self._task
        if not self._stage.busy and (task is None or task.done()):
            return None
        now = self._stage.in_flight
        return f"cycle {now.cycle} (run {now.run_id})" if now else "a cycle"

    def submit(self, cycles: int) -> RunRequest:
        """Start ``cycles`` probing cycles, one after the other, in the background; the request
        (its first cycle's run id) to poll with :meth:`request`. The caller checks
        :meth:`in_flight` first: this starts whatever is asked."""
        from groundwatch.stages.generator.planner import new_run_id

        req = RunRequest(new_run_id(), cycles)
        self._requests[req.run_id] = req
        while len(self._requests) > KEPT_REQUESTS:
            del self._requests[next(iter(self._requests))]
        self._task = asyncio.create_task(self._work(req), name=f"runs {req.run_id}")
        return req

    def request(self, run_id: str) -> RunRequest | None:
        return self._requests.get(run_id)

    async def _work(self, req: RunRequest) -> None:
        req.status = "running"
        try:
            for i in range(req.runs):
                summary = await self._stage.run_cycle(req.run_id if i == 0 else None)
                req.cycles.append(vars(summary))
        except Exception as exc:  # said in the request's state: no caller waits on this task
            log.exception("run request %s failed", req.run_id)
            req.status, req.error = "failed", f"{type(exc).__name__}: {exc}"[:500]
            return
        req.status = "done"

    def start_continuous(self) -> bool:
        return self._stage.start_continuous(self._interval_s)

    async def stop_continuous(self) -> dict[str, bool]:
        """Stop continuous probing, answered within the stop deadline (``GW_STOP_WAIT_S``)."""
        stopped = await self._stage.stop_continuous(self._stop_wait_s)
        return {"stopped": stopped, "cycle_in_flight": self._stage.continuous_in_flight}

    async def close(self) -> None:
        """On shutdown: a run request still publishing is cancelled (its cycle unfinished)."""
        task = self._task
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


async def generator_service(settings: GeneratorSettings) -> ServiceParts:
    """Publishes probe cycles of the configured dataset (``extra["cycles"]``: :class:`Cycles`),
    and grounds users' traffic in the same groups: the ``traffic`` topic in, responses of the
    ``traffic`` cohort out, judged and tallied as probes' are (``extra["traffic"]``: the
    stage, whose counts ``GET /traffic/unmatched`` reads)."""
    from groundwatch.adapters.db import make_engine

    w = wiring(settings, "generator")
    groups, source_url = await asyncio.to_thread(service_dataset, settings)
    engine = make_engine(settings.database_url)
    # the SQL truth stored beside the judgements (analytics' /groups and `groundwatch show`
    # read it), cycles numbered on from the store's
    worker, _ = await asyncio.to_thread(
        generator,
        w.bus,
        w.topics,
        groups,
        settings.targets,
        engine,
        w.registry,
        series=settings.series or None,
        sample=settings.sample,
        rate=settings.rate,
        seed=settings.seed,
        source_url=source_url,
        source_policy=settings.source_policy(),
    )

    async def startup_runs() -> None:
        for _ in range(settings.runs):
            await worker.run_cycle()
        if settings.continuous:
            worker.start_continuous(settings.interval_s)

    cycles = Cycles(worker, settings.interval_s, settings.stop_wait_s)
    traffic = await asyncio.to_thread(_traffic_stage, groups, w.registry)
    traffic_loop = consume(
        traffic,
        w.bus,
        w.topics,
        client_id=w.client_id,
        policy=settings.retry_policy(),
        before_commit=kill_before_commit(settings.test_kill_before_commit),
    )
    return ServiceParts(
        bus=w.bus,
        topics=w.topics,
        registry=w.registry,
        loops=[traffic_loop],
        background=[startup_runs],
        engine=engine,
        on_stop=[cycles.close, worker.stop_continuous],
        extra={"cycles": cycles, "traffic": traffic},
        watched=[worker],  # its cycle loop: a heartbeat for /healthz, a failure ends it
    )


def settings_or_exit(cls: type[S]) -> S:
    """A service's settings at start-up, and every other ``GW_*`` variable set checked too
    (:func:`groundwatch.app.settings.check_environment`): on a bad value one line naming it on
    stderr and exit 2, before anything is served."""
    from groundwatch.app.settings import check_environment
    from groundwatch.errors import ConfigError
    from groundwatch.runtime.service import settings_or_exit as own_or_exit

    settings = own_or_exit(cls)
    try:
        check_environment()
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    return settings


def _traffic_stage(groups: Any, registry: Any) -> Any:
    """Users' traffic (topic ``traffic``) grounded in the groups the generator probes, as a
    ``run`` grounds it (``GW_TRAFFIC_SAMPLE``, ``GW_PII``), its counts on ``/metrics``."""
    from groundwatch.app.settings import TrafficSettings
    from groundwatch.runtime.settings import load_settings
    from groundwatch.runtime.traffic_telemetry import register_traffic_telemetry
    from groundwatch.stages.traffic.stage import TrafficStage

    settings = load_settings(TrafficSettings)
    dataset = groups[0].dataset_id if groups else "default"
    stage = TrafficStage(
        groups, dataset_id=dataset, sample=settings.traffic_sample, pii=settings.pii
    )
    register_traffic_telemetry(registry, lambda: stage.counts)
    return stage


async def runner_service(settings: RunnerSettings) -> ServiceParts:
    """Asks every probe to its target within that target's limits (``extra["targets"]``: a
    callable listing each target's queue, requests in flight and breaker state)."""
    from groundwatch.runtime.runner_telemetry import RunnerTelemetry

    w = wiring(settings, "rag-runner")
    stop_tracing = start_tracing("groundwatch-rag-runner")
    TracingTelemetry(w.registry)
    telemetry = RunnerTelemetry(w.registry)
    runner, close = await file_runner(
        settings.runner_targets_file,
        reference_url=settings.runner_reference_url,
        reference_concurrency=settings.runner_reference_concurrency,
        on_response=telemetry.on_response,
        on_stream=telemetry.on_stream,
    )
    loop = consume(
        runner_stage(runner, batch=settings.runner_batch),
        w.bus,
        w.topics,
        group=settings.runner_group,
        client_id=w.client_id,
        policy=settings.retry_policy(),
        before_commit=kill_before_commit(settings.test_kill_before_commit),
    )

    def targets(r: Runner = runner) -> list[dict[str, Any]]:
        return [dataclasses.asdict(s) for s in r.snapshot()]

    return ServiceParts(
        bus=w.bus,
        topics=w.topics,
        registry=w.registry,
        loops=[loop],
        on_stop=[close, stop_tracing],
        extra={"targets": targets},
    )


async def judge_service(settings: JudgeServiceSettings) -> ServiceParts:
    """Judges every response: rules, the LLM tier when configured, answer metrics, the
    self-audit and the reference-free evaluators."""
    from groundwatch.runtime.judge_telemetry import JudgeTelemetry

    w = wiring(settings, "judge")
    judge = load_judge(settings.database_url)
    log.info("%s", judge.describe)
    telemetry = JudgeTelemetry(w.registry, judge)
    loop = consume(
        judge.stage(wrap=telemetry.instrument, wrap_scenario=telemetry.instrument),
        w.bus,
        w.topics,
        group=settings.judge_group,
        client_id=w.client_id,
        policy=settings.retry_policy(),
        before_commit=kill_before_commit(settings.test_kill_before_commit),
    )
    return ServiceParts(
        bus=w.bus, topics=w.topics, registry=w.registry, loops=[loop], on_stop=[judge.aclose]
    )


async def analytics_service(settings: AnalyticsSettings) -> ServiceParts:
    """Live group tagging, the Prometheus tallies, the group API and the report; and the
    dead-letter keeper, which copies the dead-letter topic into the store (``groundwatch
    dead-letters`` lists it; the topic's retention would drop them). ``extra["worker"]`` is the
    analytics stage the routes read, ``extra["traffic"]`` what publishes users' traffic,
    ``extra["verdicts"]`` what publishes people's verdicts given on ``/ui``."""
    from groundwatch.adapters.db import create_schema, make_engine
    from groundwatch.core.cycles import SeriesClock
    from groundwatch.core.tagging import Window
    from groundwatch.runtime.api import verdict_publisher
    from groundwatch.runtime.evidence_settings import evidence_rule

    w = wiring(settings, "analytics")
    stop_tracing = start_tracing("groundwatch-analytics")
    TracingTelemetry(w.registry)
    engine = make_engine(settings.database_url)
    await asyncio.to_thread(create_schema, engine)
    window = Window(runs=settings.window_runs or None, evidence=evidence_rule())
    quality = (
        await asyncio.to_thread(
            data_quality_checker,
            settings.corpus,
            "GW_CORPUS",
            mrc=settings.data_quality_mrc,
            feature=None,
        )
        if settings.corpus is not None
        else None
    )
    worker = analytics(
        engine,
        w.registry,
        window,
        quality=quality,
        open_domain_baseline=settings.open_domain_baseline,
        clock=SeriesClock(max_ahead=settings.max_cycle_jump),
    )
    loop = consume(
        worker,
        w.bus,
        w.topics,
        group=settings.analytics_group,
        client_id=w.client_id,
        policy=settings.retry_policy(),
        before_commit=kill_before_commit(settings.test_kill_before_commit),
    )
    keeper = consume(
        dead_letter_keeper(engine),
        w.bus,
        w.topics,
        client_id=w.client_id,
        policy=settings.retry_policy(),
    )
    await asyncio.to_thread(worker.reload)
    pruner = await asyncio.to_thread(_pruner, engine, window, w.registry)
    return ServiceParts(
        bus=w.bus,
        topics=w.topics,
        registry=w.registry,
        loops=[loop, keeper],
        engine=engine,
        background=[pruner.loop],
        on_stop=[pruner.stop, stop_tracing],
        extra={
            "worker": worker,
            "pruner": pruner,
            "traffic": _traffic_publisher(w),
            "verdicts": verdict_publisher(w.bus, w.topics),
        },
    )


def _traffic_publisher(w: Any) -> Any:
    """``POST /traffic`` and ``/v1/traces`` onto the ``traffic`` topic (the generator grounds
    it), each target within ``GW_TRAFFIC_RATE``."""
    from groundwatch.app.settings import TrafficSettings
    from groundwatch.runtime.settings import load_settings
    from groundwatch.runtime.traffic_api import bus_publisher, rate_limited

    limit = load_settings(TrafficSettings).limit()
    return rate_limited(bus_publisher(w.bus, w.topics), limit)


def _pruner(engine: Any, window: Any, registry: Any) -> Any:
    """Retention beside the consume loop (:mod:`groundwatch.app.retention`): its settings
    read, the size warning logged, its numbers on ``/metrics``."""
    from groundwatch.app.retention import Pruner, retention_for, warn_if_large
    from groundwatch.app.settings import RetentionSettings
    from groundwatch.runtime.settings import load_settings

    settings = load_settings(RetentionSettings)
    warn_if_large(engine, settings)
    pruner = Pruner(retention_for(engine, settings, window), settings)
    pruner.register(registry)
    return pruner


def reference_rag_app(settings: ReferenceRagSettings) -> FastAPI:
    """The example RAG under test as an HTTP app; its reader is the LLM ``GW_LLM_*`` configures
    when ``GW_RAG_READER=llm`` (a ConfigError when the settings cannot make it)."""
    from groundwatch.reference_rag.app import create_app

    llm = llm_client() if settings.rag_reader == "llm" else None
    return create_app(settings, llm=llm)


def create_topics(
    settings: CommonSettings,
    *,
    bootstrap: str | None = None,
    prefix: str | None = None,
    partitions: int | None = None,
    replication_factor: int | None = None,
    min_insync_replicas: int | None = None,
    wait_s: float = 120.0,
) -> list[str]:
    """Create every topic of the contracts on Kafka if missing, with the cluster's replication
    (an existing one is left as it is); each value not given comes from ``settings``. The
    topics' names."""
    from groundwatch.adapters.bus.kafka import KafkaBus
    from groundwatch.contracts import Topics

    topics = Topics(settings.topic_prefix if prefix is None else prefix)
    bus = KafkaBus(
        bootstrap=bootstrap or settings.kafka_bootstrap,
        partitions=partitions or settings.partitions,
        replication_factor=replication_factor or settings.kafka_replication_factor,
        min_insync_replicas=min_insync_replicas or settings.kafka_min_insync_replicas,
    )

    async def create() -> None:
        await bus.ensure_topics(topics.all(), wait_s=wait_s)

    # the adapter's "retrying" notes are for a service's log; a command says one line
    logging.getLogger("groundwatch.adapters.bus.kafka").setLevel(logging.ERROR)
    asyncio.run(create())
    return topics.all()
