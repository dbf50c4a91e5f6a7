"""The analytics service: live group tagging, Prometheus tallies, the group API and the report;
and the dead-letter keeper, which copies the dead-letter topic into the store (``groundwatch
dead-letters`` lists it; the topic's retention would drop them)."""

from __future__ import annotations

import asyncio

from fastapi import FastAPI

from groundwatch.adapters.db import create_schema, make_engine
from groundwatch.adapters.db.analytics_store import AnalyticsStore
from groundwatch.adapters.db.dead_letters import DeadLetterStore
from groundwatch.core.tagging import Window
from groundwatch.runtime.analytics_telemetry import AnalyticsTelemetry
from groundwatch.runtime.api import add_routes
from groundwatch.runtime.consume import consume
from groundwatch.runtime.evidence_settings import evidence_rule
from groundwatch.runtime.faults import kill_before_commit
from groundwatch.runtime.service import (
    ServiceParts,
    build_app,
    serve,
    settings_or_exit,
    wiring,
)
from groundwatch.stages.analytics.data_quality import DataQualityChecker
from groundwatch.stages.analytics.stage import AnalyticsStage
from groundwatch.stages.dead_letters.stage import DeadLetterKeeper
from services.analytics.settings import AnalyticsSettings


def data_quality(settings: AnalyticsSettings) -> DataQualityChecker | None:
    """The gap groups' data-quality check when a corpus is configured (``GW_CORPUS``), with the
    LLM's reading-comprehension step when ``GW_DATA_QUALITY_MRC`` is on."""
    if settings.corpus is None:
        return None
    from groundwatch.adapters.corpus_files import load_corpus

    documents = load_corpus(settings.corpus, "GW_CORPUS")
    if not settings.data_quality_mrc:
        return DataQualityChecker(documents)
    from groundwatch.adapters.llm.client import LlmClient, LlmSettings
    from groundwatch.reference_rag.llm_reader import LlmReader
    from groundwatch.runtime.settings import load_settings

    reader = LlmReader(LlmClient(load_settings(LlmSettings)))
    return DataQualityChecker(documents, reader=reader.read)


def create_app(settings: AnalyticsSettings) -> FastAPI:
    async def bootstrap() -> ServiceParts:
        w = wiring(settings, "analytics")
        registry, bus, topics, client_id = w.registry, w.bus, w.topics, w.client_id
        engine = make_engine(settings.database_url)
        await asyncio.to_thread(create_schema, engine)
        store = AnalyticsStore(engine)
        window = Window(runs=settings.window_runs or None, evidence=evidence_rule())
        holder: dict[str, AnalyticsStage] = {}
        quality = await asyncio.to_thread(data_quality, settings)
        telemetry = AnalyticsTelemetry(
            registry,
            lambda: holder["worker"].tagger,
            quality.results if quality is not None else None,
        )
        worker = AnalyticsStage(
            store,
            window=window,
            on_applied=telemetry.observe,
            quality=quality,
            open_domain_baseline=settings.open_domain_baseline,
        )
        loop = consume(
            worker,
            bus,
            topics,
            group=settings.analytics_group,
            client_id=client_id,
            policy=settings.retry_policy(),
            before_commit=kill_before_commit(settings.test_kill_before_commit),
        )
        keeper = consume(
            DeadLetterKeeper(DeadLetterStore(engine)),
            bus,
            topics,
            client_id=client_id,
            policy=settings.retry_policy(),
        )
        holder["worker"] = worker
        await asyncio.to_thread(worker.reload)
        return ServiceParts(
            bus=bus,
            topics=topics,
            registry=registry,
            loops=[loop, keeper],
            engine=engine,
            extra={"worker": worker},
        )

    def routes(app: FastAPI) -> None:
        add_routes(app, lambda: app.state.parts.extra["worker"], read_token=settings.api_read_token)

    return build_app(
        "analytics", bootstrap, routes=routes, liveness_timeout_s=settings.liveness_timeout_s
    )


def main() -> None:
    """Console entry ``groundwatch-analytics``."""
    settings = settings_or_exit(AnalyticsSettings)
    serve(create_app(settings), settings)
