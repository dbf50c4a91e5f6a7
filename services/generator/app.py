"""The generator service: publishes probe cycles; start/stop continuous probing over its API."""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import Depends, FastAPI, HTTPException
from pydantic import BaseModel, ConfigDict, Field

from groundwatch.adapters.db import create_schema, make_engine
from groundwatch.adapters.db.evidence import ensure_dataset_stored
from groundwatch.adapters.db.runs import next_cycle, record_cycle
from groundwatch.core.model import SemanticGroup
from groundwatch.runtime.auth import require_token
from groundwatch.runtime.generator_telemetry import GeneratorTelemetry
from groundwatch.runtime.refresh import answer_refresher
from groundwatch.runtime.service import (
    ServiceParts,
    build_app,
    serve,
    settings_or_exit,
    wiring,
)
from groundwatch.stages.generator.stage import GeneratorStage, RunSummary
from services.generator.settings import GeneratorSettings


def load_groups(settings: GeneratorSettings) -> tuple[list[SemanticGroup], str | None]:
    """The dataset to probe — the built-in demo domain, groups generated from ``GW_SOURCE_URL``
    (steered by the include/exclude/pii settings), or a JSONL file of semantic groups — and the
    source database whose answers cycles re-read (the demo's own, or ``GW_SOURCE_URL``)."""
    from dataclasses import replace

    from groundwatch.core.generation.steering import Steering, split_patterns

    steering = Steering(
        include_tables=split_patterns(settings.include_tables),
        exclude_tables=split_patterns(settings.exclude_tables),
        exclude_columns=split_patterns(settings.exclude_columns),
        pii=settings.pii,
    )
    if settings.dataset == "demo":
        from groundwatch.demo import DEMO_RULES, demo_dataset

        domain, groups = demo_dataset(
            k=settings.forms,
            cohorts=tuple(settings.cohorts),
            rule_config=replace(DEMO_RULES, key_ratio=settings.key_ratio),
            steering=steering,
            list_answers=settings.allow_list_answers,
        )
        return list(groups), settings.source_url or domain.db_url
    if settings.dataset == "source":
        from groundwatch.adapters.sources.generate import generate_groups
        from groundwatch.core.generation.rules import RuleConfig
        from groundwatch.errors import ConfigError

        if not settings.source_url:
            raise ConfigError("GW_DATASET=source needs GW_SOURCE_URL")
        result = generate_groups(
            settings.source_url,
            k=settings.forms,
            cohorts=tuple(settings.cohorts),
            rule_config=RuleConfig(key_ratio=settings.key_ratio),
            steering=steering,
            list_answers=settings.allow_list_answers,
            policy=settings.source_policy(),
        )
        return result.groups, settings.source_url
    from groundwatch.adapters.db.datasets import read_jsonl

    return list(read_jsonl(settings.dataset)), settings.source_url


#: Cycles one ``POST /runs`` may ask for: each publishes every sampled group in all its forms, and
#: the request waits for them, so a huge number is a mistake (``{"runs": 10**9}`` ran one cycle
#: and ignored the rest before; now it is refused with 422).
MAX_RUNS_PER_REQUEST = 100


class RunRequest(BaseModel):
    """The body of ``POST /runs`` (optional: no body is one cycle)."""

    model_config = ConfigDict(extra="forbid")

    runs: int = Field(
        1, ge=1, le=MAX_RUNS_PER_REQUEST, description="Cycles to publish, one after the other."
    )


def create_app(settings: GeneratorSettings) -> FastAPI:
    guard = require_token(settings.api_token)

    async def bootstrap() -> ServiceParts:
        w = wiring(settings, "generator")
        registry, bus, topics = w.registry, w.bus, w.topics
        groups, source_url = await asyncio.to_thread(load_groups, settings)
        engine = make_engine(settings.database_url)
        await asyncio.to_thread(create_schema, engine)
        # the SQL truth beside the judgements: analytics' /groups and `groundwatch show` read it
        await asyncio.to_thread(ensure_dataset_stored, engine, groups)
        telemetry = GeneratorTelemetry(registry)
        refresh = (
            answer_refresher(
                source_url, engine, telemetry.answers_changed, settings.source_policy()
            )
            if source_url
            else None
        )

        series = settings.series or (groups[0].dataset_id if groups else "default")

        async def record(summary: RunSummary) -> None:
            telemetry.started(summary)
            await asyncio.to_thread(
                record_cycle,
                engine,
                run_id=summary.run_id,
                series=summary.series,
                cycle=summary.cycle,
                dataset_id=summary.dataset_id,
                targets=summary.targets,
                started_at=summary.started_at,
            )

        worker = GeneratorStage(
            bus,
            topics,
            groups,
            settings.targets,
            sample=settings.sample,
            rate=settings.rate,
            seed=settings.seed,
            refresh=refresh,
            on_publish=telemetry.count,
            series=series,
            first_cycle=await asyncio.to_thread(next_cycle, engine, series),
            on_cycle=record,
        )

        async def startup_runs() -> None:
            for _ in range(settings.runs):
                await worker.run_cycle()
            if settings.continuous:
                worker.start_continuous(settings.interval_s)

        return ServiceParts(
            bus=bus,
            topics=topics,
            registry=registry,
            background=[startup_runs],
            engine=engine,
            on_stop=[worker.stop_continuous],
            extra={"worker": worker},
            watched=[worker],  # its cycle loop: a heartbeat for /healthz, a failure ends it
        )

    def routes(app: FastAPI) -> None:
        def worker() -> GeneratorStage:
            w: GeneratorStage = app.state.parts.extra["worker"]
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

        @app.post(
            "/runs",
            tags=["runs"],
            dependencies=[Depends(guard)],
            responses={409: {"description": "A cycle is in flight; nothing was started."}},
        )
        async def start_run(body: RunRequest | None = None) -> dict[str, Any]:
            """Publish ``runs`` probing cycles now (default 1, at most 100), one after the other;
            the answer is the last cycle's summary, with every cycle's in ``cycles``. While a
            cycle is in flight (another request's, a start-up run, the continuous loop's) the
            request is refused with 409 and nothing is started."""
            w = worker()
            if w.busy:
                now = w.in_flight
                which = f"cycle {now.cycle} (run {now.run_id})" if now else "a cycle"
                raise HTTPException(409, f"{which} is in flight; ask again when it has ended")
            wanted = body.runs if body is not None else 1
            cycles = [vars(await w.run_cycle()) for _ in range(wanted)]
            return {**cycles[-1], "cycles": cycles}

        @app.post("/runs/continuous/start", tags=["runs"], dependencies=[Depends(guard)])
        async def start_continuous() -> dict[str, bool]:
            """Start continuous probing (a cycle every GW_INTERVAL_S)."""
            return {"started": worker().start_continuous(settings.interval_s)}

        @app.post("/runs/continuous/stop", tags=["runs"], dependencies=[Depends(guard)])
        async def stop_continuous() -> dict[str, bool]:
            """Stop continuous probing after the cycle in flight."""
            return {"stopped": await worker().stop_continuous()}

    return build_app(
        "generator", bootstrap, routes=routes, liveness_timeout_s=settings.liveness_timeout_s
    )


def main() -> None:
    """Console entry ``groundwatch-generator``."""
    settings = settings_or_exit(GeneratorSettings)
    serve(create_app(settings), settings)
