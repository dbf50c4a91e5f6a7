"""The generator service: publishes probe cycles; start/stop continuous probing over its API."""

from __future__ import annotations

from typing import Any

from fastapi import Depends, FastAPI, HTTPException, Path
from pydantic import BaseModel, ConfigDict, Field

from groundwatch.app.services import Cycles, generator_service, settings_or_exit
from groundwatch.runtime.auth import require_token
from groundwatch.runtime.service import build_app, serve
from groundwatch.runtime.traffic_api import add_unmatched_route
from services.generator.settings import GeneratorSettings

#: Cycles one ``POST /runs`` may ask for: each publishes every sampled group in all its forms, so
#: a huge number is a mistake (``{"runs": 10**9}`` ran one cycle
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
            status_code=202,
            dependencies=[Depends(guard)],
            responses={409: {"description": "A cycle is in flight; nothing was started."}},
        )
        async def start_run(body: RunRequest | None = None) -> dict[str, Any]:
            """Start ``runs`` probing cycles (default 1, at most 100), one after the other, and
            answer at once with 202: the request's ``run_id`` (its first cycle's) and ``poll``,
            the URL of its state (``GET /runs/{run_id}``: accepted, running, done or failed,
            with each finished cycle's summary). While a cycle is in flight (another
            request's, a start-up run, the continuous loop's) the request is refused with 409
            and nothing is started."""
            which = cycles().in_flight()
            if which is not None:
                raise HTTPException(409, f"{which} is in flight; ask again when it has ended")
            return cycles().submit(body.runs if body is not None else 1).view()

        @app.get(
            "/runs/{run_id}",
            tags=["runs"],
            responses={404: {"description": "No run request of that id (or a forgotten one)."}},
        )
        async def run_state(run_id: str = Path(max_length=64)) -> dict[str, Any]:
            """Where a ``POST /runs`` request is: ``status`` (accepted, running, done, failed),
            ``cycles`` (each finished cycle's summary) and ``error`` when it failed."""
            req = cycles().request(run_id)
            if req is None:
                raise HTTPException(404, f"no run request {run_id!r}")
            return req.view()

        @app.post("/runs/continuous/start", tags=["runs"], dependencies=[Depends(guard)])
        async def start_continuous() -> dict[str, bool]:
            """Start continuous probing (a cycle every GW_INTERVAL_S)."""
            return {"started": cycles().start_continuous()}

        @app.post("/runs/continuous/stop", tags=["runs"], dependencies=[Depends(guard)])
        async def stop_continuous() -> dict[str, bool]:
            """Stop continuous probing after the cycle in flight; answered within
            GW_STOP_WAIT_S (``cycle_in_flight``: that cycle is still being published, and no
            next one starts)."""
            return await cycles().stop_continuous()

        add_unmatched_route(
            app, lambda: app.state.parts.extra["traffic"].counts, read_token=settings.api_read_token
        )

    return build_app(
        "generator",
        lambda: generator_service(settings),
        routes=routes,
        liveness_timeout_s=settings.liveness_timeout_s,
        ready_deadline_s=settings.ready_deadline_s,
    )


def main() -> None:
    """Console entry ``groundwatch-generator``."""
    settings = settings_or_exit(GeneratorSettings)
    serve(create_app(settings), settings)
