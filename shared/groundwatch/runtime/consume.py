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
from typing import Any, Generic, TypeVar

from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_attempt, wait_exponential

from groundwatch.adapters.bus.base import Bus, Consumer, Outgoing, Record
from groundwatch.adapters.bus.encode import to_outgoing
from groundwatch.adapters.db.faults import Fault, classify, first_line
from groundwatch.contracts import (
    MAX_DEAD_LETTER_KEY,
    MAX_DEAD_LETTER_RAW,
    DeadLetter,
    Topic,
    Topics,
    _Contract,
)
from groundwatch.errors import BusUnavailable, PoisonMessage, Reject, RetryLater, StoreUnavailable
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
#: A :class:`Reject` among the outputs dead-letters the one message it names (the handler will
#: not apply it: an impossible cycle, say); the rest of the batch goes on.
BatchHandler = Callable[[list[M]], Awaitable[Sequence[_Contract | Reject]]]


@dataclass
class LoopStats:
    """Counters a service exports as telemetry (Prometheus series; kept plain here, no client
    import)."""

    consumed: int = 0
    produced: int = 0
    dead_lettered: int = 0
    retries: int = 0
    batches: int = 0
    isolated_batches: int = 0
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


def dead_letter(
    record: Record, error: str, service: str, message: object | None = None
) -> DeadLetter:
    """The letter for ``record``; ``message``, when the record decoded (a handler failed on it),
    names its probe and group, so the letter points at what was not judged."""
    raw = record.value[:MAX_DEAD_LETTER_RAW]
    if len(raw) < len(record.value):
        kept, size = len(raw), len(record.value)
        error = f"{error[:1900]} (raw payload cut to its first {kept} of {size} bytes)"
    # A poison key may be anything and of any size: the letter keeps a cut, decodable copy (its
    # exact bytes are the record's key on the dead-letter topic, never lost).
    key = record.key.decode("utf-8", "replace")[:MAX_DEAD_LETTER_KEY] if record.key else None
    return DeadLetter(
        error=error[:2000],
        source_topic=record.topic,
        partition=record.partition,
        offset=record.offset,
        key=key,
        raw_b64=base64.b64encode(raw).decode(),
        service=service,
        probe_id=getattr(message, "probe_id", None),
        group_id=_group_of(message) or key,
    )


def _group_of(message: object | None) -> str | None:
    group = getattr(message, "group_id", None)
    return group[:MAX_DEAD_LETTER_KEY] if isinstance(group, str) else None


def _outage(exc: BaseException) -> bool:
    """A fault of a dependency every message shares (the store, the bus), never of one message:
    the batch waits, whatever passed alone."""
    if isinstance(exc, StoreUnavailable | BusUnavailable):
        return True
    return not isinstance(exc, RetryLater) and classify(exc) is Fault.RETRIABLE


#: Messages that must fail alone, with nothing of their batch going through, before a pass of
#: one-at-a-time handling is taken for a dependency outage.
OUTAGE_PROBES = 3


@dataclass(frozen=True)
class RetryPolicy:
    """How a consume loop retries, isolates and reports a batch it cannot get through.

    A failed batch is rewound and retried after an exponential backoff (``backoff_s`` doubling up
    to ``backoff_max_s``). After ``isolate_after`` failed attempts it is retried one message at a
    time: what goes through is published and committed, a message that fails alone is retried
    ``message_attempts`` times and then dead-lettered with its error — unless nothing of the
    batch goes through, which is a dependency outage, not a poison message: then the whole batch
    waits (nothing valid is ever dead-lettered for an outage). A loop holding records it has not
    committed for ``stall_after_s`` is stalled: readiness turns red and the stalled metric is 1.
    """

    backoff_s: float = 1.0
    backoff_max_s: float = 30.0
    isolate_after: int = 2
    message_attempts: int = 3
    stall_after_s: float = 300.0

    def backoff(self, failures: int) -> float:
        """Seconds to wait after the ``failures``-th consecutive failed attempt."""
        return float(min(self.backoff_max_s, self.backoff_s * 2 ** max(0, failures - 1)))


#: A test-only fault hook, called after a batch's output is published (or its state stored) and
#: before its offsets are committed, with the number of batches handled so far. Production wiring
#: passes none (``runtime.faults``; the setting that enables it is off by default).
BeforeCommitHook = Callable[[int], None]


def consume(
    stage: Stage[M],
    bus: Bus,
    topics: Topics,
    *,
    group: str | None = None,
    client_id: str = "",
    policy: RetryPolicy | None = None,
    before_commit: BeforeCommitHook | None = None,
) -> ConsumeLoop[M]:
    """The consume loop that runs ``stage`` on ``bus``: its source topic (and the topics its
    ``also_sources`` names, when it has one), its batch size, its rebalance hook (when it has
    one), in ``group`` (default: the stage's own group)."""
    also = getattr(stage, "also_sources", None)
    return ConsumeLoop(
        bus=bus,
        topics=topics,
        source=stage.source(topics),
        also=also(topics) if also is not None else (),
        group=group or stage.group,
        handler=stage.handle,
        service=stage.service,
        client_id=client_id,
        max_records=stage.max_records,
        policy=policy,
        on_assignment=getattr(stage, "on_assignment", None),
        before_commit=before_commit,
    )


class ConsumeLoop(Generic[M]):
    """Runs one consumer in one group on one input topic until ``stop()``; with ``also``, on
    those topics too, in the same consumer: a stateful stage whose state two topics change
    (judgements and people's verdicts, both keyed by group) gets the same partitions of each,
    and a record of any of them is decoded by its own topic's contract."""

    def __init__(
        self,
        *,
        bus: Bus,
        topics: Topics,
        source: Topic[M],
        also: Sequence[Topic[Any]] = (),
        group: str,
        handler: BatchHandler[M],
        service: str,
        max_records: int = 500,
        policy: RetryPolicy | None = None,
        client_id: str = "",
        on_assignment: AssignmentHook | None = None,
        before_commit: BeforeCommitHook | None = None,
    ) -> None:
        self.on_assignment = on_assignment
        self._assigned: frozenset[tuple[str, int]] | None = None
        self.bus = bus
        self.topics = topics
        self.source = source
        #: every topic read, by name: a record is decoded by the contract of its own topic
        self._sources: dict[str, Topic[Any]] = {t.name: t for t in (source, *also)}
        #: the group in this deployment (scoped by its topic prefix, see Topics.group)
        self.group = topics.group(group)
        self.handler = handler
        self.service = service
        self.max_records = max_records
        self.policy = policy or RetryPolicy()
        self.before_commit = before_commit
        self.client_id = client_id or service
        self.stats = LoopStats()
        self._stopping = asyncio.Event()
        self._consumer: Consumer | None = None
        self.ready = asyncio.Event()
        #: consecutive failed attempts at the records in hand (0 after every commit)
        self._failures = 0
        #: of those, attempts that failed for something other than an outage of a dependency
        #: every message shares: what makes the loop isolate the batch message by message
        #: (after a store outage the batch is tried whole again, in order — handled one at a
        #: time, a group's later cycle could be applied before its earlier one)
        self._suspect = 0
        #: monotonic time since which the loop holds records it has not committed (None: none)
        self._pending_since: float | None = None
        #: monotonic time of the loop's last sign of life (each poll, each slice of a backoff):
        #: liveness reads it, so a loop wedged in an await fails /healthz, not only a dead one
        self._beat = time.monotonic()

    def stop(self) -> None:
        self._stopping.set()

    def lag(self) -> float:
        """Consumer lag of this loop (0 before it has started)."""
        return float(self._consumer.lag()) if self._consumer is not None else 0.0

    def stalled_for(self) -> float:
        """Seconds the loop has held records without committing them (0 when it has none)."""
        since = self._pending_since
        return 0.0 if since is None else time.monotonic() - since

    def stalled(self) -> bool:
        """No progress for the policy's ``stall_after_s``: readiness red, alert."""
        return self.stalled_for() >= self.policy.stall_after_s

    @property
    def name(self) -> str:
        return f"{self.service}:{self.source.name}"

    def heartbeat_age(self) -> float:
        """Seconds since the loop last showed it is alive (polling, handling, backing off)."""
        return time.monotonic() - self._beat

    def _heartbeat(self) -> None:
        self._beat = time.monotonic()

    async def _wait(self, seconds: float) -> None:
        """Back off for ``seconds`` (less when asked to stop), beating the heartbeat meanwhile:
        a loop waiting out an outage is alive."""
        deadline = time.monotonic() + seconds
        while not self._stopping.is_set():
            self._heartbeat()
            left = deadline - time.monotonic()
            if left <= 0:
                return
            try:
                await asyncio.wait_for(self._stopping.wait(), min(left, 1.0))
            except TimeoutError:
                continue

    async def run(self) -> None:
        """Poll, handle, publish, commit until ``stop()``. A bus fault that the adapter's retry
        budget did not cure is waited out here with the policy's backoff (nothing is committed
        meanwhile); anything else that escapes ends the loop with that exception — the service
        shell then exits the process non-zero so that the supervisor restarts it."""
        tune_gc()
        self._heartbeat()
        consumer = self.bus.consumer(list(self._sources), self.group, client_id=self.client_id)
        self._consumer = consumer
        await consumer.start()
        self.ready.set()
        poll_failures = 0
        try:
            while not self._stopping.is_set():
                self._heartbeat()
                try:
                    records = await consumer.poll(self.max_records, timeout_s=0.2)
                except BusUnavailable as exc:
                    poll_failures += 1
                    log.warning("%s: poll failed, backing off: %s", self.name, exc)
                    await self._wait(self.policy.backoff(poll_failures))
                    continue
                poll_failures = 0
                if self.on_assignment is not None:
                    # Before the records: a stateful consumer must drop or load the state of
                    # partitions that moved before it applies anything from the new ones.
                    assigned = consumer.assignment()
                    if assigned != self._assigned:
                        self._assigned = assigned
                        await self.on_assignment(consumer, assigned)
                if records:
                    if self._pending_since is None:
                        self._pending_since = time.monotonic()
                    await self._process(consumer, records)
        finally:
            await consumer.stop()

    async def _process(self, consumer: Consumer, records: list[Record]) -> None:
        valid: list[M] = []
        valid_records: list[Record] = []
        letters: list[DeadLetter] = []
        source = self.source
        sources = self._sources
        for rec in records:
            try:
                topic = source if rec.topic == source.name else sources.get(rec.topic, source)
                # In process the record carries the validated contract it was encoded from: it is
                # taken as is (validation once, at construction); bytes from Kafka are decoded.
                msg = rec.message
                if type(msg) is topic.model:
                    valid.append(msg)
                else:
                    valid.append(topic.decode(rec.value))
                valid_records.append(rec)
            except PoisonMessage as exc:
                log.warning("dead-letter %s[%d]@%d: %s", rec.topic, rec.partition, rec.offset, exc)
                letters.append(dead_letter(rec, str(exc), self.service))
        outputs: list[_Contract] = []
        if valid and self._suspect < self.policy.isolate_after:
            try:
                outputs = self._sort(await self.handler(valid), valid, valid_records, letters)
            except RetryLater as exc:
                log.warning("retry later %s (%d records): %s", self.source.name, len(records), exc)
                if not _outage(exc):
                    self._suspect += 1
                await self._retry_later(consumer, records)
                return
            except Exception as exc:
                if classify(exc) is Fault.RETRIABLE:  # a store outage the handler let through
                    log.warning(
                        "store unavailable %s (%d records): %s",
                        self.source.name,
                        len(records),
                        first_line(exc),
                    )
                    await self._retry_later(consumer, records)
                    return
                # A handler bug on some message: isolate it by handling one at a time, so one
                # bad message dead-letters alone and the rest of the batch still goes through.
                log.exception("batch failed on %s; retrying message by message", self.source.name)
                self._failures = max(self._failures, self.policy.isolate_after)
                self._suspect = self.policy.isolate_after
        if valid and self._suspect >= self.policy.isolate_after:
            isolated = await self._one_by_one(valid, valid_records)
            if isolated is None:  # nothing went through: a dependency is down
                await self._retry_later(consumer, records)
                return
            outputs, more_letters = isolated
            letters.extend(more_letters)
        await self._publish_and_commit(consumer, records, outputs, letters, len(valid))

    async def _one_by_one(
        self, valid: list[M], valid_records: list[Record]
    ) -> tuple[list[_Contract], list[DeadLetter]] | None:
        """Each message alone; ``None`` when not one of them went through and some only need a
        retry, or when the store is unavailable (a dependency is down: the batch waits whole,
        nothing is dead-lettered; what went through meanwhile comes again and is a duplicate)."""
        self.stats.isolated_batches += 1
        outputs: list[_Contract] = []
        letters: list[DeadLetter] = []
        waiting: list[tuple[M, Record, RetryLater]] = []
        went_through = 0
        # An outage fails every message: give up on the pass after a few, not after thousands of
        # failing calls. Each pass starts further into the batch, so a run of poison messages at
        # its head cannot pass for an outage forever.
        start = (self._failures * OUTAGE_PROBES) % len(valid)
        pairs = list(zip(valid, valid_records, strict=True))
        for msg, rec in pairs[start:] + pairs[:start]:
            if not went_through and len(waiting) >= OUTAGE_PROBES:
                return None
            try:
                outputs.extend(self._sort(await self.handler([msg]), [msg], [rec], letters))
                went_through += 1
            except Exception as exc:
                if _outage(exc):
                    log.warning(
                        "%s: a dependency is unavailable, the batch waits: %s", self.name, exc
                    )
                    return None
                if isinstance(exc, RetryLater):
                    waiting.append((msg, rec, exc))
                    continue
                log.exception("dead-letter %s[%d]@%d", rec.topic, rec.partition, rec.offset)
                letters.append(dead_letter(rec, f"{type(exc).__name__}: {exc}", self.service, msg))
                went_through += 1  # the handler could judge it: the dependency is up
        if waiting and not went_through:
            return None
        for msg, rec, first in waiting:
            try:
                outputs.extend(self._sort(await self._retry_alone(msg), [msg], [rec], letters))
            except Exception as exc:
                if _outage(exc):
                    log.warning(
                        "%s: a dependency is unavailable, the batch waits: %s", self.name, exc
                    )
                    return None
                if not isinstance(exc, RetryLater):
                    log.exception("dead-letter %s[%d]@%d", rec.topic, rec.partition, rec.offset)
                    error = f"{type(exc).__name__}: {exc}"
                    letters.append(dead_letter(rec, error, self.service, msg))
                    continue
                error = (
                    f"RetryLater: {exc} (still failing alone after "
                    f"{self.policy.message_attempts} attempts while the rest of its batch "
                    f"went through; first error: {first})"
                )
                log.error("dead-letter %s[%d]@%d: %s", rec.topic, rec.partition, rec.offset, error)
                letters.append(dead_letter(rec, error, self.service, msg))
        return outputs, letters

    async def _retry_alone(self, msg: M) -> Sequence[_Contract | Reject]:
        """One message, retried with backoff while the handler says "later"."""
        async for attempt in AsyncRetrying(
            retry=retry_if_exception_type(RetryLater),
            stop=stop_after_attempt(self.policy.message_attempts),
            wait=wait_exponential(multiplier=self.policy.backoff_s, max=self.policy.backoff_max_s),
            before_sleep=lambda _state: self.stats.count("retry", 1),
            reraise=True,
        ):
            with attempt:
                return await self.handler([msg])
        raise AssertionError(
            "unreachable: tenacity re-raises the last RetryLater"
        )  # pragma: no cover

    def _sort(
        self,
        results: Sequence[_Contract | Reject],
        messages: list[M],
        records: list[Record],
        letters: list[DeadLetter],
    ) -> list[_Contract]:
        """The handler's outputs to publish; each :class:`Reject` becomes the dead letter of the
        record its message came in (added to ``letters``), logged once per batch."""
        outputs: list[_Contract] = []
        rejected: list[tuple[Record, Reject]] = []
        by_message: dict[int, Record] | None = None
        for r in results:
            if not isinstance(r, Reject):
                outputs.append(r)
                continue
            if by_message is None:
                by_message = {id(m): rec for m, rec in zip(messages, records, strict=True)}
            rec = by_message.get(id(r.message))
            if rec is None:
                raise TypeError("a handler rejected a message it was not given")
            rejected.append((rec, r))
        for rec, r in rejected:
            letters.append(dead_letter(rec, r.reason, self.service, r.message))
        if rejected:
            rec, first = rejected[0]
            log.warning(
                "dead-letter %d of %d messages from %s (not applied), first %s[%d]@%d: %s",
                len(rejected),
                len(messages),
                self.source.name,
                rec.topic,
                rec.partition,
                rec.offset,
                first.reason,
            )
        return outputs

    async def _retry_later(self, consumer: Consumer, records: list[Record]) -> None:
        """Rewind the batch (nothing committed) and back off before it comes again."""
        self._failures += 1
        self.stats.count("retry", len(records))
        await consumer.rewind(records)
        await self._wait(self.policy.backoff(self._failures))

    async def _publish(self, out: Sequence[Outgoing]) -> bool:
        """Publish the batch's output, waiting out a bus outage with the policy's backoff (the
        output is kept: a runner does not ask its target again, a judge does not judge again).
        False when the loop is stopped before the bus came back."""
        failures = 0
        while True:
            self._heartbeat()
            try:
                await self.bus.publish_many(out)
                return True
            except BusUnavailable as exc:
                failures += 1
                self.stats.count("retry", len(out))
                log.warning("%s: publish failed, backing off: %s", self.name, exc)
                await self._wait(self.policy.backoff(failures))
                if self._stopping.is_set():
                    return False

    async def _publish_and_commit(
        self,
        consumer: Consumer,
        records: list[Record],
        outputs: list[_Contract],
        letters: list[DeadLetter],
        n_valid: int,
    ) -> None:
        out = to_outgoing([*outputs, *letters], self.topics)
        if not await self._publish(out):
            await consumer.rewind(records)  # stopping: nothing committed, redelivered later
            return
        self.stats.batches += 1
        if self.before_commit is not None:
            self.before_commit(self.stats.batches)  # test-only fault hook (off in production)
        self._heartbeat()
        try:
            await consumer.commit(records)
        except BusUnavailable as exc:
            # Not committed: the next batch's commit covers these offsets, and a new owner of
            # the partition gets them again (duplicates are allowed, counted once).
            log.warning("%s: commit failed, the next commit covers it: %s", self.name, exc)
        self._failures = 0
        self._suspect = 0
        self._pending_since = None
        self.stats.count("ok", n_valid)
        if letters:
            self.stats.count("dead_letter", len(letters))
        self.stats.produced += len(outputs)
        self.stats.last_batch_at = time.time()
