"""Traffic grounding's telemetry, read at scrape time from the stage's counts: records by
outcome (``matched`` or why not) and the match rate. Labels are the outcome only: bounded."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from groundwatch.stages.traffic.stage import TrafficCounts

#: Every reason the matcher gives, so each series exists from the first scrape.
OUTCOMES = ("matched", "no_entity", "no_attribute", "ambiguous", "low_confidence")


class TrafficCollector(Collector):
    def __init__(self, counts: Callable[[], TrafficCounts]) -> None:
        self._counts = counts

    def collect(self) -> Iterator[Metric]:
        counts = self._counts()
        records = CounterMetricFamily(
            "groundwatch_traffic_records",
            "Users' questions received, by grounding outcome (matched, or why not).",
            labels=["outcome"],
        )
        for outcome in OUTCOMES:
            n = counts.matched if outcome == "matched" else counts.reasons.get(outcome, 0)
            records.add_metric([outcome], n)
        yield records
        yield GaugeMetricFamily(
            "groundwatch_traffic_match_ratio",
            "Share of users' questions matched to a semantic group (0 before any).",
            value=counts.match_rate,
        )


def register_traffic_telemetry(
    registry: CollectorRegistry, counts: Callable[[], TrafficCounts]
) -> None:
    registry.register(TrafficCollector(counts))
