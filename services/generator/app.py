"""The generator service: publishes probe cycles; start/stop continuous probing over its API."""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import Depends, FastAPI
from prometheus_client import CollectorRegistry, Counter

from groundwatch.auth import require_token
from groundwatch.bus import make_bus
from groundwatch.contracts import Topics
from groundwatch.core.model import SemanticGroup
from groundwatch.service import ServiceParts, build_app, instance_name, serve, settings_or_exit
from services.generator.settings import GeneratorSettings
from services.generator.worker import GeneratorWorker


def load_groups(settings: GeneratorSettings) -> list[SemanticGroup]:
    """The dataset to probe: the built-in demo domain, or a JSONL file of semantic groups."""
    if settings.dataset == "demo":
        from groundwatch.demo import demo_dataset

        _, groups = demo_dataset(k=settings.forms, cohorts=tuple(settings.cohorts))
        return list(groups)
    from groundwatch.datasets import read_jsonl

    return list(read_jsonl(settings.dataset))


def create_app(settings: GeneratorSettings) -> FastAPI:
    guard = require_token(settings.api_token)

    async def bootstrap() -> ServiceParts:
        registry = CollectorRegistry()
        bus = make_bus(
            settings.bus,
            bootstrap=settings.kafka_bootstrap,
            partitions=settings.partitions,
            client_id=instance_name(settings, "generator"),
        )
        topics = Topics(settings.topic_prefix)
        groups = await asyncio.to_thread(load_groups, settings)
        worker = GeneratorWorker(
            bus,
            topics,
            groups,
            settings.targets,
            sample=settings.sample,
            rate=settings.rate,
            seed=settings.seed,
        )
        published = Counter(
            "groundwatch_probes_published_total", "Probes published.", ["target"], registry=registry
        )

        async def startup_runs() -> None:
            for _ in range(settings.runs):
                before = worker.state.published
                await worker.run_cycle()
                for t in settings.targets:
                    published.labels(t).inc(
                        (worker.state.published - before) / len(settings.targets)
                    )
            if settings.continuous:
                worker.start_continuous(settings.interval_s)

        return ServiceParts(
            bus=bus,
            topics=topics,
            registry=registry,
            background=[startup_runs],
            on_stop=[worker.stop_continuous],
            extra={"worker": worker},
        )

    def routes(app: FastAPI) -> None:
        def worker() -> GeneratorWorker:
            w: GeneratorWorker = app.state.parts.extra["worker"]
            return w

        @app.get("/runs", tags=["runs"])
        async def list_runs() -> dict[str, Any]:
            """Runs so far and whether continuous probing is on."""
            w = worker()
            return {
                "published": w.state.published,
                "continuous": w.state.running,
                "groups": len(w.groups),
                "runs": [vars(r) for r in w.state.runs[-100:]],
            }

        @app.post("/runs", tags=["runs"], dependencies=[Depends(guard)])
        async def start_run() -> dict[str, Any]:
            """Publish one probing cycle now."""
            return vars(await worker().run_cycle())

        @app.post("/runs/continuous/start", tags=["runs"], dependencies=[Depends(guard)])
        async def start_continuous() -> dict[str, bool]:
            """Start continuous probing (a cycle every GW_INTERVAL_S)."""
            return {"started": worker().start_continuous(settings.interval_s)}

        @app.post("/runs/continuous/stop", tags=["runs"], dependencies=[Depends(guard)])
        async def stop_continuous() -> dict[str, bool]:
            """Stop continuous probing after the cycle in flight."""
            return {"stopped": await worker().stop_continuous()}

    return build_app("generator", bootstrap, routes=routes)


def main() -> None:
    """Console entry ``groundwatch-generator``."""
    settings = settings_or_exit(GeneratorSettings)
    serve(create_app(settings), settings)
