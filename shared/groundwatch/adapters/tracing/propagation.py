"""W3C trace context on outgoing requests, so a target's own spans join the probe's trace."""

from __future__ import annotations

from collections.abc import Mapping

from opentelemetry import trace
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from groundwatch.adapters.tracing.shipping import current_probe_span

_W3C = TraceContextTextMapPropagator()


def with_trace_context(headers: Mapping[str, str]) -> Mapping[str, str]:
    """``headers`` plus ``traceparent`` of the probe span whose call is running (or of the
    current OpenTelemetry span, under a program's own tracing); the same mapping, not a copy,
    when there is none (probes not traced)."""
    probe = current_probe_span()
    if probe is not None:
        return {**headers, "traceparent": f"00-{probe[0]:032x}-{probe[1]:016x}-01"}
    if not trace.get_current_span().get_span_context().is_valid:
        return headers
    out = dict(headers)
    _W3C.inject(out)
    return out
