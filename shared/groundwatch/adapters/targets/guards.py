"""The permits and states of a target's circuit breaker.

The breaker is the runner's lane breaker (:mod:`groundwatch.stages.runner.breaker`, counting
semantic groups); the rate guard is :mod:`groundwatch.adapters.throttle`.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


@dataclass(frozen=True, slots=True)
class Permit:
    """Leave to call the target; ``trial`` marks the one call let through a half-open circuit."""

    trial: bool


#: The permit of every call through a closed circuit: one shared object, not one per call.
NORMAL = Permit(trial=False)


class BreakerState(StrEnum):
    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half_open"
