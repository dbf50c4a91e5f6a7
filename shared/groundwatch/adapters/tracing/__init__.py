"""Traces of probes and verdicts on them, where people already look: OpenTelemetry (OTLP/HTTP,
OpenInference and GenAI attributes), Phoenix span annotations, Langfuse scores."""

from groundwatch.adapters.tracing.ids import probe_span_id, probe_trace_id, span_hex, trace_hex
from groundwatch.adapters.tracing.settings import TracingSettings, tracing_enabled
from groundwatch.adapters.tracing.setup import Tracing, active, install, start_tracing
from groundwatch.adapters.tracing.shipping import SpanFactory, exemplar_of
from groundwatch.adapters.tracing.spans import EVALUATION_NAME, SpanCounts
from groundwatch.adapters.tracing.writers import QueuedWriter, WriterCounts

__all__ = [
    "EVALUATION_NAME",
    "QueuedWriter",
    "SpanCounts",
    "SpanFactory",
    "Tracing",
    "TracingSettings",
    "WriterCounts",
    "active",
    "exemplar_of",
    "install",
    "probe_span_id",
    "probe_trace_id",
    "span_hex",
    "start_tracing",
    "trace_hex",
    "tracing_enabled",
]
