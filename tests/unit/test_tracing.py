"""Probe spans and their verdicts: ids from the probe, attributes, the verdict on the probe span
or under it, sampling every stage agrees on, the OTLP bytes the exporter process writes, and
spans lost to a slow collector counted — never a probe or a verdict. The exporter process itself,
started, is tests/integration/test_tracing_exporter_process.py's."""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from groundwatch.adapters.targets.base import ErrorKind, TargetError, TargetReply
from groundwatch.adapters.tracing import (
    QueuedWriter,
    SpanCounts,
    SpanFactory,
    Tracing,
    exemplar_of,
    install,
    otlp_wire,
    probe_span_id,
    probe_trace_id,
    start_tracing,
)
from groundwatch.adapters.tracing.assemble import SdkSpans, WireSpans
from groundwatch.adapters.tracing.propagation import with_trace_context
from groundwatch.adapters.tracing.shipping import ThreadLink
from groundwatch.adapters.tracing.spans import probe_record, verdict_record
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


def _factory(
    exporter: SpanExporter, hold_s: float = 2.0, queue: int = 20_000, delay_s: float = 1.0
) -> SpanFactory:
    counts = SpanCounts()
    link = ThreadLink(
        exporter, Resource.create({"service.name": "t"}), counts, hold_s=hold_s, delay_s=delay_s
    )
    return SpanFactory(link, counts, queue=queue, interval_s=0.01)


@pytest.fixture
def memory() -> Iterator[tuple[SpanFactory, InMemorySpanExporter]]:
    exporter = InMemorySpanExporter()
    spans = _factory(exporter)
    yield spans, exporter
    spans.shutdown()


def _ask(spans: SpanFactory, probe: Probe, response: RagResponse | None = None) -> RagResponse:
    """What a runner's lane does around a target call."""
    start = time.time_ns()
    entered = spans.enter(probe)
    response = response or RagResponse.answered(probe, "Espoo", [], [], [], 0.1)
    if entered is not None:
        spans.leave(entered, probe, response, start)
    return response


def test_a_probes_ids_follow_from_its_probe_id_alone() -> None:
    pid = uuid.uuid4()
    assert probe_trace_id(pid) == probe_trace_id(str(pid)) != probe_trace_id(uuid.uuid4())
    assert 0 < probe_trace_id(pid) < 2**128 and 0 < probe_span_id(pid) < 2**64
    # a ratio sampler reads the low 64 bits: they must be spread, not fixed by UUIDv7's variant
    lows = [
        probe_trace_id(uuid.UUID(int=(i << 80) | (0x7 << 76) | (0b10 << 62))) for i in range(64)
    ]
    assert any(low & (1 << 63) for low in lows) and not all(low & (1 << 63) for low in lows)


def test_probe_span_carries_the_probe_the_answer_and_soon_its_verdict(
    memory: tuple[SpanFactory, InMemorySpanExporter],
) -> None:
    spans, exporter = memory
    probe = _probe()
    start = time.time_ns()
    entered = spans.enter(probe)
    assert entered is not None
    headers = with_trace_context({"X": "1"})
    response = RagResponse.answered(probe, "Espoo.", ["d1"], ["Espoo is a city."], [], 0.2)
    spans.leave(entered, probe, response, start)
    assert with_trace_context({}) == {}  # the call ended: no longer current
    judgement = Judgement.for_response(response, verdict=Verdict.CORRECT, tier="exact")
    spans.evaluation(judgement, "robust")
    assert spans.flush()
    (done,) = exporter.get_finished_spans()  # one span: the verdict came while it was held
    assert done.context.trace_id == probe_trace_id(probe.probe_id)
    assert done.context.span_id == probe_span_id(probe.probe_id)
    assert done.parent is None and start <= (done.start_time or 0) <= (done.end_time or 0)
    trace_hex = format(done.context.trace_id, "032x")
    span_hex = format(done.context.span_id, "016x")
    assert headers == {"X": "1", "traceparent": f"00-{trace_hex}-{span_hex}-01"}
    attrs = dict(done.attributes or {})
    assert attrs["openinference.span.kind"] == "CHAIN"
    assert attrs["input.value"] == probe.query
    assert attrs["output.value"] == "Espoo."
    assert attrs["retrieval.documents.0.document.id"] == "d1"
    assert attrs["retrieval.documents.0.document.content"] == "Espoo is a city."
    assert attrs["groundwatch.group_id"] == probe.group_id and attrs["groundwatch.cycle"] == 3
    assert attrs["groundwatch.verdict"] == "correct"
    assert attrs["groundwatch.group_status"] == "robust"
    (event,) = done.events
    assert event.name == "gen_ai.evaluation.result"
    assert dict(event.attributes or {})["gen_ai.evaluation.score.value"] == 1.0


def test_outside_a_probe_span_no_header_is_added() -> None:
    headers = {"Authorization": "Bearer x"}
    assert with_trace_context(headers) is headers


def test_a_verdict_without_its_probe_span_is_an_evaluator_span_under_it(
    memory: tuple[SpanFactory, InMemorySpanExporter],
) -> None:
    spans, exporter = memory
    probe = _probe()
    response = RagResponse.answered(probe, "Oslo", [], [], [], 0.1)
    judgement = Judgement.for_response(
        response, verdict=Verdict.INCORRECT, tier="conflict", reason="gave Oslo, not Espoo"
    )
    spans.evaluation(judgement, "gap")  # judged here, probed elsewhere
    assert spans.flush()
    (ev,) = exporter.get_finished_spans()
    assert ev.parent is not None and ev.parent.span_id == probe_span_id(probe.probe_id)
    assert ev.context.trace_id == probe_trace_id(probe.probe_id)
    assert dict(ev.attributes or {})["openinference.span.kind"] == "EVALUATOR"
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


def test_a_verdict_after_the_hold_is_an_evaluator_span_beside_the_probe_span() -> None:
    exporter = InMemorySpanExporter()
    spans = _factory(exporter, hold_s=0.0)
    probe = _probe()
    response = _ask(spans, probe)
    spans.evaluation(Judgement.for_response(response, verdict=Verdict.CORRECT, tier="exact"), None)
    assert spans.flush()
    probe_span, ev = sorted(exporter.get_finished_spans(), key=lambda s: s.parent is not None)
    assert not probe_span.events and ev.parent is not None
    assert ev.parent.span_id == probe_span.context.span_id
    spans.shutdown()


def test_every_stage_agrees_which_probes_are_sampled(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_TRACES_SAMPLER", "traceidratio")
    monkeypatch.setenv("OTEL_TRACES_SAMPLER_ARG", "0.5")
    exporter = InMemorySpanExporter()
    spans = _factory(exporter, hold_s=0.0)  # the verdicts as spans of their own, to count
    for i in range(200):
        response = _ask(spans, _probe(i))
        spans.evaluation(
            Judgement.for_response(response, verdict=Verdict.CORRECT, tier="exact"), None
        )
    assert spans.flush()
    finished = exporter.get_finished_spans()
    traced = {s.context.trace_id for s in finished if s.parent is None}
    judged = {s.context.trace_id for s in finished if s.parent is not None}
    assert 50 < len(traced) < 150  # about half
    assert judged == traced  # a verdict exactly where its probe span exists
    spans.shutdown()


def test_the_exporter_processes_bytes_are_the_sdks_encoding_of_the_same_spans() -> None:
    resource = Resource.create({"service.name": "t", "deployment.environment": "test"})
    sdk, wire = SdkSpans(resource), WireSpans()
    probe = _probe()
    answered = RagResponse.answered(
        probe, "Espoo — ä\u00e9", ["d1", "d2"], ["Espoo is a city.", "x" * 2000], [], 0.25
    )
    failed = RagResponse.for_probe(
        probe,
        status=TargetStatus.ERROR,
        error_kind=ErrorKind.HTTP_5XX.value,
        error_detail="503 from the endpoint",
        latency_s=1.5,
    )
    verdict = verdict_record(
        Judgement.for_response(answered, verdict=Verdict.INCORRECT, tier="t", reason="no"), "gap"
    )
    records = [
        (probe_record(probe, answered, 10, 20, "invoke_agent"), verdict),
        (probe_record(probe, answered, 10, 20, "chat"), None),
        (probe_record(probe, failed, 10**18, 10**18 + 5, "invoke_agent"), None),
    ]
    ours = [wire.probe(r, v) for r, v in records] + [wire.evaluation(verdict)]
    theirs = [sdk.probe(r, v) for r, v in records] + [sdk.evaluation(verdict)]
    decoded = MessageToDict(
        ExportTraceServiceRequest.FromString(
            otlp_wire.request(dict(resource.attributes), "groundwatch", ours)
        )
    )
    expected = MessageToDict(encode_spans(theirs))
    for spans in (decoded, expected):
        for span in spans["resourceSpans"][0]["scopeSpans"][0]["spans"]:
            span.pop("flags", None)  # the SDK's is-remote bits: not sent by the wire encoder
            if span.get("parentSpanId"):
                span.pop("spanId")  # an evaluation span's own id is random
    assert decoded == expected


class _Blocked(SpanExporter):
    """A collector that does not answer until released."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()
        self.exported = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.entered.set()
        self.release.wait(30)
        self.exported += len(spans)
        return SpanExportResult.SUCCESS


def test_a_slow_collector_loses_spans_counted_never_waited_for() -> None:
    blocked = _Blocked()
    spans = _factory(blocked, hold_s=0.0, queue=16, delay_s=0.0)
    _ask(spans, _probe(0))
    assert blocked.entered.wait(30)  # the export thread is stuck in the collector from now on
    for i in range(1, 301):
        _ask(spans, _probe(i))  # each ends at once whatever the collector does
    blocked.release.set()
    assert spans.flush(30)
    counts = spans.counts
    assert counts.dropped == 300 - 16  # the queue held 16 while the collector hung
    assert counts.exported == blocked.exported == 1 + 16 == counts.ended
    spans.shutdown()


def test_runner_traces_each_probe_and_marks_target_errors() -> None:
    class Half:
        async def ask(self, query: str) -> TargetReply:
            if query.endswith("1'?"):
                raise TargetError(ErrorKind.HTTP_4XX, "404", status_code=404)
            return TargetReply("Espoo", ["d1"])

    exporter = InMemorySpanExporter()
    tracing = Tracing(_factory(exporter))
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


def test_a_latency_exemplar_names_the_probes_trace(
    memory: tuple[SpanFactory, InMemorySpanExporter],
) -> None:
    spans, _ = memory
    probe = _probe()
    response = RagResponse.answered(probe, "Espoo", [], [], [], 0.1)
    expected = {"trace_id": format(probe_trace_id(probe.probe_id), "032x")}
    assert exemplar_of(response, spans) == expected  # after the call: from the probe id
    entered = spans.enter(probe)
    assert entered is not None
    assert exemplar_of(response, spans) == expected  # during it: the running span's
    spans.leave(entered, probe, response, time.time_ns())
    assert exemplar_of(response, None) is None  # not traced
