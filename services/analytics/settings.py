"""Analytics service settings (``GW_*``)."""

from __future__ import annotations

from pydantic import Field, field_validator

from groundwatch.runtime.settings import CommonSettings, reject_placeholder


class AnalyticsSettings(CommonSettings):
    port: int = Field(8004, ge=0, le=65535)
    analytics_group: str = Field("analytics", description="Consumer group of analytics instances.")
    window_runs: int = Field(
        1,
        ge=0,
        description="A group's status is over its own last N probed cycles (1: the latest);"
        " 0 pools every cycle (a batch view, never live).",
    )
    api_read_token: str | None = Field(
        None,
        description="Bearer token for /groups, /transitions, /report and /report.html (they serve "
        "ground-truth answers and target replies); unset: open.",
    )

    @field_validator("api_read_token")
    @classmethod
    def _no_placeholder(cls, v: str | None) -> str | None:
        return reject_placeholder(v)
