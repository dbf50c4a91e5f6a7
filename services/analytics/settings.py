"""Analytics service settings (``GW_*``)."""

from __future__ import annotations

from pydantic import Field

from groundwatch.runtime.settings import CommonSettings


class AnalyticsSettings(CommonSettings):
    port: int = Field(8004, ge=0, le=65535)
    analytics_group: str = Field("analytics", description="Consumer group of analytics instances.")
    window_runs: int = Field(
        1,
        ge=0,
        description="A group's status is over its own last N probed cycles (1: the latest);"
        " 0 pools every cycle (a batch view, never live).",
    )
