"""``POST /v1/traces``: OTLP/HTTP spans as an app instrumented for Phoenix or Langfuse sends them,
read as traffic records — so such an app points one more exporter at groundwatch, nothing else.

Each trace of a request becomes at most one record, from OpenInference's attributes: the
question and the answer from the ``input.value`` / ``output.value`` of the trace's outermost
span that has both (the chain or agent span around the whole request, not an inner LLM call),
the retrieved ids and contexts from ``retrieval.documents.N.document.id`` / ``.content`` of any
span of the trace. The target is the resource's ``service.name`` (or ``?target=``). A trace with
no such span is counted in the reply's ``partial_success.rejected_spans`` with the reason; a
body that is not an OTLP request is a 400 with one line.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import orjson
from fastapi import Depends, FastAPI, HTTPException, Query, Request, Response
from google.protobuf.json_format import Parse as parse_json
from google.protobuf.json_format import ParseError
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTracePartialSuccess,
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span
from pydantic import ValidationError

from groundwatch.contracts import MAX_CONTEXTS, MAX_DOC_IDS, TrafficRecord
from groundwatch.runtime.auth import require_token
from groundwatch.runtime.traffic_api import Publish

PROTOBUF = "application/x-protobuf"
_DOC = re.compile(r"^retrieval\.documents\.(\d+)\.document\.(id|content)$")
_NOT_ID = re.compile(r"[^A-Za-z0-9._:@+=-]")


def _value(v: AnyValue) -> Any:
    kind = v.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [_value(x) for x in v.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: _value(kv.value) for kv in v.kvlist_value.values}
    return getattr(v, kind)


def _attributes(kvs: Iterable[KeyValue]) -> dict[str, Any]:
    return {kv.key: _value(kv.value) for kv in kvs}


def target_name(raw: str) -> str:
    """A service name as a target id: characters an id cannot hold become ``-``."""
    name = _NOT_ID.sub("-", raw.strip())[:128].lstrip("-.") or "unknown_service"
    return name if name[0].isalnum() or name[0] == "_" else f"_{name}"[:128]


@dataclass(slots=True)
class _Trace:
    target: str
    question: tuple[int, str, str, Span] | None = None  # (depth, input, output, span)
    docs: dict[int, dict[str, str]] = field(default_factory=dict)
    spans: int = 0


def records_of(request: ExportTraceServiceRequest, target: str | None = None) -> tuple[
    list[TrafficRecord], int, str
]:  # fmt: skip
    """The records of an OTLP request, with the spans of traces that gave none and why."""
    traces: dict[bytes, _Trace] = {}
    for rs in request.resource_spans:
        service = _attributes(rs.resource.attributes).get("service.name")
        name = target or target_name(str(service or "unknown_service"))
        for ss in rs.scope_spans:
            parents = {s.span_id: s.parent_span_id for s in ss.spans}
            for span in ss.spans:
                t = traces.setdefault(span.trace_id, _Trace(name))
                t.spans += 1
                attrs = _attributes(span.attributes)
                for key, value in attrs.items():
                    doc = _DOC.match(key)
                    if doc is not None and value is not None:
                        t.docs.setdefault(int(doc.group(1)), {})[doc.group(2)] = str(value)
                question, answer = attrs.get("input.value"), attrs.get("output.value")
                if not isinstance(question, str) or not isinstance(answer, str):
                    continue
                depth, up = 0, span.parent_span_id
                while up and depth < 64:
                    depth, up = depth + 1, parents.get(up, b"")
                if t.question is None or depth < t.question[0]:
                    t.question = (depth, question, answer, span)
    records: list[TrafficRecord] = []
    rejected = 0
    reason = ""
    for trace_id, t in traces.items():
        if t.question is None:
            rejected += t.spans
            reason = "a trace without a span holding input.value and output.value"
            continue
        _, question, answer, span = t.question
        docs = [t.docs[i] for i in sorted(t.docs)]
        try:
            records.append(
                TrafficRecord(
                    target=t.target,
                    question=question,
                    answer=answer,
                    retrieved_ids=[d["id"] for d in docs if "id" in d][:MAX_DOC_IDS],
                    contexts=[d["content"] for d in docs if "content" in d][:MAX_CONTEXTS],
                    asked_at=datetime.fromtimestamp(span.start_time_unix_nano / 1e9, UTC),
                    trace_id=trace_id.hex() or None,
                    span_id=span.span_id.hex() or None,
                )
            )
        except ValidationError as exc:
            rejected += t.spans
            first = exc.errors(include_url=False)[0]
            reason = f"{'.'.join(map(str, first['loc']))}: {first['msg']}"
    return records, rejected, reason


_ID_KEYS = frozenset({"traceId", "spanId", "parentSpanId"})
_HEX = re.compile(r"^(?:[0-9a-fA-F]{2})+$")


def _hex_ids_as_base64(body: bytes) -> bytes:
    """OTLP/JSON writes trace and span ids in hex, protobuf's JSON mapping reads bytes as
    base64: the ids are converted before parsing, so a record keeps the trace's real id."""
    data = orjson.loads(body)

    def fix(node: Any) -> Any:
        if isinstance(node, dict):
            return {
                k: base64.b64encode(bytes.fromhex(v)).decode()
                if k in _ID_KEYS and isinstance(v, str) and _HEX.match(v)
                else fix(v)
                for k, v in node.items()
            }
        if isinstance(node, list):
            return [fix(v) for v in node]
        return node

    return orjson.dumps(fix(data))


def add_otlp_routes(app: FastAPI, publish: Publish, *, token: str | None) -> None:
    """``POST /v1/traces`` (OTLP/HTTP, protobuf or JSON), guarded by the bearer ``token``."""

    @app.post("/v1/traces", tags=["traffic"], dependencies=[Depends(require_token(token))])
    async def traces(request: Request, target: str | None = Query(None)) -> Response:
        """OpenInference spans in, one traffic record per trace that asked and answered."""
        body = await request.body()
        kind = request.headers.get("content-type", PROTOBUF).split(";")[0].strip()
        message = ExportTraceServiceRequest()
        try:
            if kind == "application/json":
                parse_json(_hex_ids_as_base64(body), message)
            else:
                message.ParseFromString(body)
        except (DecodeError, ParseError, ValueError) as exc:
            raise HTTPException(400, f"not an OTLP trace export request: {exc}") from None
        records, rejected, reason = records_of(message, target)
        if records:
            await publish(records)
        reply = ExportTraceServiceResponse(
            partial_success=ExportTracePartialSuccess(rejected_spans=rejected, error_message=reason)
            if rejected
            else None
        )
        if kind == "application/json":
            from google.protobuf.json_format import MessageToJson

            return Response(MessageToJson(reply), media_type="application/json")
        return Response(reply.SerializeToString(), media_type=PROTOBUF)
