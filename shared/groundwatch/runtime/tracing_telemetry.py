"""What tracing did, on /metrics: spans exported or lost, verdicts written to Phoenix/Langfuse
or not. Lost spans and verdicts are counted here because they are never waited for."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily
from prometheus_client.registry import Collector

from groundwatch.adapters.tracing import active


class TracingTelemetry(Collector):
    """Reads the process's tracing at scrape time (nothing when tracing is off)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        registry.register(self)

    def collect(self) -> Iterator[CounterMetricFamily]:
        tracing = active()
        if tracing is None:
            return
        spans = CounterMetricFamily(
            "groundwatch_trace_spans",
            "Spans of probes and verdicts by fate: ended (sampled), exported, failed (the"
            " collector refused them or was unreachable), dropped (the export queue was full).",
            labels=["outcome"],
        )
        c = tracing.counts
        for outcome, n in (
            ("ended", c.ended),
            ("exported", c.exported),
            ("failed", c.failed),
            ("dropped", c.dropped),
        ):
            spans.add_metric([outcome], n)
        yield spans
        if tracing.writers:
            written = CounterMetricFamily(
                "groundwatch_trace_verdicts_written",
                "Verdicts written onto spans through a trace tool's API (phoenix, langfuse), by"
                " outcome: sent, failed (after retries), dropped (its queue was full).",
                labels=["tool", "outcome"],
            )
            for writer, _ in tracing.writers:
                w = writer.counts
                for outcome, n in (("sent", w.sent), ("failed", w.failed), ("dropped", w.dropped)):
                    written.add_metric([writer.name, outcome], n)
            yield written
