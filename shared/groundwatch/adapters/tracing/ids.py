"""A probe's trace and span ids, derived from its probe id.

Every stage can name the span of a probe's target call without carrying it in a message: the
probe span is made with these ids, analytics parents the verdict to it and annotates it in
Phoenix by the same span id (a span's ``groundwatch.probe_id`` attribute finds it the other way).
The ids are a hash of the probe id, not its bits: a ratio sampler decides by the trace id's low
64 bits, which in a version-7 UUID always begin with the variant bits.
"""

from __future__ import annotations

import hashlib
import uuid


def _digest(probe_id: uuid.UUID | str) -> bytes:
    raw = probe_id.bytes if isinstance(probe_id, uuid.UUID) else uuid.UUID(probe_id).bytes
    return hashlib.blake2b(raw, digest_size=24, person=b"groundwatch").digest()


def probe_trace_id(probe_id: uuid.UUID | str) -> int:
    """The 128-bit trace id of the probe's trace (never 0, which W3C reserves)."""
    return int.from_bytes(_digest(probe_id)[:16], "big") or 1


def probe_span_id(probe_id: uuid.UUID | str) -> int:
    """The 64-bit span id of the probe's target call (never 0)."""
    return int.from_bytes(_digest(probe_id)[16:], "big") or 1


def probe_ids(probe_id: uuid.UUID | str) -> tuple[int, int]:
    """(trace id, span id) of the probe's span, from one hash."""
    digest = _digest(probe_id)
    return int.from_bytes(digest[:16], "big") or 1, int.from_bytes(digest[16:], "big") or 1


def span_hex(span_id: int) -> str:
    return format(span_id, "016x")


def trace_hex(trace_id: int) -> str:
    return format(trace_id, "032x")


def verdict_span(probe_id: uuid.UUID | str, trace_context: str | None) -> tuple[int, int]:
    """(trace id, span id) of the span a verdict belongs to: the one ``trace_context`` names
    ('TRACEID-SPANID' in hex: a user's own span, for traffic), else the probe's own."""
    if trace_context:
        trace, span = trace_context.split("-")
        return int(trace, 16), int(span, 16)
    return probe_trace_id(probe_id), probe_span_id(probe_id)
