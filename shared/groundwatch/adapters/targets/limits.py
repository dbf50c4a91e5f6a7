"""How hard groundwatch may press on one target: the knobs the runner enforces per target."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class TargetLimits(BaseModel):
    """Per-target protection. Production RAG endpoints are probed all day: never hurt them."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    concurrency: int = Field(8, ge=1, le=4096, description="Requests in flight at once.")
    rate_per_s: float | None = Field(
        None, gt=0, description="Token-bucket rate (requests/s, retries included); None = off."
    )
    burst: int | None = Field(
        None, ge=1, description="Token-bucket depth; default: the concurrency."
    )
    timeout_s: float = Field(30.0, gt=0, le=3600, description="Deadline of one attempt.")
    retries: int = Field(2, ge=0, le=10, description="Extra attempts for transient errors.")
    backoff_initial_s: float = Field(0.2, ge=0, description="Jittered backoff scale.")
    backoff_max_s: float = Field(10.0, ge=0, description="Cap of one backoff sleep.")
    breaker_failures: int = Field(
        5,
        ge=1,
        description="Consecutive transient failures, of distinct semantic groups, that open"
        " the circuit (one fact failing in all its forms counts once).",
    )
    breaker_reset_s: float = Field(
        30.0, gt=0, description="Open time before one trial request is let through."
    )
    queue_size: int = Field(
        1000, ge=1, description="Probes waiting per target; callers wait when it is full."
    )

    @property
    def bucket_depth(self) -> int:
        return self.burst if self.burst is not None else self.concurrency
