"""Runner telemetry: requests per target by outcome, target latency, streamed answers' time to
first token and to the end of the stream."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram

from groundwatch.adapters.tracing import active, exemplar_of
from groundwatch.contracts import RagResponse


class RunnerTelemetry:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.requests = Counter(
            "groundwatch_target_requests",
            "Probes asked, by target and outcome (ok or error kind).",
            ["target", "outcome"],
            registry=registry,
        )
        self.latency = Histogram(
            "groundwatch_target_latency_seconds",
            "Target answer latency, retries included.",
            ["target"],
            buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60),
            registry=registry,
        )
        self.first_token = Histogram(
            "groundwatch_target_first_token_seconds",
            "Streamed answers: time from the request to the first text delta, per attempt.",
            ["target"],
            buckets=(0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60),
            registry=registry,
        )
        self.stream_total = Histogram(
            "groundwatch_target_stream_seconds",
            "Streamed answers: time from the request to the end of the stream, per attempt.",
            ["target"],
            buckets=(0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60),
            registry=registry,
        )
        tracing = active()
        #: traced probes link their latency to their trace (OpenMetrics exemplars)
        self._spans = tracing.spans if tracing is not None else None

    def on_stream(self, target: str, first_token_s: float | None, total_s: float) -> None:
        if first_token_s is not None:
            self.first_token.labels(target).observe(first_token_s)
        self.stream_total.labels(target).observe(total_s)

    def on_response(self, response: RagResponse, attempts: int) -> None:
        outcome = response.status.value if response.error_kind is None else response.error_kind
        self.requests.labels(response.target, outcome).inc()
        latency = self.latency.labels(response.target)
        if self._spans is None:
            latency.observe(response.latency_s)
        else:
            latency.observe(response.latency_s, exemplar=exemplar_of(response, self._spans))
