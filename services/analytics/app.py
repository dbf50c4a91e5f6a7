"""The analytics service: live group tagging, Prometheus tallies, the group API and the report;
and the dead-letter keeper, which copies the dead-letter topic into the store (``groundwatch
dead-letters`` lists it; the topic's retention would drop them)."""

from __future__ import annotations

from fastapi import FastAPI

from groundwatch.app.services import analytics_service
from groundwatch.app.view import run_pages_for
from groundwatch.runtime.api import add_routes
from groundwatch.runtime.service import build_app, serve, settings_or_exit
from services.analytics.settings import AnalyticsSettings


def create_app(settings: AnalyticsSettings) -> FastAPI:
    def routes(app: FastAPI) -> None:
        add_routes(
            app,
            lambda: app.state.parts.extra["worker"],
            read_token=settings.api_read_token,
            api_token=settings.api_token,
            run_pages=run_pages_for("the analytics store"),
        )

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
