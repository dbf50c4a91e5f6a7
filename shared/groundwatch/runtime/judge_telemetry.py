"""Judge telemetry: verdicts by tier and judging latency; the LLM spend and the self-audit are
:func:`groundwatch.runtime.judging.register_judge_telemetry`'s (read at scrape)."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import ParamSpec

from prometheus_client import CollectorRegistry, Counter, Histogram

from groundwatch.core.judging import Decision
from groundwatch.runtime.judging import register_judge_telemetry
from groundwatch.stages.judge.tiered import TieredJudge

P = ParamSpec("P")


class JudgeTelemetry:
    def __init__(self, registry: CollectorRegistry, judge: TieredJudge) -> None:
        self.verdicts = Counter(
            "groundwatch_judge_verdicts",
            "Verdicts issued, by tier.",
            ["verdict", "tier"],
            registry=registry,
        )
        self.latency = Histogram(
            "groundwatch_judge_seconds",
            "Time to judge one response.",
            buckets=(0.0001, 0.001, 0.01, 0.1, 0.5, 1, 2, 5, 10, 30),
            registry=registry,
        )
        register_judge_telemetry(registry, judge)

    def instrument(self, fn: Callable[P, Awaitable[Decision]]) -> Callable[P, Awaitable[Decision]]:
        """``fn`` (the factual or the scenario judge) with its verdicts and latency counted."""

        async def judged(*args: P.args, **kwargs: P.kwargs) -> Decision:
            start = time.perf_counter()
            decision = await fn(*args, **kwargs)
            self.latency.observe(time.perf_counter() - start)
            self.verdicts.labels(decision.verdict.value, decision.tier).inc()
            return decision

        return judged
