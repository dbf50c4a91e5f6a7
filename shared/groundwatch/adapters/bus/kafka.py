"""The Kafka bus (aiokafka): idempotent producer, manual commits, at-least-once — and a cluster's
routine faults (a leader election, a broker restarting, a coordinator moving) retried here, so a
caller sees either success or one :class:`~groundwatch.errors.BusUnavailable` after the retry
budget, never a raw ``LeaderNotAvailableError`` that ends its loop."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.coordinator.assignors.range import RangePartitionAssignor
from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
from aiokafka.errors import (
    CommitFailedError,
    IllegalGenerationError,
    IllegalStateError,
    KafkaError,
    KafkaTimeoutError,
    OutOfOrderSequenceNumber,
    RebalanceInProgressError,
    TopicAlreadyExistsError,
    UnknownMemberIdError,
    for_code,
)
from aiokafka.partitioner import DefaultPartitioner, murmur2
from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_delay, wait_exponential

from groundwatch.adapters.bus.base import Outgoing, Record
from groundwatch.errors import BusUnavailable, ConfigError

log = logging.getLogger(__name__)

T = TypeVar("T")

#: How long a starting client waits for an unreachable broker before the service gives up.
START_TIMEOUT_S = 120.0

#: Errors aiokafka marks not retriable that a cluster's routine faults raise all the same: a
#: request that timed out while a broker restarted, a group rebalancing, a member the group
#: forgot, and the sequence gap an expired batch leaves in an idempotent producer (which a new
#: producer clears, see ``KafkaBus.publish_many``).
_ALSO_RETRIABLE: tuple[type[BaseException], ...] = (
    KafkaTimeoutError,
    RebalanceInProgressError,
    IllegalGenerationError,
    UnknownMemberIdError,
    OutOfOrderSequenceNumber,
)


def retriable(exc: BaseException) -> bool:
    """Whether ``exc`` is a fault that waiting can cure: every Kafka error the protocol marks
    retriable (leader not available, not leader for partition, request timed out, coordinator not
    available or moved, node not ready, connection errors, not enough replicas…), the few above,
    and socket errors and timeouts."""
    if isinstance(exc, KafkaError):
        return bool(exc.retriable) or isinstance(exc, _ALSO_RETRIABLE)
    return isinstance(exc, (OSError, TimeoutError))


@dataclass(frozen=True)
class BusRetry:
    """How long and how the adapter retries a retriable fault before it gives up on a call.

    ``backoff_s`` doubles up to ``backoff_max_s`` between attempts (the services pass
    ``GW_RETRY_BACKOFF_S`` / ``GW_RETRY_BACKOFF_MAX_S``); after ``deadline_s``
    (``GW_KAFKA_RETRY_S``) the call raises :class:`BusUnavailable` and the caller decides (a
    consume loop rewinds and backs off, nothing committed)."""

    backoff_s: float = 0.5
    backoff_max_s: float = 5.0
    deadline_s: float = 60.0

    def wait(self, failures: int) -> float:
        return float(min(self.backoff_max_s, self.backoff_s * 2 ** max(0, failures - 1)))


async def with_retry(
    what: str,
    call: Callable[[], Awaitable[T]],
    retry: BusRetry,
    *,
    on_failure: Callable[[BaseException], Awaitable[None]] | None = None,
) -> T:
    """``call()`` until it succeeds, retrying retriable faults with backoff for at most
    ``retry.deadline_s``; then :class:`BusUnavailable`. A fault that is not retriable is raised
    as it is (the caller's loop cannot go on). ``on_failure`` runs before each wait (e.g. to
    replace a client the fault broke)."""
    deadline = time.monotonic() + retry.deadline_s
    failures = 0
    while True:
        try:
            return await call()
        except Exception as exc:
            if not retriable(exc):
                raise
            failures += 1
            left = deadline - time.monotonic()
            if left <= 0:
                raise BusUnavailable(
                    f"{what}: {type(exc).__name__} for {retry.deadline_s:.0f}s "
                    f"({failures} attempts): {exc}"
                ) from exc
            wait = min(retry.wait(failures), left)
            log.warning(
                "%s: %s (attempt %d), retrying in %.1fs", what, type(exc).__name__, failures, wait
            )
            if on_failure is not None:
                await on_failure(exc)
            await asyncio.sleep(wait)


def _starting(what: str, wait_s: float = START_TIMEOUT_S) -> AsyncRetrying:
    """Retries for connecting at start-up: a broker restarting while a service (re)starts is
    routine (a rolling restart, a crash-looping pod); the service waits for it, bounded, instead
    of exiting on the first refused connection (seen in the randomized kill schedule)."""

    def note(state: Any) -> None:
        exc = state.outcome.exception() if state.outcome is not None else None
        if isinstance(exc, NotEnoughBrokers):
            log.warning("%s: %s, retrying", what, exc)
        else:
            log.warning("%s: broker unreachable, retrying", what)

    return AsyncRetrying(
        retry=retry_if_exception_type((KafkaError, OSError)),
        stop=stop_after_delay(wait_s),
        wait=wait_exponential(multiplier=0.5, max=5.0),
        before_sleep=note,
        reraise=True,
    )


class NotEnoughBrokers(KafkaError):  # type: ignore[misc]  # aiokafka is untyped
    """Fewer brokers are up than the replication factor asks for. The topics cannot be made now;
    a broker may be restarting (a service starting during a rolling restart waits for it, within
    the start-up budget) or the cluster is too small for the setting."""

    retriable = True


@dataclass(frozen=True)
class TopicPolicy:
    """How the topics are made: partitions, replication factor and ``min.insync.replicas``.

    ``replication_factor`` 0 means min(3, brokers in the cluster) and ``min_insync_replicas`` 0
    means the replication factor − 1, at least 1: with three replicas and acks=all a write needs
    two of them, so one broker may be down (restarting, lost) without stopping the pipeline and
    an acknowledged message survives the loss of any one broker."""

    partitions: int = 6
    replication_factor: int = 0
    min_insync_replicas: int = 0

    def resolve(self, brokers: int) -> tuple[int, int]:
        """(replication factor, min ISR) for topics made while ``brokers`` brokers are up;
        :class:`NotEnoughBrokers` when fewer are up than the factor, :class:`ConfigError` when
        the settings contradict each other."""
        rf = self.replication_factor or min(3, max(1, brokers))
        if rf > brokers:
            raise NotEnoughBrokers(
                f"GW_KAFKA_REPLICATION_FACTOR={rf} but {brokers} broker(s) of the cluster are up"
            )
        isr = self.min_insync_replicas or max(1, rf - 1)
        if isr > rf:
            raise ConfigError(
                f"GW_KAFKA_MIN_INSYNC_REPLICAS={isr} is above the replication factor {rf}: "
                "no write could ever be acknowledged"
            )
        return rf, isr


class KafkaBus:
    """Producer made on ``start`` (never at import); consumers made on demand."""

    def __init__(
        self,
        bootstrap: str,
        partitions: int = 6,
        client_id: str = "groundwatch",
        *,
        replication_factor: int = 0,
        min_insync_replicas: int = 0,
        retry: BusRetry | None = None,
    ) -> None:
        self.bootstrap = bootstrap
        self.partitions = partitions
        self.policy = TopicPolicy(partitions, replication_factor, min_insync_replicas)
        self.client_id = client_id
        self.retry = retry or BusRetry()
        self._producer: AIOKafkaProducer | None = None
        self._partitioner = DefaultPartitioner()
        #: producers replaced after a fault, being stopped in the background
        self._retired: set[asyncio.Task[None]] = set()
        self._replacing = asyncio.Lock()

    def _new_producer(self) -> AIOKafkaProducer:
        return AIOKafkaProducer(
            bootstrap_servers=self.bootstrap,
            client_id=self.client_id,
            enable_idempotence=True,  # retries cannot duplicate a message in a session
            acks="all",  # every in-sync replica (at least min.insync.replicas) has it
            linger_ms=5,
            max_batch_size=256 * 1024,
            compression_type=None,
        )

    async def _start_producer(self) -> AIOKafkaProducer:
        async for attempt in _starting("producer"):
            with attempt:
                producer = self._new_producer()
                try:
                    await producer.start()
                except BaseException:
                    await producer.stop()
                    raise
                return producer
        raise AssertionError("unreachable: tenacity re-raises")  # pragma: no cover

    async def start(self) -> None:
        self._producer = await self._start_producer()

    async def stop(self) -> None:
        if self._producer is not None:
            await self._producer.stop()
            self._producer = None
        if self._retired:
            await asyncio.wait(self._retired, timeout=10)

    async def _replace_producer(self, broken: AIOKafkaProducer) -> None:
        """A new producer for one whose batch failed. aiokafka fails a batch of an idempotent
        producer only when it expired (no leader for the partition within the request timeout)
        or on a fatal error, and the expired batch has taken its sequence numbers: every later
        batch of that partition would be refused as out of order and the producer would stay
        broken for good. A new producer (a new producer id) starts its sequences afresh; what the
        old one had sent may arrive twice, which at-least-once allows."""
        async with self._replacing:
            if self._producer is not broken:  # another publisher replaced it already
                return
            self._producer = await self._start_producer()
        log.warning("producer replaced after a failed batch")
        task = asyncio.create_task(self._retire(broken))
        self._retired.add(task)
        task.add_done_callback(self._retired.discard)

    @staticmethod
    async def _retire(producer: AIOKafkaProducer) -> None:
        # its pending batches may wait for a leader that is gone: do not let stop() hang on them
        with contextlib.suppress(Exception, TimeoutError):
            await asyncio.wait_for(producer.stop(), 10)

    async def ping(self) -> bool:
        if self._producer is None:
            return False
        try:
            await asyncio.wait_for(self._producer.client.fetch_all_metadata(), 5)
            return True
        except (KafkaError, TimeoutError, OSError):
            return False

    async def ensure_topics(self, names: Sequence[str], wait_s: float = START_TIMEOUT_S) -> None:
        """Create the missing topics with the policy's replication; waits up to ``wait_s`` for a
        reachable broker and, to create, for as many brokers up as the replication factor."""
        async for attempt in _starting("admin", wait_s):
            with attempt:
                await self._ensure_topics(names)

    async def _ensure_topics(self, names: Sequence[str]) -> None:
        admin = AIOKafkaAdminClient(bootstrap_servers=self.bootstrap, client_id=self.client_id)
        try:
            await admin.start()
            brokers = len((await admin.describe_cluster())["brokers"])
            existing = set(await admin.list_topics())
            missing = [n for n in names if n not in existing]
            # Only what is made needs the brokers: a service restarting while one broker of three
            # is down finds its topics there and starts (it was refused in the chaos test).
            if missing:
                rf, isr = self.policy.resolve(brokers)
                new = [
                    NewTopic(
                        n,
                        self.policy.partitions,
                        replication_factor=rf,
                        topic_configs={"min.insync.replicas": str(isr)},
                    )
                    for n in missing
                ]
                response = await admin.create_topics(new)
                for name, code, *detail in response.topic_errors:
                    # the broker answers per topic; another service may have been first
                    if code not in (0, TopicAlreadyExistsError.errno):
                        raise for_code(code)(f"creating {name}: {detail[0] if detail else ''}")
                log.info(
                    "topics %s created: %d partitions, replication factor %d, min.insync.replicas"
                    " %d",
                    ", ".join(missing),
                    self.policy.partitions,
                    rf,
                    isr,
                )
            present = [n for n in names if n in existing]
            if present:
                want = self.policy.replication_factor or min(3, max(1, brokers))
                await self._warn_under_replicated(admin, present, want)
            if missing:
                await _await_leaders(admin, missing)
        finally:
            await admin.close()

    @staticmethod
    async def _warn_under_replicated(admin: AIOKafkaAdminClient, names: list[str], rf: int) -> None:
        """Topics made earlier with fewer replicas are not changed (that is a partition
        reassignment, an operator's call) but said, once, at start-up."""
        for described in await admin.describe_topics(names):
            replicas = min((len(p["replicas"]) for p in described["partitions"]), default=rf)
            if replicas < rf:
                log.warning(
                    "topic %s has replication factor %d, below the configured %d: one broker "
                    "down stops it; reassign its partitions (kafka-reassign-partitions)",
                    described["topic"],
                    replicas,
                    rf,
                )

    async def publish_many(self, messages: Sequence[Outgoing]) -> None:
        """One record batch per partition (``create_batch``/``send_batch``), not one ``send``
        per message: aiokafka's per-message path (a future, a metadata check and a partitioner
        call per record) was half the producer's CPU. Partitions come from the default
        partitioner, murmur2 of the key, exactly as ``send`` (and the Java client) would pick
        them, so a semantic group's messages land where they always did, in order.

        A retriable fault (a partition without a leader while one is elected, a broker
        restarting) is retried with backoff for ``retry.deadline_s``: only the partitions whose
        batches failed are sent again, from their first failed batch on (their order kept), by a
        new producer when a batch failed (see ``_replace_producer``). Returns once every message
        is acknowledged; raises :class:`BusUnavailable` after the deadline, and a fault that no
        retry can cure (a message too large) at once."""
        if not messages:
            return
        if self._producer is None:
            raise RuntimeError("KafkaBus.publish_many before start()")
        pending: dict[tuple[str, int], list[Outgoing]] | None = None
        spent = False  # a batch of the current producer failed: replace it before the retry

        async def attempt() -> None:
            nonlocal pending, spent
            producer = self._producer
            assert producer is not None
            if pending is None:
                pending = await self._by_partition(producer, messages)
            pending, error, spent = await self._send(producer, pending)
            if error is not None:
                raise error

        async def after_failure(exc: BaseException) -> None:
            producer = self._producer
            if producer is not None and (spent or _sender_dead(producer)):
                await self._replace_producer(producer)

        await with_retry("publish", attempt, self.retry, on_failure=after_failure)

    async def _by_partition(
        self, producer: AIOKafkaProducer, messages: Sequence[Outgoing]
    ) -> dict[tuple[str, int], list[Outgoing]]:
        by_partition: dict[tuple[str, int], list[Outgoing]] = {}
        partitions: dict[str, list[int]] = {}
        for m in messages:
            known = partitions.get(m.topic)
            if known is None:
                known = partitions[m.topic] = sorted(await producer.partitions_for(m.topic))
            part = self._partitioner(m.key, known, known)
            by_partition.setdefault((m.topic, part), []).append(m)
        return by_partition

    @staticmethod
    async def _send(
        producer: AIOKafkaProducer, pending: dict[tuple[str, int], list[Outgoing]]
    ) -> tuple[dict[tuple[str, int], list[Outgoing]], BaseException | None, bool]:
        """Send every partition's messages; returns what is left to send (each failed partition
        from its first failed batch on), the first error (None: all acknowledged) and whether a
        sent batch failed (rather than only its enqueueing)."""
        sent: list[tuple[tuple[str, int], int, Any]] = []  # (partition, first message, future)
        resend_from: dict[tuple[str, int], int] = {}  # failed partition → its first message left
        first_error: BaseException | None = None
        for (topic, part), batch_messages in pending.items():
            start = 0
            try:
                batch = producer.create_batch()
                for i, m in enumerate(batch_messages):
                    if batch.append(key=m.key, value=m.value, timestamp=None) is None:  # full
                        fut = await producer.send_batch(batch, topic, partition=part)
                        sent.append(((topic, part), start, fut))
                        start, batch = i, producer.create_batch()
                        batch.append(key=m.key, value=m.value, timestamp=None)  # first always fits
                fut = await producer.send_batch(batch, topic, partition=part)
                sent.append(((topic, part), start, fut))
            except Exception as exc:  # could not even enqueue: this partition from here on
                resend_from[(topic, part)] = start
                first_error = first_error or exc
        results = await asyncio.gather(*(f for _, _, f in sent), return_exceptions=True)
        batch_failed = False
        for (tp, start, _), result in zip(sent, results, strict=True):
            if isinstance(result, BaseException):
                batch_failed = True
                # the partition goes again from its earliest failed batch on, in order (a later
                # batch that did arrive arrives twice: at-least-once)
                resend_from[tp] = min(start, resend_from.get(tp, start))
                first_error = first_error or result
        left = {tp: pending[tp][start:] for tp, start in resend_from.items()}
        return left, first_error, batch_failed

    def consumer(self, topics: Sequence[str], group: str, *, client_id: str = "") -> KafkaConsumer:
        return KafkaConsumer(
            self.bootstrap, list(topics), group, client_id or self.client_id, self.retry
        )


def _sender_dead(producer: AIOKafkaProducer) -> bool:
    """The producer's background sender ended (a fatal error such as an out-of-order sequence):
    nothing it is given will ever be sent."""
    sender = getattr(producer, "_sender", None)
    task = getattr(sender, "sender_task", None)
    return task is not None and task.done()


#: How long topics just made may take to have a leader for every partition.
LEADERS_TIMEOUT_S = 30.0


async def _await_leaders(admin: AIOKafkaAdminClient, names: list[str]) -> None:
    """Wait until every partition of the topics just made has a leader: a consumer that
    subscribes before the broker's metadata holds them finds "topic not found", and its group's
    first rebalance (the partitions of a topic it did not know) stalled a second member's join
    for minutes on a loaded machine. Past the timeout it goes on (the consumer still retries)."""
    deadline = asyncio.get_running_loop().time() + LEADERS_TIMEOUT_S
    while True:
        try:
            described = await admin.describe_topics(names)
            if len(described) == len(names) and all(
                t.get("error_code", 0) == 0
                and t["partitions"]
                and all(p.get("leader", -1) >= 0 for p in t["partitions"])
                for t in described
            ):
                return
        except KafkaError:
            pass
        if asyncio.get_running_loop().time() > deadline:
            log.warning("topics %s: not every partition has a leader yet", ", ".join(names))
            return
        await asyncio.sleep(0.2)


class KafkaConsumer:
    def __init__(
        self,
        bootstrap: str,
        topics: list[str],
        group: str,
        client_id: str,
        retry: BusRetry | None = None,
    ) -> None:
        self.retry = retry or BusRetry()

        # Several topics keyed alike (judgements and people's verdicts, by group) are read by
        # one stateful member only if it owns the same partitions of each: the range assignor
        # gives every member the same partition numbers of every topic of equal partition
        # count; round-robin (aiokafka's default, kept for one topic) interleaves them.
        # Exactly one assignor: aiokafka 0.14 sends one JoinGroup per listed assignor, each
        # with different protocol metadata, so the broker starts a new rebalance on every join
        # and two members can chase each other for minutes (aio-libs/aiokafka#1168).
        assignors = (RangePartitionAssignor,) if len(topics) > 1 else (RoundRobinPartitionAssignor,)

        def make() -> AIOKafkaConsumer:
            return AIOKafkaConsumer(
                *topics,
                partition_assignment_strategy=assignors,
                bootstrap_servers=bootstrap,
                group_id=group,
                client_id=client_id,
                enable_auto_commit=False,
                auto_offset_reset="earliest",
                max_poll_records=1000,
                session_timeout_ms=10_000,
                heartbeat_interval_ms=1_000,
            )

        self._make: Callable[[], AIOKafkaConsumer] = make
        self._consumer = make()
        self._next: dict[TopicPartition, int] = {}

    async def start(self) -> None:
        async for attempt in _starting("consumer"):
            with attempt:
                try:
                    await self._consumer.start()
                except BaseException:
                    await self._consumer.stop()
                    self._consumer = self._make()  # a fresh client for the next attempt
                    raise

    async def stop(self) -> None:
        await self._consumer.stop()

    async def poll(self, max_records: int = 500, timeout_s: float = 0.5) -> list[Record]:
        # A fetch or coordinator fault (a leader moving, the group coordinator restarting)
        # surfaces here at times; waiting cures it, within the retry budget.
        batches = await with_retry(
            "poll",
            lambda: self._consumer.getmany(
                timeout_ms=int(timeout_s * 1000), max_records=max_records
            ),
            self.retry,
        )
        for tp, recs in batches.items():
            if recs:
                self._next[tp] = recs[-1].offset + 1
        # A tombstone (null value) becomes empty bytes: it must dead-letter like any other
        # unparseable message, not crash the consume loop with a None where bytes are promised.
        return [
            Record(r.topic, r.partition, r.offset, r.key, r.value or b"", r.timestamp)
            for recs in batches.values()
            for r in recs
        ]

    async def commit(self, records: Sequence[Record]) -> None:
        offsets: dict[TopicPartition, int] = {}
        for r in records:
            tp = TopicPartition(r.topic, r.partition)
            offsets[tp] = max(offsets.get(tp, 0), r.offset + 1)
        if offsets:
            assigned = self._consumer.assignment()
            owned = {tp: off for tp, off in offsets.items() if tp in assigned}
            if owned:
                try:
                    # a coordinator moving or timing out is retried; a refused commit is not
                    await with_retry("commit", lambda: self._consumer.commit(owned), self.retry)
                except (CommitFailedError, IllegalStateError) as exc:
                    # The group rebalanced while the batch was in flight (a member died, the
                    # broker restarted and forgot the members): whoever owns the partitions now
                    # gets these records again, which at-least-once delivery and idempotent
                    # handlers allow. Raising would end the consume loop for good.
                    log.warning(
                        "commit skipped after a rebalance, records will be redelivered: %s",
                        type(exc).__name__,
                    )

    def assignment(self) -> frozenset[tuple[str, int]]:
        return frozenset((tp.topic, tp.partition) for tp in self._consumer.assignment())

    def partition_of(self, topic: str, key: bytes) -> int | None:
        """Kafka's default partitioner (murmur2 of the key), as the producers use it."""
        partitions = self._consumer.partitions_for_topic(topic)
        if not partitions:
            return None
        return int(murmur2(key) & 0x7FFFFFFF) % len(partitions)

    def lag(self) -> int:
        """High watermark minus the next offset this member will fetch, over its partitions."""
        total = 0
        for tp in self._consumer.assignment():
            high = self._consumer.highwater(tp)
            pos = self._next.get(tp)
            if high is not None and pos is not None:
                total += max(0, high - pos)
        return total

    async def rewind(self, records: Sequence[Record]) -> None:
        first: dict[TopicPartition, int] = {}
        for r in records:
            tp = TopicPartition(r.topic, r.partition)
            first[tp] = min(first.get(tp, r.offset), r.offset)
        assigned = self._consumer.assignment()
        for tp, off in first.items():
            if tp in assigned:
                self._consumer.seek(tp, off)
                self._next[tp] = off
