"""Analytics service settings (``GW_*``)."""

from __future__ import annotations

from pydantic import Field

from groundwatch.runtime.settings import CommonSettings


class AnalyticsSettings(CommonSettings):
    port: int = Field(8004, ge=0, le=65535)
    analytics_group: str = Field("analytics", description="Consumer group of analytics instances.")
    window_runs: int | None = Field(
        None, ge=1, description="Tally only the last N runs per target."
    )
    window_seconds: float | None = Field(None, gt=0, description="Tally only the last N seconds.")
