"""The consume loops' Prometheus series: messages by outcome, lag, stalls, the last batch.

Its own module (no web framework) so the services and the in-process pipeline of ``groundwatch
run`` export the same series, and the same alert rules (consumer stalled, judge lag, dead
letters) read both.
"""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge

from groundwatch.runtime.consume import ConsumeLoop


class LoopTelemetry:
    """Per-service counters of the consume loop (names end in units, fixed label sets)."""

    def __init__(self, registry: CollectorRegistry, service: str) -> None:
        self.messages = Counter(
            "groundwatch_messages_total",
            "Messages consumed by outcome (ok, dead_letter, retry).",
            ["service", "topic", "outcome"],
            registry=registry,
        )
        self.last_batch = Gauge(
            "groundwatch_last_batch_timestamp_seconds",
            "Unix time of the last processed batch.",
            ["service", "topic"],
            registry=registry,
        )
        self.lag = Gauge(
            "groundwatch_consumer_lag",
            "Records not yet consumed in this instance's partitions.",
            ["service", "topic"],
            registry=registry,
        )
        self.stalled = Gauge(
            "groundwatch_consumer_stalled",
            "1 while this consumer has held uncommitted records longer than GW_STALL_AFTER_S.",
            ["service", "topic"],
            registry=registry,
        )
        self.stalled_seconds = Gauge(
            "groundwatch_consumer_stalled_seconds",
            "Seconds this consumer has held records without committing them (0 when it has none).",
            ["service", "topic"],
            registry=registry,
        )
        self.service = service

    def attach(self, loop: ConsumeLoop[Any], service: str | None = None) -> None:
        """Export ``loop``'s counters under ``service`` (default: the one this was made for;
        the embedded pipeline runs every stage in one process and names each by its own)."""
        name = service or self.service
        topic = loop.source.name
        self.stalled.labels(name, topic).set_function(lambda: float(loop.stalled()))
        self.stalled_seconds.labels(name, topic).set_function(loop.stalled_for)

        def hook(outcome: str, n: int) -> None:
            self.messages.labels(name, topic, outcome).inc(n)
            self.last_batch.labels(name, topic).set_to_current_time()

        loop.stats.outcome_hooks.append(hook)
        self.lag.labels(name, topic).set_function(loop.lag)
