"""The exporter process, started as the services start it (``start_tracing`` with an OTLP
endpoint): each probe's span with its verdict reaches an OTLP/HTTP collector, and spans a dead
collector refuses are counted failed — never waited for. It is a process of its own, so these
are not unit tests; the bytes it writes are (tests/unit/test_tracing.py)."""

from __future__ import annotations

import http.server
import threading
from typing import Any, ClassVar

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from groundwatch.adapters.tracing import probe_span_id, start_tracing
from groundwatch.contracts import Judgement, Verdict
from tests.unit.test_tracing import _ask, _probe

pytestmark = pytest.mark.integration


def test_a_dead_collector_fails_spans_counted() -> None:
    tracing = start_tracing(
        "t",
        environ={
            "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9",
            "OTEL_EXPORTER_OTLP_TIMEOUT": "1",
        },
    )
    assert tracing is not None and tracing.spans is not None
    try:
        for i in range(20):
            _ask(tracing.spans, _probe(i))
        assert tracing.flush(60)
        assert tracing.counts.ended == 20
        assert tracing.counts.failed == 20 and tracing.counts.exported == 0
    finally:
        tracing.shutdown(10)


class _Collector(http.server.BaseHTTPRequestHandler):
    received: ClassVar[list[ExportTraceServiceRequest]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        type(self).received.append(ExportTraceServiceRequest.FromString(body))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


def test_the_exporter_process_sends_each_probe_with_its_verdict_over_otlp_http() -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Collector)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    _Collector.received = []
    url = f"http://127.0.0.1:{server.server_address[1]}"
    tracing = start_tracing("gw-test", environ={"OTEL_EXPORTER_OTLP_ENDPOINT": url})
    assert tracing is not None and tracing.spans is not None
    try:
        probes = [_probe(i) for i in range(50)]
        for probe in probes:
            response = _ask(tracing.spans, probe)
            judgement = Judgement.for_response(response, verdict=Verdict.CORRECT, tier="exact")
            tracing.verdicts([judgement], lambda j: "robust")
        assert tracing.flush(60)
        assert tracing.counts.exported == tracing.counts.ended == 50
    finally:
        tracing.shutdown(10)
        server.shutdown()
    spans = [
        span
        for request in _Collector.received
        for rs in request.resource_spans
        for ss in rs.scope_spans
        for span in ss.spans
    ]
    resources = {
        kv.value.string_value
        for request in _Collector.received
        for rs in request.resource_spans
        for kv in rs.resource.attributes
        if kv.key == "service.name"
    }
    assert resources == {"gw-test"}
    assert {int.from_bytes(s.span_id, "big") for s in spans} == {
        probe_span_id(p.probe_id) for p in probes
    }
    for span in spans:
        attrs = {kv.key: kv.value for kv in span.attributes}
        assert attrs["groundwatch.verdict"].string_value == "correct"
        assert [e.name for e in span.events] == ["gen_ai.evaluation.result"]
