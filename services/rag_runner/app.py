"""The RAG runner service: asks every probe to its target, within that target's limits."""

from __future__ import annotations

import dataclasses
from typing import Any

from fastapi import FastAPI

from groundwatch.adapters.targets import make_http_client
from groundwatch.runtime.consume import consume
from groundwatch.runtime.faults import kill_before_commit
from groundwatch.runtime.judging import load_selfcheck_sampling
from groundwatch.runtime.service import (
    ServiceParts,
    build_app,
    serve,
    settings_or_exit,
    wiring,
)
from groundwatch.stages.runner.factory import make_runner
from groundwatch.stages.runner.lanes import Runner
from groundwatch.stages.runner.stage import RunnerStage
from services.rag_runner.settings import RunnerSettings
from services.rag_runner.telemetry import RunnerTelemetry


def create_app(settings: RunnerSettings) -> FastAPI:
    async def bootstrap() -> ServiceParts:
        w = wiring(settings, "rag-runner")
        registry, bus, topics, client_id = w.registry, w.bus, w.topics, w.client_id
        # The shared client (H1Client, asyncio + httptools: the least CPU per request of the
        # clients measured, bench/bench_runner.py).
        http = make_http_client(max_connections=512)
        runner = make_runner(
            http,
            targets_file=settings.runner_targets_file,
            reference_url=settings.runner_reference_url,
            reference_concurrency=settings.runner_reference_concurrency,
            on_response=RunnerTelemetry(registry).on_response,
            selfcheck=load_selfcheck_sampling(),
        )
        loop = consume(
            RunnerStage(runner, batch=settings.runner_batch),
            bus,
            topics,
            group=settings.runner_group,
            client_id=client_id,
            policy=settings.retry_policy(),
            before_commit=kill_before_commit(settings.test_kill_before_commit),
        )

        async def close() -> None:
            await runner.aclose()
            await http.aclose()

        return ServiceParts(
            bus=bus,
            topics=topics,
            registry=registry,
            loops=[loop],
            on_stop=[close],
            extra={"runner": runner},
        )

    def routes(app: FastAPI) -> None:
        @app.get("/targets", tags=["targets"])
        async def targets() -> dict[str, Any]:
            """Each target's queue, requests in flight and circuit-breaker state."""
            runner: Runner = app.state.parts.extra["runner"]
            return {"targets": [dataclasses.asdict(s) for s in runner.snapshot()]}

    return build_app(
        "rag-runner", bootstrap, routes=routes, liveness_timeout_s=settings.liveness_timeout_s
    )


def main() -> None:
    """Console entry ``groundwatch-rag-runner``."""
    settings = settings_or_exit(RunnerSettings)
    serve(create_app(settings), settings)
