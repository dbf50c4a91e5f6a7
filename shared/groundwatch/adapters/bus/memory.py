"""The in-process bus: the embedded default for ``make demo`` and the unit tests.

It keeps Kafka's semantics that the services rely on — partitions by key, consumer groups that
split partitions, explicit commits, redelivery of uncommitted records when a member leaves or
rewinds — so a service that is correct here is correct on Kafka, and tests of delivery guarantees
run without a broker.

Retention: with ``trim_consumed`` (the embedded pipeline sets it) a partition drops the records
every consumer group reading it has committed, as a broker's retention would drop old segments:
a continuous ``groundwatch run`` keeps at most the records still in flight, not every message of
every cycle (it grew ~17 MB per cycle of 2,200 probes, without end). Offsets stay absolute, and a
group that joins later starts at the earliest record kept (Kafka's ``auto.offset.reset=earliest``).

Backpressure: with ``max_backlog`` a publisher waits while a topic holds more records its readers
have not committed than that, as a producer waits on a full buffer. The generator publishes a
cycle far faster than the targets answer it: without a bound every probe of the cycle sat in the
bus at once (a 50k-probe cycle held ~850 MB, growing with the cycle); with it, a cycle of any size
keeps a bounded number of messages in flight. A topic nobody reads never blocks.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from groundwatch.adapters.bus.base import Outgoing, Record, partition_for


@dataclass
class _Group:
    members: list[MemoryConsumer] = field(default_factory=list)
    committed: dict[tuple[str, int], int] = field(default_factory=dict)


#: Committed records a partition collects before it drops them (one ``del`` per this many: the
#: list's front is cut in amortized O(1) per record, not once per commit). Small: each record
#: holds its message, and at 2,048 a topic of 6 partitions kept up to 12k spent messages (~50 MB
#: over three topics at the end of a 50k-probe cycle); the cut moves at most the backlog.
TRIM_AT = 256


class MemoryBus:
    """Topics as lists of partitions held in memory; at-least-once consumer groups."""

    def __init__(
        self, partitions: int = 6, *, trim_consumed: bool = False, max_backlog: int | None = None
    ) -> None:
        self.partitions = partitions
        self.trim_consumed = trim_consumed
        self.max_backlog = max_backlog
        #: set (and replaced) whenever a group commits: a publisher waiting on a backlog looks again
        self._committed = asyncio.Event()
        self._logs: dict[str, list[list[Record]]] = {}
        #: per topic, per partition: the absolute offset of the first record kept
        self._bases: dict[str, list[int]] = {}
        self._groups: dict[str, _Group] = {}
        self._wakeup = asyncio.Event()

    async def start(self) -> None:
        return None

    async def stop(self) -> None:
        return None

    async def ping(self) -> bool:
        return True

    async def ensure_topics(self, names: Sequence[str]) -> None:
        for name in names:
            self._log(name)

    def _log(self, topic: str) -> list[list[Record]]:
        log = self._logs.get(topic)
        if log is None:
            log = self._logs[topic] = [[] for _ in range(self.partitions)]
            self._bases[topic] = [0] * self.partitions
        return log

    async def publish_many(self, messages: Sequence[Outgoing]) -> None:
        now = int(time.time() * 1000)
        # a batch mostly goes to one topic: its partitions and their base offsets looked up once
        logs: dict[str, tuple[list[list[Record]], list[int]]] = {}
        partitions = self.partitions
        for m in messages:
            got = logs.get(m.topic)
            if got is None:
                got = logs[m.topic] = (self._log(m.topic), self._bases[m.topic])
            log, bases = got
            part = partition_for(m.key, partitions)
            plog = log[part]
            # the bytes only when given: a contract is encoded if and when a consumer asks for them
            offset = bases[part] + len(plog)
            plog.append(Record(m.topic, part, offset, m.key, m.given_value, now, m.message))
        if messages:
            self._wakeup.set()
            self._wakeup = asyncio.Event()
        if self.max_backlog is not None:
            for topic in logs:
                while self.backlog(topic) > self.max_backlog:
                    await self._committed.wait()

    def backlog(self, topic: str) -> int:
        """Records of ``topic`` some group reading it has not committed (0 when none reads it):
        what :attr:`max_backlog` bounds."""
        readers = [g for g in self._groups.values() if any(topic in m.topics for m in g.members)]
        if not readers:
            return 0
        total = 0
        for p, (base, plog) in enumerate(zip(self._bases[topic], self._log(topic), strict=True)):
            end = base + len(plog)
            lowest = min(g.committed.get((topic, p), base) for g in readers)
            total += end - max(lowest, base)
        return total

    def consumer(self, topics: Sequence[str], group: str, *, client_id: str = "") -> MemoryConsumer:
        return MemoryConsumer(self, list(topics), group, client_id)

    # --- group coordination -------------------------------------------------------------
    def _join(self, member: MemoryConsumer) -> None:
        self._groups.setdefault(member.group, _Group()).members.append(member)
        self._rebalance(member.group)

    def _leave(self, member: MemoryConsumer) -> None:
        grp = self._groups.get(member.group)
        if grp and member in grp.members:
            grp.members.remove(member)
            self._rebalance(member.group)

    def _rebalance(self, group: str) -> None:
        """Round-robin the partitions; every member restarts from the committed offsets."""
        grp = self._groups[group]
        for m in grp.members:
            m._assigned = {}
        if not grp.members:
            return
        for topic in sorted({t for m in grp.members for t in m.topics}):
            subscribed = [m for m in grp.members if topic in m.topics]
            bases = self._bases.get(topic) or [0] * self.partitions
            for p in range(self.partitions):
                owner = subscribed[p % len(subscribed)]
                # a group new to the partition starts at the earliest record kept
                owner._assigned[(topic, p)] = max(grp.committed.get((topic, p), 0), bases[p])

    def committed(self, group: str, topic: str, partition: int) -> int:
        grp = self._groups.get(group)
        return grp.committed.get((topic, partition), 0) if grp else 0

    def end_offsets(self, topic: str) -> list[int]:
        bases = self._bases.get(topic)
        return [b + len(p) for b, p in zip(bases or [], self._log(topic), strict=True)]

    def start_offsets(self, topic: str) -> list[int]:
        """The offset of the first record each partition keeps (0 until it trimmed any)."""
        self._log(topic)
        return list(self._bases[topic])

    def records(self, topic: str) -> list[Record]:
        """The records a topic keeps: every one, unless ``trim_consumed`` dropped the records
        all its groups committed."""
        return [r for p in self._log(topic) for r in p]

    def _trim(self, topic: str, partition: int) -> None:
        """Drop the partition's records that every group reading the topic has committed.

        A group counts while it has members subscribed to the topic or committed offsets of it
        (a member that left may come back): the lowest such commit bounds what is dropped; a
        topic no group ever read keeps everything."""
        tp = (topic, partition)
        lowest: int | None = None
        for grp in self._groups.values():
            if tp in grp.committed:
                c = grp.committed[tp]
            elif any(topic in m.topics for m in grp.members):
                return  # a reader that has committed nothing yet: it needs every record
            else:
                continue
            lowest = c if lowest is None or c < lowest else lowest
        if lowest is None:
            return
        bases = self._bases[topic]
        drop = lowest - bases[partition]
        if drop >= TRIM_AT:
            del self._logs[topic][partition][:drop]
            bases[partition] = lowest


class MemoryConsumer:
    def __init__(self, bus: MemoryBus, topics: list[str], group: str, client_id: str) -> None:
        self.bus = bus
        self.topics = topics
        self.group = group
        self.client_id = client_id
        self._assigned: dict[tuple[str, int], int] = {}
        self._started = False

    async def start(self) -> None:
        await self.bus.ensure_topics(self.topics)
        self.bus._join(self)
        self._started = True

    async def stop(self) -> None:
        if self._started:
            self.bus._leave(self)
            self._started = False

    def _take(self, max_records: int) -> list[Record]:
        out: list[Record] = []
        for tp, pos in self._assigned.items():
            plog = self.bus._log(tp[0])[tp[1]]
            at = pos - self.bus._bases[tp[0]][tp[1]]
            if at < len(plog):
                chunk = plog[at : at + max_records - len(out)]
                out.extend(chunk)
                self._assigned[tp] = pos + len(chunk)
                if len(out) >= max_records:
                    break
        return out

    async def poll(self, max_records: int = 500, timeout_s: float = 0.5) -> list[Record]:
        deadline = time.monotonic() + timeout_s
        while True:
            got = self._take(max_records)
            if got:
                return got
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return []
            try:
                await asyncio.wait_for(self.bus._wakeup.wait(), remaining)
            except TimeoutError:
                return []

    async def commit(self, records: Sequence[Record]) -> None:
        grp = self.bus._groups[self.group]
        moved: set[tuple[str, int]] = set()
        for r in records:
            tp = (r.topic, r.partition)
            if tp in self._assigned and r.offset + 1 > grp.committed.get(tp, 0):
                grp.committed[tp] = r.offset + 1
                moved.add(tp)
        if self.bus.trim_consumed:
            for topic, partition in moved:
                self.bus._trim(topic, partition)
        if moved:
            self.bus._committed.set()
            self.bus._committed = asyncio.Event()

    def assignment(self) -> frozenset[tuple[str, int]]:
        return frozenset(self._assigned)

    def partition_of(self, topic: str, key: bytes) -> int | None:
        return partition_for(key, self.bus.partitions)

    def lag(self) -> int:
        bases = self.bus._bases
        return sum(
            bases[t][p] + len(self.bus._log(t)[p]) - pos for (t, p), pos in self._assigned.items()
        )

    async def rewind(self, records: Sequence[Record]) -> None:
        for r in records:
            tp = (r.topic, r.partition)
            if tp in self._assigned and r.offset < self._assigned[tp]:
                self._assigned[tp] = r.offset
