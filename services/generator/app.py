"""The generator service: publishes probe cycles; start/stop continuous probing over its API."""

from __future__ import annotations

from typing import Any

from fastapi import Depends, FastAPI, HTTPException
from pydantic import BaseModel, ConfigDict, Field

from groundwatch.app.services import Cycles, generator_service
from groundwatch.runtime.auth import require_token
from groundwatch.runtime.service import build_app, serve, settings_or_exit
from services.generator.settings import GeneratorSettings

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

    def routes(app: FastAPI) -> None:
        def cycles() -> Cycles:
            c: Cycles = app.state.parts.extra["cycles"]
            return c

        @app.get("/runs", tags=["runs"])
        async def list_runs() -> dict[str, Any]:
            """Runs so far and whether continuous probing is on."""
            return cycles().listing()

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
            which = cycles().in_flight()
            if which is not None:
                raise HTTPException(409, f"{which} is in flight; ask again when it has ended")
            done = await cycles().run(body.runs if body is not None else 1)
            return {**done[-1], "cycles": done}

        @app.post("/runs/continuous/start", tags=["runs"], dependencies=[Depends(guard)])
        async def start_continuous() -> dict[str, bool]:
            """Start continuous probing (a cycle every GW_INTERVAL_S)."""
            return {"started": cycles().start_continuous()}

        @app.post("/runs/continuous/stop", tags=["runs"], dependencies=[Depends(guard)])
        async def stop_continuous() -> dict[str, bool]:
            """Stop continuous probing after the cycle in flight."""
            return {"stopped": await cycles().stop_continuous()}

    return build_app(
        "generator",
        lambda: generator_service(settings),
        routes=routes,
        liveness_timeout_s=settings.liveness_timeout_s,
    )


def main() -> None:
    """Console entry ``groundwatch-generator``."""
    settings = settings_or_exit(GeneratorSettings)
    serve(create_app(settings), settings)
