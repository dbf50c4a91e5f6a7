"""Spans straight to OTLP protobuf bytes (``opentelemetry/proto/trace/v1/trace.proto``, stable
since OTLP 1.0), for the exporter process.

The SDK's path — a ``ReadableSpan``, ``encode_spans`` building ``opentelemetry-proto``
messages, then serializing them — costs about 200 µs for a probe span with its ~30 attributes,
more than groundwatch spends on the whole probe. Writing the same bytes directly costs a tenth
of that: the attributes are looked up when they repeat (most of a probe's do, cycle after
cycle). Only what groundwatch's spans use is written (string, int, float and bool attributes,
events, status, kind, a parent); ``tests/unit/test_tracing.py`` decodes the bytes with
``opentelemetry-proto`` and compares them with the SDK's encoding of the same spans.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping
from typing import Any

_DOUBLE = struct.Struct("<d")
_FIXED64 = struct.Struct("<Q")

#: SpanKind in OTLP: the API's value + 1.
KIND_INTERNAL, KIND_CLIENT = 1, 3
STATUS_ERROR = 2


_SMALL = [bytes((i,)) for i in range(128)]


def _varint(n: int) -> bytes:
    if n < 0x80:
        return _SMALL[n]
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _field(tag: bytes, payload: bytes) -> bytes:
    """A length-delimited field (wire type 2) whose tag is ``tag``."""
    n = len(payload)
    return tag + (_SMALL[n] if n < 0x80 else _varint(n)) + payload


def _any_value(value: Any) -> bytes:
    if isinstance(value, str):
        return _field(b"\x0a", value.encode("utf-8", "surrogatepass"))
    if isinstance(value, bool):
        return b"\x10\x01" if value else b"\x10\x00"
    if isinstance(value, int):
        return b"\x18" + _varint(value & 0xFFFFFFFFFFFFFFFF)
    if isinstance(value, float):
        return b"\x21" + _DOUBLE.pack(value)
    return _field(b"\x0a", str(value).encode())


#: (tag, key, value) → the tagged KeyValue: most attributes of a probe repeat every cycle (its
#: group, form, cohort, question, often its answer and verdict), so most are looked up, not
#: encoded. Bounded: cleared when full; only short strings and whole numbers are kept.
_ENCODED: dict[tuple[bytes, str, Any], bytes] = {}
_ENCODED_MAX = 50_000
_CACHED_CHARS = 512


def attributes(attrs: Mapping[str, Any], tag: bytes) -> bytes:
    """Each attribute as a repeated ``KeyValue`` field whose tag is ``tag``."""
    encoded = _ENCODED
    out = []
    for key, value in attrs.items():
        item = (tag, key, value)
        kv = encoded.get(item) if type(value) is str or type(value) is int else None
        if kv is None:
            kv = _field(tag, _field(b"\x0a", key.encode()) + _field(b"\x12", _any_value(value)))
            kind = type(value)
            if kind is int or (kind is str and len(value) <= _CACHED_CHARS):
                if len(encoded) >= _ENCODED_MAX:
                    encoded.clear()
                encoded[item] = kv
        out.append(kv)
    return b"".join(out)


#: Tags of the repeated KeyValue fields: Span.attributes, Event.attributes, Resource.attributes.
SPAN_ATTRIBUTES, EVENT_ATTRIBUTES, RESOURCE_ATTRIBUTES = b"\x4a", b"\x1a", b"\x0a"


def event(name: str, time_ns: int, encoded_attributes: bytes) -> bytes:
    """An ``Event`` (Span field 11) whose attributes are encoded (``EVENT_ATTRIBUTES``)."""
    body = b"\x09" + _FIXED64.pack(time_ns) + _field(b"\x12", name.encode())
    return _field(b"\x5a", body + encoded_attributes)


def span(
    *,
    trace_id: int,
    span_id: int,
    name: str,
    kind: int,
    start_ns: int,
    end_ns: int,
    encoded_attributes: bytes,
    events: bytes = b"",
    parent_id: int | None = None,
    status_code: int = 0,
    status_message: str = "",
) -> bytes:
    """One ``Span`` message (the bytes inside ScopeSpans' ``spans`` field); attributes already
    encoded by :func:`attributes` (``SPAN_ATTRIBUTES``), events by :func:`event`."""
    out = bytearray(b"\x0a\x10")
    out += trace_id.to_bytes(16, "big")
    out += b"\x12\x08"
    out += span_id.to_bytes(8, "big")
    if parent_id is not None:
        out += b"\x22\x08"
        out += parent_id.to_bytes(8, "big")
    out += _field(b"\x2a", name.encode())
    out += b"\x30" + bytes((kind,))
    out += b"\x39" + _FIXED64.pack(start_ns)
    out += b"\x41" + _FIXED64.pack(end_ns)
    out += encoded_attributes
    out += events
    status = b""
    if status_message:
        status += _field(b"\x12", status_message.encode("utf-8", "surrogatepass"))
    if status_code:
        status += b"\x18" + _SMALL[status_code]
    out += _field(b"\x7a", status)
    return bytes(out)


def request(resource: Mapping[str, Any], scope_name: str, spans: Iterable[bytes]) -> bytes:
    """An ``ExportTraceServiceRequest`` of ``spans`` under one resource and scope."""
    scope = _field(b"\x0a", _field(b"\x0a", scope_name.encode()))  # ScopeSpans.scope
    body = scope + b"".join([_field(b"\x12", encoded) for encoded in spans])
    resource_spans = _field(b"\x0a", attributes(resource, RESOURCE_ATTRIBUTES))
    return _field(b"\x0a", resource_spans + _field(b"\x12", body))
