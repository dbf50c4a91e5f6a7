"""How hard groundwatch may press on one target: the knobs the runner enforces per target."""

from __future__ import annotations

import logging
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

log = logging.getLogger(__name__)

#: Keys a targets file may still use, by the key that replaced them: the breaker's minimum
#: counts semantic groups, not calls, and its name says so.
RENAMED_KEYS = {"breaker_min_calls": "breaker_min_groups"}


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
        20,
        ge=1,
        description="Consecutive transient failures, of distinct semantic groups, that open"
        " the circuit whatever the failure rate (one fact failing in all its forms counts once)."
        " Small values trip on a flaky endpoint by chance: 0.3^5 comes within a few hundred calls.",
    )
    breaker_failure_rate: float = Field(
        0.5,
        gt=0,
        le=1,
        description="Failed share of the last breaker_window semantic groups that opens the"
        " circuit (a group weighs the share of its calls that failed, each call by its latest"
        " attempt): one fact failing in all its forms is one failed group, not six failed calls.",
    )
    breaker_window: int = Field(
        100, ge=1, le=100_000, description="Recent semantic groups the failure rate is over."
    )
    breaker_min_groups: int = Field(
        20,
        ge=1,
        description="Semantic groups in the window before the failure rate may open the circuit.",
    )
    breaker_trial_calls: int = Field(
        3,
        ge=1,
        le=100,
        description="Trial calls of a half-open circuit: the first answered closes it, all"
        " failing open it again.",
    )
    breaker_reset_s: float = Field(
        30.0, gt=0, description="Open time before the trial calls are let through."
    )
    queue_size: int = Field(
        1000, ge=1, description="Probes waiting per target; callers wait when it is full."
    )

    @model_validator(mode="before")
    @classmethod
    def _renamed_keys(cls, data: Any) -> Any:
        """An old key still read, with one warning line; old and new key together are refused
        (which one was meant cannot be told)."""
        if not isinstance(data, dict) or not RENAMED_KEYS.keys() & data.keys():
            return data
        out = dict(data)
        for old, new in RENAMED_KEYS.items():
            if old not in out:
                continue
            if new in out:
                raise ValueError(f"limits: give {new} only ({old} is its deprecated name)")
            log.warning("limits: %s is deprecated, read as %s (rename it)", old, new)
            out[new] = out.pop(old)
        return out

    @property
    def bucket_depth(self) -> int:
        return self.burst if self.burst is not None else self.concurrency
