"""The reference RAG's telemetry (Prometheus series), in one container that receives its
registry."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram


class RagTelemetry:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.queries = Counter(
            "groundwatch_rag_queries_total",
            "Queries answered by outcome (answered, dont_know, error).",
            ["retriever", "reader", "outcome"],
            registry=registry,
        )
        self.latency = Histogram(
            "groundwatch_rag_query_duration_seconds",
            "Time to answer one query, including injected latency.",
            ["retriever", "reader"],
            registry=registry,
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
        )
        self.documents = Gauge(
            "groundwatch_rag_documents",
            "Documents in the corpus, by state (indexed, dropped).",
            ["state"],
            registry=registry,
        )
