"""Tracing for one process: built once from the environment by the bootstrap, read by the
runner's lanes and the analytics stage through :func:`active` (as OpenTelemetry's own global
tracer provider is read), off — ``None``, nothing on any hot path — unless configured."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping, Sequence

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace.export import SpanExporter

from groundwatch.adapters.tracing.ids import probe_trace_id
from groundwatch.adapters.tracing.settings import TracingSettings, tracing_enabled
from groundwatch.adapters.tracing.shipping import (
    DEFAULT_QUEUE,
    Link,
    ProcessLink,
    SpanFactory,
    ThreadLink,
    env_int,
)
from groundwatch.adapters.tracing.spans import SpanCounts
from groundwatch.adapters.tracing.writers import (
    QueuedWriter,
    langfuse_poster,
    langfuse_score,
    phoenix_annotation,
    phoenix_poster,
)
from groundwatch.contracts import Judgement

log = logging.getLogger(__name__)

Format = Callable[[Judgement, str | None], Mapping[str, object]]


class Tracing:
    """Probe spans over OTLP (``spans``, None when no OTLP endpoint is set) and the verdict
    writers (Phoenix annotations, Langfuse scores)."""

    def __init__(
        self,
        spans: SpanFactory | None,
        writers: Sequence[tuple[QueuedWriter, Format]] = (),
        counts: SpanCounts | None = None,
    ) -> None:
        self.spans = spans
        self.writers = list(writers)
        self.counts = spans.counts if spans is not None else (counts or SpanCounts())

    def verdicts(
        self, judgements: Sequence[Judgement], status_of: Callable[[Judgement], str | None]
    ) -> None:
        """Each stored judgement onto its span — the probe's (when it was sampled), or the
        user's own for traffic that came as spans: on the span or an evaluation span under it,
        and an annotation or score in each configured tool."""
        spans = self.spans
        for judgement in judgements:
            # a probe's span exists only where the sampler kept it; a user's span always does
            if (
                spans is not None
                and not spans.all
                and judgement.trace_context is None
                and not spans.sampled(probe_trace_id(judgement.probe_id))
            ):
                continue
            status = status_of(judgement)
            if spans is not None:
                spans.evaluation(judgement, status)
            for writer, fmt in self.writers:
                writer.put(fmt(judgement, status))

    def flush(self, timeout_s: float = 10.0) -> bool:
        ok = True
        if self.spans is not None:
            ok = self.spans.flush(timeout_s) and ok
        for writer, _ in self.writers:
            ok = writer.flush(timeout_s) and ok
        return ok

    def shutdown(self, timeout_s: float = 2.0) -> None:
        """Send what is queued within ``timeout_s`` and stop; what is left is lost (counted)."""
        for writer, _ in self.writers:
            writer.flush(timeout_s)
            writer.close(timeout_s)
        if self.spans is not None:
            self.spans.shutdown(timeout_s)


def start_tracing(
    service_name: str,
    *,
    environ: Mapping[str, str] | None = None,
    settings: TracingSettings | None = None,
    exporter: SpanExporter | None = None,
) -> Tracing | None:
    """Tracing as the environment configures it, or None when nothing is configured.

    Spans are made and exported by a process of their own (:mod:`.shipping`); ``exporter``
    replaces that with this exporter object, called from a thread of this process."""
    env = os.environ if environ is None else environ
    settings = settings or TracingSettings()
    counts = SpanCounts()
    spans: SpanFactory | None = None
    if exporter is not None or tracing_enabled(env):
        name = env.get("OTEL_SERVICE_NAME") or service_name
        hold_s = settings.hold_s
        link: Link
        if exporter is not None:
            resource = Resource.create({"service.name": name})
            link = ThreadLink(exporter, resource, counts, hold_s=hold_s)
        else:
            link = ProcessLink(env, name, counts, hold_s=hold_s)
        queue = env_int(env, "OTEL_BSP_MAX_QUEUE_SIZE", DEFAULT_QUEUE)
        spans = SpanFactory(link, counts, queue=queue)
    writers: list[tuple[QueuedWriter, Format]] = []
    if settings.phoenix_url:
        key = settings.phoenix_api_key.get_secret_value() if settings.phoenix_api_key else None
        post = phoenix_poster(settings.phoenix_url, key)
        writers.append((QueuedWriter("phoenix", post, capacity=settings.queue), phoenix_annotation))
    if settings.langfuse_url:
        if not settings.langfuse_public_key or settings.langfuse_secret_key is None:
            raise ValueError(
                "GW_TRACE_LANGFUSE_URL needs GW_TRACE_LANGFUSE_PUBLIC_KEY and"
                " GW_TRACE_LANGFUSE_SECRET_KEY"
            )
        post = langfuse_poster(
            settings.langfuse_url,
            settings.langfuse_public_key,
            settings.langfuse_secret_key.get_secret_value(),
        )
        writers.append((QueuedWriter("langfuse", post, capacity=settings.queue), langfuse_score))
    if spans is None and not writers:
        return None
    if spans is None:
        log.info(
            "verdicts go to %s without OTLP traces of the probes (no OTEL_EXPORTER_OTLP_*)",
            ", ".join(w.name for w, _ in writers),
        )
    return Tracing(spans, writers, counts)


_active: Tracing | None = None


def install(tracing: Tracing | None) -> None:
    """Make ``tracing`` the process's (None: off)."""
    global _active
    _active = tracing


def active() -> Tracing | None:
    return _active
