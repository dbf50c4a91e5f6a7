"""Verdicts written onto spans through the trace tools' own APIs: Phoenix span annotations and
Langfuse scores.

A writer never blocks the caller: verdicts wait in a bounded queue (the oldest dropped and
counted when it is full) and one daemon thread posts them in batches, retrying a failed batch
a few times with backoff. A tool that is down costs annotations, counted on /metrics, never a
probe or a verdict.
"""

from __future__ import annotations

import collections
import datetime as dt
import logging
import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import httpx
from tenacity import Retrying, stop_after_attempt, wait_exponential

from groundwatch.adapters.tracing.ids import span_hex, trace_hex, verdict_span
from groundwatch.adapters.tracing.spans import EVALUATION_NAME, MAX_ATTRIBUTE_CHARS
from groundwatch.contracts import Judgement

log = logging.getLogger(__name__)

#: Verdicts posted in one request at most.
BATCH = 500
Post = Callable[[Sequence[Mapping[str, Any]]], None]


@dataclass
class WriterCounts:
    sent: int = 0
    failed: int = 0
    dropped: int = 0


class QueuedWriter:
    """A bounded queue of verdicts and the thread that posts them (see the module docstring)."""

    def __init__(
        self,
        name: str,
        post: Post,
        *,
        capacity: int = 50_000,
        interval_s: float = 1.0,
        attempts: int = 3,
    ) -> None:
        self.name = name
        self.counts = WriterCounts()
        self._post = post
        self._queue: collections.deque[Mapping[str, Any]] = collections.deque(maxlen=capacity)
        self._interval_s = interval_s
        self._attempts = attempts
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._idle = threading.Event()
        self._idle.set()
        self._thread = threading.Thread(target=self._run, name=f"groundwatch-{name}", daemon=True)
        self._thread.start()

    def put(self, item: Mapping[str, Any]) -> None:
        queue = self._queue
        if queue.maxlen is not None and len(queue) >= queue.maxlen:
            self.counts.dropped += 1  # the deque drops the oldest as this one goes in
        self._idle.clear()
        queue.append(item)
        if len(queue) >= BATCH:
            self._wake.set()

    def flush(self, timeout_s: float = 5.0) -> bool:
        """Post what is queued now; True when the queue emptied within the timeout."""
        self._wake.set()
        return self._idle.wait(timeout_s)

    def close(self, timeout_s: float = 2.0) -> None:
        self._stop.set()
        self._wake.set()
        self._thread.join(timeout_s)

    def _run(self) -> None:
        while True:
            self._wake.wait(self._interval_s)
            self._wake.clear()
            while self._queue:
                batch = [self._queue.popleft() for _ in range(min(BATCH, len(self._queue)))]
                self._send(batch)
            self._idle.set()
            if self._stop.is_set():
                return

    def _send(self, batch: list[Mapping[str, Any]]) -> None:
        try:
            for attempt in Retrying(
                stop=stop_after_attempt(self._attempts),
                wait=wait_exponential(multiplier=0.5, max=5.0),
                reraise=True,
            ):
                with attempt:
                    self._post(batch)
        except Exception as exc:
            self.counts.failed += len(batch)
            log.warning("%s: %d verdicts not written: %s", self.name, len(batch), _line(exc))
        else:
            self.counts.sent += len(batch)


def _line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:300]


def _explanation(judgement: Judgement, group_status: str | None) -> str:
    parts = [judgement.reason, f"tier {judgement.tier!s}"]
    if group_status:
        parts.append(f"group {group_status}")
    return "; ".join(p for p in parts if p)[:MAX_ATTRIBUTE_CHARS]


def _score(judgement: Judgement) -> float | None:
    return {"correct": 1.0, "incorrect": 0.0}.get(judgement.verdict.value)


def phoenix_annotation(judgement: Judgement, group_status: str | None) -> dict[str, Any]:
    """A Phoenix span annotation of the verdict, upserted per (span, name, group): a later
    verdict on the same span replaces it instead of piling up."""
    _, span_id = verdict_span(judgement.probe_id, judgement.trace_context)
    return {
        "span_id": span_hex(span_id),
        "name": EVALUATION_NAME,
        "annotator_kind": "CODE",
        "identifier": f"groundwatch:{judgement.group_id}",
        "result": {
            "label": judgement.verdict.value,
            "score": _score(judgement),
            "explanation": _explanation(judgement, group_status),
        },
        "metadata": {
            "tier": str(judgement.tier),
            "group_id": judgement.group_id,
            "form_id": judgement.form_id,
            "cohort": judgement.cohort,
            "cycle": judgement.cycle,
            "run_id": judgement.run_id,
            "group_status": group_status,
        },
    }


def langfuse_score(judgement: Judgement, group_status: str | None) -> dict[str, Any]:
    """A Langfuse ingestion event creating a score on the probe's trace and observation (the
    OTLP trace and span ids, which is how Langfuse names traces it received over OTLP)."""
    score_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"groundwatch:{judgement.probe_id}"))
    score = _score(judgement)
    trace_id, span_id = verdict_span(judgement.probe_id, judgement.trace_context)
    body: dict[str, Any] = {
        "id": score_id,
        "traceId": trace_hex(trace_id),
        "observationId": span_hex(span_id),
        "name": EVALUATION_NAME,
        "comment": _explanation(judgement, group_status),
    }
    if score is None:
        body.update(value=judgement.verdict.value, dataType="CATEGORICAL")
    else:
        body.update(value=score, dataType="NUMERIC")
    return {
        "id": str(uuid.uuid4()),
        "type": "score-create",
        "timestamp": dt.datetime.now(dt.UTC).isoformat(),
        "body": body,
    }


def phoenix_poster(base_url: str, api_key: str | None, timeout_s: float = 10.0) -> Post:
    client = httpx.Client(base_url=base_url.rstrip("/"), timeout=timeout_s)
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}

    def post(batch: Sequence[Mapping[str, Any]]) -> None:
        reply = client.post("/v1/span_annotations", json={"data": list(batch)}, headers=headers)
        reply.raise_for_status()

    return post


def langfuse_poster(
    base_url: str, public_key: str, secret_key: str, timeout_s: float = 10.0
) -> Post:
    client = httpx.Client(
        base_url=base_url.rstrip("/"), timeout=timeout_s, auth=(public_key, secret_key)
    )

    def post(batch: Sequence[Mapping[str, Any]]) -> None:
        reply = client.post("/api/public/ingestion", json={"batch": list(batch)})
        reply.raise_for_status()
        errors = reply.json().get("errors") if reply.content else None
        if errors:
            raise RuntimeError(f"Langfuse refused {len(errors)} of {len(batch)}: {errors[0]}")

    return post
