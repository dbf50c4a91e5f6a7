"""The OpenTelemetry side: the SDK's provider with an OTLP/HTTP exporter, counted, and the two
spans groundwatch makes — a probe's target call, and the verdict on it.

Attributes follow both conventions people's tools read: OpenInference (Phoenix, Arize) and the
OpenTelemetry GenAI conventions (development status). Export is the SDK's batch processor: a
span ended is queued in memory and sent from the SDK's own thread, so a slow or dead collector
costs spans — counted, never waited for — and never a probe or a verdict.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, Span, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    SpanExporter,
    SpanExportResult,
)
from opentelemetry.sdk.trace.sampling import Decision
from opentelemetry.trace import NonRecordingSpan, SpanContext, SpanKind, TraceFlags
from opentelemetry.trace.status import Status, StatusCode

from groundwatch.adapters.tracing.ids import (
    ProbeIdGenerator,
    probe_span_id,
    probe_trace_id,
    reset_next_ids,
    set_next_ids,
    verdict_span,
)
from groundwatch.contracts import Judgement, Probe, RagResponse

log = logging.getLogger(__name__)

#: Characters of a question, answer or document kept on a span (collectors cap attributes too).
MAX_ATTRIBUTE_CHARS = 4096
#: Retrieved documents listed on a probe span, and characters of each one's text kept.
MAX_DOCUMENTS = 20
MAX_DOCUMENT_CHARS = 1000
#: Name of the verdict as an evaluation (GenAI ``gen_ai.evaluation.name``, Phoenix annotation).
EVALUATION_NAME = "groundwatch.verdict"


@dataclass
class SpanCounts:
    """Spans by fate since start: what /metrics shows as ``groundwatch_trace_spans_total``."""

    ended: int = 0
    exported: int = 0
    #: the collector refused them or could not be reached (after the exporter's own retries)
    failed: int = 0
    #: the export queue was full: the oldest waiting span was dropped to make room
    dropped: int = 0


class _CountingExporter(SpanExporter):
    def __init__(self, inner: SpanExporter, counts: SpanCounts) -> None:
        self._inner = inner
        self._counts = counts

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        try:
            result = self._inner.export(spans)
        except Exception as exc:  # an exporter bug must not end the SDK's worker thread
            log.warning("span export failed: %s", exc)
            result = SpanExportResult.FAILURE
        if result is SpanExportResult.SUCCESS:
            self._counts.exported += len(spans)
        else:
            self._counts.failed += len(spans)
        return result

    def shutdown(self) -> None:
        self._inner.shutdown()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return self._inner.force_flush(timeout_millis)


class _CountingBatch(BatchSpanProcessor):
    """The SDK's batch processor, counting the spans its full queue drops."""

    def __init__(self, exporter: SpanExporter, counts: SpanCounts, **kwargs: Any) -> None:
        super().__init__(exporter, **kwargs)
        self._counts = counts
        # the SDK's own bounded deque: appending to a full one drops the oldest span
        self._queue = getattr(getattr(self, "_batch_processor", None), "_queue", None)

    def on_end(self, span: ReadableSpan) -> None:
        if span.context is not None and span.context.trace_flags.sampled:
            self._counts.ended += 1
            queue = self._queue
            if queue is not None and queue.maxlen is not None and len(queue) >= queue.maxlen:
                self._counts.dropped += 1
        super().on_end(span)


def make_provider(
    exporter: SpanExporter,
    *,
    service_name: str,
    counts: SpanCounts,
    max_queue_size: int | None = None,
    schedule_delay_millis: float | None = None,
) -> TracerProvider:
    """A provider whose probe spans take their ids from the probe (:mod:`.ids`); the sampler
    is the SDK's from ``OTEL_TRACES_SAMPLER`` (parent-based always-on by default)."""
    provider = TracerProvider(
        resource=Resource.create({"service.name": service_name}),
        id_generator=ProbeIdGenerator(),
    )
    options: dict[str, Any] = {}
    if max_queue_size is not None:
        options["max_queue_size"] = max_queue_size
        options["max_export_batch_size"] = min(max_queue_size, 512)
    if schedule_delay_millis is not None:
        options["schedule_delay_millis"] = schedule_delay_millis
    provider.add_span_processor(
        _CountingBatch(_CountingExporter(exporter, counts), counts, **options)
    )
    return provider


def _cut(text: str | None) -> str:
    return (text or "")[:MAX_ATTRIBUTE_CHARS]


def probe_attributes(probe: Probe, operation: str = "invoke_agent") -> dict[str, Any]:
    """What is known of a probe before its target answers; ``operation`` is the GenAI
    operation the target performs (``chat`` for a model, ``invoke_agent`` for a RAG service)."""
    return {
        "openinference.span.kind": "CHAIN",
        "input.value": _cut(probe.query),
        "gen_ai.operation.name": operation,
        "gen_ai.agent.name": probe.target,
        "gen_ai.retrieval.query.text": _cut(probe.query),
        "groundwatch.probe_id": str(probe.probe_id),
        "groundwatch.group_id": probe.group_id,
        "groundwatch.form_id": probe.form_id,
        "groundwatch.cohort": probe.cohort,
        "groundwatch.scenario": probe.scenario,
        "groundwatch.run_id": probe.run_id,
        "groundwatch.cycle": probe.cycle,
    }


def response_attributes(response: RagResponse) -> dict[str, Any]:
    """What the target answered: the answer, its documents (OpenInference flattened and the
    GenAI JSON list), the latency; a target error's kind."""
    attrs: dict[str, Any] = {"groundwatch.latency_s": response.latency_s}
    if response.error_kind is not None:
        attrs["error.type"] = response.error_kind
        return attrs
    attrs["output.value"] = _cut(response.answer)
    ids = response.retrieved_ids[:MAX_DOCUMENTS]
    contexts = response.contexts[:MAX_DOCUMENTS]
    for i, doc_id in enumerate(ids):
        attrs[f"retrieval.documents.{i}.document.id"] = doc_id
    for i, text in enumerate(contexts):
        attrs[f"retrieval.documents.{i}.document.content"] = text[:MAX_DOCUMENT_CHARS]
    if ids:  # the GenAI form: the documents by id (their texts are on the OpenInference keys)
        attrs["gen_ai.retrieval.documents"] = json.dumps([{"id": i} for i in ids])
    return attrs


def evaluation_attributes(judgement: Judgement, group_status: str | None) -> dict[str, Any]:
    """The verdict as the GenAI ``gen_ai.evaluation.result`` event carries it, plus what
    groundwatch knows beside it (tier, reason, the group's status after this judgement)."""
    score = {"correct": 1.0, "incorrect": 0.0}.get(judgement.verdict.value)
    attrs: dict[str, Any] = {
        "gen_ai.evaluation.name": EVALUATION_NAME,
        "gen_ai.evaluation.score.label": judgement.verdict.value,
        "gen_ai.evaluation.explanation": _cut(judgement.reason),
        "groundwatch.tier": str(judgement.tier),
        "groundwatch.verdict": judgement.verdict.value,
    }
    if score is not None:
        attrs["gen_ai.evaluation.score.value"] = score
    if group_status is not None:
        attrs["groundwatch.group_status"] = group_status
    return attrs


class SpanFactory:
    """Starts groundwatch's two spans on one provider."""

    def __init__(self, provider: TracerProvider) -> None:
        self.provider = provider
        self._tracer = provider.get_tracer("groundwatch")

    @contextmanager
    def probe(self, probe: Probe, operation: str = "invoke_agent") -> Iterator[Span]:
        """The span of one probe's call to its target (retries included), current while the
        call runs so an HTTP target sends its ``traceparent``; the caller records the response
        with :func:`record_response` and the span ends on exit."""
        token = set_next_ids(probe_trace_id(probe.probe_id), probe_span_id(probe.probe_id))
        try:
            span = self._tracer.start_span(
                f"groundwatch.probe {probe.target}",
                kind=SpanKind.CLIENT,
                attributes=probe_attributes(probe, operation),
            )
        finally:
            reset_next_ids(token)
        try:
            with trace.use_span(span, end_on_exit=False, record_exception=False):
                yield span  # type: ignore[misc]  # the SDK's tracer makes SDK spans
        finally:
            span.end()

    def evaluation(self, judgement: Judgement, group_status: str | None) -> None:
        """The verdict on a probe: an EVALUATOR span under the evaluated span (the probe's, or
        the user's own for traffic that came as spans), carrying the
        ``gen_ai.evaluation.result`` event."""
        trace_id, span_id = verdict_span(judgement.probe_id, judgement.trace_context)
        # a user's span exists (their app sampled it); a probe's only if our sampler kept it
        if judgement.trace_context is None and not self.sampled(trace_id):
            return
        parent = SpanContext(
            trace_id, span_id, is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED)
        )
        attrs = evaluation_attributes(judgement, group_status)
        context = trace.set_span_in_context(NonRecordingSpan(parent))
        span = self._tracer.start_span(
            "groundwatch.evaluation",
            context=context,
            kind=SpanKind.INTERNAL,
            attributes={
                "openinference.span.kind": "EVALUATOR",
                "output.value": judgement.verdict.value,
                "groundwatch.group_id": judgement.group_id,
                **attrs,
            },
        )
        span.add_event("gen_ai.evaluation.result", attributes=attrs)
        span.end()

    def sampled(self, trace_id: int) -> bool:
        """Whether the probe span of ``trace_id`` was sampled: the sampler's own decision for
        a root span of that trace (ratio samplers decide by the trace id, so every stage agrees)."""
        result = self.provider.sampler.should_sample(None, trace_id, "groundwatch.probe")
        return result.decision is Decision.RECORD_AND_SAMPLE


def record_response(span: Span, response: RagResponse) -> None:
    span.set_attributes(response_attributes(response))
    if response.error_kind is not None:
        span.set_status(
            Status(StatusCode.ERROR, _cut(response.error_detail or response.error_kind))
        )


def exemplar_of(response: RagResponse, factory: SpanFactory | None) -> dict[str, str] | None:
    """The trace id a latency observation links to (an OpenMetrics exemplar), when traced."""
    if factory is None:
        return None
    trace_id = probe_trace_id(response.probe_id)
    if not factory.sampled(trace_id):
        return None
    return {"trace_id": format(trace_id, "032x")}
