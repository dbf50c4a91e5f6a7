"""The RAG runner service: asks every probe to its target, within that target's limits."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI

from groundwatch.app.services import runner_service, settings_or_exit
from groundwatch.runtime.service import build_app, serve
from services.rag_runner.settings import RunnerSettings


def create_app(settings: RunnerSettings) -> FastAPI:
    def routes(app: FastAPI) -> None:
        @app.get("/targets", tags=["targets"])
        async def targets() -> dict[str, Any]:
            """Each target's queue, requests in flight and circuit-breaker state."""
            return {"targets": app.state.parts.extra["targets"]()}

    return build_app(
        "rag-runner",
        lambda: runner_service(settings),
        routes=routes,
        liveness_timeout_s=settings.liveness_timeout_s,
        ready_deadline_s=settings.ready_deadline_s,
    )


def main() -> None:
    """Console entry ``groundwatch-rag-runner``."""
    settings = settings_or_exit(RunnerSettings)
    serve(create_app(settings), settings)
