"""The judge service: a FastAPI shell around :class:`JudgeStage`."""

from __future__ import annotations

from fastapi import FastAPI

from groundwatch.adapters.llm.client import LlmSettings
from groundwatch.runtime.consume import consume
from groundwatch.runtime.service import (
    ServiceParts,
    build_app,
    serve,
    settings_or_exit,
    wiring,
)
from groundwatch.runtime.settings import load_settings
from groundwatch.stages.judge.stage import JudgeStage
from groundwatch.stages.judge.tiered import JudgeSettings, build_judge
from services.judge.metrics import JudgeMetrics
from services.judge.settings import JudgeServiceSettings


def create_app(settings: JudgeServiceSettings) -> FastAPI:
    async def bootstrap() -> ServiceParts:
        w = wiring(settings, "judge")
        registry, bus, topics, client_id = w.registry, w.bus, w.topics, w.client_id
        judge_settings = load_settings(JudgeSettings)
        judge = build_judge(
            judge_settings,
            llm_settings=load_settings(LlmSettings) if judge_settings.uses_llm else None,
            database_url=settings.database_url,
        )
        metrics = JudgeMetrics(registry, judge)
        loop = consume(
            JudgeStage(metrics.instrument(judge.judge)),
            bus,
            topics,
            group=settings.judge_group,
            client_id=client_id,
        )
        return ServiceParts(
            bus=bus, topics=topics, registry=registry, loops=[loop], on_stop=[judge.aclose]
        )

    return build_app("judge", bootstrap)


def main() -> None:
    """Console entry ``groundwatch-judge``."""
    settings = settings_or_exit(JudgeServiceSettings)
    serve(create_app(settings), settings)
