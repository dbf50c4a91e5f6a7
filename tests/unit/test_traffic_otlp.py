"""POST /v1/traces: an OpenTelemetry-instrumented app's OpenInference spans become traffic."""

from __future__ import annotations

import base64
import sqlite3
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from fastapi import FastAPI
from google.protobuf.json_format import MessageToJson
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from groundwatch.adapters.sources.generate import generate_groups
from groundwatch.contracts import RagResponse, TrafficRecord
from groundwatch.core.model import SemanticGroup, Verdict
from groundwatch.runtime.otlp import PROTOBUF, add_otlp_routes, target_name
from groundwatch.stages.judge.stage import JudgeStage
from groundwatch.stages.judge.tiered import TieredJudge
from groundwatch.stages.traffic.stage import TrafficStage
from tests.unit.traffic_questions import FLEET

TOKEN = "otlp-secret"


@pytest.fixture(scope="module")
def groups(tmp_path_factory: pytest.TempPathFactory) -> list[SemanticGroup]:
    db: Path = tmp_path_factory.mktemp("traffic") / "fleet.sqlite"
    with sqlite3.connect(db) as conn:
        conn.executescript(FLEET)
    return generate_groups(f"sqlite:///{db}", k=2, cohorts=("short",), dataset_id="fleet").groups


def _app_spans() -> list[ReadableSpan]:
    """What an app instrumented with OpenInference's conventions records for two requests and
    one background call."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "ship bot"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("shipbot")
    for question, answer, doc in (
        ("who is the captain of the Pacific Heron", "Diego Fuentes.", "vessel-2"),
        ("Rotterdam berths", "Rotterdam has 57 berths.", "port-1"),
    ):
        with tracer.start_as_current_span("rag") as root:
            root.set_attribute("openinference.span.kind", "CHAIN")
            root.set_attribute("input.value", question)
            root.set_attribute("output.value", answer)
            with tracer.start_as_current_span("retrieve") as r:
                r.set_attribute("openinference.span.kind", "RETRIEVER")
                r.set_attribute("retrieval.documents.0.document.id", doc)
                r.set_attribute("retrieval.documents.0.document.content", f"{doc} text")
            with tracer.start_as_current_span("llm") as llm:  # an inner call: not the question
                llm.set_attribute("input.value", f"Context: ... Question: {question}")
                llm.set_attribute("output.value", answer)
    with tracer.start_as_current_span("warmup"):
        pass
    provider.shutdown()
    return list(exporter.get_finished_spans())


def _otlp_json(text: str) -> bytes:
    """protobuf's JSON with its base64 ids in hex, as OTLP/JSON exporters write them."""
    data = orjson.loads(text)

    def fix(node: Any) -> Any:
        if isinstance(node, dict):
            return {
                k: base64.b64decode(v).hex()
                if k in ("traceId", "spanId", "parentSpanId")
                else fix(v)
                for k, v in node.items()
            }
        return [fix(v) for v in node] if isinstance(node, list) else node

    return orjson.dumps(fix(data))


async def test_openinference_spans_are_judged_as_traffic(groups: list[SemanticGroup]) -> None:
    received: list[TrafficRecord] = []

    async def publish(records: object) -> None:
        received.extend(records)  # type: ignore[call-overload]

    app = FastAPI()
    add_otlp_routes(app, publish, token=TOKEN)
    body = encode_spans(_app_spans()).SerializeToString()
    auth = {"Authorization": f"Bearer {TOKEN}", "Content-Type": PROTOBUF}
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://gw") as h:
        assert (await h.post("/v1/traces", content=body)).status_code == 401
        sent = await h.post("/v1/traces", content=body, headers=auth)
        assert sent.status_code == 200
        reply = ExportTraceServiceResponse.FromString(sent.content)
        assert reply.partial_success.rejected_spans == 1  # the warm-up trace asked nothing
        as_json = _otlp_json(MessageToJson(encode_spans(_app_spans())))
        json_auth = {**auth, "Content-Type": "application/json"}
        sent_json = await h.post("/v1/traces", content=as_json, headers=json_auth)
        assert sent_json.status_code == 200 and len(received) == 4
        assert all(r.trace_id is not None and len(r.trace_id) == 32 for r in received[2:])
        del received[2:]
        junk = await h.post("/v1/traces", content=b"\xff\x00junk", headers=auth)
        assert junk.status_code == 400 and "OTLP" in junk.json()["detail"]
    assert [r.question for r in received] == [
        "who is the captain of the Pacific Heron",
        "Rotterdam berths",
    ]
    assert {r.target for r in received} == {"ship-bot"}
    assert received[0].retrieved_ids == ["vessel-2"] and received[0].contexts == ["vessel-2 text"]
    assert received[0].trace_id is not None and len(received[0].trace_id) == 32

    stage = TrafficStage(groups, dataset_id="fleet")
    responses = [r for r in await stage.handle(received) if isinstance(r, RagResponse)]
    judged = {j.query: j.verdict for j in await JudgeStage(TieredJudge().judge).handle(responses)}
    assert judged == {
        "who is the captain of the Pacific Heron": Verdict.CORRECT,
        "Rotterdam berths": Verdict.INCORRECT,
    }


def test_service_names_become_target_ids() -> None:
    assert target_name("ship bot") == "ship-bot"
    assert target_name("  rag/api v2 ") == "rag-api-v2"
    assert target_name("") == "unknown_service"


async def test_a_traffic_verdict_is_written_onto_the_users_own_span(
    groups: list[SemanticGroup],
) -> None:
    """The app's span that carried the answer gets the verdict: the evaluation span is its
    child, and the Phoenix annotation and Langfuse score name its trace and span."""
    from opentelemetry.sdk.resources import Resource

    from groundwatch.adapters.tracing import SpanCounts, SpanFactory
    from groundwatch.adapters.tracing.shipping import ThreadLink
    from groundwatch.adapters.tracing.writers import langfuse_score, phoenix_annotation

    received: list[TrafficRecord] = []

    async def publish(records: object) -> None:
        received.extend(records)  # type: ignore[call-overload]

    app = FastAPI()
    add_otlp_routes(app, publish, token=TOKEN)
    spans = _app_spans()
    auth = {"Authorization": f"Bearer {TOKEN}", "Content-Type": PROTOBUF}
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://gw") as h:
        body = encode_spans(spans).SerializeToString()
        assert (await h.post("/v1/traces", content=body, headers=auth)).status_code == 200
    roots = {s.attributes["input.value"]: s for s in spans if s.name == "rag" and s.attributes}
    stage = TrafficStage(groups, dataset_id="fleet")
    responses = [r for r in await stage.handle(received) if isinstance(r, RagResponse)]
    judgements = await JudgeStage(TieredJudge().judge).handle(responses)
    assert judgements

    exporter = InMemorySpanExporter()
    counts = SpanCounts()
    link = ThreadLink(exporter, Resource.create({"service.name": "gw"}), counts)
    factory = SpanFactory(link, counts)
    for j in judgements:
        user = roots[j.query].context
        trace_hex, span_hex = format(user.trace_id, "032x"), format(user.span_id, "016x")
        assert j.trace_context == f"{trace_hex}-{span_hex}"
        factory.evaluation(j, "robust")
        assert phoenix_annotation(j, "robust")["span_id"] == span_hex
        score = langfuse_score(j, "robust")["body"]
        assert (score["traceId"], score["observationId"]) == (trace_hex, span_hex)
    assert factory.flush()
    evaluations = exporter.get_finished_spans()
    assert {(e.context.trace_id, e.parent.span_id) for e in evaluations if e.parent} == {
        (roots[j.query].context.trace_id, roots[j.query].context.span_id) for j in judgements
    }
    factory.shutdown()
