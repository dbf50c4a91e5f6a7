"""Records into OpenTelemetry spans, and a probe's verdict onto its own span when it comes soon.

Where one process probes and judges (``groundwatch run``, the demo, the embedded pipeline) a
probe's verdict follows its call within a second or so: the probe span is held that long
(``hold_s``) and, when the verdict comes, carries it — the ``gen_ai.evaluation.result`` event
and the verdict's attributes — so a probe costs one span, not two. A verdict whose probe span is
not held (judged in another process, judged late, or traffic that came as a user's span) becomes
an EVALUATOR span under the span it judges, which is how OpenInference shows evaluations made
elsewhere. Either way the verdict is on the probe's trace.

A span is made by a builder: the SDK's :class:`ReadableSpan` (what every SDK exporter takes:
an exporter object of the caller's) or its OTLP bytes (:mod:`.otlp_wire`: the exporter
process). Either is built here rather than by a ``Tracer`` because it describes a call that
already ended, with ids that follow from the probe id.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from typing import Any, Generic, Protocol, TypeVar

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, SpanKind, TraceFlags
from opentelemetry.trace.status import Status, StatusCode

from groundwatch.adapters.tracing import otlp_wire
from groundwatch.adapters.tracing.ids import probe_ids, verdict_span
from groundwatch.adapters.tracing.spans import (
    EVALUATION_EVENT,
    PROBE,
    evaluation_attributes,
    probe_attributes,
)

_SAMPLED = TraceFlags(TraceFlags.SAMPLED)
_SCOPE = InstrumentationScope("groundwatch")
_ERROR_CHARS = 4096


T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)


class Builder(Protocol[T_co]):
    def probe(self, record: list[Any], verdict: list[Any] | None) -> T_co: ...
    def evaluation(self, verdict: list[Any]) -> T_co: ...


class SpanAssembler(Generic[T]):
    """Turns records into spans; holds each probe span up to ``hold_s`` for its verdict."""

    def __init__(self, builder: Builder[T], hold_s: float = 5.0, max_held: int = 100_000) -> None:
        self.builder = builder
        self.hold_s = hold_s
        #: spans held at most (memory stays bounded however far judging falls behind)
        self.max_held = max_held
        #: probe id → (the probe record, when it came): waiting for the verdict
        self._held: dict[str, tuple[list[Any], float]] = {}
        self._ready: list[T] = []

    def add(self, records: Iterable[list[Any]], now: float) -> None:
        held, ready, builder = self._held, self._ready, self.builder
        for record in records:
            if record[0] == PROBE:
                if self.hold_s <= 0:
                    ready.append(builder.probe(record, None))
                    continue
                if len(held) >= self.max_held:  # the oldest goes without its verdict
                    oldest = next(iter(held))
                    ready.append(builder.probe(held.pop(oldest)[0], None))
                held[record[1]] = (record, now)
                continue
            waiting = held.pop(record[1], None) if record[2] is None else None
            if waiting is not None:
                ready.append(builder.probe(waiting[0], record))
            else:
                ready.append(builder.evaluation(record))

    def take(self, now: float, everything: bool = False) -> list[T]:
        """The spans made so far, with every probe span held longer than ``hold_s`` (or every
        one, ``everything``: a flush) released without a verdict."""
        held = self._held
        if held:
            cutoff = now - self.hold_s
            # records come in time order: the oldest held are first in the dict
            for probe_id, (record, since) in list(held.items()):
                if not everything and since > cutoff:
                    break
                del held[probe_id]
                self._ready.append(self.builder.probe(record, None))
        ready, self._ready = self._ready, []
        return ready

    @property
    def held(self) -> int:
        return len(self._held)


def _status(record: list[Any]) -> tuple[StatusCode, str]:
    error_kind = record[14]
    if error_kind is None:
        return StatusCode.UNSET, ""
    return StatusCode.ERROR, (record[15] or error_kind)[:_ERROR_CHARS]


def _evaluation_span_id() -> int:
    return random.getrandbits(64) or 1  # a span of its own: a span may be judged twice


class SdkSpans:
    """Builds the SDK's ``ReadableSpan``."""

    def __init__(self, resource: Resource) -> None:
        self.resource = resource

    def probe(self, record: list[Any], verdict: list[Any] | None) -> ReadableSpan:
        attrs = probe_attributes(record)
        events: tuple[Event, ...] = ()
        if verdict is not None:
            evaluation = evaluation_attributes(verdict)
            events = (Event(EVALUATION_EVENT, evaluation, timestamp=verdict[8]),)
            attrs.update(evaluation)
        code, message = _status(record)
        return ReadableSpan(
            name=f"groundwatch.probe {record[5]}",
            context=SpanContext(*probe_ids(record[1]), False, _SAMPLED),
            resource=self.resource,
            attributes=attrs,
            events=events,
            kind=SpanKind.CLIENT,
            status=Status(code, message or None),
            start_time=record[2],
            end_time=record[3],
            instrumentation_scope=_SCOPE,
        )

    def evaluation(self, verdict: list[Any]) -> ReadableSpan:
        trace_id, parent_id = verdict_span(verdict[1], verdict[2])
        attrs = evaluation_attributes(verdict)
        at = verdict[8]
        return ReadableSpan(
            name="groundwatch.evaluation",
            context=SpanContext(trace_id, _evaluation_span_id(), False, _SAMPLED),
            parent=SpanContext(trace_id, parent_id, True, _SAMPLED),
            resource=self.resource,
            attributes={**evaluator_attributes(verdict), **attrs},
            events=(Event(EVALUATION_EVENT, attrs, timestamp=at),),
            kind=SpanKind.INTERNAL,
            start_time=at,
            end_time=at,
            instrumentation_scope=_SCOPE,
        )


def evaluator_attributes(verdict: list[Any]) -> dict[str, Any]:
    return {
        "openinference.span.kind": "EVALUATOR",
        "output.value": verdict[4],
        "groundwatch.group_id": verdict[3],
    }


class WireSpans:
    """Builds OTLP ``Span`` bytes (:mod:`.otlp_wire`): the same spans as :class:`SdkSpans`."""

    def probe(self, record: list[Any], verdict: list[Any] | None) -> bytes:
        attrs = otlp_wire.attributes(probe_attributes(record), otlp_wire.SPAN_ATTRIBUTES)
        events = b""
        if verdict is not None:
            evaluation = evaluation_attributes(verdict)
            attrs += otlp_wire.attributes(evaluation, otlp_wire.SPAN_ATTRIBUTES)
            events = otlp_wire.event(
                EVALUATION_EVENT,
                verdict[8],
                otlp_wire.attributes(evaluation, otlp_wire.EVENT_ATTRIBUTES),
            )
        code, message = _status(record)
        trace_id, span_id = probe_ids(record[1])
        return otlp_wire.span(
            trace_id=trace_id,
            span_id=span_id,
            name=f"groundwatch.probe {record[5]}",
            kind=otlp_wire.KIND_CLIENT,
            start_ns=record[2],
            end_ns=record[3],
            encoded_attributes=attrs,
            events=events,
            status_code=code.value,
            status_message=message,
        )

    def evaluation(self, verdict: list[Any]) -> bytes:
        trace_id, parent_id = verdict_span(verdict[1], verdict[2])
        evaluation = evaluation_attributes(verdict)
        at = verdict[8]
        on_span = {**evaluator_attributes(verdict), **evaluation}
        return otlp_wire.span(
            trace_id=trace_id,
            span_id=_evaluation_span_id(),
            parent_id=parent_id,
            name="groundwatch.evaluation",
            kind=otlp_wire.KIND_INTERNAL,
            start_ns=at,
            end_ns=at,
            encoded_attributes=otlp_wire.attributes(on_span, otlp_wire.SPAN_ATTRIBUTES),
            events=otlp_wire.event(
                EVALUATION_EVENT, at, otlp_wire.attributes(evaluation, otlp_wire.EVENT_ATTRIBUTES)
            ),
        )
