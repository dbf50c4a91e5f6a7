"""W3C trace context on outgoing requests, so a target's own spans join the probe's trace."""

from __future__ import annotations

from collections.abc import Mapping

from opentelemetry import trace
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

_W3C = TraceContextTextMapPropagator()


def with_trace_context(headers: Mapping[str, str]) -> Mapping[str, str]:
    """``headers`` plus ``traceparent`` (and ``tracestate``) of the current span, when one is
    recording; the same mapping, not a copy, when none is (probes not traced)."""
    if not trace.get_current_span().get_span_context().is_valid:
        return headers
    out = dict(headers)
    _W3C.inject(out)
    return out
