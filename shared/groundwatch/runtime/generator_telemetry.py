"""What the generator exports, wherever it runs (the generator service, ``groundwatch run``):
probes published per target, answers the source changed, and the cycle the series is at.

The same names in both, so the alert rules that read them (``GroundwatchPipelineStalled``) and a
dashboard's "is it still cycling?" panel work for an embedded ``run`` as for the services.
"""

from __future__ import annotations

import collections

from prometheus_client import CollectorRegistry, Counter, Gauge

from groundwatch.contracts import Probe
from groundwatch.stages.generator.stage import RunSummary


class GeneratorTelemetry:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.published = Counter(
            "groundwatch_probes_published", "Probes published.", ["target"], registry=registry
        )
        self.changes = Counter(
            "groundwatch_answer_changes",
            "Groups whose SQL answer changed (new answer version).",
            registry=registry,
        )
        self.cycle = Gauge(
            "groundwatch_cycle",
            "Number of the latest cycle started in the monitoring series.",
            ["series"],
            registry=registry,
        )
        self.cycle_started = Gauge(
            "groundwatch_cycle_started_timestamp_seconds",
            "When the latest cycle of the series started (Unix time): a stuck monitor stops"
            " moving it.",
            ["series"],
            registry=registry,
        )

    def count(self, batch: list[Probe]) -> None:
        """``GeneratorStage(on_publish=...)``."""
        for target, n in collections.Counter(p.target for p in batch).items():
            self.published.labels(target).inc(n)

    def started(self, summary: RunSummary) -> None:
        """A cycle started (call from ``GeneratorStage(on_cycle=...)``)."""
        self.cycle.labels(summary.series).set(summary.cycle)
        self.cycle_started.labels(summary.series).set(summary.started_at)

    def answers_changed(self, n: int) -> None:
        """``answer_refresher(on_changed=...)``."""
        self.changes.inc(n)
