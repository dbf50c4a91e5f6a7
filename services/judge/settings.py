"""Judge service settings (``GW_*``; the judging tiers themselves read ``GW_JUDGE_*``)."""

from __future__ import annotations

from pydantic import Field

from groundwatch.runtime.settings import CommonSettings


class JudgeServiceSettings(CommonSettings):
    port: int = Field(8003, ge=0, le=65535)
    judge_group: str = Field("judge", description="Consumer group shared by all judge workers.")
