"""The judge service: a FastAPI shell around :class:`JudgeWorker`."""

from __future__ import annotations

from fastapi import FastAPI
from prometheus_client import CollectorRegistry

from groundwatch.bus import make_bus
from groundwatch.contracts import Topics
from groundwatch.service import ServiceParts, build_app, instance_name, serve, settings_or_exit
from services.judge.metrics import JudgeMetrics
from services.judge.settings import JudgeServiceSettings
from services.judge.worker import JudgeWorker


def create_app(settings: JudgeServiceSettings) -> FastAPI:
    async def bootstrap() -> ServiceParts:
        from groundwatch.judging import build_judge

        registry = CollectorRegistry()
        client_id = instance_name(settings, "judge")
        bus = make_bus(
            settings.bus,
            bootstrap=settings.kafka_bootstrap,
            partitions=settings.partitions,
            client_id=client_id,
        )
        topics = Topics(settings.topic_prefix)
        judge = build_judge(database_url=settings.database_url)
        metrics = JudgeMetrics(registry, judge)
        worker = JudgeWorker(
            bus,
            topics,
            metrics.instrument(judge.judge),
            group=settings.judge_group,
            client_id=client_id,
        )
        return ServiceParts(
            bus=bus, topics=topics, registry=registry, loops=[worker.loop], on_stop=[judge.aclose]
        )

    return build_app("judge", bootstrap)


def main() -> None:
    """Console entry ``groundwatch-judge``."""
    settings = settings_or_exit(JudgeServiceSettings)
    serve(create_app(settings), settings)
