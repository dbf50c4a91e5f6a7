"""The judge service: a FastAPI shell around the judge stage (rules, the LLM tier when
configured, answer metrics, the self-audit and the reference-free evaluators)."""

from __future__ import annotations

import logging

from fastapi import FastAPI

from groundwatch.runtime.consume import consume
from groundwatch.runtime.faults import kill_before_commit
from groundwatch.runtime.judging import load_judge
from groundwatch.runtime.service import (
    ServiceParts,
    build_app,
    serve,
    settings_or_exit,
    wiring,
)
from services.judge.settings import JudgeServiceSettings
from services.judge.telemetry import JudgeTelemetry

log = logging.getLogger(__name__)


def create_app(settings: JudgeServiceSettings) -> FastAPI:
    async def bootstrap() -> ServiceParts:
        w = wiring(settings, "judge")
        registry, bus, topics, client_id = w.registry, w.bus, w.topics, w.client_id
        judge = load_judge(settings.database_url)
        log.info("%s", judge.describe)
        telemetry = JudgeTelemetry(registry, judge)
        loop = consume(
            judge.stage(wrap=telemetry.instrument, wrap_scenario=telemetry.instrument),
            bus,
            topics,
            group=settings.judge_group,
            client_id=client_id,
            policy=settings.retry_policy(),
            before_commit=kill_before_commit(settings.test_kill_before_commit),
        )
        return ServiceParts(
            bus=bus, topics=topics, registry=registry, loops=[loop], on_stop=[judge.aclose]
        )

    return build_app("judge", bootstrap, liveness_timeout_s=settings.liveness_timeout_s)


def main() -> None:
    """Console entry ``groundwatch-judge``."""
    settings = settings_or_exit(JudgeServiceSettings)
    serve(create_app(settings), settings)
