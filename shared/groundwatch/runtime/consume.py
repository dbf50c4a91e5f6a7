"""The consumer loop every service runs: poll → parse → handle → publish → commit.

This is the one place with a broad ``except``: it sorts outcomes into dead-letter (the message can
never be processed), retry (a dependency is down: rewind, nothing committed) and done. Offsets are
committed only after the handler's output is acknowledged by the bus or its state is stored, so a
crash anywhere loses nothing (at-least-once; handlers are idempotent by ``probe_id``).
"""

from __future__ import annotations

import asyncio
import base64
import gc
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from groundwatch.adapters.bus.base import Bus, Consumer, Record
from groundwatch.adapters.bus.encode import to_outgoing
from groundwatch.contracts import DeadLetter, Topic, Topics, _Contract
from groundwatch.errors import PoisonMessage, RetryLater
from groundwatch.stages.base import AssignmentHook, Stage

log = logging.getLogger(__name__)

M = TypeVar("M", bound=_Contract)

#: Young-generation threshold of the cycle collector in a process that runs consume loops
#: (CPython's default is 700 allocations).
GC_YOUNG_THRESHOLD = 50_000


def tune_gc() -> None:
    """Run the cycle collector less often in a process that streams messages.

    Each message allocates a few dozen containers (the parsed contract, its lists, the output
    record) that reference counting frees on its own. With the default threshold a batch of 500
    messages sets off dozens of young collections; what is in flight survives them, is promoted,
    and is scanned again by full collections over every long-lived object of the process. In the
    embedded pipeline that was half of all CPU time (pyinstrument, ``bench/bench_embedded.py``).
    A higher young threshold makes collections rare; cycles are rare in this code, so memory
    does not grow. Idempotent; a higher threshold set by the application is kept.
    """
    young, middle, old = gc.get_threshold()
    if 0 < young < GC_YOUNG_THRESHOLD:
        gc.set_threshold(GC_YOUNG_THRESHOLD, middle, old)


#: A batch handler: typed input messages in, messages to publish out.
BatchHandler = Callable[[list[M]], Awaitable[Sequence[_Contract]]]


@dataclass
class LoopStats:
    """Counters a service exports as Prometheus metrics (kept plain here, no client import)."""

    consumed: int = 0
    produced: int = 0
    dead_lettered: int = 0
    retries: int = 0
    batches: int = 0
    last_batch_at: float = 0.0
    outcome_hooks: list[Callable[[str, int], None]] = field(default_factory=list)

    def count(self, outcome: str, n: int) -> None:
        if outcome == "ok":
            self.consumed += n
        elif outcome == "dead_letter":
            self.dead_lettered += n
        elif outcome == "retry":
            self.retries += n
        for hook in self.outcome_hooks:
            hook(outcome, n)


#: Raw bytes a dead letter keeps. Base64 adds a third, so a poison message near the broker's
#: 1 MB limit would make a letter the producer refuses, and the loop would die on it.
MAX_DEAD_LETTER_RAW = 512 * 1024


def dead_letter(record: Record, error: str, service: str) -> DeadLetter:
    raw = record.value[:MAX_DEAD_LETTER_RAW]
    if len(raw) < len(record.value):
        kept, size = len(raw), len(record.value)
        error = f"{error[:1900]} (raw payload cut to its first {kept} of {size} bytes)"
    return DeadLetter(
        error=error[:2000],
        source_topic=record.topic,
        partition=record.partition,
        offset=record.offset,
        key=record.key.decode("utf-8", "replace") if record.key else None,
        raw_b64=base64.b64encode(raw).decode(),
        service=service,
        group_id=record.key.decode("utf-8", "replace") if record.key else None,
    )


def consume(
    stage: Stage[M],
    bus: Bus,
    topics: Topics,
    *,
    group: str | None = None,
    client_id: str = "",
    retry_backoff_s: float = 1.0,
) -> ConsumeLoop[M]:
    """The consume loop that runs ``stage`` on ``bus``: its source topic, its batch size, its
    rebalance hook (when it has one), in ``group`` (default: the stage's own group)."""
    return ConsumeLoop(
        bus=bus,
        topics=topics,
        source=stage.source(topics),
        group=group or stage.group,
        handler=stage.handle,
        service=stage.service,
        client_id=client_id,
        max_records=stage.max_records,
        retry_backoff_s=retry_backoff_s,
        on_assignment=getattr(stage, "on_assignment", None),
    )


class ConsumeLoop(Generic[M]):
    """Runs one consumer in one group on one input topic until ``stop()``."""

    def __init__(
        self,
        *,
        bus: Bus,
        topics: Topics,
        source: Topic[M],
        group: str,
        handler: BatchHandler[M],
        service: str,
        max_records: int = 500,
        retry_backoff_s: float = 1.0,
        client_id: str = "",
        on_assignment: AssignmentHook | None = None,
    ) -> None:
        self.on_assignment = on_assignment
        self._assigned: frozenset[tuple[str, int]] | None = None
        self.bus = bus
        self.topics = topics
        self.source = source
        self.group = group
        self.handler = handler
        self.service = service
        self.max_records = max_records
        self.retry_backoff_s = retry_backoff_s
        self.client_id = client_id or service
        self.stats = LoopStats()
        self._stopping = asyncio.Event()
        self._consumer: Consumer | None = None
        self.ready = asyncio.Event()

    def stop(self) -> None:
        self._stopping.set()

    def lag(self) -> float:
        """Consumer lag of this loop (0 before it has started)."""
        return float(self._consumer.lag()) if self._consumer is not None else 0.0

    async def run(self) -> None:
        tune_gc()
        consumer = self.bus.consumer([self.source.name], self.group, client_id=self.client_id)
        self._consumer = consumer
        await consumer.start()
        self.ready.set()
        try:
            while not self._stopping.is_set():
                records = await consumer.poll(self.max_records, timeout_s=0.2)
                if self.on_assignment is not None:
                    # Before the records: a stateful consumer must drop or load the state of
                    # partitions that moved before it applies anything from the new ones.
                    assigned = consumer.assignment()
                    if assigned != self._assigned:
                        self._assigned = assigned
                        await self.on_assignment(consumer, assigned)
                if records:
                    await self._process(consumer, records)
        finally:
            await consumer.stop()

    async def _process(self, consumer: Consumer, records: list[Record]) -> None:
        valid: list[M] = []
        valid_records: list[Record] = []
        letters: list[DeadLetter] = []
        for rec in records:
            try:
                valid.append(self.source.decode(rec.value))
                valid_records.append(rec)
            except PoisonMessage as exc:
                log.warning("dead-letter %s[%d]@%d: %s", rec.topic, rec.partition, rec.offset, exc)
                letters.append(dead_letter(rec, str(exc), self.service))
        try:
            outputs = list(await self.handler(valid)) if valid else []
        except RetryLater as exc:
            log.warning("retry later %s (%d records): %s", self.source.name, len(records), exc)
            self.stats.count("retry", len(records))
            await consumer.rewind(records)
            await asyncio.sleep(self.retry_backoff_s)
            return
        except Exception:
            # A handler bug on some message: isolate it by handling one at a time, so one bad
            # message dead-letters alone and the rest of the batch still goes through.
            log.exception("batch failed on %s; retrying message by message", self.source.name)
            outputs = []
            for msg, rec in zip(valid, valid_records, strict=True):
                try:
                    outputs.extend(await self.handler([msg]))
                except RetryLater:
                    self.stats.count("retry", len(records))
                    await consumer.rewind(records)
                    await asyncio.sleep(self.retry_backoff_s)
                    return
                except Exception as exc:
                    log.exception("dead-letter %s[%d]@%d", rec.topic, rec.partition, rec.offset)
                    letters.append(dead_letter(rec, f"{type(exc).__name__}: {exc}", self.service))
        out = to_outgoing([*outputs, *letters], self.topics)
        await self.bus.publish_many(out)
        await consumer.commit(records)
        self.stats.count("ok", len(valid))
        if letters:
            self.stats.count("dead_letter", len(letters))
        self.stats.produced += len(outputs)
        self.stats.batches += 1
        self.stats.last_batch_at = time.time()
