"""The probe path's side of tracing: a record per probe and per verdict into a bounded queue,
shipped from a thread to where spans are made and exported.

Making a span with the SDK, encoding it in OTLP protobuf and posting it costs about ten times
what groundwatch spends on the rest of a probe, and in this process it would hold the GIL
against the probe path. So by default the records go over a pipe to an exporter process of
their own (:mod:`.export_process`), which builds the spans, holds each probe span for its
verdict (:mod:`.assemble`), and exports in large batches with the SDK's OTLP/HTTP exporter on
another core. What stays here per probe is copying references into a list and, once a batch,
one ``orjson`` encoding of it. With an exporter object given (tests, an embedding program's own
exporter) the same assembly runs in the shipping thread instead.

Nothing here waits for a collector: the queue is bounded (``OTEL_BSP_MAX_QUEUE_SIZE`` records,
20 000 unless set) and a record that finds it full is dropped and counted, so a collector that
is slow or down loses spans — never a probe or a verdict.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import os
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from contextvars import ContextVar, Token
from typing import Any, Protocol

import orjson
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.sampling import Decision, Sampler
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

from groundwatch.adapters.tracing.assemble import SdkSpans, SpanAssembler
from groundwatch.adapters.tracing.ids import probe_ids, probe_trace_id
from groundwatch.adapters.tracing.spans import SpanCounts, probe_record, verdict_record
from groundwatch.contracts import Judgement, Probe, RagResponse

log = logging.getLogger(__name__)

#: Records sent to the assembly at once at most (a frame well within the pipe's 1 MiB).
SEND_BATCH = 1024
#: Spans in one OTLP request at most (``OTEL_BSP_MAX_EXPORT_BATCH_SIZE`` overrides).
EXPORT_BATCH = 512
DEFAULT_QUEUE = 20_000
#: A probe span waits this long for its verdict before it is exported without it.
DEFAULT_HOLD_S = 5.0

#: (trace id, span id) of the probe whose target call is running in this context.
_CURRENT: ContextVar[tuple[int, int] | None] = ContextVar("groundwatch_probe_span", default=None)
_FRAME = struct.Struct(">I")


def current_probe_span() -> tuple[int, int] | None:
    return _CURRENT.get()


class Link(Protocol):
    """Where the records go: the assembly and export, behind a thread or a process."""

    def send(self, records: list[list[Any]]) -> None: ...
    def tick(self) -> None: ...
    def flush(self, timeout_s: float) -> bool: ...
    def close(self, timeout_s: float) -> None: ...


def env_int(environ: Mapping[str, str], name: str, default: int) -> int:
    raw = environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{name} must be a whole number, not {raw!r}") from None
    if value < 1:
        raise ValueError(f"{name} must be at least 1, not {value}")
    return value


def _always_on(sampler: Sampler) -> bool:
    description = sampler.get_description()
    return description == "AlwaysOnSampler" or description.startswith(
        "ParentBased{root:AlwaysOnSampler,"
    )


class SpanFactory:
    """What the runner's lanes and analytics call (see the module docstring)."""

    def __init__(
        self,
        link: Link,
        counts: SpanCounts,
        *,
        sampler: Sampler | None = None,
        queue: int = DEFAULT_QUEUE,
        interval_s: float = 0.2,
    ) -> None:
        self.counts = counts
        #: the SDK's sampler as ``OTEL_TRACES_SAMPLER`` configures it (always on by default)
        self.sampler = sampler or TracerProvider(shutdown_on_exit=False).sampler
        #: every probe traced (the default): no sampling decision to make
        self.all = self._all = _always_on(self.sampler)
        self._link = link
        #: the program runs an OpenTelemetry SDK of its own (set up before tracing starts):
        #: its spans made during a target call go under the probe span
        self._otel_sdk = not isinstance(
            trace.get_tracer_provider(), trace.ProxyTracerProvider | trace.NoOpTracerProvider
        )
        self._queue: collections.deque[list[Any]] = collections.deque(maxlen=queue)
        self._interval_s = interval_s
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._flushes: collections.deque[tuple[threading.Event, list[bool], float]] = (
            collections.deque()
        )
        self._thread = threading.Thread(target=self._run, name="groundwatch-spans", daemon=True)
        self._thread.start()

    # -- the probe path --------------------------------------------------------------------

    def enter(self, probe: Probe) -> tuple[Token[tuple[int, int] | None], object] | None:
        """Make the probe's span current while its target is asked (an HTTP target sends its
        ``traceparent``; spans the target's own in-process code makes with an OpenTelemetry
        SDK of its own go under it). None when the sampler leaves the probe out."""
        trace_id, span_id = probe_ids(probe.probe_id)
        if not self._all and not self.sampled(trace_id):
            return None
        token = _CURRENT.set((trace_id, span_id))
        attached: object = None
        if self._otel_sdk:
            parent = SpanContext(trace_id, span_id, False, TraceFlags(TraceFlags.SAMPLED))
            attached = otel_context.attach(trace.set_span_in_context(NonRecordingSpan(parent)))
        return token, attached

    def leave(
        self,
        entered: tuple[Token[tuple[int, int] | None], object],
        probe: Probe,
        response: RagResponse,
        start_ns: int,
        operation: str = "invoke_agent",
    ) -> None:
        """The call ended: its record queued (``operation``: the GenAI operation the target
        performs, ``chat`` for a model, ``invoke_agent`` for a RAG service)."""
        self.abandon(entered)
        self._put(probe_record(probe, response, start_ns, time.time_ns(), operation))

    def abandon(self, entered: tuple[Token[tuple[int, int] | None], object]) -> None:
        """The call did not end with a response (cancelled): its span is not current anymore."""
        token, attached = entered
        if attached is not None:
            otel_context.detach(attached)  # type: ignore[arg-type]
        _CURRENT.reset(token)

    def evaluation(self, judgement: Judgement, group_status: str | None) -> None:
        """A verdict onto the span it judges: the probe's (when sampled) or, for traffic that
        came as spans, the user's own."""
        if (
            not self._all
            and judgement.trace_context is None
            and not self.sampled(probe_trace_id(judgement.probe_id))
        ):
            return
        self._put(verdict_record(judgement, group_status))

    def sampled(self, trace_id: int) -> bool:
        """Whether the probe span of ``trace_id`` is made: the sampler's own decision for a
        root span of that trace (ratio samplers decide by the trace id, so every stage and
        process agrees)."""
        if self._all:
            return True
        result = self.sampler.should_sample(None, trace_id, "groundwatch.probe")
        return result.decision is Decision.RECORD_AND_SAMPLE

    def _put(self, record: list[Any]) -> None:
        queue = self._queue
        if len(queue) == queue.maxlen:
            self.counts.dropped += 1  # the deque drops the oldest as this one goes in
        queue.append(record)
        if len(queue) >= SEND_BATCH and not self._wake.is_set():
            self._wake.set()

    # -- the shipping thread ---------------------------------------------------------------

    def flush(self, timeout_s: float = 10.0) -> bool:
        """Ship and export everything recorded so far; True when it was within the timeout."""
        done = threading.Event()
        ok = [False]
        self._flushes.append((done, ok, time.monotonic() + timeout_s))
        self._wake.set()
        return done.wait(timeout_s) and ok[0]

    def shutdown(self, timeout_s: float = 2.0) -> None:
        """Export what is recorded within ``timeout_s`` and stop; what is left is lost."""
        self.flush(timeout_s)
        self._stop.set()
        self._wake.set()
        self._thread.join(timeout_s)

    def _run(self) -> None:
        queue = self._queue
        while True:
            self._wake.wait(self._interval_s)
            self._wake.clear()
            while queue:
                batch = [queue.popleft() for _ in range(min(SEND_BATCH, len(queue)))]
                try:
                    self._link.send(batch)
                except Exception as exc:  # an exporter process gone: its spans are lost
                    self.counts.dropped += len(batch)
                    log.warning("trace export: %d records lost: %s", len(batch), exc)
            try:
                self._link.tick()
                while self._flushes:
                    done, ok, deadline = self._flushes.popleft()
                    ok[0] = self._link.flush(max(0.0, deadline - time.monotonic()))
                    done.set()
            except Exception as exc:
                log.warning("trace export: %s", exc)
            if self._stop.is_set():
                self._link.close(1.0)
                return


# -- the links ------------------------------------------------------------------------------


def export_counted(
    exporter: SpanExporter, spans: list[ReadableSpan], counts: SpanCounts, batch: int = EXPORT_BATCH
) -> None:
    """``spans`` through an SDK exporter in requests of ``batch``, each counted by its fate."""
    counts.ended += len(spans)
    for i in range(0, len(spans), batch):
        chunk = spans[i : i + batch]
        try:
            result = exporter.export(chunk)
        except Exception as exc:  # an exporter's bug must not end the export loop
            log.warning("span export failed: %s", exc)
            result = SpanExportResult.FAILURE
        if result is SpanExportResult.SUCCESS:
            counts.exported += len(chunk)
        else:
            counts.failed += len(chunk)


class ThreadLink:
    """Assembly and export in the shipping thread, with an exporter object of the caller's."""

    def __init__(
        self,
        exporter: SpanExporter,
        resource: Resource,
        counts: SpanCounts,
        *,
        hold_s: float = DEFAULT_HOLD_S,
        delay_s: float = 1.0,
    ) -> None:
        self.exporter = exporter
        self.assembler: SpanAssembler[ReadableSpan] = SpanAssembler(SdkSpans(resource), hold_s)
        self._counts = counts
        self._delay_s = delay_s
        self._last = time.monotonic()
        self._ready: list[ReadableSpan] = []

    def send(self, records: list[list[Any]]) -> None:
        self.assembler.add(records, time.monotonic())

    def tick(self) -> None:
        now = time.monotonic()
        self._ready.extend(self.assembler.take(now))
        if len(self._ready) >= EXPORT_BATCH or (self._ready and now - self._last >= self._delay_s):
            self._export()

    def flush(self, timeout_s: float) -> bool:
        self._ready.extend(self.assembler.take(time.monotonic(), everything=True))
        self._export()
        # an exporter that keeps nothing back may answer None
        return self.exporter.force_flush(int(timeout_s * 1000)) is not False

    def close(self, timeout_s: float) -> None:
        self.flush(timeout_s)
        self.exporter.shutdown()

    def _export(self) -> None:
        ready, self._ready = self._ready, []
        self._last = time.monotonic()
        if ready:
            export_counted(self.exporter, ready, self._counts)


class ProcessLink:
    """Assembly and export in a child process: records as length-prefixed ``orjson`` frames
    on its stdin, its counts back as JSON lines on its stdout."""

    def __init__(
        self,
        environ: Mapping[str, str],
        service_name: str,
        counts: SpanCounts,
        *,
        hold_s: float = DEFAULT_HOLD_S,
    ) -> None:
        self._counts = counts
        env = {**os.environ, **environ}
        self._proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "groundwatch.adapters.tracing.export_process",
                service_name,
                str(hold_s),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
        )
        if self._proc.stdin is not None:
            _widen_pipe(self._proc.stdin.fileno())
        self._flushed = 0
        self._asked = 0
        self._answered = threading.Condition()
        self._reader = threading.Thread(
            target=self._read, name="groundwatch-spans-counts", daemon=True
        )
        self._reader.start()

    def send(self, records: list[list[Any]]) -> None:
        self._write(orjson.dumps(records))

    def tick(self) -> None:
        """The child keeps its own time."""

    def flush(self, timeout_s: float) -> bool:
        self._asked += 1
        asked = self._asked
        self._write(orjson.dumps({"flush": asked}))
        with self._answered:
            return self._answered.wait_for(lambda: self._flushed >= asked, timeout_s)

    def close(self, timeout_s: float) -> None:
        stdin = self._proc.stdin
        if stdin is not None:
            with contextlib.suppress(OSError):
                stdin.close()  # end of input: the child exports what it holds and exits
        try:
            self._proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait(5)
        self._reader.join(timeout_s)

    def _write(self, frame: bytes) -> None:
        stdin = self._proc.stdin
        if stdin is None or self._proc.poll() is not None:
            raise RuntimeError(f"the span exporter process exited ({self._proc.returncode})")
        stdin.write(_FRAME.pack(len(frame)) + frame)
        stdin.flush()

    def _read(self) -> None:
        stdout = self._proc.stdout
        if stdout is None:
            return
        counts = self._counts
        for line in stdout:
            message = orjson.loads(line)
            counts.ended = message["ended"]
            counts.exported = message["exported"]
            counts.failed = message["failed"]
            counts.exporter_cpu_s = message["cpu_s"]
            flushed = message.get("flushed")
            if flushed is not None:
                with self._answered:
                    self._flushed = flushed
                    self._answered.notify_all()


#: Linux's F_SETPIPE_SZ, and the pipe size asked for (the default most systems allow).
_F_SETPIPE_SZ = 1031
PIPE_BYTES = 1 << 20


def _widen_pipe(fd: int) -> None:
    """A 1 MiB pipe instead of 64 KiB: a batch goes in one write, and the shipping thread takes
    the GIL back once, not once per 64 KiB, while the probing thread runs."""
    try:
        import fcntl

        fcntl.fcntl(fd, _F_SETPIPE_SZ, PIPE_BYTES)
    except (ImportError, OSError):  # not Linux, or a lower limit: the default pipe works too
        pass


def read_frames(buffer: bytearray) -> Sequence[Any]:
    """The complete frames at the start of ``buffer``, decoded; removed from it."""
    out: list[Any] = []
    at = 0
    size = _FRAME.size
    while len(buffer) - at >= size:
        (n,) = _FRAME.unpack_from(buffer, at)
        if len(buffer) - at - size < n:
            break
        out.append(orjson.loads(buffer[at + size : at + size + n]))
        at += size + n
    del buffer[:at]
    return out


def exemplar_of(response: RagResponse, factory: SpanFactory | None) -> dict[str, str] | None:
    """The trace id a latency observation links to (an OpenMetrics exemplar), when traced."""
    if factory is None:
        return None
    current = _CURRENT.get()  # observed inside the call: its span is current, ids at hand
    if current is not None:
        return {"trace_id": format(current[0], "032x")}
    trace_id = probe_trace_id(response.probe_id)
    if not factory.sampled(trace_id):
        return None
    return {"trace_id": format(trace_id, "032x")}
