"""Judge metrics: verdicts by tier, judging latency, and the LLM tier's spend (read at scrape)."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterator
from typing import ClassVar, ParamSpec

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import CounterMetricFamily
from prometheus_client.registry import Collector

from groundwatch.core.judging import Decision
from groundwatch.runtime.judging import register_judge_metrics
from groundwatch.stages.judge.tiered import TieredJudge

P = ParamSpec("P")


class _LlmCollector(Collector):
    """Exports the LLM tier's spend from :meth:`Judge.snapshot` at scrape time (all zero when the
    judge runs rules only, so dashboards and alerts still find the series)."""

    FIELDS: ClassVar[dict[str, tuple[str, str]]] = {
        "llm_client_attempts": ("groundwatch_llm_calls", "LLM requests sent, retries included."),
        "llm_cache_hits": ("groundwatch_llm_cache_hits", "LLM verdicts served from the cache."),
        "llm_client_prompt_tokens": ("groundwatch_llm_prompt_tokens", "Prompt tokens spent."),
        "llm_client_completion_tokens": (
            "groundwatch_llm_completion_tokens",
            "Completion tokens spent.",
        ),
        "llm_client_rate_limited": ("groundwatch_llm_rate_limited", "HTTP 429 answers received."),
        "llm_client_errors": ("groundwatch_llm_errors", "LLM calls that failed after every retry."),
        "judge_errors": (
            "groundwatch_llm_judge_errors",
            "Unparseable or failed LLM verdicts (undecided, judge_error).",
        ),
    }

    def __init__(self, judge: TieredJudge) -> None:
        self._judge = judge

    def collect(self) -> Iterator[CounterMetricFamily]:
        stats = self._judge.snapshot()
        for key, (name, doc) in self.FIELDS.items():
            fam = CounterMetricFamily(name, doc)
            fam.add_metric([], float(stats.get(key, 0)))
            yield fam


class JudgeMetrics:
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
        registry.register(_LlmCollector(judge))
        register_judge_metrics(registry, judge)

    def instrument(self, fn: Callable[P, Awaitable[Decision]]) -> Callable[P, Awaitable[Decision]]:
        """``fn`` (the factual or the scenario judge) with its verdicts and latency counted."""

        async def judged(*args: P.args, **kwargs: P.kwargs) -> Decision:
            start = time.perf_counter()
            decision = await fn(*args, **kwargs)
            self.latency.observe(time.perf_counter() - start)
            self.verdicts.labels(decision.verdict.value, decision.tier).inc()
            return decision

        return judged
