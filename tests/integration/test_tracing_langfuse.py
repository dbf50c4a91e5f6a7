"""Verdicts as Langfuse scores, through Langfuse's ingestion API as it is documented (a Langfuse
server needs ClickHouse and cannot run here: an HTTP server of this test takes the requests and
answers as Langfuse answers, and the test reads what was sent)."""

from __future__ import annotations

import base64
import json
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from groundwatch.adapters.tracing import (
    TracingSettings,
    probe_span_id,
    probe_trace_id,
    span_hex,
    start_tracing,
    trace_hex,
)
from groundwatch.contracts import Judgement, Probe, RagResponse, Verdict
from groundwatch.core.model import Expected

pytestmark = pytest.mark.integration


@contextmanager
def langfuse(received: list[dict[str, Any]], status: int = 207) -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
            received.append({"path": self.path, "auth": self.headers.get("Authorization"), **body})
            reply = json.dumps(
                {"successes": [{"id": e["id"], "status": 201} for e in body["batch"]], "errors": []}
            ).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, *_args: Any) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _judgement(verdict: Verdict) -> Judgement:
    probe = Probe(
        probe_id=uuid.uuid4(),
        run_id="r1",
        dataset_id="d",
        group_id="g1",
        form_id="f1",
        cohort="short",
        target="mine",
        query="City of 'Saltire Data Hall'?",
        expected=Expected(values=["Espoo"]),
    )
    response = RagResponse.answered(probe, "Oslo", [], [], [], 0.1)
    return Judgement.for_response(response, verdict=verdict, tier="conflict", reason="gave Oslo")


def test_each_verdict_becomes_a_score_on_its_trace_and_observation() -> None:
    received: list[dict[str, Any]] = []
    with langfuse(received) as url:
        settings = TracingSettings(
            langfuse_url=url, langfuse_public_key="pk-1", langfuse_secret_key="sk-1"
        )
        tracing = start_tracing("t", environ={}, settings=settings)
        assert tracing is not None and tracing.spans is None
        wrong, undecided = _judgement(Verdict.INCORRECT), _judgement(Verdict.UNDECIDED)
        tracing.verdicts([wrong, undecided], lambda j: "gap")
        assert tracing.flush(30)
        tracing.shutdown()
    (request,) = received
    assert request["path"] == "/api/public/ingestion"
    assert request["auth"] == "Basic " + base64.b64encode(b"pk-1:sk-1").decode()
    first, second = (event["body"] for event in request["batch"])
    assert {e["type"] for e in request["batch"]} == {"score-create"}
    assert first["traceId"] == trace_hex(probe_trace_id(wrong.probe_id))
    assert first["observationId"] == span_hex(probe_span_id(wrong.probe_id))
    assert (first["name"], first["value"], first["dataType"]) == (
        "groundwatch.verdict",
        0.0,
        "NUMERIC",
    )
    assert "gave Oslo" in first["comment"] and "group gap" in first["comment"]
    assert (second["value"], second["dataType"]) == ("undecided", "CATEGORICAL")


def test_langfuse_without_keys_is_refused_in_one_line() -> None:
    with pytest.raises(ValueError, match="GW_TRACE_LANGFUSE_PUBLIC_KEY"):
        start_tracing("t", environ={}, settings=TracingSettings(langfuse_url="http://x"))
