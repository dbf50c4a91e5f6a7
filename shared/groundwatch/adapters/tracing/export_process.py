"""The span exporter process: records from the probing process on stdin, spans out over
OTLP/HTTP, its counts back on stdout. See :mod:`.shipping` for why it is a process.

Spans are encoded by :mod:`.otlp_wire` and posted with ``httpx``, configured by the standard
variables as the Python SDK's OTLP/HTTP exporter reads them: ``OTEL_EXPORTER_OTLP_[TRACES_]``
``ENDPOINT``, ``HEADERS``, ``TIMEOUT`` (seconds), ``COMPRESSION`` (``gzip``), ``CERTIFICATE``;
a batch the collector refuses for a while (429, 502–504, unreachable) is retried twice with
backoff, then counted failed.

It runs at nice 10, and exporting runs between reads: while a collector (or this process, on
a machine short of cores) is slow, it stops reading, the pipe fills and the probing process's
bounded queue drops records (counted there), so a slow collector costs spans, never the
probing process's time. End of input: what is held is
exported and the process exits.

Usage (started by :class:`~groundwatch.adapters.tracing.shipping.ProcessLink`):
``python -m groundwatch.adapters.tracing.export_process SERVICE_NAME HOLD_S``.
"""

from __future__ import annotations

import contextlib
import gzip
import logging
import os
import select
import sys
import time
from collections.abc import Callable, Mapping
from typing import Any

import httpx
import orjson
from tenacity import Retrying, retry_if_exception, stop_after_attempt, wait_exponential

from groundwatch.adapters.tracing import otlp_wire
from groundwatch.adapters.tracing.assemble import SpanAssembler, WireSpans
from groundwatch.adapters.tracing.shipping import EXPORT_BATCH, env_int, read_frames
from groundwatch.adapters.tracing.spans import SpanCounts

log = logging.getLogger("groundwatch.adapters.tracing.export_process")

_RETRIED = {429, 502, 503, 504}


def _otlp(env: Mapping[str, str], name: str) -> str | None:
    return env.get(f"OTEL_EXPORTER_OTLP_TRACES_{name}") or env.get(f"OTEL_EXPORTER_OTLP_{name}")


def traces_endpoint(env: Mapping[str, str]) -> str:
    """The OTLP/HTTP traces URL as the SDK derives it: the signal's own variable as it is, or
    the base endpoint plus ``/v1/traces``."""
    return env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or (
        env.get("OTEL_EXPORTER_OTLP_ENDPOINT", "http://localhost:4318").rstrip("/") + "/v1/traces"
    )


def _retriable(exc: BaseException) -> bool:
    if isinstance(exc, httpx.HTTPStatusError):
        return exc.response.status_code in _RETRIED
    return isinstance(exc, httpx.TransportError)


def poster(env: Mapping[str, str]) -> Callable[[bytes], None]:
    """Posts one encoded ``ExportTraceServiceRequest``; raises when it was not taken."""
    from opentelemetry.util.re import parse_env_headers

    headers = {"Content-Type": "application/x-protobuf"}
    headers.update(parse_env_headers(_otlp(env, "HEADERS") or "", liberal=True))
    compress = (_otlp(env, "COMPRESSION") or "none").strip().lower() == "gzip"
    if compress:
        headers["Content-Encoding"] = "gzip"
    client = httpx.Client(
        timeout=float(_otlp(env, "TIMEOUT") or 10),
        verify=_otlp(env, "CERTIFICATE") or True,
        headers=headers,
    )
    url = traces_endpoint(env)

    def post(body: bytes) -> None:
        content = gzip.compress(body, 6) if compress else body
        for attempt in Retrying(
            stop=stop_after_attempt(3),
            wait=wait_exponential(multiplier=0.5, max=4.0),
            retry=retry_if_exception(_retriable),
            reraise=True,
        ):
            with attempt:
                client.post(url, content=content).raise_for_status()

    return post


class Exporter:
    """Encoded spans into requests of ``batch`` spans, counted."""

    def __init__(
        self, post: Callable[[bytes], None], resource: Mapping[str, Any], batch: int
    ) -> None:
        self.post = post
        self.resource = dict(resource)
        self.batch = batch
        self.counts = SpanCounts()
        self._logged = 0.0

    def export(self, spans: list[bytes]) -> None:
        counts = self.counts
        counts.ended += len(spans)
        for i in range(0, len(spans), self.batch):
            chunk = spans[i : i + self.batch]
            try:
                self.post(otlp_wire.request(self.resource, "groundwatch", chunk))
            except Exception as exc:
                counts.failed += len(chunk)
                if time.monotonic() - self._logged > 60:  # a dead collector: a line a minute
                    self._logged = time.monotonic()
                    log.warning("%d spans not exported: %s", len(chunk), str(exc)[:300])
            else:
                counts.exported += len(chunk)


def _report(counts: SpanCounts, started_cpu_s: float, flushed: int | None = None) -> None:
    message: dict[str, Any] = {
        "ended": counts.ended,
        "exported": counts.exported,
        "failed": counts.failed,
        "cpu_s": time.process_time() - started_cpu_s,
    }
    if flushed is not None:
        message["flushed"] = flushed
    sys.stdout.buffer.write(orjson.dumps(message) + b"\n")
    sys.stdout.buffer.flush()


def main(argv: list[str]) -> int:
    from opentelemetry.sdk.resources import Resource

    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    # where cores are short the probing process goes first: this one falls behind and its
    # queue drops spans (counted) rather than taking CPU from probes
    with contextlib.suppress(OSError, AttributeError):
        os.nice(10)
    service_name, hold_s = argv[0], float(argv[1])
    env = os.environ
    batch = env_int(env, "OTEL_BSP_MAX_EXPORT_BATCH_SIZE", EXPORT_BATCH)
    delay_s = env_int(env, "OTEL_BSP_SCHEDULE_DELAY", 1000) / 1000
    resource = Resource.create({"service.name": service_name}).attributes
    exporter = Exporter(poster(env), resource, batch)
    assembler: SpanAssembler[bytes] = SpanAssembler(WireSpans(), hold_s)
    buffer = bytearray()
    ready: list[bytes] = []
    last = time.monotonic()
    fd = sys.stdin.buffer.fileno()
    open_ = True
    started = time.process_time()
    while open_:
        readable, _, _ = select.select([fd], [], [], 0.25)
        flushes: list[int] = []
        if readable:
            chunk = os.read(fd, 1 << 20)
            open_ = bool(chunk)
            buffer += chunk
            now = time.monotonic()
            for frame in read_frames(buffer):
                if isinstance(frame, dict):
                    flushes.append(int(frame["flush"]))
                else:
                    assembler.add(frame, now)
        now = time.monotonic()
        ready.extend(assembler.take(now, everything=bool(flushes) or not open_))
        if ready and (flushes or not open_ or len(ready) >= batch or now - last >= delay_s):
            exporter.export(ready)
            ready, last = [], now
            _report(exporter.counts, started, max(flushes) if flushes else None)
        elif flushes:
            _report(exporter.counts, started, max(flushes))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
