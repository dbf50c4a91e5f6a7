"""The judge service: a FastAPI shell around :class:`JudgeWorker`."""

from __future__ import annotations

from fastapi import FastAPI

from groundwatch.runtime.service import (
    ServiceParts,
    build_app,
    serve,
    settings_or_exit,
    wiring,
)
from groundwatch.stages.judge.stage import JudgeWorker
from services.judge.metrics import JudgeMetrics
from services.judge.settings import JudgeServiceSettings


def create_app(settings: JudgeServiceSettings) -> FastAPI:
    async def bootstrap() -> ServiceParts:
        from groundwatch.stages.judge.tiered import build_judge

        w = wiring(settings, "judge")
        registry, bus, topics, client_id = w.registry, w.bus, w.topics, w.client_id
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
