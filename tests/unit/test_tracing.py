"""Probe spans and verdict spans: ids from the probe, attributes, sampling every stage agrees
on, and spans lost to a dead or slow collector counted — never a probe or a verdict."""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from groundwatch.adapters.targets.base import ErrorKind, TargetError, TargetReply
from groundwatch.adapters.tracing import (
    QueuedWriter,
    SpanCounts,
    SpanFactory,
    Tracing,
    install,
    probe_span_id,
    probe_trace_id,
    record_response,
    start_tracing,
)
from groundwatch.adapters.tracing.propagation import with_trace_context
from groundwatch.adapters.tracing.spans import make_provider
from groundwatch.contracts import Judgement, Probe, RagResponse, TargetStatus, Verdict
from groundwatch.core.model import Expected
from groundwatch.stages.runner.lanes import Runner

pytestmark = pytest.mark.unit


def _probe(i: int = 0, target: str = "mine") -> Probe:
    return Probe(
        probe_id=uuid.uuid4(),
        run_id="r1",
        series="s",
        cycle=3,
        dataset_id="d",
        group_id=f"g{i:04d}",
        form_id="f1",
        cohort="short",
        target=target,
        query=f"What is the city of 'Site {i}'?",
        expected=Expected(values=["Espoo"]),
    )


@pytest.fixture
def memory() -> Iterator[tuple[SpanFactory, InMemorySpanExporter, SpanCounts]]:
    exporter = InMemorySpanExporter()
    counts = SpanCounts()
    provider = make_provider(exporter, service_name="t", counts=counts, schedule_delay_millis=10)
    yield SpanFactory(provider), exporter, counts
    provider.shutdown()


def test_a_probes_ids_follow_from_its_probe_id_alone() -> None:
    pid = uuid.uuid4()
    assert probe_trace_id(pid) == probe_trace_id(str(pid)) != probe_trace_id(uuid.uuid4())
    assert 0 < probe_trace_id(pid) < 2**128 and 0 < probe_span_id(pid) < 2**64
    # a ratio sampler reads the low 64 bits: they must be spread, not fixed by UUIDv7's variant
    lows = [
        probe_trace_id(uuid.UUID(int=(i << 80) | (0x7 << 76) | (0b10 << 62))) for i in range(64)
    ]
    assert any(low & (1 << 63) for low in lows) and not all(low & (1 << 63) for low in lows)


def test_probe_span_carries_the_probe_and_the_answer(
    memory: tuple[SpanFactory, InMemorySpanExporter, SpanCounts],
) -> None:
    spans, exporter, _ = memory
    probe = _probe()
    with spans.probe(probe) as span:
        headers = with_trace_context({"X": "1"})
        response = RagResponse.answered(probe, "Espoo.", ["d1"], ["Espoo is a city."], [], 0.2)
        record_response(span, response)
    spans.provider.force_flush()
    (done,) = exporter.get_finished_spans()
    assert done.context.trace_id == probe_trace_id(probe.probe_id)
    assert done.context.span_id == probe_span_id(probe.probe_id)
    trace_hex = format(done.context.trace_id, "032x")
    span_hex = format(done.context.span_id, "016x")
    assert headers["traceparent"] == f"00-{trace_hex}-{span_hex}-01"
    attrs = dict(done.attributes or {})
    assert attrs["openinference.span.kind"] == "CHAIN"
    assert attrs["input.value"] == probe.query
    assert attrs["output.value"] == "Espoo."
    assert attrs["retrieval.documents.0.document.id"] == "d1"
    assert attrs["retrieval.documents.0.document.content"] == "Espoo is a city."
    assert attrs["groundwatch.group_id"] == probe.group_id and attrs["groundwatch.cycle"] == 3


def test_outside_a_probe_span_no_header_is_added() -> None:
    headers = {"Authorization": "Bearer x"}
    assert with_trace_context(headers) is headers


def test_verdict_is_an_evaluator_span_under_the_probe_span(
    memory: tuple[SpanFactory, InMemorySpanExporter, SpanCounts],
) -> None:
    spans, exporter, _ = memory
    probe = _probe()
    response = RagResponse.answered(probe, "Oslo", [], [], [], 0.1)
    judgement = Judgement.for_response(
        response, verdict=Verdict.INCORRECT, tier="conflict", reason="gave Oslo, not Espoo"
    )
    spans.evaluation(judgement, "gap")
    spans.provider.force_flush()
    (ev,) = exporter.get_finished_spans()
    assert ev.parent is not None and ev.parent.span_id == probe_span_id(probe.probe_id)
    assert ev.context.trace_id == probe_trace_id(probe.probe_id)
    (event,) = ev.events
    assert event.name == "gen_ai.evaluation.result"
    assert dict(event.attributes or {}) == {
        "gen_ai.evaluation.name": "groundwatch.verdict",
        "gen_ai.evaluation.score.label": "incorrect",
        "gen_ai.evaluation.score.value": 0.0,
        "gen_ai.evaluation.explanation": "gave Oslo, not Espoo",
        "groundwatch.tier": "conflict",
        "groundwatch.verdict": "incorrect",
        "groundwatch.group_status": "gap",
    }


def test_every_stage_agrees_which_probes_are_sampled(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_TRACES_SAMPLER", "traceidratio")
    monkeypatch.setenv("OTEL_TRACES_SAMPLER_ARG", "0.5")
    exporter = InMemorySpanExporter()
    spans = SpanFactory(make_provider(exporter, service_name="t", counts=SpanCounts()))
    probes = [_probe(i) for i in range(200)]
    for probe in probes:
        with spans.probe(probe):
            pass
        response = RagResponse.answered(probe, "Espoo", [], [], [], 0.1)
        spans.evaluation(
            Judgement.for_response(response, verdict=Verdict.CORRECT, tier="exact"), None
        )
    spans.provider.force_flush()
    finished = exporter.get_finished_spans()
    traced = {s.context.trace_id for s in finished if s.parent is None}
    judged = {s.context.trace_id for s in finished if s.parent is not None}
    assert 50 < len(traced) < 150  # about half
    assert judged == traced  # a verdict exactly where its probe span exists
    spans.provider.shutdown()


class _Blocked(SpanExporter):
    """A collector that does not answer until released."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.exported = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.release.wait(30)
        self.exported += len(spans)
        return SpanExportResult.SUCCESS


def test_a_slow_collector_loses_spans_counted_never_waited_for() -> None:
    counts = SpanCounts()
    blocked = _Blocked()
    provider = make_provider(
        blocked, service_name="t", counts=counts, max_queue_size=16, schedule_delay_millis=5
    )
    spans = SpanFactory(provider)
    for i in range(300):
        with spans.probe(_probe(i)):
            pass  # ends at once whatever the collector does
    blocked.release.set()
    provider.force_flush()
    assert counts.ended == 300
    assert counts.dropped >= 300 - 2 * 16
    assert counts.exported == blocked.exported
    # a full queue is seen as a span goes in; the SDK's thread taking a batch at that instant
    # can make one such count high
    assert 300 <= counts.exported + counts.dropped <= 302
    provider.shutdown()


def test_a_dead_collector_fails_spans_counted() -> None:
    counts = SpanCounts()
    exporter = OTLPSpanExporter(endpoint="http://127.0.0.1:9/v1/traces", timeout=1)
    provider = make_provider(exporter, service_name="t", counts=counts, schedule_delay_millis=5)
    spans = SpanFactory(provider)
    for i in range(20):
        with spans.probe(_probe(i)):
            pass
    provider.force_flush(timeout_millis=30_000)
    assert counts.ended == 20
    assert counts.failed == 20 and counts.exported == 0
    provider.shutdown()


def test_runner_traces_each_probe_and_marks_target_errors() -> None:
    class Half:
        async def ask(self, query: str) -> TargetReply:
            if query.endswith("1'?"):
                raise TargetError(ErrorKind.HTTP_4XX, "404", status_code=404)
            return TargetReply("Espoo", ["d1"])

    exporter = InMemorySpanExporter()
    tracing = Tracing(SpanFactory(make_provider(exporter, service_name="t", counts=SpanCounts())))
    install(tracing)
    try:

        async def go() -> list[RagResponse]:
            async with Runner({"mine": Half()}) as runner:
                return await runner.run_many([_probe(i) for i in range(4)])

        responses = asyncio.run(go())
    finally:
        install(None)
    tracing.flush()
    finished = {s.context.trace_id: s for s in exporter.get_finished_spans()}
    assert set(finished) == {probe_trace_id(r.probe_id) for r in responses}
    for r in responses:
        span = finished[probe_trace_id(r.probe_id)]
        if r.status is TargetStatus.ERROR:
            assert span.status.status_code.name == "ERROR"
            assert dict(span.attributes or {})["error.type"] == "http_4xx"
        else:
            assert dict(span.attributes or {})["output.value"] == "Espoo"
    tracing.shutdown()


def test_nothing_configured_means_no_tracing() -> None:
    assert start_tracing("t", environ={}) is None
    assert (
        start_tracing(
            "t", environ={"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_SDK_DISABLED": "true"}
        )
        is None
    )


def test_a_writer_never_blocks_and_counts_what_it_loses() -> None:
    gate = threading.Event()
    posted: list[int] = []

    def slow(batch: Sequence[Any]) -> None:
        gate.wait(30)
        posted.append(len(batch))

    writer = QueuedWriter("slow", slow, capacity=10, interval_s=0.01)
    for i in range(1000):
        writer.put({"i": i})
    gate.set()
    assert writer.flush(30)
    writer.close()
    assert writer.counts.sent == sum(posted)
    assert writer.counts.sent + writer.counts.dropped == 1000
    assert writer.counts.dropped >= 1000 - 2 * 10 - 500


def test_a_refusing_tool_is_retried_then_counted_failed() -> None:
    calls: list[int] = []

    def refuse(batch: Sequence[Any]) -> None:
        calls.append(len(batch))
        raise RuntimeError("401 Unauthorized")

    writer = QueuedWriter("refusing", refuse, interval_s=0.01, attempts=2)
    for i in range(5):
        writer.put({"i": i})
    assert writer.flush(30)
    writer.close()
    assert writer.counts.failed == 5 and writer.counts.sent == 0
    assert calls == [5, 5]
