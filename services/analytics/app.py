"""The analytics service: live group tagging, Prometheus tallies, the group API and the report;
and the dead-letter keeper, which copies the dead-letter topic into the store (``groundwatch
dead-letters`` lists it; the topic's retention would drop them); and users' traffic taken in
(``POST /traffic``, OTLP's ``POST /v1/traces``) onto the ``traffic`` topic."""

from __future__ import annotations

from collections.abc import Sequence

from fastapi import FastAPI

from groundwatch.app.services import analytics_service, settings_or_exit
from groundwatch.app.view import run_pages_for
from groundwatch.contracts import HumanVerdict, TrafficRecord
from groundwatch.runtime.api import add_routes
from groundwatch.runtime.otlp import add_otlp_routes
from groundwatch.runtime.service import build_app, serve
from groundwatch.runtime.traffic_api import add_traffic_routes
from services.analytics.settings import AnalyticsSettings


def create_app(settings: AnalyticsSettings) -> FastAPI:
    def routes(app: FastAPI) -> None:
        async def publish_verdict(message: HumanVerdict) -> None:
            # a person's verdict on /ui onto `human-verdicts`: the owner of its group counts it
            await app.state.parts.extra["verdicts"](message)

        add_routes(
            app,
            lambda: app.state.parts.extra["worker"],
            read_token=settings.api_read_token,
            api_token=settings.api_token,
            run_pages=run_pages_for("the analytics store"),
            publish_verdict=publish_verdict,
        )

        async def publish(records: Sequence[TrafficRecord]) -> None:
            await app.state.parts.extra["traffic"](records)

        # users' traffic onto the `traffic` topic; the generator grounds it in its groups
        add_traffic_routes(app, publish, token=settings.api_token)
        add_otlp_routes(app, publish, token=settings.api_token)

    return build_app(
        "analytics",
        lambda: analytics_service(settings),
        routes=routes,
        liveness_timeout_s=settings.liveness_timeout_s,
        ready_deadline_s=settings.ready_deadline_s,
    )


def main() -> None:
    """Console entry ``groundwatch-analytics``."""
    settings = settings_or_exit(AnalyticsSettings)
    serve(create_app(settings), settings)
