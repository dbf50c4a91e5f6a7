"""The RAG runner service: asks every probe to its target, within that target's limits."""

from __future__ import annotations

import dataclasses
from typing import Any

import httpx
from fastapi import FastAPI

from groundwatch.runner import Runner
from groundwatch.service import (
    ServiceParts,
    build_app,
    serve,
    settings_or_exit,
    wiring,
)
from groundwatch.targets import Target, TargetLimits, make_http_client
from groundwatch.targets.config import HttpJsonConfig, build_targets, load_targets
from services.rag_runner.metrics import RunnerMetrics
from services.rag_runner.settings import RunnerSettings
from services.rag_runner.worker import RunnerWorker


def make_runner(
    settings: RunnerSettings, http_client: httpx.AsyncClient, metrics: RunnerMetrics | None = None
) -> Runner:
    """Targets from the targets file plus the reference RAG, each behind its own limits."""
    configs = load_targets(settings.runner_targets_file) if settings.runner_targets_file else []
    if settings.runner_reference_url and all(c.name != "reference" for c in configs):
        configs.append(
            HttpJsonConfig(
                type="http_json",
                name="reference",
                url=settings.runner_reference_url,
                limits=TargetLimits(
                    concurrency=settings.runner_reference_concurrency, timeout_s=30.0
                ),
            )
        )
    targets: dict[str, Target]
    targets, limits = build_targets(configs, http_client=http_client)
    return Runner(targets, limits, on_response=metrics.on_response if metrics else None)


def create_app(settings: RunnerSettings) -> FastAPI:
    async def bootstrap() -> ServiceParts:
        w = wiring(settings, "rag-runner")
        registry, bus, topics, client_id = w.registry, w.bus, w.topics, w.client_id
        # The shared client: plain httpx pools collapse at high concurrency (httpcore#1035).
        http = make_http_client(max_connections=512)
        runner = make_runner(settings, http, RunnerMetrics(registry))
        worker = RunnerWorker(
            bus,
            topics,
            runner,
            group=settings.runner_group,
            client_id=client_id,
            batch=settings.runner_batch,
        )

        async def close() -> None:
            await runner.aclose()
            await http.aclose()

        return ServiceParts(
            bus=bus,
            topics=topics,
            registry=registry,
            loops=[worker.loop],
            on_stop=[close],
            extra={"runner": runner},
        )

    def routes(app: FastAPI) -> None:
        @app.get("/targets", tags=["targets"])
        async def targets() -> dict[str, Any]:
            """Each target's queue, requests in flight and circuit-breaker state."""
            runner: Runner = app.state.parts.extra["runner"]
            return {"targets": [dataclasses.asdict(s) for s in runner.snapshot()]}

    return build_app("rag-runner", bootstrap, routes=routes)


def main() -> None:
    """Console entry ``groundwatch-rag-runner``."""
    settings = settings_or_exit(RunnerSettings)
    serve(create_app(settings), settings)
